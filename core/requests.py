"""Requests: what a workload generates and what an allocator is asked to serve."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dcbench.network import Network

# Which pairs of a pool's servers need a network path (see docs/scenarios/tiered.md):
#   all        every pair (the papers' text);
#   cpu        every pair in which at least one server gives CPU;
#   reference  the reference code's rule, with its sticky flag.
CONNECTIVITY_RULES = ("all", "cpu", "reference")


@dataclass
class RequestSequence:
    """A whole episode of requests, drawn up front so that every allocator
    sees the same sequence for the same seed.

    ``gaps[i]`` is the time from the previous arrival to request ``i``;
    ``holding[i]`` how long it holds what it is given. ``demand`` is
    requests × resources. When ``wait_until_fits`` is set, a request is
    offered only once the total free capacity covers it: until then the
    clock advances by ``time_step`` and requests depart.

    Jobs (``kind == "job"``) also carry their VMs and flows, flat with
    offsets so that a long episode is a handful of arrays: the VMs of
    request ``i`` are ``vm_demand[vm_offsets[i]:vm_offsets[i + 1]]`` (VMs ×
    resources, in placement order) and its flows
    ``flows[flow_offsets[i]:flow_offsets[i + 1]]`` (source VM, destination
    VM, Gbps; VMs numbered within the job). ``measured`` marks the requests
    the metrics count (all of them by default; a warm-up is left out).
    """

    kind: str
    gaps: np.ndarray
    holding: np.ndarray
    demand: np.ndarray
    connectivity: str = "all"
    wait_until_fits: bool = False
    time_step: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)
    measured: np.ndarray | None = None
    vm_offsets: np.ndarray | None = None
    vm_demand: np.ndarray | None = None
    flow_offsets: np.ndarray | None = None
    flows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.gaps)

    def vms(self, i: int) -> np.ndarray | None:
        if self.vm_offsets is None or self.vm_demand is None:
            return None
        return self.vm_demand[self.vm_offsets[i]:self.vm_offsets[i + 1]]

    def job_flows(self, i: int) -> np.ndarray | None:
        if self.flow_offsets is None or self.flows is None:
            return None
        return self.flows[self.flow_offsets[i]:self.flow_offsets[i + 1]]


@dataclass(slots=True)
class Request:
    """One request as an allocator sees it."""

    id: int
    arrival: float
    holding: float
    demand: np.ndarray
    kind: str = "pool"
    connectivity: str = "all"
    vms: np.ndarray | None = None
    flows: np.ndarray | None = None


class Workload(Protocol):
    """What a workload plugin's factory returns."""

    kind: str

    def generate(self, network: Network, requests: int, rng: np.random.Generator) -> RequestSequence:
        """Draw ``requests`` requests for ``network`` from ``rng``."""
        ...

    # Optional: ``default_requests(network) -> int``, the episode length when
    # none is given (two requests per server otherwise).
