"""``dcbench sweep``: every scenario, allocator and seed of a suite, or of ad-hoc specs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from dcbench.commands.base import (
    ADHOC_SEEDS,
    MAX_JOBS,
    MAX_REQUESTS,
    MAX_SEEDS,
    PATH,
    check_bounds,
    load_registry,
    plugin_prints_to_stderr,
    worker_count,
)
from dcbench.errors import SpecError
from dcbench.hookspecs import hookimpl
from dcbench.registry.columns import ranking_columns
from dcbench.running.progress import progress_bar


@click.command()
@click.option("--suite", "-s", "suite_name", default=None, help="Suite to run (see `dcbench list suites`).")
@click.option("--topology", "-t", "topologies", multiple=True,
              help="Instead of a suite: a topology spec; repeat it, or list specs with commas (tiered:16,1x8,"
                   "tiered:32,1x4). Every topology runs with every workload (-w) and allocator.")
@click.option("--workload", "-w", "workloads", multiple=True,
              help="With -t: a workload spec; repeat it, or list specs with commas (default: each topology's own).")
@click.option("--requests", "-n", type=int, default=None,
              help=f"With -t: measured requests per run, after the workload's warm-up (default: the workload's), "
                   f"at most {MAX_REQUESTS:,}.")
@click.option("--seeds", type=int, default=None,
              help=f"With -t: run seeds 0..K-1 of every scenario (default {ADHOC_SEEDS}, as the suites; K at most "
                   f"{MAX_SEEDS:,}).")
@click.option("--allocator", "-a", "allocator_values", multiple=True, required=True,
              help="Allocator spec; repeat it, or list specs with commas: tetris,nalb or ccf:reconfigure=no,jcb.")
@click.option("--metric", "-m", "metrics", multiple=True,
              help="Also compute this third-party metric in every run (repeat it, or list with commas), besides the "
                   "suite's; dcbench's own metrics always run.")
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
          seeds: int | None, allocator_values: tuple[str, ...], metrics: tuple[str, ...], out: Path | None,
          jobs: int | None, executor: str, address: str | None, quiet: bool) -> None:
    """Run every scenario, allocator and seed of a suite, or of topologies given with -t (an ad-hoc sweep, which report
    and plot read as they read a suite's); resumes where it stopped."""
    from dcbench._version import __version__
    from dcbench.running import sweep as sweeps
    from dcbench.running.runner import Runner
    from dcbench.storage.files import remove_staging
    from dcbench.storage.journal import remove_leftovers
    from dcbench.storage.locks import folder_lock, sole_writer
    from dcbench.storage.paths import check_writable

    workers = worker_count(jobs)
    check_bounds("--requests", requests, 1, at_most=MAX_REQUESTS)
    check_bounds("--seeds", seeds, 1, at_most=MAX_SEEDS)
    adhoc = check_sweep_choice(suite_name, topologies, workloads, requests, seeds)
    registry = load_registry()
    allocators = sweeps.split_allocators(allocator_values)
    topologies, workloads, metrics = (tuple(sweeps.split_specs(values, flag, example)) if values else ()
                                      for values, flag, example in ((topologies, "--topology", "tiered:16,1x8"),
                                                                    (workloads, "--workload", "uniform"),
                                                                    (metrics, "--metric", "locality")))
    if address is not None and executor != "ray":
        raise SpecError("--address is the Ray cluster's, for --executor ray; give both, or neither")
    runner = Runner(registry)
    with plugin_prints_to_stderr():
        if adhoc:
            suite = sweeps.adhoc_suite(runner, topologies, workloads or (None,), requests,
                                       ADHOC_SEEDS if seeds is None else seeds, allocators)
        else:
            suite = registry.get("suite", suite_name)
        planned = sweeps.plan(runner, suite, allocators, metrics)
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
                    sweeps.run_ray(todo, out, address, lambda run: progress.advance(task))
                else:
                    sweeps.run_local(todo, out, workers, lambda run: progress.advance(task))
            except BaseException:  # Ctrl-C too: runs stopped mid-write (test_ctrl_c_during_a_sweep_removes_...)
                remove_staging(out, [job.run_id for job in todo])
                raise
        combined = sweeps.combine(planned, out, {
            **sweeps.described(suite), "allocators": allocators, "dcbench_version": __version__,
            "runs": [job.run_id for job in planned], **({"metrics": list(metrics)} if metrics else {})})
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
    from dcbench.publishing.report import by_demand_kind

    ranked_by = ranking_columns(registry.columns())
    for kind, rows in by_demand_kind(combined.to_pylist(), registry.columns()).items():
        print_ranking(rows, *ranked_by[kind], registry)


def check_sweep_choice(suite: str | None, topologies: tuple[str, ...], workloads: tuple[str, ...],
                       requests: int | None, seeds: int | None) -> bool:
    """Whether ``sweep`` is ad-hoc (-t), having checked it got a suite or topologies (not both), -t options with -t."""
    if suite is not None and topologies:
        raise SpecError("give a suite with -s SUITE or topologies with -t, not both")
    if suite is None and not topologies:
        raise SpecError("give a suite with -s SUITE (see `dcbench list suites`), or topologies to sweep with -t, "
                        "e.g. -t tiered:16,1x8 -t tiered:32,1x4")
    if suite is not None:
        extra = [flag for flag, value in (("-w", workloads), ("-n", requests), ("--seeds", seeds))
                 if value not in ((), None)]
        if extra:
            raise SpecError(f"{extra[0]} is for an ad-hoc sweep (-t); a suite sets its own workloads, requests and "
                            "seeds")
    return suite is None


def print_ranking(rows: list[dict[str, Any]], metric: str, higher_is_better: bool, registry: Any,
                  console: Any = None) -> None:
    """Per scenario, the allocators' mean of the suite's primary metric; a name too wide for its column is folded
    over lines, never cut (two specs cut alike would read the same)."""
    from rich.console import Console
    from rich.table import Table

    from dcbench.publishing.report import labels
    from dcbench.running.labels import default_specs
    from dcbench.running.stats import best_mean, format_ci, mean_ci

    scenarios = list(dict.fromkeys(row["scenario"] for row in rows))
    allocators = list(dict.fromkeys(row["allocator"] for row in rows))
    table = Table(title=f"{metric}, mean over seeds")
    table.add_column("scenario", overflow="fold")
    shown = labels(allocators, default_specs(registry))
    for allocator in allocators:
        table.add_column(shown[allocator], justify="right", overflow="fold")
    for scenario in scenarios:
        here = [row for row in rows if row["scenario"] == scenario]
        means = [mean_ci(row.get(metric) for row in here if row["allocator"] == allocator)[0]
                 for allocator in allocators]  # NaN (no run with a value) shows as "–" and is never the best
        best = best_mean(means, higher_is_better)
        shown_means = [format_ci(m, float("nan")) for m in means]
        table.add_row(scenario, *[f"[bold]{text}[/bold]" if m == best else text for m, text in zip(means, shown_means)])
    (console or Console()).print(table)


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(sweep)
