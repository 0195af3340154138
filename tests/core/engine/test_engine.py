import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbench import Allocation, AllocatorError, PoolAllocator, Reject, RequestSequence, Route, State, simulate
from dcbench.harness import Runner
from dcbench.model.requests import checked_sequence
from dcbench.plugins.allocators.jcb import JCBAllocator
from dcbench.plugins.allocators.random_server import RandomAllocator
from dcbench.plugins.allocators.tetris import TetrisAllocator
from dcbench.running.runner import draw_requests
from tests.conftest import tiered


class FirstFit(PoolAllocator):
    def choose(self, builder, allowed):
        return int(np.flatnonzero(allowed)[0])


def sequence(demands, holding, gaps=None, wait=False, rule="all"):
    demands = np.asarray(demands, dtype=float)
    return RequestSequence("pool", np.ones(len(demands)) if gaps is None else np.asarray(gaps, float),
                           np.asarray(holding, float), demands, rule, wait)


def test_a_request_held_h_units_is_there_for_the_next_h_arrivals(rng):
    network = tiered("tiered:8,1x4,servers=2")  # 8 servers, 128 cpu
    seq = sequence([[120, 1], [100, 1], [100, 1], [100, 1]], [2, 1, 1, 1])
    tables = simulate(network, seq, FirstFit(), rng)
    assert tables.requests["outcome"].tolist() == ["accepted", "rejected", "rejected", "accepted"]
    assert tables.requests["departure_time"][0] == 3.0


def test_waiting_until_the_request_fits(rng):
    network = tiered("tiered:8,1x4,servers=2")
    seq = sequence([[120, 1], [100, 1]], [5, 1], wait=True)
    tables = simulate(network, seq, FirstFit(), rng)
    assert tables.requests["outcome"].tolist() == ["accepted", "accepted"]
    assert tables.requests["arrival_time"][1] == 2.0
    assert tables.requests["offer_time"][1] == 7.0  # request 0 leaves after time 6
    departures = tables.timeline["event"] == "departure"
    assert tables.timeline["time"][departures].tolist() == [6.0]


def test_a_request_larger_than_the_data_centre_is_skipped(small_network, rng):
    tables = simulate(small_network, sequence([[2000, 1], [10, 1]], [1, 1], wait=True), FirstFit(), rng)
    assert tables.requests["outcome"].tolist() == ["skipped", "accepted"]
    assert tables.requests["reason"][0] == "exceeds_total_capacity"


class Overcommitting(PoolAllocator):
    """Claims a server's whole demand on server 0, whatever fits."""

    def allocate(self, request, state):
        return Allocation(np.array([0]), request.demand[None, :].copy(), ())


def test_an_invalid_allocation_is_a_reject_and_leaves_the_state_untouched(small_network, rng):
    state = State(small_network)
    tables = simulate(small_network, sequence([[8, 8], [32, 1]], [10, 10]), Overcommitting(), rng, state=state)
    assert tables.requests["outcome"].tolist() == ["accepted", "rejected"]
    assert tables.requests["reason"][1] == "invalid_allocation"
    assert "over capacity" in tables.requests["detail"][1]
    assert state.free_resources[0].tolist() == [8, 8]
    assert state.free_resources[1:].min() == 16


class Raising(PoolAllocator):
    def allocate(self, request, state):
        raise ZeroDivisionError("boom")


class Garbage(PoolAllocator):
    def allocate(self, request, state):
        return "server 3, please"


class Writer(PoolAllocator):
    def allocate(self, request, state):
        state.free_resources[0] = 0


class RefusesToStart(PoolAllocator):
    def reset(self, network, rng):
        raise ValueError("needs resources (cpu, mem, gpu)")


class RaisesAtLength(PoolAllocator):
    def allocate(self, request, state):
        raise RuntimeError("first line\nsecond line\nthird line")


class Unlocker(PoolAllocator):
    def allocate(self, request, state):
        state.free_resources.flags.writeable = True  # a plain read-only view would let it


class RoutesOfNone(FirstFit):
    def allocate(self, request, state):
        allocation = super().allocate(request, state)
        return Allocation(allocation.servers, allocation.amounts, None)


class RejectsWith(PoolAllocator):
    def __init__(self, reason):
        self.reason = reason

    def allocate(self, request, state):
        return Reject(self.reason)


class ChangesTheFuture(PoolAllocator):
    """Tries to unlock the requests still to come (to make them smaller, say)."""

    def allocate(self, request, state):
        request.demand.base.flags.writeable = True


class Exits(PoolAllocator):
    def allocate(self, request, state):
        raise SystemExit(0)  # would end the process as a success, with nothing written


class ExitsOnStart(PoolAllocator):
    def reset(self, network, rng):
        raise SystemExit(3)


def test_an_allocator_that_exits_on_start_is_its_failure_not_the_runs_end(small_network, rng):
    with pytest.raises(AllocatorError, match="allocator could not start on this topology: SystemExit: 3$"):
        simulate(small_network, sequence([[8, 8]], [1]), ExitsOnStart(), rng)


@pytest.mark.parametrize("allocator, fragment", [
    (RefusesToStart(), "allocator could not start on this topology: ValueError: needs resources"),
    (Raising(), "allocator raised ZeroDivisionError: boom (request 0)"),
    (Garbage(), "allocator returned str for request 0; expected an Allocation, a Reject or None"),
    (Writer(), "allocator raised ValueError: assignment destination is read-only"),
    (Unlocker(), "allocator raised ValueError: cannot set WRITEABLE flag to True of this array"),
    (RoutesOfNone(), "allocator returned a malformed Allocation for request 0 (TypeError: 'NoneType' object is "
                     "not iterable)"),
    (Exits(), "allocator raised SystemExit: 0 (request 0)"),
    (RejectsWith(5), "allocator rejected request 0 with the reason 5; a reason is a short line of text"),
    (RejectsWith(""), "allocator rejected request 0 with the reason ''; a reason"),
    (RejectsWith("no\npath"), "allocator rejected request 0 with the reason 'no\\npath'; a reason"),
])
def test_misbehaving_allocators_stop_the_run_with_a_clear_error(small_network, rng, allocator, fragment):
    with pytest.raises(AllocatorError) as info:
        simulate(small_network, sequence([[8, 8]], [1]), allocator, rng)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


class ReusesOneBuffer(FirstFit):
    """Hands the engine the same amounts array every time, refilled for each request."""

    def reset(self, network, rng):
        super().reset(network, rng)
        self.buffer = np.zeros((network.n_servers, len(network.resources)))

    def allocate(self, request, state):
        allocation = super().allocate(request, state)
        if not isinstance(allocation, Allocation):
            return allocation
        given = self.buffer[:len(allocation.servers)]
        self.buffer[:] = 0
        given[:] = allocation.amounts
        return Allocation(allocation.servers, given, allocation.routes)


def test_the_engine_keeps_its_own_copy_of_what_it_commits(small_network, rng):
    demands = [[4, 4], [20, 20], [4, 4], [20, 20]]
    state = State(small_network)
    simulate(small_network, sequence(demands, [10, 10, 10, 10]), ReusesOneBuffer(), rng, state=state, drain=True)
    assert np.array_equal(state.free_resources, small_network.server_capacity)  # all of it came back


def test_an_allocator_cannot_change_the_requests_still_to_come(small_network, rng):
    checked = checked_sequence(sequence([[8, 8], [4, 4]], [1, 1]), small_network, 2, "pool")  # as a run draws them
    with pytest.raises(AllocatorError, match="raised ValueError: cannot set WRITEABLE flag to True of this array"):
        simulate(small_network, checked, ChangesTheFuture(), rng)
    assert checked.demand.tolist() == [[8, 8], [4, 4]]


class ReadsDifferentlyTheSecondTime:
    """Amounts that are what was asked the first time they are read, and far more after that."""

    def __init__(self, amounts):
        self.amounts = np.asarray(amounts)
        self.reads = 0

    def __array__(self, dtype=None, copy=None):
        self.reads += 1
        return self.amounts if self.reads == 1 else self.amounts * 1000


class Shifty(FirstFit):
    def allocate(self, request, state):
        allocation = super().allocate(request, state)
        return Allocation(allocation.servers, ReadsDifferentlyTheSecondTime(allocation.amounts), allocation.routes)


def test_what_is_committed_is_what_was_checked(small_network, rng):
    state = State(small_network)
    tables = simulate(small_network, sequence([[8, 8]], [10]), Shifty(), rng, state=state)
    assert tables.requests["outcome"].tolist() == ["accepted"]
    assert (small_network.server_capacity - state.free_resources).sum(axis=0).tolist() == [8, 8]


def test_a_many_line_exception_is_reported_by_its_first_line(small_network, rng):
    with pytest.raises(AllocatorError) as info:
        simulate(small_network, sequence([[8, 8]], [1]), RaisesAtLength(), rng)
    assert str(info.value) == "allocator raised RuntimeError: first line (request 0); fix the allocator"


def test_timeline_utilisation_matches_the_requests(small_network, rng):
    tables = simulate(small_network, sequence([[64, 32], [64, 32]], [10, 10]), FirstFit(), rng)
    cpu = tables.timeline["cpu_util"]
    assert cpu.tolist() == [64 / 1024, 128 / 1024]
    assert tables.timeline["mem_util"][-1] == 64 / 1024


class Chaotic(PoolAllocator):
    """Sometimes valid, sometimes impossible, sometimes a reject: never trusted."""

    def reset(self, network, rng):
        super().reset(network, rng)
        self.inner = RandomAllocator()
        self.inner.reset(network, rng)

    def allocate(self, request, state):
        # Invariants hold whenever an allocator looks at the state.
        assert state.free_resources.min() >= 0 and state.free_links.min() >= 0
        assert (state.free_resources <= self.network.server_capacity).all()
        assert (state.free_links <= self.network.link_capacity).all()
        roll = self.rng.random()
        if roll < 0.5:
            return self.inner.allocate(request, state)
        if roll < 0.6:
            return Reject("nope")
        if roll < 0.8:  # demand met on random servers, maybe over capacity, random routes
            servers = self.rng.choice(self.network.n_servers, size=2, replace=False)
            amounts = np.vstack([request.demand / 2, request.demand / 2])
            links = self.network.paths.between_servers(int(servers[0]), int(servers[1]))[0]
            return Allocation(servers, amounts, (Route(int(servers[0]), int(servers[1]), links),))
        servers = np.array([int(self.rng.integers(self.network.n_servers))])
        return Allocation(servers, request.demand[None, :] * self.rng.uniform(0.5, 1.5), ())


requests_strategy = st.lists(
    st.tuples(st.integers(0, 96), st.integers(0, 96), st.integers(1, 40), st.integers(0, 3)),
    min_size=1, max_size=60,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests_strategy, st.sampled_from(["all", "cpu", "reference"]), st.booleans(),
       st.sampled_from(["random", "tetris", "chaotic"]), st.integers(0, 2**32 - 1),
       st.sampled_from(["tiered:2,1x4", "tiered:8,1x16", "tiered:1,1x1"]))
def test_every_capacity_comes_back_and_nothing_is_ever_over(rows, rule, wait, kind, seed, topology):
    network = tiered(topology)
    demands = [[max(c, 1), m] for c, m, _, _ in rows]
    seq = sequence(demands, [h for *_, h, _ in rows], gaps=[g for *_, g in rows], wait=wait, rule=rule)
    allocator = {"random": RandomAllocator, "tetris": TetrisAllocator, "chaotic": Chaotic}[kind]()
    state = State(network)
    tables = simulate(network, seq, allocator, np.random.default_rng(seed), state=state, drain=True)
    assert np.array_equal(state.free_resources, network.server_capacity)
    assert np.array_equal(state.free_links, network.link_capacity)
    for column in ("cpu_util", "mem_util", "link_util_tier1", "link_util_tier2", "link_util_tier3"):
        values = tables.timeline[column]
        assert values.min() >= -1e-12 and values.max() <= 1 + 1e-12
    assert abs(tables.timeline["cpu_util"][-1]) < 1e-12  # drained
    accepted = tables.requests["outcome"] == "accepted"
    assert (tables.requests["servers_used"][accepted] >= 1).all()


def blas_kernels_this_cpu_runs() -> list[str]:
    """OpenBLAS kernels (its OPENBLAS_CORETYPE names) that this CPU can run:
    their dot products add in different orders."""
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    try:
        flags = set(open("/proc/cpuinfo").read().split())
    except OSError:
        return []
    return ["Prescott"] + ["Haswell"] * ("avx2" in flags) + ["SkylakeX"] * ("avx512f" in flags)


QOS_OF_THREE_RUNS = """
import json
from dcbench.harness import Runner
runner = Runner()
runs = [runner.run(allocator, "ocs:16", "vmjobs:load=66,warmup=50", 300, seed).summary
        for allocator, seed in (("ccf", 0), ("jcb", 1), ("jcb", 3))]
print(json.dumps([[run[column].hex() for column in ("latency_us", "packet_loss")] for run in runs]))
"""


def qos_of_three_runs(env: dict[str, str]) -> str:
    """`QOS_OF_THREE_RUNS`' output, made in a fresh interpreter under the environment variables ``env``."""
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", QOS_OF_THREE_RUNS], capture_output=True, text=True, check=True,
                          env=dict(os.environ, **env)).stdout


def test_latency_and_loss_are_the_same_whatever_blas_kernel_the_cpu_picks():
    """They sum each link's load times its delay: numpy's own sum adds in one
    order on every CPU, where BLAS's dot product adds in its kernel's (the
    committed results differed in their last bits on a CPU with AVX-512)."""
    kernels = blas_kernels_this_cpu_runs()
    if len(kernels) < 2:
        pytest.skip("needs an x86-64 CPU whose OpenBLAS kernels can be chosen")
    results = {kernel: qos_of_three_runs({"OPENBLAS_CORETYPE": kernel}) for kernel in kernels}
    assert len(set(results.values())) == 1, results


def test_latency_and_loss_are_the_same_whatever_simd_level_numpy_picks():
    """numpy picks its vectorised kernels by CPU: ``ρ**K`` by its ``power`` came
    out in different last bits with AVX-512 than without."""
    from tests.conftest import numpy_dispatch_settings

    settings = numpy_dispatch_settings()
    if len(settings) < 2:
        pytest.skip("needs a CPU with a SIMD level above numpy's baseline")
    results = {str(env): qos_of_three_runs(env) for env in settings}
    assert len(set(results.values())) == 1, results


def test_powers_of_the_queue_are_exact_where_the_reals_are_representable():
    from dcbench.engine.qos import mm1k

    delay, loss = mm1k(np.array([0.5, 1.0, 0.25]), np.array([1.0, 1.0, 1.0]), 8e9, 3)
    # ρ = 1/2, K = 3: P = (1/2)(1/8)/(15/16) = 1/15; ρ = 1: 1/(K+1); ρ = 1/4: (3/4)(1/64)/(255/256) = 3/255
    assert loss.tolist() == [0.5 / 8 / (15 / 16), 0.25, 0.75 / 64 / (255 / 256)]
    assert np.all(delay > 0)


class JournalReading:
    """Before each request, brings a mirror of the state up to date from the
    state's journal alone, and checks it against the state bit for bit."""

    def allocate(self, request, state):
        journal = state.journal
        if self.mirror is None:
            self.mirror = (state.free_resources.copy(), state.free_links.copy())
        else:
            written = journal.since(self.writes)
            assert written is not None, "the journal dropped writes a request apart"
            servers, links = written
            self.mirror[0][servers] = state.free_resources[servers]
            self.mirror[1][links] = state.free_links[links]
        self.writes = journal.writes
        for mirror, now in zip(self.mirror, (state.free_resources, state.free_links)):
            assert (mirror.view(np.uint64) == now.view(np.uint64)).all()
        self.checked += 1
        return super().allocate(request, state)


@pytest.mark.parametrize("topology, allocator", [("tiered:8,1x4", TetrisAllocator), ("ocs:16,ports=4", JCBAllocator)])
def test_the_engine_journals_every_write_to_the_state(topology, allocator):
    # Commits, departures and (jcb on the OCS fabric) reconfigurations: what a builder catching up from the
    # journal relies on.
    plan = Runner().resolve_scenario(topology)
    reader = type("Reader", (JournalReading, allocator), {})()
    reader.mirror, reader.writes, reader.checked = None, 0, 0
    tables = simulate(plan.network, draw_requests(plan, 400, np.random.default_rng(0)), reader,
                      np.random.default_rng(1))
    assert reader.checked == 400
    assert (tables.requests["outcome"] == "accepted").sum() > 100
    assert (tables.timeline["event"] == "departure").sum() > 100
    if topology.startswith("ocs"):
        assert tables.requests["reconfigurations"].sum() > 0
