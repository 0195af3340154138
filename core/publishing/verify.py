"""Submitted runs made again and compared bit for bit: `dcbench leaderboard verify` and a submission's replay."""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping, Sequence

from dcbench.errors import DcbenchError, ResultsError
from dcbench.publishing.submissions import SPECS, spec_problem
from dcbench.running.runner import ResolvedRun, Runner, metrics_of, run_plan
from dcbench.running.summary import SWEEP_COLUMNS, same_value
from dcbench.running.workers import PlannedRun, RunOutput, network_digest, run_apart

_MISSING = object()


def differing_columns(row: Mapping[str, Any], run_id: str, summary: Mapping[str, Any]) -> list[str]:
    """The summary columns of a submitted ``row`` that its run made again gave otherwise (``run_id`` first, with the
    `changed_plugins`, where its identity changed)."""
    if run_id != row["run_id"]:
        return ["run_id", *changed_plugins(row.get("allocator_fingerprint") or "",
                                           summary.get("allocator_fingerprint") or "")]
    differ = []
    for column, given in row.items():
        if column in SWEEP_COLUMNS:
            continue
        value = summary.get(column, _MISSING)
        if given is None and value is _MISSING:  # an empty cell: a metric installed after this run was made
            continue
        if not same_value(value, given):
            differ.append(column if value is not _MISSING else f"{column} (not made here)")
    return differ


PLUGIN_PART = "plugin "  # how a run's fingerprint names a third-party plugin's identity (`run_fingerprint`)


def changed_plugins(submitted: str, installed: str) -> list[str]:
    """"DIST: submitted IDENTITY, installed IDENTITY" of each third-party plugin whose identity differs between the
    fingerprints of a submitted run and the same run made here."""
    def identities(fingerprint: str) -> dict[str, str]:
        parts = [part.removeprefix(PLUGIN_PART) for part in fingerprint.split("; ") if part.startswith(PLUGIN_PART)]
        return {part.split(" ")[0]: part for part in parts}

    before, now = identities(submitted), identities(installed)
    return [f"{name}: submitted {before.get(name, 'none')}, installed {now.get(name, 'none')}"
            for name in sorted({*before, *now}) if before.get(name) != now.get(name)]


def planned_rerun(row: Mapping[str, Any], runner: Runner, plans: dict[tuple[Any, ...], ResolvedRun] | None = None
                  ) -> PlannedRun:
    """A submitted run as a run to make again, resolved once for all rows of its specs (``plans``)."""
    for kind in SPECS:
        problem = spec_problem(kind, row[kind])
        if problem is not None:
            raise ResultsError(f"{problem}; only checkpoints that ship with an installed plugin are loaded")
    specs = (row["allocator"], row["topology"], row["workload"], int(row["requests"]),
             metrics_of(row.get("allocator_fingerprint") or ""))
    plans = {} if plans is None else plans
    if specs not in plans:
        plans[specs] = runner.resolve(*specs)
    return PlannedRun(row["scenario"], *specs[:4], int(row["seed"]), row["run_id"], specs[4],
                      network_digest(plans[specs].network), plans[specs])


def rerun_rows(rows: Sequence[Mapping[str, Any]], runner: Runner, workers: int,
               on_result: Callable[[int, list[str] | DcbenchError], None], fresh: bool = False,
               environ: Mapping[str, str] | None = None) -> None:
    """Make the submitted ``rows`` again in workers, calling ``on_result`` with each row's index and its
    `differing_columns` or its run's error."""
    planned, index_of, plans = [], {}, {}
    for i, row in enumerate(rows):
        try:
            run = planned_rerun(row, runner, plans)
        except DcbenchError as exc:  # (a stored policy not on this machine, say)
            on_result(i, exc)
            continue
        planned.append(run)
        index_of[id(run)] = i

    def compare(run: PlannedRun, output: RunOutput) -> None:
        i = index_of[id(run)]
        on_result(i, differing_columns(rows[i], output.run_id, output.summary))

    def failed(run: PlannedRun, exc: DcbenchError) -> None:
        on_result(index_of[id(run)], exc)

    run_apart(planned, workers, compare, tables=False, fresh=fresh, environ=environ, on_error=failed)


def one_per_cell(cells: Sequence[Hashable], rng: Any) -> list[int]:
    """One index drawn from ``rng`` for each distinct cell of ``cells``, in the order the cells first come."""
    indices: dict[Hashable, list[int]] = {}
    for i, cell in enumerate(cells):
        indices.setdefault(cell, []).append(i)
    return [members[int(rng.integers(len(members)))] for members in indices.values()]


def rerun(row: Mapping[str, Any], runner: Runner) -> list[str]:
    """Run a submitted run again, in this process; the summary columns that came out otherwise."""
    run = planned_rerun(row, runner)
    again = run_plan(run.plan, run.seed)
    return differing_columns(row, again.run_id, again.summary)


def sample_runs(submissions: list[Any], count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` (submission name, row) pairs drawn without replacement, one of every allocator of every submission
    first (each entry's verified mark rests on it)."""
    import numpy as np

    pairs = [(submission.name, row) for submission in submissions for row in submission.rows]
    if count >= len(pairs):
        return pairs
    rng = np.random.default_rng(seed)
    firsts = one_per_cell([(name, row["allocator"]) for name, row in pairs], rng)
    others = np.setdiff1d(np.arange(len(pairs)), firsts)
    rest = rng.choice(others, size=max(0, count - len(firsts)), replace=False).tolist()
    return [pairs[i] for i in sorted(firsts + rest)]
