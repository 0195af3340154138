"""Random: a uniformly random allowed server at each step (a rack per VM for jobs).

``published=yes`` (``mask=any_free``): the reference code's mask, whatever
the workload's rule: any server with anything free at all, even of a
resource the request no longer needs (such a server gives nothing; it is
joined to the others while the request is built, and the allocation leaves
it out unless the workload keeps it, ``uniform:useless=kept``). The
reference draws unseeded; dcbench's draws are seeded by the run.
"""

from __future__ import annotations

import numpy as np

from dcbench import JobBuilder, Param, PoolAndJobAllocator, PoolBuilder, hookimpl
from dcbench.plugins.allocators._papers import TIERED_WORKSHOP


class RandomAllocator(PoolAndJobAllocator):
    def __init__(self, published: bool | None = None, mask: str | None = None):
        self.mask_any_free = (mask or ("any_free" if published else "allowed")) == "any_free"
        self.accept_useless = self.mask_any_free

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        if self.mask_any_free:
            allowed = (builder.free_resources.sum(axis=1) > 0) & ~builder.chosen_mask
        candidates = allowed.nonzero()[0]  # (np.flatnonzero's, a Python call less)
        return int(candidates[self.rng.integers(len(candidates))])

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        candidates = np.flatnonzero(allowed)
        return int(candidates[self.rng.integers(len(candidates))])


@hookimpl
def register_allocators(register):
    register(
        "random",
        RandomAllocator,
        description="A uniformly random allowed server per step, or rack per VM (seeded by the run)",
        params=[
            Param("published", bool, None, "the authors' code's mask: mask=any_free"),
            Param("mask", str, None, "the servers drawn from: allowed (the builder's) or any_free (the "
                  "reference's: anything free, needed or not; default any_free with published=yes)",
                  choices=("allowed", "any_free")),
        ],
        demands=("pool", "job"),
        colour="C4",
        paper=TIERED_WORKSHOP,
    )
