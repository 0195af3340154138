"""Per-server hint features of a pool step: what the shipped ``gnn_ppo`` reads besides the node features."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dcbench.engine.pool import PoolBuilder
from dcbench.errors import SpecError
from dcbench.model.network import Network, share_divisor

HINT_FEATURES = ("own_link_free_share", "same_rack_as_first", "same_pod_as_first", "same_rack_as_last",
                 "alignment", "best_fit_rank", "fit_last_rank")
# The one hint that is no share or flag: a server outside the mask may score above the best allowed one.
UNBOUNDED_HINTS = ("alignment",)


def hint_names(hints: bool | str | Sequence[str]) -> tuple[str, ...]:
    """The hint features ``hints`` (False, True: all, or names) asks for, in order."""
    if isinstance(hints, (bool, np.bool_)):
        return HINT_FEATURES if hints else ()
    if isinstance(hints, str) or not isinstance(hints, Sequence):
        shown = repr(hints) if isinstance(hints, str) or hints is None else f"a {type(hints).__name__}"
        raise SpecError(f"hints must be True, False or a sequence of hint names ({', '.join(HINT_FEATURES)}), "
                        f"got {shown}")
    names = tuple(hints)
    unknown = [name for name in names if name not in HINT_FEATURES]
    if unknown:
        raise SpecError(f"hints: {unknown[0]!r} is not a hint feature; they are {', '.join(HINT_FEATURES)}")
    if len(set(names)) != len(names):
        raise SpecError(f"hints: a hint feature is named twice in {list(names)}")
    return names


class PoolHints:
    """Per-server hint features of a pool step, from the pool builder alone; switches get 0 (docs/envs.md).

    Args:
        network: The network observed.
        names: The hint features computed, in this order (all of `HINT_FEATURES` by default).

    Raises:
        SpecError: A name that is no hint feature.
    """

    def __init__(self, network: Network, names: Sequence[str] = HINT_FEATURES):
        self.names = hint_names(list(names))
        self.network = network
        self.n_servers = network.n_servers
        self.n_nodes = network.n_nodes
        self._column = {name: i for i, name in enumerate(self.names)}
        self._has_link = network.server_link >= 0
        self._links = np.where(self._has_link, network.server_link, 0)
        self._link_capacity = share_divisor(network.link_capacity[self._links])
        self._racks = network.racks
        self._pods = network.pods
        self._capacity = share_divisor(network.server_capacity)
        self._largest_server = share_divisor(network.server_capacity.max(axis=0))
        self._own_link = np.empty(network.n_servers)

    def high(self) -> np.ndarray:
        """The upper bound of each column (1, or infinity for ``alignment``).

        Returns:
            The bounds (len(names),), float32.
        """
        return np.array([np.inf if name in UNBOUNDED_HINTS else 1.0 for name in self.names], dtype=np.float32)

    def compute(self, builder: PoolBuilder) -> np.ndarray:
        """The hint features of the builder's next step.

        Args:
            builder: The pool builder, started on the request (zeros where it has none).

        Returns:
            The features, nodes × len(names), float32.
        """
        n, column = self.n_servers, self._column
        extra = np.zeros((self.n_nodes, len(self.names)), dtype=np.float32)
        if builder.request is None or not self.names:
            return extra
        link_free = np.where(self._has_link, builder.free_links[self._links], 0.0)
        if "own_link_free_share" in column:
            extra[:n, column["own_link_free_share"]] = link_free / self._link_capacity
        if builder.chosen:
            for name, labels, server in (("same_rack_as_first", self._racks, builder.chosen[0]),
                                         ("same_pod_as_first", self._pods, builder.chosen[0]),
                                         ("same_rack_as_last", self._racks, builder.chosen[-1])):
                if name in column:
                    extra[:n, column[name]] = labels == labels[server]
        allowed = builder.allowed()
        if "alignment" in column:
            score = builder.free_resources @ (builder.request.demand / 100.0) + link_free
            top = score[allowed].max() if allowed.any() else 0.0
            extra[:n, column["alignment"]] = score / top if top > 0 else 0.0
        if allowed.any():
            for name, ranking in (("best_fit_rank", self._best_fit_order), ("fit_last_rank", self._fit_last_order)):
                if name in column:
                    ranked = ranking(builder, allowed)
                    extra[ranked, column[name]] = 1.0 - np.arange(len(ranked)) / max(len(ranked), 1)
        return extra

    # The rankings restate bestfit's and tetris:fit_last=yes's rules (the core imports no plugin);
    # tests/core/envs/test_inputs.py checks them against the heuristics.
    def _own_link_free(self, builder: PoolBuilder) -> np.ndarray:
        # a server without a link of its own is never short of free channels on it
        link_free = builder.free_links.take(self._links, out=self._own_link)
        return link_free if self._has_link.all() else np.where(self._has_link, link_free, np.inf)

    @staticmethod
    def _completing(builder: PoolBuilder, allowed: np.ndarray, link_free: np.ndarray) -> np.ndarray:
        # the allowed servers that cover what the request still needs, with a free own-link channel per chosen
        remaining = builder.remaining
        needed = remaining > 0
        covers = (builder.free_resources[:, needed] >= remaining[needed]).all(axis=1)
        return allowed & covers & (link_free >= len(builder.chosen))

    def _best_fit_order(self, builder: PoolBuilder, allowed: np.ndarray) -> np.ndarray:
        remaining = builder.remaining
        free = builder.free_resources
        link_free = self._own_link_free(builder)
        n_chosen = len(builder.chosen)
        estimated_size = n_chosen + int(np.ceil((remaining / self._largest_server).max()))
        gives = _row_sums(np.minimum(free, remaining) / self._capacity)
        enough_channels = link_free >= estimated_size - 1
        score = np.where(enough_channels, 1e13 + gives * 1e6 - link_free, gives * 1e6 + link_free)
        if n_chosen:
            outside = self._racks != self._racks[builder.chosen[-1]]
            score -= np.where(enough_channels, 0.5 * outside, 0.0)
        covers = self._completing(builder, allowed, link_free)
        if covers.any():
            leftover = _row_sums((free - remaining).clip(min=0))
            score = np.where(covers, 1e15 - leftover * 1e3 - link_free, score)
        preference = np.where(allowed, score, -np.inf)
        candidates = np.flatnonzero(allowed)
        return candidates[np.argsort(-preference[candidates], kind="stable")]

    def _fit_last_order(self, builder: PoolBuilder, allowed: np.ndarray) -> np.ndarray:
        link_free = self._own_link_free(builder)
        covers = self._completing(builder, allowed, link_free)
        if builder.chosen:
            covers &= np.isin(self._racks, self._racks[builder.chosen])
        candidates = np.flatnonzero(covers)
        leftover = (builder.free_resources[candidates] - builder.remaining).clip(min=0).sum(axis=1)
        return candidates[np.lexsort((link_free[candidates], leftover))]


def _row_sums(x: np.ndarray) -> np.ndarray:
    # numpy sums a row as its first entry plus the others' sum: with two columns, one vector addition
    # (40 times faster than a reduction row by row at 65,536 servers), the same bits
    return x[:, 0] + x[:, 1] if x.shape[1] == 2 else x.sum(axis=1)
