"""Tetris: pick the server whose free resources best align with the request.

Score = free · demand over [cpu/10, mem/10, free channels on the server's own
link] and [cpu/10, mem/10, 1] (the request's full demand); after the first
pick of a request, servers outside the rack of the previous pick are scored
× ``penalty``. The arg-max among allowed servers is taken, lowest index on
ties. Routing is the builder's: k = 3 shortest paths by hop count.

``fit_last=yes`` (not in the paper; from dcbench's `bestfit`): when some
allowed server covers everything the request still needs, with a free
channel for each server chosen so far, and lies in a rack the request
already uses (anywhere, for the first pick), the tightest such server is
taken instead: least CPU and memory left over, then fewest free channels.

``published=yes`` turns on the quirks of the authors' code (each is also an
option of its own, so that one at a time can be turned off again):

- ``link_column=by_name``: the link feature a server is scored with is
  another server's. The reference stacks the free channels of the *allowed*
  servers' own links, in index order, under zero padding, while its rows
  are the nodes sorted by name (``Resource_0, Resource_1, Resource_10, …``):
  the server at position p of that order gets the link of the allowed server
  at position p - (servers - allowed), and 0 where that is negative.
- ``anchor=previous``: the locality penalty's anchor is the previous pick
  even of the previous request, so a request's first pick is penalised
  outside the rack of the last server picked before it (none in a run's
  first request).
- ``ties=name``: of equal scores the first in name order wins
  (``Resource_10`` before ``Resource_2``), as the reference's arg-max runs
  over rows sorted by name; ``index`` (the default): the lowest index.

For jobs the same rule picks a rack per VM: free · demand over the rack's
free share of each resource and the VM's share of a server, plus the free
share of the rack's outgoing circuit capacity (the counterpart of the
server's own link), × ``penalty`` outside the rack of the previous VM.
"""

from __future__ import annotations

import numpy as np

from dcbench import JobBuilder, Network, Param, PoolAndJobAllocator, PoolBuilder, hookimpl
from dcbench.plugins.allocators._fit import own_link_free, tightest_completing
from dcbench.plugins.allocators._papers import TIERED_WORKSHOP

KEEP_SCORES_FROM = 4096  # servers (measured: 1,024 servers and fewer are faster without, 8,192 with)


class TetrisAllocator(PoolAndJobAllocator):
    def __init__(self, penalty: float = 0.9, scale: float = 10.0, fit_last: bool = False,
                 published: bool | None = None, link_column: str | None = None, anchor: str | None = None,
                 ties: str | None = None):
        if not 0 <= penalty <= 1:
            raise ValueError(f"penalty={penalty:g} must be between 0 and 1")
        self.penalty = penalty
        self.scale = scale
        self.fit_last = fit_last
        self.link_by_name = (link_column or ("by_name" if published else "own")) == "by_name"
        self.anchor_previous = (anchor or ("previous" if published else "request")) == "previous"
        self.ties_by_name = (ties or ("name" if published else "index")) == "name"
        self._published = self.link_by_name or self.anchor_previous or self.ties_by_name
        self._last_pick = -1

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        super().reset(network, rng)
        links = network.server_link
        self._all_linked = bool((links >= 0).all())
        self._has_link = links >= 0
        self._links = np.where(self._has_link, links, 0)
        first = int(links[0])
        consecutive = self._all_linked and bool((links == np.arange(first, first + len(links))).all())
        self._link_run = slice(first, first + len(links)) if consecutive else None
        # When every server hangs off one link, a request's routes only touch
        # the links of its own (chosen) servers, so the scores of the other
        # servers cannot change while it is being placed: score them once.
        self._scores_stay = self._all_linked and all(len(n) == 1 for n in network.adjacency[: network.n_servers])
        self._rack_members = [np.flatnonzero(network.racks == rack) for rack in range(network.racks.max() + 1)]
        self._racks = network.racks.tolist()
        self._base = np.empty(network.n_servers)
        self._scores = np.empty(network.n_servers)
        self._link_free = np.empty(network.n_servers)
        self._scored: tuple[object, object] | None = None
        self._finite = False
        # Keeping the penalised scores between picks pays off only on many servers.
        self._keep = network.n_servers >= KEEP_SCORES_FROM
        self._kept = np.empty(network.n_servers)  # _choose_kept's penalised scores
        self._excluded = 0  # how many of the request's chosen servers are -inf in them
        self._kept_for: tuple[object, object] | None = None
        self._largest_server = network.server_capacity.max(axis=0)  # a VM's demand as a share of a server
        self._last_pick = -1
        # The position of each server among the servers sorted by name ("Resource_10" before "Resource_2").
        self._name_position = np.empty(network.n_servers, dtype=np.int64)
        self._by_name = np.array(sorted(range(network.n_servers), key=str), dtype=np.int64)
        self._name_position[self._by_name] = np.arange(network.n_servers)

    def _score_all(self, builder: PoolBuilder) -> None:
        # (free / scale) · (demand / scale), over every server at once.
        np.dot(builder.free_resources, builder.request.demand / self.scale**2, out=self._base)
        if self._link_run is not None:  # the servers' own links are one run of link indices: a view
            link_free = builder.free_links[self._link_run]
        else:
            link_free = builder.free_links.take(self._links, out=self._link_free)
        self._base += link_free if self._all_linked else np.where(self._has_link, link_free, 0.0)
        self._scored = (builder, builder.request)
        self._kept_for = None
        self._finite = bool(np.isfinite(self._base.sum()))  # no NaN or inf: base × penalty is finite too

    def _choose_kept(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        # A later pick of a request whose scores stay. The penalised scores
        # (base × penalty, as the plain path computes them) are kept from
        # pick to pick, -inf at the servers already chosen. The best outside
        # the previous pick's rack is their arg-max with that rack set aside:
        # the candidates include every allowed server outside it, so when
        # the arg-max is allowed it is the first of the allowed maxima, and
        # only when it is not (a full server, say) is the mask applied. It
        # is then weighed against the best inside the rack (unpenalised),
        # the lower index winning a tie: the plain path's arg-max.
        kept = self._kept
        if self._kept_for is not self._scored:
            np.multiply(self._base, self.penalty, out=kept)
            self._kept_for = self._scored
            self._excluded = 0
        chosen = builder.chosen
        if self._excluded < len(chosen):
            kept[chosen[self._excluded:]] = -np.inf
            self._excluded = len(chosen)
        members = self._rack_members[self.network.racks[chosen[-1]]]
        saved = kept[members]
        kept[members] = -np.inf
        outside = int(kept.argmax())
        best_outside = kept[outside]
        if best_outside > -np.inf and not allowed[outside]:
            masked = np.where(allowed, kept, -np.inf)
            outside = int(masked.argmax())
            best_outside = masked[outside]
        kept[members] = saved
        inside_scores = np.where(allowed[members], self._base[members], -np.inf)
        j = int(inside_scores.argmax())
        inside, best_inside = int(members[j]), inside_scores[j]
        if best_inside > best_outside or (best_inside == best_outside and inside < outside):
            return inside
        return outside

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        if self.anchor_previous:  # (the only reader of the last pick)
            pick = self._choose(builder, allowed)
            self._last_pick = pick
            return pick
        return self._choose(builder, allowed)

    def _choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        if self.fit_last:
            last = self._tightest_last_server(builder, allowed)
            if last >= 0:
                return last
        if self._published:
            return self._choose_published(builder, allowed)
        chosen = builder.chosen
        scored = self._scored
        if (not chosen or not self._scores_stay or scored is None
                or scored[0] is not builder or scored[1] is not builder.request):
            self._score_all(builder)
        elif self._keep and self._finite:
            return self._choose_kept(builder, allowed)
        if not chosen:
            top = int(self._base.argmax())
            if self._finite and allowed[top]:  # the first of the maxima, so the first of the allowed ones too
                return top
            return int(np.where(allowed, self._base, -np.inf).argmax())
        scores = self._scores
        np.multiply(self._base, self.penalty, out=scores)
        members = self._rack_members[self._racks[chosen[-1]]]
        scores[members] = self._base[members]
        return int(np.where(allowed, scores, -np.inf).argmax())

    def _choose_published(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        # The score × scale²: whole numbers on whole capacities, so scores equal in the rule are equal here too
        # and the tie goes as ``ties`` says (dividing first makes one of them a rounding error smaller).
        scores = builder.free_resources @ builder.request.demand
        if self.link_by_name:
            link = self.link_column_by_name(builder, allowed)
        else:
            link = np.where(self._has_link, builder.free_links.take(self._links), 0.0)
        scores += link * self.scale**2
        anchor = builder.chosen[-1] if builder.chosen else (self._last_pick if self.anchor_previous else -1)
        if anchor >= 0:
            outside = self.network.racks != self.network.racks[anchor]
            scores[outside] *= self.penalty
        scores = np.where(allowed, scores, -np.inf)
        if self.ties_by_name:  # the arg-max over the rows sorted by name: the first of the maxima in that order
            return int(self._by_name[scores[self._by_name].argmax()])
        return int(scores.argmax())

    def link_column_by_name(self, builder: PoolBuilder, allowed: np.ndarray) -> np.ndarray:
        """The reference code's link feature of every server: the free
        channels of another server's own link (the module's ``link_column``).

        Args:
            builder: The builder, with the request and its reservations so far.
            allowed: The servers that may be added (servers,).

        Returns:
            Each server's link feature (servers,).
        """
        allowed_servers = np.flatnonzero(allowed)
        link_free = np.where(self._has_link, builder.free_links.take(self._links), 0.0)[allowed_servers]
        position = self._name_position - (self.network.n_servers - len(allowed_servers))
        return np.where(position >= 0, link_free[position.clip(min=0, max=max(len(link_free) - 1, 0))]
                        if len(link_free) else 0.0, 0.0)

    def _tightest_last_server(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        link_free = own_link_free(builder, self._links, None if self._all_linked else self._has_link, self._link_free)
        candidates = tightest_completing(builder, allowed, link_free, self.network.racks)
        return int(candidates[0]) if len(candidates) else -1

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        vm_share = builder.vm / self._largest_server
        scores = (builder.rack_free / builder.rack_capacity) @ vm_share
        out_capacity = builder.bundle_capacity().sum(axis=1)
        out_free = np.where(builder.rack_link < self.network.n_links, builder.bundle_free(), 0.0).sum(axis=1)
        scores += np.divide(out_free, out_capacity, out=np.zeros_like(out_free), where=out_capacity > 0)
        if builder.host_racks:
            previous = builder.host_racks[-1]
            inside = scores[previous]
            scores *= self.penalty
            scores[previous] = inside
        return int(np.where(allowed, scores, -np.inf).argmax())


@hookimpl
def register_allocators(register):
    register(
        "tetris",
        TetrisAllocator,
        description="Tetris alignment score with a locality penalty outside the last pick's rack "
        "(servers for pools, racks for jobs)",
        params=[
            Param("penalty", float, 0.9, "score factor for servers outside the last pick's rack", minimum=0),
            Param("scale", float, 10.0, "divisor of CPU and memory in the score", minimum=0, above=True),
            Param("fit_last", bool, False, "the tightest server that completes a request, in its racks "
                  "(not in the paper)"),
            Param("published", bool, None, "the authors' code's quirks: link_column=by_name, anchor=previous, "
                  "ties=name"),
            Param("link_column", str, None, "the link feature: own (the server's own link) or by_name (the "
                  "reference's: another server's; default by_name with published=yes)", choices=("own", "by_name")),
            Param("anchor", str, None, "the penalty's anchor: request (the request's previous pick) or previous "
                  "(the previous pick, even of the previous request; default previous with published=yes)",
                  choices=("request", "previous")),
            Param("ties", str, None, "which of equal scores wins: index (the lowest) or name (the first in name "
                  "order, the reference's; default name with published=yes)", choices=("index", "name")),
        ],
        demands=("pool", "job"),
        colour="C1",
        paper=TIERED_WORKSHOP,
    )
