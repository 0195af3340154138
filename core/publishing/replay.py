"""Submitted runs made again and compared, bit for bit: a submission's
replay on arrival (`replay`, one seed of every scenario and allocator, in
fresh processes that load only the plugins it uses) and `dcbench
leaderboard verify` (`rerun_rows`). Each allocator's runs run in worker
processes of their own (`dcbench.running.workers`).
"""

from __future__ import annotations

import datetime
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from dcbench.errors import DcbenchError, ResultsError
from dcbench.publishing.submissions import SPECS, spec_problem
from dcbench.registry.distributions import DISABLE_VARIABLE, disabled_names
from dcbench.running.runner import Runner, metrics_of
from dcbench.running.summary import SWEEP_COLUMNS, same_value
from dcbench.running.workers import PlannedRun, RunOutput, network_digest, run_apart
from dcbench.spec import Spec

_MISSING = object()


def differing_columns(row: Mapping[str, Any], run_id: str, summary: Mapping[str, Any]) -> list[str]:
    """The summary columns of a submitted ``row`` that a run made again
    (``run_id``, ``summary``) gave otherwise: ``run_id`` alone where the
    run's identity itself changed. A column only this installation adds (a
    metric plugin the submitter did not have) says nothing of the row."""
    if run_id != row["run_id"]:
        return ["run_id"]
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


def planned_rerun(row: Mapping[str, Any], runner: Runner) -> PlannedRun:
    """A submitted run as a run to make again, its network's digest taken
    here. A run whose specs a submission may not hold is refused before
    anything is built: an allocator that names a ``checkpoint=`` file, above
    all, as only the checkpoints that ship with an installed plugin are loaded."""
    for kind in SPECS:
        problem = spec_problem(kind, row[kind])
        if problem is not None:
            raise ResultsError(f"{problem}; only checkpoints that ship with an installed plugin are loaded")
    metrics = metrics_of(row.get("allocator_fingerprint") or "")
    plan = runner.resolve(row["allocator"], row["topology"], row["workload"], int(row["requests"]), metrics)
    return PlannedRun(row["scenario"], row["allocator"], row["topology"], row["workload"], int(row["requests"]),
                      int(row["seed"]), row["run_id"], metrics, network_digest(plan.network))


def rerun_rows(rows: Sequence[Mapping[str, Any]], runner: Runner, workers: int,
               on_result: Callable[[int, list[str] | DcbenchError], None], fresh: bool = False,
               environ: Mapping[str, str] | None = None) -> None:
    """Make the submitted ``rows`` again in worker processes (`run_apart`),
    each allocator's apart, and call ``on_result`` with each row's index and
    the columns that came out otherwise (`differing_columns`), or the error
    its run raised, as each comes.

    Raises:
        ResultsError: A worker that died or changed its network.
    """
    planned, index_of = [], {}
    for i, row in enumerate(rows):
        try:
            run = planned_rerun(row, runner)
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


def replay_rows(rows: Sequence[Mapping[str, Any]], rng: np.random.Generator) -> list[Mapping[str, Any]]:
    """One run of every (scenario, allocator) of a submission, its seed drawn
    from ``rng``, in the order of the rows."""
    cells: dict[tuple[str, str], list[int]] = {}
    for i, row in enumerate(rows):
        cells.setdefault((row["scenario"], row["allocator"]), []).append(i)
    chosen = sorted(int(indices[rng.integers(len(indices))]) for indices in cells.values())
    return [rows[i] for i in chosen]


def plugins_used(rows: Sequence[Mapping[str, Any]], suite: str, registry: Any) -> set[str]:
    """The plugins (by name) whose entries a submission's runs use: its
    specs', its third-party metrics' and its suite's."""
    used = {registry.get("suite", suite).plugin}
    for row in rows:
        for kind in SPECS:
            used.add(registry.get(kind, Spec.parse(row[kind]).name).plugin)
        for metric in metrics_of(row.get("allocator_fingerprint") or ""):
            used.add(registry.get("metric", metric).plugin)
    return used


def only_these_plugins(used: set[str], registry: Any) -> dict[str, str]:
    """The environment that turns off every third-party plugin installed
    here but those ``used`` (`DCBENCH_DISABLE_PLUGINS`, with what the user
    turned off already)."""
    unused = [plugin.name for plugin in registry.plugins if not plugin.builtin and plugin.name not in used]
    names = list(dict.fromkeys([*disabled_names(), *unused]))
    return {DISABLE_VARIABLE: ",".join(names)} if names else {}


def replay(rows: Sequence[Mapping[str, Any]], suite: str, registry: Any, workers: int) -> dict[str, Any]:
    """Make one seed of every (scenario, allocator) of a submission again, in
    fresh worker processes that load only the plugins it uses, each
    allocator's apart; what was replayed, for its ``submission.json``.

    The seeds are drawn anew each time (no one can know beforehand which
    runs will be replayed), so every run must be as its sweep made it.

    Returns:
        ``{"runs": [run ids], "dcbench_version": ..., "date": "YYYY-MM-DD"}``.

    Raises:
        ResultsError: A run came out otherwise (naming it and its columns),
            or could not be made again.
    """
    from dcbench._version import __version__

    chosen = replay_rows(rows, np.random.default_rng())
    environ = only_these_plugins(plugins_used(rows, suite, registry), registry)
    problems: dict[int, str] = {}

    def note(i: int, result: list[str] | DcbenchError) -> None:
        if isinstance(result, DcbenchError):
            problems[i] = f"could not be made again here ({result})"
        elif result:
            problems[i] = "came out otherwise: " + (
                "another run id" if result == ["run_id"] else "other " + ", ".join(result))

    rerun_rows(chosen, Runner(registry), workers, note, fresh=True, environ=environ)
    if problems:
        i = min(problems)
        row = chosen[i]
        raise ResultsError(f"submission refused: run {row['run_id']} ({row['scenario']} {row['allocator']} seed "
                           f"{row['seed']}), replayed, {problems[i]}; a submission holds the runs its sweep made, "
                           "unchanged")
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    return {"runs": [row["run_id"] for row in chosen], "dcbench_version": __version__, "date": today}
