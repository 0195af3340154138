import numpy as np
import pytest

from dcbench import Circuits, Network, SpecError
from dcbench.harness import get_registry
from dcbench.plugins.topologies.ocs import initial_circuits


def compile_(spec):
    return Network.compile(get_registry().build("topology", spec).obj)


def circuit_matrix(network):
    tors = network.n_racks
    matrix = np.zeros((tors, tors))
    rack_of = {int(n): r for r, n in enumerate(network.rack_node.tolist())}
    for link, (a, b) in enumerate(network.link_ends.tolist()):
        matrix[rack_of[a], rack_of[b]] = network.link_capacity[link] / network.circuits.port_gbps
    return matrix


def test_the_papers_16_tor_network_is_all_to_all():
    network = compile_("ocs:16")
    assert network.n_servers == 16 * 32 and network.n_racks == 16
    assert network.resources == ("cpu", "mem", "disk")
    assert network.server_capacity[0].tolist() == [32, 256, 3584]
    assert network.directed and network.link_unit == "Gbps" and network.demand_kinds == ("job",)
    circuits = circuit_matrix(network)
    off_diagonal = ~np.eye(16, dtype=bool)
    assert (circuits[off_diagonal] == 1).all()
    assert network.link_capacity.max() == 40.0
    assert network.circuits == Circuits(ports=15, port_gbps=40.0, reconfigurable=True, max_hops=1, fixed_gbps=40.0)
    assert network.default_workload == "vmjobs"


@pytest.mark.parametrize("tors, ports", [(32, 15), (64, 15), (8, 15), (5, 2)])
def test_every_port_is_used_and_the_spread_is_even(tors, ports):
    circuits = initial_circuits(tors, ports)
    assert circuits.sum(axis=1).tolist() == [ports] * tors
    assert circuits.sum(axis=0).tolist() == [ports] * tors
    assert np.diagonal(circuits).sum() == 0
    per_pair = circuits[~np.eye(tors, dtype=bool)]
    # as even as possible: pairs differ by at most one circuit when ports >= tors - 1
    if ports >= tors - 1:
        assert per_pair.max() - per_pair.min() <= 1
    else:
        assert per_pair.max() == 1


def test_scaled_networks_and_parameters():
    network = compile_("ocs:32,servers=64,ports=15,port_gbps=100,reconfigurable=no,fixed=circuits")
    assert network.n_servers == 32 * 64
    assert network.circuits == Circuits(ports=15, port_gbps=100.0, reconfigurable=False, max_hops=1)
    assert network.link_capacity.max() == 100.0
    assert compile_("ocs:8,max_hops=2").circuits.max_hops == 2
    assert network.racks.tolist()[:65] == [0] * 64 + [1]


@pytest.mark.parametrize("tors", [16, 32, 64])
def test_without_reconfiguration_every_tor_pair_gets_an_equal_share_of_the_ports(tors):
    # The paper's ALL2ALL: the same 15 ports of 40 Gbps, wavelength-routed to every other ToR.
    share = 15 * 40.0 / (tors - 1)
    odcn = compile_(f"ocs:{tors},servers=2")
    assert odcn.circuits.fixed_gbps == share
    for fixed in (odcn.fixed_fabric(), compile_(f"ocs:{tors},servers=2,reconfigurable=no")):
        matrix = circuit_matrix(fixed) * 40.0
        assert np.allclose(matrix[~np.eye(tors, dtype=bool)], share)
        assert not fixed.circuits.reconfigurable
        assert matrix.sum(axis=1) == pytest.approx(np.full(tors, 600.0))  # every ToR keeps its 600 Gbps
    kept = compile_(f"ocs:{tors},servers=2,fixed=circuits")
    assert kept.fixed_fabric() is kept and kept.circuits.fixed_gbps is None


def test_a_policy_that_does_not_reconfigure_runs_on_the_fixed_all_to_all(runner):
    # At 32 ToRs the circulant reaches 15 of the other 31 racks; the all-to-all reaches every one.
    spread = "ccf:place=spread,reconfigure=no"
    on_all2all = runner.run(spread, "ocs:32,servers=4", "vmjobs:load=10,warmup=10", requests=200, seed=1).summary
    on_circuits = runner.run(spread, "ocs:32,servers=4,fixed=circuits", "vmjobs:load=10,warmup=10", requests=200,
                             seed=1).summary
    assert on_circuits["blocking_probability"] == 1.0
    assert on_all2all["blocking_probability"] < 0.5
    plan = runner.resolve("ccf:reconfigure=no", "ocs:32,servers=4")
    assert not plan.network.circuits.reconfigurable and plan.network.link_capacity.max() == pytest.approx(600 / 31)
    assert runner.resolve("ccf", "ocs:32,servers=4").network.link_capacity.max() == 40.0


@pytest.mark.parametrize("spec, fragment", [
    ("ocs:1", "tors='1' must be at least 2 and at most 2048"), ("ocs:4096", "tors='4096' must be at most 2048"),
    ("ocs:16,ports=0", "ports"), ("ocs:16,reconfigurable=maybe", "yes or no"),
    ("ocs:16,max_hops=3", "max_hops"), ("ocs:16,fixed=ring", "fixed='ring' is not one of all2all, circuits"),
    ("ocs:16,ports=5000", "ports='5000' must be at most 4096"),
    ("ocs:16,port_gbps=inf", "port_gbps='inf' is not a finite number"),
    ("ocs:16,port_gbps=1e-20", "port_gbps='1e-20' must be at least 0.001"),  # every port looked idle: a hang
    ("ocs:16,disk=1e308", "disk='1e308' must be at most 1000000000000000"),  # sums of capacities overflowed
    ("ocs:16,cpu=1e16", "cpu='1e16' must be at most 1000000000000000"),
])
def test_bad_parameters_are_named(spec, fragment):
    with pytest.raises(SpecError, match=fragment):
        get_registry().build("topology", spec)


def test_a_network_too_large_to_build_is_refused_before_building():
    # A billion servers would hang in the graph construction; the bound names what to change.
    with pytest.raises(SpecError, match=r"tors × servers come to 2,048,000,000,000 servers, more than the "
                                        r"1,048,576 an ocs network may have; give fewer ToRs or servers per ToR"):
        get_registry().build("topology", "ocs:2048,servers=1000000000")


def test_jobs_only(runner):
    with pytest.raises(Exception, match="serves job demands but workload 'uniform' makes pool"):
        runner.resolve("random", "ocs:4", "uniform")


def test_what_the_circuits_say_is_typed_and_not_repeated_in_info():
    info = compile_("ocs:16").info
    assert not {"ports", "port_gbps", "reconfigurable", "max_hops"} & set(info)
