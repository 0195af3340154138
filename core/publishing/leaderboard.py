"""The leaderboard: validated submissions in, ranked pages out.

A submission is the combined ``summary.parquet`` of a sweep (``dcbench
sweep``), accepted only after `validate` has checked it: its schema, a known
suite and the current dcbench version, every scenario and seed of the suite
for every allocator in it, provenance, and run ids that match the resolved
specs. Submissions are data only: Parquet tables, never executed or
unpickled, and only well-formed data (`dcbench.publishing.submissions`): plain
specs, numbers within their columns' ranges, folders named by `submit`,
checked again by every rebuild. `build` turns all submissions into
``README.md``, ``index.html`` and PNG plots, deterministically (the same
submissions give the same bytes).
`rerun` runs a submitted run again and says which columns came out otherwise.
"""

from __future__ import annotations

import functools
import html
import inspect
import json
import math
import os
import shutil
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from dcbench.errors import DcbenchError, ResultsError, describe
from dcbench.publishing.report import cell, labels, signed_ci, significant, table_ci
from dcbench.publishing.submissions import (
    folder_problem,
    names_problem,
    registered_problem,
    submission_name,
)
from dcbench.registry import Column, Registry, get_registry
from dcbench.registry.columns import columns_problem
from dcbench.running.labels import default_specs
from dcbench.running.numbers import counts_problem, values_problem
from dcbench.running.runner import Runner
from dcbench.running.stats import mean_ci
from dcbench.running.summary import (
    SWEEP_COLUMNS,
    is_adhoc_sweep,
    ranking_of,
    read_sweep_summary,
    same_value,
    sweep_summary_problem,
)
from dcbench.storage.files import staging_folder, swapped_in
from dcbench.storage.journal import prepare_atomic, remove_leftovers
from dcbench.storage.locks import file_lock, folder_lock, sole_writer
from dcbench.storage.paths import blocking_path, no_folder
from dcbench.storage.records import read_json
from dcbench.storage.renames import replace_all
from dcbench.storage.tables import UnreadableTable, provenance_of, read_table, table_at

SUBMISSIONS = "submissions"


@dataclass
class Submission:
    name: str
    suite: str
    allocators: list[str]
    rows: list[dict[str, Any]]
    ranked_by: tuple[str, bool] | None = None  # what its suite ranked by when submitted (older ones: None)
    columns: tuple[Column, ...] = ()  # the metrics' declarations of its columns, when submitted
    replayed: dict[str, Any] | None = None  # what `submit` ran again (`dcbench.publishing.replay.replay`), if recorded


@dataclass
class Section:
    """One suite's part of the pages: its overall ranking, per-scenario rankings and plot."""
    suite_name: str
    suite: Any  # the registered Suite, or None for a suite no longer registered
    metric: str
    higher: bool
    scenarios: list[str]
    per_scenario: dict[str, list[Entry]]
    overall: list[tuple[str, float, int]]  # (allocator, mean over scenarios, scenarios won), best first
    metrics: list[str]
    plot: Path
    label: dict[str, str]  # allocator spec -> its short name on the pages


def _refuse(reason: str) -> ResultsError:
    return ResultsError(f"submission refused: {reason}")


class _RowsProblem(Exception):
    """What is wrong with a submission's rows (a refusal at submit, damage later)."""


def validate(results: Path, registry: Registry) -> Submission:
    """Check a sweep's results folder; the accepted submission, or a one-line refusal."""
    from dcbench._version import __version__

    if is_adhoc_sweep(results):  # before its runs are checked: nothing about them would make it rankable
        raise _refuse(f"'{results}' is an ad-hoc sweep (of -t/-w specs, not a suite); the leaderboard ranks "
                      "registered suites only: sweep one with -s SUITE (see `dcbench list suites`)")
    # its provenance, columns, runs, run folders; its numbers, `check_contents` checks
    table = read_sweep_summary(results, registry, runs_needed=True, numbers=False)
    provenance = provenance_of(table)
    suite_name = provenance["suite"]
    suites = registry.entries("suite")
    if suite_name not in suites:
        raise _refuse(f"unknown suite {suite_name!r}; known suites: {', '.join(sorted(suites))}")
    rows = table.to_pylist()
    versions = {row["dcbench_version"] for row in rows} | {provenance.get("dcbench_version")}
    if versions != {__version__}:  # the rows' and the provenance's: either may be the other one
        others = ", ".join(sorted(str(v) for v in versions - {__version__, None})) or "no recorded version"
        raise _refuse(f"made with dcbench {others}; this leaderboard takes {__version__} "
                      "(rerun the sweep with this version)")
    allocators = _allocators(rows)
    try:
        check_contents(table, rows, suites, Runner(registry))
        for allocator in allocators:  # what a rebuild cannot require: its plugins may have been uninstalled since
            problem = registered_problem(allocator, registry)
            if problem is not None:
                raise _RowsProblem(problem)
    except _RowsProblem as exc:
        raise _refuse(str(exc)) from None
    name = submission_name(suite_name, allocators, [row["run_id"] for row in rows], __version__)
    suite = suites[suite_name]
    declared = tuple(column for column in registry.columns() if column.matches(rows[0]))
    return Submission(name, suite_name, allocators, rows, (suite.primary_metric, suite.higher_is_better), declared)


def check_contents(table: Any, rows: list[dict[str, Any]], suites: Mapping[str, Any], runner: Runner) -> None:
    """What `submit` and every rebuild check of a submission's summary once
    it reads as a sweep's (`sweep_summary_problem`): its names (plain specs,
    labels and column names), every number within its column's range,
    where its suite is registered its rows against the suite's
    (`_check_rows`), and every row's counts against each other (`counts_problem`)."""
    suite = provenance_of(table)["suite"]
    problem = names_problem(suite, table.column_names, rows) or values_problem(table)
    if problem is not None:
        raise _RowsProblem(problem)
    if suite in suites:  # a suite no longer registered cannot be checked
        _check_rows(suites[suite], rows, runner)
    problem = counts_problem(table)
    if problem is not None:
        raise _RowsProblem(problem)


def _allocators(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(row["allocator"] for row in rows))


def _check_rows(suite: Any, rows: list[dict[str, Any]], runner: Runner) -> None:
    """Check a submission's rows against its registered ``suite``: every run
    one of its scenarios and seeds (whose run ids `summary_runs_problem` checked),
    each once, a finite primary metric, every scenario and seed for every
    allocator. ``runner`` resolves the scenarios (and keeps their networks
    for the next submission)."""
    suite_name = suite.name
    expected: dict[tuple[str, int], tuple[str, str, int]] = {}
    for scenario in suite.scenarios:
        # The scenario as a run resolves it, the workload's own default number of requests included.
        resolved = runner.resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
        for seed in scenario.seeds:
            expected[(scenario.label, seed)] = (resolved.topology, resolved.workload, resolved.requests)
    allocators = _allocators(rows)
    seen: set[tuple[str, str, int]] = set()
    for row in rows:
        key = (row["scenario"], row["seed"])
        if key not in expected:
            raise _RowsProblem(f"scenario {row['scenario']!r} seed {row['seed']} is not in suite {suite_name}")
        topology, workload, requests = expected[key]
        if (row["topology"], row["workload"], row["requests"]) != (topology, workload, requests):
            raise _RowsProblem(f"run {row['run_id']} does not use the suite's scenario {row['scenario']!r}")
        identity = (row["allocator"], row["scenario"], row["seed"])
        if identity in seen:
            raise _RowsProblem(f"run {row['run_id']} appears twice")
        seen.add(identity)
        value = row.get(suite.primary_metric)
        if value is None or not math.isfinite(float(value)):
            raise _RowsProblem(f"run {row['run_id']} has no finite {suite.primary_metric}")
    for allocator in allocators:
        for scenario, seed in expected:
            if (allocator, scenario, seed) not in seen:
                raise _RowsProblem(f"{allocator} lacks scenario {scenario!r} seed {seed}; "
                                   "submit the whole suite (dcbench sweep resumes a partial one)")


def check_root(root: Path) -> None:
    """Refuse a leaderboard folder that is a file, or lies below one."""
    blocker = blocking_path(root)
    if blocker is not None:
        raise ResultsError(f"cannot use '{root}' as the leaderboard folder: {no_folder(blocker, root)}; "
                           "give a folder with --root")


def leaderboard_lock(root: Path) -> Path:
    """The lock file of the leaderboard folder ``root``: beside it
    (``.NAME.lock``), not in it, where it would be one more thing in a
    folder that `submit` checks is a leaderboard's or empty."""
    folder = Path(os.path.abspath(root))
    return file_lock(folder) if folder.name else folder_lock(folder)


def _holding_the_lock(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the function, given the leaderboard folder as ``root``,
    runs holding its lock (`leaderboard_lock`), so that a second ``command``
    (a submit or a rebuild) of the same leaderboard meanwhile is refused in
    one line rather than check and write beside it."""
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def holding_the_lock(*args: Any, **kwargs: Any) -> Any:
            root = inspect.signature(function).bind(*args, **kwargs).arguments["root"]
            check_root(root)  # first: a root below a file has no folder for the lock
            with sole_writer(leaderboard_lock(root), command, root, option="--root"):
                return function(*args, **kwargs)
        return holding_the_lock
    return decorate


@_holding_the_lock("leaderboard submit")
def submit(results: Path, root: Path, registry: Registry, workers: int = 1) -> Path:
    """Validate a submission, replay one seed of every scenario and
    allocator in it (`dcbench.publishing.replay.replay`, ``workers`` processes
    at a time), and copy it into ``root/submissions`` (atomically)."""
    from dcbench.publishing.replay import replay

    if root.is_dir() and not (root / SUBMISSIONS).is_dir() and any(root.iterdir()):
        raise ResultsError(f"'{root}' holds other things and no {SUBMISSIONS}/ folder, so it is no leaderboard; "
                           "give a leaderboard folder, or a new or empty one, with --root")
    submission = validate(results, registry)
    folder = root / SUBMISSIONS / submission.name
    problem = folder_problem(folder, root / SUBMISSIONS)
    if problem is not None:  # (names are checked: it cannot happen)
        raise _refuse(f"its folder {folder} would be no submission's: {problem}")
    if folder.exists() or folder.is_symlink():
        raise _refuse(f"already submitted as {folder}")
    if (root / SUBMISSIONS).is_dir():
        conflict = first_conflict([*load_submissions(root, registry), submission])
        if conflict is not None:
            run_id, earlier, later, column = conflict
            if later != submission.name:  # the leaderboard's own submissions disagree
                raise _disagreeing(root, conflict)
            raise _refuse(f"run {run_id} is already on the leaderboard in {earlier} with another {column}; "
                          "the same run must give the same summary")
    submission.replayed = replay(submission.rows, submission.suite, registry, workers)
    table = read_table(results / "summary.parquet")
    import pyarrow.parquet as pq

    (root / SUBMISSIONS).mkdir(parents=True, exist_ok=True)
    staging = staging_folder(folder)  # readable by all, as results are for sharing (mkdtemp's is private)
    try:
        pq.write_table(table, staging / "summary.parquet")
        (staging / "submission.json").write_text(json.dumps(submission_record(submission), indent=2,
                                                            sort_keys=True) + "\n")
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder


def load_submissions(root: Path, registry: Registry | None = None) -> list[Submission]:
    """The submissions under ``root``, each checked as `validate` checked its
    summary (``registry`` names the suites' primary metrics), but for its run
    folders, which stay with the submitter, and the plugins it uses, which
    need not be installed where the pages are rebuilt."""
    folder = root / SUBMISSIONS
    registry = registry or get_registry()
    suites = registry.entries("suite")
    runner = Runner(registry)  # one for all submissions: a suite's topologies are compiled once
    submissions = []
    for path in sorted(folder.iterdir()) if folder.exists() else []:
        if not path.is_dir() or path.name.startswith("."):
            continue
        problem = folder_problem(path, folder)
        if problem is not None:
            raise _damaged(path, problem)
        summary = path / "summary.parquet"
        if not summary.exists():
            raise _damaged(path, "it has no summary.parquet")
        try:
            table = table_at(summary)
        except UnreadableTable as exc:
            raise _damaged(path, str(exc) if exc.corrupt else f"its summary.parquet {exc}") from None
        problem = sweep_summary_problem(table, registry)
        if problem is not None:
            raise _damaged(path, problem)
        rows = table.to_pylist()
        suite = provenance_of(table)["suite"]
        allocators = _allocators(rows)
        try:  # what `submit` refuses, edited in later
            check_contents(table, rows, suites, runner)
        except _RowsProblem as exc:
            raise _damaged(path, str(exc)) from None
        record = _submission_record(path)
        described = {key: record.get(key) for key in IDENTITY_KEYS} if isinstance(record, dict) else record
        if described != {"name": path.name, "suite": suite, "allocators": allocators, "runs": len(rows)}:
            raise _damaged(path, "its submission.json does not describe its summary")
        ranked_by, columns = _ranking_of_record(record, rows, path)
        replayed = _replay_of_record(record, rows, path)
        submissions.append(Submission(path.name, suite, allocators, rows, ranked_by, columns, replayed))
    return submissions


IDENTITY_KEYS = ("name", "suite", "allocators", "runs")  # what every submission.json says
RANKING_KEYS = ("ranked_by", "columns")  # what it says since 0.4 (`submission_record`)
REPLAY_KEY = "replayed"  # what it says since 0.5: the runs `submit` ran again


def submission_record(submission: Submission) -> dict[str, Any]:
    """What ``submission.json`` says of a submission: what it is, and what
    ranks it (its suite's primary metric and direction, and the metrics'
    declarations of its columns), so that pages rebuilt where the suite's
    plugin is not installed rank and head it as where it is."""
    record: dict[str, Any] = {"name": submission.name, "suite": submission.suite,
                              "allocators": submission.allocators, "runs": len(submission.rows)}
    if submission.ranked_by is not None:
        metric, higher = submission.ranked_by
        record["ranked_by"] = {"metric": metric, "higher_is_better": higher}
        record["columns"] = [asdict(column) for column in submission.columns]
    if submission.replayed is not None:
        record[REPLAY_KEY] = submission.replayed
    return record


def _replay_of_record(record: dict[str, Any], rows: list[dict[str, Any]], path: Path) -> dict[str, Any] | None:
    """What a ``submission.json`` says `submit` replayed, checked: runs of
    the submission, a version and a date; None where it says nothing."""
    replayed = record.get(REPLAY_KEY)
    if replayed is None:
        return None
    run_ids = {row["run_id"] for row in rows}
    if (not isinstance(replayed, dict) or set(replayed) != {"runs", "dcbench_version", "date"}
            or not isinstance(replayed["runs"], list) or not replayed["runs"]
            or not all(isinstance(run, str) and run in run_ids for run in replayed["runs"])
            or not isinstance(replayed["dcbench_version"], str) or len(replayed["dcbench_version"]) > 40
            or not isinstance(replayed["date"], str) or not _is_date(replayed["date"])):
        raise _damaged(path, f"its submission.json's {REPLAY_KEY} is not {{runs: run ids of its summary, "
                             "dcbench_version: a version, date: YYYY-MM-DD}")
    return replayed


def _is_date(text: str) -> bool:
    import datetime

    try:
        return datetime.date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def _ranking_of_record(record: dict[str, Any], rows: list[dict[str, Any]], path: Path
                       ) -> tuple[tuple[str, bool] | None, tuple[Column, ...]]:
    """The ranking and column declarations a ``submission.json`` records
    (`submission_record`), checked: None and none for one that records none."""
    unknown_keys = sorted(set(record) - set(IDENTITY_KEYS) - set(RANKING_KEYS) - {REPLAY_KEY})
    if unknown_keys:
        raise _damaged(path, f"its submission.json has unknown keys {unknown_keys}")
    if not any(key in record for key in RANKING_KEYS):
        return None, ()
    ranked_by, declarations = record.get("ranked_by"), record.get("columns")
    if (not isinstance(ranked_by, dict) or set(ranked_by) != {"metric", "higher_is_better"}
            or ranked_by["metric"] not in rows[0] or not isinstance(ranked_by["higher_is_better"], bool)):
        raise _damaged(path, "its submission.json's ranked_by is not {metric: a column of its summary, "
                             "higher_is_better: true or false}")
    names = {field.name for field in fields(Column)}
    if not isinstance(declarations, list) or not all(isinstance(d, dict) and set(d) == names for d in declarations):
        raise _damaged(path, "its submission.json's columns are not column declarations")
    columns = tuple(Column(**{key: tuple(value) if isinstance(value, list) else value for key, value in d.items()})
                    for d in declarations)
    problem = columns_problem(columns)
    if problem is not None:
        raise _damaged(path, f"its submission.json's {problem}")
    return (ranked_by["metric"], ranked_by["higher_is_better"]), columns


def first_conflict(submissions: list[Submission]) -> tuple[str, str, str, str] | None:
    """The first run that two submissions both hold with other numbers, as
    (run id, the earlier submission, the later one, the first column that
    differs); None if every run submitted twice says the same both times."""
    first: dict[str, tuple[str, dict[str, Any]]] = {}
    for submission in submissions:
        for row in submission.rows:
            name, earlier = first.setdefault(row["run_id"], (submission.name, row))
            column = _conflict(earlier, row) if earlier is not row else None
            if column is not None:
                return row["run_id"], name, submission.name, column
    return None


def _disagreeing(root: Path, conflict: tuple[str, str, str, str]) -> ResultsError:
    run_id, earlier, later, column = conflict
    return _damaged(root / SUBMISSIONS / later, f"run {run_id} has other numbers than in {earlier} ({column})")


_MISSING = object()


def _conflict(first: Mapping[str, Any], second: Mapping[str, Any]) -> str | None:
    """The first column two copies of a run disagree on, or None."""
    for column in sorted((set(first) | set(second)) - SWEEP_COLUMNS):
        if not same_value(first.get(column, _MISSING), second.get(column, _MISSING)):
            return column
    return None


def _submission_record(path: Path) -> Any:
    try:
        return read_json(path / "submission.json")
    except (OSError, ValueError) as exc:
        raise _damaged(path, f"its submission.json does not read: {describe(exc)}") from None


def _damaged(submission: Path, problem: str) -> ResultsError:
    return ResultsError(f"submission '{submission}' is damaged ({problem}); remove that folder and submit "
                        "the sweep's results folder again with `dcbench leaderboard submit`")


# ----- re-running ------------------------------------------------------------

def rerun(row: Mapping[str, Any], runner: Runner) -> list[str]:
    """Run a submitted run again, in this process; the summary columns that
    came out otherwise (`dcbench.publishing.replay.differing_columns`). A run
    whose specs a submission may not hold is refused before anything is
    built (`dcbench.publishing.replay.planned_rerun`)."""
    from dcbench.publishing.replay import differing_columns, planned_rerun

    run = planned_rerun(row, runner)
    again = runner.run(run.allocator, run.topology, run.workload, run.requests, run.seed, metrics=run.metrics)
    return differing_columns(row, again.run_id, again.summary)


def sample_runs(submissions: list[Submission], count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` (submission name, row) pairs drawn without replacement, one
    of every submission first (more than ``count`` where there are more
    submissions), the same ones for the same seed; every run where
    ``count`` covers them all."""
    import numpy as np

    pairs = [(submission.name, row) for submission in submissions for row in submission.rows]
    if count >= len(pairs):
        return pairs
    rng = np.random.default_rng(seed)
    starts = np.cumsum([0] + [len(submission.rows) for submission in submissions])
    firsts = [int(start + rng.integers(size)) for start, size in zip(starts[:-1], np.diff(starts)) if size]
    others = np.setdiff1d(np.arange(len(pairs)), firsts)
    rest = rng.choice(others, size=max(0, count - len(firsts)), replace=False).tolist()
    return [pairs[i] for i in sorted(firsts + rest)]


# ----- ranking ---------------------------------------------------------------

@dataclass
class Entry:
    allocator: str
    primary: tuple[float, float, int]
    delta: tuple[float, float, int] | None
    metrics: dict[str, tuple[float, float, int]]


def baselines(registry: Registry) -> set[str]:
    """The built-in heuristics: what a learned or third-party allocator is measured against."""
    return {name for name, entry in registry.entries("allocator").items()
            if entry.builtin and not entry.extra.get("learned")}


def rank_scenario(rows: list[dict[str, Any]], metric: str, higher: bool, baseline_names: set[str],
                  metrics: list[str]) -> list[Entry]:
    allocators = sorted({r["allocator"] for r in rows})
    by_seed = {a: {r["seed"]: r for r in rows if r["allocator"] == a} for a in allocators}
    means = {a: mean_ci(r[metric] for r in by_seed[a].values()) for a in allocators}
    sign = 1 if higher else -1
    candidates = [a for a in allocators if a.split(":")[0] in baseline_names]
    best_baseline = max(candidates, key=lambda a: (sign * means[a][0], a)) if candidates else None
    entries = []
    for allocator in allocators:
        delta = None
        if best_baseline is not None:
            seeds = sorted(set(by_seed[allocator]) & set(by_seed[best_baseline]))
            delta = mean_ci(by_seed[allocator][s][metric] - by_seed[best_baseline][s][metric] for s in seeds)
        entries.append(Entry(allocator, means[allocator], delta,
                             {m: mean_ci(r.get(m, float("nan")) for r in by_seed[allocator].values())
                              for m in metrics}))
    entries.sort(key=lambda e: (-sign * e.primary[0], e.allocator))
    return entries


def _metric_columns(rows: list[dict[str, Any]], primary: str, declared: Sequence[Column]) -> list[str]:
    """The columns a section shows beside ``primary``: the numbers the metrics declare (`dcbench.Column`)."""
    numbers = [column for column, value in rows[0].items() if isinstance(value, float) and column != primary]
    return sorted(column for column in numbers if any(declaration.matches([column]) for declaration in declared))


@_holding_the_lock("leaderboard")
def build(root: Path, registry: Registry) -> list[Path]:
    """Rebuild ``root/README.md``, ``root/index.html`` and ``root/plots/``
    from the submissions, first removing what a killed rebuild left of
    them (`BUILT`): under the lock, no other rebuild can be writing them."""
    from dcbench._version import __version__

    if not root.is_dir():
        raise ResultsError(f"no leaderboard folder '{root}'; give the folder that holds {SUBMISSIONS}/ with "
                           f"--root, or start one with `dcbench leaderboard --root {root} submit RESULTS`")
    check_own_folder(root)
    remove_leftovers(root, BUILT)
    submissions = load_submissions(root, registry)
    suites = registry.entries("suite")
    baseline_names = baselines(registry)
    defaults = default_specs(registry)
    conflict = first_conflict(submissions)
    if conflict is not None:
        raise _disagreeing(root, conflict)
    by_suite: dict[str, list[Submission]] = {}
    for submission in submissions:
        by_suite.setdefault(submission.suite, []).append(submission)
    # Everything is drawn and rendered before anything is replaced: a failure
    # (matplotlib missing, say) leaves the previous pages and plots whole.
    # Then the plots folder and both pages are replaced together, or none of them.
    plots_dir = root / "plots"
    staging = staging_folder(plots_dir)
    prepared: list[tuple[Path, Path]] = []
    try:
        declared = [*registry.columns()]
        for submission in submissions:  # a metric not installed here heads its columns as where it was
            declared += [c for c in submission.columns if not any(d.name == c.name for d in declared)]
        sections = _sections(by_suite, suites, baseline_names, defaults, declared, staging, plots_dir)
        for name, text in (("README.md", _markdown(sections, submissions, __version__, root)),
                           ("index.html", _html(sections, submissions, __version__, root))):
            prepared.append(prepare_atomic(root / name, lambda path, text=text: path.write_text(
                text, encoding="utf-8", newline="")))
        try:
            with swapped_in(staging, plots_dir):
                replace_all(prepared)
        except OSError as exc:
            raise ResultsError(f"cannot replace '{exc.filename}': {exc.strerror}; nothing was replaced; make it "
                               "writable, or give another --root") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for temporary, _ in prepared:
            temporary.unlink(missing_ok=True)
        raise
    return [root / "README.md", root / "index.html", *(section.plot for section in sections)]


# What marks the pages `build` writes as its own (the first lines of each).
OWN_PAGES = {"README.md": "# dcbench leaderboard\n", "index.html": "<!DOCTYPE html>\n<html lang=\"en\"><head>"}
BUILT = ("plots", *OWN_PAGES)  # what `build` replaces, through temporaries named after them


def check_own_folder(root: Path) -> None:
    """Refuse to rebuild in a folder that is not a leaderboard's: it must
    hold submissions/, its pages must be ones `build` wrote, and its plots/
    only the PNG files `build` draws (the folder is replaced whole)."""
    fix = "give a leaderboard folder of its own with --root"
    if not (root / SUBMISSIONS).is_dir():
        raise ResultsError(f"'{root}' holds no {SUBMISSIONS}/ folder, so it is no leaderboard; {fix}, or start one "
                           f"with `dcbench leaderboard --root NEW_FOLDER submit RESULTS`")
    for name, start in OWN_PAGES.items():
        page = root / name
        if page.exists() and not (page.is_file() and page.read_bytes().startswith(start.encode())):
            raise ResultsError(f"'{page}' was not written by `dcbench leaderboard`, which would replace it; {fix}")
    plots = root / "plots"
    if plots.exists():
        foreign = [p for p in plots.iterdir() if not (p.is_file() and p.suffix == ".png")] if plots.is_dir() \
            else [plots]
        if foreign:
            raise ResultsError(f"'{foreign[0]}' was not drawn by `dcbench leaderboard`, which rebuilds "
                               f"'{plots}' whole; move it elsewhere, or {fix}")


def _sections(by_suite: dict[str, list[Submission]], suites: Mapping[str, Any], baseline_names: set[str],
              defaults: Mapping[str, str], columns: Sequence[Column], plots_staging: Path, plots_dir: Path
              ) -> list[Section]:
    """One section per suite: its rankings, and its plot, drawn into
    ``plots_staging`` and named by its place once that becomes ``plots_dir``.
    A suite whose section fails to rank or draw (what the checks of every
    submission should make impossible) is a one-line error naming the
    submission that fails on its own, or else the suite's submissions."""
    sections = []
    for suite_name in sorted(by_suite):
        section = functools.partial(_section, suite_name, suites=suites, baseline_names=baseline_names,
                                    defaults=defaults, columns=columns, plots_dir=plots_dir)
        try:
            sections.append(section(by_suite[suite_name], plots_staging=plots_staging))
        except DcbenchError:  # matplotlib missing, say: no submission's doing
            raise
        except Exception as exc:
            raise _unrankable(by_suite[suite_name], exc, section, plots_staging, plots_dir.parent) from exc
    return sections


def _section(suite_name: str, submissions: list[Submission], suites: Mapping[str, Any], baseline_names: set[str],
             defaults: Mapping[str, str], columns: Sequence[Column], plots_staging: Path, plots_dir: Path
             ) -> Section:
    by_run: dict[str, dict[str, Any]] = {}
    for submission in submissions:
        for row in submission.rows:  # the same run submitted twice counts once: its copies agree
            by_run.setdefault(row["run_id"], row)
    rows = sorted(by_run.values(), key=lambda r: (r["scenario"], r["allocator"], r["seed"]))
    suite = suites.get(suite_name)
    metric, higher = ranking_of(suite) if suite is not None else recorded_ranking(suite_name, submissions)
    order = [s.label for s in suite.scenarios] if suite else sorted({r["scenario"] for r in rows})
    scenarios = [s for s in order if any(r["scenario"] == s for r in rows)]
    metrics = _metric_columns(rows, metric, columns)
    per_scenario = {s: rank_scenario([r for r in rows if r["scenario"] == s], metric, higher, baseline_names,
                                     metrics)
                    for s in scenarios}
    overall = _overall(per_scenario, higher)
    drawn = _plot(rows, scenarios, metric, plots_staging / f"{suite_name}.png", suite_name, defaults)
    plot = plots_dir / drawn.name
    label = labels([a for a, _, _ in overall], defaults)
    return Section(suite_name, suite, metric, higher, scenarios, per_scenario, overall, metrics, plot, label)


def recorded_ranking(suite_name: str, submissions: list[Submission]) -> tuple[str, bool]:
    """What ranks a suite no installed plugin registers: what its submissions
    recorded (the first one's, by name, where they differ: the suite changed
    between them), or acceptance_ratio, higher is better, with a warning."""
    recorded = [s.ranked_by for s in submissions if s.ranked_by is not None]
    if not recorded:
        warnings.warn(f"suite {suite_name!r} is not installed here and its submissions record no ranking; ranked by "
                      "acceptance_ratio (higher is better): install its plugin to rank it by its own metric",
                      stacklevel=2)
        return ranking_of(None)
    if len(set(recorded)) > 1:
        warnings.warn(f"the submissions of suite {suite_name!r} record different rankings; ranked by "
                      f"{recorded[0][0]}, as the first one says", stacklevel=2)
    return recorded[0]


def _unrankable(submissions: list[Submission], exc: Exception, section: Callable[..., Section],
                plots_staging: Path, root: Path) -> ResultsError:
    """The error for a suite whose ``section`` failed with ``exc``: naming
    the first of its ``submissions`` whose section fails on its own too
    (drawn into a folder of its own, removed again), or else all of them."""
    problem = describe(exc)
    culprits = submissions
    if len(submissions) > 1:
        culprits = []
        for submission in submissions:
            trial = staging_folder(plots_staging)
            try:
                section([submission], plots_staging=trial)
            except Exception:
                culprits = [submission]
                break
            finally:
                shutil.rmtree(trial, ignore_errors=True)
    if len(culprits) == 1:
        return _damaged(root / SUBMISSIONS / culprits[0].name, f"it cannot be ranked or drawn: {problem}")
    names = ", ".join(submission.name for submission in submissions)
    return ResultsError(f"the submissions {names} cannot be ranked or drawn together ({problem}); remove one of "
                        "their folders and rebuild")


def _overall(per_scenario: dict[str, list[Entry]], higher: bool) -> list[tuple[str, float, int]]:
    allocators = sorted({e.allocator for entries in per_scenario.values() for e in entries})
    wins = {a: 0 for a in allocators}
    for entries in per_scenario.values():
        for entry in entries:  # an exact tie at the top is a win for each
            if entry.primary[0] == entries[0].primary[0]:
                wins[entry.allocator] += 1
    means = {a: sum(e.primary[0] for entries in per_scenario.values() for e in entries if e.allocator == a)
             / max(1, sum(1 for entries in per_scenario.values() for e in entries if e.allocator == a))
             for a in allocators}
    sign = 1 if higher else -1
    return sorted(((a, means[a], wins[a]) for a in allocators), key=lambda t: (-sign * t[1], t[0]))


def _plot(rows: list[dict[str, Any]], scenarios: list[str], metric: str, path: Path, title: str,
          defaults: Mapping[str, str]) -> Path:
    """The suite ``title``'s ranking ``metric`` per scenario and allocator,
    its scenarios named as its figures name them (`Figures.xlabel`,
    `Figures.tick_label`); where it declares none (or is not installed), as
    `dcbench plot` draws it: as the figures of its rows' one topology family
    do, else by their labels. The allocators in the colours they declare."""
    from dcbench.publishing.figures import (
        allocator_colours,
        metric_panels,
        scenario_label,
        suite_figures,
        topology_figures,
    )

    registry = get_registry()  # the one `dcbench leaderboard` builds with
    declared = suite_figures(registry.entries("suite").get(title))
    families = {r["topology"].partition(":")[0] for r in rows}
    if declared is None and len(families) == 1:
        declared = topology_figures(registry).get(families.pop())
    path.parent.mkdir(parents=True, exist_ok=True)
    ordered = sorted(rows, key=lambda r: (scenarios.index(r["scenario"]), r["allocator"], r["seed"]))
    draw = functools.partial(
        metric_panels, ordered, [(metric, metric.replace("_", " "))], path, f"{title}: {metric} (mean, 95% CI)",
        allocator_colours(registry), defaults=defaults)
    if declared is None:
        return draw(xlabel="scenario", tick_label=scenario_label)
    figures = declared.load()

    def tick_label(row: dict[str, Any]) -> str:
        with declared.blamed("failed to name a scenario"):
            return figures.tick_label(row)

    return draw(xlabel=figures.xlabel, tick_label=tick_label)


def _delta(entry: Entry) -> str:
    if entry.delta is None or entry.delta[2] == 0:
        return "–"
    mean, half, _ = entry.delta
    return signed_ci(mean, half)


def _markdown(sections: Iterable[Section], submissions: list[Submission], version: str, root: Path) -> str:
    lines = ["# dcbench leaderboard", "",
             f"Generated by `dcbench leaderboard` (dcbench {version}) from the {len(submissions)} submission(s) "
             f"in `{SUBMISSIONS}/`. Means with the half-width of the 95% confidence interval over seeds; "
             "Δ is the paired difference from the best built-in baseline of the scenario (same seeds, "
             "same request sequences).", ""]
    for section in sections:
        name = section.label
        suite = cell(section.suite_name)
        lines += [f"## {suite}", "", section.suite.description if section.suite else "", "",
                  f"Ranked by `{section.metric}` ({'higher' if section.higher else 'lower'} is better).", "",
                  "| rank | allocator | mean over scenarios | scenarios won |", "|---:|---|---:|---:|"]
        for rank, (allocator, mean, wins) in enumerate(section.overall, 1):
            lines.append(f"| {rank} | {_code(name[allocator])} | {significant(mean)} | {wins} |")
        lines += ["", f"![{suite}]({section.plot.relative_to(root).as_posix()})", ""]
        for scenario in section.scenarios:
            lines += [f"### {suite} / {cell(scenario)}", "",
                      f"| rank | allocator | {section.metric} | Δ vs best baseline | "
                      + " | ".join(cell(m) for m in section.metrics) + " |",
                      "|---:|---|---:|---:|" + "---:|" * len(section.metrics)]
            for rank, entry in enumerate(section.per_scenario[scenario], 1):
                cells = [table_ci(entry.metrics[m][0], entry.metrics[m][1]) for m in section.metrics]
                lines.append(f"| {rank} | {_code(name[entry.allocator])} | {table_ci(*entry.primary[:2])} | "
                             f"{_delta(entry)} | " + " | ".join(cells) + " |")
            lines.append("")
    lines += ["## Submissions", ""] + [f"- {_code(s.name)}: {cell(s.suite)}, {len(s.rows)} runs, "
                                       + ", ".join(_code(a) for a in s.allocators) for s in submissions]
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """``text`` as Markdown code in a table cell: a spec, which holds no '`'
    or '|' (`dcbench.publishing.submissions.spec_problem`), or a name made of one;
    either is replaced all the same, rather than end the code or the cell."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:nth-child(2),td:nth-child(2){text-align:left}
tr:first-child td{background:#eef6ee}
img{max-width:100%}
details{margin-bottom:1rem}
code{font-size:.85em}
"""


def _html(sections: Iterable[Section], submissions: list[Submission], version: str, root: Path) -> str:
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           "<title>dcbench leaderboard</title>", f"<style>{_STYLE}</style></head><body>",
           "<h1>dcbench leaderboard</h1>",
           f"<p>dcbench {html.escape(version)}; {len(submissions)} submission(s). Means ± half-width of the 95% "
           "confidence interval over seeds; Δ: paired difference from the best built-in baseline.</p>"]
    for section in sections:
        name = section.label
        out.append(f"<h2 id=\"{html.escape(section.suite_name)}\">{html.escape(section.suite_name)}</h2>")
        if section.suite:
            out.append(f"<p>{html.escape(section.suite.description)}</p>")
        out.append(f"<p>Ranked by <code>{html.escape(section.metric)}</code> "
                   f"({'higher' if section.higher else 'lower'} is better).</p>")
        out.append(f"<table class=\"ranking\" data-suite=\"{html.escape(section.suite_name)}\"><tr><th>rank</th>"
                   "<th>allocator</th><th>mean over scenarios</th><th>scenarios won</th></tr>")
        for rank, (allocator, mean, wins) in enumerate(section.overall, 1):
            out.append(f"<tr><td>{rank}</td><td><code title=\"{html.escape(allocator)}\">"
                       f"{html.escape(name[allocator])}</code></td>"
                       f"<td>{significant(mean)}</td><td>{wins}</td></tr>")
        out.append("</table>")
        out.append(f"<img src=\"{html.escape(section.plot.relative_to(root).as_posix())}\" "
                   f"alt=\"{html.escape(section.suite_name)}\">")
        for scenario in section.scenarios:
            out.append(f"<details><summary>{html.escape(section.suite_name)} / {html.escape(scenario)}</summary>")
            out.append("<table class=\"scenario\"><tr><th>rank</th><th>allocator</th>"
                       f"<th>{html.escape(section.metric)}</th><th>Δ vs best baseline</th>"
                       + "".join(f"<th>{html.escape(m)}</th>" for m in section.metrics) + "</tr>")
            for rank, entry in enumerate(section.per_scenario[scenario], 1):
                out.append(f"<tr><td>{rank}</td><td><code>{html.escape(name[entry.allocator])}</code></td>"
                           f"<td>{table_ci(*entry.primary[:2])}</td><td>{_delta(entry)}</td>"
                           + "".join(f"<td>{table_ci(*entry.metrics[m][:2])}</td>" for m in section.metrics)
                           + "</tr>")
            out.append("</table></details>")
    out.append("<h2>Submissions</h2><ul>")
    for submission in submissions:
        out.append(f"<li><code>{html.escape(submission.name)}</code>: {html.escape(submission.suite)}, "
                   f"{len(submission.rows)} runs</li>")
    out.append("</ul>")
    # Lets a headless browser (and a person's console) confirm that every plot loaded.
    out.append("<script>window.addEventListener('load',()=>{document.body.dataset.imagesLoaded="
               "[...document.images].every(i=>i.complete&&i.naturalWidth>0)});</script>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
