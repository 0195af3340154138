"""`dcbench leaderboard`: rebuild the pages, `submit` a sweep, `verify` submitted runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dcbench.commands.base import MAX_JOBS, PATH, check_bounds, load_registry, plugin_prints_to_stderr, worker_count
from dcbench.errors import DcbenchError, NotInstalledError, ResultsError
from dcbench.hookspecs import hookimpl
from dcbench.running.progress import progress_bar
from dcbench.spec import Spec


@click.group(invoke_without_command=True)
@click.option("--root", type=PATH, default=Path("leaderboard"), show_default=True, help="The leaderboard folder.")
@click.pass_context
def leaderboard(ctx: click.Context, root: Path) -> None:
    """Rebuild the leaderboard pages from its submissions (or `submit` one, or `verify` them)."""
    ctx.obj = root
    if ctx.invoked_subcommand is None:
        from dcbench.publishing.leaderboard import build

        for path in build(root, load_registry()):
            click.echo(path)


@leaderboard.command()
@click.argument("results", type=PATH)
@click.option("--jobs", "-j", type=int, default=None,
              help=f"Worker processes for the replay (default: all cores; at most {MAX_JOBS}).")
@click.option("--about", "about_file", type=PATH, default=None,
              help="A TOML file describing the entries: a table per allocator (its spec, or its plugin's name) with "
                   "name, authors, paper, code, description, kind and, for a learned one, trained_on and "
                   "training_seeds (docs/leaderboard.md).")
@click.pass_obj
def submit(root: Path, results: Path, jobs: int | None, about_file: Path | None) -> None:
    """Validate a sweep's RESULTS folder, replay one seed of every scenario
    and allocator in it, and add it to the leaderboard."""
    from dcbench.publishing.submit import read_about
    from dcbench.publishing.submit import submit as submit_results

    workers = worker_count(jobs)
    about = read_about(about_file) if about_file is not None else None
    with plugin_prints_to_stderr():
        folder = submit_results(results, root, load_registry(), workers, about)
    click.echo(f"accepted: {folder}")
    click.echo("rebuild the pages with `dcbench leaderboard`")


@leaderboard.command()
@click.option("--runs", "-n", "count", type=int, default=20, show_default=True,
              help="How many of the submitted runs to run again, drawn at random, at least one of every "
                   "allocator of every submission (0: all of them).")
@click.option("--all", "every_run", is_flag=True, help="Run every submitted run again (as --runs 0).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw.")
@click.option("--jobs", "-j", type=int, default=None,
              help=f"Worker processes (default: all cores; at most {MAX_JOBS}). Each allocator's runs run in "
                   "workers of their own.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or progress lines (the runs are still listed).")
@click.pass_obj
def verify(root: Path, count: int, every_run: bool, seed: int, jobs: int | None, quiet: bool) -> None:
    """Re-run submitted runs and compare, bit for bit."""
    from dcbench.publishing.leaderboard import check_root, load_submissions, record_verified
    from dcbench.publishing.verify import rerun_rows, sample_runs
    from dcbench.running.runner import Runner

    check_bounds("--runs", count, 0)
    check_bounds("--seed", seed, 0)
    workers = worker_count(jobs)
    check_root(root)
    registry = load_registry()
    submissions = load_submissions(root, registry) if root.is_dir() else []
    if not submissions:
        raise ResultsError(f"no submissions under '{root / 'submissions'}'; give the leaderboard folder with --root")
    pairs = sample_runs(submissions, sys.maxsize if every_run or not count else count, seed)

    def missing(row: dict) -> str | None:
        """The first plugin of the run that is not installed here, as 'kind name'."""
        for kind in ("topology", "workload", "allocator"):
            name = Spec.parse(row[kind]).name
            if name not in registry.entries(kind):
                return f"{kind} {name!r}"
        return None

    absent = [missing(row) for _, row in pairs]
    if all(absent):
        raise DcbenchError(f"none of the {len(pairs)} runs drawn can be re-run here: "
                           f"{', '.join(sorted(set(absent)))} not installed; install their plugins, "
                           "or draw others with --seed")
    drawn = [f"{name}: {row['scenario']} {row['allocator']} seed {row['seed']}" for name, row in pairs]
    outcomes = [f"skipped ({plugin} is not installed)" if plugin else None for plugin in absent]
    here = [i for i, plugin in enumerate(absent) if not plugin]
    with plugin_prints_to_stderr(), progress_bar(quiet, "run") as progress:
        task = progress.add_task(f"verify {len(pairs)} runs", total=len(pairs), noun="runs", run="",
                                 completed=len(pairs) - len(here))

        def settle(k: int, result: list[str] | DcbenchError) -> None:
            i = here[k]
            name, row = pairs[i]
            if isinstance(result, NotInstalledError):  # its message says what is not here
                outcomes[i] = f"skipped ({str(result).split(';')[0]})"
            elif isinstance(result, DcbenchError):
                failures[i] = result
                return
            elif result and result[0] == "run_id":  # then each plugin whose code changed (`changed_plugins`)
                outcomes[i] = (f"another run id: plugin {'; '.join(result[1:])}" if result[1:] else
                               "another run id: this installation's dcbench version, specs or checkpoint are not "
                               "the submission's")
            elif result:
                outcomes[i] = "other " + ", ".join(result)
            else:
                outcomes[i] = "the same, bit for bit"
            progress.update(task, advance=1, unit_done=True, run=f"{drawn[i]}: {outcomes[i]}")

        failures: dict[int, DcbenchError] = {}
        rerun_rows([pairs[i][1] for i in here], Runner(registry), workers, settle)
    if failures:  # the first in the draw's order, whichever worker was first
        i = min(failures)
        name, row = pairs[i]
        raise DcbenchError(f"submission {name}, run {row['run_id']} ({row['scenario']} seed {row['seed']}), cannot "
                           f"be re-run here: {failures[i]}; put back what it needs, or draw other runs with --seed")
    for line, outcome in zip(drawn, outcomes):  # every run drawn, with what came of it, in the draw's order
        click.echo(f"{line}: {outcome}")
    record_verified(root, [(name, row["run_id"], outcome.startswith("the same"))
                           for (name, row), outcome in zip(pairs, outcomes) if not outcome.startswith("skipped")])
    skipped = sum(outcome.startswith("skipped") for outcome in outcomes)
    differences = sum(not outcome.startswith(("skipped", "the same")) for outcome in outcomes)
    checked = len(pairs) - skipped
    if not checked:  # (every run needed a stored policy this machine lacks)
        raise DcbenchError(f"none of the {len(pairs)} runs drawn can be re-run here: what they need is not "
                           "installed (see above); install it, or draw others with --seed")
    note = f" ({skipped} skipped: what they use is not here)" if skipped else ""
    if differences:
        click.echo(f"{differences} of {checked} runs came out otherwise{note}")
        sys.exit(1)
    click.echo(f"{checked} runs re-run: every one gave the submitted summary bit for bit{note}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(leaderboard)
