"""Allocations, the engine's state, and `check_allocation`, which every allocation passes before it is committed."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import chain
from math import inf, isnan
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from dcbench.model.network import Network, Path
from dcbench.model.requests import Request

_TOLERANCE = 1e-9
CHANNELS_PER_PAIR = 1.0  # the papers' model: a pool's connected pair reserves one channel per link of its path
# Links below which counting over every link (bincount) is cheaper than sorting the routes' links (unique).
COUNT_ALL_LINKS_BELOW = 4096
_NOTHING = np.zeros(0, dtype=np.int64)
_INT = {int}


class Swap(NamedTuple):
    """An OCS reconfiguration: idle circuits ``a→b`` and ``c→d`` re-pointed to ``a→d`` and ``c→b``, four distinct racks.

    Attributes:
        a: A rack's index.
        b: The rack ``a``'s circuit led to.
        c: Another rack.
        d: The rack ``c``'s circuit led to."""

    a: int
    b: int
    c: int
    d: int


class Route(NamedTuple):
    """``amount`` reserved on every link of ``links``, a path from node ``a`` to node ``b``.

    Attributes:
        a: The start node: a server for a pool, a rack's switch for a job.
        b: The end node.
        links: The path's link indices, in order.
        amount: One channel for a pool's pair; the Gbps carried for a job."""

    a: int
    b: int
    links: Path
    amount: float = 1.0


class LinkUsage(NamedTuple):
    """What an allocation reserves on its links: ``links`` ascending, ``amounts`` summed in route order, none 0."""

    links: np.ndarray
    amounts: np.ndarray

    def dense(self, n_links: int) -> np.ndarray:
        """The amounts on all ``n_links`` links, zero where unused."""
        usage = np.zeros(n_links)
        usage[self.links] = self.amounts
        return usage


_NO_USAGE = LinkUsage(np.zeros(0, dtype=np.int64), np.zeros(0))
_NO_USAGE.links.flags.writeable = False
_NO_USAGE.amounts.flags.writeable = False


def _pool_usage(route_links: list[int], n_links: int) -> LinkUsage:
    if not route_links:
        return _NO_USAGE
    if n_links < COUNT_ALL_LINKS_BELOW:  # (fromiter and nonzero: a few µs less than a list and flatnonzero)
        every_count = np.bincount(np.fromiter(route_links, np.int64, len(route_links)), minlength=n_links)
        links = every_count.nonzero()[0]
        return LinkUsage(links, every_count[links] * CHANNELS_PER_PAIR)
    links, counts = np.unique(np.asarray(route_links, dtype=np.int64), return_counts=True)
    return LinkUsage(links, counts * CHANNELS_PER_PAIR)


def _job_usage(route_links: list[int], route_amounts: list[float]) -> LinkUsage:
    if not route_links:
        return _NO_USAGE
    links, inverse = np.unique(np.asarray(route_links, dtype=np.int64), return_inverse=True)
    # bincount adds the weights in their order, from 0.0, as adding route by route would
    return LinkUsage(links, np.bincount(inverse, weights=np.asarray(route_amounts, dtype=np.float64),
                                        minlength=len(links)))


@dataclass(frozen=True, slots=True)
class Allocation:
    """What an allocator grants a request.

    Attributes:
        servers: The chosen servers' indices, in the order chosen (servers,).
        amounts: What each gives, servers × resources; rows sum to the demand.
        routes: For a pool, a route per pair of its servers that needs a path; for a job, routes between the switches
            of racks exchanging traffic.
        vm_servers: Jobs: the server of each VM (VMs,); None for a pool.
        reconfigure: Jobs: the circuit swaps to make first, in order."""

    servers: np.ndarray
    amounts: np.ndarray
    routes: tuple[Route, ...] = ()
    vm_servers: np.ndarray | None = None
    reconfigure: tuple[Swap, ...] = ()


@dataclass(frozen=True, slots=True)
class Reject:
    """An allocator's refusal.

    Attributes:
        reason: One short printable line ("no_path"), recorded in the requests table."""

    reason: str = "rejected"


class State:
    """Free capacity of every server and link, and every link's capacity (OCS reconfiguration changes it); the engine
    owns the copy that counts, allocators get a read-only view.

    Args:
        network: The network whose capacities it starts from, all free.
    Attributes:
        network: The network (in an allocator's view, its private copy).
        free_resources: Each server's free capacity, servers × resources.
        free_links: Each link's free capacity (links,).
        link_capacity: Each link's capacity now (links,).
        journal: The engine's `StateJournal` of its writes during a run, or None."""

    def __init__(self, network: Network):
        self.network = network
        self.free_resources = network.server_capacity.copy()
        self.free_links = network.link_capacity.copy()
        self.link_capacity = network.link_capacity.copy()
        self.journal: StateJournal | None = None

    def read_only(self, network: Network | None = None) -> "State":
        """A live view of this state that cannot be written through.

        Args:
            network: The network the view names; None: this state's.
        Returns:
            The view, sharing the state's journal."""
        view = State.__new__(State)
        view.network = self.network if network is None else network
        for name in ("free_resources", "free_links", "link_capacity"):
            setattr(view, name, locked_view(getattr(self, name)))
        view.journal = self.journal
        return view


class StateJournal:
    """The servers and links of the engine's last `KEEP` writes, so a builder's `start` catches up without comparing."""

    KEEP = 64

    def __init__(self) -> None:
        self.writes = 0
        self._servers: list[np.ndarray] = []
        self._links: list[np.ndarray] = []

    def record(self, servers: np.ndarray, links: np.ndarray) -> None:
        """Note that ``servers`` and ``links`` (index arrays, kept as given) were written."""
        self._servers.append(servers)
        self._links.append(links)
        self.writes += 1
        if len(self._servers) >= 2 * self.KEEP:
            del self._servers[: self.KEEP], self._links[: self.KEEP]

    def since(self, writes: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The servers and links written after the first ``writes`` writes, or None if no longer kept."""
        behind = self.writes - writes
        if behind == 0:
            return _NOTHING, _NOTHING
        if not 0 < behind <= len(self._servers):
            return None
        return (np.concatenate(self._servers[-behind:]).astype(np.int64, copy=False),
                np.concatenate(self._links[-behind:]).astype(np.int64, copy=False))


def snapshot_allocation(allocation: Allocation, plain_paths: Mapping[int, tuple[Any, ...]] = MappingProxyType({})
                        ) -> Allocation:
    """``allocation`` copied once into plain arrays, ints and floats, so what is committed is what was checked; raises
    TypeError or ValueError for a field of the wrong kind. A route over a path whose id ``plain_paths`` maps to
    ``(path, ...)`` (`Network.path_ends_by_id`) is not read link by link."""
    routes = allocation.routes
    if not _is_plain(routes, plain_paths):
        routes = tuple(_plain_route(*route) for route in routes)  # (the usual tuple of plain Routes is kept)
    vm_servers = allocation.vm_servers
    return Allocation(
        servers=_indices(allocation.servers),
        amounts=_numbers(allocation.amounts),
        routes=routes,
        vm_servers=None if vm_servers is None else _indices(vm_servers),
        reconfigure=(() if type(allocation.reconfigure) is tuple and not allocation.reconfigure
                     else tuple(tuple(map(operator.index, swap)) for swap in allocation.reconfigure)),
    )


def _is_plain(routes: Any, plain_paths: Mapping[int, tuple[Any, ...]]) -> bool:
    """Whether ``routes`` are a tuple of Routes of plain ints, a float and a tuple of ints (or a known path)."""
    if type(routes) is not tuple:
        return False
    for route in routes:
        if type(route) is not Route:
            return False
        a, b, links, amount = route
        if type(a) is not int or type(b) is not int or type(amount) is not float or type(links) is not tuple:
            return False
        known = plain_paths.get(id(links))
        if (known is None or known[0] is not links) and not set(map(type, links)) <= _INT:
            return False
    return True


def _plain_route(a: Any, b: Any, links: Any, amount: Any) -> Route:
    if isinstance(amount, (str, bytes)):
        raise TypeError(f"a route's amount is {amount!r}, not a number")
    return Route(operator.index(a), operator.index(b), tuple(map(operator.index, links)), float(amount))


def _indices(value: Any) -> np.ndarray:
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
    """A live view of a contiguous ``array`` that cannot be made writeable."""
    return np.frombuffer(memoryview(array).toreadonly(), dtype=array.dtype).reshape(array.shape)


def required_pairs(rule: str, cpu_given: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (j, i), j < i, of positions in the choice order that need a path under ``rule``."""
    pairs: list[tuple[int, int]] = []
    gives_cpu = [bool(c > 0) for c in cpu_given]
    for i in range(1, len(cpu_given)):
        pairs.extend(partners(rule, gives_cpu, i))
    return pairs


def partners(rule: str, gives_cpu: Sequence[bool], i: int) -> list[tuple[int, int]]:
    """The earlier positions the server chosen at position ``i`` must reach."""
    if rule == "all" or gives_cpu[i]:
        return [(j, i) for j in range(i)]
    if rule == "cpu":
        return [(j, i) for j in range(i) if gives_cpu[j]]
    # the reference code's sticky flag: pairs stop at the first earlier server that gave no CPU
    result = []
    for j in range(i):
        if not gives_cpu[j]:
            break
        result.append((j, i))
    return result


def check_allocation(allocation: Allocation, request: Request, state: State) -> tuple[str | None, np.ndarray]:
    """Why ``allocation`` is invalid for ``request`` in ``state`` (one line, or None), and the amount reserved on every
    link; raises TypeError or ValueError as `snapshot_allocation`."""
    problem, usage = check_snapshot(snapshot_allocation(allocation), request, state)
    return problem, usage.dense(state.network.n_links)


def check_snapshot(allocation: Allocation, request: Request, state: State) -> tuple[str | None, LinkUsage]:
    """`check_allocation` of a snapshot, with the `LinkUsage` (time grows with its routes' links only)."""
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
    # (a few servers' numbers are read faster from lists than through numpy's calls)
    server_list = servers.tolist()
    if min(server_list) < 0 or max(server_list) >= network.n_servers:
        return "a server index is out of range", usage
    if len(set(server_list)) != len(server_list):
        return "a server appears twice", usage
    rows = amounts.tolist()
    values = list(chain.from_iterable(rows))
    if any(map(isnan, values)) or min(values) < 0 or max(values) == inf:
        return "amounts must be finite and non-negative", usage
    if min(map(max, rows)) <= 0 and not request.keep_useless:  # (of amounts >= 0, only zeros sum to 0)
        return "a chosen server gives nothing", usage
    sums = amounts.sum(axis=0).tolist()  # (finite: the differences are numpy's, read as floats)
    if max(abs(given - asked) for given, asked in zip(sums, request.demand.tolist())) > 1e-6:
        return f"amounts sum to {sums}, demand is {request.demand.tolist()}", usage
    free_values = state.free_resources[servers].ravel().tolist()  # (row by row, as ``values``)
    if any(t > f + _TOLERANCE for t, f in zip(values, free_values)):
        return _servers_over(network, servers, amounts, state.free_resources), usage

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
    problem = _links_over(usage, state.free_links[usage.links])
    if problem is not None:
        return problem, usage

    n = len(server_list)
    if len(routed) == n * (n - 1) // 2:
        return None, usage  # routed holds distinct valid pairs: all of them, whatever the rule needs
    cpu = network.resources.index("cpu") if "cpu" in network.resources else 0
    for pair in required_pairs(request.connectivity, amounts[:, cpu]):
        if pair not in routed:
            a, b = int(servers[pair[0]]), int(servers[pair[1]])
            return f"servers {a} and {b} need a path and have none", usage
    return None, usage


def circuit_changes(network: Network, swaps: Sequence[Swap], free_links: np.ndarray) -> tuple[str | None, np.ndarray]:
    """What ``swaps`` do to each link's capacity (None and the change), or why they are not allowed."""
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
        if len(swap) != 4 or not all(0 <= r < n_racks for r in swap):  # (ints: `snapshot_allocation`)
            return f"swap {tuple(swap)} must name four racks", change
        a, b, c, d = (int(r) for r in swap)
        if a == b or c == d or a == d or c == b or a == c or b == d:
            return f"swap {(a, b, c, d)} must re-point two circuits between distinct racks", change
        node = network.rack_node
        try:
            ab, cd, ad, cb = (network.link_between(node[x], node[y]) for x, y in ((a, b), (c, d), (a, d), (c, b)))
        except KeyError:
            return f"swap {(a, b, c, d)} joins racks with no possible circuit", change
        for link, pair in ((ab, (a, b)), (cd, (c, d))):
            if free[link] < circuit - _TOLERANCE:
                return f"swap {(a, b, c, d)} moves circuit {pair[0]}->{pair[1]}, which is not idle", change
            free[link] -= circuit
            change[link] -= circuit
        for link in (ad, cb):
            free[link] += circuit
            change[link] += circuit
    return None, change


def check_job_allocation(allocation: Allocation, request: Request, state: State) -> tuple[str | None, LinkUsage]:
    """`check_snapshot` for a job: its VMs' servers, their sums, its swaps and each rack pair's traffic."""
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
    summed = np.zeros((len(ascending), vms.shape[1]))
    np.add.at(summed, host_row, vms)  # in VM order, as the builder sums them
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
    problem = _servers_over(network, servers, taken, state.free_resources)
    if problem is not None:
        return problem, usage

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
            problem = f"route {a}->{b} does not join two racks that exchange traffic in this job"
        elif not amount > 0:
            problem = f"route {a}->{b} reserves a non-positive amount"
        elif network.path_ends(links) != (a, b):
            problem = f"route {a}->{b} is not a path from one to the other"
        elif len(links) > max_hops:
            problem = f"route {a}->{b} crosses {len(links)} circuits; this topology allows {max_hops}"
        else:
            route_links.extend(links)
            route_amounts.extend([amount] * len(links))
            carried[pair] = carried.get(pair, 0.0) + amount
            continue
        return problem, _job_usage(route_links, route_amounts)
    usage = _job_usage(route_links, route_amounts)
    for pair, gbps in needed.items():
        if abs(carried.get(pair, 0.0) - gbps) > 1e-6:
            return (f"racks {pair[0]}->{pair[1]} exchange {gbps:g} Gbps, "
                    f"the routes carry {carried.get(pair, 0.0):g}"), usage
    return _links_over(usage, state.free_links[usage.links] + change[usage.links]), usage


def _servers_over(network: Network, servers: np.ndarray, taken: np.ndarray, free: np.ndarray) -> str | None:
    over = taken > free[servers] + _TOLERANCE
    if not over.any():
        return None
    row, column = np.argwhere(over)[0]
    server = int(servers[row])
    return (f"server {server} over capacity on {network.resources[column]}: "
            f"takes {taken[row, column]:g}, {free[server, column]:g} free")


def _links_over(usage: LinkUsage, free: np.ndarray) -> str | None:
    over = (usage.amounts > free + _TOLERANCE).nonzero()[0]
    if not len(over):
        return None
    k = int(over[0])  # (links ascending: the lowest link over capacity)
    return f"link {int(usage.links[k])} over capacity: reserves {usage.amounts[k]:g}, {free[k]:g} free"
