import dataclasses
import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcbench import Circuits, Network, SpecError, Topology
from tests.conftest import tiered


def path_nodes(network, start, links):
    nodes = [start]
    for link in links:
        a, b = network.link_ends[link]
        nodes.append(int(b) if nodes[-1] == a else int(a))
    return nodes


def test_server_paths_are_the_k_shortest_by_hop_count(small_network):
    network = small_network
    graph = nx.Graph([tuple(e) for e in network.link_ends])
    for a, b in [(0, 1), (0, 17), (0, 40), (63, 5)]:
        paths = network.paths.between_servers(a, b)
        expected = [len(p) - 1 for p in itertools.islice(nx.shortest_simple_paths(graph, a, b), 3)]
        assert [len(p) for p in paths] == expected
        for links in paths:
            nodes = path_nodes(network, a, links)
            assert nodes[-1] == b and len(set(nodes)) == len(nodes)


def test_same_rack_has_one_path_through_the_rack_switch(small_network):
    paths = small_network.paths.between_servers(0, 1)
    assert len(paths) == 1 and len(paths[0]) == 2


def test_paths_are_symmetric(small_network):
    forward = small_network.paths.between_servers(3, 50)
    backward = small_network.paths.between_servers(50, 3)
    assert [p[::-1] for p in forward] == list(backward)


def test_large_topology_paths():
    network = tiered("tiered:8,1x4,pods=8,racks=8")
    same_pod = network.paths.between_servers(0, 16)  # racks 0 and 1 of pod 0
    assert [len(p) for p in same_pod] == [4, 4, 6]
    cross_pod = network.paths.between_servers(0, 1023)
    assert [len(p) for p in cross_pod] == [6, 6, 6]


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=6, max_value=14), st.integers(min_value=0, max_value=10_000))
def test_matches_networkx_on_random_graphs(n_nodes, seed):
    graph = nx.connected_watts_strogatz_graph(n_nodes, 4, 0.3, seed=seed)
    for a, b in graph.edges:
        graph.edges[a, b].update(capacity=1, tier=1)
    topology = Topology(graph=graph, servers=list(graph.nodes), resources=("cpu",),
                        capacity=np.ones((n_nodes, 1)), racks=np.arange(n_nodes), pods=np.zeros(n_nodes, int))
    network = Network.compile(topology, k_paths=3)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        a, b = (int(x) for x in rng.choice(n_nodes, 2, replace=False))
        ours = network.paths.between_servers(a, b)
        theirs = list(itertools.islice(nx.shortest_simple_paths(graph, a, b), 3))
        assert [len(p) for p in ours] == [len(p) - 1 for p in theirs]
        assert len({p for p in ours}) == len(ours)
        for links in ours:
            nodes = path_nodes(network, a, links)
            assert nodes[-1] == b and len(set(nodes)) == len(nodes)


def test_path_ends(small_network):
    links = small_network.paths.between_servers(0, 40)[0]
    assert small_network.path_ends(links) in {(0, 40), (40, 0)}
    assert small_network.path_ends((links[0], links[-1])) is None
    assert small_network.path_ends((10**6,)) is None
    assert small_network.path_ends(()) is None


def broken(change):
    from dcbench.plugins.topologies.tiered import build

    topology = build(channels=8, ratio="1x4")
    return change(topology) or topology


@pytest.mark.parametrize("change, problem", [
    (lambda t: dataclasses.replace(t, servers=[], capacity=np.zeros((0, 2)), racks=[], pods=[]), "has no servers"),
    (lambda t: dataclasses.replace(t, servers=[t.servers[0], *t.servers[:-1]]), "lists a server twice"),
    (lambda t: dataclasses.replace(t, servers=["nowhere", *t.servers[1:]]), "server 'nowhere' is not a node"),
    (lambda t: t.capacity.__setitem__((3, 0), np.nan), "has a server capacity that is negative or not finite"),
    (lambda t: t.capacity.__setitem__((3, 1), -1.0), "has a server capacity that is negative or not finite"),
    (lambda t: dataclasses.replace(t, racks=np.asarray(t.racks, float)), "racks must give each of the 64 servers"),
    (lambda t: dataclasses.replace(t, pods=t.pods[:-1]), "pods must give each of the 64 servers"),
    (lambda t: next(iter(t.graph.edges(data=True)))[2].__setitem__("capacity", -8), "has a link whose capacity"),
])
def test_a_topology_that_cannot_be_simulated_is_refused_when_compiled(change, problem):
    with pytest.raises(SpecError, match=f"topology {problem}"):
        Network.compile(broken(change))


@pytest.mark.parametrize("change, problem", [
    (lambda t: t.capacity.__setitem__((3, 0), 1e308), "has a server capacity of 1e+308"),
    (lambda t: t.capacity.__setitem__((3, 1), 2e15), "has a server capacity of 2000000000000000.0"),
    (lambda t: next(iter(t.graph.edges(data=True)))[2].__setitem__("capacity", 1e300), "has a link of capacity 1e+300"),
])
def test_a_capacity_whose_sums_could_overflow_is_refused_with_the_range(change, problem):
    from dcbench.model.network import MAX_CAPACITY

    with pytest.raises(SpecError) as refused:  # a third party's topology: no parameter of its bounded it
        Network.compile(broken(change))
    assert str(refused.value) == f"topology {problem}; a capacity is a number from 0 to 1e+15"
    at_most = broken(lambda t: t.capacity.fill(MAX_CAPACITY))
    for _, _, link in at_most.graph.edges(data=True):
        link["capacity"] = MAX_CAPACITY
    with np.errstate(over="raise"):
        network = Network.compile(at_most)  # the largest of each, and sums of a million of them, are fine
        assert np.isfinite(network.server_capacity.sum() * 1e6) and np.isfinite(network.link_capacity.sum() * 1e6)


def test_a_compiled_network_cannot_be_changed_by_those_that_share_it(small_network):
    for name in ("server_capacity", "racks", "pods", "link_ends", "link_capacity", "link_tier", "server_link",
                 "server_attachment"):
        array = getattr(small_network, name)
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag"):
            array.flags.writeable = True  # as a read-only array that owns its memory would allow


def test_a_path_of_non_integer_links_is_none_and_does_not_stand_for_the_real_one(small_network):
    real = small_network.paths.between_servers(0, 20)[0]
    as_floats = tuple(float(link) for link in real)
    assert as_floats == real  # what a cache keyed on the tuple's value would confuse
    for first, second in ((as_floats, real), (real, as_floats)):
        small_network.path_ends_cache.clear()
        small_network.path_ends_by_id.clear()
        ends = {id(links): small_network.path_ends(links) for links in (first, second)}
        assert ends[id(real)] in ((0, 20), (20, 0)) and ends[id(as_floats)] is None
    assert small_network.path_ends((True, real[1])) is None


def optical(**changes):
    from dcbench.plugins.topologies.ocs import build

    return dataclasses.replace(build(tors=4, servers=2), **changes)


def test_the_circuits_of_a_topology_are_its_networks_and_cannot_be_changed():
    circuits = Circuits(ports=3, port_gbps=25.0, reconfigurable=False, max_hops=2)
    network = Network.compile(optical(circuits=circuits))
    assert network.circuits is circuits and network.private_copy().circuits is circuits
    with pytest.raises(AttributeError, match="read-only"):
        network.circuits = Circuits(ports=3, port_gbps=25.0, reconfigurable=True, max_hops=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        network.circuits.reconfigurable = True
    assert Network.compile(optical(circuits=None)).circuits is None
    assert tiered().circuits is None


def test_a_topology_names_no_default_workload_unless_it_says_so():
    graph = nx.path_graph(3)
    nx.set_edge_attributes(graph, 1, "capacity")
    topology = Topology(graph=graph, servers=[0, 2], resources=("cpu",), capacity=np.ones((2, 1)),
                        racks=np.arange(2), pods=np.zeros(2, int))
    assert topology.default_workload is None and Network.compile(topology).default_workload is None


@pytest.mark.parametrize("circuits, problem", [
    (Circuits(ports=0, port_gbps=40.0, reconfigurable=True, max_hops=1), "has circuits.ports=0; it must be an integer"),
    (Circuits(ports=15, port_gbps=40.0, reconfigurable=True, max_hops=1.5), "has circuits.max_hops=1.5; it must"),
    (Circuits(ports=15, port_gbps=0.0, reconfigurable=True, max_hops=1), "has circuits.port_gbps=0.0; it must be"),
    (Circuits(ports=15, port_gbps=np.inf, reconfigurable=True, max_hops=1), "has circuits.port_gbps=inf; it must"),
    (Circuits(ports=15, port_gbps=40.0, reconfigurable="no", max_hops=1), "has circuits.reconfigurable='no'; it"),
    ({"ports": 15, "port_gbps": 40.0}, "has circuits of type dict; they must be a dcbench.Circuits"),
])
def test_circuits_that_cannot_be_simulated_are_refused_when_compiled(circuits, problem):
    with pytest.raises(SpecError, match=f"topology {problem}"):
        Network.compile(optical(circuits=circuits))


def test_circuits_need_the_rack_switches_they_join():
    circuits = Circuits(ports=15, port_gbps=40.0, reconfigurable=True, max_hops=1)
    with pytest.raises(SpecError, match="topology has circuits but no rack_nodes for them to join"):
        Network.compile(broken(lambda t: dataclasses.replace(t, circuits=circuits)))


def test_private_copies_read_the_paths_earlier_copies_were_asked_for_as_the_network_finds_them(small_network):
    first = small_network.private_copy()
    asked = {(a, b): first.paths.between_servers(a, b) for a, b in ((0, 20), (5, 1), (31, 2))}
    by_nodes = first.catalogue(5).between_nodes(64, 70)
    first.paths.server_pair_cache[3 * small_network.n_servers + 4] = ((0,),)  # poisoned: never read back
    first.paths._between[(65, 66)] = ((),)
    small_network.learn_paths(first)
    later = small_network.private_copy()
    fresh = tiered("tiered:8,1x4")
    for (a, b), paths in asked.items():
        assert later.paths.between_servers(a, b) == paths == fresh.paths.between_servers(a, b)
        assert later.paths.between_servers(a, b) is small_network.paths.between_servers(a, b)  # not searched again
    assert later.catalogue(5).between_nodes(64, 70) == by_nodes == fresh.catalogue(5).between_nodes(64, 70)
    assert later.paths.between_servers(3, 4) == fresh.paths.between_servers(3, 4) != ((0,),)
    assert later.paths.between_nodes(65, 66) == fresh.paths.between_nodes(65, 66) != ((),)
    with pytest.raises(TypeError):  # a copy reads what the network found, and cannot write it
        later.paths._shared_pairs[0] = ((0,),)


def test_a_network_above_the_shared_size_learns_no_paths(small_network, monkeypatch):
    from dcbench.model import network

    monkeypatch.setattr(network, "SHARED_PATHS_UP_TO", small_network.n_servers - 1)
    copy = small_network.private_copy()
    copy.paths.between_servers(0, 20)
    small_network.learn_paths(copy)
    assert not small_network.paths.server_pair_cache and not small_network.private_copy().paths._shared_pairs
