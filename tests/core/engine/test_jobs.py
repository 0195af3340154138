"""The job builder, the job check and the engine on jobs (OCS circuits)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbench import (
    Allocation,
    Circuits,
    JobAllocator,
    JobBuilder,
    Network,
    PacketModel,
    Request,
    RequestSequence,
    Route,
    State,
    Swap,
    simulate,
)
from dcbench.harness import get_registry
from dcbench.model.allocation import check_allocation, circuit_changes
from dcbench.plugins.allocators.random_server import RandomAllocator

SMALL_VM = [4, 15, 80]
BIG_VM = [16, 122, 3200]


def ocs(spec="ocs:4,servers=2"):
    return Network.compile(get_registry().build("topology", spec).obj)


def job(vms, flows, request_id=0):
    vms = np.asarray(vms, dtype=float)
    return Request(request_id, 0.0, 10.0, vms.sum(axis=0), "job", "all", vms,
                   np.asarray(flows, dtype=float).reshape(-1, 3))


def job_sequence(jobs, holding, gaps=None):
    """A RequestSequence of jobs given as (vms, flows) pairs."""
    vm_offsets = np.cumsum([0] + [len(v) for v, _ in jobs])
    flow_offsets = np.cumsum([0] + [len(f) for _, f in jobs])
    vm_demand = np.concatenate([np.asarray(v, float) for v, _ in jobs])
    flows = np.concatenate([np.asarray(f, float).reshape(-1, 3) for _, f in jobs])
    demand = np.add.reduceat(vm_demand, vm_offsets[:-1], axis=0)
    n = len(jobs)
    return RequestSequence("job", np.ones(n) if gaps is None else np.asarray(gaps, float),
                           np.asarray(holding, float), demand, vm_offsets=vm_offsets, vm_demand=vm_demand,
                           flow_offsets=flow_offsets, flows=flows,
                           packets=PacketModel(packet_bytes=296, buffer_packets=15))


class Fixed(JobAllocator):
    """Places VM k on rack ``racks[k]``."""

    def __init__(self, racks, reconfigure=True):
        self.racks = racks
        self.reconfigure = reconfigure

    def choose_rack(self, builder, allowed):
        return self.racks[builder.step]


def allocate(network, request, racks, reconfigure=True, state=None):
    allocator = Fixed(racks, reconfigure)
    allocator.reset(network, np.random.default_rng(0))
    return allocator.allocate(request, (state or State(network)).read_only())


def test_vms_in_one_rack_use_no_circuit_and_are_spread_over_its_servers():
    network = ocs()
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 7.0], [1, 0, 7.0]])
    result = allocate(network, request, [2, 2])
    assert result.routes == () and result.reconfigure == ()
    assert network.racks[result.vm_servers].tolist() == [2, 2]
    assert len(set(result.vm_servers.tolist())) == 2  # balanced: the second VM takes the emptier server
    assert check_allocation(result, request, State(network))[0] is None


def test_a_flow_between_racks_takes_the_direct_circuit():
    network = ocs()
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 7.0]])
    result = allocate(network, request, [0, 1])
    (route,) = result.routes
    assert (route.a, route.b, route.amount) == (int(network.rack_node[0]), int(network.rack_node[1]), 7.0)
    problem, usage = check_allocation(result, request, State(network))
    assert problem is None and usage[network.link_between(route.a, route.b)] == 7.0


def test_a_flow_that_does_not_fit_is_blocked_without_reconfiguration():
    network = ocs("ocs:4,servers=2,ports=3,reconfigurable=no")  # one 40 Gbps circuit per pair
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])
    result = allocate(network, request, [0, 1])
    assert result.reason == "no_bandwidth"


def test_reconfiguration_adds_a_circuit_from_idle_ones_and_keeps_every_port():
    network = ocs("ocs:4,servers=2,ports=3")  # one circuit per ordered pair
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])
    result = allocate(network, request, [0, 1])
    assert len(result.reconfigure) == 1
    a, b, c, d = result.reconfigure[0]
    assert (a, d) == (0, 1)
    state = State(network)
    problem, _ = check_allocation(result, request, state)
    assert problem is None
    _, change = circuit_changes(network, result.reconfigure, state.free_links)
    capacity = network.link_capacity + change
    circuits = np.zeros((4, 4))
    for link, (x, y) in enumerate(network.link_ends.tolist()):
        circuits[np.flatnonzero(network.rack_node == x)[0], np.flatnonzero(network.rack_node == y)[0]] = \
            capacity[link] / 40
    assert circuits[0, 1] == 2
    assert circuits.sum(axis=1).tolist() == [3] * 4 and circuits.sum(axis=0).tolist() == [3] * 4
    # and the allocator that may not reconfigure is blocked
    assert allocate(network, request, [0, 1], reconfigure=False).reason == "no_bandwidth"


def test_a_circuit_in_use_is_never_moved():
    network = ocs("ocs:4,servers=2,ports=3")  # one circuit per ordered pair
    state = State(network)
    for x, y in ((0, 2), (0, 3)):  # busy: every circuit out of 0 other than 0->1
        state.free_links[network.link_between(network.rack_node[x], network.rack_node[y])] -= 1.0
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])
    assert allocate(network, request, [0, 1], state=state).reason == "no_bandwidth"
    forged = Allocation(np.array([0, 2]), np.array([SMALL_VM, SMALL_VM], float), (), np.array([0, 2]),
                        (Swap(0, 2, 3, 1),))
    problem, _ = check_allocation(forged, job([SMALL_VM, SMALL_VM], []), state)
    assert "not idle" in problem


def two_hops(first, via, last):
    """A 7 Gbps route from rack ``first`` to rack ``last`` relayed by rack ``via``."""
    network = ocs()
    node = network.rack_node
    return Route(int(node[first]), int(node[last]),
                 (network.link_between(node[first], node[via]), network.link_between(node[via], node[last])), 7.0)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda a: dataclasses.replace(a, vm_servers=None), "vm_servers"),
    (lambda a: dataclasses.replace(a, vm_servers=np.array([0, 99])), "out of range"),
    (lambda a: dataclasses.replace(a, amounts=a.amounts * 2), "sum of each one's VMs"),
    (lambda a: dataclasses.replace(a, amounts=a.amounts * np.nan), "sum of each one's VMs"),
    (lambda a: dataclasses.replace(a, servers=a.servers.astype(float)), "sum of each one's VMs"),
    (lambda a: dataclasses.replace(a, routes=()), "exchange 7 Gbps"),
    (lambda a: dataclasses.replace(a, routes=(a.routes[0]._replace(amount=3.0),)), "exchange 7 Gbps"),
    (lambda a: dataclasses.replace(a, routes=(a.routes[0]._replace(links=(a.routes[0].links[0] + 1,)),)), "not a path"),
    (lambda a: dataclasses.replace(a, routes=(Route(a.routes[0].b, a.routes[0].a, a.routes[0].links, 7.0),)),
     "does not join"),
    (lambda a: dataclasses.replace(a, reconfigure=(Swap(0, 1, 1, 0),)), "distinct racks"),
    (lambda a: dataclasses.replace(a, reconfigure=(Swap(0, 1, 2, 1),)), "distinct racks"),  # changes nothing
    (lambda a: dataclasses.replace(a, routes=(two_hops(0, 2, 1),)), "crosses 2 circuits; this topology allows 1"),
    (lambda a: dataclasses.replace(a, reconfigure=(Swap(0, 1, 2, 3),)), "cannot be reconfigured"),
])
def test_invalid_job_allocations_are_named(mutate, fragment):
    network = ocs("ocs:4,servers=2" + (",reconfigurable=no" if "reconfigured" in fragment else ""))
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 7.0]])
    valid = allocate(network, request, [0, 1])
    assert check_allocation(valid, request, State(network))[0] is None
    problem, _ = check_allocation(mutate(valid), request, State(network))
    assert problem is not None and fragment in problem


def test_the_job_check_sums_each_servers_vms_and_names_the_first_server_over_capacity():
    network = ocs()
    request = job([SMALL_VM, BIG_VM, SMALL_VM, SMALL_VM], [])
    hosts = np.array([3, 1, 3, 0])  # server 3 holds the first and the third VM
    amounts = np.array([np.add(SMALL_VM, SMALL_VM), BIG_VM, SMALL_VM], dtype=float)
    valid = Allocation(np.array([3, 1, 0]), amounts, (), hosts)
    assert check_allocation(valid, request, State(network))[0] is None
    reordered = Allocation(np.array([0, 3, 1]), amounts[[2, 0, 1]], (), hosts)  # any order of the servers
    assert check_allocation(reordered, request, State(network))[0] is None
    state = State(network)
    state.free_resources[3] = [6.0, 1000.0, 1000.0]  # room for one small VM's 4 CPUs, not two
    state.free_resources[1] = [1.0, 1000.0, 1000.0]  # and less for the big one, but server 3 comes first
    assert check_allocation(valid, request, state)[0] == "server 3 over capacity on cpu: takes 8, 6 free"
    wrong_sum = Allocation(np.array([3, 1, 0]), amounts[[0, 2, 1]], (), hosts)
    assert "sum of each one's VMs" in check_allocation(wrong_sum, request, State(network))[0]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12))
def test_a_reused_builder_sums_each_rack_as_summing_every_rack_would(seed, n_jobs):
    # `start` sums again only the racks that changed; the sums must be those of all racks, bit for bit,
    # fractional capacities included.
    network = ocs("ocs:4,servers=8")
    rng = np.random.default_rng(seed)
    state = State(network)
    builder = JobBuilder(network)
    for _ in range(n_jobs):
        for server in rng.integers(0, network.n_servers, size=rng.integers(0, 6)):
            state.free_resources[server] = rng.uniform(0, 1, 3) * network.server_capacity[server]
        builder.start(job([SMALL_VM] * int(rng.integers(1, 6)), []), state)
        every_rack = state.free_resources.reshape(4, 8, 3).sum(axis=1)
        assert builder.rack_free.tobytes() == every_rack.tobytes()
        while builder.is_open:
            racks = np.flatnonzero(builder.rack_fits())
            if not len(racks) or not builder.place(int(rng.choice(racks))):
                break
        if rng.random() < 0.5:  # committed: the state takes the very values the builder left on its servers
            state.free_resources[builder.hosts] = builder.free_resources[builder.hosts]


def optical(circuits, **info):
    """`ocs()` with ``circuits`` and these keys added to its info, which is
    descriptive only: what the info says of circuits is never read."""
    from dcbench.plugins.topologies.ocs import build

    topology = build(tors=4, servers=2, ports=3)  # one 40 Gbps circuit per ordered pair
    return Network.compile(dataclasses.replace(topology, circuits=circuits, info={**topology.info, **info}))


@pytest.mark.parametrize("max_hops", [1, 2])
def test_the_builder_and_the_check_take_the_hop_limit_from_the_typed_circuits(max_hops):
    network = optical(Circuits(ports=3, port_gbps=40.0, reconfigurable=False, max_hops=max_hops),
                      max_hops=3 - max_hops)
    assert JobBuilder(network).max_hops == max_hops
    state = State(network)
    state.free_links[network.link_between(network.rack_node[0], network.rack_node[1])] = 0.0  # direct circuit busy
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 7.0]])
    result = allocate(network, request, [0, 1], state=state)
    if max_hops == 1:
        assert result.reason == "no_bandwidth"
        relayed = dataclasses.replace(allocate(network, request, [0, 1]), routes=(two_hops(0, 2, 1),))
        assert "crosses 2 circuits; this topology allows 1" in check_allocation(relayed, request, State(network))[0]
    else:
        (route,) = result.routes
        assert len(route.links) == 2 and check_allocation(result, request, state)[0] is None


@pytest.mark.parametrize("reconfigurable", [True, False])
def test_the_builder_and_the_check_reconfigure_as_the_typed_circuits_say(reconfigurable):
    network = optical(Circuits(ports=3, port_gbps=20.0, reconfigurable=reconfigurable, max_hops=1),
                      reconfigurable=not reconfigurable, port_gbps=40.0)
    builder = JobBuilder(network)
    assert builder.reconfigure_allowed is reconfigurable and builder.circuit == 20.0
    problem, change = circuit_changes(network, (Swap(0, 1, 2, 3),), State(network).free_links)
    if reconfigurable:  # a swap moves one circuit of the typed port speed
        assert problem is None and sorted(set(change.tolist())) == [-20.0, 0.0, 20.0]
    else:
        assert problem == "this topology cannot be reconfigured"
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])  # more than the 40 Gbps of the direct circuit
    result = allocate(network, request, [0, 1])
    if reconfigurable:
        assert len(result.reconfigure) == 1 and check_allocation(result, request, State(network))[0] is None
    else:
        assert result.reason == "no_bandwidth"


class SetsReconfigureLate(Fixed):
    """Sets ``self.reconfigure`` after ``super().reset()`` made the builder
    (the trap of #30: the builder once kept the setting it was made with)."""

    def __init__(self, racks, late):
        super().__init__(racks, reconfigure=not late)
        self.late = late

    def reset(self, network, rng):
        super().reset(network, rng)
        self.reconfigure = self.late


@pytest.mark.parametrize("late", [False, True])
def test_reconfigure_set_after_super_reset_takes_effect(late):
    network = ocs("ocs:4,servers=2,ports=3")  # one 40 Gbps circuit per ordered pair
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])  # needs a second circuit
    allocator = SetsReconfigureLate([0, 1], late)
    allocator.reset(network, np.random.default_rng(0))
    assert allocator.job_builder.reconfigure is not late  # made with the constructor's setting...
    result = allocator.allocate(request, State(network).read_only())
    if late:  # ...and routed with the one the allocator set afterwards
        assert len(result.reconfigure) == 1 and check_allocation(result, request, State(network))[0] is None
    else:
        assert result.reason == "no_bandwidth"
    assert allocator.job_builder.reconfigure is late
    allocator.reconfigure = not late  # between two jobs, too
    again = allocator.allocate(request, State(network).read_only())
    assert (len(again.reconfigure) == 1) if not late else (again.reason == "no_bandwidth")


def test_the_builders_own_reconfigure_decides_and_its_reconfigure_allowed_is_read_only():
    network = ocs("ocs:4,servers=2,ports=3")
    builder = JobBuilder(network)
    assert builder.reconfigure and builder.reconfigure_allowed
    builder.reconfigure = False
    assert not builder.reconfigure_allowed
    with pytest.raises(AttributeError):
        builder.reconfigure_allowed = True
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])
    builder.start(request, State(network).read_only())
    builder.place(0)
    builder.place(1)
    assert not builder.route() and builder.reason == "no_bandwidth"
    builder.reconfigure = True
    builder.start(request, State(network).read_only())
    builder.place(0)
    builder.place(1)
    assert builder.route() and len(builder.swaps) == 1
    assert not JobBuilder(ocs("ocs:4,servers=2,ports=3,reconfigurable=no")).reconfigure_allowed


def test_a_topology_without_circuits_has_none_whatever_its_info_says():
    network = optical(None, ports=3, port_gbps=40.0, reconfigurable=True, max_hops=2)
    builder = JobBuilder(network)
    assert (builder.reconfigure_allowed, builder.circuit, builder.max_hops) == (False, 0.0, 1)
    problem, _ = circuit_changes(network, (Swap(0, 1, 2, 3),), State(network).free_links)
    assert problem == "this topology cannot be reconfigured"
    request = job([SMALL_VM, SMALL_VM], [[0, 1, 7.0]])
    relayed = dataclasses.replace(allocate(network, request, [0, 1]), routes=(two_hops(0, 2, 1),))
    assert check_allocation(relayed, request, State(network))[0] is None  # no hop limit without circuits


def test_a_vm_too_big_for_any_server_of_the_rack_fails_the_job():
    network = ocs("ocs:2,servers=1")
    request = job([BIG_VM, BIG_VM], [])
    assert allocate(network, request, [0, 0]).reason == "no_server"


def test_the_engine_commits_circuit_swaps_and_releases_only_the_traffic():
    network = ocs("ocs:4,servers=2,ports=3")
    sequence = job_sequence([([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])], [5.0])
    state = State(network)
    tables = simulate(network, sequence, Fixed([0, 1]), np.random.default_rng(0), state=state, drain=True)
    assert tables.requests["outcome"].tolist() == ["accepted"]
    assert tables.requests["reconfigurations"].tolist() == [1]
    assert tables.requests["inter_rack_gbps"].tolist() == [50.0]
    # the new circuit stays; everything reserved came back
    assert np.array_equal(state.free_links, state.link_capacity)
    assert not np.array_equal(state.link_capacity, network.link_capacity)
    assert state.link_capacity.sum() == network.link_capacity.sum()
    assert np.array_equal(state.free_resources, network.server_capacity)
    assert np.isfinite(tables.timeline["latency_us"][0]) and tables.timeline["latency_us"][0] > 0


def test_the_engine_models_packets_from_the_sequences_packet_model_only():
    network = ocs()

    def timeline(**changes):
        sequence = dataclasses.replace(job_sequence([([SMALL_VM, SMALL_VM], [[0, 1, 30.0]])], [5.0]), **changes)
        return simulate(network, sequence, Fixed([0, 1]), np.random.default_rng(0)).timeline

    paper = timeline(packets=PacketModel(packet_bytes=296))
    assert PacketModel(packet_bytes=296) == PacketModel(packet_bytes=296, buffer_packets=15)
    larger = timeline(packets=PacketModel(packet_bytes=592, buffer_packets=15))
    shallower = timeline(packets=PacketModel(packet_bytes=296, buffer_packets=2))
    assert larger["latency_us"][0] == pytest.approx(2 * paper["latency_us"][0])
    assert shallower["packet_loss"][0] > paper["packet_loss"][0] > 0
    unmodelled = timeline(packets=None, extra={"packet_bytes": 296, "buffer_packets": 15})
    assert not {"latency_us", "packet_loss"} & set(unmodelled)


class HandsOverIterators(Fixed):
    """`Fixed`, with its routes and swaps handed over as iterators, which can be read only once."""

    def allocate(self, request, state):
        allocation = super().allocate(request, state)
        return dataclasses.replace(allocation, routes=iter(allocation.routes),
                                   reconfigure=iter(allocation.reconfigure))


def test_routes_and_swaps_handed_over_as_iterators_are_checked_and_committed_alike():
    network = ocs("ocs:4,servers=2,ports=3")
    sequence = job_sequence([([SMALL_VM, SMALL_VM], [[0, 1, 50.0]])], [5.0])
    tables = {type(allocator): simulate(network, sequence, allocator, np.random.default_rng(0))
              for allocator in (Fixed([0, 1]), HandsOverIterators([0, 1]))}
    for name in ("outcome", "reconfigurations", "inter_rack_gbps", "channels_tier1"):
        assert tables[Fixed].requests[name].tolist() == tables[HandsOverIterators].requests[name].tolist(), name
    assert tables[HandsOverIterators].requests["inter_rack_gbps"].tolist() == [50.0]


def circuits_per_port(network, capacity):
    out = np.zeros(network.n_racks)
    into = np.zeros(network.n_racks)
    rack_of = {int(n): r for r, n in enumerate(network.rack_node.tolist())}
    for link, (a, b) in enumerate(network.link_ends.tolist()):
        out[rack_of[a]] += capacity[link]
        into[rack_of[b]] += capacity[link]
    return out, into


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), load=st.sampled_from([4.0, 12.0, 30.0]),
       pattern=st.sampled_from(["ring", "all"]), tors=st.sampled_from([3, 5]))
def test_jobs_never_overbook_and_every_port_stays_in_use(seed, load, pattern, tors):
    network = ocs(f"ocs:{tors},servers=2,ports=4")
    workload = get_registry().build("workload", f"vmjobs:load={load},min_vms=2,max_vms=6,pattern={pattern},"
                                    "min_gbps=10,max_gbps=30,warmup=0").obj
    sequence = workload.generate(network, 40, np.random.default_rng(seed))
    state = State(network)
    out_ports, in_ports = circuits_per_port(network, network.link_capacity)

    class Checking(RandomAllocator):
        def allocate(self, request, view):
            assert (view.free_links >= -1e-9).all() and (view.free_links <= view.link_capacity + 1e-9).all()
            assert (view.free_resources >= -1e-9).all()
            out, into = circuits_per_port(network, view.link_capacity)
            assert np.allclose(out, out_ports) and np.allclose(into, in_ports)
            return super().allocate(request, view)

    tables = simulate(network, sequence, Checking(), np.random.default_rng(seed), state=state, drain=True)
    assert (tables.requests["reason"] != "invalid_allocation").all()
    assert np.allclose(state.free_links, state.link_capacity)
    assert np.allclose(state.free_resources, network.server_capacity)


def test_the_builder_refuses_a_pool_request():
    network = ocs()
    builder = JobBuilder(network)
    pool = Request(0, 0.0, 1.0, np.array([1.0, 1.0, 1.0]))
    with pytest.raises(Exception, match="not a job"):
        builder.start(pool, State(network))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40), st.integers(0, 2**32 - 1))
def test_the_servers_and_racks_that_fit_the_next_vm_are_kept_up_to_date_between_vms(vms, seed):
    # server_fits() reuses its mask while VMs of one type follow one another, rack_fits() counts per rack
    # and server_in() scores a rack's servers as one slice: each must equal the plain computation.
    network = ocs("ocs:3,servers=3")
    rng = np.random.default_rng(seed)
    state = State(network)
    state.free_resources[:] = rng.uniform(0, 1, state.free_resources.shape) * network.server_capacity
    builder = JobBuilder(network)
    types = [[4, 15, 80], [16, 32, 320], [16, 122, 320], [16, 122, 3200]]
    builder.start(job([types[kind] for kind, _ in vms], []), state)
    for _, pick in vms:
        expected = (builder.free_resources >= builder.vm - 1e-9).all(axis=1)
        assert np.array_equal(builder.server_fits(), expected)
        assert np.array_equal(builder.rack_fits(), [expected[network.racks == r].any() for r in range(3)])
        for rack in range(3):
            members = np.flatnonzero((network.racks == rack) & expected)
            after = ((builder.free_resources[members] - builder.vm) / network.server_capacity[members]).min(axis=1)
            assert builder.server_in(rack) == (int(members[after.argmax()]) if len(members) else None)
        racks = np.flatnonzero(builder.rack_fits())
        if len(racks) == 0 or not builder.place(int(racks[pick % len(racks)])):
            break
