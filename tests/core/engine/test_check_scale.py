"""The engine's check counts only the links an allocation's routes use (#34):
it must refuse and report exactly what a check over every link's array does."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbench import Allocation, Network, Request, Route, State
from dcbench.harness import get_registry
from dcbench.model import allocation as allocation_module
from dcbench.model.allocation import (
    CHANNELS_PER_PAIR,
    COUNT_ALL_LINKS_BELOW,
    check_allocation,
    check_snapshot,
    required_pairs,
    snapshot_allocation,
)

TOLERANCE = 1e-9


def compiled(spec):
    return Network.compile(get_registry().build("topology", spec).obj)


NETWORK = compiled("tiered:8,1x4")


def reference_links(network, routes, free, pool):
    """The full-array check of the routes' links, as the engine did it
    before #34: every link's usage, then every link compared with its free
    capacity. Pools' routes are assumed to have passed the route checks."""
    usage = np.zeros(network.n_links)
    if pool:
        links = [link for route in routes for link in route.links]
        if links:
            usage = np.bincount(links, minlength=network.n_links) * CHANNELS_PER_PAIR
    else:
        for route in routes:
            np.add.at(usage, list(route.links), route.amount)
    over = usage > free + TOLERANCE
    if over.any():
        link = int(np.flatnonzero(over)[0])
        return f"link {link} over capacity: reserves {usage[link]:g}, {free[link]:g} free", usage
    return None, usage


def reference_pool(allocation, request, state):
    """The pool check from its routes on, over full arrays (the checks
    before the routes did not change)."""
    network = state.network
    servers = allocation.servers.tolist()
    position = {s: i for i, s in enumerate(servers)}
    routed = set()
    for a, b, links, _ in allocation.routes:
        i, j = position.get(a), position.get(b)
        if i is None or j is None or i == j:
            return f"route {a}->{b} does not join two servers of the allocation", np.zeros(network.n_links)
        ends = network.path_ends(links)
        if ends is None or set(ends) != {a, b}:
            return f"route {a}->{b} is not a path between them", np.zeros(network.n_links)
        pair = (min(i, j), max(i, j))
        if pair in routed:
            return (f"servers {a} and {b} are joined by two routes; a pair reserves one path",
                    np.zeros(network.n_links))
        routed.add(pair)
    problem, usage = reference_links(network, allocation.routes, state.free_links, pool=True)
    if problem is not None:
        return problem, usage
    for pair in required_pairs(request.connectivity, allocation.amounts[:, 0]):
        if pair not in routed:
            return f"servers {servers[pair[0]]} and {servers[pair[1]]} need a path and have none", usage
    return None, usage


@st.composite
def pool_cases(draw):
    network = NETWORK
    n = draw(st.integers(1, 6))
    servers = draw(st.lists(st.integers(0, network.n_servers - 1), min_size=n, max_size=n, unique=True))
    cpu = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n))
    amounts = np.array([[c, 1.0] for c in cpu])
    rule = draw(st.sampled_from(["all", "cpu", "reference"]))
    routes = []
    for i in range(n):
        for j in range(i):
            if draw(st.integers(0, 9)) == 0:
                continue  # a missing pair
            paths = network.paths.between_servers(servers[j], servers[i])
            links = paths[draw(st.integers(0, len(paths) - 1))]
            routes.append(Route(servers[j], servers[i], links))
    routes = draw(st.permutations(routes))
    kind = draw(st.integers(0, 9))
    if kind == 0 and routes:  # a route that joins the wrong servers
        route = routes[0]
        routes[0] = Route(route.a, draw(st.integers(0, network.n_servers - 1)), route.links)
    elif kind == 1 and routes:  # a pair routed twice
        routes.append(routes[draw(st.integers(0, len(routes) - 1))])
    # Free capacity on the links used: full, used up, about what one route needs, or negative.
    free = network.link_capacity.copy()
    touched = sorted({link for route in routes for link in route.links})
    for link in draw(st.lists(st.sampled_from(touched), max_size=4)) if touched else []:
        free[link] = draw(st.sampled_from([0.0, -0.0, -1.0, 1.0, 2.0, 1.0 - 1e-12, 1.0 - 1e-8]))
    if draw(st.booleans()):  # (a pool's free channels are whole numbers, never negative)
        free[draw(st.integers(0, network.n_links - 1))] = draw(st.sampled_from([0.0, -0.0]))
    state = State(network)
    state.free_links[:] = free
    request = Request(0, 0.0, 1.0, amounts.sum(axis=0), "pool", rule)
    return Allocation(np.array(servers), amounts, tuple(routes)), request, state


@pytest.mark.parametrize("count_all_links_below", [COUNT_ALL_LINKS_BELOW, 0], ids=["bincount", "unique"])
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pool_cases())
def test_the_pool_check_refuses_and_reports_as_the_full_array_check(monkeypatch, count_all_links_below, case):
    # A small network's usage is counted over every link, a large one's from its routes' links sorted: both ways.
    monkeypatch.setattr(allocation_module, "COUNT_ALL_LINKS_BELOW", count_all_links_below)
    allocation, request, state = case
    expected, expected_usage = reference_pool(snapshot_allocation(allocation), request, state)
    problem, usage = check_allocation(allocation, request, state)
    assert problem == expected
    assert usage.tobytes() == expected_usage.tobytes()
    _, sparse = check_snapshot(snapshot_allocation(allocation), request, state)
    assert sparse.links.dtype == np.int64 and np.all(np.diff(sparse.links) > 0)
    assert np.array_equal(sparse.links, np.flatnonzero(expected_usage))


OCS = compiled("ocs:4,servers=2")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.1, 30.0), min_size=1, max_size=6), st.integers(0, 2),
       st.sampled_from([40.0, 25.0, 0.0, 1e-3, -0.0]))
def test_the_job_check_sums_each_link_as_the_full_array_check(parts, spare, free_there):
    """Routes split a flow over the same circuit: each link's sum is added
    in the order of the routes, as the full array's np.add.at did."""
    network = OCS
    vms = np.array([[4.0, 15.0, 80.0], [4.0, 15.0, 80.0]])
    gbps = float(sum(parts))
    a, b = int(network.rack_node[0]), int(network.rack_node[1])
    link = network.link_between(a, b)
    routes = tuple(Route(a, b, (link,), float(p)) for p in parts)
    hosts = np.array([0, network.n_servers // 4])  # racks 0 and 1
    request = Request(0, 0.0, 10.0, vms.sum(axis=0), "job", "all", vms, np.array([[0, 1, gbps]]))
    allocation = Allocation(hosts, vms, routes, vm_servers=hosts)
    state = State(network)
    state.free_links[link] = free_there
    state.free_links[(link + 1 + spare) % network.n_links] = -1.0  # a link the routes do not use
    problem, usage = check_allocation(allocation, request, state)
    free = state.free_links + np.zeros(network.n_links)  # (plus the swaps' change: none; -0.0 becomes 0.0)
    expected, expected_usage = reference_links(network, routes, free, pool=False)
    assert usage.tobytes() == expected_usage.tobytes()
    if expected is None or expected.startswith(f"link {link} "):
        assert problem == expected
    else:  # the full array refused for a link no route uses; the check looks only at those it uses
        assert problem is None or f"link {link} " in problem


@pytest.mark.parametrize("drop", [False, True])
def test_a_valid_pool_allocation_commits_the_links_it_uses(drop):
    network = NETWORK
    servers = [0, 9, 40]
    routes = tuple(Route(servers[j], servers[i], network.paths.between_servers(servers[j], servers[i])[0])
                   for i in range(3) for j in range(i))
    allocation = Allocation(np.array(servers), np.array([[1.0, 1.0]] * 3), routes[1:] if drop else routes)
    request = Request(0, 0.0, 1.0, np.array([3.0, 3.0]), "pool", "all")
    problem, usage = check_snapshot(snapshot_allocation(allocation), request, State(network))
    assert (problem is not None) == drop
    expected = np.zeros(network.n_links)
    for route in allocation.routes:
        np.add.at(expected, list(route.links), 1.0)
    assert np.array_equal(usage.dense(network.n_links), expected)
