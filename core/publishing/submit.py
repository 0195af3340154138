"""Submitting a sweep to the leaderboard: `validate` its results folder, replay one seed of every scenario and
allocator, and copy it in under the leaderboard's lock."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from dcbench.errors import ResultsError
from dcbench.model.about import about_problem
from dcbench.publishing.leaderboard import (
    SUBMISSIONS,
    RowsProblem,
    Submission,
    allocators_of,
    check_contents,
    default_entry,
    disagreeing,
    first_conflict,
    holding_the_lock,
    load_submissions,
    submission_record,
)
from dcbench.publishing.report import labels
from dcbench.publishing.submissions import folder_problem, registered_problem, submission_name
from dcbench.registry import Registry
from dcbench.registry.manager import column_clash
from dcbench.running.labels import default_specs
from dcbench.running.runner import Runner, metrics_of
from dcbench.running.summary import is_adhoc_sweep, read_sweep_summary
from dcbench.storage.files import staging_folder
from dcbench.storage.tables import provenance_of, read_table


def _refuse(reason: str) -> ResultsError:
    return ResultsError(f"submission refused: {reason}")


def described(allocators: list[str], about: Mapping[str, Any], registry: Registry) -> dict[str, dict[str, Any]]:
    """Who and what each allocator is: as its plugin registers it, with what ``about`` says of it (keyed by its spec,
    its short name, or its plugin's name) laid over that."""
    label = labels(allocators, default_specs(registry))
    entries = {spec: default_entry(spec, label[spec], registry) for spec in allocators}
    for key, given in about.items():
        named = [spec for spec in allocators if key in (spec, label[spec])] or \
            [spec for spec in allocators if spec.split(":")[0] == key]
        if len(named) != 1:
            which = "none" if not named else "several"
            raise _refuse(f"--about describes {str(key)[:60]!r}, which names {which} of its allocators "
                          f"({', '.join(allocators)}); key each table by an allocator's spec")
        if not isinstance(given, Mapping):
            raise _refuse(f"--about's {key!r} is not a table")
        entry = {**entries[named[0]], **given}
        if given.get("kind", "learned") != "learned":
            entry.pop("training_seeds", None)
        problem = about_problem(entry)
        if problem is not None:
            raise _refuse(f"--about's {key!r}: {problem}")
        entries[named[0]] = entry
    return entries


def validate(results: Path, registry: Registry, about: Mapping[str, Any] | None = None) -> Submission:
    """Check a sweep's results folder and what ``about`` says of its allocators; the accepted submission."""
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
    allocators = allocators_of(rows)
    try:
        check_contents(table, rows, suites, Runner(registry))
        computed = {name for row in rows for name in metrics_of(row.get("allocator_fingerprint") or "")}
        clash = column_clash([metric for name, metric in registry.entries("metric").items()
                              if metric.builtin or name in computed])
        if clash is not None:  # runs of other metrics, each alone: one leaderboard column, two meanings
            raise RowsProblem(clash)
        for allocator in allocators:  # what a rebuild cannot require: its plugins may have been uninstalled since
            problem = registered_problem(allocator, registry)
            if problem is not None:
                raise RowsProblem(problem)
    except RowsProblem as exc:
        raise _refuse(str(exc)) from None
    name = submission_name(suite_name, allocators, [row["run_id"] for row in rows], __version__)
    suite = suites[suite_name]
    declared = tuple(column for column in registry.columns() if column.matches(rows[0]))
    return Submission(name, suite_name, allocators, rows, (suite.primary_metric, suite.higher_is_better), declared,
                      entries=described(allocators, about or {}, registry))


@holding_the_lock("leaderboard submit")
def submit(results: Path, root: Path, registry: Registry, workers: int = 1, about: Mapping[str, Any] | None = None
           ) -> Path:
    """Validate a submission, replay one seed of every scenario and allocator, and copy it in atomically."""
    from dcbench.publishing.replay import replay

    if root.is_dir() and not (root / SUBMISSIONS).is_dir() and any(root.iterdir()):
        raise ResultsError(f"'{root}' holds other things and no {SUBMISSIONS}/ folder, so it is no leaderboard; "
                           "give a leaderboard folder, or a new or empty one, with --root")
    submission = validate(results, registry, about)
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
                raise disagreeing(root, conflict)
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
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # (gone already where it was renamed into place)
    return folder


MAX_ABOUT_BYTES = 1_000_000


def read_about(path: Path) -> dict[str, Any]:
    """An ``--about`` file: TOML, a table per allocator."""
    import tomllib

    fix = "give a TOML file with a table per allocator (docs/leaderboard.md)"
    try:
        if path.stat().st_size > MAX_ABOUT_BYTES:
            raise ResultsError(f"--about file '{path}' is over {MAX_ABOUT_BYTES:,} bytes; {fix}")
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read --about file '{path}': {getattr(exc, 'strerror', None) or exc}; {fix}"
                           ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ResultsError(f"--about file '{path}' is no TOML ({exc}); {fix}") from None
