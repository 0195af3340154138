import numpy as np

from dcbench import Request, State
from dcbench.plugins.allocators.bestfit import BestFitAllocator
from dcbench.plugins.allocators.tetris import TetrisAllocator


def request(demand):
    return Request(0, 0.0, 1.0, np.asarray(demand, dtype=float), "pool", "all")


def started(allocator, network, state, demand):
    allocator.reset(network, np.random.default_rng(0))
    allocator.builder.start(request(demand), state)
    return allocator.builder


def choice(allocator, builder):
    return allocator.choose(builder, builder.allowed())


def test_a_request_that_fits_one_server_takes_the_tightest_fit(small_network):
    state = State(small_network)
    state.free_resources[9] = [6, 6]
    state.free_resources[5] = [4, 4]
    bestfit = BestFitAllocator()
    assert choice(bestfit, started(bestfit, small_network, state, [3, 3])) == 5
    # Tetris takes an untouched server for the same request
    tetris = TetrisAllocator()
    assert choice(tetris, started(tetris, small_network, state, [3, 3])) not in (5, 9)


def test_equally_tight_fits_go_to_the_server_with_fewer_free_channels(small_network):
    state = State(small_network)
    state.free_resources[5] = [4, 4]
    state.free_resources[9] = [4, 4]
    state.free_links[small_network.server_link[9]] = 2
    bestfit = BestFitAllocator()
    assert choice(bestfit, started(bestfit, small_network, state, [3, 3])) == 9


def test_the_last_server_needs_a_channel_for_every_server_already_chosen(small_network):
    state = State(small_network)
    state.free_resources[5] = [4, 4]
    state.free_resources[9] = [5, 5]
    state.free_links[small_network.server_link[5]] = 0
    bestfit = BestFitAllocator()
    builder = started(bestfit, small_network, state, [19, 19])
    builder.add(0)  # gives 16 of each; 3 still needed
    assert choice(bestfit, builder) == 9


def test_other_steps_take_the_fewest_channels_that_cover_the_requests_size(small_network):
    state = State(small_network)
    links = small_network.server_link
    state.free_links[links[30]] = 2  # enough for a request of three servers
    state.free_links[links[31]] = 1  # too few
    state.free_resources[3] = [8, 8]
    state.free_links[links[3]] = 2  # enough channels, but gives less
    bestfit = BestFitAllocator()
    assert choice(bestfit, started(bestfit, small_network, state, [48, 48])) == 30


def test_without_enough_channels_anywhere_the_most_free_channels_win(small_network):
    state = State(small_network)
    state.free_links[small_network.server_link] = 1
    state.free_links[small_network.server_link[44]] = 3
    bestfit = BestFitAllocator()
    assert choice(bestfit, started(bestfit, small_network, state, [128, 128])) == 44


def test_local_prefers_the_previous_picks_rack(small_network):
    state = State(small_network)
    links = small_network.server_link
    racks = small_network.racks
    # outside rack 0 every server has fewer free channels, which wins without local
    state.free_links[links[racks != 0]] = 4
    for local, in_rack in ((False, False), (True, True)):
        bestfit = BestFitAllocator(local=local)
        builder = started(bestfit, small_network, state, [48, 48])
        builder.add(0)
        assert (racks[choice(bestfit, builder)] == 0) == in_rack


def test_bestfit_accepts_more_than_tetris_where_channels_bind(runner):
    # 8 channels per server link, uncongested upper tiers: the case it is for
    def acceptance(allocator):
        return np.mean([runner.run(allocator, "tiered:8,1x1", "uniform:pairs=reference", 128, seed).summary[
            "acceptance_ratio"] for seed in range(3)])

    assert acceptance("bestfit") > acceptance("tetris") + 0.02


def test_completing_servers_cover_every_resource_still_needed_and_ignore_the_rest(small_network):
    from dcbench.plugins.allocators._fit import completing_servers

    state = State(small_network)
    state.free_resources[:] = [8, 0]  # no memory anywhere: only a request needing none completes
    state.free_resources[3] = [2, 8]
    state.free_resources[7] = [16, 16]
    bestfit = BestFitAllocator()
    link_free = np.full(small_network.n_servers, 8.0)
    cpu_only = started(bestfit, small_network, state, [4, 0])
    assert completing_servers(cpu_only, cpu_only.allowed(), link_free).sum() == small_network.n_servers - 1
    both = started(bestfit, small_network, state, [4, 4])
    assert np.flatnonzero(completing_servers(both, both.allowed(), link_free)).tolist() == [7]
    link_free[7] = 0.0  # and a channel for each server chosen so far (none yet: still one)
    assert np.flatnonzero(completing_servers(both, both.allowed(), link_free)).tolist() == [7]
