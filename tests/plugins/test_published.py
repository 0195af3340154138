"""The published quirks of the tiered baselines and of their environment, each on a small hand-built state
against what the reference code's lines do (docs/scenarios/tiered.md, "The baselines as published")."""

import dataclasses
import random

import numpy as np
import pytest

from dcbench import Allocation, PoolAllocator, PoolBuilder, Request, RequestSequence, State
from dcbench.engine.simulation import simulate
from dcbench.model.allocation import check_allocation
from dcbench.plugins.allocators.random_server import RandomAllocator
from dcbench.plugins.allocators.tetris import TetrisAllocator
from dcbench.plugins.allocators.walk import nalb, nulb
from dcbench.plugins.workloads.uniform import UniformWorkload


def request(demand, rule="all", allowed="needed", i=0, keep_useless=False):
    return Request(i, 0.0, 1.0, np.asarray(demand, dtype=float), "pool", rule, allowed_servers=allowed,
                   keep_useless=keep_useless)


def started(allocator, network):
    allocator.reset(network, np.random.default_rng(0))
    return allocator


def test_the_published_link_column_is_the_allowed_servers_links_under_zero_padding_in_name_order(small_network):
    # rollout.py:288-328: rows are the nodes sorted by name (Resource_0, Resource_1, Resource_10, ...); the
    # link column is the allowed servers' link ports in graph order, stacked under zeros.
    tetris = started(TetrisAllocator(link_column="by_name"), small_network)
    state = State(small_network)
    state.free_links[small_network.server_link] = np.arange(small_network.n_servers) + 1.0
    builder = tetris.builder
    builder.start(request([16, 16]), state)
    n = small_network.n_servers
    names = sorted(range(n), key=str)
    for allowed_servers in (np.arange(n), np.array([3, 7, 40])):
        allowed = np.zeros(n, dtype=bool)
        allowed[allowed_servers] = True
        column = np.concatenate([np.zeros(n - len(allowed_servers)), allowed_servers + 1.0])  # by row
        expected = np.empty(n)
        expected[names] = column  # row r is the server names[r]
        assert tetris.link_column_by_name(builder, allowed).tolist() == expected.tolist()


def test_published_tetris_scores_a_server_with_another_servers_link(small_network):
    state = State(small_network)
    state.free_links[small_network.server_link] = 4
    state.free_links[small_network.server_link[12]] = 8  # row 12 in name order is Resource_2
    pick = started(TetrisAllocator(), small_network).allocate(request([16, 16]), state).servers[0]
    published = started(TetrisAllocator(published=True), small_network).allocate(request([16, 16]), state)
    assert pick == 12 and published.servers[0] == 2


def test_the_published_penalty_is_anchored_on_the_previous_requests_last_pick(small_network):
    # rollout.py: last_action persists across requests, so a request's first pick is already penalised.
    state = State(small_network)
    state.free_resources[:] = [4, 4]
    state.free_resources[20] = [16, 16]  # rack 1: the first request's pick
    state.free_resources[0] = [12, 12]  # rack 0: the best of the second request, unpenalised
    state.free_resources[21] = [11, 11]  # rack 1: the best once rack 0 is scored × 0.9
    for anchor, second in (("request", 0), ("previous", 21)):
        tetris = started(TetrisAllocator(anchor=anchor), small_network)
        assert tetris.allocate(request([16, 16]), state).servers.tolist() == [20]
        after = State(small_network)
        after.free_resources[:] = state.free_resources
        after.free_resources[20] = 0
        assert tetris.allocate(request([8, 8], i=1), after).servers.tolist() == [second]


def test_published_tetris_breaks_ties_in_name_order(small_network):
    # rollout.py:326: np.argmax over the rows sorted by name, so Resource_10 wins a tie with Resource_2.
    state = State(small_network)
    state.free_resources[:] = [1, 1]
    state.free_resources[[2, 10]] = [16, 16]
    for ties, pick in (("index", 2), ("name", 10)):
        assert started(TetrisAllocator(ties=ties), small_network).allocate(request([16, 16]), state).servers[0] == pick


def test_published_implies_every_tetris_quirk_and_each_can_be_left_out():
    published = TetrisAllocator(published=True)
    assert published.link_by_name and published.anchor_previous and published.ties_by_name
    assert not TetrisAllocator(published=True, link_column="own").link_by_name
    assert not TetrisAllocator(published=True, anchor="request").anchor_previous
    assert not TetrisAllocator(published=True, ties="index").ties_by_name
    plain = TetrisAllocator()
    assert not plain.link_by_name and not plain.anchor_previous and not plain.ties_by_name


def test_the_walks_first_pick_is_the_published_tetris(small_network):
    # rollout.py:350, :438: NALB and NULB start from the same Tetris as published.
    state = State(small_network)
    state.free_links[small_network.server_link] = 4
    state.free_links[small_network.server_link[12]] = 8
    for walk in (nalb, nulb):
        assert started(walk(), small_network).allocate(request([16, 16]), state).servers[0] == 12
        assert started(walk(first_pick="published"), small_network).allocate(request([16, 16]), state).servers[0] == 2


def walk_state(network, free):
    state = State(network)
    state.free_resources[:] = 0
    state.free_resources[5] = [16, 16]  # the first pick
    for server, amount in free.items():
        state.free_resources[server] = amount
    return state


def test_the_published_walk_plans_servers_with_nothing_still_needed(small_network):
    # rollout.py:395, :486: np.sum(amount) > 0 — a server with free memory joins the plan of a request that
    # needs only CPU; it gives nothing but is still joined to the others (its paths reserved).
    state = walk_state(small_network, {0: [0, 16], 1: [16, 0], 2: [16, 0]})
    corrected = started(nulb(), small_network)
    assert corrected.allocate(request([48, 16]), state).servers.tolist() == [5, 1, 2]
    published = started(nulb(plan="any_free"), small_network)
    allocation = published.allocate(request([48, 16]), state)
    assert published.builder.chosen == [5, 0, 1, 2]
    assert any(0 in route[:2] for route in published.builder.routes)  # joined while the request was built
    assert allocation.servers.tolist() == [5, 1, 2]  # the engine commits no server that gives nothing
    assert check_allocation(allocation, request([48, 16]), state)[0] is None


def test_the_published_walk_places_its_plan_in_reverse(small_network):
    # rollout.py:383, :414, :472, :505: the plan starts with the Tetris pick and is popped from its end, so
    # the Tetris pick is placed last; each server gives min(free, still needed) as it is placed.
    state = walk_state(small_network, {0: [12, 12], 1: [12, 12], 2: [12, 12]})
    assert started(nulb(), small_network).allocate(request([40, 40]), state).servers.tolist() == [5, 0, 1]
    allocation = started(nulb(order="reversed"), small_network).allocate(request([40, 40]), state)
    assert allocation.servers.tolist() == [1, 0, 5]
    assert allocation.amounts.tolist() == [[12, 12], [12, 12], [16, 16]]


def test_the_published_walks_anchor_is_the_previous_requests_tetris_pick(small_network):
    # rollout.py: last_action is set in tetris() alone, which NALB and NULB call for a request's first pick.
    state = walk_state(small_network, {0: [8, 8]})
    state.free_resources[5] = 0
    state.free_resources[20] = [16, 16]  # rack 1: the Tetris pick; server 0 (rack 0) is placed after it
    second = State(small_network)
    second.free_resources[:] = [1, 1]
    second.free_resources[[0, 21]] = [16, 16]  # a tie, broken by the rack of the anchor
    for walk in (nalb, nulb):
        allocator = started(walk(first_pick="published"), small_network)
        assert allocator.allocate(request([24, 24]), state).servers.tolist() == [20, 0]
        assert allocator.allocate(request([16, 16], i=1), second).servers.tolist() == [21]


def test_published_walk_turns_on_every_quirk_and_the_reference_routing():
    walk = nalb(published=True)
    assert walk.link_by_name and walk.anchor_previous and walk.plan_any_free and walk.order_reversed
    assert (walk.route, walk.queue) == ("reference", "lifo")
    assert nalb().route == "balance" and not nalb().plan_any_free and not nalb().link_by_name
    left_out = nalb(first_pick="published", plan="any_free")
    assert left_out.link_by_name and left_out.plan_any_free and not left_out.order_reversed


def test_the_published_walks_resolved_spec_says_the_routing_it_runs_and_a_named_one_is_kept():
    from dcbench.registry import get_registry
    from dcbench.running.sweep import resolved_allocator

    registry = get_registry()
    # the spec a run records (its id, the summary's allocator column) may not name a routing it does not run
    assert resolved_allocator(registry, "nalb:published=yes") == "nalb:candidates=16,published=yes"
    assert resolved_allocator(registry, "nulb") == "nulb:candidates=16"
    named = nalb(published=True, route="balance", queue="fifo")  # named, so not the published defaults
    assert (named.route, named.queue) == ("balance", "fifo") and named.plan_any_free
    assert resolved_allocator(registry, "nalb:published=yes,route=balance") == (
        "nalb:route=balance,candidates=16,published=yes")


def test_published_random_draws_from_every_server_with_anything_free(small_network):
    # rollout.py:271-274 over packing_env.py:538-544: only servers with no free CPU and no free memory are
    # masked, so a memory-only request may draw a server with free CPU only.
    state = State(small_network)
    state.free_resources[:] = 0
    state.free_resources[0] = [16, 0]
    state.free_resources[1] = [0, 16]
    corrected_firsts, published_firsts = set(), set()
    for seed in range(20):
        corrected = RandomAllocator()
        corrected.reset(small_network, np.random.default_rng(seed))
        assert corrected.allocate(request([0, 16]), state).servers.tolist() == [1]
        corrected_firsts.add(corrected.builder.chosen[0])
        published = RandomAllocator(published=True)
        published.reset(small_network, np.random.default_rng(seed))
        assert published.allocate(request([0, 16]), state).servers.tolist() == [1]
        published_firsts.add(published.builder.chosen[0])
    assert corrected_firsts == {1} and published_firsts == {0, 1}


def test_the_free_rule_allows_servers_with_anything_free_and_commits_only_those_that_give(small_network):
    # packing_env.py:538-544; the pairs a kept server routes are those the engine's check asks for, so a
    # useless server never makes an allocation invalid (A gives CPU, U nothing, B CPU, M memory only).
    state = State(small_network)
    state.free_resources[:] = 0
    state.free_resources[[0, 2]] = [16, 0]
    state.free_resources[1] = [16, 0]
    state.free_resources[3] = [0, 16]
    builder = PoolBuilder(small_network)
    demand = request([16, 16], rule="reference", allowed="free")
    builder.start(demand, state)
    assert builder.allowed()[[0, 1, 2, 3]].all() and builder.allowed().sum() == 4
    builder.add(0)
    assert builder.allowed()[1]  # free CPU, CPU no longer needed: allowed all the same
    for server in (1, 2, 3):
        assert builder.add(server)
    allocation = builder.result()
    assert builder.chosen == [0, 1, 2, 3]
    assert allocation.servers.tolist() == [0, 3]
    assert check_allocation(allocation, demand, state)[0] is None
    needed = PoolBuilder(small_network)
    needed.start(request([16, 16], rule="reference"), state)
    needed.add(0)
    assert not needed.allowed()[1]


def test_kept_useless_servers_stay_with_their_paths_and_pairs(small_network):
    # packing_env.py:129-177, :304-311: a server that gives nothing is allocated 0 of each resource and stays
    # among the request's servers: later servers need paths to it as the rule says, held until the request
    # departs (X gives memory, U nothing, A and B CPU; X and U give no CPU, so U pairs with nobody).
    state = State(small_network)
    state.free_resources[:] = 0
    state.free_resources[[20, 21]] = [0, 16]
    state.free_resources[[0, 1]] = [16, 0]
    for keep, servers, pairs in ((True, [20, 21, 0, 1], {(0, 20), (0, 21), (1, 20), (1, 21), (0, 1)}),
                                 (False, [20, 0, 1], {(0, 20), (1, 20), (0, 1)})):
        demand = request([32, 16], rule="reference", allowed="free", keep_useless=keep)
        builder = PoolBuilder(small_network)
        builder.start(demand, state)
        for server in (20, 21, 0, 1):
            assert builder.add(server)
        allocation = builder.result()
        assert allocation.servers.tolist() == servers
        assert {tuple(sorted(route[:2])) for route in allocation.routes} == pairs
        problem, usage = check_allocation(allocation, demand, state)
        assert problem is None and usage[small_network.server_link[21]] == (2 if keep else 0)


class Ordered(PoolAllocator):
    """Chooses the servers in a given order, whatever they give."""

    accept_useless = True

    def __init__(self, order):
        self.order = order

    def choose(self, builder, allowed):
        return self.order[len(builder.chosen)]


def test_a_kept_useless_servers_channels_are_held_until_the_request_departs(small_network):
    # Server 0 gives a memory-only request nothing; its paths to the two servers after it hold two channels
    # of its link while the request is held.
    for keep, held in ((False, 0), (True, 2)):
        sequence = RequestSequence(kind="pool", gaps=np.ones(1), holding=np.array([2.0]),
                                   demand=np.array([[0.0, 32.0]]), connectivity="all", allowed_servers="free",
                                   keep_useless=keep)
        state = State(small_network)
        state.free_resources[0] = [16, 0]
        tables = simulate(small_network, sequence, Ordered([0, 1, 2]), np.random.default_rng(0), state=state)
        assert tables.requests["outcome"].tolist() == ["accepted"]
        link = small_network.server_link[0]
        assert small_network.link_capacity[link] - state.free_links[link] == held


def sequence(departures_within):
    # Request 0 holds the memory of 62 of the 64 servers until t = 1; request 1, offered at t = 1, needs 4
    # servers' (memory only: with the "cpu" rule no pair needs a path).
    return RequestSequence(kind="pool", gaps=np.ones(2), holding=np.ones(2), demand=np.array([[0.0, 992.0],
                           [0.0, 64.0]]), connectivity="cpu", departures_within=departures_within)


def test_requests_due_at_an_offer_depart_after_its_first_server(small_network):
    # packing_env.py:340: _check_holding_times(time_increment=False) after each partial step releases the
    # requests due now, in the middle of placing a request.
    between = simulate(small_network, sequence(False), TetrisAllocator(), np.random.default_rng(0))
    within = simulate(small_network, sequence(True), TetrisAllocator(), np.random.default_rng(0))
    assert between.requests["outcome"].tolist() == ["accepted", "rejected"]
    assert within.requests["outcome"].tolist() == ["accepted", "accepted"]
    assert within.timeline["event"].tolist() == ["arrival", "departure", "arrival"]


@pytest.mark.parametrize("spec", [{}, {"allowed": "free"}, {"departures": "within"}, {"useless": "kept"},
                                  {"allowed": "free", "useless": "dropped"}])
def test_the_uniform_workload_carries_the_environment_options(small_network, spec):
    drawn = UniformWorkload(**spec).generate(small_network, 4, np.random.default_rng(0))
    assert drawn.allowed_servers == spec.get("allowed", "needed")
    assert drawn.departures_within == (spec.get("departures") == "within")
    # the reference's mask keeps the servers it lets a step choose, unless told otherwise
    assert drawn.keep_useless == (spec.get("useless", "kept" if spec.get("allowed") == "free" else "dropped") == "kept")


# What the authors' code (zawaki/allocation_neurips_2021_mlfs at 56404d9, run unchanged) chose for the first 24
# requests of its first episode on 32 channels, 1:16: each accepted request's servers in placement order, "x" for
# a rejected one. Every published quirk, of the allocators and of the suite's environment, changes one of these
# (checked by turning each off); benchmarks/compare_authors_code.py compares whole episodes.
AUTHORS_FIRST_24 = {
    "tetris": "0.1.10.11 12.13.14.15.2.3.4.5 6.7.8 9.23.24.25.26.27.28.29 30.31.19.20.21.22 32.33.34.35.36.37.38 "
              "44.39.40.41.42.43.45 27.28.29.22.30 23.31.25.26.50 51.52.53.54.55.56 60.61.57.58.59.49.48.62 "
              "59.48.49.46.47.45.9 9.4.5.8 63.62.47.36.37.38.53.54.55.56.50 x x 45.38.53.54.55.56.7.6.5.50.58.46.9 "
              "x x x 5.6.42 x 44.39.40 x",
    "nalb": "3.2.1.0 10.9.8.7.6.5.4.12 14.11.13 x 5.4.3.14.13.11.2.1.0.15 21.20.19.18.17.16.22 29.28.27.26.25.23.24 "
            "35.34.33.32.36 41.39.38.37.40 47.46.45.44.43.42 55.54.53.51.50.49.48.52 62.61.59.58.57.56.60 "
            "57.52.50.49.48.63.56 24.23.22.19.18.17.16.31.30 51.62.61.59.58.56.52.50.49.48.63.60 x "
            "30.44.43.42.38.36.40.37.45 2.1.0.5 37.5.12.6.4.0.14.13.11.15.3 13.11.3.16.31.24.23.29.28.27.26.25 "
            "14.23.29.28.27.26.25 12.10.9.8.7.4.6 5.0.15.6 32.6.23.25.29.28.27.26",
    "nulb": "3.2.1.0 7.6.5.4.3.2.1.0.12 10.9.0.8 23.22.21.20.18.17.16.19 27.26.24.19.17.16.25 50.49.48.31.30.28.25.29 "
            "38.37.36.35.34.33.32 42.41.40.33.32.39 47.46.45.44.39.43 18.17.16.45.44.39.43 57.56.54.53.52.51.48.55 "
            "59.58.55.53.52.51.61 60.59.58.55.63 x x x 11.10.9.3.2.1 14.13.12.3.1.0 x x 60.59.58.55.63 x 34.33.32 "
            "41.40.39.38.37.36.33.32.35",
}


@pytest.mark.parametrize("heuristic", sorted(AUTHORS_FIRST_24))
def test_the_published_forms_decide_as_the_authors_code_on_its_own_requests(heuristic):
    from dcbench.registry import get_registry
    from dcbench.running.runner import Runner

    scenario = next(s for s in get_registry().entries("suite")["nara2022-published"].scenarios if s.name == "32-1x16")
    plan = Runner(get_registry()).resolve(f"{heuristic}:published=yes", scenario.topology, scenario.workload, 24)
    # the authors' environment draws its requests with Python's random seeded with 10, three draws a request;
    # its constructor draws one that no episode offers
    draw = random.Random(10)
    drawn = np.array([[draw.randint(1, 128), draw.randint(1, 128), draw.randint(1, 30)] for _ in range(25)][1:],
                     dtype=float)
    environment = plan.workload_model.generate(plan.network, 1, np.random.default_rng(0))
    requests = dataclasses.replace(environment, gaps=np.ones(24), holding=drawn[:, 2], demand=drawn[:, :2])
    allocator = plan.new_allocator()
    decided = []

    class Recorded:
        def reset(self, network, rng):
            allocator.reset(network, rng)

        def allocate(self, request, state):
            answer = allocator.allocate(request, state)
            decided.append(".".join(map(str, answer.servers.tolist())) if isinstance(answer, Allocation) else "x")
            return answer

    simulate(plan.network, requests, Recorded(), np.random.default_rng(0))
    assert " ".join(decided) == AUTHORS_FIRST_24[heuristic]
