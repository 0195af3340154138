"""``dcbench report``, ``plot`` and ``runs``: a results folder as tables, figures and an index."""

from __future__ import annotations

import csv
import dataclasses
import io
import shutil
from pathlib import Path
from typing import Any, Mapping

import click

from dcbench.commands.base import PATH, load_registry
from dcbench.errors import ResultsError, SpecError
from dcbench.hookspecs import hookimpl
from dcbench.registry import DEMAND_KINDS, Registry
from dcbench.registry.columns import demand_kind, ranking_columns


@dataclasses.dataclass
class Results:
    """What `plot` and `report` read: a sweep's combined summary, or a folder's runs grouped as a sweep's rows."""

    rows: list[dict[str, Any]]
    suite: str | None  # the suite a sweep ran; None for an ad-hoc sweep or a folder of runs
    title: str  # how a report's heading names them
    name: str  # and a figure's title (the suite's or the folder's name)


RESULTS_HINT = "give the --out folder of `dcbench run` (results by default) or of `dcbench sweep`"


def check_results_folder(folder: Path, purpose: str = "") -> None:
    """Refuse a ``folder`` that is not there, is a file, or is a single run's."""
    from dcbench.running.summary import RUN_FOLDER_NAME

    if not folder.exists():
        raise ResultsError(f"no results folder '{folder}'; {RESULTS_HINT}")
    if not folder.is_dir():
        raise ResultsError(f"'{folder}' is a file, not a results folder; {RESULTS_HINT}")
    if RUN_FOLDER_NAME.fullmatch(folder.name) and (folder / "requests.parquet").is_file():
        raise ResultsError(f"'{folder}' is a single run's folder; give the folder that holds it ({folder.parent})"
                           + purpose)


def read_results(results: Path, registry: Registry) -> Results:
    """A sweep's combined summary, or else the run folders' runs grouped into scenarios (another version's: a note)."""
    from dcbench._version import __version__
    from dcbench.publishing.report import as_scenarios
    from dcbench.running.summary import holds_runs, read_run_folder, read_sweep_summary
    from dcbench.storage.tables import provenance_of

    check_results_folder(results, " to compare its runs")
    summary = results / "summary.parquet"
    if not summary.exists() and not summary.is_symlink() and not holds_runs(results):
        sweeps = sorted(str(child) for child in results.iterdir() if (child / "summary.parquet").is_file())
        if sweeps:
            raise ResultsError(f"'{results}' holds no runs of its own; give one of the folders in it: "
                               f"{', '.join(sweeps)}")
        raise ResultsError(f"'{results}' holds no dcbench results (no run folders, no summary.parquet); {RESULTS_HINT}")
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


@click.command()
@click.argument("results", type=PATH)
@click.option("--out", type=PATH, default=None, help="Folder for the PNGs (default RESULTS/plots).")
def plot(results: Path, out: Path | None) -> None:
    """Draw the papers' figures from a RESULTS folder: a sweep's, or one of runs
    (`dcbench run --out`), whose runs are grouped by scenario and allocator."""
    from dcbench.publishing.figures import allocator_colours, plot_runs, plot_sweep, suite_figures, topology_figures
    from dcbench.running.labels import default_specs

    registry = load_registry()
    read = read_results(results, registry)
    defaults = default_specs(registry)
    colours = allocator_colours(registry)
    out_dir = out or results / "plots"
    # A suite's own figures; else, as for runs no suite groups, those each topology family declares.
    figures = suite_figures(registry.entries("suite").get(read.suite)) if read.suite is not None else None
    if figures is not None:
        paths = plot_sweep(read.rows, out_dir, read.name, figures, colours, defaults)
    else:
        paths = plot_runs(read.rows, out_dir, read.name, topology_figures(registry), registry.columns(), colours,
                          defaults, note=lambda line: click.echo(f"Note: {line}", err=True))
    for path in paths:
        click.echo(path)


@click.command()
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
    from dcbench.publishing.report import baselines, report_runs, write_between_markers
    from dcbench.publishing.report import report as make_report
    from dcbench.running.labels import default_specs
    from dcbench.running.summary import ranking_of

    if section is not None and (not section.strip() or not section.isprintable() or "--" in section):
        raise SpecError(f"--section {section!r}: give a name of one line, without '--' (it goes in an HTML comment)")
    registry = load_registry()
    read = read_results(results, registry)
    title = read.title + (f" ({section})" if section else "")
    if read.suite is not None:
        primary, higher_is_better = ranking_of(registry.entries("suite").get(read.suite))
        text = make_report(read.rows, title, primary, higher_is_better, registry.columns(), baselines(registry),
                           default_specs(registry))
    else:
        text = report_runs(read.rows, title, registry.columns(), baselines(registry), default_specs(registry))
    if out is None:
        click.echo(text)
    else:
        write_between_markers(out, text, section or read.name)
        click.echo(f"updated {out}")


@click.command()
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
    from dcbench.running.labels import default_specs
    from dcbench.running.summary import RUN_FOLDER_NAME, read_runs

    check_results_folder(folder)
    registry = load_registry()
    rows, damaged = read_runs(folder)
    index = runs_index(rows, registry, default_specs(registry))
    if as_csv:
        write_index_csv(index, registry)
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
    """Each run's scenario label, specs whole and short, and its kind's primary metric, in the order shown."""
    from dcbench.publishing.report import labels
    from dcbench.running.labels import compact_specs, natural, scenario_labels

    columns = registry.columns()
    ranked_by = ranking_columns(columns)
    scenarios = scenario_labels([(r["topology"], r["workload"], r["requests"]) for r in rows], registry)
    topologies = compact_specs([r["topology"] for r in rows], registry, "topology")
    workloads = compact_specs([r["workload"] for r in rows], registry, "workload")
    allocators = labels(list(dict.fromkeys(r["allocator"] for r in rows)), defaults)
    index = []
    for row in rows:
        kind = demand_kind(row, columns)
        index.append({**{column: row[column] for column in ("run_id", "allocator", "topology", "workload",
                                                             "requests", "seed", "dcbench_version")},
                      "scenario": scenarios[(row["topology"], row["workload"], row["requests"])],
                      "ranking": {column: row.get(column) for column, _ in ranked_by.values()},
                      "kind": kind, "primary": row.get(ranked_by[kind][0]), "primary_column": ranked_by[kind][0],
                      "short": (allocators[row["allocator"]], topologies[row["topology"]],
                                workloads[row["workload"]])})
    return sorted(index, key=lambda r: (DEMAND_KINDS.index(r["kind"]), natural(r["scenario"]),
                                        natural(r["short"][0]), r["seed"]))


INDEX_CSV_COLUMNS = ("run_id", "scenario", "allocator", "topology", "workload", "requests", "seed", "dcbench_version")


def write_index_csv(index: list[dict[str, Any]], registry: Registry) -> None:
    """The index as CSV on stdout: full specs, then each demand kind's ranking column."""
    from dcbench.publishing.report import has_value

    ranking = [column for column, _ in ranking_columns(registry.columns()).values()]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(INDEX_CSV_COLUMNS + tuple(ranking))
    for entry in index:
        values = [entry["ranking"][column] for column in ranking]
        writer.writerow([entry[c] for c in INDEX_CSV_COLUMNS] + [v if has_value(v) else "" for v in values])
    click.echo(text.getvalue(), nl=False)


def index_lines(index: list[dict[str, Any]], width: int) -> list[str]:
    """The index as aligned text within ``width`` (≥ 80) columns, per demand kind, specs cut to fit."""
    from dcbench.publishing.report import significant

    lines = []
    for kind in dict.fromkeys(entry["kind"] for entry in index):
        primary = next(entry["primary_column"] for entry in index if entry["kind"] == kind)
        rows = [["run id", "allocator", "topology", "workload", "n", "seed", primary.split("_")[0]]]
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


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(report)
    cli.add_command(plot)
    cli.add_command(runs)
