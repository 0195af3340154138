"""A submission's replay on arrival: one seed of every scenario and allocator made again in fresh processes that load
only its plugins, compared bit for bit."""

from __future__ import annotations

import datetime
from typing import Any, Mapping, Sequence

import numpy as np

from dcbench.errors import DcbenchError, ResultsError
from dcbench.publishing.submissions import SPECS
from dcbench.publishing.verify import one_per_cell, rerun_rows
from dcbench.registry.distributions import DISABLE_VARIABLE, disabled_names
from dcbench.running.runner import Runner, metrics_of
from dcbench.spec import Spec


def replay_rows(rows: Sequence[Mapping[str, Any]], rng: np.random.Generator) -> list[Mapping[str, Any]]:
    """One run of every (scenario, allocator) of a submission, its seed drawn from ``rng``, in the order of the rows."""
    return [rows[i] for i in sorted(one_per_cell([(row["scenario"], row["allocator"]) for row in rows], rng))]


def plugins_used(rows: Sequence[Mapping[str, Any]], suite: str, registry: Any) -> set[str]:
    """The plugins (by name) a submission's runs use: its specs', third-party metrics' and suite's."""
    used = {registry.get("suite", suite).plugin}
    for row in rows:
        for kind in SPECS:
            used.add(registry.get(kind, Spec.parse(row[kind]).name).plugin)
        for metric in metrics_of(row.get("allocator_fingerprint") or ""):
            used.add(registry.get("metric", metric).plugin)
    return used


def only_these_plugins(used: set[str], registry: Any) -> dict[str, str]:
    """The environment that turns off every third-party plugin installed here but those ``used``."""
    unused = [plugin.name for plugin in registry.plugins if not plugin.builtin and plugin.name not in used]
    names = list(dict.fromkeys([*disabled_names(), *unused]))
    return {DISABLE_VARIABLE: ",".join(names)} if names else {}


def replay(rows: Sequence[Mapping[str, Any]], suite: str, registry: Any, workers: int) -> dict[str, Any]:
    """Make one random seed of every (scenario, allocator) of a submission again; the ``submission.json`` record of it,
    or a `ResultsError` naming what differed."""
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
