"""Topologies (`Topology`) and their compiled, read-only form (`Network`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Hashable, Sequence

import numpy as np

from dcbench.errors import SpecError

if TYPE_CHECKING:
    import networkx as nx

Path = tuple[int, ...]

# The largest server or link capacity: sums over a million stay finite, and whole numbers up to it are exact.
MAX_CAPACITY = 1e15

# Path caches start over at this many entries: bounded memory whatever the size.
_SERVER_PAIR_CACHE = 500_000
# Up to this many servers a network's private copies start from the paths its runs looked up before
# (`Network.learn_paths`); on more, most pairs of a run are new and learning them costs more than it saves.
SHARED_PATHS_UP_TO = 4096
_DISTANCE_CACHE = 50_000_000  # distances kept per catalogue (transit nodes × targets, 4 bytes each): 200 MB
_UNREACHED = 1 << 30  # the distance of a node that cannot reach the target
_NO_SHARED_PATHS = MappingProxyType({})
CAPACITY_RANGE = f"a capacity is a number from 0 to {MAX_CAPACITY:g}"
# What `Network.private_copy` makes anew rather than shares.
_PER_COPY = frozenset({"paths", "_catalogues", "_shared_catalogues", "path_ends_cache", "path_ends_by_id",
                       "_graph_copy", "_sealed"})


@dataclass(frozen=True, slots=True)
class Circuits:
    """The optical circuits joining a topology's rack switches, each a port to a port.

    Attributes:
        ports: OCS ports (output, and as many input) per rack switch.
        port_gbps: The capacity of one port, i.e. of one circuit (Gbps).
        reconfigurable: Whether idle circuits may be re-pointed during a run.
        max_hops: The most circuits a route between two racks may cross.
        fixed_gbps: Each ordered rack pair's capacity in the all-to-all fabric of a run that does not reconfigure
            (`Network.fixed_fabric`); None: such a run keeps the circuits."""

    ports: int
    port_gbps: float
    reconfigurable: bool
    max_hops: int
    fixed_gbps: float | None = None


@dataclass
class Topology:
    """What a topology plugin builds; `Network.compile` checks it.

    Attributes:
        graph: A networkx graph of servers and switches; each edge has a ``capacity`` (0 to `MAX_CAPACITY`, in
            ``link_unit``) and a ``tier`` (1, nearest the servers, by default).
        servers: The server nodes of ``graph``, in index order.
        resources: The resources' names, such as ("cpu", "mem").
        capacity: Each server's capacity, servers × resources.
        racks: Each server's rack label, an integer from 0.
        pods: Each server's pod label, an integer from 0.
        link_unit: "channels" or "Gbps".
        default_workload: The workload spec run when none is given, or None.
        info: Descriptive only: the engine reads none of it.
        rack_nodes: Rack ``r``'s switch at ``rack_nodes[r]`` (jobs need them), or None.
        demand_kinds: The demand kinds it serves: "pool", "job".
        circuits: The optical circuits between the rack switches, or None."""

    graph: "nx.Graph"
    servers: Sequence[Hashable]
    resources: tuple[str, ...]
    capacity: np.ndarray
    racks: np.ndarray
    pods: np.ndarray
    link_unit: str = "channels"
    default_workload: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    rack_nodes: Sequence[Hashable] | None = None
    demand_kinds: tuple[str, ...] = ("pool",)
    circuits: Circuits | None = None


class Network:
    """The compiled, read-only form of a `Topology`: nodes numbered servers first, then switches; links in edge order.
    Only its caches fill as used; an allocator gets a `private_copy` each run (readable fields: docs/plugins.md).

    Args:
        topology: What a topology plugin built.
        k_paths: Paths per pair in the path catalogue ``paths``.
    Raises:
        SpecError: The topology is unusable (servers, capacities, labels, rack nodes, circuits or link capacities
            malformed or out of range)."""

    def __init__(self, topology: Topology, k_paths: int = 3):
        graph = topology.graph
        servers = list(topology.servers)
        n_servers = len(servers)
        capacity = np.asarray(topology.capacity, dtype=np.float64)
        problem = _servers_problem(topology, servers, capacity) or _circuits_problem(topology)
        if problem is not None:
            raise SpecError(f"topology {problem}")
        server_set = set(servers)
        switches = [node for node in graph.nodes if node not in server_set]
        self.nodes: tuple[Hashable, ...] = tuple(servers + switches)
        self.node_index: MappingProxyType[Hashable, int] = MappingProxyType(
            {node: i for i, node in enumerate(self.nodes)})
        self.n_servers = n_servers
        self.n_nodes = len(self.nodes)
        self.resources = tuple(topology.resources)
        self.server_capacity = capacity
        self.racks = np.asarray(topology.racks, dtype=np.int64)
        self.pods = np.asarray(topology.pods, dtype=np.int64)
        self.link_unit = topology.link_unit
        self.default_workload = topology.default_workload
        self.circuits: Circuits | None = topology.circuits
        self.info: MappingProxyType[str, Any] = MappingProxyType(dict(topology.info))
        self.demand_kinds = tuple(topology.demand_kinds)
        self._graph_copy: Any = None
        self.directed = bool(graph.is_directed())
        self.rack_node = (np.asarray([self.node_index[n] for n in topology.rack_nodes], dtype=np.int64)
                          if topology.rack_nodes is not None else None)
        self.n_racks = int(self.racks.max()) + 1 if n_servers else 0

        ends, link_capacity, tiers = [], [], []
        for a, b, data in graph.edges(data=True):
            ia, ib = self.node_index[a], self.node_index[b]
            ends.append((ia, ib) if self.directed else (min(ia, ib), max(ia, ib)))
            link_capacity.append(float(data["capacity"]))
            tiers.append(int(data.get("tier", 1)))
        self.n_links = len(ends)
        self.link_ends = np.asarray(ends, dtype=np.int64).reshape(-1, 2)
        self.link_capacity = np.asarray(link_capacity, dtype=np.float64)
        if not (self.link_capacity >= 0).all() or not np.isfinite(self.link_capacity).all():
            raise SpecError("topology has a link whose capacity is negative or not finite")
        if (self.link_capacity > MAX_CAPACITY).any():
            raise SpecError(f"topology has a link of capacity {float(self.link_capacity.max())!r}; {CAPACITY_RANGE}")
        self.link_tier = np.asarray(tiers, dtype=np.int64)
        self.tiers = tuple(int(t) for t in np.unique(self.link_tier))
        self.link_of_pair: MappingProxyType[tuple[int, int], int] = MappingProxyType(
            {(a, b): i for i, (a, b) in enumerate(ends)})

        adjacency: list[list[tuple[int, int]]] = [[] for _ in range(self.n_nodes)]
        for link, (a, b) in enumerate(ends):
            adjacency[a].append((b, link))
            if not self.directed:
                adjacency[b].append((a, link))
        self.adjacency: tuple[tuple[tuple[int, int], ...], ...] = tuple(
            tuple(sorted(neighbours)) for neighbours in adjacency)

        # A single-homed server's paths are its attachment switch's.
        self.server_link = np.full(n_servers, -1, dtype=np.int64)
        self.server_attachment = np.arange(n_servers, dtype=np.int64)
        for server in range(n_servers):
            if len(self.adjacency[server]) == 1:
                neighbour, link = self.adjacency[server][0]
                self.server_link[server] = link
                self.server_attachment[server] = neighbour
        # Neighbours in the graph's own order, for the reference's breadth-first walks.
        self.graph_neighbours: tuple[tuple[tuple[int, int], ...], ...] = tuple(
            tuple((self.node_index[m], self.link_between(self.node_index[n], self.node_index[m]))
                  for m in graph.neighbors(n))
            for n in self.nodes
        )
        # Shared by every run on this network (a runner caches it): nobody may change it.
        for name in ("server_capacity", "racks", "pods", "link_ends", "link_capacity", "link_tier",
                     "rack_node", "server_link", "server_attachment"):
            if getattr(self, name) is not None:
                setattr(self, name, frozen(getattr(self, name)))
        self.k_paths = k_paths
        # The link ends as Python ints, for walks that read them one at a time.
        self._link_tail = tuple(self.link_ends[:, 0].tolist())
        self._link_head = tuple(self.link_ends[:, 1].tolist())
        self._new_caches()
        self._sealed = True

    def _new_caches(self, shared: dict[int, "PathCatalogue"] | None = None) -> None:
        # (a copy reads another network's paths through read-only mappings, never the catalogue itself)
        views = {k: SharedPaths(catalogue) for k, catalogue in (shared or {}).items()}
        self._shared_catalogues = MappingProxyType(views)
        self.paths = PathCatalogue(self, self.k_paths, views.get(self.k_paths))
        self._catalogues = {self.k_paths: self.paths}
        self.path_ends_cache: dict[Path, tuple[int, int] | None] = {}
        # The catalogue hands out the same path objects: an id is cheaper than a tuple's hash, and each
        # entry keeps its path alive, so the id is not reused while it is here.
        self.path_ends_by_id: dict[int, tuple[Path, tuple[int, int] | None]] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_sealed", False):
            raise AttributeError(f"a Network is read-only: its {name!r} cannot be set")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Network is read-only: its {name!r} cannot be deleted")

    def private_copy(self) -> "Network":
        """This network with caches of its own, sharing its read-only arrays.

        Returns:
            The copy."""
        copy = Network.__new__(Network)
        for name, value in self.__dict__.items():
            if name not in _PER_COPY:
                object.__setattr__(copy, name, value)
        object.__setattr__(copy, "_sealed", False)
        copy._graph_copy = None
        copy._new_caches(self._catalogues if self.n_servers <= SHARED_PATHS_UP_TO else None)
        copy._sealed = True
        return copy

    def learn_paths(self, copy: "Network") -> None:
        """Find with this network's own catalogues the pairs ``copy``'s were asked for (whatever a plugin wrote
        there), so that later private copies read them rather than search (up to `SHARED_PATHS_UP_TO` servers).

        Args:
            copy: A private copy of this network, after a run."""
        if self.n_servers > SHARED_PATHS_UP_TO or type(copy) is not Network or type(copy._catalogues) is not dict:
            return
        n_servers, n_nodes = self.n_servers, self.n_nodes
        for k, catalogue in list(copy._catalogues.items()):
            if type(k) is not int or type(catalogue) is not PathCatalogue:
                continue
            own = self.catalogue(k)
            pairs, between = catalogue.server_pair_cache, catalogue._between
            if type(pairs) is dict:
                for key in pairs.keys() - own.server_pair_cache.keys():
                    if type(key) is int and 0 <= key < n_servers * n_servers and key // n_servers != key % n_servers:
                        own.between_servers(key // n_servers, key % n_servers)
            if type(between) is dict:
                for key in between.keys() - own._between.keys():
                    if (type(key) is tuple and len(key) == 2 and all(type(node) is int for node in key)
                            and 0 <= key[0] < n_nodes and 0 <= key[1] < n_nodes):
                        own.between_nodes(*key)

    def fixed_fabric(self) -> "Network":
        """The network of a run whose allocator does not reconfigure: with a ``fixed_gbps``, a copy with that on every
        rack-to-rack link and nothing reconfigurable (the OCS paper's ALL2ALL).

        Returns:
            The fixed fabric, with caches of its own, or this network."""
        circuits = self.circuits
        if circuits is None or circuits.fixed_gbps is None or self.rack_node is None:
            return self
        is_rack_switch = np.zeros(self.n_nodes, dtype=bool)
        is_rack_switch[self.rack_node] = True
        between_racks = is_rack_switch[self.link_ends[:, 0]] & is_rack_switch[self.link_ends[:, 1]]
        capacity = np.where(between_racks, float(circuits.fixed_gbps), self.link_capacity)
        fixed = self.private_copy()
        object.__setattr__(fixed, "link_capacity", frozen(capacity))
        object.__setattr__(fixed, "circuits", replace(circuits, reconfigurable=False))
        return fixed

    @property
    def graph(self) -> "nx.Graph":
        """The compiled topology as a frozen networkx graph, built on first use."""
        if self._graph_copy is None:
            import networkx as nx

            graph = nx.DiGraph() if self.directed else nx.Graph()
            graph.add_nodes_from(self.nodes)
            nodes = self.nodes
            graph.add_edges_from(
                (nodes[a], nodes[b], {"capacity": capacity, "tier": tier})
                for (a, b), capacity, tier in zip(self.link_ends.tolist(), self.link_capacity.tolist(),
                                                  self.link_tier.tolist()))
            object.__setattr__(self, "_graph_copy", nx.freeze(graph))
        return self._graph_copy

    def link_between(self, a: int, b: int) -> int:
        """The link from node ``a`` to node ``b`` (either way on an undirected graph).

        Args:
            a: A node's index.
            b: Another node's index.
        Returns:
            The link's index.
        Raises:
            KeyError: No link joins them."""
        return self.link_of_pair[(a, b) if self.directed or a < b else (b, a)]

    @classmethod
    def compile(cls, topology: Topology, k_paths: int = 3) -> "Network":
        """``Network(topology, k_paths)``.

        Args:
            topology: What a topology plugin built.
            k_paths: Paths per pair in the path catalogue ``paths``.
        Returns:
            The compiled network.
        Raises:
            SpecError: The topology is unusable (see `Network`)."""
        return cls(topology, k_paths)

    def catalogue(self, k: int) -> "PathCatalogue":
        """The shared catalogue of the k shortest paths.

        Args:
            k: Paths per pair.
        Returns:
            Its ``between_servers(a, b)`` and ``between_nodes(a, b)`` give link-index tuples, shortest first."""
        if k not in self._catalogues:
            self._catalogues[k] = PathCatalogue(self, k, self._shared_catalogues.get(k))
        return self._catalogues[k]

    def path_ends(self, links: Path) -> tuple[int, int] | None:
        """The two end nodes of the simple path ``links`` form, cached.

        Args:
            links: Link indices, in the order the path crosses them.
        Returns:
            ``(first node, last node)``, or None where they form no simple path."""
        known = self.path_ends_by_id.get(id(links))
        if known is not None and known[0] is links:
            return known[1]
        plain = all(type(link) is int for link in links)
        if not plain and not all(type(link) is int or isinstance(link, np.integer) for link in links):
            return None  # and never cached: (8.0, 17.0) == (8, 17), so it would stand for the real path
        if links in self.path_ends_cache:
            ends = self.path_ends_cache[links]
        else:
            ends = self._walk(links)
            if len(self.path_ends_cache) >= _SERVER_PAIR_CACHE:
                self.path_ends_cache.clear()
            self.path_ends_cache[links] = ends
        if plain and type(links) is tuple:  # (by id: tuples of plain ints only, which a snapshot keeps as they are)
            if len(self.path_ends_by_id) >= _SERVER_PAIR_CACHE:
                self.path_ends_by_id.clear()
            self.path_ends_by_id[id(links)] = (links, ends)
        return ends

    def _walk(self, links: Path) -> tuple[int, int] | None:
        n_links = self.n_links
        if not links or not all(0 <= link < n_links for link in links):  # (path_ends checked they are integers)
            return None
        tail, head, directed = self._link_tail, self._link_head, self.directed
        first = links[0]
        for start in (tail[first],) if directed else (tail[first], head[first]):
            node, seen = start, {start}
            for link in links:
                if tail[link] == node:
                    node = head[link]
                elif head[link] == node and not directed:
                    node = tail[link]
                else:
                    break
                if node in seen:
                    break
                seen.add(node)
            else:
                return start, node
        return None


def _servers_problem(topology: Topology, servers: list[Hashable], capacity: np.ndarray) -> str | None:
    n_servers = len(servers)
    if n_servers == 0:
        return "has no servers"
    if len(set(servers)) != n_servers:
        return "lists a server twice"
    missing = next((server for server in servers if server not in topology.graph), None)
    if missing is not None:
        return f"server {missing!r} is not a node of its graph"
    if capacity.shape != (n_servers, len(topology.resources)):
        return (f"capacity has shape {capacity.shape}, expected (servers, resources) = "
                f"({n_servers}, {len(topology.resources)})")
    if not (capacity >= 0).all() or not np.isfinite(capacity).all():
        return "has a server capacity that is negative or not finite"
    if (capacity > MAX_CAPACITY).any():
        return f"has a server capacity of {float(capacity.max())!r}; {CAPACITY_RANGE}"
    for name in ("racks", "pods"):
        labels = np.asarray(getattr(topology, name))
        if labels.shape != (n_servers,) or labels.dtype.kind not in "iu" or (labels < 0).any():
            return f"{name} must give each of the {n_servers} servers an integer label >= 0"
    rack_nodes = topology.rack_nodes
    if rack_nodes is not None and any(node not in topology.graph for node in rack_nodes):
        return "has a rack node that is not a node of its graph"
    return None


def _circuits_problem(topology: Topology) -> str | None:
    circuits = topology.circuits
    if circuits is None:
        return None
    if not isinstance(circuits, Circuits):
        return f"has circuits of type {type(circuits).__name__}; they must be a dcbench.Circuits"
    if topology.rack_nodes is None:
        return "has circuits but no rack_nodes for them to join"
    for name in ("ports", "max_hops"):
        count = getattr(circuits, name)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            return f"has circuits.{name}={count!r}; it must be an integer >= 1"
    gbps = circuits.port_gbps
    if isinstance(gbps, bool) or not isinstance(gbps, (int, float, np.number)) or not 0 < gbps < np.inf:
        return f"has circuits.port_gbps={gbps!r}; it must be a positive finite number"
    if not isinstance(circuits.reconfigurable, (bool, np.bool_)):
        return f"has circuits.reconfigurable={circuits.reconfigurable!r}; it must be True or False"
    fixed = circuits.fixed_gbps
    if fixed is not None:
        if isinstance(fixed, bool) or not isinstance(fixed, (int, float, np.number)) or not 0 < fixed < np.inf:
            return f"has circuits.fixed_gbps={fixed!r}; it must be None or a positive finite number"
        graph = topology.graph
        if any(not graph.has_edge(u, v) for u in topology.rack_nodes for v in topology.rack_nodes if u != v):
            return "has circuits.fixed_gbps but not a link for every ordered pair of rack switches to carry it"
    return None


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only copy of ``array`` that cannot be made writeable again (its memory is ``bytes``)."""
    return np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=array.dtype).reshape(array.shape)


def share_divisor(capacity: np.ndarray) -> np.ndarray:
    """``capacity`` with 1 where it is 0, so that an absent resource's free share reads 0, not 0 / 0."""
    return np.where(capacity > 0, capacity, 1.0)


class SharedPaths:
    """Read-only views of a catalogue's caches, for a private copy's catalogue of the same k (`Network.learn_paths`)."""

    __slots__ = ("pairs", "between")

    def __init__(self, catalogue: "PathCatalogue"):
        self.pairs = MappingProxyType(catalogue.server_pair_cache)
        self.between = MappingProxyType(catalogue._between)


class PathCatalogue:
    """The k shortest simple paths (by hops) between nodes as link-index tuples, ties in node-index order; a
    single-homed server's paths are its attachment's. ``shared``: another network's paths, read before searching."""

    def __init__(self, network: Network, k: int, shared: SharedPaths | None = None):
        self.network = network
        self.k = k
        self._shared_pairs = shared.pairs if shared is not None else _NO_SHARED_PATHS
        self._shared_between = shared.between if shared is not None else _NO_SHARED_PATHS
        self._server_link = [int(x) for x in network.server_link]
        self._attachment = [int(x) for x in network.server_attachment]
        degree = np.array([len(n) for n in network.adjacency])
        # A node of degree one can never be inside a simple path.
        self._transit = degree > 1
        self._between: dict[tuple[int, int], tuple[Path, ...]] = {}
        self._directed = network.directed
        # Distances to a target follow links backwards.
        self._incoming = network.adjacency
        if network.directed:
            self._incoming = [[] for _ in range(network.n_nodes)]
            for link, (a, b) in enumerate(network.link_ends.tolist()):
                self._incoming[b].append((a, link))
        self.n_servers = network.n_servers
        # keyed by a * servers + b: an int hashes faster than a pair
        self.server_pair_cache: dict[int, tuple[Path, ...]] = {}
        self._distance_to: dict[int, np.ndarray] = {}
        self._transit_cache: _TransitGraph | None = None

    def between_servers(self, a: int, b: int) -> tuple[Path, ...]:
        """Paths from server ``a`` to server ``b`` (``a != b``)."""
        key = a * self.n_servers + b
        paths = self.server_pair_cache.get(key)
        if paths is None:
            if len(self.server_pair_cache) >= _SERVER_PAIR_CACHE:
                self.server_pair_cache.clear()
            paths = self._shared_pairs.get(key)
            if paths is None:
                paths = self._compose(a, b)
            self.server_pair_cache[key] = paths
        return paths

    def _compose(self, a: int, b: int) -> tuple[Path, ...]:
        head, tail = self._server_link[a], self._server_link[b]
        start, end = self._attachment[a], self._attachment[b]
        core = ((),) if start == end else self.between_nodes(start, end)
        prefix: Path = (head,) if head >= 0 else ()
        suffix: Path = (tail,) if tail >= 0 else ()
        return tuple(prefix + path + suffix for path in core)

    def between_nodes(self, a: int, b: int) -> tuple[Path, ...]:
        key = (a, b) if a < b or self._directed else (b, a)
        paths = self._between.get(key)
        if paths is None:
            paths = self._shared_between.get(key)
            if paths is None:
                paths = self._search(*key)
            self._between[key] = paths
        if key[0] == a:
            return paths
        return tuple(path[::-1] for path in paths)

    def _transit_graph(self) -> "_TransitGraph":
        graph = self._transit_cache
        if graph is None:
            graph = self._transit_cache = _TransitGraph(self.network, self._transit)
        return graph

    def _distances(self, target: int) -> list[int]:
        distance = self._distance_to.get(target)
        if distance is None:
            graph = self._transit_graph()
            if len(self._distance_to) * max(graph.size, 1) >= _DISTANCE_CACHE:
                self._distance_to.clear()
            distance = self._distance_to[target] = graph.distances(target, self._incoming)
        return distance.tolist()

    def _search(self, source: int, target: int) -> tuple[Path, ...]:
        """Simple paths by length: a depth-first search on transit nodes, bounded by the distance to the target."""
        k = self.k
        if k <= 0:
            return ()
        if source == target:
            return ((),)
        graph = self._transit_graph()
        start = graph.compact[source]
        if start < 0:
            return ()  # a source that is not a transit node has no distance to the target
        distance = self._distances(target)
        if distance[start] >= _UNREACHED:
            return ()
        end = graph.compact[target]
        # Transit nodes with a link into the target, in index order, and that link.
        into_target = {graph.compact[node]: link for node, link in self._incoming[target]
                       if graph.compact[node] >= 0 and node != target}
        last_hops = sorted(into_target.items())
        link_between = graph.link_between
        adjacency = graph.adjacency
        on_path = [False] * graph.size
        found: list[Path] = []
        links: list[int] = []
        longest = graph.size + 1  # no simple path through transit nodes is longer

        def walk(node: int, remaining: int) -> bool:
            # node is a transit node other than the target, remaining >= 1.
            if remaining == 1:
                link = into_target.get(node)
                if link is None:
                    return False
                found.append((*links, link))
                return len(found) >= k
            on_path[node] = True
            if remaining == 2 and len(last_hops) <= len(adjacency[node]):
                # Only the target's transit neighbours are one hop from it.
                for neighbour, last in last_hops:
                    if on_path[neighbour]:
                        continue
                    link = link_between.get((node, neighbour))
                    if link is None:
                        continue
                    found.append((*links, link, last))
                    if len(found) >= k:
                        on_path[node] = False
                        return True
                on_path[node] = False
                return False
            for neighbour, link in adjacency[node]:
                if on_path[neighbour] or distance[neighbour] > remaining - 1 or neighbour == end:
                    continue
                links.append(link)
                done = walk(neighbour, remaining - 1)
                links.pop()
                if done:
                    on_path[node] = False
                    return True
            on_path[node] = False
            return False

        budget = distance[start]
        while len(found) < k and budget <= longest:
            if walk(start, budget):
                break
            budget += 1
        return tuple(found)


class _TransitGraph:
    """The links between transit nodes (degree above one), renumbered ``0..size-1``."""

    def __init__(self, network: Network, transit: np.ndarray):
        members = np.flatnonzero(transit)
        self.size = int(members.size)
        compact = np.full(network.n_nodes, -1, dtype=np.int64)
        compact[members] = np.arange(self.size)
        self.compact: list[int] = compact.tolist()
        ends = network.link_ends
        both = transit[ends[:, 0]] & transit[ends[:, 1]]
        links = np.flatnonzero(both)
        heads, tails = compact[ends[links, 0]], compact[ends[links, 1]]
        if not network.directed:  # each way
            heads, tails, links = (np.concatenate([heads, tails]), np.concatenate([tails, heads]),
                                   np.concatenate([links, links]))
        order = np.lexsort((links, tails, heads))  # by node, then neighbour, then link
        heads, tails, links = heads[order], tails[order], links[order]
        starts = np.searchsorted(heads, np.arange(self.size + 1))
        pairs = list(zip(tails.tolist(), links.tolist()))
        self.adjacency: list[list[tuple[int, int]]] = [
            pairs[a:b] for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]
        self.link_between: dict[tuple[int, int], int] = dict(zip(zip(heads.tolist(), tails.tolist()),
                                                                 links.tolist()))
        # incoming neighbours, as compressed rows
        by_tail = np.argsort(tails, kind="stable")
        self.indices = heads[by_tail]
        self.indptr = np.searchsorted(tails[by_tail], np.arange(self.size + 1))

    def distances(self, target: int, incoming: Sequence[Sequence[tuple[int, int]]]) -> np.ndarray:
        """Hops from each transit node to ``target``, a breadth-first search by whole levels."""
        distance = np.full(self.size, _UNREACHED, dtype=np.int32)
        end = self.compact[target]
        if end >= 0:
            distance[end] = 0
        first = sorted({self.compact[node] for node, _ in incoming[target]} - {-1, end})
        frontier = np.asarray(first, dtype=np.int64)
        level = 1
        indptr, indices = self.indptr, self.indices
        unreached = distance == _UNREACHED
        unreached[frontier] = False
        while frontier.size:
            distance[frontier] = level
            level += 1
            starts = indptr[frontier]
            counts = indptr[frontier + 1] - starts
            total = int(counts.sum())
            if total == 0:
                break
            offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
            reached = np.zeros(self.size, dtype=bool)
            reached[indices[offsets + np.arange(total)]] = True
            reached &= unreached
            frontier = np.flatnonzero(reached)
            unreached[frontier] = False
        return distance
