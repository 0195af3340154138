"""What an allocator returns or touches cannot forge a result: the engine
commits only allocations the model allows, and nothing an allocator is
handed (network, state, request) reaches the engine's checks or another run.

The cheats below are the ones an adversarial audit found, and a few more;
they register as a third party's allocators would."""

from __future__ import annotations

import hashlib
import importlib.metadata
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbench import Allocation, Reject, Route, hookimpl, simulate
from dcbench.harness import Runner
from dcbench.registry import create_registry
from tests.conftest import tiered

TOPOLOGY, WORKLOAD, REQUESTS = "tiered:8,1x16", "uniform", 64


def first_fit_servers(request, state):
    """Servers taken in index order until the demand is met, links ignored."""
    need = np.array(request.demand, dtype=float)
    servers, amounts = [], []
    for server, free in enumerate(state.free_resources):
        take = np.minimum(free, need)
        if take.sum() > 0:
            servers.append(server)
            amounts.append(take)
            need = need - take
        if (need <= 0).all():
            return servers, np.array(amounts)
    return None, None


def routes_between(network, servers, amount=1.0):
    return tuple(Route(servers[j], servers[i], network.paths.between_servers(servers[j], servers[i])[0], amount)
                 for i in range(len(servers)) for j in range(i))


class ForgedAmounts:
    """Plans as if every link were free and reserves 1e-9 of a channel per
    route: 128/128 accepted on tiered:8,1x16 in 0.3.3."""

    def reset(self, network, rng):
        self.network = network

    def allocate(self, request, state):
        servers, amounts = first_fit_servers(request, state)
        if servers is None:
            return Reject("no_servers")
        return Allocation(np.array(servers), amounts, routes_between(self.network, servers, 1e-9))


class PoisonsCaches:
    """Writes non-paths into every cache of the network it is handed, then routes over them."""

    def reset(self, network, rng):
        self.network = network
        self.bogus = (0,)  # one server link: a path from server 0 to its switch, to no other server
        network.path_ends_cache[self.bogus] = (0, 1)
        network.path_ends_by_id[id(self.bogus)] = (self.bogus, (0, 1))
        paths = network.paths
        for a in range(network.n_servers):
            for b in range(network.n_servers):
                if a != b:
                    paths.server_pair_cache[a * network.n_servers + b] = (self.bogus,)
        for key in list(paths._between):
            paths._between[key] = ((),)

    def allocate(self, request, state):
        servers, amounts = first_fit_servers(request, state)
        if servers is None:
            return Reject("no_servers")
        return Allocation(np.array(servers), amounts, tuple(
            Route(servers[j], servers[i], self.bogus) for i in range(len(servers)) for j in range(i)))


class RebindsWhatItIsHanded:
    """Rebinds the network's capacities (past its seal), the state's free
    capacity and the request's demand, then takes a server with no routes."""

    def reset(self, network, rng):
        with pytest.raises(AttributeError, match="read-only"):
            network.link_capacity = network.link_capacity * 1000
        with pytest.raises(TypeError):
            network.info["ports"] = 10**6
        for name in ("link_capacity", "server_capacity"):
            object.__setattr__(network, name, getattr(network, name) * 1000)
        self.network = network

    def allocate(self, request, state):
        object.__setattr__(request, "demand", np.zeros_like(request.demand) + 1)
        object.__setattr__(state, "free_resources", np.full_like(state.free_resources, 1e9))
        object.__setattr__(state, "free_links", np.full_like(state.free_links, 1e9))
        return Allocation(np.array([0]), np.ones((1, len(request.demand))))


CHEATS = {"forged_amounts": ForgedAmounts, "poisons_caches": PoisonsCaches,
          "rebinds_what_it_is_handed": RebindsWhatItIsHanded}


@hookimpl
def register_allocators(register):
    for name, factory in CHEATS.items():
        register(name, factory, description=f"a cheat: {factory.__doc__.split('.')[0]}")


@pytest.fixture(scope="module")
def cheating_registry():
    entry_point = importlib.metadata.EntryPoint(name="cheats", value=__name__, group="dcbench")
    return create_registry([entry_point])


def digest(result) -> str:
    """Every table and summary value of a run."""
    hasher = hashlib.sha256(result.run_id.encode())
    for name, column in sorted({**result.tables.requests, **result.tables.timeline}.items()):
        values = repr(column.tolist()).encode() if column.dtype == object else np.ascontiguousarray(column).tobytes()
        hasher.update(name.encode() + values)
    hasher.update(repr(sorted(result.summary.items())).encode())
    return hasher.hexdigest()


def test_no_cheat_gets_a_forged_allocation_committed(cheating_registry):
    runner = Runner(cheating_registry)
    for name in CHEATS:
        requests = runner.run(name, TOPOLOGY, WORKLOAD, REQUESTS, 0).tables.requests
        accepted = requests["outcome"] == "accepted"
        # Only a request one server serves alone needs no route: nothing of the cheat is in it.
        assert (requests["servers_used"][accepted] == 1).all(), name
        forged = requests["reason"] == "invalid_allocation"
        assert forged.sum() > REQUESTS // 2, (name, forged.sum())
    details = runner.run("forged_amounts", TOPOLOGY, WORKLOAD, REQUESTS, 0).tables.requests["detail"]
    assert any("reserves 1e-09 channels" in detail for detail in details)
    details = runner.run("poisons_caches", TOPOLOGY, WORKLOAD, REQUESTS, 0).tables.requests["detail"]
    assert any("is not a path between them" in detail for detail in details)
    details = runner.run("rebinds_what_it_is_handed", TOPOLOGY, WORKLOAD, REQUESTS, 0).tables.requests["detail"]
    assert all("demand is" in detail for detail in details if detail)


@pytest.mark.parametrize("honest", ["tetris", "nalb", "random"])
def test_other_runs_in_the_same_process_are_those_of_a_clean_sweep(cheating_registry, registry, honest):
    clean = Runner(registry)
    expected = [digest(clean.run(honest, TOPOLOGY, WORKLOAD, REQUESTS, seed)) for seed in (0, 1)]
    shared = Runner(cheating_registry)  # one compiled network for every run, as in a sweep
    for name in CHEATS:
        shared.run(name, TOPOLOGY, WORKLOAD, REQUESTS, 0)
        assert [digest(shared.run(honest, TOPOLOGY, WORKLOAD, REQUESTS, seed)) for seed in (0, 1)] == expected, name


def test_the_network_cannot_be_changed_through_what_is_handed_out(small_network):
    with pytest.raises(AttributeError, match="read-only"):
        small_network.paths = None
    with pytest.raises(AttributeError, match="read-only"):
        del small_network.link_ends
    with pytest.raises(ValueError):
        small_network.link_capacity[0] = 0
    with pytest.raises(TypeError):
        small_network.link_of_pair[(0, 1)] = 0
    with pytest.raises(AttributeError):
        small_network.adjacency[0].append((1, 1))
    import networkx as nx

    with pytest.raises(nx.NetworkXError):
        small_network.graph.add_edge(0, 1)
    copy = small_network.private_copy()
    assert copy.paths is not small_network.paths and copy.path_ends_cache is not small_network.path_ends_cache
    assert copy.link_ends is small_network.link_ends  # read-only arrays are shared, not copied
    assert copy.graph is not small_network.graph


def walk(network, start: int, links) -> int | None:
    """Where ``links`` lead from ``start`` without visiting a node twice; None if nowhere."""
    node, visited = start, {start}
    for link in links:
        ends = network.link_ends[link].tolist()
        if node not in ends[: 1 if network.directed else 2]:
            return None
        node = ends[1] if ends[0] == node else ends[0]
        if node in visited:
            return None
        visited.add(node)
    return node if links else None


# Independent of the engine's check: the model's rules written out plainly.
def forbidden(network, demand, free_resources, free_links, allocation) -> str | None:
    servers = [int(s) for s in np.asarray(allocation.servers).tolist()]
    amounts = np.asarray(allocation.amounts, dtype=float)
    if len(set(servers)) != len(servers) or not all(0 <= s < network.n_servers for s in servers):
        return "servers"
    if amounts.shape != (len(servers), len(demand)) or not np.isfinite(amounts).all() or (amounts < 0).any():
        return "amounts"
    if (amounts.sum(axis=1) <= 0).any() or not np.allclose(amounts.sum(axis=0), demand, rtol=0, atol=1e-6):
        return "demand"
    if (amounts > free_resources[servers] + 1e-9).any():
        return "capacity"
    used = np.zeros(network.n_links)
    pairs = set()
    for a, b, links, amount in allocation.routes:
        if amount != 1.0 or a not in servers or b not in servers or a == b:
            return "route"
        # An undirected network's path may be given from either end.
        if walk(network, a, links) != b and (network.directed or walk(network, b, links) != a):
            return "not a path"
        pairs.add(frozenset((a, b)))
        used[list(links)] += 1
    if len(pairs) != len(allocation.routes) or len(pairs) != len(servers) * (len(servers) - 1) // 2:
        return "pairs"
    if (used > free_links + 1e-9).any():
        return "links"
    return None


MUTATIONS = ("none", "amount", "drop_route", "repeat_route", "other_path", "reverse_path", "random_links",
             "move_server", "shift_amount", "add_server")


def mutated(allocation: Allocation, network, draw) -> Allocation:
    kind = draw(st.sampled_from(MUTATIONS))
    servers, amounts, routes = allocation.servers.copy(), allocation.amounts.copy(), list(allocation.routes)
    if kind == "amount" and routes:
        k = draw(st.integers(0, len(routes) - 1))
        routes[k] = routes[k]._replace(amount=draw(st.sampled_from([1e-9, 0.5, 2.0, 1.0 + 1e-12, np.inf, 0.0])))
    elif kind == "drop_route" and routes:
        routes.pop(draw(st.integers(0, len(routes) - 1)))
    elif kind == "repeat_route" and routes:
        routes.append(routes[draw(st.integers(0, len(routes) - 1))])
    elif kind == "other_path" and len(routes) > 1:
        k, other = draw(st.integers(0, len(routes) - 1)), draw(st.integers(0, len(routes) - 1))
        routes[k] = routes[k]._replace(links=routes[other].links)
    elif kind == "reverse_path" and routes:
        k = draw(st.integers(0, len(routes) - 1))
        routes[k] = routes[k]._replace(links=routes[k].links[::-1])
    elif kind == "random_links" and routes:
        k = draw(st.integers(0, len(routes) - 1))
        links = draw(st.lists(st.integers(0, network.n_links - 1), min_size=1, max_size=6))
        routes[k] = routes[k]._replace(links=tuple(links))
    elif kind == "move_server":
        servers[draw(st.integers(0, len(servers) - 1))] = draw(st.integers(0, network.n_servers - 1))
    elif kind == "shift_amount":
        amounts[draw(st.integers(0, len(servers) - 1)), 0] += draw(st.sampled_from([1e-3, -1e-3, 1.0, -1.0]))
    elif kind == "add_server":
        servers = np.append(servers, draw(st.integers(0, network.n_servers - 1)))
        amounts = np.vstack([amounts, np.zeros((1, amounts.shape[1]))])
    return Allocation(servers, amounts, tuple(routes))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_allocation_the_model_forbids_is_ever_committed(registry, data):
    runner = Runner(registry)
    plan = runner.resolve("tetris", "tiered:8,1x4", "uniform:pairs=all", 24)  # every pair needs its route
    honest = registry.build("allocator", "tetris").obj
    offered = []

    class Mutating:
        def reset(self, network, rng):
            self.network = network
            honest.reset(network, rng)

        def allocate(self, request, state):
            result = honest.allocate(request, state)
            if isinstance(result, Allocation):
                result = mutated(result, self.network, data.draw)
                offered.append((request.id, forbidden(self.network, request.demand, np.array(state.free_resources),
                                                      np.array(state.free_links), result)))
            return result

    from dcbench.running.runner import draw_requests

    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    sequence = draw_requests(plan, 24, rng.spawn(1)[0])
    outcome = simulate(plan.network, sequence, Mutating(), rng).requests["outcome"]
    for request_id, problem in offered:
        assert (outcome[request_id] == "accepted") == (problem is None), (request_id, problem)


# ----- answers that lie: each read once, checked and reserved as read --------

class Liar:
    """A number that reads as ``first`` the first time any conversion asks, as
    ``second`` ever after, and equals everything: read twice, the check and
    the reservation would see two different allocations."""

    def __init__(self, first, second):
        self.values, self.reads = (first, second), 0

    def _read(self):
        self.reads += 1
        return self.values[min(self.reads - 1, 1)]

    def __index__(self):
        return int(self._read())

    __int__ = __index__

    def __float__(self):
        return float(self._read())

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._read(), dtype=dtype)


class LiarInt(np.int64):
    """A numpy integer whose own value is ``second`` and whose ``__index__``
    and ``__int__`` say ``first`` once, then ``second`` (the audit's
    route links: the check walked one path, bincount reserved another)."""

    def __new__(cls, first, second):
        number = super().__new__(cls, second)
        number.first, number.reads = first, 0
        return number

    def __index__(self):
        self.reads += 1
        return int(self.first) if self.reads == 1 else int(np.int64(self).item())

    __int__ = __index__


def elementwise(values, others, kind, shape=None):
    """An object array of ``kind(value, other)``, made without reading them
    (``np.array`` of a list would ask each for ``__array__``)."""
    liars = np.empty(len(values), dtype=object)
    for i, (a, b) in enumerate(zip(values, others)):
        liars[i] = kind(a, b)
    return liars.reshape(shape or len(values))


def pool_lies(honest: Allocation, network) -> dict[str, Allocation]:
    """``honest`` with one field made of liars that read first as honest and
    then as something else, or first as something else and then as honest."""
    servers, amounts, routes = honest.servers, honest.amounts, honest.routes
    other_servers = (servers + 1) % network.n_servers
    other_amounts = amounts * 0.5
    lies = {}
    for order, (a, b) in {"honest_first": (0, 1), "cheat_first": (1, 0)}.items():
        def pair(x, y):
            return (x, y) if a == 0 else (y, x)
        lies[f"servers_array_{order}"] = Allocation(Liar(*pair(servers, other_servers)), amounts, routes)
        lies[f"servers_items_{order}"] = Allocation(elementwise(*pair(servers, other_servers), Liar), amounts, routes)
        lies[f"servers_numpy_{order}"] = Allocation(elementwise(*pair(servers, other_servers), LiarInt),
                                                    amounts, routes)
        lies[f"amounts_array_{order}"] = Allocation(servers, Liar(*pair(amounts, other_amounts)), routes)
        lies[f"amounts_items_{order}"] = Allocation(
            servers, elementwise(*pair(amounts.ravel(), other_amounts.ravel()), Liar, amounts.shape), routes)
        if routes:
            def shifted(link):
                return (link + 1) % network.n_links
            lies[f"links_numpy_{order}"] = Allocation(servers, amounts, tuple(
                Route(r.a, r.b, tuple(LiarInt(*pair(link, shifted(link))) for link in r.links)) for r in routes))
            lies[f"links_items_{order}"] = Allocation(servers, amounts, tuple(
                Route(r.a, r.b, tuple(Liar(*pair(link, shifted(link))) for link in r.links)) for r in routes))
            lies[f"ends_{order}"] = Allocation(servers, amounts, tuple(
                Route(Liar(*pair(r.a, r.b)), Liar(*pair(r.b, r.a)), r.links) for r in routes))
            lies[f"route_amount_{order}"] = Allocation(servers, amounts, tuple(
                Route(r.a, r.b, r.links, Liar(*pair(1.0, 1e-9))) for r in routes))
    return lies


def first_reading(allocation: Allocation) -> Allocation:
    """What each liar of an allocation says when first read (liars already read answer their second)."""
    def value(x):
        if isinstance(x, Liar):
            return x.values[0]
        if isinstance(x, LiarInt):
            return x.first
        return x

    def array(x):
        x = value(x)
        return np.array([value(item) for item in np.asarray(x, dtype=object).ravel()],
                        dtype=float).reshape(np.shape(x))

    return Allocation(array(allocation.servers).astype(np.int64), array(allocation.amounts),
                      tuple(Route(int(value(r.a)), int(value(r.b)), tuple(int(value(link)) for link in r.links),
                                  float(value(r.amount))) for r in allocation.routes))


def reserved(network, allocation: Allocation) -> tuple[np.ndarray, np.ndarray]:
    """What ``allocation`` (plain data) takes from every server and link."""
    resources = np.zeros(network.server_capacity.shape)
    resources[allocation.servers] += allocation.amounts
    links = np.zeros(network.n_links)
    for route in allocation.routes:
        links[list(route.links)] += route.amount
    return resources, links


POOL_LIES = sorted(pool_lies(Allocation(np.array([0, 1]), np.ones((2, 2)), (Route(0, 1, (0,)),)),
                             SimpleNamespace(n_servers=2, n_links=1)))


@pytest.mark.parametrize("lie", POOL_LIES)
def test_a_pool_answer_that_lies_is_invalid_or_reserved_exactly_where_it_was_checked(registry, lie):
    from dcbench.engine.simulation import Simulation
    from dcbench.running.runner import draw_requests

    plan = Runner(registry).resolve("tetris", "tiered:8,1x4", "uniform:pairs=all", 48)
    network = plan.network
    sequence = draw_requests(plan, 48, np.random.default_rng(3))
    simulation = Simulation(network, sequence)
    honest = registry.build("allocator", "tetris").obj
    honest.reset(simulation.allocator_network, np.random.default_rng(0))
    committed = invalid = 0
    while (request := simulation.next_request()) is not None:
        answer = honest.allocate(request, simulation.view)
        if isinstance(answer, Allocation) and len(answer.servers) > 1:
            answer = pool_lies(answer, network)[lie]
        before = (simulation.state.free_resources.copy(), simulation.state.free_links.copy())
        accepted = simulation.resolve(answer)
        taken = (before[0] - simulation.state.free_resources, before[1] - simulation.state.free_links)
        if not isinstance(answer, Allocation):
            continue
        if not accepted:
            assert not taken[0].any() and not taken[1].any()
            invalid += simulation.reason[request.id] == "invalid_allocation"
            continue
        as_checked = first_reading(answer)
        assert forbidden(network, request.demand, before[0], before[1], as_checked) is None
        expected = reserved(network, as_checked)
        # (departures are settled before the next request is offered, not in resolve)
        np.testing.assert_array_equal(taken[0], expected[0])
        np.testing.assert_array_equal(taken[1], expected[1])
        committed += 1
    assert committed + invalid > 0


class RefillsTheEnginesState:
    """Reaches the engine one stack frame up and gives itself every
    capacity back before it answers (128/128 accepted in 0.4.2)."""

    def __init__(self, at: int = 0):
        self.at = at
        self.honest = None

    def reset(self, network, rng):
        from dcbench.plugins.allocators.tetris import TetrisAllocator

        self.honest = TetrisAllocator()
        self.honest.reset(network, rng)
        self.capacity = network.server_capacity.copy()

    def allocate(self, request, state):
        import sys

        if request.id >= self.at:
            engine = sys._getframe(1).f_locals["simulation"]
            engine.state.free_resources[:] = self.capacity
            engine.state.free_links[:] = engine.state.link_capacity
        return self.honest.allocate(request, state)


@pytest.mark.parametrize("at", [0, 37])
def test_an_allocator_that_writes_the_engines_state_makes_its_run_invalid(registry, at):
    from dcbench.errors import AllocatorError
    from dcbench.running.runner import draw_requests

    plan = Runner(registry).resolve("tetris", "tiered:8,1x4", "uniform", 64)
    sequence = draw_requests(plan, 64, np.random.default_rng(0))
    with pytest.raises(AllocatorError, match=r"changed the engine's state behind its back \(its free_\w+\[\d+"):
        simulate(plan.network, sequence, RefillsTheEnginesState(at), np.random.default_rng(0))


def test_the_books_are_compared_at_a_bounded_cost_per_request(registry):
    from dcbench.engine.simulation import Books
    from dcbench.model.allocation import State

    small = Books(State(tiered("tiered:32,1x4")))
    large = Books(State(tiered("tiered:32,1x4,pods=64,racks=64")))
    assert small.every == 1 and large.every == 70  # (as docs/guarantees.md says)
    size = large.free_resources.size + 2 * large.free_links.size
    assert size / large.every <= Books.COMPARED_PER_REQUEST


def job_lies(honest: Allocation, network) -> dict[str, Allocation]:
    """`pool_lies` for a job's own fields: its VMs' servers, its routes and its circuit swaps."""
    hosts = honest.vm_servers
    other_hosts = (hosts + 1) % network.n_servers
    lies = {}
    for order, (a, b) in {"honest_first": (0, 1), "cheat_first": (1, 0)}.items():
        def pair(x, y):
            return (x, y) if a == 0 else (y, x)
        lies[f"vm_servers_{order}"] = replace(honest, vm_servers=Liar(*pair(hosts, other_hosts)))
        lies[f"links_{order}"] = replace(honest, routes=tuple(
            Route(r.a, r.b, tuple(LiarInt(*pair(link, (link + 1) % network.n_links)) for link in r.links), r.amount)
            for r in honest.routes))
        lies[f"route_amount_{order}"] = replace(honest, routes=tuple(
            Route(r.a, r.b, r.links, Liar(*pair(r.amount, r.amount / 100))) for r in honest.routes))
        lies[f"swaps_{order}"] = replace(honest, reconfigure=tuple(
            tuple(Liar(*pair(rack, (rack + 1) % network.n_racks)) for rack in swap) for swap in honest.reconfigure))
    return lies


JOB_LIES = sorted(job_lies(Allocation(np.array([0]), np.ones((1, 1)), (Route(0, 1, (0,), 1.0),), np.array([0]),
                                      ((0, 1, 2, 3),)), SimpleNamespace(n_servers=2, n_links=1, n_racks=4)))


@pytest.mark.parametrize("lie", JOB_LIES)
def test_a_job_answer_that_lies_is_invalid_or_reserved_exactly_where_it_was_checked(registry, lie):
    from dcbench.engine.simulation import Simulation
    from dcbench.model.allocation import State, check_snapshot, circuit_changes
    from dcbench.running.runner import draw_requests

    plan = Runner(registry).resolve("jcb", "ocs:8,ports=2", "vmjobs:load=40,warmup=10", 80)  # (it reconfigures)
    network = plan.network
    simulation = Simulation(network, draw_requests(plan, 80, np.random.default_rng(5)))
    honest = registry.build("allocator", "jcb").obj
    honest.reset(simulation.allocator_network, np.random.default_rng(0))
    committed = swapped = 0
    while (request := simulation.next_request()) is not None:
        answer = honest.allocate(request, simulation.view)
        if not isinstance(answer, Allocation):
            simulation.resolve(answer)
            continue
        plain = answer
        swapped += bool(answer.reconfigure)
        if answer.routes or answer.reconfigure:
            answer = job_lies(answer, network)[lie]
        before = State(network)
        for name in ("free_resources", "free_links", "link_capacity"):
            getattr(before, name)[:] = getattr(simulation.state, name)
        accepted = simulation.resolve(answer)
        taken = before.free_links - simulation.state.free_links
        if not accepted:
            assert not taken.any() and simulation.reason[request.id] == "invalid_allocation"
            continue
        def first(x):
            return x.values[0] if isinstance(x, Liar) else x.first if isinstance(x, LiarInt) else x
        as_checked = replace(plain, vm_servers=np.asarray(first(answer.vm_servers)), routes=tuple(
            Route(r.a, r.b, tuple(int(first(link)) for link in r.links), float(first(r.amount)))
            for r in answer.routes), reconfigure=tuple(tuple(int(first(rack)) for rack in swap)
                                                      for swap in answer.reconfigure))
        problem, usage = check_snapshot(as_checked, request, before)
        assert problem is None
        _, change = circuit_changes(network, as_checked.reconfigure, before.free_links)
        np.testing.assert_allclose(taken, usage.dense(network.n_links) - change, rtol=0, atol=1e-9)  # (float sums)
        committed += 1
    assert committed > 0 and swapped > 0
