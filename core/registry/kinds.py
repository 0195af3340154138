"""What can be registered: the plugin kinds, their hooks, what ``register`` takes for each, the built-in plugins."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

KINDS = ("topology", "workload", "allocator", "metric", "suite")
BUILTIN_PLUGINS = (
    "dcbench.plugins.topologies.tiered", "dcbench.plugins.topologies.ocs",
    "dcbench.plugins.workloads.uniform", "dcbench.plugins.workloads.vmjobs", "dcbench.plugins.workloads.traces",
    "dcbench.plugins.allocators.random_server", "dcbench.plugins.allocators.tetris",
    "dcbench.plugins.allocators.bestfit", "dcbench.plugins.allocators.walk", "dcbench.plugins.allocators.ccf",
    "dcbench.plugins.allocators.jcb", "dcbench.plugins.allocators.gnn_ppo", "dcbench.plugins.allocators.a2c_multistep",
    "dcbench.plugins.allocators.policy",
    "dcbench.plugins.metrics.acceptance", "dcbench.plugins.metrics.utilisation", "dcbench.plugins.metrics.spread",
    "dcbench.plugins.metrics.jobs",
    "dcbench.plugins.bounds",
)
PLURALS = {kind: kind + "s" for kind in KINDS} | {"topology": "topologies"}
DEMAND_KINDS = ("pool", "job")
DEMAND_KINDS_TEXT = " and/or ".join(map(repr, DEMAND_KINDS))
BETTER = ("higher", "lower", None)  # a column's better direction: None for one that only describes a run
HOOK_OF_KIND = {"topology": "register_topologies", "workload": "register_workloads",
                "allocator": "register_allocators", "metric": "register_metrics", "suite": "register_suites"}


# What ``register(name, target, ...)`` takes by keyword, by kind: each returns its keywords, defaults filled in.
def topology(*, description: str = "", params: Sequence[Any] = (), figures: str | None = None) -> dict[str, Any]:
    return locals()


def workload(*, description: str = "", params: Sequence[Any] = ()) -> dict[str, Any]:
    return locals()


def allocator(*, description: str = "", params: Sequence[Any] = (), demands: Sequence[str] = ("pool",),
              learned: bool = False, trainer: Any = None, training_options: str | None = None,
              colour: str | Mapping[str, str] | None = None, authors: Sequence[str] = (), paper: str | None = None,
              code: str | None = None, training_seeds: Sequence[str] = ()) -> dict[str, Any]:
    return locals()


def metric(*, description: str = "", params: Sequence[Any] = (), columns: Sequence[Any] = ()) -> dict[str, Any]:
    return locals()


TUPLE_KEYWORDS = ("params", "demands", "columns", "authors", "training_seeds")  # kept as tuples, given as lists too
REGISTER_KEYWORDS = {"topology": topology, "workload": workload, "allocator": allocator, "metric": metric}
