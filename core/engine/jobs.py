"""The job builder (the OCS paper's step semantics) and the job allocator bases: VMs go a rack at a time to its most
balanced server with room; inter-rack flows, largest first, take the direct bundle, else two hops via the rack with most
room, else (where allowed) a `Swap` of idle circuits. A job is granted or refused whole."""

from __future__ import annotations

import numpy as np

from dcbench.engine.pool import DONE, OPEN, PoolAllocator, StepBuilder, changed_rows
from dcbench.engine.simulation import Allocator
from dcbench.errors import AllocatorError
from dcbench.model.allocation import Allocation, Reject, Route, State, Swap
from dcbench.model.network import Network
from dcbench.model.requests import Request
from dcbench.spec import Param

PLACED = "placed"
_TOLERANCE = 1e-9
RECONFIGURE_PARAM = Param("reconfigure", bool, True, "re-point idle OCS circuits when a job's traffic needs them")


def _row_minimum(values: np.ndarray) -> np.ndarray:
    """``values.min(axis=1)`` column by column: the same, at half the cost on few columns."""
    smallest = values[:, 0].copy()
    for column in range(1, values.shape[1]):
        np.minimum(smallest, values[:, column], out=smallest)
    return smallest


def rack_link_matrix(network: Network) -> np.ndarray:
    """``matrix[u, v]``: the link from rack ``u``'s switch to ``v``'s, or ``n_links`` where none."""
    if network.rack_node is None:
        raise AllocatorError("this topology has no rack switches; jobs need one (an ocs topology)")
    n_racks = len(network.rack_node)
    matrix = np.full((n_racks, n_racks), network.n_links, dtype=np.int64)
    node_rack = {int(node): rack for rack, node in enumerate(network.rack_node.tolist())}
    for link, (a, b) in enumerate(network.link_ends.tolist()):
        if a in node_rack and b in node_rack:
            matrix[node_rack[a], node_rack[b]] = link
            if not network.directed:
                matrix[node_rack[b], node_rack[a]] = link
    return matrix


class JobBuilder(StepBuilder):
    """Builds one job allocation a VM at a time; reused across requests: `start` a job, `place` each VM on a rack
    `rack_fits` allows, `route` it, then read `result` (readable fields: docs/plugins.md).

    Args:
        network: The network it builds on, with rack switches.
        reconfigure: Whether it may re-point idle circuits (if reconfigurable); a `JobAllocator` sets it per job.
    Raises:
        AllocatorError: The network has no rack switches."""

    def __init__(self, network: Network, reconfigure: bool = True):
        self.network = network
        self.n_racks = network.n_racks
        self.racks = network.racks
        self.rack_link = rack_link_matrix(network)
        circuits = network.circuits
        self.reconfigure = bool(reconfigure)
        self._reconfigurable = bool(circuits is not None and circuits.reconfigurable)
        self.circuit = float(circuits.port_gbps) if circuits is not None else 0.0
        self.max_hops = int(circuits.max_hops) if circuits is not None else 1
        self.server_capacity = network.server_capacity
        self.rack_capacity = np.zeros((self.n_racks, len(network.resources)))
        np.add.at(self.rack_capacity, network.racks, network.server_capacity)
        self.rack_servers = [np.flatnonzero(network.racks == rack) for rack in range(self.n_racks)]
        # Racks of equal size in index order (the usual layout) allow a reshape instead of a scatter.
        per_rack = network.n_servers // max(1, self.n_racks)
        self._rack_shape = ((self.n_racks, per_rack)
                            if np.array_equal(network.racks, np.repeat(np.arange(self.n_racks), per_rack)) else None)
        # one slot past the last link, never free, where `rack_link` points for pairs without a link
        self.free_links = np.zeros(network.n_links + 1)
        self.link_capacity = np.zeros(network.n_links + 1)
        self.free_resources = network.server_capacity.copy()
        self.rack_free = self.rack_capacity.copy()
        if self._rack_shape is not None:  # summed as `start` sums a rack, so that it sums again only what changes
            self.rack_free = self.free_resources.reshape(*self._rack_shape, -1).sum(axis=1)
        self.request: Request | None = None
        self.vms = np.zeros((0, len(network.resources)))
        self.flows = np.zeros((0, 3))
        self.hosts: list[int] = []
        self.host_racks: list[int] = []
        self._partners: list[list[tuple[int, float, bool]]] = []
        self.pending = np.zeros((self.n_racks, self.n_racks))
        self.routes: list[Route] = []
        self.swaps: list[Swap] = []
        self._rack_of = network.racks.tolist()
        # The last `server_fits` mask, the demand it was for (as a tuple), the servers placed on since, and
        # per rack how many of its servers the mask holds.
        self._fits: np.ndarray | None = None
        self._fits_key: tuple[float, ...] = ()
        self._fits_stale: list[int] = []
        self._rack_fit_count = np.zeros(self.n_racks, dtype=np.int64)
        self._needs = np.zeros((0, len(network.resources)))  # each VM's demand less the tolerance
        self._need_keys: list[tuple[float, ...]] = []
        self._bundle_free: np.ndarray | None = None
        self._bundle_capacity: np.ndarray | None = None

    def start(self, request: Request, state: State) -> None:
        """Begin building ``request``, forgetting the previous job.

        Args:
            request: The job.
            state: The free capacities to start from (copied).
        Raises:
            AllocatorError: ``request`` is not a job (it has no VMs)."""
        if request.vms is None or request.flows is None:
            raise AllocatorError(f"request {request.id} is not a job (it has no VMs)")
        if self._rack_shape is not None:
            # sum again only the racks whose servers changed since the last job, or that it placed VMs on
            changed = changed_rows(state.free_resources, self.free_resources)
            np.copyto(self.free_resources, state.free_resources)
            stale = np.union1d(self.racks[changed], self.host_racks).astype(np.int64)
            if len(stale):
                self.rack_free[stale] = self.free_resources.reshape(*self._rack_shape, -1)[stale].sum(axis=1)
        else:
            np.copyto(self.free_resources, state.free_resources)
            self.rack_free.fill(0.0)
            np.add.at(self.rack_free, self.racks, self.free_resources)
        self.free_links[:-1] = state.free_links
        self.free_links[-1] = -np.inf
        self.link_capacity[:-1] = state.link_capacity
        self.request = request
        self.vms = np.asarray(request.vms, dtype=np.float64)
        self._needs = self.vms - _TOLERANCE
        self._need_keys = [tuple(need) for need in self._needs.tolist()]
        self.flows = np.asarray(request.flows, dtype=np.float64).reshape(-1, 3)
        self.hosts = []
        self.host_racks = []
        # Per VM, its flows with the VMs placed before it: (VM, Gbps, outgoing).
        self._partners = [[] for _ in range(len(self.vms))]
        for source, target, rate in self.flows.tolist():
            source, target = int(source), int(target)
            if source > target:
                self._partners[source].append((target, rate, True))
            elif target > source:
                self._partners[target].append((source, rate, False))
        self.pending = np.zeros((self.n_racks, self.n_racks))  # inter-rack Gbps among the VMs placed
        self.routes = []
        self.swaps = []
        self.status = OPEN
        self.reason = ""
        self._fits = None
        self._bundle_free = self._bundle_capacity = None

    @property
    def reconfigure_allowed(self) -> bool:
        """Whether `route` may reconfigure: ``reconfigure`` and reconfigurable circuits."""
        return self.reconfigure and self._reconfigurable

    @property
    def step(self) -> int:
        """The index of the VM to place next."""
        return len(self.hosts)

    @property
    def vm(self) -> np.ndarray:
        """The demand of the VM to place next."""
        return self.vms[self.step]

    def server_fits(self) -> np.ndarray:
        """Servers with room for the next VM.

        Returns:
            A boolean mask (servers,), kept until the next `place`."""
        step = len(self.hosts)
        key = self._need_keys[step]
        fits = self._fits
        if fits is not None and key == self._fits_key:
            # The same VM type as the last one asked for: only the servers placed on since can have changed.
            if self._fits_stale:
                for server in self._fits_stale:
                    now = all(free >= need for free, need in zip(self.free_resources[server].tolist(), key))
                    if now != fits[server]:
                        fits[server] = now
                        self._rack_fit_count[self._rack_of[server]] += 1 if now else -1
                self._fits_stale.clear()
            return fits
        free = self.free_resources
        fits = free[:, 0] >= key[0]  # column by column: much faster than .all(axis=1) on 3 columns
        for column in range(1, len(key)):
            fits &= free[:, column] >= key[column]
        if self._rack_shape is not None:
            fits.reshape(self._rack_shape).sum(axis=1, out=self._rack_fit_count)
        else:
            self._rack_fit_count[:] = np.bincount(self.racks, weights=fits, minlength=self.n_racks)
        self._fits, self._fits_key, self._fits_stale = fits, key, []
        return fits

    def rack_fits(self) -> np.ndarray:
        """Racks with a server that has room for the next VM.

        Returns:
            A boolean mask (racks,)."""
        self.server_fits()
        return self._rack_fit_count > 0

    def partners(self) -> list[tuple[int, float, bool]]:
        """The flows between the next VM and those placed.

        Returns:
            One ``(partner's rack, Gbps, whether it leaves the next VM)`` per flow."""
        racks = self.host_racks
        return [(racks[partner], rate, out) for partner, rate, out in self._partners[self.step]]

    def bundle_free(self) -> np.ndarray:
        """`free_links` as racks × racks (−inf where no link), made once per job; read-only.

        Returns:
            The matrix (racks, racks)."""
        if self._bundle_free is None:
            self._bundle_free = self.free_links[self.rack_link]
        return self._bundle_free

    def bundle_capacity(self) -> np.ndarray:
        """`link_capacity` as racks × racks (0 where no link), made once per job; read-only.

        Returns:
            The matrix (racks, racks)."""
        if self._bundle_capacity is None:
            self._bundle_capacity = self.link_capacity[self.rack_link]
        return self._bundle_capacity

    def share_left(self) -> np.ndarray:
        """Per rack, its smallest free share if the next VM went there.

        Returns:
            The shares (racks,), negative where the rack cannot hold it."""
        return _row_minimum((self.rack_free - self.vms[len(self.hosts)]) / self.rack_capacity)

    def server_in(self, rack: int) -> int | None:
        """The rack's server the next VM would go to: the most balanced with room.

        Args:
            rack: The rack's index.
        Returns:
            The server's index, or None where none has room."""
        fits = self.server_fits()
        if self._rack_fit_count[rack] == 0:
            return None
        vm = self.vms[len(self.hosts)]
        if self._rack_shape is not None:  # the rack's servers are a slice: score them all, pick among those with room
            first = rack * self._rack_shape[1]
            servers = slice(first, first + self._rack_shape[1])
            after = _row_minimum((self.free_resources[servers] - vm) / self.server_capacity[servers])
            best = int(np.where(fits[servers], after, -np.inf).argmax())
            if fits[first + best] and after[best] > -np.inf:  # (else a zero capacity: the general way below)
                return first + best
        members = self.rack_servers[rack]
        candidates = members[fits[members]]
        after = (self.free_resources[candidates] - vm) / self.server_capacity[candidates]
        return int(candidates[after.min(axis=1).argmax()])

    def place(self, rack: int) -> bool:
        """Place the next VM on ``rack``.

        Args:
            rack: The rack's index, one of `rack_fits`.
        Returns:
            True if placed; False if no server has room: the job failed ("no_server").
        Raises:
            AllocatorError: The job is not open, or ``rack`` is out of range."""
        if self.status != OPEN:
            raise AllocatorError(f"builder: place({rack}) on a job that is already {self.status}")
        rack = int(rack)
        if not 0 <= rack < self.n_racks:
            raise AllocatorError(f"builder: rack {rack} is out of range (0..{self.n_racks - 1})")
        server = self.server_in(rack)
        if server is None:
            self.fail("no_server")
            return False
        for other, rate, out in self.partners():
            if other != rack:
                self.pending[(rack, other) if out else (other, rack)] += rate
        vm = self.vms[len(self.hosts)]
        self.free_resources[server] -= vm
        self.rack_free[rack] -= vm
        self.hosts.append(server)
        self.host_racks.append(rack)
        if self._fits is not None:
            self._fits_stale.append(server)
        if self.step == len(self.vms):
            self.status = PLACED
        return True

    def _inter_rack_flows(self) -> list[tuple[int, int, float]]:
        racks = np.asarray(self.host_racks, dtype=np.int64)
        flows = self.flows
        source = racks[flows[:, 0].astype(np.int64)]
        target = racks[flows[:, 1].astype(np.int64)]
        between = source != target
        # Largest flows first; ties in flow order.
        order = np.argsort(-flows[between, 2], kind="stable")
        return list(zip(source[between][order].tolist(), target[between][order].tolist(),
                        flows[between, 2][order].tolist()))

    def _reserve(self, links: tuple[int, ...], u: int, v: int, rate: float) -> None:
        for link in links:
            self.free_links[link] -= rate
        node = self.network.rack_node
        self.routes.append(Route(int(node[u]), int(node[v]), links, rate))

    def _two_hop(self, u: int, v: int, rate: float) -> tuple[int, int] | None:
        first, second = self.rack_link[u], self.rack_link[:, v]
        room = np.minimum(self.free_links[first], self.free_links[second])
        room[[u, v]] = -np.inf
        via = int(room.argmax())
        if room[via] < rate - _TOLERANCE:
            return None
        return int(first[via]), int(second[via])

    def _add_circuit(self, u: int, v: int) -> bool:
        """Re-point idle circuits u→x and y→v to u→v and y→x."""
        circuit = self.circuit - _TOLERANCE
        out_room = self.free_links[self.rack_link[u]].copy()
        in_room = self.free_links[self.rack_link[:, v]].copy()
        out_room[[u, v]] = -np.inf
        in_room[[u, v]] = -np.inf
        for x in np.argsort(-out_room, kind="stable").tolist():
            if out_room[x] < circuit:
                return False
            in_room_x = in_room.copy()
            in_room_x[x] = -np.inf
            y = int(in_room_x.argmax())
            if in_room_x[y] >= circuit:
                for link, delta in ((self.rack_link[u, x], -1), (self.rack_link[y, v], -1),
                                    (self.rack_link[u, v], 1), (self.rack_link[y, x], 1)):
                    self.free_links[link] += delta * self.circuit
                    self.link_capacity[link] += delta * self.circuit
                self.swaps.append(Swap(u, x, y, v))
                return True
        return False

    def route(self) -> bool:
        """Route the placed job's inter-rack flows, largest first; reconfigure, for the whole job, only where routing
        without it fails.

        Returns:
            True if every flow is routed; False (nothing reserved): "no_bandwidth".
        Raises:
            AllocatorError: The job is not placed."""
        if self.status != PLACED:
            raise AllocatorError(f"builder: route() on a job that is {self.status}, not placed")
        self._bundle_free = self._bundle_capacity = None  # the links change from here
        flows = self._inter_rack_flows()
        saved = self.free_links.copy(), self.link_capacity.copy()
        for may_reconfigure in (False, True) if self.reconfigure_allowed else (False,):
            if self._route_all(flows, may_reconfigure):
                self.status = DONE
                return True
            np.copyto(self.free_links, saved[0])
            np.copyto(self.link_capacity, saved[1])
            self.routes, self.swaps = [], []
        self.fail("no_bandwidth")
        return False

    def _route_all(self, flows: list[tuple[int, int, float]], may_reconfigure: bool) -> bool:
        free = self.free_links
        for u, v, rate in flows:
            direct = int(self.rack_link[u, v])
            if free[direct] < rate - _TOLERANCE:
                hops = self._two_hop(u, v, rate) if self.max_hops >= 2 else None
                if hops is not None:
                    self._reserve(hops, u, v, rate)
                    continue
                while may_reconfigure and free[direct] < rate - _TOLERANCE and self._add_circuit(u, v):
                    pass
                if free[direct] < rate - _TOLERANCE:
                    return False
            self._reserve((direct,), u, v, rate)
        return True

    def result(self) -> Allocation | Reject:
        """What the job came to.

        Returns:
            The `Allocation`, or a `Reject` with the reason ("incomplete" if not done)."""
        if self.status != DONE:
            return Reject(self.reason or "incomplete")
        hosts = np.asarray(self.hosts, dtype=np.int64)
        servers, first = np.unique(hosts, return_index=True)
        servers = servers[np.argsort(first)]
        position = {s: i for i, s in enumerate(servers.tolist())}
        amounts = np.zeros((len(servers), self.vms.shape[1]))
        np.add.at(amounts, [position[s] for s in self.hosts], self.vms)
        return Allocation(servers, amounts, tuple(self.routes), vm_servers=hosts, reconfigure=tuple(self.swaps))


class JobAllocator(Allocator):
    """Base class of policies that pick a rack per VM: implement `choose_rack`.

    Attributes:
        reconfigure: Whether its builder may reconfigure circuits (`RECONFIGURE_PARAM`), read at every job.
        network: The run's network (set by `reset`).
        rng: The run's random generator (set by `reset`).
        job_builder: Its `JobBuilder` (None without rack switches)."""

    reconfigure: bool = True

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Keep ``network`` and ``rng`` and make the job builder.

        Args:
            network: The run's network.
            rng: The allocator's random generator."""
        self.network = network
        self.rng = rng
        self.job_builder = JobBuilder(network, self.reconfigure) if network.rack_node is not None else None

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        """The rack for the next VM (``builder.vm``).

        Args:
            builder: The builder, with the VMs placed so far.
            allowed: The racks with room for it (racks,), at least one set.
        Returns:
            The rack's index."""
        raise NotImplementedError

    def allocate(self, request: Request, state: State) -> Allocation | Reject:
        """Serve a job: `allocate_job`.

        Args:
            request: The job.
            state: The free capacities now, read-only.
        Returns:
            The `Allocation`, or a `Reject`."""
        return self.allocate_job(request, state)

    def allocate_job(self, request: Request, state: State) -> Allocation | Reject:
        """Place the VMs on the racks `choose_rack` picks, then route the job.

        Args:
            request: The job.
            state: The free capacities now, read-only.
        Returns:
            The `Allocation`, or a `Reject` ("no_server", "no_bandwidth").
        Raises:
            AllocatorError: No rack switches, not a job, or a rack out of range."""
        builder = self.job_builder
        if builder is None:
            raise AllocatorError("jobs need a topology with rack switches (an ocs topology)")
        builder.start(request, state)
        while builder.is_open:
            allowed = builder.rack_fits()
            if not allowed.any():
                builder.fail("no_server")
                break
            builder.place(self.choose_rack(builder, allowed))
        if builder.status == PLACED:
            builder.reconfigure = bool(self.reconfigure)  # as the allocator says now, wherever it set it
            builder.route()
        return builder.result()


class PoolAndJobAllocator(PoolAllocator, JobAllocator):
    """A policy for both demand kinds: `choose` for pools, `choose_rack` for jobs."""

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Make both builders.

        Args:
            network: The run's network.
            rng: The allocator's random generator."""
        PoolAllocator.reset(self, network, rng)
        JobAllocator.reset(self, network, rng)

    def allocate(self, request: Request, state: State) -> Allocation | Reject:
        """Serve a job with `allocate_job`, a pool with `PoolAllocator.allocate`.

        Args:
            request: The request.
            state: The free capacities now, read-only.
        Returns:
            The `Allocation`, or a `Reject`."""
        if request.kind == "job":
            return self.allocate_job(request, state)
        return PoolAllocator.allocate(self, request, state)
