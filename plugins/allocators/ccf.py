"""CCF, computing capacity first: each VM goes to the rack with the most free CPU.

The OCS paper's baseline from its reference [24]; its rule is not published.
Ours takes the name at its word: among the racks with a server that fits the
VM, the one with the most free CPU cores (lowest index on ties), blind to the
network. Bandwidth is the job builder's business: direct circuits, two hops,
and — unless ``reconfigure=no`` (ALL2ALL-CCF) — new circuits where the job's
traffic needs them. See docs/scenarios/ocs.md.
"""

from __future__ import annotations

import numpy as np

from dcbench import JobAllocator, JobBuilder, Param, hookimpl


class CCFAllocator(JobAllocator):
    def __init__(self, reconfigure: bool = True):
        self.reconfigure = reconfigure

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        cpu = builder.rack_free[:, 0]
        return int(np.where(allowed, cpu, -np.inf).argmax())


@hookimpl
def register_allocators(register):
    register(
        "ccf",
        CCFAllocator,
        description="Computing capacity first: the rack with the most free CPU per VM "
        "(ccf = ODCN-CCF; ccf:reconfigure=no = ALL2ALL-CCF)",
        params=[Param("reconfigure", bool, True, "re-point idle OCS circuits when a job's traffic needs them")],
        demands=("job",),
    )
