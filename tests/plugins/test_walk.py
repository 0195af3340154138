import numpy as np
import pytest

from dcbench import Request, State
from dcbench.engine.routing import WeightedRouter
from dcbench.plugins.allocators.walk import nalb, nulb
from tests.conftest import tiered


def request(demand):
    return Request(0, 0.0, 1.0, np.asarray(demand, dtype=float), "pool", "all")


def run_one(allocator, network, state, demand):
    allocator.reset(network, np.random.default_rng(0))
    return allocator.allocate(request(demand), state)


def test_nulb_walks_the_first_picks_rack_in_graph_order(small_network):
    state = State(small_network)
    state.free_resources[:] = [8, 8]
    state.free_resources[5] = [16, 16]  # the Tetris first pick
    allocation = run_one(nulb(), small_network, state, [40, 40])
    assert allocation.servers.tolist() == [5, 0, 1, 2]
    assert allocation.amounts.tolist() == [[16, 16], [8, 8], [8, 8], [8, 8]]


def test_nalb_prefers_servers_whose_links_have_more_free_channels(small_network):
    state = State(small_network)
    state.free_resources[:] = [8, 8]
    state.free_resources[5] = [16, 16]
    state.free_links[small_network.server_link[[0, 1, 2]]] = 4
    allocation = run_one(nalb(), small_network, state, [40, 40])
    assert allocation.servers[0] == 5 and set(allocation.servers[1:].tolist()) == {3, 4, 6}


def test_the_walk_leaves_the_rack_when_it_is_exhausted(small_network):
    state = State(small_network)
    state.free_resources[:16] = 0
    state.free_resources[3] = [16, 16]
    allocation = run_one(nulb(), small_network, state, [48, 48])
    racks = small_network.racks[allocation.servers]
    assert racks[0] == 0 and (racks[1:] != 0).all()


def test_queue_orders_differ():
    network = tiered("tiered:8,1x4,racks=4")
    state = State(network)
    state.free_resources[:16] = 0
    state.free_resources[0] = [16, 16]
    fifo = run_one(nulb(queue="fifo"), network, state, [48, 48])
    lifo = run_one(nulb(queue="lifo"), network, state, [48, 48])
    # breadth-first reaches the next rack of the pod; the reference's stack, popping the last switch queued
    # (an aggregation switch lists its racks, then its cores), crosses to the other pod's last rack
    assert network.racks[fifo.servers[1]] == 1 and network.racks[lifo.servers[1]] == 7


def test_balance_router_prefers_emptier_paths_and_reference_fuller(small_network):
    state = State(small_network)
    first, second = small_network.paths.between_servers(0, 16)[:2]
    state.free_links[list(set(first) - set(second))] = 1  # the first hop-count path is nearly full
    for weighting, expected in (("balance", second), ("reference", first)):
        allocator = nalb(route=weighting)
        allocator.reset(small_network, np.random.default_rng(0))
        builder = allocator.builder
        builder.start(request([32, 32]), state)
        assert builder.router(builder, 0, 16)[0] == expected


def test_router_rejects_unknown_weighting(small_network):
    with pytest.raises(ValueError, match="not one of balance, reference"):
        WeightedRouter(small_network, "fastest")


def test_the_link_weights_follow_each_route_from_the_step_that_first_asks_for_them(small_network):
    from dcbench.model.network import share_divisor

    state = State(small_network)
    state.free_resources[:] = [8, 8]
    allocator = nalb(route="balance")
    allocator.reset(small_network, np.random.default_rng(0))
    builder = allocator.builder
    builder.start(request([24, 24]), state)
    divisor = share_divisor(small_network.link_capacity).tolist()
    assert builder.add(0)
    for server in (16, 40):  # three racks: the router first asks for the weights inside the step that routes 0-16
        assert builder.add(server)
        expected = [2.0 - free / d for free, d in zip(builder.free_links.tolist(), divisor)]
        assert builder.link_weights() == expected
    assert len(builder.routes) == 3 and builder.status == "done"
