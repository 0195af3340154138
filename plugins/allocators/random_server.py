"""Random: a uniformly random allowed server at each step (a rack per VM for jobs)."""

from __future__ import annotations

import numpy as np

from dcbench import JobBuilder, PoolAndJobAllocator, PoolBuilder, hookimpl


class RandomAllocator(PoolAndJobAllocator):
    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        candidates = np.flatnonzero(allowed)
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
        demands=("pool", "job"),
        colour="C4",
    )
