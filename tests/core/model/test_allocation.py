import numpy as np
import pytest

from dcbench import Allocation, Request, Route, State
from dcbench.model.allocation import check_allocation, required_pairs


def request(demand, rule="all"):
    return Request(0, 0.0, 1.0, np.asarray(demand, dtype=float), "pool", rule)


def routes_for(network, servers):
    return tuple(Route(servers[j], servers[i], network.paths.between_servers(servers[j], servers[i])[0])
                 for i in range(len(servers)) for j in range(i))


def valid(network):
    servers = [0, 20, 40]
    return Allocation(np.array(servers), np.array([[16, 10], [16, 16], [4, 0.0]]), routes_for(network, servers))


def test_a_valid_allocation_passes_and_reports_link_usage(small_network):
    state = State(small_network)
    problem, usage = check_allocation(valid(small_network), request([36, 26]), state)
    assert problem is None
    # Three pairs, each one channel on the SR link of both of its servers.
    for server in (0, 20, 40):
        assert usage[small_network.server_link[server]] == 2


@pytest.mark.parametrize("mutate, fragment", [
    (lambda a, n: Allocation(a.servers, a.amounts[:, :1], a.routes), "shape"),
    (lambda a, n: Allocation(np.array([0, 0, 40]), a.amounts, a.routes), "appears twice"),
    (lambda a, n: Allocation(np.array([0, 20, 999]), a.amounts, a.routes), "out of range"),
    (lambda a, n: Allocation(a.servers, a.amounts * 2, a.routes), "demand is"),
    (lambda a, n: Allocation(a.servers, np.array([[20, 10], [12, 16], [4, 0.0]]), a.routes), "over capacity on cpu"),
    (lambda a, n: Allocation(a.servers, a.amounts, a.routes[:2]), "need a path"),
    (lambda a, n: Allocation(a.servers, a.amounts, a.routes[:2] + (Route(0, 40, a.routes[0].links),)), "not a path"),
    (lambda a, n: Allocation(a.servers, a.amounts, a.routes + (Route(0, 63, a.routes[0].links),)), "does not join"),
    (lambda a, n: Allocation(a.servers, np.array([[20, 10], [16, 16], [0, 0.0]]), a.routes), "gives nothing"),
    (lambda a, n: Allocation(a.servers, np.array([[np.nan, 10], [16, 16], [4, 0.0]]), a.routes), "finite"),
    # A pair reserves exactly one channel: a route's amount is the model's, not the allocator's.
    (lambda a, n: Allocation(a.servers, a.amounts, tuple(r._replace(amount=1e-9) for r in a.routes)),
     "reserves 1e-09 channels; a pool request's pair reserves exactly 1"),
    (lambda a, n: Allocation(a.servers, a.amounts, (a.routes[0]._replace(amount=2.0),) + a.routes[1:]), "exactly 1"),
    (lambda a, n: Allocation(a.servers, a.amounts, (a.routes[0]._replace(amount=np.nan),) + a.routes[1:]), "exactly"),
    (lambda a, n: Allocation(a.servers, a.amounts, a.routes + a.routes[:1]), "joined by two routes"),
])
def test_invalid_allocations_are_named(small_network, mutate, fragment):
    allocation = mutate(valid(small_network), small_network)
    problem, _ = check_allocation(allocation, request([36, 26]), State(small_network))
    assert problem is not None and fragment in problem


@pytest.mark.parametrize("mutate, error", [
    (lambda a: Allocation(a.servers, a.amounts.astype(complex), a.routes), "amounts are of type complex128"),
    (lambda a: Allocation(a.servers, a.amounts.astype(str), a.routes), "not real numbers"),
    (lambda a: Allocation(a.servers, a.amounts, (a.routes[0]._replace(amount="1"),) + a.routes[1:]), "not a number"),
    (lambda a: Allocation(a.servers, a.amounts, (a.routes[0]._replace(a=0.0),) + a.routes[1:]), "integer"),
])
def test_fields_of_the_wrong_kind_are_refused_not_converted(small_network, mutate, error):
    with pytest.raises(TypeError, match=error):
        check_allocation(mutate(valid(small_network)), request([36, 26]), State(small_network))


def test_link_over_capacity(small_network):
    state = State(small_network)
    state.free_links[small_network.server_link[40]] = 1  # both routes to server 40 need its link
    problem, _ = check_allocation(valid(small_network), request([36, 26]), state)
    assert problem is not None and "over capacity" in problem


def test_required_pairs_rules():
    cpu = np.array([5, 0, 3, 0])
    assert required_pairs("all", cpu) == [(0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3)]
    # cpu: a pair is needed unless neither server gives CPU.
    assert required_pairs("cpu", cpu) == [(0, 1), (0, 2), (1, 2), (0, 3), (2, 3)]
    # reference: a CPU-less newcomer skips every pair from the first CPU-less
    # earlier server on (sticky flag), even (2, 3) where server 2 gave CPU.
    assert required_pairs("reference", cpu) == [(0, 1), (0, 2), (1, 2), (0, 3)]


def test_a_snapshot_reads_the_links_of_a_path_the_engine_knows_as_they_are_and_others_link_by_link(small_network):
    from dcbench.model.allocation import snapshot_allocation

    known = small_network.paths.between_servers(0, 20)[0]
    assert small_network.path_ends(known) is not None and id(known) in small_network.path_ends_by_id
    numpy_links = tuple(np.int64(link) for link in known)
    assert small_network.path_ends(numpy_links) == small_network.path_ends(known)
    assert id(numpy_links) not in small_network.path_ends_by_id  # (by id: tuples of plain ints only)
    for links in (known, numpy_links):
        allocation = Allocation(np.array([0, 20]), np.ones((2, 2)), (Route(0, 20, links),))
        snapshot = snapshot_allocation(allocation, small_network.path_ends_by_id)
        assert [type(link) for link in snapshot.routes[0].links] == [int] * len(known)
        assert (snapshot.routes[0].links is known) == (links is known)
