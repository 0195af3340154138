"""Best fit: spend whole servers and free channels only where a request needs them.

dcbench's own baseline, not one of the papers'. On the tiered fabric a
request of n servers takes about n − 1 channels on every one of its servers'
links (one per pair), so a request is limited by the channels of its
servers as much as by their CPU and memory. Two rules follow:

- **The last server.** If some allowed server can cover everything the
  request still needs (and has a free channel for each server already
  chosen), take the tightest fit: the least CPU and memory left over, then
  the fewest free channels (with ``local=yes``, in the rack of the previous
  pick if one there fits). Untouched servers and channel-rich links stay
  for the large requests that need them.
- **Any other step.** Estimate the request's size n as the servers chosen so
  far plus the whole servers' worth it still needs. Among the allowed
  servers with at least n − 1 free channels, take the one that gives the
  largest share of what is still needed (fewer servers, fewer pairs), then
  the fewest free channels, then the rack of the previous pick (with
  ``local=yes`` that rack comes first). If no server has n − 1 free
  channels, take the one that gives the most, then the most free channels.

Lowest index on ties. Routing is the builder's: k = 3 shortest paths by hop
count. ``local=yes`` helps where the upper tiers are scarce (1:8, 1:16) and
costs acceptance where they are not; see docs/scenarios/tiered.md.
"""

from __future__ import annotations

import numpy as np

from dcbench import Network, Param, PoolAllocator, PoolBuilder, hookimpl
from dcbench.plugins.allocators._fit import completing_servers, own_link_free


class BestFitAllocator(PoolAllocator):
    def __init__(self, local: bool = False):
        self.local = local

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        super().reset(network, rng)
        links = network.server_link
        self._has_link = None if (links >= 0).all() else links >= 0
        self._links = np.where(links >= 0, links, 0)
        # 1 where there is none of a resource (nothing free there either: its share reads 0, not 0 / 0)
        capacity = network.server_capacity
        self._capacity = np.where(capacity > 0, capacity, 1.0)
        self._largest_server = np.where(capacity.max(axis=0) > 0, capacity.max(axis=0), 1.0)
        self._link_free = np.empty(network.n_servers)

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        return int(self.preference(builder, allowed).argmax())

    def preference(self, builder: PoolBuilder, allowed: np.ndarray) -> np.ndarray:
        """A score per server whose arg-max (lowest index on ties) is the
        choice, and whose order ranks every allowed server; −inf elsewhere.

        The rules are lexicographic, written as magnitudes: shares of a
        server differ by at least 1/capacity and channels by whole units.
        """
        remaining = builder.remaining
        free = builder.free_resources
        link_free = own_link_free(builder, self._links, self._has_link, self._link_free)
        n_chosen = len(builder.chosen)
        outside = (self.network.racks != self.network.racks[builder.chosen[-1]]) if n_chosen else None

        # Any other step: the share of what is still needed that a server
        # gives first, then fewer free channels among the servers with enough
        # for the request's estimated size (more below them), then the rack.
        estimated_size = n_chosen + int(np.ceil((remaining / self._largest_server).max()))
        gives = (np.minimum(free, remaining) / self._capacity).sum(axis=1) * 1e6
        enough_channels = link_free >= estimated_size - 1
        score = np.where(enough_channels, 1e13 + gives - link_free, gives + link_free)
        if outside is not None:
            score -= np.where(enough_channels, (1e11 if self.local else 0.5) * outside, 0.0)

        # The last server, ranked above all others: least left over, then
        # fewest free channels (then, with local, the previous pick's rack).
        covers = completing_servers(builder, allowed, link_free, remaining)
        if self.local and outside is not None and (covers & ~outside).any():
            covers &= ~outside
        if covers.any():
            leftover = (free - remaining).clip(min=0).sum(axis=1)
            score = np.where(covers, 1e15 - leftover * 1e3 - link_free, score)
        return np.where(allowed, score, -np.inf)


@hookimpl
def register_allocators(register):
    register(
        "bestfit",
        BestFitAllocator,
        description="Best fit on resources and channels: the tightest server for the rest of a request, "
        "otherwise the one that gives the most with the fewest channels to spare (dcbench's own baseline)",
        params=[Param("local", bool, False, "prefer the previous pick's rack over fewer free channels")],
        demands=("pool",),
    )
