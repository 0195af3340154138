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
    """

    kind: str
    gaps: np.ndarray
    holding: np.ndarray
    demand: np.ndarray
    connectivity: str = "all"
    wait_until_fits: bool = False
    time_step: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.gaps)


@dataclass(slots=True)
class Request:
    """One request as an allocator sees it."""

    id: int
    arrival: float
    holding: float
    demand: np.ndarray
    kind: str = "pool"
    connectivity: str = "all"


class Workload(Protocol):
    """What a workload plugin's factory returns."""

    kind: str

    def generate(self, network: Network, requests: int, rng: np.random.Generator) -> RequestSequence:
        """Draw ``requests`` requests for ``network`` from ``rng``."""
        ...
