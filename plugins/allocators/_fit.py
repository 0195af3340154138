"""What the fitting allocators share (bestfit, tetris:fit_last=yes, and gnn_ppo's hints): which servers
complete a request, and how many free channels each server's own link has."""

from __future__ import annotations

import numpy as np

from dcbench import PoolBuilder


def own_link_free(builder: PoolBuilder, links: np.ndarray, has_link: np.ndarray | None, out: np.ndarray) -> np.ndarray:
    """Free channels of every server's own link (``links``, valid where
    ``has_link``; None: every server has one); a server without a link of its
    own is never short of them."""
    link_free = builder.free_links.take(links, out=out)
    return link_free if has_link is None else np.where(has_link, link_free, np.inf)


def completing_servers(builder: PoolBuilder, allowed: np.ndarray, link_free: np.ndarray,
                       remaining: np.ndarray | None = None) -> np.ndarray:
    """The allowed servers that cover everything the request still needs
    (``remaining``, default the builder's) and have a free channel on their own
    link for each server chosen so far."""
    if remaining is None:
        remaining = builder.remaining
    covers = allowed & (link_free >= len(builder.chosen))
    free = builder.free_resources
    for column, needed in enumerate(remaining.tolist()):  # (a column at a time: all(axis=1) of a few is slow)
        if needed > 0:
            covers &= free[:, column] >= needed
    return covers


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
