"""What can be registered: the plugin kinds, their hooks, and the built-in plugins.
"""

from __future__ import annotations

KINDS = ("topology", "workload", "allocator", "metric", "suite")


BUILTIN_PLUGINS = (
    "dcbench.plugins.topologies.tiered",
    "dcbench.plugins.topologies.ocs",
    "dcbench.plugins.workloads.uniform",
    "dcbench.plugins.workloads.vmjobs",
    "dcbench.plugins.allocators.random_server",
    "dcbench.plugins.allocators.tetris",
    "dcbench.plugins.allocators.bestfit",
    "dcbench.plugins.allocators.walk",
    "dcbench.plugins.allocators.ccf",
    "dcbench.plugins.allocators.jcb",
    "dcbench.plugins.allocators.gnn_ppo",
    "dcbench.plugins.allocators.a2c_multistep",
    "dcbench.plugins.allocators.policy",
    "dcbench.plugins.metrics.acceptance",
    "dcbench.plugins.metrics.utilisation",
    "dcbench.plugins.metrics.spread",
    "dcbench.plugins.metrics.jobs",
)


PLURALS = {kind: kind + "s" for kind in KINDS} | {"topology": "topologies"}


DEMAND_KINDS = ("pool", "job")


# The keywords beyond name, target, description and params that ``register`` takes, by kind.
REGISTER_KEYWORDS = {"topology": ("figures",),
                     "allocator": ("demands", "learned", "trainer", "training_options", "colour"),
                     "metric": ("columns",)}


BETTER = ("higher", "lower", None)  # a column's better direction: None for one that only describes a run


HOOK_OF_KIND = {
    "topology": "register_topologies",
    "workload": "register_workloads",
    "allocator": "register_allocators",
    "metric": "register_metrics",
    "suite": "register_suites",
}
