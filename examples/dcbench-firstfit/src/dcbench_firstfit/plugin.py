"""The plugin module the entry point names: one hook per kind, each
registering what this package adds to dcbench."""

from __future__ import annotations

from dcbench import Column, Param, Scenario, Suite, hookimpl
from dcbench_firstfit.allocator import FirstFit
from dcbench_firstfit.metric import rack_locality
from dcbench_firstfit.workload import CpuHeavy


@hookimpl
def register_allocators(register):
    register(
        "firstfit",
        FirstFit,
        description="First fit: lowest-numbered allowed server, preferring the last pick's rack",
        params=[Param("stay_in_rack", bool, True, "prefer servers in the rack of the previous pick")],
        demands=("pool",),
    )


@hookimpl
def register_workloads(register):
    register(
        "cpuheavy",
        CpuHeavy,
        description="CPU-heavy requests: half to all of max_cpu, at most max_mem memory",
        params=[Param("max_cpu", int, 96, "largest CPU demand", minimum=2),
                Param("max_mem", int, 16, "largest memory demand", minimum=1),
                Param("hold", int, 30, "longest holding time", minimum=1, maximum=100_000)],
    )


@hookimpl
def register_metrics(register):
    register(
        "locality",
        rack_locality,
        description="rack_local_share: accepted requests placed within one rack",
        columns=[Column("rack_local_share", "within one rack", "higher", demands=("pool",), headline=True,
                        description="Share of accepted requests placed within one rack")],
    )


@hookimpl
def register_suites(register):
    # A suite asks for the third-party metrics its runs compute: dcbench's own always run.
    register(Suite(
        "firstfit-small",
        scenarios=(Scenario("tiered:8,1x4", "uniform", requests=64, seeds=(0, 1, 2), name="uniform-8"),
                   Scenario("tiered:8,1x4", "cpuheavy", requests=64, seeds=(0, 1, 2), name="cpuheavy-8"),
                   Scenario("tiered:16,1x8", "cpuheavy", requests=64, seeds=(0, 1, 2), name="cpuheavy-16")),
        description="First fit's home ground: small tiered fabrics, uniform and CPU-heavy requests, seeds 0..2",
        metrics=("locality",),
        primary_metric="acceptance_ratio",
    ))
