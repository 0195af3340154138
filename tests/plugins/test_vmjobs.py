import numpy as np
import pytest

from dcbench import Network
from dcbench.harness import get_registry
from dcbench.plugins.workloads.vmjobs import VM_TYPES


@pytest.fixture(scope="module")
def network():
    return Network.compile(get_registry().build("topology", "ocs:4,servers=4").obj)


def generate(network, spec, n=2000, seed=0):
    return get_registry().build("workload", spec).obj.generate(network, n, np.random.default_rng(seed))


def test_jobs_follow_the_paper(network):
    sequence = generate(network, "vmjobs:load=66")
    sizes = np.diff(sequence.vm_offsets)
    assert sizes.min() == 10 and sizes.max() == 21
    assert {tuple(row) for row in sequence.vm_demand.tolist()} == {tuple(row) for row in VM_TYPES.tolist()}
    assert np.allclose(sequence.demand, np.add.reduceat(sequence.vm_demand, sequence.vm_offsets[:-1]))
    # Poisson arrivals at rate 1, exponential holding of mean 66
    assert sequence.gaps.mean() == pytest.approx(1.0, rel=0.08)
    assert sequence.holding.mean() == pytest.approx(66.0, rel=0.08)
    assert np.median(sequence.holding) == pytest.approx(66.0 * np.log(2), rel=0.1)
    rates = sequence.flows[:, 2]
    assert rates.min() >= 6.0 and rates.max() <= 8.0
    assert sequence.measured.tolist() == [False] * 330 + [True] * (2000 - 330)


def test_vms_are_ordered_most_demanding_first_and_ring_flows_close_the_ring(network):
    sequence = generate(network, "vmjobs", n=50)
    for i in range(50):
        vms = sequence.vms(i)
        assert (np.diff(vms[:, 2]) <= 0).all() and (np.diff(vms[:, 0]) <= 0).all()
        flows = sequence.job_flows(i)
        k = len(vms)
        assert flows[:, :2].astype(int).tolist() == [[j, (j + 1) % k] for j in range(k)]


def test_all_pattern_joins_every_pair_once(network):
    sequence = generate(network, "vmjobs:pattern=all,min_vms=3,max_vms=5", n=30)
    for i in range(30):
        k = len(sequence.vms(i))
        pairs = {tuple(p) for p in sequence.job_flows(i)[:, :2].astype(int).tolist()}
        assert pairs == {(a, b) for a in range(k) for b in range(a + 1, k)}


def test_the_same_seed_gives_the_same_jobs_and_load_scales_holding(network):
    first, again = generate(network, "vmjobs:load=54", seed=3), generate(network, "vmjobs:load=54", seed=3)
    for field in ("gaps", "holding", "vm_demand", "flows"):
        assert np.array_equal(getattr(first, field), getattr(again, field))
    busier = generate(network, "vmjobs:load=78,rate=2", seed=3)
    assert busier.holding.mean() == pytest.approx(39.0, rel=0.08)
    assert busier.gaps.mean() == pytest.approx(0.5, rel=0.08)


def test_a_seeds_first_jobs_are_the_same_whatever_the_episode_length(network):
    # The README's `-n 5330` run is the first part of the suite's 10,330-job run of the same seed.
    short, long = generate(network, "vmjobs:pattern=all", n=300, seed=4), generate(network, "vmjobs:pattern=all",
                                                                                     n=1000, seed=4)
    assert np.array_equal(short.vm_offsets, long.vm_offsets[:301])
    assert np.array_equal(short.flow_offsets, long.flow_offsets[:301])
    for field in ("gaps", "holding", "demand", "measured"):
        assert np.array_equal(getattr(short, field), getattr(long, field)[:300])
    assert np.array_equal(short.vm_demand, long.vm_demand[: short.vm_offsets[-1]])
    assert np.array_equal(short.flows, long.flows[: short.flow_offsets[-1]])
    assert not np.array_equal(short.flows, generate(network, "vmjobs:pattern=all", n=300, seed=5).flows)


@pytest.mark.parametrize("spec", ["vmjobs:min_vms=5,max_vms=4", "vmjobs:min_gbps=9", "vmjobs:pattern=star"])
def test_bad_parameters(spec):
    with pytest.raises(Exception):
        get_registry().build("workload", spec)


def test_a_tiered_topology_is_refused(runner):
    with pytest.raises(Exception, match="serves pool demands but workload 'vmjobs' makes job"):
        runner.resolve("random", "tiered:8,1x4", "vmjobs")


@pytest.mark.parametrize(("allocator", "topology", "workload"), [
    ("jcb", "ocs:4,servers=4", "vmjobs:load=6,warmup=5"),
    ("tetris", "tiered:8,1x4", "uniform"),
])
def test_a_short_run_is_the_first_part_of_a_longer_one_of_the_same_seed(runner, allocator, topology, workload):
    short = runner.run(allocator, topology, workload, requests=60, seed=2).tables.requests
    long = runner.run(allocator, topology, workload, requests=150, seed=2).tables.requests
    assert set(long["outcome"][60:].tolist()) != {"skipped"}
    for column, values in short.items():
        values, longer = np.asarray(values), np.asarray(long[column][:60])
        if column == "departure_time":  # the short run ends before some of its requests depart
            longer = np.where(np.isnan(values), np.nan, longer)
        assert np.array_equal(values, longer, equal_nan=values.dtype.kind == "f"), column
