"""Latency and packet loss of links, each an M/M/1/K queue (the OCS paper's model: Poisson packet arrivals at the
link's load, service at its capacity, at most K packets). With ρ = λ/μ:

    P_K = (1 − ρ) ρ^K / (1 − ρ^(K+1))                     (loss; 1/(K+1) at ρ = 1)
    L   = ρ/(1 − ρ) − (K+1) ρ^(K+1) / (1 − ρ^(K+1))       (mean packets; K/2 at ρ = 1)
    W   = L / (λ (1 − P_K))                               (Little's law: mean time in the system)

(Kleinrock, Queueing Systems vol. 1, §3.6; docs/scenarios/ocs.md.)"""

from __future__ import annotations

import numpy as np

_NEAR_ONE = 1e-9


def mm1k(load: np.ndarray, capacity: np.ndarray, packet_bits: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean time in the system (s) and loss probability of each link, given its ``load`` and ``capacity`` in Gbps,
    float arrays (0 < load <= capacity), and buffer ``k``."""
    rho = load / capacity
    arrivals = load * 1e9 / packet_bits  # packets per second
    near_one = np.abs(1.0 - rho) < _NEAR_ONE
    safe = np.where(near_one, 0.5, rho)
    power_k = _power(safe, k)
    power_k1 = power_k * safe
    loss = np.where(near_one, 1.0 / (k + 1), (1.0 - safe) * power_k / (1.0 - power_k1))
    in_system = np.where(near_one, k / 2.0, safe / (1.0 - safe) - (k + 1) * power_k1 / (1.0 - power_k1))
    delay = in_system / (arrivals * (1.0 - loss))
    return delay, loss


def _power(base: np.ndarray, k: int) -> np.ndarray:
    """``base**k`` by repeated squaring: IEEE multiplications round the same on every CPU, where numpy's ``**`` calls
    a vectorised ``pow`` on CPUs with AVX-512 and libm's elsewhere, which differ in the last bits."""
    result = np.ones_like(base)
    square = base
    while k:
        if k & 1:
            result = result * square
        k >>= 1
        if k:
            square = square * square
    return result
