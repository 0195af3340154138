"""The ``dcbench`` command line. Errors become one line on stderr and exit code 2."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import signal
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import click

from dcbench.errors import DcbenchError, describe
from dcbench.progress import progress_bar
from dcbench.registry import KINDS, PLURALS, Registry, get_registry
from dcbench.spec import LARGEST_INTEGER, MAX_REQUESTS

KIND_ALIASES = {kind: kind for kind in KINDS} | {PLURALS[kind]: kind for kind in KINDS}


class UserError(click.ClickException):
    """A user-fixable problem: printed as one line, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True)


def usage_line(exc: click.UsageError, command: str) -> UserError:
    """click's usage error as one line that says where to look (click would print the usage and a hint too)."""
    message = exc.format_message().rstrip(".")
    return UserError(f"{message}{'' if message.endswith('?') else ';'} see `{command} --help`")


class DcbenchGroup(click.Group):
    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:  # a bare `dcbench`: its help
            raise
        except click.UsageError as exc:  # `dcbench --bogus`
            raise usage_line(exc, info_name or "dcbench") from None

    def invoke(self, ctx: click.Context) -> Any:
        with warnings_as_lines(show_all=False):  # numpy's, matplotlib's, torch's: one line each, not two
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DcbenchError as exc:  # (one line even where a plugin raised one with several)
            raise UserError(" ".join(line.strip() for line in str(exc).splitlines() if line.strip())) from None
        except click.UsageError as exc:
            if exc.ctx is not None:
                command = exc.ctx.command_path
            else:  # click's parser gives no context for some errors (an option missing its value)
                command = " ".join(filter(None, (ctx.command_path, ctx.invoked_subcommand)))
            raise usage_line(exc, command) from None
        except MemoryError:
            raise UserError("ran out of memory; ask for fewer requests or seeds, or a smaller topology") from None
        except BrokenPipeError:  # `dcbench list | head`: click quiets the closed pipe
            raise
        except OSError as exc:  # a path the commands did not check first: still one line, not a traceback
            where = f" '{exc.filename}'" if exc.filename else ""
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # pyarrow's and matplotlib's name no file
                raise UserError(f"no space left to write{where or ' the output'}: {exc.strerror or exc}; free some "
                                "space (or give another --out / --root) and run it again; what was there is "
                                "kept") from None
            raise UserError(f"cannot use{where}: {exc.strerror or exc}; check the path and its permissions") from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`Terminated`)
            raise interrupted(exc) from None
        except Exception as exc:  # a third-party command's bug is one line; dcbench's own keeps its traceback
            command = self.commands.get(ctx.invoked_subcommand or "")
            owner = get_registry().command_owner(command) if command is not None else None
            if owner is None:
                raise
            raise UserError(f"command {ctx.invoked_subcommand!r} of plugin {owner} failed: {describe(exc)}; "
                            "report it to the plugin's authors") from None


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, `timeout`, a batch scheduler's time limit), raised
    where Ctrl-C raises KeyboardInterrupt, so that it stops a command as
    Ctrl-C does: every clean-up that Ctrl-C runs (a sweep's workers ended,
    half-written folders removed, a training state kept) runs for it too."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    def terminate(signum: int, frame: Any) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted(exc: KeyboardInterrupt) -> click.exceptions.Exit:
    """Say so in one line (not click's bare "Aborted!") and exit as a shell
    reports a command that the signal stopped: 128 + its number."""
    said, stopped_by = ("Terminated", signal.SIGTERM) if isinstance(exc, Terminated) else ("Interrupted", signal.SIGINT)
    click.echo(f"{said}: what was finished is kept and nothing is left half-written; run the same command again "
               "to go on", err=True)
    return click.exceptions.Exit(128 + stopped_by)


class NonEmptyPath(click.Path):
    """A path option or argument that refuses "": an unset shell variable
    (``--out $OUT``) would otherwise mean the current folder."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("is empty (an unset shell variable?); give a path", param, ctx)
        return super().convert(value, param, ctx)


PATH = NonEmptyPath(path_type=Path)

# Bounds that keep a typo from becoming a MemoryError: far above any suite, far below what fits in memory.
MAX_RUN_REQUESTS = MAX_REQUESTS
# Seeds of one `run`: 2,000 times a suite's 5; each summary is kept until the table at the end.
MAX_SEEDS = 10_000
# Worker processes of a sweep, each with its own copy of the plugins (100 to 300 MB): more than any machine's cores
# this project knows of, and never more than there are runs to do.
MAX_JOBS = 256
# The best of 100 timed runs is as steady as timing gets; a typo's 3,000 would run for hours.
MAX_REPEAT = 100
# Seeds of each scenario of an ad-hoc sweep unless --seeds says: the suites' number.
ADHOC_SEEDS = 5


def check_bounds(option: str, value: int | None, minimum: int, at_most: int = LARGEST_INTEGER) -> None:
    if value is not None and value < minimum:
        raise UserError(f"{option} must be at least {minimum}, got {value}")
    if value is not None and value > at_most:
        raise UserError(f"{option} must be at most {at_most:,}, got {value:,}")


def with_checkpoint(registry: Registry, allocator: str, checkpoint: Path) -> str:
    """The allocator spec with ``checkpoint=PATH`` added (``--checkpoint``)."""
    from dcbench.spec import Spec

    def takes_checkpoint(entry: Any) -> bool:
        return any(param.name == "checkpoint" for param in entry.params)

    spec = Spec.parse(allocator)
    if not takes_checkpoint(registry.get("allocator", spec.name)):  # an unknown name fails here
        learned = sorted(name for name, entry in registry.entries("allocator").items() if takes_checkpoint(entry))
        raise UserError(f"allocator {spec.name!r} takes no checkpoint; --checkpoint is for "
                        f"{', '.join(learned) or 'learned allocators'}")
    if "checkpoint" in spec.kwargs:
        raise UserError("the checkpoint is given twice: use --checkpoint or checkpoint= in the spec, not both")
    if "," in str(checkpoint):  # a spec has no quoting: the comma would split the path into two arguments
        raise UserError(f"--checkpoint {checkpoint}: a checkpoint's path may not contain ','; rename the file "
                        "or link it from a path without one")
    return str(Spec(spec.name, spec.args, {**spec.kwargs, "checkpoint": str(checkpoint)}))


@contextlib.contextmanager
def warnings_as_lines(show_all: bool = True) -> Iterator[None]:
    """Warnings raised inside (a broken third-party plugin, say) printed as
    one ``Warning:`` line each, not Python's two lines with a source line;
    every one where ``show_all``, else those Python's filters let through."""
    with warnings.catch_warnings(record=True) as caught:
        if show_all:
            warnings.simplefilter("always")
        try:
            yield
        finally:
            for message in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
                click.echo(f"Warning: {message}", err=True)


@contextlib.contextmanager
def plugin_prints_to_stderr() -> Iterator[Callable[[str], None]]:
    """Run plugins' code with its prints on stderr: stdout carries only
    results, which a plugin's stray debug print would otherwise get into
    (`dcbench run ... > table.txt`). Yields an echo to the real stdout, for
    results printed meanwhile."""
    results = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        yield lambda text: click.echo(text, file=results)


def load_registry() -> Registry:
    """The registry, with broken third-party plugins reported as one-line
    warnings (and what they print on loading on stderr)."""
    with warnings_as_lines(), plugin_prints_to_stderr():
        return get_registry()


@click.group(cls=DcbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dcbench")
def cli() -> None:
    """dcbench: network-aware resource allocation, benchmarked.

    \b
    Quick start:
      dcbench list                                 what is installed
      dcbench run -a gnn_ppo -t tiered:32,1x4      the trained agent on one scenario
      dcbench sweep -s nara2022 -a tetris,gnn_ppo  a whole suite, every seed
      dcbench report results/nara2022              its tables with 95% CIs
      dcbench runs                                 the runs in results/, a line each
      dcbench report results                       those runs compared, as a sweep's
      dcbench leaderboard                          rebuild the rankings
      dcbench leaderboard verify                   re-run submitted runs: same numbers?
    """


def _seeds(seed: int | None, seeds: int | None) -> list[int]:
    if seed is not None and seeds is not None:
        raise UserError("give --seed S or --seeds K, not both")
    check_bounds("--seed", seed, 0)
    check_bounds("--seeds", seeds, 1, at_most=MAX_SEEDS)
    if seeds is not None:
        return list(range(seeds))
    return [seed if seed is not None else 0]


def _mean_spread(values: list[float]) -> str:
    from dcbench.report import mean_and_spread
    from dcbench.stats import mean_sd

    mean, sd, n = mean_sd(values)
    return mean_and_spread(mean, sd) if n > 1 else mean_and_spread(mean, float("nan"))


BETTER_MARK = {"higher": " ↑", "lower": " ↓", None: ""}


def print_summary(summaries: list[dict[str, Any]], scenario: Mapping[str, Any], kind: str,
                  registry: Registry) -> None:
    """The resolved scenario, a line per part (specs are long; wrapped they are hard to copy), then
    the headline columns the metric plugins declare for the run's demand ``kind`` that it has values
    in, over the seeds, to three significant digits."""
    from rich.console import Console
    from rich.table import Table

    from dcbench.report import headline_columns

    for part, value in scenario.items():
        click.echo(f"{part:<10} {value}")
    columns = headline_columns(list(registry.entries("metric").values()), kind, summaries)
    if not columns:
        click.echo("no headline metric has a value in these runs (see the notes)")
        return
    seeds = len(summaries)
    table = Table(caption="↑ higher is better, ↓ lower is better" if any(b for _, _, b in columns) else None)
    table.add_column("metric")
    table.add_column("column")
    table.add_column(f"mean ± sd, {seeds} seeds" if seeds > 1 else f"seed {summaries[0]['seed']}", justify="right")
    for column, heading, better in columns:
        table.add_row(heading + BETTER_MARK[better], column, _mean_spread([s.get(column) for s in summaries]))
    Console().print(table)


@cli.command()
@click.option("--allocator", "-a", required=True, help="Allocator spec, e.g. tetris or tetris:penalty=0.8.")
@click.option("--topology", "-t", default="tiered:32,1x4", show_default=True, help="Topology spec.")
@click.option("--workload", "-w", default=None, help="Workload spec (default: the topology's own).")
@click.option("--requests", "-n", type=int, default=None,
              help=f"Requests per run (default: the workload's; 2 per server for uniform), at most "
                   f"{MAX_RUN_REQUESTS:,}.")
@click.option("--seed", type=int, default=None, help="Run this one seed (default 0).")
@click.option("--seeds", type=int, default=None, help=f"Run seeds 0..K-1 (K at most {MAX_SEEDS:,}).")
@click.option("--out", type=PATH, default=Path("results"), show_default=True,
              help="Folder for the results; each run writes DIR/<run_id>/. One command writes to it at a time.")
@click.option("--checkpoint", type=PATH, default=None,
              help="Weights for a learned allocator instead of its shipped checkpoint "
                   "(the same as -a NAME:checkpoint=PATH).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary table.")
def run(allocator: str, topology: str, workload: str | None, requests: int | None, seed: int | None,
        seeds: int | None, out: Path, checkpoint: Path | None, quiet: bool) -> None:
    """Run one allocator on one scenario and write its Parquet tables."""
    from dcbench.atomic import remove_leftovers
    from dcbench.locks import folder_lock, sole_writer
    from dcbench.results import check_writable
    from dcbench.runner import Runner

    seed_list = _seeds(seed, seeds)
    check_bounds("--requests", requests, 1, at_most=MAX_RUN_REQUESTS)
    registry = load_registry()
    if checkpoint is not None:
        allocator = with_checkpoint(registry, allocator, checkpoint)
    runner = Runner(registry)
    with plugin_prints_to_stderr():
        plan = runner.resolve(allocator, topology, workload, requests)
    check_writable(out)
    total = plan.requests * len(seed_list)
    summaries = []
    notes: set[str] = set()
    with sole_writer(folder_lock(out), "run", out), plugin_prints_to_stderr(), progress_bar(quiet) as progress:
        remove_leftovers(out)  # what killed commands left: none can be writing now
        task = progress.add_task(f"{plan.allocator} on {plan.topology}", total=total, noun="requests")
        for index, run_seed in enumerate(seed_list):
            done_before = index * plan.requests
            result = runner.run(allocator, topology, workload, requests, run_seed,
                                progress=lambda k, base=done_before: progress.update(task, completed=base + k))
            result.write(out)
            summaries.append(result.summary)
            notes.update(result.notes)
            progress.update(task, completed=done_before + plan.requests, unit_done=True)  # a seed done
    for note in sorted(notes):
        click.echo(f"Note: {note}", err=True)
    for summary in summaries:
        click.echo(f"{out / summary['run_id']}  seed={summary['seed']}  "
                   f"accepted {summary['accepted']}/{summary['offered']}")
    if not quiet:
        print_summary(summaries, {"allocator": plan.allocator, "topology": plan.topology,
                                  "workload": plan.workload, "requests": f"{plan.requests} per seed"},
                      getattr(plan.workload_model, "kind", "pool"), registry)


@cli.command()
@click.option("--suite", "-s", "suite_name", default=None, help="Suite to run (see `dcbench list suites`).")
@click.option("--topology", "-t", "topologies", multiple=True,
              help="Instead of a suite: a topology spec; repeat it for more. Every topology runs with every "
                   "workload (-w) and allocator.")
@click.option("--workload", "-w", "workloads", multiple=True,
              help="With -t: a workload spec; repeat it for more (default: each topology's own).")
@click.option("--requests", "-n", type=int, default=None,
              help=f"With -t: requests per run (default: the workload's), at most {MAX_RUN_REQUESTS:,}.")
@click.option("--seeds", type=int, default=None,
              help=f"With -t: run seeds 0..K-1 of every scenario (default {ADHOC_SEEDS}, as the suites; K at most "
                   f"{MAX_SEEDS:,}).")
@click.option("--allocator", "-a", "allocator_values", multiple=True, required=True,
              help="Allocator spec; repeat it, or list specs with commas: tetris,nalb or ccf:reconfigure=no,jcb.")
@click.option("--out", type=PATH, default=None,
              help="Results folder (default: results/<suite>, results/sweep for -t). One command writes to it at "
                   "a time.")
@click.option("--jobs", "-j", type=int, default=None,
              help=f"Worker processes (default: all cores; at most {MAX_JOBS}, and no more than runs to do).")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local: a process pool; ray: tasks on a Ray cluster (pip install 'dcbench[ray]').")
@click.option("--address", default=None, help="Ray cluster address (default: start a local Ray instance).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def sweep(suite_name: str | None, topologies: tuple[str, ...], workloads: tuple[str, ...], requests: int | None,
          seeds: int | None, allocator_values: tuple[str, ...], out: Path | None, jobs: int | None, executor: str,
          address: str | None, quiet: bool) -> None:
    """Run every scenario, allocator and seed of a suite, or of topologies
    given with -t (an ad-hoc sweep, which report and plot read as they read
    a suite's); resumes where it stopped."""
    import os

    from dcbench import __version__
    from dcbench.atomic import remove_leftovers
    from dcbench.locks import folder_lock, sole_writer
    from dcbench.results import check_writable, remove_staging
    from dcbench.runner import Runner
    from dcbench import sweep as sweeps

    check_bounds("--jobs", jobs, 1, at_most=MAX_JOBS)
    check_bounds("--requests", requests, 1, at_most=MAX_RUN_REQUESTS)
    check_bounds("--seeds", seeds, 1, at_most=MAX_SEEDS)
    adhoc = check_sweep_choice(suite_name, topologies, workloads, requests, seeds)
    registry = load_registry()
    allocators = sweeps.split_allocators(allocator_values)
    if address is not None and executor != "ray":
        raise UserError("--address is the Ray cluster's, for --executor ray; give both, or neither")
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, MAX_JOBS)
    runner = Runner(registry)
    with plugin_prints_to_stderr():
        if adhoc:
            suite = sweeps.adhoc_suite(runner, topologies, workloads or (None,), requests,
                                       ADHOC_SEEDS if seeds is None else seeds, allocators)
        else:
            suite = registry.get("suite", suite_name)
        planned = sweeps.plan(runner, suite, allocators)
    out = out or Path("results") / (sweeps.ADHOC_OUT if adhoc else suite.name)
    check_writable(out)
    with sole_writer(folder_lock(out), "sweep", out):
        left_out = sweeps.previous_sweep(out, suite, allocators, registry)
        remove_leftovers(out)  # what killed commands left (half-written runs, a summary's temporary file)
        todo = sweeps.pending(planned, out)
        with plugin_prints_to_stderr(), progress_bar(quiet) as progress:
            task = progress.add_task(f"{suite.name}: {len(planned)} runs", total=len(planned),
                                     completed=len(planned) - len(todo), noun="runs")
            try:
                if executor == "ray":
                    sweeps.run_ray(todo, out, address, lambda job: progress.advance(task))
                else:
                    sweeps.run_local(todo, out, workers, lambda job: progress.advance(task))
            except BaseException:  # Ctrl-C or SIGTERM, too: the runs under way were stopped mid-write
                remove_staging(out, [job.run_id for job in todo])
                raise
        combined = sweeps.combine(planned, out, {
            **sweeps.described(suite), "allocators": allocators, "dcbench_version": __version__,
            "runs": [job.run_id for job in planned]})
        sweeps.check_ranked_by(suite, combined, out)
    click.echo(f"{len(planned)} runs ({len(planned) - len(todo)} already done) -> {out / sweeps.SUMMARY}")
    if left_out:
        click.echo(f"Note: the summary no longer lists {', '.join(left_out)} (their run folders stay); "
                   f"name them with {'-a, -t or -w' if adhoc else '-a'} to keep them in it", err=True)
    if quiet:
        return
    if not adhoc:
        print_ranking(combined.to_pylist(), suite.primary_metric, suite.higher_is_better, registry)
        return
    from dcbench.report import PRIMARY, by_demand_kind

    for kind, rows in by_demand_kind(combined.to_pylist()).items():
        print_ranking(rows, *PRIMARY[kind], registry)



def check_sweep_choice(suite: str | None, topologies: tuple[str, ...], workloads: tuple[str, ...],
                       requests: int | None, seeds: int | None) -> bool:
    """Whether ``sweep`` is ad-hoc (-t), after checking that it was given a
    suite or topologies, not both, and the options of -t only with -t."""
    if suite is not None and topologies:
        raise UserError("give a suite with -s SUITE or topologies with -t, not both")
    if suite is None and not topologies:
        raise UserError("give a suite with -s SUITE (see `dcbench list suites`), or topologies to sweep with -t, "
                        "e.g. -t tiered:16,1x8 -t tiered:32,1x4")
    if suite is not None:
        extra = [flag for flag, value in (("-w", workloads), ("-n", requests), ("--seeds", seeds))
                 if value not in ((), None)]
        if extra:
            raise UserError(f"{extra[0]} is for an ad-hoc sweep (-t); a suite sets its own workloads, requests and "
                            "seeds")
    return suite is None


def print_ranking(rows: list[dict[str, Any]], metric: str, higher_is_better: bool, registry: Any) -> None:
    """Per scenario, the allocators' mean of the suite's primary metric."""
    from rich.console import Console
    from rich.table import Table

    from dcbench.report import default_specs, labels
    from dcbench.stats import best_mean, format_ci, mean_ci

    scenarios = list(dict.fromkeys(row["scenario"] for row in rows))
    allocators = list(dict.fromkeys(row["allocator"] for row in rows))
    table = Table(title=f"{metric}, mean over seeds")
    table.add_column("scenario")
    shown = labels(allocators, default_specs(registry))
    for allocator in allocators:
        table.add_column(shown[allocator], justify="right")
    for scenario in scenarios:
        here = [row for row in rows if row["scenario"] == scenario]
        means = [mean_ci(row.get(metric) for row in here if row["allocator"] == allocator)[0]
                 for allocator in allocators]  # NaN (no run with a value) shows as "–" and is never the best
        best = best_mean(means, higher_is_better)
        shown_means = [format_ci(m, float("nan")) for m in means]
        table.add_row(scenario, *[f"[bold]{text}[/bold]" if m == best else text for m, text in zip(means, shown_means)])
    Console().print(table)


@dataclasses.dataclass
class Results:
    """What `plot` and `report` read from a folder: a sweep's combined
    summary, or the runs in a folder of runs grouped as a sweep's rows."""

    rows: list[dict[str, Any]]
    suite: str | None  # the suite a sweep ran; None for an ad-hoc sweep or a folder of runs
    title: str  # how a report's heading names them
    name: str  # and a figure's title (the suite's or the folder's name)


RESULTS_HINT = "give the --out folder of `dcbench run` (results by default) or of `dcbench sweep`"


def read_results(results: Path, registry: Registry) -> Results:
    """A sweep's combined summary (`read_sweep_summary`, a suite's or an
    ad-hoc sweep's), or where ``results`` has no summary.parquet but run
    folders, those runs (`read_run_folder`) grouped into scenarios
    (`as_scenarios`); what they are made by another dcbench version said
    in a note."""
    from dcbench.report import as_scenarios
    from dcbench.results import RUN_FOLDER_NAME, holds_runs, provenance_of, read_run_folder, read_sweep_summary

    from dcbench import __version__

    if not results.exists():
        raise UserError(f"no results folder '{results}'; {RESULTS_HINT}")
    if not results.is_dir():
        raise UserError(f"'{results}' is a file, not a results folder; {RESULTS_HINT}")
    summary = results / "summary.parquet"
    if RUN_FOLDER_NAME.fullmatch(results.name) and (results / "requests.parquet").is_file():
        raise UserError(f"'{results}' is a single run's folder; give the folder that holds it ({results.parent}) to "
                        "compare its runs")
    if not summary.exists() and not summary.is_symlink() and not holds_runs(results):
        sweeps = sorted(str(child) for child in results.iterdir() if (child / "summary.parquet").is_file())
        if sweeps:
            raise UserError(f"'{results}' holds no runs of its own; give one of the folders in it: {', '.join(sweeps)}")
        raise UserError(f"'{results}' holds no dcbench results (no run folders, no summary.parquet); {RESULTS_HINT}")
    if summary.exists() or summary.is_symlink():
        table = read_sweep_summary(results, registry)
        provenance = provenance_of(table)
        made_by = {provenance.get("dcbench_version")} - {None}
        rows = table.to_pylist()
        suite = provenance.get("suite")
        title, name = (f"Suite {suite}", suite) if suite is not None else (f"Sweep {results.name}", results.name)
    else:
        rows = as_scenarios(read_run_folder(results), registry)
        made_by = {row["dcbench_version"] for row in rows}
        suite, title, name = None, f"Runs in {results.name}", results.name
    if made_by - {__version__}:
        click.echo(f"Note: '{results}' was made by dcbench {', '.join(sorted(made_by))}, this is {__version__}: how "
                   "metrics are counted may have changed since (see the CHANGELOG); run the sweep again to compare "
                   "like with like", err=True)
    return Results(rows, suite, title, name)


@cli.command()
@click.argument("results", type=PATH)
@click.option("--out", type=PATH, default=None,
              help="Folder for the PNGs (default RESULTS/plots).")
def plot(results: Path, out: Path | None) -> None:
    """Draw the papers' figures from a RESULTS folder: a sweep's, or one of runs
    (`dcbench run --out`), whose runs are grouped by scenario and allocator."""
    from dcbench.plots import plot_runs, plot_sweep
    from dcbench.report import default_specs

    registry = load_registry()
    read = read_results(results, registry)
    defaults = default_specs(registry)
    draw = plot_sweep if read.suite is not None else plot_runs
    for path in draw(read.rows, out or results / "plots", read.name, defaults):
        click.echo(path)


@cli.command()
@click.argument("results", type=PATH)
@click.option("--out", type=PATH, default=None,
              help="Markdown file to update between its report markers (default: print).")
@click.option("--section", default=None,
              help="Name of the marked block to update (default: the suite's name, or the folder's), for a second "
                   "sweep of the same suite, e.g. against other baselines.")
def report(results: Path, out: Path | None, section: str | None) -> None:
    """Tables of every metric (mean ± 95% CI) from a RESULTS folder: a sweep's,
    or one of runs (`dcbench run --out`), whose runs are grouped by scenario
    and allocator."""
    from dcbench.leaderboard import baselines
    from dcbench.report import default_specs, report_runs, write_between_markers
    from dcbench.report import report as make_report
    from dcbench.results import ranking_of

    if section is not None and (not section.strip() or not section.isprintable() or "--" in section):
        raise UserError(f"--section {section!r}: give a name of one line, without '--' (it goes in an HTML comment)")
    registry = load_registry()
    read = read_results(results, registry)
    title = read.title + (f" ({section})" if section else "")
    if read.suite is not None:
        primary, higher_is_better = ranking_of(registry.entries("suite").get(read.suite))
        text = make_report(read.rows, title, primary, higher_is_better, baselines(registry), default_specs(registry))
    else:
        text = report_runs(read.rows, title, baselines(registry), default_specs(registry))
    if out is None:
        click.echo(text)
    else:
        write_between_markers(out, text, section or read.name)
        click.echo(f"updated {out}")


@cli.command()
@click.argument("folder", type=PATH, default=Path("results"), required=False)
@click.option("--csv", "as_csv", is_flag=True,
              help="Print the index as CSV instead, with full specs: run_id, scenario, allocator, topology, "
                   "workload, requests, seed, dcbench_version, acceptance_ratio, blocking_probability.")
def runs(folder: Path, as_csv: bool) -> None:
    """Index the runs in FOLDER (default: results): a line per run with its
    id (its folder's name), allocator, topology, workload, requests, seed and
    the primary metric of its demand kind (acceptance for pools, blocking for
    jobs). Specs are shortened to the options that differ from the plugins'
    defaults or between the runs; --csv gives them whole."""
    import shutil

    from dcbench.report import default_specs
    from dcbench.results import RUN_FOLDER_NAME, read_runs

    if not folder.exists():
        raise UserError(f"no results folder '{folder}'; {RESULTS_HINT}")
    if not folder.is_dir():
        raise UserError(f"'{folder}' is a file, not a results folder; {RESULTS_HINT}")
    if RUN_FOLDER_NAME.fullmatch(folder.name) and (folder / "requests.parquet").is_file():
        raise UserError(f"'{folder}' is a single run's folder; give the folder that holds it ({folder.parent})")
    registry = load_registry()
    rows, damaged = read_runs(folder)
    index = runs_index(rows, registry, default_specs(registry))
    if as_csv:
        write_index_csv(index)
    elif index:
        for line in index_lines(index, shutil.get_terminal_size((80, 24)).columns):
            click.echo(line)
    else:
        click.echo(f"no runs in '{folder}'", err=True)
    for run_dir, problem in damaged:
        click.echo(f"Note: left out {run_dir}, which {problem}; run it again or remove it", err=True)
    for child in sorted(folder.iterdir()):
        if not RUN_FOLDER_NAME.fullmatch(child.name) and (child / "summary.parquet").is_file():
            click.echo(f"Note: {child} holds a sweep; `dcbench runs {child}` lists its runs", err=True)


def runs_index(rows: list[dict[str, Any]], registry: Registry, defaults: Mapping[str, str]) -> list[dict[str, Any]]:
    """The index of runs ``rows`` (their summaries): each with its scenario's
    label, its specs whole and shortened (`compact_specs`, `labels`), and
    its demand kind's primary metric; runs of pools first, then by
    scenario, allocator and seed."""
    from dcbench.report import PRIMARY, compact_specs, demand_kind, labels, natural, scenario_labels

    scenarios = scenario_labels([(r["topology"], r["workload"], r["requests"]) for r in rows], registry)
    topologies = compact_specs([r["topology"] for r in rows], registry, "topology")
    workloads = compact_specs([r["workload"] for r in rows], registry, "workload")
    allocators = labels(list(dict.fromkeys(r["allocator"] for r in rows)), defaults)
    index = []
    for row in rows:
        kind = demand_kind(row)
        index.append({**{column: row[column] for column in ("run_id", "allocator", "topology", "workload",
                                                             "requests", "seed", "dcbench_version")},
                      "scenario": scenarios[(row["topology"], row["workload"], row["requests"])],
                      "acceptance_ratio": row.get("acceptance_ratio"),
                      "blocking_probability": row.get("blocking_probability"),
                      "kind": kind, "primary": row.get(PRIMARY[kind][0]),
                      "short": (allocators[row["allocator"]], topologies[row["topology"]],
                                workloads[row["workload"]])})
    return sorted(index, key=lambda r: (list(PRIMARY).index(r["kind"]), natural(r["scenario"]),
                                        natural(r["short"][0]), r["seed"]))


INDEX_CSV_COLUMNS = ("run_id", "scenario", "allocator", "topology", "workload", "requests", "seed", "dcbench_version",
                     "acceptance_ratio", "blocking_probability")


def write_index_csv(index: list[dict[str, Any]]) -> None:
    """The index as CSV on stdout, full specs, an empty cell for no value."""
    import csv
    import io

    from dcbench.report import has_value

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(INDEX_CSV_COLUMNS)
    for entry in index:
        writer.writerow([entry[c] if c not in ("acceptance_ratio", "blocking_probability") or has_value(entry[c])
                         else "" for c in INDEX_CSV_COLUMNS])
    click.echo(text.getvalue(), nl=False)


def index_lines(index: list[dict[str, Any]], width: int) -> list[str]:
    """The index as aligned text within ``width`` columns (at least 80): a
    header and a line per run for each demand kind, the specs' columns cut
    short with '…' where they do not fit."""
    from dcbench.report import PRIMARY, significant

    lines = []
    for kind in dict.fromkeys(entry["kind"] for entry in index):
        rows = [["run id", "allocator", "topology", "workload", "n", "seed", PRIMARY[kind][0].split("_")[0]]]
        rows += [[e["run_id"], *e["short"], str(e["requests"]), str(e["seed"]), significant(e["primary"])]
                 for e in index if e["kind"] == kind]
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        room = max(width, 80) - 2 * (len(widths) - 1) - widths[0] - sum(widths[4:])  # for the three specs
        while sum(widths[1:4]) > room and max(widths[1:4]) > len("allocator"):
            specs = [column for column in (3, 2) if widths[column] > 12] or [3, 2, 1]  # the allocator's, last
            widths[max(specs, key=lambda column: widths[column])] -= 1
        if lines:
            lines.append("")
        for row in rows:
            shown = [text if len(text) <= size else text[:size - 1] + "…" for text, size in zip(row, widths)]
            lines.append("  ".join(text.rjust(size) if column >= 4 else text.ljust(size)
                                   for column, (text, size) in enumerate(zip(shown, widths))).rstrip())
    return lines


@cli.command(name="list")
@click.argument("kind", required=False, metavar="[KIND|NAME]")
def list_(kind: str | None) -> None:
    """List topologies, workloads, allocators, metrics and suites; `list KIND`
    lists one kind, `list NAME` shows one plugin with every parameter."""
    from dcbench.spec import unknown

    registry = load_registry()
    if kind is not None and kind not in KIND_ALIASES:
        named = [(current, registry.entries(current)[kind]) for current in KINDS if kind in registry.entries(current)]
        if not named:
            names = sorted({name for current in KINDS for name in registry.entries(current)})
            raise UserError(unknown("kind or plugin", kind, [PLURALS[k] for k in KINDS] + names,
                                    plural="kinds and plugins"))
        for current, entry in named:
            show_entry(current, entry)
        return
    kinds = [KIND_ALIASES[kind]] if kind else list(KINDS)
    for current in kinds:
        entries = registry.entries(current)
        click.secho(PLURALS[current], bold=True)
        if not entries:
            click.echo("  (none)")
        for name, entry in sorted(entries.items()):
            if current == "suite":
                click.echo(f"  {name:<16} {entry.description} "
                           f"[{len(entry.scenarios)} scenarios, ranked by {entry.primary_metric}]")
                continue
            click.echo(f"  {name:<16} {entry.description}")
            details = []
            if entry.params:
                details.append("params: " + ", ".join(p.describe() for p in entry.params))
            if current == "allocator":
                details.append("serves: " + ", ".join(entry.demands))
            if not entry.plugin.startswith("dcbench.plugins."):
                details.append(f"from: {entry.plugin}")
            for detail in details:
                click.echo(f"  {'':<16}   {detail}")


def show_entry(kind: str, entry: Any) -> None:
    """One plugin in full, for `dcbench list NAME`."""
    click.secho(f"{kind} {entry.name}", bold=True)
    click.echo(f"  {entry.description}")
    if kind == "suite":
        click.echo(f"  ranked by {entry.primary_metric} ({'higher' if entry.higher_is_better else 'lower'} is better)")
        for scenario in entry.scenarios:
            seeds = ",".join(str(seed) for seed in scenario.seeds)
            click.echo(f"  {scenario.label:<16} {scenario.topology}  {scenario.workload or '(its default workload)'}"
                       f"  {scenario.requests or 'default'} requests  seeds {seeds}")
        return
    if kind == "allocator":
        click.echo(f"  serves: {', '.join(entry.demands)} demands"
                   + ("; trained with `dcbench train`" if "trainer" in entry.extra else ""))
    click.echo(f"  from: {entry.plugin}")
    if entry.params:
        positional = "; a positional one also without its KEY=" if any(p.positional for p in entry.params) else ""
        click.echo(f"  parameters ({entry.name}:KEY=VALUE,...{positional}):")
        for param in entry.params:
            click.echo(f"    {param.explain()}")
    else:
        click.echo("  no parameters")


@cli.command()
def plugins() -> None:
    """List the loaded plugin modules with their distributions and versions."""
    registry = load_registry()
    for plugin in registry.plugins:
        origin = "built-in" if plugin.builtin else "third-party"
        click.echo(f"{plugin.name:<42} {plugin.distribution} {plugin.version}  ({origin})")
    for failure in registry.failures:
        click.echo(f"broken: {failure}")


@cli.command()
@click.option("--allocator", "-a", "allocators", multiple=True,
              help="Allocators to time, repeated or listed with commas as for sweep "
                   "(default: every heuristic that serves the topology).")
@click.option("--topology", "-t", "topologies", multiple=True,
              help="Topologies (default: tiered:32,1x4 at 64, 1,024 and 8,192 servers).")
@click.option("--workload", "-w", default=None, help="Workload spec (default: each topology's own).")
@click.option("--requests", "-n", type=int, default=4096, show_default=True,
              help=f"Requests per run, at most {MAX_RUN_REQUESTS:,}.")
@click.option("--repeat", type=int, default=3, show_default=True,
              help=f"Timed runs per cell, at most {MAX_REPEAT}; the best is kept.")
def bench(allocators: tuple[str, ...], topologies: tuple[str, ...], workload: str | None, requests: int | None,
          repeat: int) -> None:
    """Measure requests per second and time per request of allocators."""
    from dcbench.bench import DEFAULT_TOPOLOGIES, run_bench
    from dcbench.sweep import split_allocators

    check_bounds("--requests", requests, 1, at_most=MAX_RUN_REQUESTS)
    check_bounds("--repeat", repeat, 1, at_most=MAX_REPEAT)
    registry = load_registry()
    named = bool(allocators)
    if allocators:
        allocators = tuple(split_allocators(allocators))
    else:
        allocators = tuple(sorted(name for name, e in registry.entries("allocator").items()
                                  if not e.extra.get("learned", False)))
    with plugin_prints_to_stderr() as echo:
        run_bench(registry, list(allocators), list(topologies or DEFAULT_TOPOLOGIES), requests, repeat, echo,
                  workload, every_allocator_runs=named)


# These modules add their commands to `cli` when imported.
from dcbench import cli_leaderboard, cli_train  # noqa: E402,F401


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show "±" or "Φ" gets an escape, not a crash
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    with sigterm_as_interrupt():
        try:
            registry = load_registry()
            with warnings_as_lines(), plugin_prints_to_stderr():
                registry.call_each("register_commands", cli=cli)
        except DcbenchError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(2)
        except KeyboardInterrupt as exc:  # while a plugin imports (torch, say)
            sys.exit(interrupted(exc).exit_code)
        cli(prog_name="dcbench")
