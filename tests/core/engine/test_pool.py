import numpy as np
import pytest

from dcbench import AllocatorError, PoolBuilder, Reject, Request, State
from tests.conftest import tiered


def request(demand, rule="all"):
    return Request(0, 0.0, 1.0, np.asarray(demand, dtype=float), "pool", rule)


def test_each_server_gives_min_of_free_and_still_needed(small_network):
    state = State(small_network)
    state.free_resources[0] = [10, 16]
    builder = PoolBuilder(small_network)
    builder.start(request([20, 20]), state)
    assert builder.add(0) and builder.amounts[-1] == [10, 16]
    assert builder.add(1) and builder.amounts[-1] == [10, 4]
    assert builder.status == "done"
    allocation = builder.result()
    assert allocation.servers.tolist() == [0, 1] and len(allocation.routes) == 1
    # the engine's state is untouched by the builder
    assert state.free_resources[0].tolist() == [10, 16]


def test_allowed_mask_excludes_chosen_and_useless_servers(small_network):
    state = State(small_network)
    state.free_resources[5] = [0, 16]   # memory only
    state.free_resources[6] = [0, 0]    # full
    builder = PoolBuilder(small_network)
    builder.start(request([40, 8]), state)
    allowed = builder.allowed()
    assert allowed[5] and not allowed[6]
    builder.add(0)  # gives 16 cpu and all 8 memory: only cpu is still needed
    allowed = builder.allowed()
    assert not allowed[0] and not allowed[5] and allowed[1]


def test_adding_a_useless_server_is_refused(small_network):
    state = State(small_network)
    state.free_resources[5] = [0, 16]
    builder = PoolBuilder(small_network)
    builder.start(request([40, 0]), state)
    with pytest.raises(AllocatorError, match="nothing the request still needs"):
        builder.add(5)
    builder.add(0)
    with pytest.raises(AllocatorError, match="already chosen"):
        builder.add(0)


def test_routes_reserve_one_channel_per_link_and_fail_without_a_free_path():
    network = tiered("tiered:1,1x4")  # SR 1 channel: a server can join only one pair
    state = State(network)
    builder = PoolBuilder(network)
    builder.start(request([48, 0]), state)
    assert builder.add(0) and builder.add(16)
    link_0 = network.server_link[0]
    assert builder.free_links[link_0] == 0
    assert not builder.add(32)  # needs a path to server 0, whose only link is used
    assert builder.status == "failed" and builder.result() == Reject("no_path")
    assert state.free_links[link_0] == 1


def test_connectivity_rule_cpu_skips_memory_only_pairs():
    network = tiered("tiered:2,1x4")
    state = State(network)
    state.free_resources[16] = [0, 16]
    state.free_resources[32] = [0, 16]
    builder = PoolBuilder(network)
    builder.start(request([16, 32], rule="cpu"), state)
    builder.add(16)  # memory only
    builder.add(32)  # memory only: no path needed to 16
    assert len(builder.routes) == 0
    builder.add(0)   # gives cpu: needs paths to both
    assert builder.status == "done" and len(builder.routes) == 2


def test_same_request_same_decisions_after_reuse(small_network):
    state = State(small_network)
    builder = PoolBuilder(small_network)
    outcomes = []
    for _ in range(2):
        builder.start(request([40, 40]), state)
        for server in (3, 20, 40):
            builder.add(server)
        outcomes.append((builder.result().amounts.tolist(), [r.links for r in builder.result().routes]))
    assert outcomes[0] == outcomes[1]
