"""NULB and NALB: a Tetris first pick, then a walk over the graph from it.

After the first server (the Tetris arg-max), the allocator walks the
topology graph breadth-first from it; every server it meets gives
min(free, still needed) (through the shared pool builder) until the request
is covered, and switches are queued to be expanded. NULB expands neighbours
in the graph's order; NALB in decreasing order of free channels on the link
to them. Pairs are routed over weighted k-shortest paths (`WeightedRouter`).

Options that reproduce the reference code: ``route=reference`` (a link weighs
its free channels, so the fullest links are preferred) and ``queue=lifo``
(the reference pops from the end of its queue, a depth-first walk).
"""

from __future__ import annotations

from collections import deque
from typing import Iterator

import numpy as np

from dcbench import WEIGHTINGS, Network, Param, PoolBuilder, WeightedRouter, hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator


class WalkAllocator(TetrisAllocator):
    def __init__(self, by_free_channels: bool, route: str = "balance", queue: str = "fifo", candidates: int = 16):
        super().__init__()  # (Tetris's penalty would only weigh later picks: the walk makes those)
        self.by_free_channels = by_free_channels
        self.route = route
        self.queue = queue
        self.candidates = candidates

    def make_router(self, network: Network) -> WeightedRouter:
        return WeightedRouter(network, self.route, k=3, candidates=self.candidates)

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        if not builder.chosen:
            first = super().choose(builder, allowed)
            self._walk = self._servers_from(first, builder)
            return first
        for server in self._walk:
            if allowed[server]:
                return server
        return int(np.flatnonzero(allowed)[0])  # unreachable in a connected topology

    def _servers_from(self, first: int, builder: PoolBuilder) -> Iterator[int]:
        """Servers in the order the walk meets them."""
        n_servers = self.network.n_servers
        neighbours_of = self.network.graph_neighbours
        queue = deque([first])
        take_next = queue.popleft if self.queue == "fifo" else queue.pop
        seen = {first}
        while queue:
            node = take_next()
            neighbours = neighbours_of[node]
            if self.by_free_channels:  # stable: ties keep the graph's order
                neighbours = sorted(neighbours, key=lambda pair: -builder.link_free(pair[1]))
            for neighbour, _ in neighbours:
                if neighbour in seen:
                    continue
                seen.add(neighbour)
                if neighbour < n_servers:
                    yield neighbour
                else:
                    queue.append(neighbour)


PARAMS = [
    Param("route", str, "balance", "path weighting: balance (emptier links) or reference (free channels)",
          choices=WEIGHTINGS),
    Param("queue", str, "fifo", "walk order: fifo (breadth-first) or lifo (the reference's)", choices=("fifo", "lifo")),
    Param("candidates", int, 16, "shortest paths by hop count the router ranks", minimum=3),
]


def nulb(**params) -> WalkAllocator:
    return WalkAllocator(by_free_channels=False, **params)


def nalb(**params) -> WalkAllocator:
    return WalkAllocator(by_free_channels=True, **params)


@hookimpl
def register_allocators(register):
    register("nulb", nulb, params=PARAMS, demands=("pool",), colour="C3",
             description="Network-unaware: Tetris first pick, then a walk in graph order")
    register("nalb", nalb, params=PARAMS, demands=("pool",), colour="C2",
             description="Network-aware: Tetris first pick, then a walk along the links with most free channels")
