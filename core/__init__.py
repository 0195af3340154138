"""dcbench: a benchmark harness for network-aware resource allocation.

This module is the public API that plugins use; everything else is internal.
"""

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
    PluginError,
    ResultsError,
    SpecError,
    UnknownPluginError,
    describe,
)
from dcbench.harness.figures import pyplot, save_figure
from dcbench.harness.files import write_all_atomic, write_atomic, write_text_atomic
from dcbench.harness.locks import folder_lock, sole_writer
from dcbench.harness.paths import check_writable
from dcbench.harness.runner import ResolvedRun, Runner, RunResult
from dcbench.harness.stats import format_ci, mean_ci
from dcbench.harness.tables import curve_columns, write_table_atomic
from dcbench.hookspecs import hookimpl
from dcbench.model.allocation import Allocation, Reject, Route, State, Swap, check_allocation, required_pairs
from dcbench.model.network import Circuits, Network, PathCatalogue, Topology
from dcbench.model.requests import CONNECTIVITY_RULES, PacketModel, Request, RequestSequence, Workload
from dcbench.model.suite import Scenario, Suite
from dcbench.registry import Column, blamed_on, get_registry
from dcbench.spec import MAX_TRAINING_STEPS, Param, Range, Spec, config_options

__all__ = [
    "__version__", "Allocation", "Allocator", "AllocatorError", "CONNECTIVITY_RULES", "Circuits", "Column",
    "DcbenchError",
    "IncompatibleError", "JobAllocator", "JobBuilder", "MAX_TRAINING_STEPS", "Network", "Param", "PathCatalogue",
    "PacketModel", "PluginError", "PoolAllocator", "PoolAndJobAllocator", "PoolBuilder", "RECONFIGURE_PARAM", "Range",
    "Reject", "Request", "RequestSequence", "ResolvedRun", "ResultsError", "Route", "RunResult", "RunTables", "Runner",
    "SPREAD_LEVELS", "Scenario", "Spec", "SpecError", "State", "Suite", "Swap", "Topology", "UnknownPluginError",
    "WEIGHTINGS", "WeightedRouter", "Workload", "blamed_on", "check_allocation", "check_writable", "config_options",
    "curve_columns", "describe", "folder_lock", "format_ci", "get_registry", "hookimpl", "mean_ci", "pyplot",
    "required_pairs", "save_figure", "simulate", "sole_writer", "write_all_atomic", "write_atomic",
    "write_table_atomic", "write_text_atomic",
]
