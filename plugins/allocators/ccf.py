"""CCF, computing capacity first: a job's VMs fill the rack with the most free CPU.

The OCS paper's baseline from its reference [24]; its rule is not published.
"Computing capacity first" as the VM-placement literature uses it
consolidates: a job's first VM goes to the rack with the most free CPU
cores, the next VMs follow it while that rack has a server for them, and
only then spill to the rack with the most free CPU left, blind to the
network. Bandwidth is checked afterwards, by the job builder: direct
circuits, two hops, and — unless ``reconfigure=no`` (ALL2ALL-CCF) — new
circuits where the job's traffic needs them.

``place=spread`` is dcbench 0.3's reading: every VM to the rack with the
most free CPU, which spreads a job's ring over as many racks as it has VMs.
Ties (every rack of an empty data centre, racks of equal free CPU later)
are broken at random from the run's seed in both. See docs/scenarios/ocs.md.
"""

from __future__ import annotations

import numpy as np

from dcbench import RECONFIGURE_PARAM, JobAllocator, JobBuilder, Param, hookimpl
from dcbench.plugins.allocators._papers import OCS

PLACEMENTS = ("consolidate", "spread")


class CCFAllocator(JobAllocator):
    def __init__(self, reconfigure: bool = True, place: str = "consolidate"):
        self.reconfigure = reconfigure
        self.place = place

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        if self.place == "consolidate" and builder.host_racks and allowed[builder.host_racks[-1]]:
            return builder.host_racks[-1]
        cpu = np.where(allowed, builder.rack_free[:, 0], -np.inf)
        most = np.flatnonzero(cpu == cpu.max())
        return int(most[self.rng.integers(len(most))]) if len(most) > 1 else int(most[0])


@hookimpl
def register_allocators(register):
    register(
        "ccf",
        CCFAllocator,
        description="Computing capacity first: a job fills the rack with the most free CPU, then the next "
        "(ccf = ODCN-CCF; ccf:reconfigure=no = ALL2ALL-CCF)",
        params=[RECONFIGURE_PARAM,
                Param("place", str, "consolidate", "consolidate: a job's VMs stay on the rack with the most free "
                      "CPU while it has room; spread: each VM to the rack with the most free CPU (dcbench 0.3)",
                      choices=PLACEMENTS)],
        demands=("job",),
        colour={"": "C5", "reconfigure=no": "C7"},
        paper=OCS,
    )
