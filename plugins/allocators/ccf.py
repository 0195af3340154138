"""CCF, computing capacity first: each VM goes to the rack with the most free CPU.

The OCS paper's baseline from its reference [24]; its rule is not published.
Ours takes the name at its word: among the racks with a server that fits the
VM, the one with the most free CPU cores, blind to the network. Ties — every
rack of an empty data centre, racks of equal free CPU later — are broken at
random (from the run's seed): with the lowest index instead, every job's
ring would run over the same few rack pairs, and ALL2ALL-CCF would block 85%
of the jobs at load 66 rather than about 50%, a straw man. Bandwidth is the
job builder's business: direct circuits, two hops, and — unless
``reconfigure=no`` (ALL2ALL-CCF) — new circuits where the job's traffic
needs them. See docs/scenarios/ocs.md.
"""

from __future__ import annotations

import numpy as np

from dcbench import RECONFIGURE_PARAM, JobAllocator, JobBuilder, hookimpl


class CCFAllocator(JobAllocator):
    def __init__(self, reconfigure: bool = True):
        self.reconfigure = reconfigure

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        cpu = np.where(allowed, builder.rack_free[:, 0], -np.inf)
        most = np.flatnonzero(cpu == cpu.max())
        return int(most[self.rng.integers(len(most))]) if len(most) > 1 else int(most[0])


@hookimpl
def register_allocators(register):
    register(
        "ccf",
        CCFAllocator,
        description="Computing capacity first: the rack with the most free CPU per VM "
        "(ccf = ODCN-CCF; ccf:reconfigure=no = ALL2ALL-CCF)",
        params=[RECONFIGURE_PARAM],
        demands=("job",),
        colour={"": "C5", "reconfigure=no": "C7"},
    )
