"""CCF, JCB, and the pool heuristics on jobs."""

import numpy as np
import pytest
from click.testing import CliRunner

from dcbench import State
from dcbench.commands import cli
from dcbench.plugins.allocators.ccf import CCFAllocator
from dcbench.plugins.allocators.jcb import JCBAllocator
from tests.core.engine.test_jobs import SMALL_VM, job, ocs


def place(allocator, network, request, state):
    allocator.reset(network, np.random.default_rng(0))
    return allocator.allocate(request, state.read_only())


def test_ccf_fills_the_rack_with_the_most_free_cpu_before_spilling_to_the_next():
    network = ocs("ocs:4,servers=2")
    state = State(network)
    state.free_resources[network.racks == 0, 0] = 8   # rack 0 has the least CPU
    state.free_resources[network.racks == 1, 0] = 8
    state.free_resources[network.racks == 2, 0] = 31  # rack 2: 62 cores, rack 3: 64
    ring = [[k, (k + 1) % 20, 7.0] for k in range(20)]
    result = place(CCFAllocator(), network, job([SMALL_VM] * 20, ring), state)
    racks = network.racks[result.vm_servers].tolist()
    # rack 3 (64 free cores) first, until it holds no more 4-core VMs (16 of them), then rack 2 (62), blind to
    # the ring's traffic
    assert racks == [3] * 16 + [2] * 4


def test_ccf_place_spread_puts_each_vm_on_the_rack_with_the_most_free_cpu():
    network = ocs("ocs:4,servers=2")
    state = State(network)
    state.free_resources[network.racks == 0, 0] = 8   # rack 0 has the least CPU
    state.free_resources[network.racks == 2, 0] = 31  # rack 2 a little less than racks 1 and 3
    result = place(CCFAllocator(place="spread"), network, job([SMALL_VM] * 3, []), state)
    # 64 free on 1 and 3 (a tie, broken at random), 62 on 2: 1 and 3, then 2 (62 > 60); never 0
    racks = network.racks[result.vm_servers].tolist()
    assert sorted(racks[:2]) == [1, 3] and racks[2] == 2


def test_jcb_keeps_a_job_together_and_starts_in_the_emptiest_rack():
    network = ocs("ocs:4,servers=4")
    state = State(network)
    state.free_resources[network.racks == 0] /= 2
    ring = [[k, (k + 1) % 4, 7.0] for k in range(4)]
    result = place(JCBAllocator(), network, job([SMALL_VM] * 4, ring), state)
    assert set(network.racks[result.vm_servers].tolist()) == {1}
    assert result.routes == ()


def test_jcb_spills_to_a_rack_whose_direct_circuits_have_room():
    network = ocs("ocs:3,servers=1,ports=2")
    state = State(network)
    # rack 0 can take one more VM; 0<->1 circuits are full, 0<->2 free
    state.free_resources[0] = [4, 15, 80]
    for a, b in ((0, 1), (1, 0)):
        state.free_links[network.link_between(network.rack_node[a], network.rack_node[b])] = 0.0
    state.free_resources[2, 0] = 20  # rack 2 has less CPU than rack 1: only the bandwidth rule picks it

    class FirstOnRackZero(JCBAllocator):
        def choose_rack(self, builder, allowed):
            return 0 if builder.step == 0 else super().choose_rack(builder, allowed)

    result = place(FirstOnRackZero(), network, job([SMALL_VM, SMALL_VM], [[0, 1, 7.0], [1, 0, 7.0]]), state)
    assert network.racks[result.vm_servers].tolist() == [0, 2]


@pytest.mark.parametrize("allocator", ["random", "tetris", "ccf", "ccf:reconfigure=no", "jcb"])
def test_every_job_allocator_serves_a_small_ocs_run(runner, allocator):
    result = runner.run(allocator, "ocs:4,servers=4", "vmjobs:load=20,warmup=20,min_gbps=15,max_gbps=30",
                        requests=150, seed=2)
    assert result.summary["invalid_allocations"] == 0
    assert 0 < result.summary["blocking_probability"] < 1
    if "reconfigure=no" in allocator:
        assert result.summary["reconfigurations_per_job"] == 0


def test_reconfiguration_lowers_ccf_blocking_on_the_papers_network(runner):
    spec = "vmjobs:load=54,warmup=100"
    fixed = runner.run("ccf:reconfigure=no,place=spread", "ocs:16", spec, requests=600, seed=0).summary
    flexible = runner.run("ccf:place=spread", "ocs:16", spec, requests=600, seed=0).summary
    assert flexible["reconfigurations_per_job"] > 0
    assert flexible["blocking_probability"] < fixed["blocking_probability"]


@pytest.mark.parametrize("args, fragment", [
    (["--allocator", "nalb", "--topology", "ocs:4"],
     "allocators for job demands: a2c_multistep, ccf, jcb, policy, random, tetris"),
    (["--allocator", "ccf", "--topology", "tiered:8,1x4"], "serves job demands but workload 'uniform'"),
    (["--allocator", "ccf", "--topology", "ocs:4", "--workload", "uniform"], "use its default workload 'vmjobs'"),
])
def test_the_cli_refuses_a_demand_kind_an_allocator_or_topology_cannot_serve(tmp_path, args, fragment):
    result = CliRunner().invoke(cli, ["run", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert fragment in result.output and "Traceback" not in result.output
    assert not any(tmp_path.iterdir())


def test_list_says_which_demands_each_allocator_serves():
    output = CliRunner().invoke(cli, ["list", "allocators"]).output
    assert "serves: job" in output and "serves: pool, job" in output


def jcb_as_written(builder, allowed):
    """JCB's rule straight from its docstring: every key for every rack, then the lexicographic order."""
    shortfall = np.zeros(builder.n_racks)
    added = np.zeros(builder.n_racks)
    for other, rate, out in builder.partners():
        added += rate
        added[other] -= rate
        bundle = builder.free_links[builder.rack_link]
        room = bundle[:, other] - builder.pending[:, other] if out else bundle[other, :] - builder.pending[other, :]
        short = np.maximum(0.0, rate - room)
        short[other] = 0.0
        shortfall += short
    balance = ((builder.rack_free - builder.vm) / builder.rack_capacity).min(axis=1)
    return int(np.lexsort((-balance, np.round(added, 9), np.round(shortfall, 9), ~allowed))[0])


@pytest.mark.parametrize("topology, load", [("ocs:8,servers=4", 30), ("ocs:16,servers=2", 40)])
def test_jcb_chooses_as_its_rule_is_written_at_every_vm(topology, load):
    # jcb takes short cuts (a job's first VM, a VM whose only partner's rack has room): none may change a choice.
    from dcbench.harness import Runner

    checked = []

    class Checked(JCBAllocator):
        def choose_rack(self, builder, allowed):
            chosen = super().choose_rack(builder, allowed)
            assert chosen == jcb_as_written(builder, allowed)
            checked.append(len(builder.partners()))
            return chosen

    runner = Runner()
    plan = runner.resolve("jcb", topology, f"vmjobs:load={load},warmup=5", 150)
    sequence = plan.workload_model.generate(plan.network, 150, np.random.default_rng(3))
    from dcbench.engine.simulation import simulate

    simulate(plan.network, sequence, Checked(), np.random.default_rng(0))
    assert len(checked) > 500 and {0, 1, 2} <= set(checked)  # the three paths were taken
