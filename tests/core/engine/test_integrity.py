"""What an allocator returns or touches cannot forge a result: the engine
commits only allocations the model allows, and nothing an allocator is
handed (network, state, request) reaches the engine's checks or another run.

The cheats below are the ones an adversarial audit found, and a few more;
they register as a third party's allocators would."""

from __future__ import annotations

import hashlib
import importlib.metadata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbench import Allocation, Reject, Route, hookimpl, simulate
from dcbench.harness import Runner
from dcbench.registry import create_registry

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

    from dcbench.harness.runner import draw_requests

    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    sequence = draw_requests(plan, 24, rng.spawn(1)[0])
    outcome = simulate(plan.network, sequence, Mutating(), rng).requests["outcome"]
    for request_id, problem in offered:
        assert (outcome[request_id] == "accepted") == (problem is None), (request_id, problem)
