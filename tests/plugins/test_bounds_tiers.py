"""The pool bound with tiers (benchmarks/bound_racks.py): each request's CPU per rack and pod kept for its life, the
pairs it splits charged to each rack's and pod's cut. Never below what an allocator the engine runs accepts, never
above the pooled bound, and tighter than it where the links out of a rack are few."""

from pathlib import Path

import numpy as np
import pytest

from dcbench.plugins.bounds.pool import pool_bound, pool_instance
from dcbench.plugins.workloads.uniform import UniformWorkload
from tests.conftest import load_script, tiered
from tests.plugins.test_bounds import best_simulated

ROOT = Path(__file__).resolve().parents[2]
racks = load_script(ROOT / "benchmarks" / "bound_racks.py")

# 4 CPU per server: a request of up to 24 CPU needs up to 6 servers, its pairs across a rack's 2-channel cut too many
TWO_RACKS = "tiered:sr=8,ra=1,ac=1,pods=1,racks=2,servers=4,cpu=4,mem=4"
TWO_PODS = "tiered:sr=8,ra=2,ac=1,pods=2,racks=1,servers=4,cpu=4,mem=4"


def small(topology, seed, wait):
    network = tiered(topology)
    workload = UniformWorkload(max_cpu=24, max_mem=8, hold=4, wait=wait, pairs="reference")
    return network, workload.generate(network, 7, np.random.default_rng(seed))


def test_each_racks_and_pods_cut_is_the_channels_out_of_it():
    assert [(kind, len(servers), cut) for kind, servers, cut in racks.groups_of(tiered("tiered:16,1x16"))] == (
        [("rack", 16, 64.0)] * 4 + [("pod", 32, 16.0)] * 2)  # two planes of 32 up, two aggregation links of 8 out


@pytest.mark.parametrize("topology,seed,wait", [(TWO_RACKS, 3, False), (TWO_RACKS, 4, True), (TWO_RACKS, 5, True),
                                                (TWO_PODS, 1, False), (TWO_PODS, 2, True), (TWO_PODS, 3, True)])
def test_the_bound_with_tiers_is_tighter_than_the_pooled_one_and_no_allocator_beats_it(topology, seed, wait):
    network, sequence = small(topology, seed, wait)
    bound = racks.solve(racks.RackModel(network, sequence))
    assert bound.status == "optimal"
    assert pool_bound(pool_instance(network, sequence), "milp").accepted > bound.accepted >= best_simulated(
        network, sequence)


def test_where_the_cut_is_scarce_the_bound_with_tiers_is_attained():
    """Two pods joined by two channels: the pooled bound accepts 5 of 7, a request's pairs across pods fit no more
    than 3 of them, and an allocator accepts 3."""
    network, sequence = small(TWO_PODS, 0, False)
    assert racks.solve(racks.RackModel(network, sequence)).accepted == best_simulated(network, sequence) == 3
    assert pool_bound(pool_instance(network, sequence), "milp").accepted == 5
