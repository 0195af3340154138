"""Equal inputs (#31, point 3): the static graph of the observations in
pool and job mode, and the per-server hint features, the shipped gnn_ppo's,
as an optional part of the observation."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dcbench.envs  # noqa: F401  (registers the environments)
from dcbench import SpecError
from dcbench.envs import HINT_FEATURES, NODE_KINDS, AllocationEnv, PoolHints
from dcbench.plugins.allocators._fit import own_link_free, tightest_completing
from dcbench.plugins.allocators.bestfit import BestFitAllocator

JOBS = {"topology": "ocs:4,servers=4", "workload": "vmjobs:load=12,warmup=5", "requests": 30}


def test_the_pool_graph_is_the_networks_nodes_and_each_link_both_ways():
    env = AllocationEnv("tiered:8,1x4", requests=8)
    graph = env.graph
    network = env.network
    assert graph.edge_index.shape == (2, 2 * network.n_links) and graph.edge_index.dtype == np.int64
    assert np.array_equal(graph.edge_index, env.features.edge_index) and not graph.directed
    assert graph.n_nodes == network.n_nodes == env.observation_space["node_features"].shape[0]
    assert graph.n_edges == env.observation_space["edge_features"].shape[0]
    kinds = np.array(NODE_KINDS)[graph.node_kind]
    assert (kinds[: network.n_servers] == "server").all() and (kinds[network.n_servers:] == "switch").all()
    for j in (0, network.n_links, 2 * network.n_links - 1):  # edge j is link edge_link[j], one way or the other
        assert sorted(graph.edge_index[:, j]) == sorted(network.link_ends[graph.edge_link[j]])
    graph.edge_index[0, 0] = -5  # the graph is the caller's copy: the features' own stays
    assert env.features.edge_index[0, 0] != -5


def test_the_job_graph_is_the_racks_and_each_circuit_bundle_one_way():
    env = AllocationEnv(**JOBS)
    graph = env.graph
    assert graph.directed and graph.n_nodes == env.network.n_racks == 4
    assert graph.n_edges == env.network.n_links == env.observation_space["edge_features"].shape[0]
    assert (np.array(NODE_KINDS)[graph.node_kind] == "rack").all()
    assert np.array_equal(graph.network_node, env.network.rack_node)
    for link in range(env.network.n_links):  # the builder's rack_link[u, v] is the link from rack u to rack v
        u, v = graph.edge_index[:, link]
        assert env.builder.rack_link[u, v] == link
    env.reset(seed=0)
    assert gymnasium.make("dcbench/odcn2025-16x32-load54-v0", requests=4).unwrapped.graph.n_nodes == 16


def reference_hints(network, count, sixth, builder, n_nodes):
    """gnn_ppo's ServerHints as they were before they moved to dcbench.envs.PoolHints (0.3.3)."""
    n = network.n_servers
    has_link = network.server_link >= 0
    links = np.where(has_link, network.server_link, 0)
    link_capacity = network.link_capacity[links]
    extra = np.zeros((n_nodes, count), dtype=np.float32)
    if builder.request is None:
        return extra
    link_free = np.where(has_link, builder.free_links[links], 0.0)
    extra[:n, 0] = link_free / link_capacity
    if builder.chosen:
        first, last = builder.chosen[0], builder.chosen[-1]
        extra[:n, 1] = network.racks == network.racks[first]
        extra[:n, 2] = network.pods == network.pods[first]
        extra[:n, 3] = network.racks == network.racks[last]
    score = builder.free_resources @ (builder.request.demand / 100.0) + link_free
    allowed = builder.allowed()
    top = score[allowed].max() if allowed.any() else 0.0
    extra[:n, 4] = score / top if top > 0 else 0.0
    if count > 5 and allowed.any():
        if sixth == "bestfit":
            bestfit = BestFitAllocator()
            bestfit.reset(network, np.random.default_rng(0))
            candidates = np.flatnonzero(allowed)
            ranked = candidates[np.argsort(-bestfit.preference(builder, allowed)[candidates], kind="stable")]
        else:
            own_link = own_link_free(builder, links, has_link, np.empty(n))
            ranked = tightest_completing(builder, allowed, own_link, network.racks)
        extra[ranked, 5] = 1.0 - np.arange(len(ranked)) / max(len(ranked), 1)
    return extra


@pytest.mark.parametrize("topology", ["tiered:8,1x4", "tiered:16,1x16", "tiered:32,1x1"])
def test_the_hint_features_are_bit_for_bit_those_gnn_ppo_computed(topology):
    env = AllocationEnv(topology, requests=40, hints=True)
    network = env.network
    rng = np.random.default_rng(1)
    observation, _ = env.reset(seed=3)
    steps = 0
    done = False
    while not done:
        hints = observation["hint_features"]
        assert env.observation_space.contains(observation)
        for names, count, sixth in ((HINT_FEATURES[:5], 5, "bestfit"),
                                    (HINT_FEATURES[:5] + ("best_fit_rank",), 6, "bestfit"),
                                    (HINT_FEATURES[:5] + ("fit_last_rank",), 6, "fit_last")):
            columns = [HINT_FEATURES.index(name) for name in names]
            expected = reference_hints(network, count, sixth, env.builder, network.n_nodes)
            assert np.array_equal(hints[:, columns], expected)
            assert np.array_equal(PoolHints(network, names).compute(env.builder), expected)
        allowed = np.flatnonzero(env.action_masks())
        observation, _, done, _, _ = env.step(int(allowed[rng.integers(len(allowed))]))
        steps += 1
    assert steps > 40 and (observation["hint_features"] == 0).all()  # no decision at the end: zeros


@pytest.mark.filterwarnings("ignore:.*maximum value is infinity")  # alignment: PoolHints.high
def test_hints_are_optional_named_and_for_pools_only():
    plain = AllocationEnv("tiered:8,1x4", requests=8)
    assert "hint_features" not in plain.observation_space.spaces and plain.hints == ()
    some = gymnasium.make("dcbench/nara2022-8-1x4-v0", hints=["fit_last_rank", "alignment"])
    observation, _ = some.reset(seed=0)
    assert observation["hint_features"].shape == (74, 2) and some.unwrapped.hints == ("fit_last_rank", "alignment")
    high = some.observation_space["hint_features"].high
    assert (high[:, 0] == 1).all() and np.isinf(high[:, 1]).all()  # alignment: outside the mask it may pass 1
    every = gymnasium.make("dcbench/nara2022-8-1x4-v0", hints=True)
    assert every.observation_space["hint_features"].shape == (74, len(HINT_FEATURES))
    check_env(every.unwrapped, skip_render_check=True)
    for hints, message in (("alignment", "hints must be True, False or a sequence of hint names"),
                           (["nalb"], "'nalb' is not a hint feature"),
                           (["alignment", "alignment"], "named twice"), (3, "got a int")):
        with pytest.raises(SpecError, match=message):
            AllocationEnv("tiered:8,1x4", requests=8, hints=hints)
    with pytest.raises(SpecError, match="hints are per-server features of pool steps"):
        AllocationEnv(**JOBS, hints=True)
    AllocationEnv(**JOBS, hints=False)  # (none asked: fine)


def test_gnn_ppo_reads_its_hints_from_the_environments_features():
    from dcbench.plugins.allocators.gnn_ppo.model import GraphPolicy, as_tensors, hint_features, with_self_loops

    assert hint_features(0) == () and hint_features(5) == HINT_FEATURES[:5]
    assert hint_features(6, "fit_last")[-1] == "fit_last_rank" and hint_features(6)[-1] == "best_fit_rank"
    env = AllocationEnv("tiered:8,1x4", requests=8, hints=hint_features(6, "fit_last"))
    observation, _ = env.reset(seed=0)
    nodes = as_tensors({k: v[None] for k, v in observation.items()})[0]
    assert nodes.shape == (1, 74, 11)
    assert np.array_equal(nodes[0, :, 5:].numpy(), observation["hint_features"])
    model = GraphPolicy(extra_features=6, sixth_hint="fit_last")
    logits, _ = model(*as_tensors({k: v[None] for k, v in observation.items()}),
                      with_self_loops(env.graph.edge_index, env.graph.n_nodes))
    assert logits.shape == (1, 64)
