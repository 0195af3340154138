"""`BatchedPool`: the pool episodes of a vector env stepped as one, with array operations across the batch.

Each episode is the single env's on the same numbers: where capacities and demands are whole numbers, sums are exact
in any order (`unsupported` says where the batch cannot go; tests/core/envs/test_vector_env.py compares every step)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dcbench.envs.features import _squash, write_pool_observation
from dcbench.envs.rewards import FAILURE_REWARD, SUCCESS_REWARD, episode_ratios
from dcbench.errors import SpecError
from dcbench.model.allocation import CHANNELS_PER_PAIR
from dcbench.model.requests import CONNECTIVITY_RULES, RequestSequence
from dcbench.running.runner import draw_requests

ACCEPTED, REJECTED, SKIPPED = 1, 2, 3  # a request's outcome (0: not yet settled)
PATH_TABLE_LIMIT = 250_000  # rack pairs × paths: the most the path table holds
TABLE_LIMIT = 4_000_000  # entries of the table of squashed free capacities


def _whole(values: np.ndarray) -> bool:
    values = np.asarray(values, dtype=np.float64)
    return bool(np.isfinite(values).all() and (values == np.round(values)).all() and (np.abs(values) < 2**52).all())


def unsupported(env: Any) -> str | None:
    """Why `BatchedPool` cannot step ``env``'s episodes, or None where it can."""
    network = env.network
    if env.kind != "pool":
        return "a job's VMs are placed one episode at a time"
    if env.hints:
        return "hint features are computed one episode at a time"
    if (np.asarray(network.server_link) < 0).any():
        return "a server is not attached by a single link"
    if not (_whole(network.server_capacity) and _whole(network.link_capacity)):
        return "capacities that are not whole numbers"
    racks = len(np.unique(network.server_attachment))
    if racks * racks * network.paths.k > PATH_TABLE_LIMIT:
        return "too many racks for the batch's path table"
    return _sequence_problem(draw_requests(env.plan, env.requests, np.random.default_rng(0))) or None


def _sequence_problem(sequence: RequestSequence) -> str:
    if sequence.kind != "pool" or sequence.allowed_servers != "needed" or sequence.departures_within:
        return "the reference code's options (allowed=free, departures=within)"
    if not _whole(sequence.demand):
        return "demands that are not whole numbers"
    return ""


def _path_table(network: Any, attachments: np.ndarray) -> np.ndarray:
    """The links between the servers' attachments on each candidate path (racks × racks × k × links), padded with
    ``n_links`` (a link that is always free) and, where a pair has fewer than k paths, ``n_links + 1`` (never free)."""
    catalogue, n, free, blocked = network.paths, len(attachments), network.n_links, network.n_links + 1
    found = {(a, b): catalogue.between_nodes(int(x), int(y))
             for a, x in enumerate(attachments) for b, y in enumerate(attachments) if a != b}
    longest = max((len(path) for paths in found.values() for path in paths), default=0)
    table = np.full((n, n, catalogue.k, max(longest, 1)), blocked, dtype=np.int64)
    table[np.arange(n), np.arange(n), 0] = free  # within a rack: the two servers' links alone
    for (a, b), paths in found.items():
        for k, path in enumerate(paths):
            table[a, b, k] = free
            table[a, b, k, :len(path)] = path
    return table


def _squashed_free_table(most_free: int, most_needed: int) -> np.ndarray:
    # sigmoid(free / needed − 1) by (needed, free), as `PoolFeatures.observe` computes it (free × 1 / needed)
    needed = np.arange(most_needed + 1, dtype=np.float64)[:, None]
    inverse = np.divide(1.0, needed, out=np.zeros_like(needed), where=needed > 0)
    return _squash(np.arange(most_free + 1, dtype=np.float64) * inverse)


def _across(ufunc: np.ufunc, array: np.ndarray) -> np.ndarray:
    # ``ufunc`` reduced over the last axis, a column at a time: faster than numpy's reduce over a short last axis
    result = array[..., 0].copy()
    for column in range(1, array.shape[-1]):
        ufunc(result, array[..., column], out=result)
    return result


class _Holdings:
    """The requests held, a row each: the env, its departure time, its demand and what it holds of the env's state
    row (``places`` and ``amounts``, padded with amount 0)."""

    def __init__(self, resources: int):
        self.size = 0
        self.env, self.until = np.zeros(64, np.int64), np.full(64, np.inf)
        self.demand = np.zeros((64, resources))
        self.places, self.amounts = np.zeros((64, 1), np.int64), np.zeros((64, 1))

    def add(self, env: np.ndarray, until: np.ndarray, demand: np.ndarray, taken: np.ndarray) -> None:
        row, at = np.nonzero(taken)
        counts = np.bincount(row, minlength=len(env))
        width = int(counts.max(initial=1))
        if self.size + len(env) > len(self.env) or width > self.places.shape[1]:
            self._compact(self.size + len(env), width)
        end = self.size + len(env)
        self.env[self.size:end], self.until[self.size:end], self.demand[self.size:end] = env, until, demand
        self.places[self.size:end], self.amounts[self.size:end] = 0, 0.0
        position = np.arange(len(row)) - (np.cumsum(counts) - counts)[row]
        self.places[self.size + row, position] = at
        self.amounts[self.size + row, position] = taken[row, at]
        self.size = end

    def _compact(self, needed: int, width: int) -> None:
        # keep the live rows, in arrays with room for twice as many as ``needed`` asks and ``width`` places a row
        live = np.flatnonzero(self.until[:self.size] < np.inf)
        rows = max(64, 2 * (len(live) + needed - self.size), len(self.env))
        width = max(width, self.places.shape[1])
        for name in ("env", "until", "demand", "places", "amounts"):
            old = getattr(self, name)
            shape = (rows, width) if name in ("places", "amounts") else (rows, *old.shape[1:])
            new = np.full(shape, np.inf) if name == "until" else np.zeros(shape, old.dtype)
            new[(slice(len(live)), *(slice(n) for n in old.shape[1:]))] = old[live]
            setattr(self, name, new)
        self.size = len(live)

    def due(self, clock: np.ndarray) -> np.ndarray:
        rows = np.flatnonzero(self.until[:self.size] < clock[self.env[:self.size]])
        self.until[rows] = np.inf
        return rows

    def drop(self, env: int) -> None:
        # retire env's rows without releasing them (a new episode)
        self.until[:self.size][self.env[:self.size] == env] = np.inf


class BatchedPool:
    """The pool episodes of ``n`` envs of ``network``, as (N, …) arrays; ``free`` and ``links`` view ``work``'s rows."""

    def __init__(self, network: Any, n: int):
        self.n = n
        self.n_servers, self.n_links = network.n_servers, network.n_links
        resources = len(network.resources)
        self.cpu = network.resources.index("cpu") if "cpu" in network.resources else 0
        self.capacity = network.server_capacity.astype(np.float64)
        self.total = self.capacity.sum(axis=0)
        # two more links, for the path table's padding: one always free, one never
        self.link_capacity = np.append(network.link_capacity.astype(np.float64), [np.inf, 0.0])
        self.head = np.asarray(network.server_link, np.int64)
        attachments, self.rack = np.unique(np.asarray(network.server_attachment), return_inverse=True)
        self.n_racks = len(attachments)
        table = _path_table(network, attachments)
        self.paths = table.reshape(-1, *table.shape[2:])  # by rack pair: first rack × racks + second
        padding = (self.n_links, self.n_links + 1)
        self.path_lists = [[tuple(link for link in path if link not in padding) for path in pair
                            if path[0] != self.n_links + 1] for pair in self.paths.tolist()]
        self.rack_list, self.head_list = self.rack.tolist(), self.head.tolist()  # (for `_route_row`)
        servers = self.n_servers
        self.capacities = np.concatenate((self.capacity.reshape(-1), self.link_capacity))
        self.state = np.repeat(self.capacities[None], n, axis=0)  # free resources (servers × resources), then links
        self.work = self.state.copy()  # the same, as the builder's step leaves them
        split = self.split = self.capacity.size
        self.row_width = self.state.shape[1]
        self.free, self.links = self.work[:, :split].reshape(n, servers, resources), self.work[:, split:]
        self.used = np.zeros((n, resources))  # what the requests held now demand in all
        self.remaining = np.zeros((n, resources))
        self.needed = np.zeros((n, resources), bool)
        self.chosen = np.zeros((n, servers), bool)
        self.allowed = np.zeros((n, servers), bool)
        self.order = np.zeros((n, servers), np.int64)  # the servers chosen for the request, in order
        self.gave_cpu = np.zeros((n, servers), bool)
        self.count = np.zeros(n, np.int64)
        self.clock = np.zeros(n)
        self.index = np.full(n, -1)
        self.next_departure = np.full(n, np.inf)
        self.accepted = np.zeros(n, np.int64)
        self.offered = np.zeros(n, np.int64)
        # sigmoid(x − 1) of the observations, computed once for each whole free capacity and still needed amount
        self.squashed_link_table = _squash(np.arange(int(network.link_capacity.max()) + 1, dtype=np.float64))
        self.squashed_free_table = _squashed_free_table(int(self.capacity.max()), 0)
        self.holdings = _Holdings(resources)
        self.sequence_length = -1

    def start(self, i: int, sequence: RequestSequence) -> tuple[float, bool]:
        """Start env i's episode on ``sequence``: the reward of the requests refused before its first decision, and
        whether it has none."""
        problem = _sequence_problem(sequence)
        if problem:
            raise SpecError(f"the batched vector env cannot step this episode: {problem}; make it with "
                             "batched=False")
        if self.sequence_length < 0:
            self._episode_arrays(len(sequence), len(self.total))
        elif len(sequence) != self.sequence_length:
            raise SpecError(f"the workload drew {len(sequence)} requests for an episode of {self.sequence_length}")
        self.gaps[i], self.holding[i], self.demand[i] = sequence.gaps, sequence.holding, sequence.demand
        self.measured[i] = True if sequence.measured is None else sequence.measured
        self.exceeds[i] = (np.asarray(sequence.demand) > self.total).any(axis=1)
        self.wait[i], self.time_step[i] = sequence.wait_until_fits, sequence.time_step
        self.rule[i] = CONNECTIVITY_RULES.index(sequence.connectivity)
        self.outcome[i] = 0
        most_needed = int(self.demand[i].max(initial=0))
        if most_needed >= self.squashed_free_table.shape[0] and most_needed * self.capacity.max() < TABLE_LIMIT:
            self.squashed_free_table = _squashed_free_table(int(self.capacity.max()), most_needed)
        self.state[i], self.used[i] = self.capacities, 0.0
        self.holdings.drop(i)
        self.clock[i], self.index[i], self.next_departure[i] = 0.0, -1, np.inf
        self.accepted[i] = self.offered[i] = 0
        rewards = np.zeros(self.n)
        done = np.zeros(self.n, bool)
        self._advance(np.array([i]), rewards, done)
        return float(rewards[i]), bool(done[i])

    def _episode_arrays(self, length: int, resources: int) -> None:
        n = self.n
        self.sequence_length = length
        self.gaps, self.holding = np.zeros((n, length)), np.zeros((n, length))
        self.demand = np.zeros((n, length, resources))
        self.measured, self.exceeds = np.zeros((n, length), bool), np.zeros((n, length), bool)
        self.outcome = np.zeros((n, length), np.int8)
        self.wait, self.time_step = np.zeros(n, bool), np.ones(n)
        self.rule = np.zeros(n, np.int64)

    def ratios(self, i: int) -> dict[str, float]:
        """Env i's acceptance ratios at the end of its episode."""
        outcome = self.outcome[i]
        offered = self.measured[i] & (outcome != SKIPPED)
        return episode_ratios(int(self.accepted[i]), int(self.offered[i]), offered, offered & (outcome == ACCEPTED))

    def step(self, actions: np.ndarray, acting: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One decision (``actions``, servers) in each acting env: rewards, which episodes ended, which actions were
        outside the mask."""
        n = self.n
        rows, servers = np.flatnonzero(acting), actions[acting]
        inside = (servers >= 0) & (servers < self.n_servers)
        valid = inside.copy()
        valid[inside] = self.allowed[rows[inside], servers[inside]]
        invalid = np.zeros(n, bool)
        invalid[rows[~valid]] = True
        rows, servers = rows[valid], servers[valid]
        failed = invalid.copy()
        added = self._add(rows, servers)
        failed[rows[~added]] = True
        rows = rows[added]
        done = _across(np.maximum, self.remaining[rows]) <= 0
        done_rows, still_open = rows[done], rows[~done]
        failed[still_open[~self.allowed[still_open].any(axis=1)]] = True  # no server left: "no_server"
        rewards = np.zeros(n)
        ended = np.zeros(n, bool)
        settled = failed.copy()
        settled[done_rows] = True
        self._commit(done_rows)
        rewards[done_rows] = SUCCESS_REWARD
        rewards[failed] = FAILURE_REWARD
        self._settle(np.flatnonzero(settled))
        self._advance(np.flatnonzero(settled), rewards, ended)
        return rewards, ended, invalid

    def _add(self, rows: np.ndarray, servers: np.ndarray) -> np.ndarray:
        """Each row's server added, joined to its partners; False where a pair found no path (the request fails)."""
        take = np.minimum(self.free[rows, servers], self.remaining[rows])
        gives_cpu = take[:, self.cpu] > 0
        count = self.count[rows]
        width = int(count.max(initial=0))
        earlier = np.arange(width) < count[:, None]
        history = self.gave_cpu[rows, :width]
        rule = self.rule[rows, None]
        reference = np.logical_and.accumulate(history, axis=1) if width else history  # up to the first without CPU
        pairs = earlier & (gives_cpu[:, None] | (rule == 0) | ((rule == 1) & history) | ((rule == 2) & reference))
        added = self._route(rows, servers, pairs)
        rows, servers, take = rows[added], servers[added], take[added]
        self.free[rows, servers] -= take
        self.remaining[rows] -= take
        position = self.count[rows]
        self.order[rows, position], self.gave_cpu[rows, position] = servers, gives_cpu[added]
        self.count[rows] += 1
        self.chosen[rows, servers] = True
        self.allowed[rows, servers] = False
        remaining = self.remaining[rows]
        covered = _across(np.logical_or, (remaining <= 0) & self.needed[rows])
        narrowed = rows[(_across(np.maximum, remaining) > 0) & covered]
        if len(narrowed):  # a resource is now covered: the mask narrows
            self.needed[narrowed] = self.remaining[narrowed] > 0
            self._mask(narrowed)
        return added

    def _paths(self, envs: np.ndarray, partner: np.ndarray, server: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's first candidate path with a free channel on every link, as indices into ``work`` flattened,
        and whether it has one."""
        links, base = self.work.reshape(-1), envs * self.row_width + self.split
        candidates = self.paths[self.rack[partner] * self.n_racks + self.rack[server]]
        candidates += base[:, None, None]
        ends = np.empty((len(envs), 2), np.int64)
        ends[:, 0], ends[:, 1] = base + self.head[partner], base + self.head[server]
        usable = _across(np.minimum, links[candidates]) >= CHANNELS_PER_PAIR
        usable &= (np.minimum(links[ends[:, 0]], links[ends[:, 1]]) >= CHANNELS_PER_PAIR)[:, None]
        first = usable.argmax(axis=1)
        pairs = np.arange(len(envs))
        return np.concatenate((candidates[pairs, first], ends), axis=1), usable[pairs, first]

    def _route(self, rows: np.ndarray, servers: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """Reserve a channel on a path for each row's pairs, in order (False: a pair has none, the request fails).

        All at once, as routing in order gives unless a row's pairs cross a link more than it has free channels:
        such rows are routed one by one (unless it is the new server's own link, which fails them in any order)."""
        links = self.work.reshape(-1)  # (a view: a link is at env × row_width + split + link)
        row, position = np.nonzero(pairs)
        envs = rows[row]
        paths, found = self._paths(envs, self.order[envs, position], servers[row])
        added = np.ones(len(rows), bool)
        added[row[~found]] = False
        # every pair crosses the new server's link: more pairs than its free channels fail in any order
        head_free = links[rows * self.row_width + self.split + self.head[servers]]
        added[pairs.sum(axis=1) > head_free] = False
        crossings = np.bincount(paths[added[row]].reshape(-1), minlength=links.size).reshape(self.work.shape)
        crowded = (crossings > self.work).any(axis=1)
        crossings[crowded] = 0
        self.work -= crossings * CHANNELS_PER_PAIR  # (the padding's links stay inf and 0)
        for i in np.flatnonzero(crowded[rows] & added).tolist():
            partners = self.order[rows[i], :pairs.shape[1]][pairs[i]].tolist()
            added[i] = self._route_row(rows[i], int(servers[i]), partners)
        return added

    def _route_row(self, env: int, server: int, partners: list[int]) -> bool:
        # one row's pairs in order, as the single env's builder routes them
        free, rack, head = self.links[env].tolist(), self.rack_list, self.head_list
        for partner in partners:
            for path in self.path_lists[rack[partner] * self.n_racks + rack[server]]:
                path = (head[partner], *path, head[server])
                if min(map(free.__getitem__, path)) >= CHANNELS_PER_PAIR:
                    for link in path:
                        free[link] -= CHANNELS_PER_PAIR
                    break
            else:
                return False
        self.links[env] = free
        return True

    def _mask(self, rows: np.ndarray) -> None:
        # servers with a free share of a resource still needed, not chosen yet
        free, needed = self.free[rows] > 0, self.needed[rows]
        allowed = ~self.chosen[rows]
        some = free[:, :, 0] & needed[:, :1]
        for resource in range(1, free.shape[2]):
            some |= free[:, :, resource] & needed[:, resource:resource + 1]
        self.allowed[rows] = allowed & some

    def _commit(self, rows: np.ndarray) -> None:
        if not len(rows):
            return
        request = self.index[rows]
        until = self.clock[rows] + self.holding[rows, request]
        demand = self.demand[rows, request]  # (what the servers gave, to the unit)
        taken = self.state[rows, :-2] - self.work[rows, :-2]  # (the padding's links are not held)
        self.state[rows] = self.work[rows]
        self.outcome[rows, request] = ACCEPTED
        self.accepted[rows] += 1
        self.used[rows] += demand
        self.next_departure[rows] = np.minimum(self.next_departure[rows], until)
        self.holdings.add(rows, until, demand, taken)

    def _settle(self, rows: np.ndarray) -> None:
        failed = rows[self.outcome[rows, self.index[rows]] != ACCEPTED]
        self.outcome[failed, self.index[failed]] = REJECTED
        self.offered[rows] += 1

    def _depart(self, rows: np.ndarray) -> None:
        # release what ``rows``' envs hold with a departure strictly before their clocks
        due = rows[self.next_departure[rows] < self.clock[rows]]
        if not len(due):
            return
        clock = np.full(self.n, -np.inf)
        clock[due] = self.clock[due]
        holdings = self.holdings
        gone = holdings.due(clock)
        envs = holdings.env[gone]
        np.subtract.at(self.used, envs, holdings.demand[gone])
        places = envs[:, None] * self.row_width + holdings.places[gone]
        np.add.at(self.state.reshape(-1), places.reshape(-1), holdings.amounts[gone].reshape(-1))  # (padding: + 0)
        self.next_departure[due] = np.inf
        size = holdings.size
        live = np.flatnonzero((holdings.until[:size] < np.inf) & (clock[holdings.env[:size]] > -np.inf))
        np.minimum.at(self.next_departure, holdings.env[live], holdings.until[live])

    def _advance(self, rows: np.ndarray, rewards: np.ndarray, ended: np.ndarray) -> None:
        """Move ``rows`` to their next request with a server to choose, refusing those without and skipping those
        above the whole capacity; ``ended`` marks episodes with none left."""
        while len(rows):
            self.index[rows] += 1
            over = self.index[rows] >= self.sequence_length
            ended[rows[over]] = True
            rows = rows[~over]
            request = self.index[rows]
            self.clock[rows] += self.gaps[rows, request]
            self._depart(rows)
            skipped = self.wait[rows] & self.exceeds[rows, request]
            self.outcome[rows[skipped], request[skipped]] = SKIPPED
            offer, skipped_rows = rows[~skipped], rows[skipped]
            self._wait(offer[self.wait[offer]])
            self._start(offer)
            refused = offer[~self.allowed[offer].any(axis=1)]
            self.outcome[refused, self.index[refused]] = REJECTED
            self.offered[refused] += 1
            rewards[refused] += FAILURE_REWARD
            rows = np.sort(np.concatenate((skipped_rows, refused)))

    def _wait(self, rows: np.ndarray) -> None:
        # hold each row's request, a time step at a time, until the total free capacity covers it (or none is held)
        waiting = rows[self._short(rows)]
        while len(waiting):
            self.clock[waiting] += self.time_step[waiting]
            due = waiting[self.next_departure[waiting] < self.clock[waiting]]
            if len(due):
                self._depart(due)
                waiting = waiting[self._short(waiting)]

    def _short(self, rows: np.ndarray) -> np.ndarray:
        # some request is held and the total free capacity does not cover the demand (to within 1e-9)
        demand = self.demand[rows, self.index[rows]]
        short = _across(np.logical_or, demand > self.total - self.used[rows] + 1e-9)
        return (self.next_departure[rows] < np.inf) & short

    def _start(self, rows: np.ndarray) -> None:
        self.work[rows] = self.state[rows]
        self.remaining[rows] = self.demand[rows, self.index[rows]]
        self.needed[rows] = self.remaining[rows] > 0
        self.chosen[rows] = False
        self.count[rows] = 0
        self._mask(rows)

    def observe(self, obs: dict[str, np.ndarray], features: Any) -> None:
        """Write every env's observation of its open request."""
        used = 1.0 - (self.total - self.used) / self.total  # (the free capacity's sum, to the unit)
        index = np.minimum(self.index, self.sequence_length - 1)
        holding = self.holding[np.arange(self.n), index] / features.holding_scale
        free_links = self.links[:, features.edge_link]
        write_pool_observation(obs, features, self.free, self.chosen, self.allowed, free_links, used, holding,
                               self._squashed_free(), self.squashed_link_table[free_links.astype(np.intp)])

    def _squashed_free(self) -> np.ndarray:
        # sigmoid(free / still needed − 1) looked up by the two whole numbers where the table holds them
        table = self.squashed_free_table
        if self.remaining.max(initial=0) >= table.shape[0]:
            inverse = np.divide(1.0, self.remaining, out=np.zeros_like(self.remaining), where=self.remaining > 0)
            return _squash(self.free * inverse[:, None, :])
        free = self.work[:, :self.split].astype(np.intp).reshape(self.free.shape)
        return table.reshape(-1)[free + (self.remaining.astype(np.intp) * table.shape[1])[:, None, :]]
