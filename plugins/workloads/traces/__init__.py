"""Trace-driven workloads: the ``trace`` workload replays a canonical trace file (`replay`), ``dcbench data
convert`` makes one from a public cluster trace (`command`), and the suite ``openb2023`` replays Alibaba's openb
pod list on the tiered and optical fabrics. See docs/workloads.md."""

from __future__ import annotations

from dcbench import Scenario, Suite, hookimpl
from dcbench.plugins.workloads.traces.replay import PARAMS, TraceWorkload


@hookimpl
def register_workloads(register):
    register(
        "trace",
        TraceWorkload,
        description="Requests replayed from a trace file (CSV or Parquet, docs/workloads.md), scaled onto the "
        "topology; pools, or jobs of VMs and flows for the optical fabric",
        params=PARAMS,
    )


@hookimpl
def register_commands(cli):
    from dcbench.plugins.workloads.traces.command import data

    cli.add_command(data)


OPENB_FILE = "traces/openb2023-default.csv"
OPENB_SHA256 = "0628601204b39baac00601a1eb264632514d71a36aa84a599b6b130dc9145834"
SEEDS = (0, 1, 2, 3, 4)
WARMUP, MEASURED = 500, 2_000


def openb_scenarios(topology: str, options: str, loads: tuple[int, ...], prefix: str) -> tuple[Scenario, ...]:
    """The openb pod list (converted by `dcbench data convert alibaba-gpu-2023`) at each load: windows of 500
    warm-up then 2,000 measured requests, each seed's from its own row."""
    trace = f"trace:file={OPENB_FILE},sha256={OPENB_SHA256},{options},warmup={WARMUP}"
    return tuple(Scenario(topology=topology, workload=f"{trace},load={load}", requests=WARMUP + MEASURED,
                          seeds=SEEDS, name=f"{prefix}-load{load}") for load in loads)


@hookimpl
def register_suites(register):
    register(Suite(
        name="openb2023",
        reference="tetris",
        floor="random",  # scores 0 on the score normalised to the bound (leaderboard/bounds/openb2023)
        scenarios=openb_scenarios("tiered:32,1x4", "mem_unit=4", (8, 16), "tiered"),
        description="Alibaba's openb GPU-cluster pods (cluster-trace-gpu-v2023, docs/workloads.md) on the tiered "
        "fabric, 64 servers: a core and 4 GiB per unit, arrivals 8 and 16 times as fast, seeds 0..4",
        primary_metric="acceptance_ratio",
    ))
    register(Suite(
        name="openb2023-ocs",
        reference="ccf",
        scenarios=openb_scenarios("ocs:16,servers=4", "kind=job,vm_cpu=4,gbps=10", (32, 64), "ocs"),
        description="The openb pods as jobs on the optical fabric, 16 ToRs × 4 servers: a VM per 4 cores, "
        "10 Gbps rings, arrivals 32 and 64 times as fast, seeds 0..4",
        primary_metric="blocking_probability",
        higher_is_better=False,
    ))
