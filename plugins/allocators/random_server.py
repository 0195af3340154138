"""Random: a uniformly random allowed server at each step."""

from __future__ import annotations

import numpy as np

from dcbench import PoolAllocator, PoolBuilder, hookimpl


class RandomAllocator(PoolAllocator):
    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        candidates = np.flatnonzero(allowed)
        return int(candidates[self.rng.integers(len(candidates))])


@hookimpl
def register_allocators(register):
    register(
        "random",
        RandomAllocator,
        description="A uniformly random allowed server per step (seeded by the run)",
        demands=("pool",),
    )
