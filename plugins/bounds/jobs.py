"""An upper bound on the jobs any allocator accepts on one job sequence of the optical fabric (docs/bounds.md).

Jobs never wait, so the held set at every offer is known once the accepted set is: the model chooses which jobs
are accepted (``x``) and, at every offer, keeps the held jobs' use of each aggregate capacity within it. The
capacities are each resource's total; per-server packing cuts (a VM never splits across servers, so the VMs held
are a sum of one packing per server); and the fabric's total circuit capacity, used only by jobs whose VMs
provably cannot share one rack. The load of each capacity is carried from offer to offer (what arrives, less what
left), so the model grows with the jobs, not with how many are held at once."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from dcbench import Network, RequestSequence, SpecError
from dcbench.plugins.bounds.pool import NODE_LIMIT, Bound

MODEL = "jobs 1"  # the model's version, in every job bound's key
TOLERANCE = 1e-9  # what the engine allows a server over its capacity
MARGIN = 1e-6  # time: the model lets a job leave this much before the engine does, so it never holds one longer
MAX_PACKINGS = 100_000  # enumerate one server's packings of the VM types only up to this many
THRESHOLDS = 8  # VMs over 1/(k+1) of a resource number at most k per server, for k = 1..THRESHOLDS


@dataclass(frozen=True)
class JobInstance:
    """What the bound reads of one network and job sequence.

    Attributes:
        arrival: Arrival times.
        departure: Departure times if accepted.
        measured: Which jobs count (the warm-up's do not).
        usage: (jobs, K) each job's use of each aggregate capacity while held.
        capacity: (K,) the aggregate capacities.
        names: (K,) what each capacity is, for messages and tests."""

    arrival: np.ndarray
    departure: np.ndarray
    measured: np.ndarray
    usage: np.ndarray
    capacity: np.ndarray
    names: tuple[str, ...]


def packings(types: np.ndarray, server: np.ndarray) -> np.ndarray | None:
    """Every count vector of VM types that fits on one server, within the engine's tolerance.

    Args:
        types: (T, resources) VM demands.
        server: (resources,) the server's capacity.
    Returns:
        (P, T) counts, the empty packing among them; None where there would be over `MAX_PACKINGS`."""
    most = [int(min((c + TOLERANCE) // d for c, d in zip(server, t) if d > 0)) if (t > 0).any() else 0
            for t in types]
    if math.prod(m + 1 for m in most) > MAX_PACKINGS:
        return None
    grid = np.array(list(itertools.product(*(range(m + 1) for m in most))), dtype=np.float64).reshape(-1, len(types))
    return grid[(grid @ types <= server + TOLERANCE).all(axis=1)]


def cut_weights(types: np.ndarray, servers: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Weights ``a`` over VM types for the packing cuts ``a · n <= b`` (`cut_bounds`): "VMs over 1/(k+1) of a
    resource", and, where one server's packings can be listed (few VM types), the facets of their hull on the
    largest server. Any non-negative weights give a valid cut; these are the ones that bind.

    Args:
        types: (T, resources) VM demands.
        servers: (servers, resources) capacities.
    Returns:
        ``(a, names)``: (cuts, T) weights and a name each."""
    weights, names = [], []
    for r in range(types.shape[1]):
        largest = servers[:, r].max()
        for k in range(1, THRESHOLDS + 1):
            over = types[:, r] > largest / (k + 1) + TOLERANCE
            if over.any() and not any(np.array_equal(over, w > 0) for w in weights):
                weights.append(over.astype(np.float64))
                names.append(f"{r}: VMs over 1/{k + 1}")
    largest = servers[int(np.argmax(servers.sum(axis=1)))]
    listed = packings(types, largest) if (types > 0).any(axis=1).all() else None  # (no demand: fits any number)
    for facet in _facets(listed) if listed is not None else []:
        weights.append(facet)
        names.append("packing facet")
    return np.asarray(weights).reshape(-1, len(types)), names


def cut_bounds(types: np.ndarray, servers: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The right-hand side of each cut ``a · n <= b`` for the VMs ``n`` held on ``servers`` together: the sum over
    servers of the most ``a · p`` of a packing ``p`` that fits there, so that it holds whatever ``a`` (>= 0) is.

    Args:
        types: (T, resources) VM demands.
        servers: (servers, resources) capacities.
        a: (cuts, T) weights.
    Returns:
        (cuts,) bounds."""
    rows, count = np.unique(servers, axis=0, return_counts=True)
    b = np.zeros(len(a))
    for row, times in zip(rows, count):
        listed = packings(types, row)
        if listed is None:  # too many to list: count-weighted cuts only (`cut_weights` keeps no facet then)
            b += times * np.array([_most_over(types, row, w) for w in a])
        else:
            b += times * (listed @ a.T).max(axis=0)
    return b


def _most_over(types: np.ndarray, server: np.ndarray, weight: np.ndarray) -> float:
    """At least ``weight · p`` for every packing ``p`` on ``server`` (weights at most 1): the most VMs of the types
    ``weight`` marks that fit there, no more than its room on any resource over the smallest of them."""
    marked = types[weight > 0]
    room = [(c + TOLERANCE) // marked[:, r].min() for r, c in enumerate(server) if marked[:, r].min() > 0]
    return float(min(room)) if room else math.inf


def _facets(points: np.ndarray) -> list[np.ndarray]:
    """The non-negative parts of the outward normals of the hull of ``points`` (one server's packings): cuts no
    aggregate resource gives. Empty where the hull is flat (a VM type fits nowhere) or qhull fails."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError):
        return []
    normals = []
    for normal in np.clip(hull.equations[:, :-1], 0, None):
        if normal.max() <= 1e-9:
            continue
        normal = np.round(normal / normal.max(), 9)
        if not any(np.array_equal(normal, seen) for seen in normals):
            normals.append(normal)
    return normals


def least_crossing(flows: np.ndarray, n_vms: int) -> float:
    """The least traffic between the parts of a job split in two: the minimum cut of its flows (Gbps).

    Args:
        flows: (flows, 3) source VM, target VM, Gbps.
        n_vms: Its VMs.
    Returns:
        The cut's Gbps (0 for a job whose flows leave some VM alone)."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(n_vms))
    for source, target, gbps in flows.tolist():
        if graph.has_edge(int(source), int(target)):
            graph[int(source)][int(target)]["weight"] += gbps
        else:
            graph.add_edge(int(source), int(target), weight=gbps)
    if n_vms < 2 or not nx.is_connected(graph):
        return 0.0
    return float(nx.stoer_wagner(graph)[0])


def job_instance(network: Network, sequence: RequestSequence) -> JobInstance:
    """Read what the bound needs from a job sequence on its network.

    Args:
        network: The compiled topology, with rack switches.
        sequence: The jobs, as the workload drew them.
    Returns:
        The instance.
    Raises:
        SpecError: Pool requests, jobs that wait, or a network without racks."""
    if sequence.kind != "job":
        raise SpecError(f"the job bound reads job requests, not {sequence.kind} ones")
    if sequence.wait_until_fits:
        raise SpecError("no bound for jobs that wait yet (docs/bounds.md)")
    if network.rack_node is None:
        raise SpecError("the job bound needs rack switches (an ocs topology)")
    types, type_of = np.unique(np.asarray(sequence.vm_demand, dtype=np.float64), axis=0, return_inverse=True)
    type_of = type_of.reshape(-1)
    a, names = cut_weights(types, network.server_capacity)
    b = cut_bounds(types, network.server_capacity, a)
    starts = np.asarray(sequence.vm_offsets[:-1])
    counts = np.add.reduceat(a.T[type_of], starts, axis=0) if len(type_of) else np.zeros((len(starts), len(a)))
    demand = np.asarray(sequence.demand, dtype=np.float64)
    total = network.server_capacity.sum(axis=0) + TOLERANCE * network.n_servers
    crossing = _crossing(network, sequence, types, counts, a)
    usage = np.column_stack([demand, counts, crossing])
    capacity = np.concatenate([total, b, [_fabric_capacity(network)]])
    arrival = np.cumsum(np.asarray(sequence.gaps, dtype=np.float64))
    measured = (np.ones(len(demand), dtype=bool) if sequence.measured is None
                else np.asarray(sequence.measured, dtype=bool))
    return JobInstance(arrival=arrival, departure=arrival + np.asarray(sequence.holding, dtype=np.float64),
                       measured=measured, usage=usage, capacity=capacity,
                       names=(*network.resources, *names, "circuits"))


def _crossing(network: Network, sequence: RequestSequence, types: np.ndarray, counts: np.ndarray,
              a: np.ndarray) -> np.ndarray:
    """Each job's least inter-rack traffic: its flows' minimum cut where its VMs fit no single rack (by the rack's
    resource totals or a packing cut), else 0."""
    demand = np.asarray(sequence.demand, dtype=np.float64)
    fits_a_rack = np.zeros(len(demand), dtype=bool)
    for rack in np.unique(network.racks):
        servers = network.server_capacity[network.racks == rack]
        room = servers.sum(axis=0) + TOLERANCE * len(servers)
        fits_a_rack |= (demand <= room).all(axis=1) & (counts <= cut_bounds(types, servers, a) + 1e-9).all(axis=1)
    crossing = np.zeros(len(demand))
    for i in np.flatnonzero(~fits_a_rack):
        crossing[i] = least_crossing(sequence.job_flows(i), len(sequence.vms(i)))
    return crossing


def _fabric_capacity(network: Network) -> float:
    """All circuits' Gbps together: what re-pointing circuits keeps, and what a fixed all-to-all fabric has."""
    total = float(network.link_capacity.sum())
    circuits = network.circuits
    if circuits is not None:
        total = max(total, network.n_racks * circuits.ports * circuits.port_gbps)
    return total


def job_bound(instance: JobInstance, relaxation: str = "lp", node_limit: int = NODE_LIMIT) -> Bound:
    """The most measured jobs accepted with every capacity's load within it at every offer.

    Args:
        instance: The instance.
        relaxation: "milp" (the integer model) or "lp" (its linear relaxation: HiGHS's interior point, ten times
            faster here than its simplex on the long chains of load rows).
        node_limit: Branch-and-bound nodes before HiGHS stops with its dual bound.
    Returns:
        The bound.
    Raises:
        RuntimeError: HiGHS solved neither the model nor, for the MILP, found a dual bound."""
    from scipy.optimize import Bounds, LinearConstraint, linprog, milp

    n = len(instance.arrival)
    offered = int(instance.measured.sum())
    matrix, lower, upper = load_model(instance)
    if matrix.shape[0] == 0:  # no capacity can ever bind: every job fits
        return Bound(accepted=offered, offered=offered, status="optimal", relaxation=relaxation)
    objective = np.zeros(matrix.shape[1])
    objective[:n] = instance.measured
    if relaxation == "lp":
        result = linprog(-objective, A_eq=matrix, b_eq=np.zeros(matrix.shape[0]),
                         bounds=np.column_stack([lower, upper]), method="highs-ipm")
        best = -result.fun if result.status == 0 else np.nan
    else:
        integrality = np.zeros(matrix.shape[1])
        integrality[:n] = 1
        result = milp(-objective, integrality=integrality, bounds=Bounds(lower, upper),
                      constraints=LinearConstraint(matrix, 0.0, 0.0), options={"node_limit": node_limit})
        best = -result.fun if result.status == 0 else -getattr(result, "mip_dual_bound", np.nan)
    if not np.isfinite(best):
        raise RuntimeError(f"HiGHS did not solve the job bound's {relaxation}: {result.message}")
    return Bound(accepted=min(offered, int(math.floor(best + 1e-6))), offered=offered,
                 status="optimal" if result.status == 0 else "node limit", relaxation=relaxation)


def load_model(instance: JobInstance):
    """The model as ``matrix @ v == 0`` with ``lower <= v <= upper``: ``v`` is x (jobs), then the load of each
    capacity that can bind after each offer; row (i, k) says load[i, k] = load[i − 1, k] + what i brings − what
    left before i's offer.

    Returns:
        ``(matrix, lower, upper)``: a sparse CSR matrix and the variables' bounds."""
    from scipy.sparse import coo_matrix

    n = len(instance.arrival)
    # j is held at offer i (j < i) while i arrives no later than MARGIN before j departs
    leaves = np.maximum(np.arange(n) + 1, np.searchsorted(instance.arrival, instance.departure - MARGIN, "right"))
    ever = _most_held(instance.usage, leaves)
    binds = np.flatnonzero(ever > instance.capacity + 1e-9)
    rows, cols, vals = [], [], []
    for at, k in enumerate(binds):
        load = n + at * n + np.arange(n)  # load[i, k]'s variable
        row = at * n + np.arange(n)
        use = instance.usage[:, k]
        rows += [row, row[1:], row, row[leaves[leaves < n]]]
        cols += [load, load[:-1], np.arange(n), np.flatnonzero(leaves < n)]
        vals += [np.ones(n), -np.ones(n - 1), -use, use[leaves < n]]
    size = n + len(binds) * n
    if not len(binds):
        return coo_matrix((0, size)).tocsr(), np.zeros(size), np.ones(size)
    matrix = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(len(binds) * n, size)).tocsr()
    lower = np.zeros(size)
    upper = np.concatenate([np.ones(n), np.repeat(instance.capacity[binds], n)])
    return matrix, lower, upper


def _most_held(usage: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """Per capacity, the most load at any offer were every job accepted."""
    n = len(usage)
    change = usage.copy()
    gone = leaves < n
    np.subtract.at(change, leaves[gone], usage[gone])
    return np.cumsum(change, axis=0).max(axis=0) if n else np.zeros(usage.shape[1])
