"""The event-driven engine: arrivals, departures, checks, commits. It owns the only state that counts; allocators
read a view of it, and what they return is snapshotted, checked and only then committed."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from dcbench.engine.qos import mm1k
from dcbench.errors import AllocatorError, DcbenchError, describe, short_repr
from dcbench.model.allocation import (
    Allocation,
    LinkUsage,
    Reject,
    State,
    StateJournal,
    check_snapshot,
    circuit_changes,
    snapshot_allocation,
)
from dcbench.model.network import Network
from dcbench.model.requests import Departing, Request, RequestSequence

_NO_SERVERS = np.zeros(0, dtype=np.int64)

ACCEPTED, REJECTED, SKIPPED = "accepted", "rejected", "skipped"
SPREAD_LEVELS = ("server", "rack", "pod", "cross_pod")
MAX_REASON = 200  # characters of a reject reason that are recorded


class Allocator(Protocol):
    """What an allocator plugin's factory returns: `reset` and `allocate` required, `check` optional (a no-op on this
    class and dcbench's bases)."""

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Prepare for a new run on ``network``; draw any randomness from ``rng``.

        Args:
            network: The run's network: the allocator's own copy.
            rng: The allocator's random generator, drawn from the run's seed."""
        ...

    def allocate(self, request: Request, state: State) -> Allocation | Reject | None:
        """Serve ``request`` given the read-only ``state``, or refuse it.

        Args:
            request: The request to serve (the allocator's own copy).
            state: The free capacities now, read-only.
        Returns:
            An `Allocation` (checked first; an invalid one counts as a rejection), a `Reject`, or None (no reason)."""
        ...

    def check(self, network: Network) -> None:
        """Refuse parameters that do not suit ``network``, before anything runs; maybe called more than once, on another
        instance of the same spec: keep it cheap and free of side effects.

        Args:
            network: The run's network: a private copy, read-only.
        Raises:
            SpecError: The parameters do not suit ``network`` (anything else it raises is the plugin's bug)."""
        return None


@dataclass
class RunTables:
    """The recorded run, as columns by name.

    Attributes:
        requests: One row per request: times, ``demand_<resource>``, ``size``, ``outcome``, ``reason``, ``detail``,
            ``servers_used``, ``spread`` (one of `SPREAD_LEVELS`), ``channels_tier<t>``, ``measured``,
            ``reconfigurations``; for jobs ``vms`` and ``inter_rack_gbps``.
        timeline: One row per arrival or departure: ``time``, ``event``, ``request_id``, ``active``,
            ``<resource>_util``, ``link_util_tier<t>``; with a packet model ``inter_rack_gbps``, ``latency_us`` and
            ``packet_loss``."""

    requests: dict[str, np.ndarray]
    timeline: dict[str, np.ndarray]


def spread_level(racks: list[int], pods: list[int], servers: list[int]) -> str:
    """How spread a set of servers is, given every server's rack and pod."""
    if len(servers) == 1:
        return "server"
    if len({racks[s] for s in servers}) == 1:
        return "rack"
    if len({pods[s] for s in servers}) == 1:
        return "pod"
    return "cross_pod"


class Books:
    """The engine's own record of the state, updated by the same operations as the state allocators read, so the two
    are equal bit for bit unless someone else wrote the state; compared every `every` requests and at the end."""

    COMPARED_PER_REQUEST = 4096  # array elements compared per request, on average at most

    def __init__(self, state: State):
        self.free_resources = state.free_resources.copy()
        self.free_links = state.free_links.copy()
        self.link_capacity = state.link_capacity.copy()
        size = self.free_resources.size + 2 * self.free_links.size
        self.every = max(1, -(-size // self.COMPARED_PER_REQUEST))

    def mismatch(self, state: State) -> str | None:
        """Where ``state`` differs from the books, or None."""
        for name in ("free_resources", "free_links", "link_capacity"):
            kept, seen = getattr(self, name), np.asarray(getattr(state, name))
            if seen.shape != kept.shape or seen.dtype != kept.dtype:
                return f"its {name} is {seen.dtype} {seen.shape}, the engine's books {kept.dtype} {kept.shape}"
            if seen.tobytes() != kept.tobytes():  # (bit for bit: both were written by the same operations)
                where = tuple(np.argwhere(seen.view(np.uint64) != kept.view(np.uint64))[0].tolist())
                return f"its {name}{list(where)} is {seen[where]:g}, the engine's books say {kept[where]:g}"
        return None


class Simulation:
    """A run, one request at a time, for `simulate` and the Gymnasium environment: `next_request`, then `resolve` the
    allocator's answer; `tables` at the end."""

    def __init__(self, network: Network, sequence: RequestSequence, state: State | None = None):
        self.network = network
        self.sequence = sequence
        n = len(sequence)
        tiers = network.tiers
        self._tier_position = np.searchsorted(tiers, network.link_tier)
        # reconfiguration moves capacity within a tier, so a tier's total stays this
        self._tier_capacity = np.bincount(self._tier_position, weights=network.link_capacity, minlength=len(tiers))
        self.total_capacity = network.server_capacity.sum(axis=0)
        self._racks = network.racks.tolist()
        self._pods = network.pods.tolist()
        self.state = state if state is not None else State(network)
        self.state.journal = StateJournal()  # (the view below shares it)
        self.books = Books(self.state)
        self.allocator_network = network.private_copy()
        self.view = self.state.read_only(self.allocator_network)

        self.offer_time = np.full(n, np.nan)
        self.departure_time = np.full(n, np.nan)
        self.arrival_time = np.full(n, np.nan)
        self.outcome = np.full(n, "", dtype=object)
        self.reason = np.full(n, "", dtype=object)
        self.detail = np.full(n, "", dtype=object)
        self.servers_used = np.zeros(n, dtype=np.int64)
        self.spread = np.full(n, "", dtype=object)
        self.channels_per_tier = np.zeros((n, len(tiers)))
        self.measured = (np.ones(n, dtype=bool) if sequence.measured is None
                         else np.asarray(sequence.measured, dtype=bool))
        self.reconfigurations = np.zeros(n, dtype=np.int64)
        self.is_job = sequence.kind == "job"
        self.inter_rack_gbps = np.zeros(n)
        # read a request at a time: as Python floats, which `next_request` computes with as numpy would
        self._gaps = np.asarray(sequence.gaps, dtype=np.float64).tolist()
        self._holding = np.asarray(sequence.holding, dtype=np.float64).tolist()
        if sequence.wait_until_fits:
            self._demand_rows = np.asarray(sequence.demand).tolist()
            self._total_capacity = self.total_capacity.tolist()
            self._exceeds_total = (np.asarray(sequence.demand) > self.total_capacity).any(axis=1).tolist()

        rows = 2 * n + 1
        self._event_time = np.empty(rows)
        self._event_kind = np.empty(rows, dtype=object)
        self._event_request = np.empty(rows, dtype=np.int64)
        self._event_active = np.empty(rows, dtype=np.int64)
        self._resource_util = np.empty((rows, len(network.resources)))
        self._tier_util = np.empty((rows, len(tiers)))
        packets = sequence.packets
        self._qos = self.is_job and packets is not None
        if self._qos:
            self._packet_bits = 8.0 * float(packets.packet_bytes)
            self._buffer = int(packets.buffer_packets)
            self._traffic_log, self._latency_log, self._loss_log = np.empty(rows), np.empty(rows), np.empty(rows)
        self._row = 0

        self.used_resources = np.zeros(len(network.resources))
        self._tier_used = np.zeros(len(tiers))
        self._traffic = 0.0  # inter-rack Gbps of the requests held now
        self._holdings: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]] = {}
        self._departures: list[tuple[float, int]] = []
        self.clock = 0.0
        self.index = -1
        self.request: Request | None = None

    def _record(self, time: float, kind: str, request_id: int) -> None:
        row = self._row
        self._event_time[row] = time
        self._event_kind[row] = kind
        self._event_request[row] = request_id
        self._event_active[row] = len(self._holdings)
        self._resource_util[row] = self.used_resources  # divided once, in tables()
        self._tier_util[row] = self._tier_used
        if self._qos:
            self._traffic_log[row] = self._traffic
            self._latency_log[row], self._loss_log[row] = self.network_qos()
        self._row = row + 1

    def network_qos(self) -> tuple[float, float]:
        """Mean packet latency (µs) and loss over the inter-rack traffic now (NaN if none), links weighted by load."""
        if not self._qos or self._traffic <= 0:
            return np.nan, np.nan
        state = self.state
        load = state.link_capacity - state.free_links
        busy = np.flatnonzero(load > 1e-9)
        busy_load = load[busy]
        delay, loss = mm1k(busy_load, state.link_capacity[busy], self._packet_bits, self._buffer)
        # numpy's sum, not a dot product: BLAS's order of addition, and so the last bits, depend on the CPU
        return (float((busy_load * delay).sum()) / self._traffic * 1e6,
                min(1.0, float((busy_load * loss).sum()) / self._traffic))

    def _depart_before(self, time: float) -> None:
        # strictly before: a request held h units is there for the h arrivals after its own (the reference's)
        departures = self._departures
        state = self.state
        while departures and departures[0][0] < time:
            when, request_id = heapq.heappop(departures)
            servers, amounts, links, link_amounts, traffic = self._holdings.pop(request_id)
            for books in (state, self.books):
                books.free_resources[servers] += amounts
                books.free_links[links] += link_amounts
            state.journal.record(servers, links)
            self.used_resources -= amounts.sum(axis=0)
            self._tier_used -= np.bincount(self._tier_position[links], link_amounts,
                                           minlength=len(self._tier_used))
            self._traffic -= traffic
            self._record(when, "departure", request_id)

    def _departing_now(self) -> Departing | None:
        # due at the clock itself: held while the request is offered, released in `resolve`
        due = [request_id for when, request_id in self._departures if when <= self.clock]
        if not due:
            return None
        held = [self._holdings[request_id] for request_id in due]
        return Departing(*(np.concatenate([h[part] for h in held]) for part in range(4)))

    def next_request(self) -> Request | None:
        """Advance to the next request to offer; None when the episode is over."""
        sequence = self.sequence
        while self.index + 1 < len(sequence):
            self.index += 1
            i = self.index
            self.clock += self._gaps[i]
            self.arrival_time[i] = self.clock
            self._depart_before(self.clock)
            demand = sequence.demand[i]
            if sequence.wait_until_fits:
                if self._exceeds_total[i]:
                    self.outcome[i], self.reason[i] = SKIPPED, "exceeds_total_capacity"
                    continue
                while self._departures and not self._fits(self._demand_rows[i]):
                    self.clock += sequence.time_step
                    self._depart_before(self.clock)
            self.offer_time[i] = self.clock
            fields = (i, self.clock, self._holding[i], demand, sequence.kind, sequence.connectivity)
            fields += (sequence.vms(i), sequence.job_flows(i)) if self.is_job else (None, None)
            if not self.is_job:
                departing = self._departing_now() if sequence.departures_within else None
                fields += (sequence.allowed_servers, departing, sequence.keep_useless)
            # Two of them: the allocator's, and the one the engine checks against.
            self.request = Request(*fields)
            return Request(*fields)
        self.request = None
        return None

    def _fits(self, demand: list[float]) -> bool:
        # whether the total free capacity covers ``demand``, to within 1e-9
        return not any(asked > total - used + 1e-9
                       for asked, total, used in zip(demand, self._total_capacity, self.used_resources.tolist()))

    def resolve(self, result: Allocation | Reject | None) -> bool:
        """Check and commit (or refuse) the answer to the current request; True if accepted."""
        request = self.request
        assert request is not None, "resolve() without a request: call next_request() first"
        i = request.id
        accepted = False
        if request.departing is not None:
            # those due now have left by the time it is checked
            self._depart_before(np.nextafter(self.clock, np.inf))
        if i % self.books.every == 0:
            self.check_books()
        if isinstance(result, Allocation):
            try:
                allocation = snapshot_allocation(result, self.network.path_ends_by_id)
                problem, usage = check_snapshot(allocation, request, self.state)
            except Exception as exc:  # fields of the wrong kind: routes=None, amounts of text, ...
                raise AllocatorError.of_allocator(
                    f"returned a malformed Allocation for request {i} ({describe(exc)})") from exc
            if problem is None:
                self._commit(request, allocation, usage)
                accepted = True
            else:
                self.outcome[i], self.reason[i], self.detail[i] = REJECTED, "invalid_allocation", problem
        elif result is None or isinstance(result, Reject):
            reason = result.reason if result is not None else "rejected"
            if isinstance(reason, str):
                reason = str.__str__(reason)[:MAX_REASON]  # (a str subclass could answer as it likes)
            if not isinstance(reason, str) or not reason or not reason.isprintable():
                raise AllocatorError.of_allocator(
                    f"rejected request {i} with the reason {short_repr(reason)}; a reason is a short line of text "
                    "such as 'no_path'")
            self.outcome[i] = REJECTED
            self.reason[i] = reason
        else:
            raise AllocatorError.of_allocator(
                f"returned {type(result).__name__} for request {i}; expected an Allocation, a Reject or None",
                fix=False)
        self._record(self.clock, "arrival", i)
        self.request = None
        return accepted

    def _commit(self, request: Request, allocation: Allocation, usage: LinkUsage) -> None:
        i = request.id
        state = self.state
        servers = allocation.servers.astype(np.int64, copy=False)  # (a snapshot: the allocator cannot change them)
        amounts = allocation.amounts
        links, link_amounts = usage  # (ascending, none zero: what flatnonzero of the full array gave)
        if allocation.reconfigure:
            _, change = circuit_changes(self.network, allocation.reconfigure, state.free_links)
            for books in (state, self.books):
                books.link_capacity += change
                books.free_links += change
            state.journal.record(_NO_SERVERS, np.flatnonzero(change))
            self.reconfigurations[i] = len(allocation.reconfigure)
        for books in (state, self.books):
            books.free_resources[servers] -= amounts
            books.free_links[links] -= link_amounts
        state.journal.record(servers, links)
        self.used_resources += amounts.sum(axis=0)
        positions = self._tier_position[links]
        self.channels_per_tier[i] = np.bincount(positions, link_amounts, minlength=len(self._tier_used))
        self._tier_used += self.channels_per_tier[i]
        traffic = 0.0
        if self.is_job:
            traffic = float(sum(amount for _, _, _, amount in allocation.routes))
            self.inter_rack_gbps[i] = traffic
            self._traffic += traffic
        self._holdings[i] = (servers, amounts, links, link_amounts, traffic)
        self.departure_time[i] = departure = self.clock + request.holding
        heapq.heappush(self._departures, (departure, i))
        self.outcome[i] = ACCEPTED
        self.servers_used[i] = len(servers)
        self.spread[i] = spread_level(self._racks, self._pods, servers.tolist())

    def drain(self) -> None:
        """Let every request still held depart."""
        self._depart_before(np.inf)

    def check_books(self) -> None:
        """Refuse the run if an allocator wrote the engine's state behind its back."""
        problem = self.books.mismatch(self.state)
        if problem is not None:
            raise AllocatorError.of_allocator(
                f"changed the engine's state behind its back ({problem}, request {self.index}); the run is "
                "invalid", fix=False)

    def tables(self) -> RunTables:
        network = self.network
        sequence = self.sequence
        n = len(sequence)
        requests: dict[str, Any] = {
            "request_id": np.arange(n, dtype=np.int64),
            "arrival_time": self.arrival_time,
            "offer_time": self.offer_time,
            "holding_time": np.asarray(sequence.holding, dtype=np.float64),
            "departure_time": self.departure_time,
        }
        demand = np.asarray(sequence.demand, dtype=np.float64)
        for column, name in enumerate(network.resources):
            requests[f"demand_{name}"] = demand[:, column]
        size = (demand / network.server_capacity.max(axis=0)).max(axis=1)  # in the largest servers, at least
        requests.update({"size": np.ceil(size - 1e-9).astype(np.int64),
                         "outcome": self.outcome, "reason": self.reason, "detail": self.detail,
                         "servers_used": self.servers_used, "spread": self.spread})
        for column, tier in enumerate(network.tiers):
            requests[f"channels_tier{tier}"] = self.channels_per_tier[:, column]
        requests.update(measured=self.measured, reconfigurations=self.reconfigurations)
        if self.is_job:
            requests.update(vms=np.diff(np.asarray(sequence.vm_offsets)).astype(np.int64),
                            inter_rack_gbps=self.inter_rack_gbps)
        rows = self._row
        timeline: dict[str, Any] = {
            "time": self._event_time[:rows],
            "event": self._event_kind[:rows],
            "request_id": self._event_request[:rows],
            "active": self._event_active[:rows],
        }
        resource_util = self._resource_util[:rows] / self.total_capacity
        tier_util = self._tier_util[:rows] / self._tier_capacity
        for column, name in enumerate(network.resources):
            timeline[f"{name}_util"] = resource_util[:, column]
        for column, tier in enumerate(network.tiers):
            timeline[f"link_util_tier{tier}"] = tier_util[:, column]
        if self._qos:
            timeline.update(inter_rack_gbps=self._traffic_log[:rows], latency_us=self._latency_log[:rows],
                            packet_loss=self._loss_log[:rows])
        return RunTables(requests, timeline)


def simulate(
    network: Network,
    sequence: RequestSequence,
    allocator: Allocator,
    rng: np.random.Generator,
    progress: Callable[[int], None] | None = None,
    state: State | None = None,
    drain: bool = False,
) -> RunTables:
    """Offer every request of ``sequence`` to ``allocator`` and record what happens.

    Args:
        network: The compiled topology; the allocator gets a copy of its own.
        sequence: The episode's requests.
        allocator: What an allocator plugin built.
        rng: The allocator's random generator, passed to its ``reset``.
        progress: Called with the number of requests done, every hundredth of the sequence (None: not called).
        state: The state to start from and leave behind (None: all free).
        drain: Whether every request still held at the end departs.
    Returns:
        The recorded run.
    Raises:
        AllocatorError: The allocator raised (a `DcbenchError` passes as it is) or could not start, or returned other
            than an `Allocation`, a `Reject` or None, a malformed `Allocation`, or a reason not a short line."""
    simulation = Simulation(network, sequence, state)
    try:
        allocator.reset(simulation.allocator_network, rng)
    except (DcbenchError, KeyboardInterrupt):  # Ctrl-C (or SIGTERM) stops the command
        raise
    # BaseException: an allocator's sys.exit() is its failure, not the run's end (test_an_allocator_that_exits_...)
    except BaseException as exc:
        raise AllocatorError.of_allocator(f"could not start on this topology: {describe(exc)}", fix=False) from exc
    view = simulation.view
    chunk = max(1, len(sequence) // 100)
    while (request := simulation.next_request()) is not None:
        try:
            result = allocator.allocate(request, view)
        except (DcbenchError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # as in reset (test_misbehaving_allocators_stop_the_run_with_a_clear_error)
            raise AllocatorError.of_allocator(f"raised {describe(exc)} (request {request.id})") from exc
        simulation.resolve(result)
        if progress is not None and (request.id + 1) % chunk == 0:
            progress(request.id + 1)
    if drain:
        simulation.drain()
    simulation.check_books()
    network.learn_paths(simulation.allocator_network)  # later runs' copies start with these paths
    return simulation.tables()
