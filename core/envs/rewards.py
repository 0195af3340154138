"""The rewards of the environments: the tiered papers' for pools, the OCS paper's Eq. 1 for jobs."""

from __future__ import annotations

import math

import numpy as np

from dcbench.model.network import Circuits
from dcbench.model.requests import PacketModel

SUCCESS_REWARD = 10.0
FAILURE_REWARD = -10.0


def episode_ratios(accepted: int, offered: int, measured_offered: np.ndarray,
                   measured_accepted: np.ndarray) -> dict[str, float]:
    """The ratios of an episode's last ``info``: accepted over every request settled, and over the measured ones."""
    n_offered = int(measured_offered.sum())
    return {"acceptance_ratio": accepted / max(1, offered),
            "measured_acceptance_ratio": int(measured_accepted.sum()) / n_offered if n_offered else math.nan}


def job_step_rewards(steps: int, blocked_at: int | None, latency_ns: float, reconfigured: bool,
                     alpha: float = 100.0, reconfiguration_cost: float = 25.0, vms: int | None = None) -> list[float]:
    """The OCS paper's Eq. 1 for the ``steps`` decisions taken for one job of ``vms`` VMs (K).

    Blocked at step k (the last decision taken; a VM that fits nowhere or traffic that cannot be routed blocks at the
    decision before): −K for step k, 0.5 for each before. Served: 1 + α / l for every step, minus Φ_reconf if the job
    needed a reconfiguration; l is the network-wide mean latency (ns) right after the job is committed.

    Args:
        steps: The decisions taken for the job.
        blocked_at: The 0-based step it was blocked at, or None where it was served.
        latency_ns: l (ns); where it is not positive the α / l term is left out.
        reconfigured: Whether serving it needed a reconfiguration.
        alpha: α.
        reconfiguration_cost: Φ_reconf.
        vms: K, the job's VMs (None: ``steps``).

    Returns:
        One reward per step: ``steps`` of them where served, ``blocked_at + 1`` where blocked.
    """
    if blocked_at is not None:
        return [0.5] * blocked_at + [-float(vms if vms is not None else steps)]
    reward = 1.0 + (alpha / latency_ns if latency_ns > 0 else 0.0)
    if reconfigured:
        reward -= reconfiguration_cost
    return [reward] * steps


def _floor_latency_ns(packets: PacketModel | None, circuits: Circuits | None) -> float:
    """One packet's transmission time on one circuit (ns): the latency of a packet that waits for nothing."""
    packet_bits = 8.0 * (packets.packet_bytes if packets is not None else 296)
    return packet_bits / float(circuits.port_gbps if circuits is not None else 40.0)
