"""CPU-heavy requests: much CPU, little memory, as a compute-bound batch
workload asks for; one arrival per time unit, offered once they fit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dcbench import Network, RequestSequence


@dataclass(frozen=True)
class CpuHeavy:
    max_cpu: int = 96
    max_mem: int = 16
    hold: int = 30
    kind: str = "pool"  # the demand kind it makes: servers from a pool (not the optical family's jobs)

    def generate(self, network: Network, requests: int, rng: np.random.Generator) -> RequestSequence:
        if not {"cpu", "mem"} <= set(network.resources):
            raise ValueError(f"cpuheavy needs servers with cpu and mem; this topology has {network.resources}")
        # A stream per quantity, so that the first N requests of a seed are the same whatever `requests` is.
        cpu_rng, mem_rng, holding_rng = rng.spawn(3)
        demand = np.zeros((requests, len(network.resources)))
        demand[:, network.resources.index("cpu")] = cpu_rng.integers(self.max_cpu // 2, self.max_cpu, requests,
                                                                     endpoint=True)
        demand[:, network.resources.index("mem")] = mem_rng.integers(1, self.max_mem, requests, endpoint=True)
        return RequestSequence(
            kind="pool",
            gaps=np.ones(requests),
            holding=holding_rng.integers(1, self.hold, requests, endpoint=True).astype(np.float64),
            demand=demand,
            connectivity="reference",  # the suites' rule: each server to the request's first one
            wait_until_fits=True,
        )
