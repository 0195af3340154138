"""`dcbench leaderboard`: rebuild the pages, `submit` a sweep, `verify` submitted runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dcbench.commands.base import PATH, UserError, check_bounds, load_registry, plugin_prints_to_stderr
from dcbench.errors import DcbenchError, NotInstalledError
from dcbench.harness.progress import progress_bar
from dcbench.hookspecs import hookimpl

if TYPE_CHECKING:
    from dcbench.harness.runner import Runner


@click.group(invoke_without_command=True)
@click.option("--root", type=PATH, default=Path("leaderboard"), show_default=True,
              help="The leaderboard folder.")
@click.pass_context
def leaderboard(ctx: click.Context, root: Path) -> None:
    """Rebuild the leaderboard pages from its submissions (or `submit` one, or `verify` them)."""
    ctx.obj = root
    if ctx.invoked_subcommand is None:
        from dcbench.harness.leaderboard import build

        for path in build(root, load_registry()):
            click.echo(path)


@leaderboard.command()
@click.argument("results", type=PATH)
@click.pass_obj
def submit(root: Path, results: Path) -> None:
    """Validate a sweep's RESULTS folder and add it to the leaderboard."""
    from dcbench.harness.leaderboard import submit as submit_results

    folder = submit_results(results, root, load_registry())
    click.echo(f"accepted: {folder}")
    click.echo("rebuild the pages with `dcbench leaderboard`")


@leaderboard.command()
@click.option("--runs", "-n", "count", type=int, default=20, show_default=True,
              help="How many of the submitted runs to run again, drawn at random (0: all of them).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or progress lines (the runs are still listed).")
@click.pass_obj
def verify(root: Path, count: int, seed: int, quiet: bool) -> None:
    """Re-run submitted runs and compare, bit for bit.

    Each re-run must give its submitted summary exactly; every run drawn is
    listed with its outcome, and exit code 1 says which did not."""
    from dcbench.harness.leaderboard import check_root, load_submissions, sample_runs
    from dcbench.harness.runner import Runner
    from dcbench.spec import Spec

    check_bounds("--runs", count, 0)
    check_bounds("--seed", seed, 0)
    check_root(root)
    registry = load_registry()
    submissions = load_submissions(root, registry) if root.is_dir() else []
    if not submissions:
        raise UserError(f"no submissions under '{root / 'submissions'}'; give the leaderboard folder with --root")
    pairs = sample_runs(submissions, count or sys.maxsize, seed)
    runner = Runner(registry)

    def missing(row: dict) -> str | None:
        """The first plugin of the run that is not installed here, as 'kind name'."""
        for kind in ("topology", "workload", "allocator"):
            name = Spec.parse(row[kind]).name
            if name not in registry.entries(kind):
                return f"{kind} {name!r}"
        return None

    absent = [missing(row) for _, row in pairs]
    if all(absent):
        raise UserError(f"none of the {len(pairs)} runs drawn can be re-run here: "
                        f"{', '.join(sorted(set(absent)))} not installed; install their plugins, "
                        "or draw others with --seed")
    differences, skipped, outcomes = [], 0, []
    with plugin_prints_to_stderr(), progress_bar(quiet, "run") as progress:
        task = progress.add_task(f"verify {len(pairs)} runs", total=len(pairs), noun="runs", run="")
        for (name, row), plugin_missing in zip(pairs, absent):
            drawn = f"{name}: {row['scenario']} {row['allocator']} seed {row['seed']}"
            progress.update(task, run=drawn)
            lacking = f"{plugin_missing} is not installed" if plugin_missing else None
            columns = []
            if lacking is None:
                try:
                    columns = rerun_named(name, row, runner)
                except NotInstalledError as exc:  # its message says what is not here
                    lacking = str(exc).split(";")[0]
            if lacking is not None:
                skipped += 1
                outcome = f"skipped ({lacking})"
            elif columns:
                outcome = ("another run id: this installation's dcbench version, specs or checkpoint are not the "
                           "submission's") if columns == ["run_id"] else "other " + ", ".join(columns)
                differences.append(f"{drawn}: {outcome}")
            else:
                outcome = "the same, bit for bit"
            outcomes.append(f"{drawn}: {outcome}")
            progress.update(task, advance=1, unit_done=True, run=outcomes[-1])
    for line in outcomes:  # every run drawn, with what came of it
        click.echo(line)
    checked = len(pairs) - skipped
    if not checked:  # (every run needed a stored policy this machine lacks)
        raise UserError(f"none of the {len(pairs)} runs drawn can be re-run here: what they need is not "
                        "installed (see above); install it, or draw others with --seed")
    note = f" ({skipped} skipped: a plugin they use is not installed)" if skipped else ""
    if differences:
        click.echo(f"{len(differences)} of {checked} runs came out otherwise{note}")
        sys.exit(1)
    click.echo(f"{checked} runs re-run: every one gave the submitted summary bit for bit{note}")


def rerun_named(submission: str, row: dict[str, Any], runner: Runner) -> list[str]:
    """`rerun`, where a run that cannot be run here (a checkpoint file its
    allocator spec names that is not on this machine, say) is an error
    that names the submission and the run."""
    from dcbench.harness.leaderboard import rerun

    try:
        return rerun(row, runner)
    except NotInstalledError:  # (a stored policy this machine lacks: skipped, as a plugin it lacks is)
        raise
    except DcbenchError as exc:
        raise DcbenchError(f"submission {submission}, run {row['run_id']} ({row['scenario']} seed {row['seed']}), "
                           f"cannot be re-run here: {exc}; put back what it needs, or draw other runs with "
                           "--seed") from None


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(leaderboard)
