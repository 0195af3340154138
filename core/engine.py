"""The event-driven engine: arrivals, departures, checks, commits.

The engine owns the only state that counts. Allocators get a read-only view
of it; what they return is checked by `check_allocation` and committed only
if valid, so an allocator can never corrupt a run. Everything a run
produces is recorded in two tables, one row per request and one row per
event, from which the metrics are computed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from dcbench.allocation import Allocation, Reject, State, check_allocation
from dcbench.errors import AllocatorError, DcbenchError
from dcbench.network import Network
from dcbench.requests import Request, RequestSequence

ACCEPTED, REJECTED, SKIPPED = "accepted", "rejected", "skipped"
SPREAD_LEVELS = ("server", "rack", "pod", "cross_pod")


class Allocator(Protocol):
    """What an allocator plugin's factory returns."""

    demands: frozenset[str]

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Prepare for a new run on ``network``; draw any randomness from ``rng``."""
        ...

    def allocate(self, request: Request, state: State) -> Allocation | Reject | None:
        """Serve ``request`` given the read-only ``state``, or refuse it."""
        ...


@dataclass
class RunTables:
    """The recorded run: per-request rows and the utilisation timeline, as columns."""

    requests: dict[str, np.ndarray]
    timeline: dict[str, np.ndarray]


def spread_level(network: Network, servers: np.ndarray) -> str:
    if len(servers) == 1:
        return "server"
    racks = network.racks[servers]
    if (racks == racks[0]).all():
        return "rack"
    pods = network.pods[servers]
    if (pods == pods[0]).all():
        return "pod"
    return "cross_pod"


def minimum_servers(network: Network, demand: np.ndarray) -> np.ndarray:
    """How many of the largest servers a demand needs at least, per request."""
    largest = network.server_capacity.max(axis=0)
    return np.ceil((demand / largest).max(axis=1) - 1e-9).astype(np.int64)


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

    ``state`` (fresh by default) is the state the run starts from and leaves
    behind; with ``drain`` every request still held at the end departs.
    """
    n = len(sequence)
    resources = network.resources
    n_resources = len(resources)
    tiers = network.tiers
    tier_position = np.searchsorted(tiers, network.link_tier)
    links_per_tier = np.bincount(tier_position, minlength=len(tiers)).astype(np.float64)
    inverse_link_capacity = 1.0 / network.link_capacity
    total_capacity = network.server_capacity.sum(axis=0)

    state = state if state is not None else State(network)
    view = state.read_only()
    allocator.reset(network, rng)

    offer_time = np.full(n, np.nan)
    departure_time = np.full(n, np.nan)
    arrival_time = np.empty(n)
    outcome = np.empty(n, dtype=object)
    reason = np.full(n, "", dtype=object)
    detail = np.full(n, "", dtype=object)
    servers_used = np.zeros(n, dtype=np.int64)
    spread = np.full(n, "", dtype=object)
    channels_per_tier = np.zeros((n, len(tiers)))

    rows = 2 * n + 1
    event_time = np.empty(rows)
    event_kind = np.empty(rows, dtype=object)
    event_request = np.empty(rows, dtype=np.int64)
    event_active = np.empty(rows, dtype=np.int64)
    resource_util = np.empty((rows, n_resources))
    tier_util = np.empty((rows, len(tiers)))
    row = 0

    used_resources = np.zeros(n_resources)
    tier_used_fraction = np.zeros(len(tiers))
    holdings: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    departures: list[tuple[float, int]] = []

    def record(time: float, kind: str, request_id: int) -> None:
        nonlocal row
        event_time[row] = time
        event_kind[row] = kind
        event_request[row] = request_id
        event_active[row] = len(holdings)
        resource_util[row] = used_resources / total_capacity
        tier_util[row] = tier_used_fraction / links_per_tier
        row += 1

    def depart_before(time: float) -> None:
        # Strictly before: in discrete time a request held for h units is
        # still there for the h arrivals after its own, as in the reference.
        nonlocal used_resources, tier_used_fraction
        while departures and departures[0][0] < time:
            when, request_id = heapq.heappop(departures)
            servers, amounts, links, link_amounts = holdings.pop(request_id)
            state.free_resources[servers] += amounts
            state.free_links[links] += link_amounts
            used_resources -= amounts.sum(axis=0)
            tier_used_fraction -= np.bincount(tier_position[links], link_amounts * inverse_link_capacity[links],
                                              minlength=len(tiers))
            record(when, "departure", request_id)

    clock = 0.0
    chunk = max(1, n // 100)
    for i in range(n):
        clock += float(sequence.gaps[i])
        arrival_time[i] = clock
        depart_before(clock)
        demand = sequence.demand[i]
        if sequence.wait_until_fits:
            if (demand > total_capacity).any():
                outcome[i], reason[i] = SKIPPED, "exceeds_total_capacity"
                continue
            while (demand > total_capacity - used_resources + 1e-9).any() and departures:
                clock += sequence.time_step
                depart_before(clock)
        offer_time[i] = clock
        request = Request(i, clock, float(sequence.holding[i]), demand, sequence.kind, sequence.connectivity)
        try:
            result = allocator.allocate(request, view)
        except DcbenchError:
            raise
        except Exception as exc:
            raise AllocatorError(
                f"allocator raised {type(exc).__name__}: {exc} (request {i}); fix the allocator"
            ) from exc

        if isinstance(result, Allocation):
            problem, usage = check_allocation(result, request, state)
            if problem is None:
                servers = np.asarray(result.servers, dtype=np.int64)
                amounts = np.asarray(result.amounts, dtype=np.float64)
                links = np.flatnonzero(usage)
                link_amounts = usage[links]
                state.free_resources[servers] -= amounts
                state.free_links[links] -= link_amounts
                used_resources += amounts.sum(axis=0)
                per_tier = np.bincount(tier_position[links], link_amounts, minlength=len(tiers))
                tier_used_fraction += np.bincount(tier_position[links], link_amounts * inverse_link_capacity[links],
                                                  minlength=len(tiers))
                holdings[i] = (servers, amounts, links, link_amounts)
                departure_time[i] = clock + request.holding
                heapq.heappush(departures, (departure_time[i], i))
                outcome[i] = ACCEPTED
                servers_used[i] = len(servers)
                spread[i] = spread_level(network, servers)
                channels_per_tier[i] = per_tier
            else:
                outcome[i], reason[i], detail[i] = REJECTED, "invalid_allocation", problem
        elif result is None or isinstance(result, Reject):
            outcome[i] = REJECTED
            reason[i] = result.reason if result is not None else "rejected"
        else:
            raise AllocatorError(
                f"allocator returned {type(result).__name__} for request {i}; "
                "expected an Allocation, a Reject or None"
            )
        record(clock, "arrival", i)
        if progress is not None and (i + 1) % chunk == 0:
            progress(i + 1)

    if drain:
        depart_before(np.inf)

    requests: dict[str, Any] = {
        "request_id": np.arange(n, dtype=np.int64),
        "arrival_time": arrival_time,
        "offer_time": offer_time,
        "holding_time": np.asarray(sequence.holding, dtype=np.float64),
        "departure_time": departure_time,
    }
    for column, name in enumerate(resources):
        requests[f"demand_{name}"] = np.asarray(sequence.demand[:, column], dtype=np.float64)
    requests["size"] = minimum_servers(network, np.asarray(sequence.demand, dtype=np.float64))
    requests["outcome"] = outcome
    requests["reason"] = reason
    requests["detail"] = detail
    requests["servers_used"] = servers_used
    requests["spread"] = spread
    for column, tier in enumerate(tiers):
        requests[f"channels_tier{tier}"] = channels_per_tier[:, column]

    timeline: dict[str, Any] = {
        "time": event_time[:row],
        "event": event_kind[:row],
        "request_id": event_request[:row],
        "active": event_active[:row],
    }
    for column, name in enumerate(resources):
        timeline[f"{name}_util"] = resource_util[:row, column]
    for column, tier in enumerate(tiers):
        timeline[f"link_util_tier{tier}"] = tier_util[:row, column]
    return RunTables(requests, timeline)
