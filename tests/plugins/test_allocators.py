import numpy as np
import pytest

from dcbench import Request, SpecError, State
from dcbench.plugins.allocators.random_server import RandomAllocator
from dcbench.plugins.allocators.tetris import TetrisAllocator


def request(demand):
    return Request(0, 0.0, 1.0, np.asarray(demand, dtype=float), "pool", "all")


def first_choice(allocator, network, state, demand):
    allocator.reset(network, np.random.default_rng(0))
    builder = allocator.builder
    builder.start(request(demand), state)
    return allocator.choose(builder, builder.allowed())


def test_tetris_prefers_the_best_aligned_server(small_network):
    state = State(small_network)
    state.free_resources[:] = [4, 4]
    state.free_resources[37] = [16, 2]
    state.free_resources[12] = [2, 16]
    assert first_choice(TetrisAllocator(), small_network, state, [100, 10]) == 37
    assert first_choice(TetrisAllocator(), small_network, state, [10, 100]) == 12


def test_tetris_counts_the_free_channels_of_the_servers_own_link(small_network):
    state = State(small_network)
    state.free_links[small_network.server_link[:40]] = 1
    # all servers have equal resources: the ones with free channels win
    assert first_choice(TetrisAllocator(), small_network, state, [16, 16]) == 40


def test_tetris_penalises_servers_outside_the_last_picks_rack(small_network):
    state = State(small_network)
    state.free_resources[:] = [8, 8]
    state.free_resources[20] = [9, 9]  # rack 1, slightly better
    allocator = TetrisAllocator(penalty=0.5)
    allocator.reset(small_network, np.random.default_rng(0))
    builder = allocator.builder
    builder.start(request([64, 64]), state)
    builder.add(0)  # rack 0
    assert allocator.choose(builder, builder.allowed()) in range(1, 16)
    no_penalty = TetrisAllocator(penalty=1.0)
    no_penalty.reset(small_network, np.random.default_rng(0))
    no_penalty.builder.start(request([64, 64]), state)
    no_penalty.builder.add(0)
    assert no_penalty.choose(no_penalty.builder, no_penalty.builder.allowed()) == 20


def test_tetris_never_picks_a_disallowed_server(small_network):
    state = State(small_network)
    state.free_resources[:10] = 0
    assert first_choice(TetrisAllocator(), small_network, state, [16, 16]) >= 10


def test_random_is_uniform_over_allowed_servers(small_network):
    state = State(small_network)
    state.free_resources[32:] = 0
    allocator = RandomAllocator()
    allocator.reset(small_network, np.random.default_rng(0))
    picks = []
    for _ in range(3000):
        allocator.builder.start(request([4, 4]), state)
        picks.append(allocator.choose(allocator.builder, allocator.builder.allowed()))
    counts = np.bincount(picks, minlength=64)
    assert counts[32:].sum() == 0 and counts[:32].min() > 50


def test_bad_penalty(registry):
    with pytest.raises(SpecError, match="between 0 and 1"):
        registry.build("allocator", "tetris:penalty=1.5")


def test_tetris_scoring_once_per_request_decides_as_rescoring_every_step(runner, monkeypatch):
    """Scores of unchosen servers cannot change within a request on a leaf-server
    fabric, so scoring once per request is exact: same tables as rescoring."""
    cached = runner.run("tetris", "tiered:8,1x8", requests=200, seed=4)
    original = TetrisAllocator.reset

    def always_rescore(self, network, rng):
        original(self, network, rng)
        self._scores_stay = False

    monkeypatch.setattr(TetrisAllocator, "reset", always_rescore)
    rescored = runner.run("tetris", "tiered:8,1x8", requests=200, seed=4)
    for column in ("outcome", "servers_used", "spread", "channels_tier1", "channels_tier3"):
        assert list(cached.tables.requests[column]) == list(rescored.tables.requests[column])


def test_tetris_fit_last_completes_a_request_on_the_tightest_server_of_its_racks(small_network):
    state = State(small_network)
    state.free_resources[5] = [4, 4]  # rack 0
    state.free_resources[21] = [3, 3]  # rack 1: tighter, but outside the request's racks
    fit_last = TetrisAllocator(fit_last=True)
    # a request that one server covers: the tightest anywhere, where plain Tetris takes a whole server
    assert first_choice(fit_last, small_network, state, [3, 3]) == 21
    assert first_choice(TetrisAllocator(), small_network, state, [3, 3]) not in (5, 21)
    fit_last.builder.start(request([19, 19]), state)
    fit_last.builder.add(0)  # rack 0; 3 of each still needed
    assert fit_last.choose(fit_last.builder, fit_last.builder.allowed()) == 5


def disaggregated(registry):
    """tiered:8,1x4 with CPU-only and memory-only blades and a core link of no capacity (a third party's
    disaggregated topology may have all three; the built-in ones have none)."""
    import dataclasses

    topology = registry.build("topology", "tiered:8,1x4").obj
    capacity = np.array(topology.capacity, dtype=float)
    capacity[0::4, 1] = 0  # no memory
    capacity[1::4, 0] = 0  # no CPU
    graph = topology.graph.copy()
    core_link = max(graph.edges(data=True), key=lambda edge: edge[2].get("tier", 1))
    graph.edges[core_link[0], core_link[1]]["capacity"] = 0.0
    return dataclasses.replace(topology, capacity=capacity, graph=graph)


POOL_ALLOCATORS = ["tetris", "tetris:published=yes", "nalb", "nulb", "nalb:published=yes", "random", "bestfit",
                   "bestfit:local=yes", "gnn_ppo"]


@pytest.mark.parametrize("spec", POOL_ALLOCATORS)
def test_a_server_or_link_with_none_of_a_resource_is_never_divided_by(registry, spec):
    # 0 / 0 was a ZeroDivisionError in NALB/NULB's routing and silent NaN scores and features elsewhere
    from dcbench import Network
    from dcbench.engine.simulation import simulate

    network = Network.compile(disaggregated(registry))
    sequence = registry.build("workload", "uniform").obj.generate(network, 128, np.random.default_rng(0))
    with np.errstate(divide="raise", invalid="raise"):
        tables = simulate(network, sequence, registry.build("allocator", spec).obj, np.random.default_rng(1))
    assert (tables.requests["outcome"] == "accepted").sum() > 10
    assert all(np.isfinite(values).all() for name, values in tables.timeline.items() if name.endswith("util"))
