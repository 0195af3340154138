"""An upper bound on the pool requests any allocator accepts on one request sequence (docs/bounds.md).

The model keeps what every policy must respect and relaxes the rest: which requests are accepted (``x``), how
long each waits before its offer (``u``, only while the data centre's aggregate free resources cannot cover it,
and never past its offer were every request accepted), which accepted ones are still held at each offer (``y``),
and at every offer the held requests' least use of resources, of the servers' access-link channels and of the
servers that carry them. HiGHS (scipy's ``milp``) maximises the measured requests accepted; the bound is the
solver's dual bound, rounded down to a whole count."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from dcbench import Network, RequestSequence, SpecError

EPS = 1e-9
MODEL = "pool 5"  # the model's version, in every bound's key: a change to the model computes every bound again
NODE_LIMIT = 20_000  # HiGHS branch-and-bound nodes: a deterministic cut-off, unlike a time limit


@dataclass(frozen=True)
class PoolInstance:
    """What the bound reads of one network and request sequence.

    Attributes:
        demand: (requests, resources) demands.
        holding: Holding times.
        gaps: Time from the previous arrival to each arrival.
        time_step: The clock's step while a request waits.
        wait: Whether a request waits until the aggregate free resources cover it.
        within: Whether requests due at an offer have left when it is checked (``departures=within``).
        measured: Which requests count (the warm-up's do not).
        skipped: Which are never offered (more than the whole data centre).
        usage: (requests, K) least use of each aggregate capacity while held (resources, then channels, then
            servers carrying each channel class).
        capacity: (K,) the aggregate capacities."""

    demand: np.ndarray
    holding: np.ndarray
    gaps: np.ndarray
    time_step: float
    wait: bool
    within: bool
    measured: np.ndarray
    skipped: np.ndarray
    usage: np.ndarray
    capacity: np.ndarray


def min_pairs(rule: str, cpu_servers: int, servers: int) -> tuple[int, int, int]:
    """The fewest server pairs a pool request needs, and how many of its servers carry how many channels.

    Args:
        rule: The connectivity rule: "all", "cpu" or "reference".
        cpu_servers: The fewest servers that can give its CPU.
        servers: The fewest servers that can give its every resource.
    Returns:
        ``(pairs, carriers, channels)``: at least ``pairs`` pairs, and at least ``carriers`` of its servers
        with at least ``channels`` paths each on their access links."""
    if rule == "all":
        k = max(cpu_servers, servers)
        return k * (k - 1) // 2, k, max(k - 1, 0)
    best = None
    for c in range(cpu_servers, max(cpu_servers, servers) + 1):
        others = max(0, servers - c)  # servers that give no CPU
        extra = (others >= 1) if rule == "reference" else others  # reference: only the first one pairs
        pairs = c * (c - 1) // 2 + c * extra
        best = pairs if best is None else min(best, pairs)
    if cpu_servers == 0:
        return best, 0, 0
    return best, cpu_servers, cpu_servers - 1 + (1 if servers > cpu_servers else 0)


def access_links(network: Network) -> np.ndarray:
    """Each server's one access link.

    Args:
        network: The compiled topology.
    Returns:
        (servers,) link indices.
    Raises:
        SpecError: A server has other than one link (the bound assumes every path leaves a server by its link)."""
    ends = network.link_ends
    link_of = np.full(network.n_servers, -1)
    for link, (a, b) in enumerate(ends.tolist()):
        for end in (a, b):
            if end < network.n_servers:
                if link_of[end] != -1:
                    raise SpecError("the pool bound needs every server on a single link; server "
                                    f"{network.nodes[end]!r} has more")
                link_of[end] = link
    if (link_of < 0).any():
        raise SpecError("the pool bound needs every server on a single link; some server has none")
    return link_of


def pool_instance(network: Network, sequence: RequestSequence) -> PoolInstance:
    """Read what the bound needs from a pool request sequence on its network.

    Args:
        network: The compiled topology.
        sequence: The pool requests, as the workload drew them.
    Returns:
        The instance.
    Raises:
        SpecError: Job requests, or a network the bound does not cover (`access_links`)."""
    if sequence.kind != "pool":
        raise SpecError(f"no bound for {sequence.kind} requests yet, only for pool requests (docs/bounds.md)")
    demand = np.asarray(sequence.demand, dtype=np.float64)
    cpu = network.resources.index("cpu") if "cpu" in network.resources else 0
    largest = network.server_capacity.max(axis=0)
    smallest_cpu = network.server_capacity[:, cpu].min()
    total = network.server_capacity.sum(axis=0)
    channels = network.link_capacity[access_links(network)]
    max_channels = int(channels.max())
    n = len(demand)
    classes = range(1, max_channels + 1)  # servers carrying at least q channels for one request, q = 1..
    # q over half a link: such requests share no server, nor with one carrying over the rest of the link
    halves = [q for q in classes if 2 * q > max_channels]
    usage = np.zeros((n, len(network.resources) + 1 + max_channels + len(halves)))
    usage[:, :len(network.resources)] = demand
    for i, d in enumerate(demand):
        cpu_servers = math.ceil(d[cpu] / largest[cpu] - EPS) if d[cpu] > 0 else 0
        servers = max(math.ceil(x / c - EPS) for x, c in zip(d, largest))
        pairs, carriers, per = min_pairs(sequence.connectivity, cpu_servers, servers)
        usage[i, len(network.resources)] = 2 * pairs  # a pair's path leaves by both its servers' links
        for q in classes:
            if per >= q:
                usage[i, len(network.resources) + q] = carriers
        for at, q in enumerate(halves):
            column = len(network.resources) + 1 + max_channels + at
            if per >= q:  # its carriers are its own, whatever CPU they leave (at least the smallest server's)
                usage[i, column] = carriers * smallest_cpu
            elif per > max_channels - q:  # its CPU lies on servers none of those carries
                usage[i, column] = d[cpu]
    capacity = np.concatenate([total, [channels.sum()],
                               [sum(c // q for c in channels.tolist()) for q in classes],
                               [total[cpu]] * len(halves)])
    measured = (np.ones(n, dtype=bool) if sequence.measured is None
                else np.asarray(sequence.measured, dtype=bool))
    return PoolInstance(demand=demand, holding=np.asarray(sequence.holding, dtype=np.float64),
                        gaps=np.asarray(sequence.gaps, dtype=np.float64), time_step=float(sequence.time_step),
                        wait=bool(sequence.wait_until_fits), within=bool(sequence.departures_within),
                        measured=measured, skipped=(demand > total + EPS).any(axis=1),
                        usage=usage, capacity=capacity)


@dataclass(frozen=True)
class Bound:
    """What the solver proved.

    Attributes:
        accepted: At most this many measured requests are accepted.
        offered: The measured requests offered.
        status: "optimal", or the solver's stop ("node limit": its dual bound, still an upper bound).
        relaxation: Which model: "milp" or "lp"."""

    accepted: int
    offered: int
    status: str
    relaxation: str

    @property
    def ratio(self) -> float:
        """The bound on the acceptance ratio."""
        return self.accepted / self.offered if self.offered else float("nan")


def pool_bound(instance: PoolInstance, relaxation: str = "milp", node_limit: int = NODE_LIMIT) -> Bound:
    """Solve the model of `PoolInstance`.

    Args:
        instance: The instance.
        relaxation: "milp" (the integer model) or "lp" (its linear relaxation: faster, looser).
        node_limit: Branch-and-bound nodes before HiGHS stops with its dual bound.
    Returns:
        The bound."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    model = model_of(instance)
    integrality = model.integrality if relaxation == "milp" else np.zeros_like(model.integrality)
    rows, cols, vals, lower, upper = model.constraints()
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lower), model.n)).tocsr()
    result = milp(-model.objective, integrality=integrality, bounds=Bounds(model.lower, model.upper),
                  constraints=LinearConstraint(matrix, lower, upper),
                  options={"node_limit": node_limit, "presolve": True})
    offered = int((instance.measured & ~instance.skipped).sum())
    if relaxation == "lp":
        best = -result.fun
        status = "optimal"
    elif result.status == 0:
        best, status = -result.fun, "optimal"
    else:
        best, status = -getattr(result, "mip_dual_bound", np.nan), "node limit"
        if not np.isfinite(best):
            return pool_bound(instance, "lp")
    return Bound(accepted=min(offered, int(math.floor(best + 1e-6))), offered=offered, status=status,
                 relaxation=relaxation)


def latest_waits(instance: PoolInstance) -> np.ndarray:
    """The steps waited up to each offer, in all, were every request offered accepted: no allocator's offer of a
    request is later (docs/bounds.md, "Waits").

    Args:
        instance: The instance.
    Returns:
        (requests,) whole steps, zeros without waits."""
    n, r = instance.demand.shape
    waited = np.zeros(n)
    if not instance.wait:
        return waited
    total, step = instance.capacity[:r], instance.time_step
    arrival = np.cumsum(instance.gaps)  # each offer's clock had no request waited
    # the engine's test less the most its running sums can be off: rounding never makes these offers earlier
    tolerance = 1e-9 - 4 * n * np.finfo(float).eps * total
    departures: list[tuple[float, int]] = []
    load, clock = np.zeros(r), 0.0
    for i in range(n):
        clock += float(instance.gaps[i])
        load = _depart_before(departures, clock, load, instance.demand)
        if not instance.skipped[i]:
            while (instance.demand[i] > total - load + tolerance).any() and departures:
                clock += step
                load = _depart_before(departures, clock, load, instance.demand)
            heapq.heappush(departures, (clock + float(instance.holding[i]), i))
            load = load + instance.demand[i]
        waited[i] = round((clock - arrival[i]) / step)
    return waited


def _depart_before(departures: list[tuple[float, int]], clock: float, load: np.ndarray,
                   demand: np.ndarray) -> np.ndarray:
    # the load left once the requests due before ``clock`` have gone (the engine's departures: held at their time)
    while departures and departures[0][0] < clock:
        load = load - demand[heapq.heappop(departures)[1]]
    return load


def model_of(instance: PoolInstance) -> "_Model | _NoWaitModel":
    """The model `pool_bound` solves: without waits, the compact one (`_NoWaitModel`), with the same optimum."""
    return _Model(instance) if instance.wait else _NoWaitModel(instance)


def held_matrix(instance: PoolInstance) -> np.ndarray:
    """Without waits, which requests are held at each offer: ``[j, i]`` when j (accepted) is still held at i's
    offer, j < i, as `_Model` decides it with no step waited; and ``[i, i]`` for every request offered.

    Args:
        instance: A no-wait instance.
    Returns:
        (requests, requests) booleans."""
    n = len(instance.demand)
    arrival = np.cumsum(instance.gaps)
    left = (instance.holding[:, None] - (arrival[None, :] - arrival[:, None])) / instance.time_step
    most = np.ceil(left - EPS) - 1 if instance.within else np.floor(left + EPS)
    offered = ~instance.skipped
    held = (most >= 0) & np.triu(np.ones((n, n), dtype=bool), 1) & offered[:, None] & offered[None, :]
    held[np.arange(n), np.arange(n)] = offered
    return held


class _NoWaitModel:
    """Without waits every offer is at its arrival, so the held sets are known: a variable per request (x_i), and at
    each offer, per capacity, the accepted requests held then and the offered one fit. An offer's rows are implied
    by a later offer's that holds all it holds (usage is never negative), so only the others are kept."""

    def __init__(self, instance: PoolInstance):
        self.instance = inst = instance
        n = self.n_requests = self.n = len(inst.demand)
        self.held = held_matrix(inst)
        self.pairs = list(zip(*np.nonzero(np.triu(self.held, 1))))  # (j, i): j held at i's offer
        self.lower = np.zeros(n)
        self.upper = (~inst.skipped).astype(float)
        self.integrality = np.ones(n)
        self.objective = (inst.measured & ~inst.skipped).astype(float)

    def constraints(self):
        inst, held = self.instance, self.held
        offers = np.flatnonzero(~inst.skipped)
        kept = [i for i, later in zip(offers, list(offers[1:]) + [None])
                if later is None or (held[:, i] & ~held[:, later]).any()]  # someone leaves before the next offer
        rows, cols, vals, lower, upper = [], [], [], [], []
        columns = np.flatnonzero(inst.usage.any(axis=0))
        for i in kept:
            members = np.flatnonzero(held[:, i])
            use = inst.usage[members][:, columns]
            for at, k in enumerate(columns):
                nonzero = use[:, at] > 0
                if use[nonzero, at].sum() <= inst.capacity[k] + EPS:
                    continue
                rows.extend([len(lower)] * int(nonzero.sum()))
                cols.extend(members[nonzero].tolist())
                vals.extend(use[nonzero, at].tolist())
                lower.append(-np.inf)
                upper.append(inst.capacity[k])
        return (np.asarray(rows, dtype=int), np.asarray(cols, dtype=int), np.asarray(vals, dtype=float),
                np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))


class _Model:
    # Variables: x_i (accepted), u_i (steps waited up to i's offer, in all), w_ri (i waited for resource r), y_ji (j
    # held at i's offer), then z_ji (j held at i's last check before its offer, a step earlier, if it waited).
    def __init__(self, instance: PoolInstance):
        self.instance = inst = instance
        n = len(inst.demand)
        self.n_requests = n
        arrival = np.cumsum(inst.gaps)
        self.pairs: list[tuple[int, int, int]] = []  # (j, i, the most steps waited with j still held at i's offer)
        self.checks: list[tuple[int, int, int]] = []  # (j, i, the same with j held a step before i's offer)
        self.checked_if_accepted: list[tuple[int, int]] = []  # (j, i): held then if accepted, however long i waits
        self.latest = latest_waits(inst)
        step = inst.time_step
        for j in range(n):
            if inst.skipped[j]:
                continue
            for i in range(j + 1, n):
                left = (inst.holding[j] - (arrival[i] - arrival[j])) / step
                # held while its departure is not before the clock (within: not at the clock either)
                most = math.ceil(left - EPS) - 1 if inst.within else math.floor(left + EPS)
                checked = math.floor(left + EPS) + 1  # the wait's check: departures before the clock only
                if checked < 0:
                    break
                if not inst.skipped[i]:
                    if most >= 0:
                        self.pairs.append((j, i, most))
                    if inst.wait and self.latest[i] > checked:
                        self.checks.append((j, i, checked))
                    elif inst.wait:
                        self.checked_if_accepted.append((j, i))
        r = inst.demand.shape[1]
        self.n_resources = r
        self.n = (2 + r) * n + len(self.pairs) + len(self.checks)
        self.lower = np.zeros(self.n)
        self.upper = np.ones(self.n)
        self.integrality = np.ones(self.n)
        longest = float(inst.holding.max()) if n else 0.0
        self.steps = math.ceil(longest / step) + 1 if inst.wait else 0  # no wait lasts longer (steps)
        self.upper[n:2 * n] = self.latest  # no allocator waits longer
        offered = ~inst.skipped
        self.upper[:n] *= offered
        self.upper[2 * n:(2 + r) * n] = 1.0 if inst.wait else 0.0
        if inst.wait:
            self.upper[2 * n:(2 + r) * n] *= np.tile(offered, r)
        self.objective = np.zeros(self.n)
        self.objective[:n] = (inst.measured & ~inst.skipped).astype(float)

    def constraints(self):
        inst, n = self.instance, self.n_requests
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        lower: list[float] = []
        upper: list[float] = []

        def row(entries, lo, hi):
            r = len(lower)
            for c, v in entries:
                rows.append(r)
                cols.append(c)
                vals.append(v)
            lower.append(lo)
            upper.append(hi)

        x, u, w = 0, n, 2 * n  # w + r * n + i: request i waited for resource r
        first_held = (2 + self.n_resources) * n
        held_at: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # (j, variable) held at i's offer
        for k, (j, i, slack) in enumerate(self.pairs):
            y = first_held + k
            held_at[i].append((j, y))
            row([(y, 1), (x + j, -1)], -np.inf, 0)  # held only if accepted
            if self.latest[i] <= slack:  # no allocator waits long enough to see j leave: held if accepted
                row([(y, 1), (x + j, -1)], 0, 0)
                continue
            waits = [(u + i, 1), (u + j, -1)]  # the steps waited after j's offer up to i's, at most latest[i]
            big = self.latest[i] - slack
            row(waits + [(y, big)], -np.inf, slack + big)  # held: waited at most `slack` steps in all
            row(waits + [(x + j, -(slack + 1)), (y, slack + 1)], 0, np.inf)  # accepted, not held: waited more
        first_checked = first_held + len(self.pairs)
        checked_at: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # (j, variable) held at i's last check
        for j, i in self.checked_if_accepted:
            checked_at[i].append((j, x + j))
        for k, (j, i, slack) in enumerate(self.checks):
            z = first_checked + k
            checked_at[i].append((j, z))
            row([(z, 1), (x + j, -1)], -np.inf, 0)  # held only if accepted, and only if i waited at most `slack`
            big = self.latest[i] - slack  # steps more than j (the wait rows need no more of z)
            row([(u + i, 1), (u + j, -1), (z, big)], -np.inf, slack + big)
        usage, capacity = inst.usage, inst.capacity
        for i in range(n):
            if inst.skipped[i]:
                if inst.wait and i > 0:  # skipped: offered never, waits never
                    row([(u + i, 1), (u + i - 1, -1)], 0, 0)
                continue
            for k in np.flatnonzero(usage.any(axis=0)):
                entries = [(y, usage[j, k]) for j, y in held_at[i] if usage[j, k] > 0]
                if usage[i, k] > 0:
                    entries.append((x + i, usage[i, k]))
                if entries and sum(v for _, v in entries) > capacity[k] + EPS:
                    row(entries, -np.inf, capacity[k])
            if not inst.wait or i == 0:
                continue
            n_res = self.n_resources
            row([(u + i, 1), (u + i - 1, -1)], 0, np.inf)
            row([(u + i, 1), (u + i - 1, -1)] + [(w + r * n + i, -self.steps) for r in range(n_res)], -np.inf, 0)
            # it waits only while some resource's load leaves too little, as the engine found at its last check, a
            # step before its offer (the load only falls while it waits); the load is the amounts granted, each
            # request's within the checker's 1e-6 of its demand
            for r in range(n_res):
                entries = [(z, inst.demand[j, r]) for j, z in checked_at[i] if inst.demand[j, r] > 0]
                room = capacity[r] - inst.demand[i, r] - 1e-6 * n
                row(entries + [(w + r * n + i, -room)], 0, np.inf)
        return (np.asarray(rows), np.asarray(cols), np.asarray(vals, dtype=float), np.asarray(lower),
                np.asarray(upper))
