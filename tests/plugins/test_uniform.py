import numpy as np
import pytest

from dcbench import SpecError
from dcbench.plugins.workloads.uniform import default_holding
from tests.conftest import tiered


def generate(registry, spec, network, n=4000, seed=0):
    return registry.build("workload", spec).obj.generate(network, n, np.random.default_rng(seed))


def test_papers_distribution(registry, small_network):
    seq = generate(registry, "uniform", small_network)
    cpu, mem = seq.demand[:, 0], seq.demand[:, 1]
    assert cpu.min() == 1 and cpu.max() == 128 and mem.min() == 1 and mem.max() == 128
    assert abs(cpu.mean() - 64.5) < 3 and abs(np.corrcoef(cpu, mem)[0, 1]) < 0.05
    assert seq.holding.min() == 1 and seq.holding.max() == 30
    assert (seq.gaps == 1).all() and seq.wait_until_fits and seq.connectivity == "reference"  # the suites' rule


def test_holding_time_scales_with_the_servers(registry):
    assert default_holding(64) == 30 and default_holding(1024) == 480
    seq = generate(registry, "uniform", tiered("tiered:8,1x4,pods=8,racks=8"))
    assert seq.holding.max() == 480


def test_keywords_override(registry, small_network):
    seq = generate(registry, "uniform:max_cpu=16,max_mem=8,hold=3,wait=no,pairs=reference", small_network)
    assert seq.demand[:, 0].max() == 16 and seq.demand[:, 1].max() == 8 and seq.holding.max() == 3
    assert not seq.wait_until_fits and seq.connectivity == "reference"


def test_inconsistent_bounds(registry):
    with pytest.raises(SpecError, match="must not exceed"):
        registry.build("workload", "uniform:min_cpu=10,max_cpu=5")


def test_a_plain_run_uses_the_rule_of_the_suites_and_the_shipped_checkpoints(runner, registry):
    from dcbench.plugins.topologies.tiered import nara2022_scenarios

    plain = runner.resolve("gnn_ppo", "tiered:32,1x4").workload
    suite = runner.resolve("gnn_ppo", "tiered:32,1x4", nara2022_scenarios()[0].workload).workload
    assert plain == suite and plain.endswith("pairs=reference")
