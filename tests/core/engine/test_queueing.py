import numpy as np
import pytest

from dcbench.engine.qos import mm1k

PACKET_BITS = 296 * 8


def birth_death(rho, k):
    """M/M/1/K by its stationary distribution, solved directly."""
    p = rho ** np.arange(k + 1)
    p /= p.sum()
    return p


@pytest.mark.parametrize("rho", [0.05, 0.5, 0.9, 0.999, 1.0])
@pytest.mark.parametrize("k", [1, 15])
def test_mm1k_matches_the_stationary_distribution(rho, k):
    capacity = 40.0
    delay, loss = mm1k(np.array([rho * capacity]), np.array([capacity]), PACKET_BITS, k)
    p = birth_death(rho, k)
    arrivals = rho * capacity * 1e9 / PACKET_BITS
    assert loss[0] == pytest.approx(p[-1], rel=1e-6)
    in_system = (np.arange(k + 1) * p).sum()
    assert delay[0] == pytest.approx(in_system / (arrivals * (1 - p[-1])), rel=1e-6)


def test_a_lightly_loaded_link_delays_a_packet_by_its_service_time():
    delay, loss = mm1k(np.array([1e-6]), np.array([40.0]), PACKET_BITS, 15)
    assert delay[0] == pytest.approx(PACKET_BITS / 40e9, rel=1e-4)
    assert loss[0] < 1e-60
