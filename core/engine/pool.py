"""The pool builder (the tiered-fabric papers' step semantics) and the pool allocator base: a server at a time gives
min(free, still needed) of each resource and is joined to the chosen servers its rule pairs it with, over the first
candidate path with a free channel on every link; no such path fails the request."""

from __future__ import annotations

from operator import sub
from typing import Callable, Sequence

import numpy as np

from dcbench.engine.simulation import Allocator
from dcbench.errors import AllocatorError
from dcbench.model.allocation import CHANNELS_PER_PAIR, Allocation, Reject, Route, State, StateJournal, partners
from dcbench.model.network import Network, Path, share_divisor
from dcbench.model.requests import Departing, Request

OPEN, DONE, FAILED = "open", "done", "failed"
# Servers plus links below which `PoolBuilder.start` copies the whole state rather than finding what changed.
COPY_WHOLE_BELOW = 4096
Router = Callable[["PoolBuilder", int, int], Sequence[Path]]  # the candidate paths between two servers, in order
_new_tuple = tuple.__new__  # _new_tuple(Route, fields): Route(*fields) without a NamedTuple's Python-level __new__


class StepBuilder:
    """What both builders share: a ``status`` ("open" while building) and the ``reason`` of a failure."""

    status = DONE
    reason = ""

    @property
    def is_open(self) -> bool:
        """Whether the request is still being built (a job: VMs are still to be placed)."""
        return self.status == OPEN

    def fail(self, reason: str) -> None:
        """End the request as failed.

        Args:
            reason: Why, as the `Reject` will say it ("no_server")."""
        self.status = FAILED
        self.reason = reason


class PoolBuilder(StepBuilder):
    """Builds one pool allocation a server at a time; reused across requests: `start` a request, `add` servers among
    those `allowed` until ``status`` is "done" or "failed", then read `result` (readable fields: docs/plugins.md). A
    server that gives nothing is joined while building, then left out with its routes unless ``keep_useless``.

    Args:
        network: The network it builds on.
        router: Chooses the candidate paths between two servers (None: the network's k shortest paths by hop count).
        accept_useless: Whether `add` takes a server that gives nothing whatever the rule (a published quirk)."""

    def __init__(self, network: Network, router: Router | None = None, accept_useless: bool = False):
        self.network = network
        self.router = router
        self.accept_useless = accept_useless
        self._any_free = False
        self._useless: list[bool] = []
        self.free_resources = network.server_capacity.copy()
        self._free_links_array = network.link_capacity.copy()
        # routing reads and writes single links, faster on a list; the array catches up on demand
        self._free_links: list[float] = network.link_capacity.tolist()
        self._stale_links: list[int] = []
        self._link_weights: list[float] | None = None  # kept up to date once `link_weights` is asked for
        self._weight_divisor: np.ndarray | None = None  # link capacities, 1 where 0, once weights are asked for
        self._weight_divisor_list: list[float] = []
        # the state as of the last `start`, and its allowed mask for the needs `_base_key` names
        self._synced_resources = network.server_capacity.copy()
        self._synced_links = network.link_capacity.copy()
        self._released: list[Departing] = []
        self._journal: StateJournal | None = None  # the journal of the state last synced with, and where it was
        self._journal_writes = 0
        self._copy_whole = network.n_links + network.n_servers <= COPY_WHOLE_BELOW
        self._base_allowed = np.zeros(network.n_servers, dtype=bool)
        self._base_key: tuple[bool, ...] | None = None
        self._allowed = np.zeros(network.n_servers, dtype=bool)
        self._needed = np.zeros(len(network.resources))
        self.chosen_mask = np.zeros(network.n_servers, dtype=bool)
        self._remaining: list[float] = []
        self._cpu = network.resources.index("cpu") if "cpu" in network.resources else 0
        self._n_servers = network.n_servers
        self._catalogue = network.paths
        self.chosen: list[int] = []
        self._gives_cpu: list[bool] = []
        self._some_useless = False  # whether any of `_useless` is set
        self._needed_list: list[bool] = []  # `_needed`, as `add` reads it
        self.amounts: list[list[float]] = []
        self.routes: list[Route] = []
        self.request: Request | None = None
        self._rule = "all"  # the request's connectivity
        self._departing: Departing | None = None

    def start(self, request: Request, state: State) -> None:
        """Begin building ``request``, catching up with what changed since the last `start` (a whole copy below
        `COPY_WHOLE_BELOW`).

        Args:
            request: The pool request.
            state: The free capacities to start from (copied)."""
        if self._copy_whole:  # (slice assignments: np.copyto is a Python call away)
            self.free_resources[:] = state.free_resources
            self._free_links_array[:] = state.free_links
            self._free_links = state.free_links.tolist()
            self._link_weights = None  # (computed again if asked: half the requests never are)
            self._stale_links = []
            self._released = []
        else:
            changed_servers = self._sync(state)
        self.chosen_mask[self.chosen] = False
        self.chosen = []
        self._gives_cpu = []
        self._useless = []
        self._some_useless = False
        self.amounts = []
        self.routes = []
        self._remaining = request.demand.tolist()
        self.request = request
        self._rule = request.connectivity
        self._departing = request.departing
        self._any_free = request.allowed_servers == "free"
        self.status = OPEN
        self.reason = ""
        self._needed_list = [r > 0 for r in self._remaining]
        self._needed[:] = self._needed_list
        if self._copy_whole:
            self._mask(self.free_resources, self._allowed)
            return
        key = (True,) if self._any_free else (False, *self._needed_list)
        if key != self._base_key:  # other needs: the whole mask
            self._base_key = key
            self._mask(self._synced_resources, self._base_allowed)
        elif len(changed_servers):
            self._base_allowed[changed_servers] = self._mask(self._synced_resources[changed_servers])
        np.copyto(self._allowed, self._base_allowed)

    def _sync(self, state: State) -> np.ndarray:
        # Bring the copies back to ``state`` where it changed (its journal, else compared) and where the
        # previous request touched; returns the servers whose free capacity changed (perhaps repeated).
        journal = state.journal
        written = journal.since(self._journal_writes) if journal is not None and journal is self._journal else None
        if written is None:
            changed_links = changed_rows(state.free_links, self._synced_links)
            changed_servers = changed_rows(state.free_resources, self._synced_resources)
        else:
            changed_servers, changed_links = written
        self._journal = journal
        self._journal_writes = journal.writes if journal is not None else 0
        touched_links = [link for route in self.routes for link in route[2]]
        touched_servers = list(self.chosen)
        for departing in self._released:
            touched_links += departing.links.tolist()
            touched_servers += departing.servers.tolist()
        self._released = []
        links = np.concatenate((changed_links, touched_links)).astype(np.int64) if touched_links else changed_links
        if len(links):
            values = state.free_links[links]
            self._synced_links[links] = values
            self._free_links_array[links] = values
            free_links = self._free_links
            for link, value in zip(links.tolist(), values.tolist()):
                free_links[link] = value
            self._reweigh(links.tolist())
        self._stale_links = []
        servers = (np.concatenate((changed_servers, touched_servers)).astype(np.int64) if touched_servers
                   else changed_servers)
        if len(servers):
            values = state.free_resources[servers]
            self._synced_resources[servers] = values
            self.free_resources[servers] = values
        return changed_servers

    def _mask(self, free_resources: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        # free capacities are never negative: a positive sum over the needed resources means some is free
        if self._any_free:  # the reference code's mask: anything free at all, needed or not
            return np.greater(free_resources.sum(axis=1), 0, out=out)
        return np.greater(free_resources @ self._needed, 0, out=out)

    def link_free(self, link: int) -> float:
        """Free capacity of one link, after this request's reservations so far.

        Args:
            link: The link's index.
        Returns:
            Its free channels."""
        return self._free_links[link]

    def link_weights(self) -> list[float]:
        """Every link's weight for NALB/NULB's router, 1 + its used share: 2 − free / capacity (a link of no capacity
        weighs 2), after this request's reservations so far; computed when first asked for, then kept up to date.

        Returns:
            The weights by link index (read-only)."""
        if self._link_weights is None:
            if self._weight_divisor is None:
                self._weight_divisor = share_divisor(self.network.link_capacity)
                self._weight_divisor_list = self._weight_divisor.tolist()
            self._link_weights = (2.0 - self.free_links / self._weight_divisor).tolist()
        return self._link_weights

    def _reweigh(self, links: Sequence[int]) -> None:
        weights = self._link_weights
        if weights is not None:
            free_links, divisor = self._free_links, self._weight_divisor_list
            for link in links:
                weights[link] = 2.0 - free_links[link] / divisor[link]

    @property
    def remaining(self) -> np.ndarray:
        """What the request still needs, per resource."""
        return np.array(self._remaining)

    @property
    def free_links(self) -> np.ndarray:
        """Free capacity of every link, after this request's reservations so far."""
        if self._stale_links:
            stale = self._stale_links
            self._free_links_array[stale] = [self._free_links[link] for link in stale]
            self._stale_links = []
        return self._free_links_array

    def _refresh_allowed(self) -> None:
        self._needed_list = [r > 0 for r in self._remaining]
        self._needed[:] = self._needed_list
        self._mask(self.free_resources, self._allowed)
        if self.chosen:
            self._allowed[self.chosen] = False

    def allowed(self) -> np.ndarray:
        """Servers that may be added now: not chosen, with some of a resource still needed (any, under the "free" rule).

        Returns:
            A read-only boolean mask (servers,) that changes as servers are added."""
        return self._allowed

    def add(self, server: int) -> bool:
        """Add ``server``: it gives min(free, still needed) of each resource and is joined as its rule says.

        Args:
            server: A server's index, one of `allowed`.
        Returns:
            True if added; False if no path joined it: the request failed ("no_path").
        Raises:
            AllocatorError: Not open, or ``server`` out of range, chosen, or giving nothing where not allowed."""
        if self.status != OPEN:
            raise AllocatorError(f"builder: add({server}) on a request that is already {self.status}")
        server = int(server)
        if not 0 <= server < self._n_servers or self.chosen_mask[server]:
            raise AllocatorError(f"builder: server {server} is out of range or already chosen")
        free = self.free_resources[server].tolist()
        # (a max says whether any is positive, faster than any() over a generator; what is still needed is never
        # negative, so a covered resource's is 0)
        take = list(map(min, free, self._remaining))
        useless = max(take) <= 0
        if useless and not (self.accept_useless or self._any_free):
            raise AllocatorError(f"builder: server {server} has nothing the request still needs")
        gives_cpu = take[self._cpu] > 0
        self._gives_cpu.append(gives_cpu)
        chosen = self.chosen
        rule = self._rule
        if rule == "all" or (gives_cpu and not self._some_useless):  # every pair (a useless server gives no CPU)
            pairs_with = chosen
        elif self.request.keep_useless or not (useless or self._some_useless):
            pairs_with = [chosen[j] for j, _ in partners(rule, self._gives_cpu, len(chosen))]
        else:
            pairs_with = self._useless_aware_partners(rule, useless)
        if pairs_with and not self._route(server, pairs_with):
            self._gives_cpu.pop()
            self.status = FAILED
            self.reason = "no_path"
            return False
        self.free_resources[server] = list(map(sub, free, take))
        self._remaining = remaining = list(map(sub, self._remaining, take))
        chosen.append(server)
        self._useless.append(useless)
        self._some_useless = self._some_useless or useless
        self.chosen_mask[server] = True
        self._allowed[server] = False
        self.amounts.append(take)
        if max(remaining) <= 0:
            self.status = DONE
        elif len(chosen) == 1 and self._departing is not None:
            self._release(self._departing)
        elif 0.0 in remaining and any(r <= 0 and n for r, n in zip(remaining, self._needed_list)):
            self._refresh_allowed()  # a resource is now covered: the mask narrows
        return True

    def _route(self, server: int, pairs_with: list[int]) -> bool:
        # joins ``server`` to each of ``pairs_with`` over the first candidate path with a free channel on every link;
        # False, with the routes of this step kept in the free links, if one pair has none (the request fails)
        catalogue = self._catalogue
        known_paths = catalogue.server_pair_cache
        n_servers = self._n_servers
        router = self.router
        free_links = self._free_links
        stale = self._stale_links
        routes = self.routes
        amount = CHANNELS_PER_PAIR
        for partner in pairs_with:
            if router is None:
                paths = known_paths.get(partner * n_servers + server) or catalogue.between_servers(partner, server)
            else:
                paths = router(self, partner, server)
            for path in paths:
                if min(map(free_links.__getitem__, path)) >= amount:
                    for link in path:
                        free_links[link] -= amount
                    self._reweigh(path)  # (a router may have asked for the weights just now)
                    stale.extend(path)
                    routes.append(_new_tuple(Route, (partner, server, path, amount)))
                    break
            else:
                return False
        return True

    def _useless_aware_partners(self, rule: str, useless: bool) -> list[int]:
        # a useful server pairs among the useful only, as the check sees it; a useless one with every server
        chosen = self.chosen
        if useless:
            return [chosen[j] for j, _ in partners(rule, self._gives_cpu, len(chosen))]
        kept = [j for j, u in enumerate(self._useless) if not u]
        gives_cpu = [self._gives_cpu[j] for j in kept] + [self._gives_cpu[-1]]
        return [chosen[kept[j]] for j, _ in partners(rule, gives_cpu, len(kept))]

    def _release(self, departing: Departing) -> None:
        # the reference code's departures after a partial step: free for the rest of this request
        self._released.append(departing)  # (what the next `start` puts back)
        np.add.at(self.free_resources, departing.servers, departing.amounts)
        free_links = self._free_links
        for link, amount in zip(departing.links.tolist(), departing.link_amounts.tolist()):
            free_links[link] += amount
        self._reweigh(departing.links.tolist())
        self._stale_links.extend(departing.links.tolist())
        self._refresh_allowed()

    def result(self) -> Allocation | Reject:
        """What the request came to.

        Returns:
            The `Allocation`, or a `Reject` with the reason ("incomplete" if open)."""
        if self.status != DONE:
            return Reject(self.reason or "incomplete")
        servers, amounts, routes = self.chosen, self.amounts, self.routes
        if self._some_useless and not self.request.keep_useless:  # the servers that give nothing left out
            servers = [s for s, u in zip(self.chosen, self._useless) if not u]
            amounts = [a for a, u in zip(self.amounts, self._useless) if not u]
            routes = [r for r in self.routes if r[0] in servers and r[1] in servers]
        return Allocation(np.asarray(servers, dtype=np.int64), np.asarray(amounts, dtype=np.float64), tuple(routes))


def changed_rows(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Sorted int64 indices (first axis) where ``new`` differs from ``old`` bit for bit; 2-d rows may repeat."""
    if new.dtype == old.dtype and new.dtype.kind == "f" and new.flags.c_contiguous and old.flags.c_contiguous:
        kind = np.dtype(f"u{new.dtype.itemsize}")
        differs = new.view(kind) != old.view(kind)
    else:
        differs = new != old
    if differs.ndim == 1:
        return np.flatnonzero(differs)
    return np.flatnonzero(differs.ravel()) // (differs.size // max(len(differs), 1))


class PoolAllocator(Allocator):
    """Base class of policies that pick a server per builder step: implement `choose`.

    Attributes:
        network: The run's network (set by `reset`).
        rng: The run's random generator (set by `reset`).
        builder: Its `PoolBuilder` (made by `reset`).
        accept_useless: Whether its builder adds a server that gives nothing."""

    accept_useless: bool = False

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        """Keep ``network`` and ``rng`` and make the builder with `make_router`'s router.

        Args:
            network: The run's network.
            rng: The allocator's random generator."""
        self.network = network
        self.rng = rng
        self.builder = PoolBuilder(network, router=self.make_router(network), accept_useless=self.accept_useless)

    def make_router(self, network: Network) -> Router | None:
        """The router the builder uses; None for the k shortest paths by hop count.

        Args:
            network: The run's network.
        Returns:
            The router (a `WeightedRouter`, say), or None."""
        return None

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        """The next server.

        Args:
            builder: The builder, with the request and the servers chosen so far.
            allowed: The servers that may be added (servers,), at least one set.
        Returns:
            The server's index."""
        raise NotImplementedError

    def allocate(self, request: Request, state: State) -> Allocation | Reject:
        """Build ``request`` a server at a time, each chosen by `choose`.

        Args:
            request: The pool request.
            state: The free capacities now, read-only.
        Returns:
            The `Allocation`, or a `Reject` ("no_server", "no_path").
        Raises:
            AllocatorError: `choose` returned a server that may not be added."""
        builder = self.builder
        builder.start(request, state)
        while builder.status == OPEN:
            allowed = builder.allowed()
            if not allowed[allowed.argmax()]:  # (the first set, if any: argmax is a C call, any() a Python one)
                builder.fail("no_server")
                break
            builder.add(self.choose(builder, allowed))
        return builder.result()
