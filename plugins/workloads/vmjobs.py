"""Distributed-ML jobs of the OCS paper: VMs with bandwidth between them.

Jobs arrive as a Poisson process (``rate`` per time unit) and hold their
resources for an exponential time with mean ``load / rate``, so ``load`` is
the offered load in Erlangs (the paper's 54..78). A job has 10..21 VMs, each
of one of four types drawn uniformly (cores, GB memory, GB disk), ordered
from the most to the least demanding, as the paper suggests. The
communication pattern decides which VM pairs exchange traffic, each pair at
a rate uniform in [min_gbps, max_gbps]: ``ring`` (ring all-reduce: VM k
sends to VM k+1, the last to the first) or ``all`` (every pair, from the
earlier VM to the later). The first ``warmup`` jobs are left out of the
metrics. See docs/scenarios/ocs.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dcbench import Network, PacketModel, Param, RequestSequence, hookimpl

# (cores, GB memory, GB disk), from the paper's section 5.
VM_TYPES = np.array([[4, 15, 80], [16, 32, 320], [16, 122, 320], [16, 122, 3200]], dtype=np.float64)
PATTERNS = ("ring", "all")

PARAMS = [
    Param("load", float, 66.0, "offered load in Erlangs: mean holding time × arrival rate", minimum=0, above=True,
          maximum=1e6),
    Param("rate", float, 1.0, "job arrivals per time unit", minimum=0, above=True),
    Param("min_vms", int, 10, "fewest VMs in a job", minimum=1, maximum=10_000),
    Param("max_vms", int, 21, "most VMs in a job", minimum=1, maximum=10_000),
    # A flow of 0 Gbps would need a route that reserves nothing, which no allocation may have.
    Param("min_gbps", float, 6.0, "slowest flow between two VMs (Gbps)", minimum=0, above=True, maximum=1e6),
    Param("max_gbps", float, 8.0, "fastest flow between two VMs (Gbps)", minimum=0, above=True, maximum=1e6),
    Param("pattern", str, "ring", "which VM pairs communicate", choices=PATTERNS),
    Param("warmup", int, None, "jobs left out of the metrics at the start (default: 5 × load)", minimum=0),
    Param("packet_bytes", int, 296, "packet size of the M/M/1/K latency and loss model", minimum=1),
    Param("buffer", int, 15, "packets a link holds at most in the M/M/1/K model (K)", minimum=1),
]


def communicating_pairs(sizes: np.ndarray, pattern: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which VMs of each job exchange traffic, job after job.

    Args:
        sizes: Each job's VM count.
        pattern: ``ring`` (VM k to VM k+1, the last to the first; none for one VM) or ``all`` (every pair, from the
            earlier VM to the later).
    Returns:
        ``(source, target, pairs_per_job)``: the pairs' VMs, numbered within their job, and each job's count."""
    if pattern == "ring":
        vm_offsets = np.concatenate([[0], np.cumsum(sizes)])
        local = np.arange(int(vm_offsets[-1])) - np.repeat(vm_offsets[:-1], sizes)  # a VM's number within its job
        in_ring = np.repeat(sizes > 1, sizes)
        source = local[in_ring]
        target = np.where(source + 1 == np.repeat(sizes, sizes)[in_ring], 0, source + 1)
        return source, target, np.where(sizes > 1, sizes, 0)
    pairs = {size: np.triu_indices(size, k=1) for size in np.unique(sizes).tolist()}
    source = np.concatenate([pairs[size][0] for size in sizes.tolist()] or [np.zeros(0, int)])
    target = np.concatenate([pairs[size][1] for size in sizes.tolist()] or [np.zeros(0, int)])
    return source, target, sizes * (sizes - 1) // 2


@dataclass(frozen=True)
class VMJobsWorkload:
    load: float = 66.0
    rate: float = 1.0
    min_vms: int = 10
    max_vms: int = 21
    min_gbps: float = 6.0
    max_gbps: float = 8.0
    pattern: str = "ring"
    warmup: int | None = None
    packet_bytes: int = 296
    buffer: int = 15
    kind: str = "job"

    def __post_init__(self) -> None:
        if self.min_vms > self.max_vms:
            raise ValueError("min_vms must not exceed max_vms")
        if self.min_gbps > self.max_gbps:
            raise ValueError("min_gbps must not exceed max_gbps")

    @property
    def warmup_jobs(self) -> int:
        return self.warmup if self.warmup is not None else int(round(5 * self.load))

    def default_requests(self, network: Network) -> int:
        """The warm-up, then 5,000 measured jobs."""
        return self.warmup_jobs + 5_000

    def generate(self, network: Network, requests: int, rng: np.random.Generator) -> RequestSequence:
        if network.resources != ("cpu", "mem", "disk"):
            raise ValueError(f"vmjobs needs servers with cpu, mem and disk; this topology has "
                             f"{', '.join(network.resources)}")
        # One stream per quantity: the first N jobs of a seed are the same whatever the episode's length.
        gap_rng, holding_rng, size_rng, type_rng, rate_rng = rng.spawn(5)
        gaps = gap_rng.exponential(1.0 / self.rate, size=requests)
        holding = holding_rng.exponential(self.load / self.rate, size=requests)
        sizes = size_rng.integers(self.min_vms, self.max_vms, size=requests, endpoint=True)
        vm_offsets = np.concatenate([[0], np.cumsum(sizes)])
        n_vms = int(vm_offsets[-1])
        types = type_rng.integers(0, len(VM_TYPES), size=n_vms)
        job_of_vm = np.repeat(np.arange(requests), sizes)
        # Most demanding first: the types are listed in increasing demand.
        types = types[np.lexsort((-types, job_of_vm))]
        vm_demand = VM_TYPES[types]

        source, target, pairs_per_job = communicating_pairs(sizes, self.pattern)
        flow_offsets = np.concatenate([[0], np.cumsum(pairs_per_job)])
        flows = np.empty((int(flow_offsets[-1]), 3))
        flows[:, 0], flows[:, 1] = source, target
        flows[:, 2] = rate_rng.uniform(self.min_gbps, self.max_gbps, size=len(flows))

        demand = np.add.reduceat(vm_demand, vm_offsets[:-1], axis=0)
        return RequestSequence(
            kind="job",
            gaps=gaps,
            holding=holding,
            demand=demand,
            measured=np.arange(requests) >= self.warmup_jobs,
            vm_offsets=vm_offsets,
            vm_demand=vm_demand,
            flow_offsets=flow_offsets,
            flows=flows,
            packets=PacketModel(packet_bytes=self.packet_bytes, buffer_packets=self.buffer),
        )


@hookimpl
def register_workloads(register):
    register(
        "vmjobs",
        VMJobsWorkload,
        description="OCS paper's jobs: 10..21 VMs of four types, 6..8 Gbps per communicating pair, "
        "Poisson arrivals, load in Erlangs",
        params=PARAMS,
    )
