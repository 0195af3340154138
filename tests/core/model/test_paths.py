"""The path catalogue's fast search against a plain search over the whole graph.

`reference_paths` is the catalogue's algorithm before #34 (a breadth-first
search over every node for the distances to the target, then a depth-first
search bounded by them over the whole adjacency): the fast search must give
the same candidate paths, in the same order, on every fabric.
"""

import itertools

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dcbench import Network, Topology
from dcbench.model.network import Path
from dcbench.plugins.topologies import ocs, tiered


def reference_paths(network: Network, source: int, target: int, k: int) -> tuple[Path, ...]:
    """The k shortest simple paths from ``source`` to ``target`` as the
    catalogue found them before #34: whole-graph distances, then a bounded
    depth-first search in node-index order, one path length after another."""
    adjacency = network.adjacency
    degree = np.array([len(n) for n in adjacency])
    transit = degree > 1
    incoming = adjacency
    if network.directed:
        incoming = [[] for _ in range(network.n_nodes)]
        for link, (a, b) in enumerate(network.link_ends.tolist()):
            incoming[b].append((a, link))
    unreached = np.iinfo(np.int64).max // 2
    distance = np.full(network.n_nodes, unreached, dtype=np.int64)
    distance[target] = 0
    frontier = [target]
    while frontier:
        following = []
        for node in frontier:
            for neighbour, _ in incoming[node]:
                if distance[neighbour] > distance[node] + 1 and transit[neighbour]:
                    distance[neighbour] = distance[node] + 1
                    following.append(neighbour)
        frontier = following
    found: list[Path] = []
    if distance[source] >= unreached:
        return ()
    on_path = np.zeros(network.n_nodes, dtype=bool)
    longest = int(transit.sum()) + 1
    budget = int(distance[source])
    links: list[int] = []

    def walk(node: int, remaining: int) -> bool:
        if node == target:
            if remaining == 0:
                found.append(tuple(links))
                return len(found) >= k
            return False
        on_path[node] = True
        for neighbour, link in adjacency[node]:
            if on_path[neighbour] or distance[neighbour] > remaining - 1:
                continue
            if neighbour != target and not transit[neighbour]:
                continue
            links.append(link)
            done = walk(neighbour, remaining - 1)
            links.pop()
            if done:
                on_path[node] = False
                return True
        on_path[node] = False
        return False

    while len(found) < k and budget <= longest:
        if walk(source, budget):
            break
        budget += 1
    return tuple(found)


def reference_server_paths(network: Network, a: int, b: int, k: int) -> tuple[Path, ...]:
    """Server-to-server paths as the catalogue composed them before #34."""
    head, tail = int(network.server_link[a]), int(network.server_link[b])
    start, end = int(network.server_attachment[a]), int(network.server_attachment[b])
    if head >= 0 and tail >= 0 and start == end:
        return ((head, tail),)
    core = ((),) if start == end else _undirected_key(network, start, end, k)
    prefix = (head,) if head >= 0 else ()
    suffix = (tail,) if tail >= 0 else ()
    return tuple(prefix + path + suffix for path in core)


def _undirected_key(network: Network, a: int, b: int, k: int) -> tuple[Path, ...]:
    # The catalogue searches an undirected pair from its lower node and reverses.
    if network.directed or a < b:
        return reference_paths(network, a, b, k)
    return tuple(path[::-1] for path in reference_paths(network, b, a, k))


def assert_same_paths(network: Network, k: int, node_pairs, server_pairs) -> None:
    catalogue = network.catalogue(k)
    for a, b in node_pairs:
        assert catalogue.between_nodes(a, b) == _undirected_key(network, a, b, k), (a, b, k)
    for a, b in server_pairs:
        assert catalogue.between_servers(a, b) == reference_server_paths(network, a, b, k), (a, b, k)


def _sample_pairs(rng: np.random.Generator, low: int, high: int, count: int) -> list[tuple[int, int]]:
    if high - low < 2:
        return []
    pairs = rng.integers(low, high, size=(count, 2)).tolist()
    return [(a, b) for a, b in pairs if a != b]


@settings(max_examples=40, deadline=None)
@given(channels=st.sampled_from([2, 4, 8]), ratio=st.sampled_from(list(tiered.RATIOS)),
       pods=st.integers(1, 5), racks=st.integers(1, 6), servers=st.integers(1, 4),
       k=st.sampled_from([1, 2, 3, 5, 16]), seed=st.integers(0, 2**16))
def test_tiered_paths_match_the_plain_search(channels, ratio, pods, racks, servers, k, seed):
    network = Network.compile(tiered.build(channels, ratio, pods=pods, racks=racks, servers=servers))
    rng = np.random.default_rng(seed)
    switches = range(network.n_servers, network.n_nodes)
    node_pairs = [(a, b) for a, b in itertools.product(switches, switches) if a != b]
    if len(node_pairs) > 150:
        node_pairs = [node_pairs[i] for i in rng.choice(len(node_pairs), 150, replace=False)]
    node_pairs += [(a, a) for a in list(switches)[:2]]
    node_pairs += _sample_pairs(rng, 0, network.n_servers, 5)  # servers (not transit): none
    server_pairs = _sample_pairs(rng, 0, network.n_servers, 40)
    assert_same_paths(network, k, node_pairs, server_pairs)


@settings(max_examples=30, deadline=None)
@given(tors=st.integers(2, 12), servers=st.integers(1, 3), ports=st.integers(1, 12),
       max_hops=st.sampled_from([1, 2]), k=st.sampled_from([1, 3, 8]), seed=st.integers(0, 2**16))
def test_ocs_paths_match_the_plain_search(tors, servers, ports, max_hops, k, seed):
    network = Network.compile(ocs.build(tors, servers=servers, ports=ports, max_hops=max_hops))
    tor_nodes = [int(n) for n in network.rack_node]
    node_pairs = list(itertools.product(tor_nodes, tor_nodes))
    rng = np.random.default_rng(seed)
    server_pairs = _sample_pairs(rng, 0, network.n_servers, 20)
    assert_same_paths(network, k, node_pairs, server_pairs)


@settings(max_examples=40, deadline=None)
@given(n_nodes=st.integers(3, 16), extra=st.integers(0, 20), leaves=st.integers(0, 5),
       directed=st.booleans(), k=st.sampled_from([1, 2, 3, 6]), seed=st.integers(0, 2**16))
def test_random_graphs_match_the_plain_search(n_nodes, extra, leaves, directed, k, seed):
    """Graphs with leaves, cycles, unreachable pairs and one-way links."""
    rng = np.random.default_rng(seed)
    graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_nodes_from(range(n_nodes + leaves))
    for _ in range(n_nodes + extra):
        a, b = rng.integers(0, n_nodes, size=2).tolist()
        if a != b:
            graph.add_edge(a, b, capacity=1.0, tier=1)
    for leaf in range(n_nodes, n_nodes + leaves):
        graph.add_edge(leaf, int(rng.integers(0, n_nodes)), capacity=1.0, tier=1)
    total = n_nodes + leaves
    servers = list(range(n_nodes, total)) + [0]
    topology = Topology(graph=graph, servers=servers, resources=("cpu",), capacity=np.ones((len(servers), 1)),
                        racks=np.arange(len(servers)), pods=np.zeros(len(servers), int))
    network = Network.compile(topology)
    node_pairs = list(itertools.product(range(total), range(total)))
    server_pairs = [(a, b) for a, b in itertools.product(range(len(servers)), repeat=2) if a != b]
    assert_same_paths(network, k, node_pairs, server_pairs)
