"""JCB, joint compute and bandwidth: place each VM where its traffic costs least.

The OCS paper's ODCN-JCB baseline from its reference [24]; its rule is not
published. Ours weighs, for every rack with a server that fits the VM, in
this order (lexicographically):

1. the shortfall: Gbps of the VM's flows to the VMs already placed that the
   direct circuits to their racks could not carry now (after the traffic the
   job already puts on them) — what would need two hops or a reconfiguration;
2. the new inter-rack traffic the VM adds (flows to VMs in other racks);
3. the rack's compute balance: its smallest free share over CPU, memory and
   disk after taking the VM, larger is better;

lowest index on ties. A job's first VM therefore goes to the emptiest rack,
and the rest follow it while it has room, spilling to racks with free direct
circuits. See docs/scenarios/ocs.md.
"""

from __future__ import annotations

import numpy as np

from dcbench import RECONFIGURE_PARAM, JobAllocator, JobBuilder, hookimpl
from dcbench.plugins.allocators._papers import OCS


class JCBAllocator(JobAllocator):
    def __init__(self, reconfigure: bool = True):
        self.reconfigure = reconfigure

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        partners = builder.partners()
        if len(partners) == 1:
            other, rate, _ = partners[0]
            if rate >= 1e-6 and allowed[other]:
                # The partner's rack is the only one where the flow needs no circuit (shortfall 0) and adds
                # no inter-rack traffic (every other rack adds the rate, > 0 once rounded): the first key
                # the rule below compares decides it, whatever the balance.
                return int(other)
        balance = builder.share_left()
        if not partners:  # no shortfall and no added traffic anywhere: the balance decides
            return int(np.lexsort((-balance, ~allowed))[0])
        bundle_free = builder.bundle_free()
        shortfall = added = None
        for other, rate, out in partners:
            if out:
                room = bundle_free[:, other] - builder.pending[:, other]
            else:
                room = bundle_free[other, :] - builder.pending[other, :]
            short = np.maximum(0.0, rate - room)
            short[other] = 0.0  # same rack: no circuit needed
            if shortfall is None:  # the first partner (the only one, mostly): what adding it to zeros gives
                shortfall = short
                added = np.full(builder.n_racks, rate)
                added[other] = 0.0
            else:
                shortfall += short
                added += rate
                added[other] -= rate
        # np.lexsort sorts by the last key first; the first allowed entry wins.
        order = np.lexsort((-balance, added.round(9), shortfall.round(9), ~allowed))
        return int(order[0])


@hookimpl
def register_allocators(register):
    register(
        "jcb",
        JCBAllocator,
        description="Joint compute and bandwidth: the rack where the VM's flows need the least new "
        "circuit capacity, then the least inter-rack traffic, then the best compute balance",
        params=[RECONFIGURE_PARAM],
        demands=("job",),
        colour="C6",
        paper=OCS,
    )
