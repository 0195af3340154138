"""dcbench: a benchmark harness for network-aware resource allocation. This module is the plugin authors' API;
`dcbench.harness` serves plugin commands and trainers, `dcbench.envs` RL libraries and `dcbench.testing` plugins'
tests. Everything else is internal and may change without notice."""

from __future__ import annotations

from dcbench._version import __version__
from dcbench.engine.jobs import RECONFIGURE_PARAM, JobAllocator, JobBuilder, PoolAndJobAllocator
from dcbench.engine.pool import PoolAllocator, PoolBuilder
from dcbench.engine.routing import WEIGHTINGS, WeightedRouter
from dcbench.engine.simulation import SPREAD_LEVELS, Allocator, RunTables, simulate
from dcbench.errors import (
    AllocatorError,
    DcbenchError,
    IncompatibleError,
    NotInstalledError,
    PluginError,
    ResultsError,
    SpecError,
    UnknownPluginError,
    describe,
)
from dcbench.hookspecs import hookimpl
from dcbench.model.allocation import Allocation, Reject, Route, State, Swap
from dcbench.model.network import MAX_CAPACITY, Circuits, Network, Topology
from dcbench.model.requests import CONNECTIVITY_RULES, PacketModel, Request, RequestSequence, Workload
from dcbench.model.suite import Scenario, Suite
from dcbench.registry.columns import Column
from dcbench.spec import Param, Range, Spec

__all__ = [
    "__version__",
    # plugin hooks and their declarations
    "hookimpl", "Param", "Range", "Spec", "Column", "Scenario", "Suite",
    # what a topology or workload plugin builds
    "Topology", "Network", "Circuits", "Workload", "Request", "RequestSequence", "PacketModel",
    "CONNECTIVITY_RULES", "MAX_CAPACITY",
    # what an allocator returns, and the engine it runs in
    "Allocation", "Reject", "Route", "Swap", "State", "Allocator", "RunTables",
    "SPREAD_LEVELS", "simulate", "PoolBuilder", "PoolAllocator", "JobBuilder", "JobAllocator",
    "PoolAndJobAllocator", "RECONFIGURE_PARAM", "WeightedRouter", "WEIGHTINGS",
    # errors
    "DcbenchError", "SpecError", "UnknownPluginError", "NotInstalledError", "PluginError", "IncompatibleError",
    "AllocatorError", "ResultsError", "describe",
]
