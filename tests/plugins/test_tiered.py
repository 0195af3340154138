import networkx as nx
import numpy as np
import pytest

from dcbench import Network, SpecError
from dcbench.plugins.topologies.tiered import RATIOS, ratio_label


def build(registry, spec):
    return registry.build("topology", spec).obj


def hand_built(pods, racks, servers, cores_per_plane):
    """The reference structure, written out independently of the plugin."""
    graph = nx.Graph()
    for p in range(pods):
        for r in range(racks):
            rack = ("rack", p, r)
            for s in range(servers):
                graph.add_edge(("server", p, r, s), rack, tier=1)
            graph.add_edge(rack, ("agg", p, 0), tier=2)
            graph.add_edge(rack, ("agg", p, 1), tier=2)
        for plane in range(2):
            for c in range(cores_per_plane):
                graph.add_edge(("agg", p, plane), ("core", plane, c), tier=3)
    return graph


@pytest.mark.parametrize("spec, pods, racks, counts", [
    # (servers, racks, aggregation, core, SR, RA, AC)
    ("tiered:8,1x4", 2, 2, (64, 4, 4, 2, 64, 8, 4)),
    ("tiered:8,1x4,pods=8,racks=8", 8, 8, (1024, 64, 16, 8, 1024, 128, 64)),
])
def test_structure_matches_the_reference_counts(registry, spec, pods, racks, counts):
    topology = build(registry, spec)
    graph = topology.graph
    prefixes = ("Resource", "Rack", "Aggregate", "Core")
    kinds = {prefix: sum(1 for n in graph if n.startswith(prefix)) for prefix in prefixes}
    tiers = [sum(1 for *_, d in graph.edges(data=True) if d["tier"] == t) for t in (1, 2, 3)]
    assert (kinds["Resource"], kinds["Rack"], kinds["Aggregate"], kinds["Core"], *tiers) == counts
    assert len(topology.servers) == counts[0]
    expected = hand_built(pods, racks, 16, max(1, racks // 2))
    matcher = nx.algorithms.isomorphism.numerical_edge_match("tier", 0)
    assert nx.is_isomorphic(graph, expected, edge_match=matcher)


def test_a_miswired_graph_is_not_isomorphic(registry):
    # The isomorphism check above can fail: one core link moved breaks it.
    expected = hand_built(2, 2, 16, 1)
    expected.remove_edge(("agg", 0, 0), ("core", 0, 0))
    expected.add_edge(("agg", 0, 0), ("core", 1, 0), tier=3)
    matcher = nx.algorithms.isomorphism.numerical_edge_match("tier", 0)
    assert not nx.is_isomorphic(build(registry, "tiered:8,1x4").graph, expected, edge_match=matcher)


@pytest.mark.parametrize("pods, racks", [(2, 2), (8, 8)])
def test_every_switch_lists_its_neighbours_in_the_reference_graphs_order(registry, pods, racks):
    # The reference's walks expand a switch's neighbours in its graph's order: an aggregation switch's
    # racks, then its cores; a rack switch's two aggregation switches, then its servers; a core's
    # aggregation switches pod by pod.
    graph = build(registry, f"tiered:8,1x4,pods={pods},racks={racks}").graph
    cores = max(1, racks // 2)
    for pod in range(pods):
        for plane in range(2):
            assert list(graph.neighbors(f"Aggregate_{2 * pod + plane}")) == [
                *(f"Rack_{pod * racks + r}" for r in range(racks)),
                *(f"Core_{plane * cores + c}" for c in range(cores))]
        for r in range(pod * racks, (pod + 1) * racks):
            assert list(graph.neighbors(f"Rack_{r}")) == [
                f"Aggregate_{2 * pod}", f"Aggregate_{2 * pod + 1}", *(f"Resource_{16 * r + s}" for s in range(16))]
    for core in range(2 * cores):
        plane = core // cores
        assert list(graph.neighbors(f"Core_{core}")) == [f"Aggregate_{2 * pod + plane}" for pod in range(pods)]


@pytest.mark.parametrize("n", [8, 16, 32])
@pytest.mark.parametrize("ratio", list(RATIOS))
def test_channels_per_tier(registry, n, ratio):
    topology = build(registry, f"tiered:{n},{ratio}")
    m0, m1 = RATIOS[ratio]
    by_tier = {t: {d["capacity"] for *_, d in topology.graph.edges(data=True) if d["tier"] == t} for t in (1, 2, 3)}
    assert by_tier == {1: {n}, 2: {m0 * n}, 3: {m1 * n}}
    assert topology.info["ratio"] == ratio


def test_ratio_label_follows_the_papers_formula():
    assert ratio_label(8, 16, 4) == "1x16"
    assert ratio_label(32, 256, 256) == "1x1"


def test_explicit_channel_form(registry):
    topology = build(registry, "tiered:sr=8,ra=16,ac=4")
    assert topology.info["ratio"] == "1x16"
    assert {d["capacity"] for *_, d in topology.graph.edges(data=True)} == {8, 16, 4}


def test_server_capacity_and_labels(registry):
    network = Network.compile(build(registry, "tiered:8,1x4,cpu=32,mem=64"))
    assert network.resources == ("cpu", "mem")
    assert np.all(network.server_capacity == [32, 64])
    assert list(np.bincount(network.racks)) == [16] * 4
    assert list(np.bincount(network.pods)) == [32, 32]
    assert network.tiers == (1, 2, 3)


@pytest.mark.parametrize("spec, fragment", [
    ("tiered:8,1x3", "not one of 1x1, 1x4, 1x8, 1x16"),
    ("tiered:0,1x4", "at least 1"),
    ("tiered:sr=8,ra=16", "all three"),
    ("tiered:8,1x4,sr=8,ra=16,ac=4", "not both"),
    ("tiered:1,1x16", "whole number"),
    ("tiered:8,1x4,pods=0", "at least 1"),
    ("tiered:8,1x4,pods=1000,racks=1000", "come to 16,000,000 servers, more than the 1,048,576 a tiered fabric"),
    ("tiered:8,1x4,cpu=10000000000000000", "cpu='10000000000000000' must be at most 1000000000000000"),
    ("tiered:999999999999999999", "channels='999999999999999999' must be at most 125000000000000"),  # AC: 8 times
    ("tiered:sr=1e300,ra=1,ac=1", "sr='1e300' must be at most 1000000000000000"),
])
def test_bad_parameters(registry, spec, fragment):
    with pytest.raises(SpecError, match=fragment):
        registry.build("topology", spec)


def test_plain_tiered_is_the_papers_32_channel_1x4_fabric_and_the_same_run(runner):
    plain, explicit = runner.resolve("tetris", "tiered"), runner.resolve("tetris", "tiered:32,1x4")
    assert plain.topology == explicit.topology == "tiered:channels=32,ratio=1x4,pods=2,racks=2,servers=16,cpu=16,mem=16"
    assert runner.run("tetris", "tiered", requests=8).run_id == runner.run("tetris", "tiered:32,1x4", requests=8).run_id


def test_explicit_channels_take_the_place_of_channels_and_ratio(registry):
    topology = registry.build("topology", "tiered:sr=8,ra=32,ac=16").obj
    assert (topology.info["sr"], topology.info["ra"], topology.info["ac"]) == (8, 32, 16)
    with pytest.raises(SpecError, match="not both"):
        registry.build("topology", "tiered:16,1x4,sr=8,ra=32,ac=16")
