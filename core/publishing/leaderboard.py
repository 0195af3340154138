"""The leaderboard: its submissions, checked again by every rebuild, and the ranked pages and plots `build` makes of
them, byte for byte the same for the same submissions."""

from __future__ import annotations

import datetime
import functools
import inspect
import itertools
import json
import math
import os
import shutil
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dcbench.errors import DcbenchError, ResultsError, describe
from dcbench.model.about import MAX_TEXT, about_problem, training_mark
from dcbench.publishing import pages
from dcbench.publishing.bounds import bound_summary
from dcbench.publishing.figures import allocator_colours, metric_panels, scenario_label, suite_figures, topology_figures
from dcbench.publishing.pages import SUBMISSIONS, Section
from dcbench.publishing.ranking import rank_suite
from dcbench.publishing.report import labels
from dcbench.publishing.submissions import folder_problem, names_problem
from dcbench.publishing.verify import rerun  # noqa: F401 (tests/test_committed_results.py imports it from here)
from dcbench.registry import Column, Registry, get_registry
from dcbench.registry.columns import columns_problem, demand_kind
from dcbench.running.labels import default_specs
from dcbench.running.numbers import counts_problem, values_problem
from dcbench.running.runner import Runner
from dcbench.running.stats import mean_ci
from dcbench.running.summary import SWEEP_COLUMNS, ranking_of, same_value, sweep_summary_problem
from dcbench.running.sweep import resolved_allocator
from dcbench.spec import Spec
from dcbench.storage.files import staging_folder, swapped_in, write_atomic
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
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)  # who and what each allocator is (`model.about`)
    verified: dict[str, Any] | None = None  # what the latest `dcbench leaderboard verify` ran again (`VERIFIED`)


class RowsProblem(Exception):
    """What is wrong with a submission's rows (a refusal at submit, damage later)."""


def check_contents(table: Any, rows: list[dict[str, Any]], suites: Mapping[str, Any], runner: Runner) -> None:
    """What `submit` and every rebuild check of a sweep's summary: names, numbers, rows against its suite's, counts."""
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
    """Check that the rows are the whole registered ``suite``, each run once, with a finite primary metric."""
    expected: dict[tuple[str, int], tuple[str, str, int]] = {}
    for scenario in suite.scenarios:
        # The scenario as a run resolves it, the workload's own default number of requests included.
        resolved = runner.resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
        for seed in scenario.seeds:
            expected[(scenario.label, seed)] = (resolved.topology, resolved.workload, resolved.requests)
    seen: set[tuple[str, str, int]] = set()
    for row in rows:
        key = (row["scenario"], row["seed"])
        if key not in expected:
            raise RowsProblem(f"scenario {row['scenario']!r} seed {row['seed']} is not in suite {suite.name}")
        if (row["topology"], row["workload"], row["requests"]) != expected[key]:
            raise RowsProblem(f"run {row['run_id']} does not use the suite's scenario {row['scenario']!r}")
        identity = (row["allocator"], row["scenario"], row["seed"])
        if identity in seen:
            raise RowsProblem(f"run {row['run_id']} appears twice")
        seen.add(identity)
        value = row.get(suite.primary_metric)
        if value is None or not math.isfinite(float(value)):
            raise RowsProblem(f"run {row['run_id']} has no finite {suite.primary_metric}")
    for allocator in allocators_of(rows):
        for scenario, seed in expected:
            if (allocator, scenario, seed) not in seen:
                raise RowsProblem(f"{allocator} lacks scenario {scenario!r} seed {seed}; "
                                   "submit the whole suite (dcbench sweep resumes a partial one)")


def check_root(root: Path) -> None:
    blocker = blocking_path(root)
    if blocker is not None:
        raise ResultsError(f"cannot use '{root}' as the leaderboard folder: {no_folder(blocker, root)}; "
                           "give a folder with --root")


def holding_the_lock(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the function runs holding the lock of its ``root``; a second ``command`` meanwhile is refused."""
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def holding_the_lock(*args: Any, **kwargs: Any) -> Any:
            root = inspect.signature(function).bind(*args, **kwargs).arguments["root"]
            check_root(root)  # first: a root below a file has no folder for the lock
            folder = Path(os.path.abspath(root))  # the lock lies beside it, not in it (`submit` wants no strays)
            lock = file_lock(folder) if folder.name else folder_lock(folder)
            with sole_writer(lock, command, root, option="--root"):
                return function(*args, **kwargs)
        return holding_the_lock
    return decorate


def load_submissions(root: Path, registry: Registry | None = None) -> list[Submission]:
    """The submissions under ``root``, each checked as `validate` checked it but for its run folders and plugins."""
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
        record = _json_of(path, "submission.json")
        described = {key: record.get(key) for key in IDENTITY_KEYS} if isinstance(record, dict) else record
        if described != {"name": path.name, "suite": suite, "allocators": allocators, "runs": len(rows)}:
            raise _damaged(path, "its submission.json does not describe its summary")
        ranked_by, columns = _ranking_of_record(record, rows, path)
        replayed = record.get(REPLAY_KEY)
        if replayed is not None and not _stamped_runs(replayed, ("runs",), rows):
            raise _damaged(path, f"its submission.json's {REPLAY_KEY} is not {{runs: run ids of its summary, "
                                 "dcbench_version: a version, date: YYYY-MM-DD}")
        submissions.append(Submission(path.name, suite, allocators, rows, ranked_by, columns, replayed,
                                      _entries_of_record(record, allocators, path), _verified_of(path, rows)))
    return submissions


IDENTITY_KEYS = ("name", "suite", "allocators", "runs")  # what every submission.json says
RANKING_KEYS = ("ranked_by", "columns")  # what ranks it (`submission_record`)
REPLAY_KEY = "replayed"  # the runs `submit` ran again
ENTRIES_KEY = "entries"  # who and what each allocator is, by spec
VERIFIED = "verified.json"  # beside submission.json: what the latest `verify` ran again of the submission


def submission_record(submission: Submission) -> dict[str, Any]:
    """What ``submission.json`` says of a submission: what it is, and what ranks it where its suite is not installed."""
    record: dict[str, Any] = {"name": submission.name, "suite": submission.suite,
                              "allocators": submission.allocators, "runs": len(submission.rows)}
    if submission.ranked_by is not None:
        metric, higher = submission.ranked_by
        record["ranked_by"] = {"metric": metric, "higher_is_better": higher}
        record["columns"] = [asdict(column) for column in submission.columns]
    if submission.replayed is not None:
        record[REPLAY_KEY] = submission.replayed
    if submission.entries:
        record[ENTRIES_KEY] = submission.entries
    return record


def _entries_of_record(record: dict[str, Any], allocators: list[str], path: Path) -> dict[str, dict[str, Any]]:
    entries = record.get(ENTRIES_KEY, {})
    if not isinstance(entries, dict) or not set(entries) <= set(allocators):
        raise _damaged(path, f"its submission.json's {ENTRIES_KEY} are not a table by allocator of its summary")
    for spec, about in entries.items():
        problem = about_problem(about)
        if problem is not None:
            raise _damaged(path, f"its submission.json's entry {spec!r}: {problem}")
    return entries


def _verified_of(path: Path, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not (path / VERIFIED).exists():
        return None
    verified = _json_of(path, VERIFIED)
    if not _stamped_runs(verified, ("same", "otherwise"), rows):
        raise _damaged(path, f"its {VERIFIED} is not {{same: run ids, otherwise: run ids, dcbench_version: a "
                             "version, date: YYYY-MM-DD}")
    return verified


@holding_the_lock("leaderboard verify")
def record_verified(root: Path, outcomes: Sequence[tuple[str, str, bool]]) -> None:
    """Write `VERIFIED` of each submission of the ``(submission, run id, the same bit for bit)`` `verify` made."""
    from dcbench._version import __version__

    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    by_submission: dict[str, dict[str, list[str]]] = {}
    for name, run_id, same in outcomes:
        record = by_submission.setdefault(name, {"same": [], "otherwise": []})
        record["same" if same else "otherwise"].append(run_id)
    for name, record in sorted(by_submission.items()):
        text = json.dumps({**record, "dcbench_version": __version__, "date": today}, indent=2, sort_keys=True) + "\n"
        write_atomic(root / SUBMISSIONS / name / VERIFIED, lambda path, text=text: path.write_text(text))


def _stamped_runs(record: Any, lists: tuple[str, ...], rows: list[dict[str, Any]]) -> bool:
    """Whether ``record`` holds just ``lists`` of run ids of ``rows`` (not all empty), a version and a date."""
    run_ids = {row["run_id"] for row in rows}
    if (not isinstance(record, dict) or set(record) != {*lists, "dcbench_version", "date"}
            or not all(isinstance(record[k], list) and all(isinstance(r, str) and r in run_ids for r in record[k])
                       for k in lists) or not any(record[k] for k in lists)):
        return False
    version, date = record["dcbench_version"], record["date"]
    if not (isinstance(version, str) and len(version) <= 40 and isinstance(date, str)):
        return False
    try:
        return datetime.date.fromisoformat(date).isoformat() == date
    except ValueError:
        return False


def _ranking_of_record(record: dict[str, Any], rows: list[dict[str, Any]], path: Path
                       ) -> tuple[tuple[str, bool] | None, tuple[Column, ...]]:
    unknown_keys = sorted(set(record) - set(IDENTITY_KEYS) - set(RANKING_KEYS) - {REPLAY_KEY, ENTRIES_KEY})
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
    """The first run two submissions hold with other numbers: (run id, earlier, later, first column that differs)."""
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
    columns = sorted((set(first) | set(second)) - SWEEP_COLUMNS)
    return next((c for c in columns if not same_value(first.get(c, _MISSING), second.get(c, _MISSING))), None)


def _json_of(path: Path, name: str) -> Any:
    try:
        return read_json(path / name)
    except (OSError, ValueError) as exc:
        raise _damaged(path, f"its {name} does not read: {describe(exc)}") from None


def _damaged(submission: Path, problem: str) -> ResultsError:
    return ResultsError(f"submission '{submission}' is damaged ({problem}); remove that folder and submit "
                        "the sweep's results folder again with `dcbench leaderboard submit`")


def default_entry(spec: str, label: str, registry: Registry) -> dict[str, Any]:
    """What a leaderboard says of an allocator nobody described, from its registration where it is installed."""
    parsed = Spec.parse(spec)
    entry = registry.entries("allocator").get(parsed.name)
    if entry is None:
        return {"name": label, "kind": "heuristic"}
    kind = "learned" if entry.learned else ("paper baseline" if entry.paper else "dcbench baseline") \
        if entry.builtin else "heuristic"
    about: dict[str, Any] = {"name": label, "kind": kind}
    if entry.description:
        about["description"] = entry.description[:MAX_TEXT].strip()
    if entry.authors:
        about["authors"] = list(entry.authors)
    about.update({key: getattr(entry, key) for key in ("paper", "code") if getattr(entry, key)})
    if entry.learned and entry.training_seeds and "checkpoint" not in parsed.kwargs:  # the weights it ships
        about["training_seeds"] = list(entry.training_seeds)
    return about


def _metric_columns(rows: list[dict[str, Any]], primary: str, declared: Sequence[Column]
                    ) -> list[tuple[str, str, str | None, bool]]:
    """The (column, heading, better, headline) a suite's scenario tables show beside ``primary``: the first
    `HEADLINE_COLUMNS` headline ones, then the others (behind a toggle)."""
    kind = demand_kind(rows[0], declared)
    shown = []
    for column, value in rows[0].items():
        if not isinstance(value, float) or column == primary:
            continue
        for declaration in declared:
            matched = declaration.matches([column])
            if matched:
                shown.append((column, matched[0][1], declaration.better, declaration.is_headline(kind)))
                break
    headline = [c for c in shown if c[3]][:HEADLINE_COLUMNS]
    return headline + [(column, heading, better, False) for column, heading, better, _ in shown
                       if (column, heading, better, True) not in headline]


HEADLINE_COLUMNS = 3


@holding_the_lock("leaderboard")
def build(root: Path, registry: Registry) -> list[Path]:
    """Rebuild ``root``'s `BUILT` pages and folders from the submissions, a killed rebuild's leftovers removed."""
    from dcbench._version import __version__

    if not root.is_dir():
        raise ResultsError(f"no leaderboard folder '{root}'; give the folder that holds {SUBMISSIONS}/ with "
                           f"--root, or start one with `dcbench leaderboard --root {root} submit RESULTS`")
    check_own_folder(root)
    remove_leftovers(root, BUILT)
    submissions = load_submissions(root, registry)
    conflict = first_conflict(submissions)
    if conflict is not None:
        raise disagreeing(root, conflict)
    by_suite: dict[str, list[Submission]] = {}
    for submission in submissions:
        by_suite.setdefault(submission.suite, []).append(submission)
    # Everything is drawn and rendered before anything is replaced: a failure (matplotlib missing, say) leaves the
    # previous pages, plots and tables whole. Then both folders and both pages are replaced together, or none.
    plots_dir, tables_dir = root / "plots", root / "tables"
    staging, tables_staging = staging_folder(plots_dir), staging_folder(tables_dir)
    try:
        declared = [*registry.columns()]
        for submission in submissions:  # a metric not installed here heads its columns as where it was
            declared += [c for c in submission.columns if not any(d.name == c.name for d in declared)]
        sections = _sections(by_suite, registry, declared, staging, plots_dir)
        written = [section.plot for section in sections]
        for section in sections:
            written += [tables_dir / path.name for path in pages.write_tables(section, tables_staging)]
        texts = {"README.md": pages.markdown(sections, submissions, __version__, root),
                 "index.html": pages.html_page(sections, submissions, __version__, root)}
        with swapped_in(staging, plots_dir), swapped_in(tables_staging, tables_dir):
            write_together([(root / name, lambda path, text=text: path.write_text(text, encoding="utf-8", newline=""))
                            for name, text in texts.items()])
    except OSError as exc:
        raise ResultsError(f"cannot replace '{exc.filename}': {exc.strerror}; nothing was replaced; make it "
                           "writable, or give another --root") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # (gone already where it was swapped in)
        shutil.rmtree(tables_staging, ignore_errors=True)
    return [root / "README.md", root / "index.html", *written]


# What marks the pages `build` writes as its own (the first lines of each).
OWN_PAGES = {"README.md": "# dcbench leaderboard\n", "index.html": "<!DOCTYPE html>\n<html lang=\"en\"><head>"}
BUILT = ("plots", "tables", *OWN_PAGES)  # what `build` replaces, through temporaries named after them
OWN_FILES = {"plots": (".png",), "tables": (".csv", ".parquet")}  # what its folders hold


def check_own_folder(root: Path) -> None:
    """Refuse to rebuild in a folder that holds anything `build` did not write (it replaces its folders whole)."""
    fix = "give a leaderboard folder of its own with --root"
    if not (root / SUBMISSIONS).is_dir():
        raise ResultsError(f"'{root}' holds no {SUBMISSIONS}/ folder, so it is no leaderboard; {fix}, or start one "
                           f"with `dcbench leaderboard --root NEW_FOLDER submit RESULTS`")
    for name, start in OWN_PAGES.items():
        page = root / name
        if page.exists() and not (page.is_file() and page.read_bytes().startswith(start.encode())):
            raise ResultsError(f"'{page}' was not written by `dcbench leaderboard`, which would replace it; {fix}")
    for name, suffixes in OWN_FILES.items():
        folder = root / name
        if folder.exists():
            foreign = [p for p in folder.iterdir() if not (p.is_file() and p.suffix in suffixes)] \
                if folder.is_dir() else [folder]
            if foreign:
                raise ResultsError(f"'{foreign[0]}' was not written by `dcbench leaderboard`, which rebuilds "
                                   f"'{folder}' whole; move it elsewhere, or {fix}")


def _sections(by_suite: dict[str, list[Submission]], registry: Registry, columns: Sequence[Column],
              plots_staging: Path, plots_dir: Path) -> list[Section]:
    sections = []
    for suite_name in sorted(by_suite):
        section = functools.partial(_section, suite_name, registry=registry, columns=columns, plots_dir=plots_dir)
        try:
            sections.append(section(by_suite[suite_name], plots_staging=plots_staging))
        except DcbenchError:  # matplotlib missing, say: no submission's doing
            raise
        except Exception as exc:
            raise _unrankable(by_suite[suite_name], exc, section, plots_staging, plots_dir.parent) from exc
    return sections


def _section(suite_name: str, submissions: list[Submission], registry: Registry, columns: Sequence[Column],
             plots_staging: Path, plots_dir: Path) -> Section:
    by_run: dict[str, dict[str, Any]] = {}
    for submission in submissions:
        for row in submission.rows:  # the same run submitted twice counts once: its copies agree
            by_run.setdefault(row["run_id"], row)
    rows = sorted(by_run.values(), key=lambda r: (r["scenario"], r["allocator"], r["seed"]))
    suite = registry.entries("suite").get(suite_name)
    metric, higher = ranking_of(suite) if suite is not None else recorded_ranking(suite_name, submissions)
    order = [s.label for s in suite.scenarios] if suite else sorted({r["scenario"] for r in rows})
    scenarios = [s for s in order if any(r["scenario"] == s for r in rows)]
    specs = sorted({r["allocator"] for r in rows})
    values: dict[str, dict[str, dict[int, float]]] = {spec: {} for spec in specs}
    for row in rows:
        values[row["allocator"]].setdefault(row["scenario"], {})[row["seed"]] = row[metric]
    reference = _reference(suite, specs, registry)
    defaults = default_specs(registry)
    label = labels(specs, defaults)
    shown = _metric_columns(rows, metric, columns)
    measured = {}
    for cell, group in itertools.groupby(rows, key=lambda r: (r["scenario"], r["allocator"])):  # (rows are sorted)
        runs = list(group)
        measured[cell] = {column: mean_ci(r[column] for r in runs) for column in [metric, *(c[0] for c in shown)]}
    drawn = _plot(rows, scenarios, metric, plots_staging / f"{suite_name}.png", suite_name, defaults)
    test_seeds = sorted({seed for s in suite.scenarios for seed in s.seeds} if suite else {r["seed"] for r in rows})
    return Section(suite_name, suite.description if suite else "", metric, higher, scenarios,
                   rank_suite(values, scenarios, higher, reference), shown, measured, reference,
                   {spec: _about(spec, label[spec], submissions, registry, test_seeds) for spec in specs},
                   label, plots_dir / drawn.name, len(test_seeds),
                   bound_summary(plots_dir.parent, suite_name, metric, higher, submissions))


def _reference(suite: Any, specs: list[str], registry: Registry) -> str | None:
    if suite is None or suite.reference is None:
        return None
    resolved = resolved_allocator(registry, suite.reference)
    return resolved if resolved in specs else None


def _about(spec: str, label: str, submissions: list[Submission], registry: Registry, test_seeds: list[int]
           ) -> pages.About:
    """Who and what ``spec`` is on the page (as the first submission describing it says), with its marks."""
    holding = [s for s in submissions if spec in s.allocators]
    described = [s.entries[spec] for s in holding if spec in s.entries]
    about = described[0] if described else default_entry(spec, label, registry)
    run_ids = {row["run_id"] for s in holding for row in s.rows if row["allocator"] == spec}
    replayed = [(len(run_ids & set(s.replayed["runs"])), s.replayed) for s in holding if s.replayed]
    verified = [(len(run_ids & set(s.verified["same"])), len(run_ids & set(s.verified["otherwise"])), s.verified)
                for s in holding if s.verified]
    versions = sorted({row["dcbench_version"] for s in holding for row in s.rows if row["allocator"] == spec})
    dates = sorted(s.replayed["date"] for s in holding if s.replayed)
    return pages.About(spec, about, ", ".join(versions), dates[0] if dates else "",
                       [(n, r["dcbench_version"], r["date"]) for n, r in replayed if n],
                       [(same, otherwise, v["dcbench_version"], v["date"]) for same, otherwise, v in verified
                        if same or otherwise],
                       training_mark(about, test_seeds))


def recorded_ranking(suite_name: str, submissions: list[Submission]) -> tuple[str, bool]:
    """What ranks a suite no installed plugin registers: what its first submission recorded, else acceptance_ratio."""
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
    """The error for a suite whose ``section`` failed, naming the first submission that fails on its own too."""
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


def _plot(rows: list[dict[str, Any]], scenarios: list[str], metric: str, path: Path, title: str,
          defaults: Mapping[str, str]) -> Path:
    """The suite ``title``'s ranking ``metric`` per scenario and allocator, its scenarios named by its figures, else
    its topology family's, else by their labels."""
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
