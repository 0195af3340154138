"""Routers: which candidate paths a pool builder tries, in which order.

`WeightedRouter` ranks paths by a weight computed from the links' current
free capacity (this request's reservations included) and offers the k
lightest. Exact weighted k-shortest paths would need a fresh path search
for every pair at every step; instead the router ranks the network's
`candidates` shortest paths by hop count: on the papers' 64-server fabrics
every path of up to 10 links, on 1,024 servers every shortest path but only
some of those a little longer (see docs/scenarios/tiered.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from dcbench.model.network import Network, Path, share_divisor

if TYPE_CHECKING:
    from dcbench.engine.pool import PoolBuilder

WEIGHTINGS = ("balance", "reference")


class WeightedRouter:
    """k paths of least weight among the ``candidates`` shortest by hop count.

    ``balance``: a link weighs 1 + used / capacity, so a path's weight is its
    hop count plus its load: among paths of similar length the emptier one
    wins (the load-balancing intent of NALB/NULB).
    ``reference``: a link weighs its free channels, as in the reference code,
    which therefore prefers the *fullest* links.
    Ties keep the hop-count order.

    A `PoolBuilder`'s router: called with the builder and two servers, it
    returns the paths to try, lightest first.

    Args:
        network: The network whose paths it ranks.
        weighting: How a link weighs: "balance" or "reference" (`WEIGHTINGS`).
        k: The most paths it offers for a pair.
        candidates: How many of the shortest paths by hop count it ranks.

    Attributes:
        catalogue: The network's catalogue of the ``candidates`` shortest paths.
        capacity: Each link's capacity, as a list (1 for a link of none,
            which has nothing free: `share_divisor`).
        weighting: ``weighting`` as given.
        k: ``k`` as given.

    Raises:
        ValueError: ``weighting`` is not one of `WEIGHTINGS`.
    """

    def __init__(self, network: Network, weighting: str = "balance", k: int = 3, candidates: int = 16):
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting {weighting!r} is not one of {', '.join(WEIGHTINGS)}")
        self.catalogue = network.catalogue(candidates)
        self.capacity = share_divisor(network.link_capacity).tolist()  # a link of no capacity weighs as full
        self.weighting = weighting
        self.k = k

    def __call__(self, builder: "PoolBuilder", a: int, b: int) -> Sequence[Path]:
        """The paths to try between two servers, lightest first.

        Args:
            builder: The builder, whose free links (after this request's
                reservations) weigh the paths.
            a: A server's index.
            b: Another server's index.

        Returns:
            At most ``k`` paths, each a tuple of link indices.
        """
        candidates = self.catalogue.between_servers(a, b)
        if len(candidates) <= 1:
            return candidates
        free = builder._free_links
        if self.weighting == "balance":
            capacity = self.capacity
            weights = [sum(2.0 - free[link] / capacity[link] for link in path) for path in candidates]
        else:
            weights = [sum(free[link] for link in path) for path in candidates]
        order = sorted(range(len(candidates)), key=weights.__getitem__)
        return [candidates[i] for i in order[: self.k]]
