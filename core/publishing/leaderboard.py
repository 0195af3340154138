"""The leaderboard: its submissions, checked again by every rebuild, and the ranked pages and plots `build` makes of
them, byte for byte the same for the same submissions.

A submission is a sweep's combined ``summary.parquet`` (`dcbench.publishing.submit`), data only: plain specs, numbers
within their columns' ranges, in folders `submit` named."""

from __future__ import annotations

import functools
import inspect
import math
import os
import shutil
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dcbench.errors import DcbenchError, ResultsError, describe
from dcbench.publishing import pages
from dcbench.publishing.pages import SUBMISSIONS, Entry, Section
from dcbench.publishing.report import labels
from dcbench.publishing.submissions import (
    folder_problem,
    names_problem,
)
from dcbench.publishing.verify import rerun  # noqa: F401 (tests/test_committed_results.py imports it from here)
from dcbench.registry import Column, Registry, get_registry
from dcbench.registry.columns import columns_problem
from dcbench.running.labels import default_specs
from dcbench.running.numbers import counts_problem, values_problem
from dcbench.running.runner import Runner
from dcbench.running.stats import mean_ci
from dcbench.running.summary import (
    SWEEP_COLUMNS,
    ranking_of,
    same_value,
    sweep_summary_problem,
)
from dcbench.storage.files import staging_folder, swapped_in
from dcbench.storage.journal import remove_leftovers, write_together
from dcbench.storage.locks import file_lock, folder_lock, sole_writer
from dcbench.storage.paths import blocking_path, no_folder
from dcbench.storage.records import read_json
from dcbench.storage.tables import UnreadableTable, provenance_of, table_at


@dataclass
class Submission:
    name: str
    suite: str
    allocators: list[str]
    rows: list[dict[str, Any]]
    ranked_by: tuple[str, bool] | None = None  # what its suite ranked by when submitted (None: not recorded)
    columns: tuple[Column, ...] = ()  # the metrics' declarations of its columns, when submitted
    replayed: dict[str, Any] | None = None  # what `submit` ran again (`dcbench.publishing.replay.replay`), if recorded


class RowsProblem(Exception):
    """What is wrong with a submission's rows (a refusal at submit, damage later)."""


def check_contents(table: Any, rows: list[dict[str, Any]], suites: Mapping[str, Any], runner: Runner) -> None:
    """What `submit` and every rebuild check of a submission's summary once it reads as a sweep's
    (`sweep_summary_problem`): its names (plain specs, labels and column names), every number within its column's
    range, where its suite is registered its rows against the suite's (`_check_rows`), and every row's counts against
    each other (`counts_problem`)."""
    suite = provenance_of(table)["suite"]
    problem = names_problem(suite, table.column_names, rows) or values_problem(table)
    if problem is not None:
        raise RowsProblem(problem)
    if suite in suites:  # a suite no longer registered cannot be checked
        _check_rows(suites[suite], rows, runner)
    problem = counts_problem(table)
    if problem is not None:
        raise RowsProblem(problem)


def allocators_of(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(row["allocator"] for row in rows))


def _check_rows(suite: Any, rows: list[dict[str, Any]], runner: Runner) -> None:
    """Check a submission's rows against its registered ``suite``: every run one of its scenarios and seeds (whose run
    ids `summary_runs_problem` checked), each once, a finite primary metric, every scenario and seed for every
    allocator. ``runner`` resolves the scenarios (and keeps their networks for the next submission)."""
    suite_name = suite.name
    expected: dict[tuple[str, int], tuple[str, str, int]] = {}
    for scenario in suite.scenarios:
        # The scenario as a run resolves it, the workload's own default number of requests included.
        resolved = runner.resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
        for seed in scenario.seeds:
            expected[(scenario.label, seed)] = (resolved.topology, resolved.workload, resolved.requests)
    allocators = allocators_of(rows)
    seen: set[tuple[str, str, int]] = set()
    for row in rows:
        key = (row["scenario"], row["seed"])
        if key not in expected:
            raise RowsProblem(f"scenario {row['scenario']!r} seed {row['seed']} is not in suite {suite_name}")
        topology, workload, requests = expected[key]
        if (row["topology"], row["workload"], row["requests"]) != (topology, workload, requests):
            raise RowsProblem(f"run {row['run_id']} does not use the suite's scenario {row['scenario']!r}")
        identity = (row["allocator"], row["scenario"], row["seed"])
        if identity in seen:
            raise RowsProblem(f"run {row['run_id']} appears twice")
        seen.add(identity)
        value = row.get(suite.primary_metric)
        if value is None or not math.isfinite(float(value)):
            raise RowsProblem(f"run {row['run_id']} has no finite {suite.primary_metric}")
    for allocator in allocators:
        for scenario, seed in expected:
            if (allocator, scenario, seed) not in seen:
                raise RowsProblem(f"{allocator} lacks scenario {scenario!r} seed {seed}; "
                                   "submit the whole suite (dcbench sweep resumes a partial one)")


def check_root(root: Path) -> None:
    """Refuse a leaderboard folder that is a file, or lies below one."""
    blocker = blocking_path(root)
    if blocker is not None:
        raise ResultsError(f"cannot use '{root}' as the leaderboard folder: {no_folder(blocker, root)}; "
                           "give a folder with --root")


def leaderboard_lock(root: Path) -> Path:
    """The lock file of the leaderboard folder ``root``: beside it (``.NAME.lock``), not in it, where it would be one
    more thing in a folder that `submit` checks is a leaderboard's or empty."""
    folder = Path(os.path.abspath(root))
    return file_lock(folder) if folder.name else folder_lock(folder)


def holding_the_lock(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the function, given the leaderboard folder as ``root``, runs holding its lock
    (`leaderboard_lock`), so that a second ``command`` (a submit or a rebuild) of the same leaderboard meanwhile is
    refused in one line rather than check and write beside it."""
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def holding_the_lock(*args: Any, **kwargs: Any) -> Any:
            root = inspect.signature(function).bind(*args, **kwargs).arguments["root"]
            check_root(root)  # first: a root below a file has no folder for the lock
            with sole_writer(leaderboard_lock(root), command, root, option="--root"):
                return function(*args, **kwargs)
        return holding_the_lock
    return decorate


def load_submissions(root: Path, registry: Registry | None = None) -> list[Submission]:
    """The submissions under ``root``, each checked as `validate` checked its summary (``registry`` names the suites'
    primary metrics), but for its run folders, which stay with the submitter, and the plugins it uses, which need not
    be installed where the pages are rebuilt."""
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
        allocators = allocators_of(rows)
        try:  # what `submit` refuses, edited in later
            check_contents(table, rows, suites, runner)
        except RowsProblem as exc:
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


RANKING_KEYS = ("ranked_by", "columns")  # what ranks it (`submission_record`)


REPLAY_KEY = "replayed"  # the runs `submit` ran again


def submission_record(submission: Submission) -> dict[str, Any]:
    """What ``submission.json`` says of a submission: what it is, and what ranks it (its suite's primary metric and
    direction, and the metrics' declarations of its columns), so that pages rebuilt where the suite's plugin is not
    installed rank and head it as where it is."""
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
    """What a ``submission.json`` says `submit` replayed, checked: runs of the submission, a version and a date; None
    where it says nothing."""
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
    """The ranking and column declarations a ``submission.json`` records (`submission_record`), checked: None and none
    for one that records none."""
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
    """The first run that two submissions both hold with other numbers, as (run id, the earlier submission, the later
    one, the first column that differs); None if every run submitted twice says the same both times."""
    first: dict[str, tuple[str, dict[str, Any]]] = {}
    for submission in submissions:
        for row in submission.rows:
            name, earlier = first.setdefault(row["run_id"], (submission.name, row))
            column = _conflict(earlier, row) if earlier is not row else None
            if column is not None:
                return row["run_id"], name, submission.name, column
    return None


def disagreeing(root: Path, conflict: tuple[str, str, str, str]) -> ResultsError:
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


def baselines(registry: Registry) -> set[str]:
    """The built-in heuristics: what a learned or third-party allocator is measured against."""
    return {name for name, entry in registry.entries("allocator").items()
            if entry.builtin and not entry.learned}


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


@holding_the_lock("leaderboard")
def build(root: Path, registry: Registry) -> list[Path]:
    """Rebuild ``root/README.md``, ``root/index.html`` and ``root/plots/`` from the submissions, first removing what a
    killed rebuild left of them (`BUILT`): under the lock, no other rebuild can be writing them."""
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
        raise disagreeing(root, conflict)
    by_suite: dict[str, list[Submission]] = {}
    for submission in submissions:
        by_suite.setdefault(submission.suite, []).append(submission)
    # Everything is drawn and rendered before anything is replaced: a failure (matplotlib missing, say) leaves the
    # previous pages and plots whole. Then the plots folder and both pages are replaced together, or none of them.
    plots_dir = root / "plots"
    staging = staging_folder(plots_dir)
    try:
        declared = [*registry.columns()]
        for submission in submissions:  # a metric not installed here heads its columns as where it was
            declared += [c for c in submission.columns if not any(d.name == c.name for d in declared)]
        sections = _sections(by_suite, suites, baseline_names, defaults, declared, staging, plots_dir)
        texts = {"README.md": pages.markdown(sections, submissions, __version__, root),
                 "index.html": pages.html_page(sections, submissions, __version__, root)}
        with swapped_in(staging, plots_dir):
            write_together([(root / name, lambda path, text=text: path.write_text(text, encoding="utf-8", newline=""))
                            for name, text in texts.items()])
    except OSError as exc:
        raise ResultsError(f"cannot replace '{exc.filename}': {exc.strerror}; nothing was replaced; make it "
                           "writable, or give another --root") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # (gone already where it was swapped in)
    return [root / "README.md", root / "index.html", *(section.plot for section in sections)]


# What marks the pages `build` writes as its own (the first lines of each).
OWN_PAGES = {"README.md": "# dcbench leaderboard\n", "index.html": "<!DOCTYPE html>\n<html lang=\"en\"><head>"}


BUILT = ("plots", *OWN_PAGES)  # what `build` replaces, through temporaries named after them


def check_own_folder(root: Path) -> None:
    """Refuse to rebuild in a folder that is not a leaderboard's: it must hold submissions/, its pages must be ones
    `build` wrote, and its plots/ only the PNG files `build` draws (the folder is replaced whole)."""
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
    """One section per suite: its rankings, and its plot, drawn into ``plots_staging`` and named by its place once
    that becomes ``plots_dir``."""
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
    """What ranks a suite no installed plugin registers: what its submissions recorded (the first one's, by name,
    where they differ: the suite changed between them), or acceptance_ratio, higher is better, with a warning."""
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
    """The error for a suite whose ``section`` failed with ``exc``: naming the first of its ``submissions`` whose
    section fails on its own too (drawn into a folder of its own, removed again), or else all of them."""
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
    """The suite ``title``'s ranking ``metric`` per scenario and allocator, its scenarios named as its figures name
    them (`Figures.xlabel`, `Figures.tick_label`); where it declares none (or is not installed), as `dcbench plot`
    draws it: as the figures of its rows' one topology family do, else by their labels. The allocators in the colours
    they declare."""
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
