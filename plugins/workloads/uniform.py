"""The request process of the tiered-fabric papers.

CPU and memory are independent uniform integers (1..128 by default, up to
eight 16-unit servers' worth); holding times are uniform integers 1..H with
H = 30 per 64 servers; one request arrives per time unit and is offered only
once the data centre's total free CPU and memory cover it.

Three options give the reference code's environment (all off by default):
``allowed=free``, any server with free CPU or memory may be chosen, needed
or not (dcbench's rule, ``needed``: a free share of a resource the request
still needs); ``departures=within``, the requests due at a request's offer
time depart once its first server is placed (dcbench's, ``between``: after
the request); ``useless=kept``, a chosen server that gives nothing stays in
the allocation with its paths, their channels held until the request
departs, and counts in the pair rule (dcbench's, ``dropped``: left out with
its paths), the default with ``allowed=free``, whose mask is what chooses
such servers. The suite ``nara2022-published`` runs the papers' twelve
topologies with all three.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from dcbench import CONNECTIVITY_RULES, Network, Param, RequestSequence, Suite, hookimpl

PARAMS = [
    Param("max_cpu", int, 128, "largest CPU demand", minimum=1),
    Param("max_mem", int, 128, "largest memory demand", minimum=1),
    Param("min_cpu", int, 1, "smallest CPU demand", minimum=0),
    Param("min_mem", int, 1, "smallest memory demand", minimum=0),
    Param("hold", int, None, "longest holding time H (default 30 per 64 servers)", minimum=1, maximum=1_000_000),
    Param("wait", bool, True, "offer a request only once total free CPU and memory cover it"),
    # The suites', the leaderboard's and the shipped checkpoints' rule (the reference code's), so that a plain
    # `dcbench run` gives the numbers the docs give; `all` is the papers' text (docs/scenarios/tiered.md).
    Param("pairs", str, "reference", "which of a request's server pairs need a path", choices=CONNECTIVITY_RULES),
    Param("allowed", str, None, "which servers a step may choose: needed (default: with a free share of a "
          "resource still needed) or free (the reference's: any free CPU or memory)", choices=("needed", "free")),
    Param("departures", str, None, "when requests due at an offer depart: between (default: before the "
          "request) or within (the reference's: after its first server)", choices=("between", "within")),
    Param("useless", str, None, "a chosen server that gives nothing: dropped (left out of the allocation with "
          "its paths; the default) or kept (the reference's: its paths held until departure; the default with "
          "allowed=free)", choices=("dropped", "kept")),
]


def default_holding(n_servers: int) -> int:
    """H = 30 for 64 servers, scaled with the server count."""
    return max(1, round(30 * n_servers / 64))


@dataclass(frozen=True)
class UniformWorkload:
    max_cpu: int = 128
    max_mem: int = 128
    min_cpu: int = 1
    min_mem: int = 1
    hold: int | None = None
    wait: bool = True
    pairs: str = "reference"
    allowed: str | None = None
    departures: str | None = None
    useless: str | None = None
    kind: str = "pool"

    def __post_init__(self) -> None:
        if self.min_cpu > self.max_cpu or self.min_mem > self.max_mem:
            raise ValueError("min_cpu/min_mem must not exceed max_cpu/max_mem")
        if self.max_cpu == 0 and self.max_mem == 0:
            raise ValueError("a request must demand something")

    def generate(self, network: Network, requests: int, rng: np.random.Generator) -> RequestSequence:
        missing = {"cpu", "mem"} - set(network.resources)
        if missing:
            raise ValueError("uniform needs servers with cpu and mem; "
                             f"this topology has {', '.join(network.resources)}")
        hold = self.hold or default_holding(network.n_servers)
        # One stream per quantity: the first N requests of a seed are the same whatever the episode's length.
        cpu_rng, mem_rng, holding_rng = rng.spawn(3)
        cpu = cpu_rng.integers(self.min_cpu, self.max_cpu, size=requests, endpoint=True)
        mem = mem_rng.integers(self.min_mem, self.max_mem, size=requests, endpoint=True)
        holding = holding_rng.integers(1, hold, size=requests, endpoint=True)
        demand = np.zeros((requests, len(network.resources)))
        demand[:, network.resources.index("cpu")] = cpu
        demand[:, network.resources.index("mem")] = mem
        empty = demand.sum(axis=1) == 0
        demand[empty, network.resources.index("cpu")] = 1  # min 0 on both: never offer an empty request
        return RequestSequence(
            kind="pool",
            gaps=np.ones(requests),
            holding=holding.astype(np.float64),
            demand=demand,
            connectivity=self.pairs,
            wait_until_fits=self.wait,
            time_step=1.0,
            allowed_servers=self.allowed or "needed",
            departures_within=self.departures == "within",
            keep_useless=(self.useless or ("kept" if self.allowed == "free" else "dropped")) == "kept",
        )


@hookimpl
def register_workloads(register):
    register(
        "uniform",
        UniformWorkload,
        description="Tiered papers' requests: uniform CPU and memory, one arrival per time unit",
        params=PARAMS,
    )


@hookimpl
def register_suites(register):
    from dcbench.plugins.topologies.tiered import nara2022_scenarios

    register(Suite(
        name="nara2022-published",
        reference="tetris:published=yes",
        floor="random",
        scenarios=tuple(dataclasses.replace(scenario, workload=PUBLISHED_ENVIRONMENT)
                        for scenario in nara2022_scenarios()),
        description="nara2022 in the reference code's environment: any server with free CPU or memory "
        "may be chosen, and requests due at an offer depart after its first server "
        "(run the baselines as published with published=yes)",
        primary_metric="acceptance_ratio",
        figures="dcbench.plugins.topologies.tiered_figures:FIGURES",
    ))


PUBLISHED_ENVIRONMENT = "uniform:pairs=reference,allowed=free,departures=within"
