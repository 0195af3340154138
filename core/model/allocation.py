"""Allocations, the engine's state, and the check every allocation passes.

The engine never trusts an allocator: `check_allocation` verifies that an
allocation fits the current free capacity, meets the demand exactly and
connects every pair the request's connectivity rule requires, before
anything is committed.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import chain
from typing import Any, NamedTuple, Sequence

import numpy as np

from dcbench.model.network import Network, Path
from dcbench.model.requests import Request

_TOLERANCE = 1e-9
# The papers' circuit model: a pool request's connected pair reserves one
# channel on every link of its path, no more, no less.
CHANNELS_PER_PAIR = 1.0


class Swap(NamedTuple):
    """An OCS reconfiguration between racks: the idle circuits ``a→b`` and
    ``c→d`` are re-pointed to ``a→d`` and ``c→b``. Every port stays in use.

    Attributes:
        a: The rack (an index from 0, as are the others) whose idle circuit
            to ``b`` is re-pointed to ``d``.
        b: The rack at the other end of that circuit.
        c: The rack whose idle circuit to ``d`` is re-pointed to ``b``.
        d: The rack at the other end of that circuit; all four are distinct.
    """

    a: int
    b: int
    c: int
    d: int


class Route(NamedTuple):
    """``amount`` reserved on every link of ``links``, a path from node ``a`` to node ``b``.

    Attributes:
        a: The node the path starts at: a server for a pool, a rack's
            switch for a job.
        b: The node it ends at.
        links: The path's link indices, in order.
        amount: What it reserves on each link: exactly one channel for a
            pool's pair of servers, Gbps of the job's traffic for a job.
    """

    a: int
    b: int
    links: Path
    amount: float = 1.0


class LinkUsage(NamedTuple):
    """What an allocation reserves on the links its routes use, and only those.

    Attributes:
        links: The links used, ascending, each once (n,), int64.
        amounts: What is reserved on each of them (n,), every one summed
            over the routes in their order; none is zero.
    """

    links: np.ndarray
    amounts: np.ndarray

    def dense(self, n_links: int) -> np.ndarray:
        """The amount reserved on every link.

        Args:
            n_links: How many links the network has.

        Returns:
            The amounts (n_links,), zero on the links no route uses.
        """
        usage = np.zeros(n_links)
        usage[self.links] = self.amounts
        return usage


_NO_USAGE = LinkUsage(np.zeros(0, dtype=np.int64), np.zeros(0))
_NO_USAGE.links.flags.writeable = False
_NO_USAGE.amounts.flags.writeable = False


# Links below which counting over every link (bincount) is cheaper than sorting the routes' links (unique).
COUNT_ALL_LINKS_BELOW = 4096


def _pool_usage(route_links: list[int], n_links: int) -> LinkUsage:
    """The channels ``route_links`` (every route's links, one after another)
    reserve: one on a link for each time it appears."""
    if not route_links:
        return _NO_USAGE
    if n_links < COUNT_ALL_LINKS_BELOW:
        every_count = np.bincount(route_links, minlength=n_links)
        links = np.flatnonzero(every_count)
        return LinkUsage(links, every_count[links] * CHANNELS_PER_PAIR)
    links, counts = np.unique(np.asarray(route_links, dtype=np.int64), return_counts=True)
    return LinkUsage(links, counts * CHANNELS_PER_PAIR)


def _job_usage(route_links: list[int], route_amounts: list[float]) -> LinkUsage:
    """The Gbps reserved when ``route_amounts[k]`` is added to link
    ``route_links[k]``, in that order (so each link's sum is the one adding
    the routes in turn to an array of zeros gives, bit for bit)."""
    if not route_links:
        return _NO_USAGE
    links, inverse = np.unique(np.asarray(route_links, dtype=np.int64), return_inverse=True)
    # bincount adds the weights in their order, from 0.0, as np.add.at did route by route.
    return LinkUsage(links, np.bincount(inverse, weights=np.asarray(route_amounts, dtype=np.float64),
                                        minlength=len(links)))


@dataclass(frozen=True, slots=True)
class Allocation:
    """What an allocator grants a request.

    ``servers`` in the order they were chosen; ``amounts[i]`` is what
    ``servers[i]`` gives, per resource; ``routes`` the link reservations.
    For a job, ``vm_servers[k]`` hosts VM ``k`` (``amounts`` then sums
    each server's VMs), routes join rack switches, and ``reconfigure`` lists
    the circuit swaps made, in order, before the routes are reserved.

    Attributes:
        servers: The chosen servers' indices, in the order chosen (servers,).
        amounts: What each server gives, servers × resources; the rows sum
            to the request's demand.
        routes: The link reservations: for a pool, one route for each pair
            of its servers that needs a path; for a job, routes between the
            switches of the racks whose VMs exchange traffic, carrying it all.
        vm_servers: Jobs: the server of each VM (VMs,); None for a pool.
        reconfigure: Jobs: the circuit swaps to make first, in order.
    """

    servers: np.ndarray
    amounts: np.ndarray
    routes: tuple[Route, ...] = ()
    vm_servers: np.ndarray | None = None
    reconfigure: tuple[Swap, ...] = ()


@dataclass(frozen=True, slots=True)
class Reject:
    """An allocator's refusal, with a short reason such as ``no_path``.

    Attributes:
        reason: One short printable line, recorded in the requests table's
            ``reason`` column.
    """

    reason: str = "rejected"


class State:
    """Free capacity of every server and link, and every link's capacity
    (which OCS reconfiguration changes); the engine owns the only copy that
    counts, allocators get it read-only.

    Args:
        network: The network whose capacities it starts from, all free.

    Attributes:
        network: The network it belongs to; in an allocator's read-only
            view, the allocator's private copy.
        free_resources: Each server's free capacity, servers × resources.
        free_links: Each link's free capacity (links,), channels or Gbps.
        link_capacity: Each link's capacity now (links,).
        journal: Where the engine has written these arrays during its run
            (a `StateJournal`, shared with the allocator's view), so that a
            builder keeping a copy catches up on what changed; None where
            nobody keeps one (a state made outside a run, which builders
            compare with their copy instead).
    """

    def __init__(self, network: Network):
        self.network = network
        self.free_resources = network.server_capacity.copy()
        self.free_links = network.link_capacity.copy()
        self.link_capacity = network.link_capacity.copy()
        self.journal: StateJournal | None = None

    def read_only(self, network: Network | None = None) -> "State":
        """A live view of this state that cannot be written through; its
        ``network`` is ``network`` (an allocator's private copy) if given.

        Args:
            network: The network the view names; None: this state's.

        Returns:
            The view: its arrays follow every change to this state, and
            it shares the state's journal.
        """
        view = State.__new__(State)
        view.network = self.network if network is None else network
        for name in ("free_resources", "free_links", "link_capacity"):
            setattr(view, name, locked_view(getattr(self, name)))
        view.journal = self.journal
        return view


_NOTHING = np.zeros(0, dtype=np.int64)


class StateJournal:
    """The servers and links whose free capacity the engine has written,
    write by write, for the builders' `start`: at 65,536 servers finding
    what changed by comparing a copy with the state costs more than a
    Tetris request's own scoring. Only the last `KEEP` writes are kept; a
    builder further behind compares.

    Whoever writes a state's arrays while it has a journal records the
    write (the engine does, for commits, departures and reconfigurations).

    Attributes:
        writes: How many writes have been recorded.
    """

    KEEP = 64

    def __init__(self) -> None:
        self.writes = 0
        self._servers: list[np.ndarray] = []
        self._links: list[np.ndarray] = []

    def record(self, servers: np.ndarray, links: np.ndarray) -> None:
        """Note a write: the free capacity of ``servers`` and ``links``
        (index arrays, not changed afterwards; repeats allowed) may have
        changed."""
        self._servers.append(servers)
        self._links.append(links)
        self.writes += 1
        if len(self._servers) >= 2 * self.KEEP:
            del self._servers[: self.KEEP], self._links[: self.KEEP]

    def since(self, writes: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The servers and links written after the first ``writes`` writes
        (int64 arrays; an index may repeat), or None where some of those
        writes are no longer kept."""
        behind = self.writes - writes
        if behind == 0:
            return _NOTHING, _NOTHING
        if not 0 < behind <= len(self._servers):
            return None
        return (np.concatenate(self._servers[-behind:]).astype(np.int64, copy=False),
                np.concatenate(self._links[-behind:]).astype(np.int64, copy=False))


def snapshot_allocation(allocation: Allocation) -> Allocation:
    """``allocation`` read once into plain data the engine owns: fresh
    arrays, and routes and swaps of Python ints and floats. The check and
    the commit both read this copy, so an allocator that reuses its arrays,
    hands over iterators, or gives objects that answer ``__index__``,
    ``__int__``, ``__float__``, ``__eq__`` or ``__array__`` one way and then
    another reserves exactly what was checked. Raises TypeError or
    ValueError for a field of the wrong kind."""
    routes = allocation.routes
    if not _is_plain(routes):
        routes = tuple(_plain_route(*route) for route in routes)  # (the usual tuple of plain Routes is kept)
    vm_servers = allocation.vm_servers
    return Allocation(
        servers=_indices(allocation.servers),
        amounts=_numbers(allocation.amounts),
        routes=routes,
        vm_servers=None if vm_servers is None else _indices(vm_servers),
        reconfigure=tuple(tuple(map(operator.index, swap)) for swap in allocation.reconfigure),
    )


_ROUTE, _INT, _FLOAT, _TUPLE = {Route}, {int}, {float}, {tuple}


def _is_plain(routes: Any) -> bool:
    """Whether ``routes`` are already plain data: a tuple of Routes of
    Python ints, a float and a tuple of Python ints, none of which can
    answer two ways (the types read in bulk: this runs for every answer)."""
    if type(routes) is not tuple or not set(map(type, routes)) <= _ROUTE:
        return False
    fields = tuple(chain.from_iterable(routes))  # a, b, links, amount of each route in turn
    return (set(map(type, fields[0::4])) <= _INT and set(map(type, fields[1::4])) <= _INT
            and set(map(type, fields[2::4])) <= _TUPLE and set(map(type, fields[3::4])) <= _FLOAT
            and set(map(type, chain.from_iterable(fields[2::4]))) <= _INT)


def _plain_route(a: Any, b: Any, links: Any, amount: Any) -> Route:
    """A route of Python ints and a float, each read once (`operator.index`
    always returns a plain int)."""
    if isinstance(amount, (str, bytes)):
        raise TypeError(f"a route's amount is {amount!r}, not a number")
    return Route(operator.index(a), operator.index(b), tuple(map(operator.index, links)), float(amount))


def _indices(value: Any) -> np.ndarray:
    """A fresh array of ``value``; objects (not numpy integers) read once through ``__index__``."""
    array = np.array(value)
    if array.dtype == object:
        array = np.array([operator.index(item) for item in array.ravel()], dtype=np.int64).reshape(array.shape)
    return array


def _numbers(value: Any) -> np.ndarray:
    """A fresh float64 array of ``value``; objects read once through ``__float__``, text refused."""
    array = np.array(value)
    if array.dtype == object:
        items = array.ravel().tolist()
        if any(isinstance(item, (str, bytes)) for item in items):
            raise TypeError("amounts hold text, not numbers")
        array = np.array([float(item) for item in items], dtype=np.float64).reshape(array.shape)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"amounts are of type {array.dtype}, not real numbers")
    return array.astype(np.float64, copy=False)


def locked_view(array: np.ndarray) -> np.ndarray:
    """A live view of a contiguous ``array`` that cannot be written through,
    not even by setting its ``writeable`` flag back (a plain view's can be)."""
    return np.frombuffer(memoryview(array).toreadonly(), dtype=array.dtype).reshape(array.shape)


def required_pairs(rule: str, cpu_given: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (j, i), j < i, of positions in the choice order that need a path.

    ``cpu_given[i]`` is the CPU server ``i`` gave. See `dcbench.model.requests.CONNECTIVITY_RULES`.
    """
    pairs: list[tuple[int, int]] = []
    gives_cpu = [bool(c > 0) for c in cpu_given]
    for i in range(1, len(cpu_given)):
        pairs.extend(partners(rule, gives_cpu, i))
    return pairs


def partners(rule: str, gives_cpu: Sequence[bool], i: int) -> list[tuple[int, int]]:
    """The earlier positions that the server chosen at position ``i`` must reach."""
    if rule == "all" or gives_cpu[i]:
        return [(j, i) for j in range(i)]
    if rule == "cpu":
        return [(j, i) for j in range(i) if gives_cpu[j]]
    # The reference code walks the earlier servers in order with a flag that
    # turns on at the first one that gave no CPU and never turns off; once
    # on, a new server that gives no CPU skips every remaining pair.
    result = []
    for j in range(i):
        if not gives_cpu[j]:
            break
        result.append((j, i))
    return result


def check_allocation(allocation: Allocation, request: Request, state: State) -> tuple[str | None, np.ndarray]:
    """Why ``allocation`` is invalid for ``request`` in ``state`` (None if it
    is valid), and the amount it reserves on every link. Raises TypeError or
    ValueError for a field of the wrong kind (`snapshot_allocation`).

    Args:
        allocation: What an allocator returned.
        request: The request it answers.
        state: The free capacities it must fit.

    Returns:
        The problem (one line) or None, and the amount reserved on every
        link (links,); zeros where it fails before its routes are read.

    Raises:
        TypeError: A field of the wrong kind (amounts of text, say).
        ValueError: A field that cannot be read as numbers.
    """
    problem, usage = check_snapshot(snapshot_allocation(allocation), request, state)
    return problem, usage.dense(state.network.n_links)


def check_snapshot(allocation: Allocation, request: Request, state: State) -> tuple[str | None, LinkUsage]:
    """`check_allocation` of what `snapshot_allocation` made of an allocation (the engine
    commits the very allocation it checked), in time that grows with the
    links its routes use, not with the network's.

    Args:
        allocation: What `snapshot_allocation` made of an allocator's answer.
        request: The request it answers.
        state: The free capacities it must fit.

    Returns:
        The problem (one line) or None, and what it reserves on the links
        its routes use; none where it fails before its routes are read.
    """
    if request.kind == "job":
        return check_job_allocation(allocation, request, state)
    network = state.network
    usage = _NO_USAGE
    if allocation.reconfigure or allocation.vm_servers is not None:
        return "a pool allocation has no VMs and reconfigures nothing", usage
    servers = allocation.servers
    amounts = allocation.amounts
    n_resources = len(network.resources)
    if servers.ndim != 1 or len(servers) == 0 or servers.dtype.kind not in "iu":
        return "servers must be a non-empty 1-d array of server indices", usage
    if amounts.shape != (len(servers), n_resources):
        return f"amounts has shape {amounts.shape}, expected {(len(servers), n_resources)}", usage
    if servers.min() < 0 or servers.max() >= network.n_servers:
        return "a server index is out of range", usage
    server_list = servers.tolist()
    if len(set(server_list)) != len(server_list):
        return "a server appears twice", usage
    if not amounts.min() >= 0 or not amounts.max() < np.inf:  # (NaN fails both comparisons)
        return "amounts must be finite and non-negative", usage
    if amounts.sum(axis=1).min() <= 0:
        return "a chosen server gives nothing", usage
    if np.abs(amounts.sum(axis=0) - request.demand).max() > 1e-6:
        return f"amounts sum to {amounts.sum(axis=0).tolist()}, demand is {request.demand.tolist()}", usage
    over = amounts > state.free_resources[servers] + _TOLERANCE
    if over.any():
        row, column = np.argwhere(over)[0]
        return (f"server {int(servers[row])} over capacity on {network.resources[column]}: "
                f"takes {amounts[row, column]:g}, {state.free_resources[servers[row], column]:g} free"), usage

    position = {s: i for i, s in enumerate(server_list)}
    by_id = network.path_ends_by_id
    routed: set[tuple[int, int]] = set()
    route_links: list[int] = []
    for a, b, links, amount in allocation.routes:
        i = position.get(a)
        j = position.get(b)
        if i is None or j is None or i == j:
            return f"route {a}->{b} does not join two servers of the allocation", usage
        if amount != CHANNELS_PER_PAIR:  # (NaN too)
            return (f"route {a}->{b} reserves {amount!r} channels; a pool request's pair reserves exactly "
                    f"{CHANNELS_PER_PAIR:g} on every link of its path"), usage
        known = by_id.get(id(links))
        ends = known[1] if known is not None and known[0] is links else network.path_ends(links)
        if ends is None or not ((ends[0] == a and ends[1] == b) or (ends[0] == b and ends[1] == a)):
            return f"route {a}->{b} is not a path between them", usage
        pair = (i, j) if i < j else (j, i)
        if pair in routed:
            return f"servers {a} and {b} are joined by two routes; a pair reserves one path", usage
        route_links.extend(links)
        routed.add(pair)
    usage = _pool_usage(route_links, network.n_links)
    free = state.free_links[usage.links]
    over_links = usage.amounts > free + _TOLERANCE
    if over_links.any():
        k = int(np.flatnonzero(over_links)[0])  # (links ascending: the lowest link over capacity)
        return f"link {int(usage.links[k])} over capacity: reserves {usage.amounts[k]:g}, {free[k]:g} free", usage

    n = len(server_list)
    if request.connectivity == "all" and len(routed) == n * (n - 1) // 2:
        return None, usage  # routed holds distinct valid pairs: all of them
    cpu = network.resources.index("cpu") if "cpu" in network.resources else 0
    for pair in required_pairs(request.connectivity, amounts[:, cpu]):
        if pair not in routed:
            a, b = int(servers[pair[0]]), int(servers[pair[1]])
            return f"servers {a} and {b} need a path and have none", usage
    return None, usage


def circuit_changes(network: Network, swaps: Sequence[Swap], free_links: np.ndarray) -> tuple[str | None, np.ndarray]:
    """What ``swaps`` do to every link's capacity (None and the change if
    they are allowed, else why not): each moves idle circuits only, between
    distinct racks of a reconfigurable topology."""
    change = np.zeros(network.n_links)
    if not swaps:
        return None, change
    circuits = network.circuits
    if circuits is None or not circuits.reconfigurable:
        return "this topology cannot be reconfigured", change
    circuit = float(circuits.port_gbps)
    free = free_links.copy()
    n_racks = network.n_racks
    for swap in swaps:
        if len(swap) != 4 or not all(isinstance(r, (int, np.integer)) and 0 <= r < n_racks for r in swap):
            return f"swap {tuple(swap)} must name four racks", change
        a, b, c, d = (int(r) for r in swap)
        if a == b or c == d or a == d or c == b or a == c or b == d:
            return f"swap {(a, b, c, d)} must re-point two circuits between distinct racks", change
        try:
            ab, cd = network.link_between(network.rack_node[a], network.rack_node[b]), \
                network.link_between(network.rack_node[c], network.rack_node[d])
            ad, cb = network.link_between(network.rack_node[a], network.rack_node[d]), \
                network.link_between(network.rack_node[c], network.rack_node[b])
        except KeyError:
            return f"swap {(a, b, c, d)} joins racks with no possible circuit", change
        for link, pair in ((ab, (a, b)), (cd, (c, d))):
            if free[link] < circuit - _TOLERANCE:
                return f"swap {(a, b, c, d)} moves circuit {pair[0]}->{pair[1]}, which is not idle", change
            free[link] -= circuit
            change[link] -= circuit
        free[ad] += circuit
        free[cb] += circuit
        change[ad] += circuit
        change[cb] += circuit
    return None, change


def check_job_allocation(allocation: Allocation, request: Request, state: State) -> tuple[str | None, LinkUsage]:
    """`check_snapshot` for a job: every VM on a server, each server's
    share the sum of its VMs, the circuit swaps allowed, and the traffic of
    every pair of racks carried by routes between their switches.

    Args:
        allocation: What `snapshot_allocation` made of an allocator's answer.
        request: The job it answers.
        state: The free capacities it must fit.

    Returns:
        The problem (one line) or None, and what the routes read so far
        reserve on the links they use.
    """
    network = state.network
    usage = _NO_USAGE
    if network.rack_node is None:
        return "this topology has no rack switches to place jobs on", usage
    vms = np.asarray(request.vms, dtype=np.float64)
    hosts = allocation.vm_servers
    if hosts is None:
        return "a job allocation needs vm_servers (the server of every VM)", usage
    if hosts.shape != (len(vms),) or hosts.dtype.kind not in "iu":
        return f"vm_servers must give a server index for each of the {len(vms)} VMs", usage
    if hosts.min() < 0 or hosts.max() >= network.n_servers:
        return "a server index is out of range", usage
    ascending, first, host_row = np.unique(hosts, return_index=True, return_inverse=True)
    # Each server's VMs summed in VM order (as adding them one by one into a row per server does).
    summed = np.zeros((len(ascending), vms.shape[1]))
    np.add.at(summed, host_row, vms)
    in_order = np.argsort(first)  # the servers in the order of their first VM
    servers = ascending[in_order]
    given_servers = allocation.servers
    given_amounts = allocation.amounts
    if (given_servers.shape != servers.shape or given_servers.dtype.kind not in "iu"  # (a NaN fails the last test)
            or set(given_servers.tolist()) != set(servers.tolist())
            or given_amounts.shape != (len(servers), vms.shape[1])
            or not np.abs(given_amounts - summed[np.searchsorted(ascending, given_servers)]).max() <= 1e-6):
        return "servers and amounts must be the servers of the VMs and the sum of each one's VMs", usage
    taken = summed[in_order]
    over = taken > state.free_resources[servers] + _TOLERANCE
    if over.any():
        row, column = np.argwhere(over)[0]
        server = int(servers[row])
        return (f"server {server} over capacity on {network.resources[column]}: "
                f"takes {taken[row, column]:g}, {state.free_resources[server, column]:g} free"), usage

    problem, change = circuit_changes(network, allocation.reconfigure, state.free_links)
    if problem is not None:
        return problem, usage

    rack_of_node = {int(node): rack for rack, node in enumerate(network.rack_node.tolist())}
    max_hops = network.circuits.max_hops if network.circuits is not None else np.inf
    racks = network.racks[hosts]
    needed: dict[tuple[int, int], float] = {}
    for source, target, gbps in np.asarray(request.flows).tolist():
        pair = (int(racks[int(source)]), int(racks[int(target)]))
        if pair[0] != pair[1]:
            needed[pair] = needed.get(pair, 0.0) + gbps
    carried: dict[tuple[int, int], float] = {}
    route_links: list[int] = []
    route_amounts: list[float] = []
    for a, b, links, amount in allocation.routes:
        pair = (rack_of_node.get(a, -1), rack_of_node.get(b, -1))
        if pair not in needed:
            return (f"route {a}->{b} does not join two racks that exchange traffic in this job",
                    _job_usage(route_links, route_amounts))
        if not amount > 0:
            return f"route {a}->{b} reserves a non-positive amount", _job_usage(route_links, route_amounts)
        if network.path_ends(links) != (a, b):
            return f"route {a}->{b} is not a path from one to the other", _job_usage(route_links, route_amounts)
        if len(links) > max_hops:
            return (f"route {a}->{b} crosses {len(links)} circuits; this topology allows {max_hops}",
                    _job_usage(route_links, route_amounts))
        route_links.extend(links)
        route_amounts.extend([amount] * len(links))
        carried[pair] = carried.get(pair, 0.0) + amount
    usage = _job_usage(route_links, route_amounts)
    for pair, gbps in needed.items():
        if abs(carried.get(pair, 0.0) - gbps) > 1e-6:
            return (f"racks {pair[0]}->{pair[1]} exchange {gbps:g} Gbps, "
                    f"the routes carry {carried.get(pair, 0.0):g}"), usage
    free = state.free_links[usage.links] + change[usage.links]
    over_links = usage.amounts > free + _TOLERANCE
    if over_links.any():
        k = int(np.flatnonzero(over_links)[0])  # (links ascending: the lowest link over capacity)
        return f"link {int(usage.links[k])} over capacity: reserves {usage.amounts[k]:g}, {free[k]:g} free", usage
    return None, usage
