"""A sweep's combined summary and its run folders, read and checked; each ``*_problem`` says what is wrong, or None."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from dcbench.errors import ResultsError, describe
from dcbench.storage.tables import (
    METADATA_KEY,
    TABLES,
    UnreadableTable,
    _read_provenance,
    provenance_of,
    read_table,
    table_at,
)

# A sweep summary's non-metric columns with their Arrow types; every other column is a metric, written as numbers.
SUMMARY_COLUMNS = {"run_id": "string", "scenario": "string", "allocator": "string", "topology": "string",
                   "workload": "string", "seed": "int64", "requests": "int64", "dcbench_version": "string",
                   "allocator_fingerprint": "string"}
SWEEP_COLUMNS = {"scenario"}  # what a sweep's combined summary adds to its runs' own
RUN_SUMMARY_COLUMNS = {k: v for k, v in SUMMARY_COLUMNS.items() if k not in SWEEP_COLUMNS}
REBUILD_SUMMARY = "remove it and run the sweep again to rebuild it"


def read_sweep_summary(results: Path, registry: Any = None, runs_needed: bool = False, numbers: bool = True) -> Any:
    """A sweep folder's combined ``summary.parquet``, checked, against its run folders (each required only where
    ``runs_needed``), and, where ``numbers``, its values."""
    from dcbench.running.numbers import counts_problem, values_problem

    hint = "give the folder a `dcbench sweep` wrote (its --out, results/<suite> by default)"
    if not results.exists():
        raise ResultsError(f"no results folder '{results}'; {hint}")
    if not results.is_dir():
        raise ResultsError(f"'{results}' is a file, not a results folder; {hint}")
    path = results / "summary.parquet"
    if not path.exists():
        if any((child / "summary.parquet").exists() for child in results.iterdir()):
            raise ResultsError(f"'{results}' holds single runs, not a sweep; {hint}")
        raise ResultsError(f"'{results}' holds no dcbench results (no summary.parquet); {hint}")
    table = read_table(path)
    if METADATA_KEY not in (table.schema.metadata or {}):
        raise ResultsError(f"'{path}' is not a dcbench sweep's summary (it has no dcbench provenance); {hint}")
    if "scenario" not in table.column_names:
        raise ResultsError(f"'{results}' is a single run, not a sweep; {hint}")
    problem = sweep_summary_problem(table, registry, adhoc=True)
    if problem is None:
        check_run_folders(results, table.to_pylist(), runs_needed)
        problem = (values_problem(table) or counts_problem(table)) if numbers else None
    if problem is not None:
        raise ResultsError(f"'{path}' is damaged ({problem}); {REBUILD_SUMMARY}")
    return table


RUN_FOLDER_NAME = re.compile(r"[0-9a-f]{16}")  # a run id: what `write_run` names a run's folder


def run_folders(folder: Path) -> list[Path]:
    try:
        children = sorted(folder.iterdir())
    except OSError as exc:
        raise ResultsError(f"cannot read the folder '{folder}': {exc.strerror or describe(exc)}; check the path "
                           "and its permissions") from None
    return [child for child in children if RUN_FOLDER_NAME.fullmatch(child.name) and child.is_dir()]


def holds_runs(folder: Path) -> bool:
    return folder.is_dir() and not folder.is_symlink() and bool(run_folders(folder))


def identified_run(run_dir: Path) -> tuple[dict[str, Any], str | None]:
    """``run_dir``'s summary row, and why it holds no finished, readable run whose id is the hash of its specs."""
    problem = run_folder_problem(run_dir)
    if problem is not None:
        return {}, problem
    try:
        (row,) = read_table(run_dir / "summary.parquet").to_pylist()
    except ResultsError as exc:
        return {}, f"has an unreadable summary.parquet ({exc})"
    if any(row[column] is None for column in RUN_IDENTITY):
        return row, "has a damaged summary.parquet (an empty cell where its specs belong)"
    if not hashes_to_its_id(row):
        return row, "has a damaged summary.parquet (the run id is not the hash of its specs)"
    return row, None


def hashes_to_its_id(row: Mapping[str, Any]) -> bool:
    from dcbench.running.runner import run_hash

    return run_hash(*(row[column] for column in RUN_IDENTITY[1:])) == row["run_id"]


def read_runs(folder: Path) -> tuple[list[dict[str, Any]], list[tuple[Path, str]]]:
    """The summaries of the sound run folders below ``folder``, and the others with why."""
    rows, damaged = [], []
    for run_dir in run_folders(folder):
        row, problem = identified_run(run_dir)
        if problem is None:
            rows.append(row)
        else:
            damaged.append((run_dir, problem))
    return rows, damaged


def read_run_folder(folder: Path) -> list[dict[str, Any]]:
    """`read_runs`, where no run or a damaged one is an error."""
    rows, damaged = read_runs(folder)
    if damaged:
        run_dir, problem = damaged[0]
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        raise ResultsError(f"run folder {run_dir} {problem}{more}; run it again with `dcbench run`, or remove it")
    if not rows:
        raise ResultsError(f"'{folder}' holds no dcbench runs; give the --out folder of `dcbench run` or "
                           "`dcbench sweep`")
    return rows


def check_run_folders(results: Path, rows: list[dict[str, Any]], runs_needed: bool = True) -> None:
    """Refuse a summary row that its run folder contradicts, and a missing folder where ``runs_needed``."""
    for row in rows:
        run_dir = results / row["run_id"]
        if not runs_needed and not run_dir.exists():
            continue
        problem = run_folder_problem(run_dir)
        if problem is not None:
            raise ResultsError(f"run folder {run_dir} {problem}; run the sweep again to redo it")
        problem = summary_row_problem(row, run_dir)
        if problem is not None:
            raise ResultsError(f"'{results / 'summary.parquet'}' is damaged ({problem}); {REBUILD_SUMMARY}")


def summary_row_problem(row: Mapping[str, Any], run_dir: Path) -> str | None:
    """Where a sweep summary's row differs from its run folder's; an empty cell the run lacks is a later metric."""
    (own,) = read_table(run_dir / "summary.parquet").to_pylist()  # one row: `run_folder_problem` checked it
    for column, value in own.items():
        given = row.get(column)
        if not same_value(given, value):
            return f"run folder {run_dir} says {column}={value!r}, the summary {given!r}"
    extra = sorted(column for column in set(row) - set(own) - SWEEP_COLUMNS if row[column] is not None)
    if extra:
        return f"run folder {run_dir} has no column {extra[0]!r}, which the summary gives"
    return None


def same_value(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def ranking_of(suite: Any) -> tuple[str, bool]:
    """The column a suite ranks by and whether higher is better; acceptance_ratio for None."""
    return (suite.primary_metric, suite.higher_is_better) if suite is not None else ("acceptance_ratio", True)


def is_adhoc(provenance: Mapping[str, Any]) -> bool:
    """Whether a sweep's provenance is an ad-hoc one's (it lists its scenarios; a suite's names the suite)."""
    return "suite" not in provenance and "scenarios" in provenance


ADHOC_REFUSED = ("it is an ad-hoc sweep's (of -t/-w specs), and the leaderboard ranks registered suites only; "
                 "sweep a suite with -s SUITE (see `dcbench list suites`)")


def is_adhoc_sweep(results: Path) -> bool:
    """Whether ``results`` holds an ad-hoc sweep's summary (False where none reads)."""
    try:
        provenance, _ = _read_provenance(table_at(results / "summary.parquet"))
    except (UnreadableTable, OSError):
        return False
    return provenance is not None and is_adhoc(provenance)


def sweep_provenance_problem(table: Any, adhoc: bool = True) -> str | None:
    """Why ``table`` is no sweep's combined summary (or, unless ``adhoc``, an ad-hoc sweep's), or None."""
    provenance, problem = _read_provenance(table)
    if provenance is None:
        return problem
    if "scenario" not in table.column_names:
        return "it is a single run's"
    if is_adhoc(provenance):
        if not adhoc:
            return ADHOC_REFUSED
        scenarios = provenance["scenarios"]
        if not isinstance(scenarios, list) or not all(isinstance(s, dict) for s in scenarios):
            return "its dcbench provenance's scenarios are not a list of scenarios"
    elif not isinstance(provenance.get("suite"), str):
        return "its dcbench provenance names no suite"
    allocators = provenance.get("allocators", [])
    if not isinstance(allocators, list) or not all(isinstance(a, str) for a in allocators):
        return "its dcbench provenance's allocators are not a list of specs"
    return None


def sweep_summary_problem(table: Any, registry: Any = None, adhoc: bool = False) -> str | None:
    problem = sweep_provenance_problem(table, adhoc)
    if problem is not None:
        return problem
    if registry is None:
        from dcbench.registry import get_registry

        registry = get_registry()
    suite = registry.entries("suite").get(provenance_of(table).get("suite"))
    return summary_contents_problem(table, ranking_of(suite)[0]) or summary_runs_problem(table)


# A run's id and, in `run_hash`'s order, the columns it is the hash of.
RUN_IDENTITY = ("run_id", "topology", "workload", "allocator", "requests", "seed", "dcbench_version",
                "allocator_fingerprint")


def summary_runs_problem(table: Any) -> str | None:
    """Why a sweep summary's rows are not the runs its provenance lists, each id the hash of its specs."""
    held = table.column("run_id").to_pylist()
    listed = provenance_of(table).get("runs", held)  # (a provenance without the list is not checked against it)
    if not isinstance(listed, list) or not all(isinstance(run, str) for run in listed):
        return "its dcbench provenance's runs are not a list of run ids"
    held_ones, listed_ones = set(held), set(listed)
    missing = [run for run in listed if run not in held_ones]
    if missing:
        return (f"it holds {len(held_ones & listed_ones)} of the {len(listed)} runs its provenance lists: "
                f"run {missing[0]} is missing")
    unlisted = [run for run in held if run not in listed_ones]
    if unlisted:
        return f"run {unlisted[0]} is not one of the runs its provenance lists"
    unhashed = next((row for row in table.select(list(RUN_IDENTITY)).to_pylist() if not hashes_to_its_id(row)), None)
    if unhashed is not None:
        return f"run {unhashed['run_id']}: the hash does not match its specs"
    return None


def summary_contents_problem(table: Any, primary: str) -> str | None:
    """What is wrong with a sweep summary's rows, `SUMMARY_COLUMNS` and ``primary`` column."""
    if table.num_rows == 0:
        return "it is empty, with no runs"
    if "run_id" in table.column_names:  # a row copied would count twice in every mean and interval
        twice = [run_id for run_id, count in Counter(table.column("run_id").to_pylist()).items() if count > 1]
        if twice:
            return f"run {twice[0]} appears twice"
    problem = summary_schema_problem(table.schema, SUMMARY_COLUMNS)
    if problem is not None:
        return problem
    for column in SUMMARY_COLUMNS:
        if table.column(column).null_count:
            return f"column {column!r} has empty values"
    if primary not in table.column_names:
        return f"column {primary!r}, the suite's primary metric, is missing"
    return None


def summary_schema_problem(schema: Any, required: Mapping[str, str]) -> str | None:
    """What is wrong with a summary's columns: the ``required`` ones typed, numbers in every other."""
    import pyarrow as pa

    types = {field.name: field.type for field in schema}
    for column, kind in required.items():
        if column not in types:
            return f"column {column!r} is missing"
        if str(types[column]) != kind:
            return f"column {column!r} is {types[column]}, expected {kind}"
    for column, kind in types.items():
        if column not in required and not (pa.types.is_floating(kind) or pa.types.is_integer(kind)
                                           or pa.types.is_boolean(kind)):
            return f"metric column {column!r} is {kind}, expected numbers"
    return None


def run_folder_problem(run_dir: Path) -> str | None:
    """Why ``run_dir`` holds no finished run: three readable footers, a one-row summary naming its run."""
    import pyarrow.parquet as pq

    if not all((run_dir / f"{name}.parquet").is_file() for name in TABLES):
        return "is missing or incomplete"
    footers = {}
    for name in TABLES:
        try:
            footers[name] = pq.read_metadata(run_dir / f"{name}.parquet")
        except Exception as exc:
            return f"has a damaged {name}.parquet ({describe(exc)})"
    summary = footers["summary"].schema.to_arrow_schema()
    provenance, _ = _read_provenance(summary.empty_table())  # it reads a table's schema
    if provenance is None or provenance.get("run_id") != run_dir.name:
        return "holds another run"
    if footers["summary"].num_rows != 1:
        return f"has a summary.parquet of {footers['summary'].num_rows} rows, not one"
    problem = summary_schema_problem(summary, RUN_SUMMARY_COLUMNS)
    if problem is not None:
        return f"has a damaged summary.parquet ({problem})"
    return None


def is_complete(run_dir: Path) -> bool:
    return run_folder_problem(run_dir) is None
