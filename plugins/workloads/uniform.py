"""The request process of the tiered-fabric papers.

CPU and memory are independent uniform integers (1..128 by default, up to
eight 16-unit servers' worth); holding times are uniform integers 1..H with
H = 30 per 64 servers; one request arrives per time unit and is offered only
once the data centre's total free CPU and memory cover it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dcbench import CONNECTIVITY_RULES, Network, Param, RequestSequence, hookimpl

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
        cpu = rng.integers(self.min_cpu, self.max_cpu, size=requests, endpoint=True)
        mem = rng.integers(self.min_mem, self.max_mem, size=requests, endpoint=True)
        holding = rng.integers(1, hold, size=requests, endpoint=True)
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
        )


@hookimpl
def register_workloads(register):
    register(
        "uniform",
        UniformWorkload,
        description="Tiered papers' requests: uniform CPU and memory, one arrival per time unit",
        params=PARAMS,
    )
