"""First fit: the lowest-numbered server that can still help, rack by rack.

A complete third-party allocator: a policy on top of dcbench's pool builder
and a parameter (registered in `dcbench_firstfit.plugin`).
"""

from __future__ import annotations

import numpy as np

from dcbench import PoolAllocator, PoolBuilder


class FirstFit(PoolAllocator):
    def __init__(self, stay_in_rack: bool = True):
        self.stay_in_rack = stay_in_rack

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        candidates = np.flatnonzero(allowed)
        if self.stay_in_rack and builder.chosen:
            rack = self.network.racks[builder.chosen[-1]]
            same_rack = candidates[self.network.racks[candidates] == rack]
            if len(same_rack):
                return int(same_rack[0])
        return int(candidates[0])
