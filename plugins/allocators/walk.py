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

``published=yes`` runs the walk as the reference code does: ``route`` and
``queue`` left out are ``reference`` and ``lifo`` (``balance`` and ``fifo``
without it), and the quirks below are turned on. Each quirk is also an option of its own (to
leave one out, name the others without ``published``):

- ``first_pick=published``: the first server is the published Tetris's
  (tetris's ``link_column=by_name``, ``anchor=previous`` and ``ties=name``;
  the anchor is the previous request's Tetris pick, the only pick the
  reference's Tetris makes).
- ``plan=any_free``: at the first pick the walk plans the servers that cover
  the request, taking every server it meets with anything free, even of a
  resource the request no longer needs; such a server gives nothing but is
  still joined to the others (left out of the allocation, with its paths,
  unless the workload keeps it: ``uniform:useless=kept``).
- ``order=reversed``: the plan, the Tetris pick then the servers in the
  order the walk found them, is placed from its end: the Tetris pick last
  (each server gives min(free, still needed) as it is placed; once the plan
  is spent the walk goes on).
"""

from __future__ import annotations

from collections import deque
from typing import Iterator

import numpy as np

from dcbench import WEIGHTINGS, Network, Param, PoolBuilder, WeightedRouter, hookimpl
from dcbench.plugins.allocators._papers import TIERED_WORKSHOP
from dcbench.plugins.allocators.tetris import TetrisAllocator


class WalkAllocator(TetrisAllocator):
    def __init__(self, by_free_channels: bool, route: str | None = None, queue: str | None = None, candidates: int = 16,
                 published: bool | None = None, first_pick: str | None = None, plan: str | None = None,
                 order: str | None = None):
        first_published = (first_pick or ("published" if published else "tetris")) == "published"
        # (Tetris's penalty would only weigh later picks, the walk makes those: unless it is anchored on the
        # previous request's last pick.)
        super().__init__(published=first_published or None)
        self.by_free_channels = by_free_channels
        self.route = route or ("reference" if published else "balance")
        self.queue = queue or ("lifo" if published else "fifo")
        self.candidates = candidates
        self.plan_any_free = (plan or ("any_free" if published else "needed")) == "any_free"
        self.order_reversed = (order or ("reversed" if published else "walk")) == "reversed"
        self.accept_useless = self.plan_any_free
        self._plan: list[int] = []

    def make_router(self, network: Network) -> WeightedRouter:
        return WeightedRouter(network, self.route, k=3, candidates=self.candidates)

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        # (The penalty's anchor stays the Tetris pick: the reference sets it in its Tetris alone.)
        if not builder.chosen:
            first = super().choose(builder, allowed)
            self._walk = self._servers_from(first, builder)
            if not (self.plan_any_free or self.order_reversed):
                return first
            self._plan = self._planned(first, builder)
            if not self.order_reversed:
                return first
            self._plan.insert(0, first)  # the reference's plan starts with the Tetris pick and is popped from its end
        return self._next(builder, allowed)

    def _next(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        while self._plan:
            server = self._plan.pop()
            if not builder.chosen_mask[server] and (allowed[server] or self.plan_any_free):
                return server
        for server in self._walk:
            if allowed[server]:
                return server
        return int(np.flatnonzero(allowed)[0])  # unreachable in a connected topology

    def _planned(self, first: int, builder: PoolBuilder) -> list[int]:
        """The servers the walk plans at the first pick, in the order it
        found them (reversed where ``order=reversed``): those that give
        something of what is still needed, or (``plan=any_free``) those with
        anything free, until what they give covers the request."""
        remaining = np.maximum(builder.request.demand - builder.free_resources[first], 0.0)
        free = builder.free_resources  # (the first server's take is not yet subtracted; it is not met again)
        plan: list[int] = []
        for server in self._walk:
            if not remaining.any():
                break
            take = np.minimum(free[server], remaining)
            if take.any() or (self.plan_any_free and free[server].any()):
                plan.append(server)
                remaining -= take
        if not self.order_reversed:
            plan.reverse()  # popped from the end: the walk's own order
        return plan

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
    Param("route", str, None, "path weighting: balance (emptier links; the default) or reference (free channels; "
          "the default with published=yes)", choices=WEIGHTINGS),
    Param("queue", str, None, "walk order: fifo (breadth-first; the default) or lifo (the reference's; the default "
          "with published=yes)", choices=("fifo", "lifo")),
    Param("candidates", int, 16, "shortest paths by hop count the router ranks", minimum=3),
    Param("published", bool, None, "the authors' code's quirks: first_pick=published, plan=any_free, "
          "order=reversed (with route=reference,queue=lifo for the whole of it)"),
    Param("first_pick", str, None, "tetris (dcbench's) or published (the published Tetris: another server's "
          "link, anchored on the previous request's last pick)", choices=("tetris", "published")),
    Param("plan", str, None, "which servers the walk plans: needed (those with something still needed) or "
          "any_free (the reference's: anything free)", choices=("needed", "any_free")),
    Param("order", str, None, "the plan's placement: walk (the order found) or reversed (the reference's)",
          choices=("walk", "reversed")),
]


def nulb(**params) -> WalkAllocator:
    return WalkAllocator(by_free_channels=False, **params)


def nalb(**params) -> WalkAllocator:
    return WalkAllocator(by_free_channels=True, **params)


@hookimpl
def register_allocators(register):
    register("nulb", nulb, params=PARAMS, demands=("pool",), colour="C3", paper=TIERED_WORKSHOP,
             description="Network-unaware: Tetris first pick, then a walk in graph order")
    register("nalb", nalb, params=PARAMS, demands=("pool",), colour="C2", paper=TIERED_WORKSHOP,
             description="Network-aware: Tetris first pick, then a walk along the links with most free channels")
