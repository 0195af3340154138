"""First fit: the lowest-numbered server that can still help, rack by rack.

A complete third-party allocator: a policy on top of dcbench's pool builder,
a parameter, and the registration hook.
"""

from __future__ import annotations

import numpy as np

from dcbench import Param, PoolAllocator, PoolBuilder, hookimpl


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


@hookimpl
def register_allocators(register):
    register(
        "firstfit",
        FirstFit,
        description="First fit: lowest-numbered allowed server, preferring the last pick's rack",
        params=[Param("stay_in_rack", bool, True, "prefer servers in the rack of the previous pick")],
        demands=("pool",),
    )
