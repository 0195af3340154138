"""Trace requests as jobs of the optical fabric: the traces carry no network demand, so a request's VMs and their
traffic are derived by a stated model (docs/workloads.md).

A request of C cores is ``vms`` VMs where the trace gives that column, else ceil(C / vm_cpu); its demand is shared
equally among them (each VM's rounded up to whole units where asked). The VMs communicate in ``pattern`` (ring or
all pairs, as vmjobs), each pair at the trace's ``gbps`` where it has the column, else at ``gbps`` × (a VM's cores /
vm_cpu): a VM of vm_cpu cores sends at the full rate, a smaller one at its share. A pair of rate 0 (a VM without
CPU) exchanges nothing and has no flow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dcbench.plugins.workloads.traces.schema import MAX_VMS, TraceError
from dcbench.plugins.workloads.vmjobs import communicating_pairs


@dataclass(frozen=True)
class JobModel:
    """How requests become jobs.

    Attributes:
        vm_cpu: Cores of a full VM: a request without a ``vms`` column is ceil(cores / vm_cpu) VMs.
        pattern: ``ring`` or ``all`` (`communicating_pairs`).
        gbps: The rate of a pair of full VMs, where the trace has no ``gbps`` column."""

    vm_cpu: float = 16.0
    pattern: str = "ring"
    gbps: float = 8.0

    def sizes(self, cores: np.ndarray, vms: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
        """Each request's VM count.

        Args:
            cores: Each request's cores, as the trace gives them.
            vms: The trace's ``vms`` column, where it has one.
            rows: Each request's row in the trace, from 0, for the error.
        Returns:
            Integers from 1.
        Raises:
            TraceError: A request would be more than `MAX_VMS` VMs."""
        if vms is not None:
            return vms.astype(np.int64)
        sizes = np.maximum(1, np.ceil(cores / self.vm_cpu - 1e-9))
        too_many = np.flatnonzero(sizes > MAX_VMS)
        if len(too_many):
            at = int(too_many[0])
            raise TraceError(f"row {int(rows[at]) + 1:,} of {cores[at]:g} cores is more than {MAX_VMS:,} VMs of "
                             f"vm_cpu={self.vm_cpu:g}; give a larger vm_cpu")
        return sizes.astype(np.int64)

    def flows(self, sizes: np.ndarray, vm_cores: np.ndarray, gbps: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray]:
        """The jobs' flows.

        Args:
            sizes: Each job's VM count.
            vm_cores: Each job's cores per VM, as the trace gives them.
            gbps: The trace's ``gbps`` column for these jobs, where it has one.
        Returns:
            ``(flows, flow_offsets)``: flows × 3 (source VM, target VM, Gbps), numbered within their job, and where
            each job's begin."""
        source, target, pairs_per_job = communicating_pairs(sizes, self.pattern)
        per_job = gbps if gbps is not None else self.gbps * vm_cores / self.vm_cpu
        kept_per_job = np.where(per_job > 0, pairs_per_job, 0)
        rates = np.repeat(per_job, pairs_per_job)
        keep = rates > 0
        flows = np.empty((int(keep.sum()), 3))
        flows[:, 0], flows[:, 1], flows[:, 2] = source[keep], target[keep], rates[keep]
        return flows, np.concatenate([[0], np.cumsum(kept_per_job)]).astype(np.int64)
