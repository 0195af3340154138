"""What the fitting allocators share (bestfit, tetris:fit_last=yes, and gnn_ppo's hints): which servers
complete a request, and how many free channels each server's own link has."""

from __future__ import annotations

import numpy as np

from dcbench import PoolBuilder


def own_link_free(builder: PoolBuilder, links: np.ndarray, has_link: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Free channels of every server's own link (``links``, valid where
    ``has_link``); a server without a link of its own is never short of them."""
    link_free = builder.free_links.take(links, out=out)
    return link_free if has_link.all() else np.where(has_link, link_free, np.inf)


def completing_servers(builder: PoolBuilder, allowed: np.ndarray, link_free: np.ndarray) -> np.ndarray:
    """The allowed servers that cover everything the request still needs and
    have a free channel on their own link for each server chosen so far."""
    remaining = builder.remaining
    needed = remaining > 0
    covers = (builder.free_resources[:, needed] >= remaining[needed]).all(axis=1)
    return allowed & covers & (link_free >= len(builder.chosen))


def tightest_completing(builder: PoolBuilder, allowed: np.ndarray, link_free: np.ndarray,
                        racks: np.ndarray) -> np.ndarray:
    """The allowed servers that complete the request in a rack it already uses
    (anywhere for its first server), tightest first: least CPU and memory
    left over, then fewest free channels, then lowest index."""
    covers = completing_servers(builder, allowed, link_free)
    if builder.chosen:
        covers &= np.isin(racks, racks[builder.chosen])
    candidates = np.flatnonzero(covers)
    leftover = (builder.free_resources[candidates] - builder.remaining).clip(min=0).sum(axis=1)
    return candidates[np.lexsort((link_free[candidates], leftover))]
