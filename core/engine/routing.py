"""Routers: which candidate paths a pool builder tries, in which order (docs/scenarios/tiered.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from dcbench.model.network import Network, Path

if TYPE_CHECKING:
    from dcbench.engine.pool import PoolBuilder

WEIGHTINGS = ("balance", "reference")


class WeightedRouter:
    """A `PoolBuilder`'s router: the ``k`` lightest of the ``candidates`` shortest paths by hop count, ties in hop-count
    order. Under "balance" a link weighs 1 + used / capacity (the emptier of similar paths wins: the NALB/NULB
    intent); under "reference" its free channels, as the reference code, which prefers the fullest links.

    Args:
        network: The network whose paths it ranks.
        weighting: "balance" or "reference" (`WEIGHTINGS`).
        k: The most paths it offers for a pair.
        candidates: How many of the shortest paths by hop count it ranks.
    Raises:
        ValueError: ``weighting`` is not one of `WEIGHTINGS`."""

    def __init__(self, network: Network, weighting: str = "balance", k: int = 3, candidates: int = 16):
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting {weighting!r} is not one of {', '.join(WEIGHTINGS)}")
        self.catalogue = network.catalogue(candidates)
        self._known = self.catalogue.server_pair_cache  # (read first: most pairs are there)
        self._n_servers = network.n_servers
        self.weighting = weighting
        self.k = k

    def __call__(self, builder: "PoolBuilder", a: int, b: int) -> Sequence[Path]:
        """At most ``k`` paths (tuples of link indices) to try between servers ``a`` and ``b``, lightest first by the
        builder's free links."""
        candidates = self._known.get(a * self._n_servers + b) or self.catalogue.between_servers(a, b)
        if len(candidates) <= 1:
            return candidates
        weight = builder.link_weights() if self.weighting == "balance" else builder._free_links
        weights = [sum(map(weight.__getitem__, path)) for path in candidates]
        order = sorted(range(len(candidates)), key=weights.__getitem__)
        return [candidates[i] for i in order[: self.k]]
