"""The pool bound with a per-server model (docs/bounds.md, "How tight it is"): does placing each request's pieces on
specific servers, for its whole life, tighten the nara2022 bound?

    python benchmarks/bound_server.py [--scenarios 8-1x1] [--seeds 0 1 2 3 4] [--time-limit 300]

The model is the pool bound's (`dcbench.plugins.bounds.pool.model_of`: the same variables, waits and rows) with, for
every offered request i and server s: ``b`` (i uses s, for its whole life), ``g`` (s gives i CPU), ``f`` (s is the
first server of i, in its allocation's order, that gives no CPU), the amounts s gives i, and the channels i holds on
s's access link; at every offer, each server's resources and link hold the requests held then and the one offered.
A run is a point of it: its allocations' servers, CPU servers, amounts (moved within the checker's 1e-6 to sum to
the demand) and the channels their routes reserve on each server's one link, a channel per pair the path joins.
Those are at least what the connectivity rule's pairs need: under `reference` every CPU server pairs with every
other and with the first server giving no CPU (of two, the later pairs with the earlier), so a CPU server's link
carries its request's CPU servers less one, plus one if some server gives no CPU, and that first one's the CPU
servers; under `all` each server's, the other servers; under `cpu` a CPU server's, the other servers, and one
without CPU, the CPU servers. Where servers are alike (as the model sees them: it has no tiers) they are first used
in order: a run relabelled by first use is one of the same value.

Prints a Markdown row per scenario and seed: the committed bound, this model's (its dual bound, rounded down, where
the time limit stops HiGHS: still an upper bound), the solver's status and seconds.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from dcbench.plugins.bounds.pool import Bound, _Model, access_links, model_of, pool_instance

ROOT = Path(__file__).resolve().parents[1]
SUITE = "nara2022"
# the checker's: amounts sum to the demand within 1e-6, each within 1e-9 of what is free; moving what a run's amounts
# are off by onto one of its servers makes them sum to the demand, each server then over by this at most
TOLERANCE = 2e-6


def held_terms(base) -> list[list[tuple[int, int | None]]]:
    """For each offer i, the requests j that may be held then: ``(x_j, y)``, y the variable saying j is held at i's
    offer where the waits leave it open, None where j is held exactly when accepted."""
    n = base.n_requests
    terms: list[list[tuple[int, int | None]]] = [[] for _ in range(n)]
    if isinstance(base, _Model):
        first_held = (2 + base.n_resources) * n
        for k, (j, i, slack) in enumerate(base.pairs):
            terms[i].append((j, None if base.latest[i] <= slack else first_held + k))
    else:
        for j, i in base.pairs:
            terms[i].append((j, None))
    return terms


class ServerModel:
    """`model_of`'s model with each request's servers, amounts and channels (module docstring).

    Args:
        network: The compiled topology.
        sequence: The pool requests."""

    def __init__(self, network, sequence):
        self.instance = inst = pool_instance(network, sequence)
        self.base = base = model_of(inst)
        self.rule = sequence.connectivity
        self.capacity = network.server_capacity
        self.links = network.link_capacity[access_links(network)]
        n, (servers, r) = len(inst.demand), self.capacity.shape
        self.requests = np.flatnonzero(~inst.skipped)
        self.n_servers, self.n_resources = servers, r
        self.cpu = network.resources.index("cpu") if "cpu" in network.resources else 0
        # where servers differ in nothing the model reads, any run relabelled by first use is a run
        self.alike = bool((self.capacity == self.capacity[0]).all() and (self.links == self.links[0]).all())
        self.width = 5 + r  # per request and server: b, g, f, channels, used by then, then the amounts
        self.first = base.n
        # per request: h (it uses a server without CPU), its CPU servers, its servers
        self.first_has = base.n + len(self.requests) * servers * self.width
        self.n = self.first_has + 3 * len(self.requests)
        self.lower = np.concatenate([base.lower, np.zeros(self.n - base.n)])
        upper = np.ones((len(self.requests), servers, self.width))
        upper[:, :, 3] = self.links
        upper[:, :, 5:] = self.capacity + TOLERANCE
        # a CPU server carries a channel for each other CPU server: no request has more than a link's channels + 1
        most = float(self.links.max()) + 1
        counts = np.tile([1.0, most, most if self.rule == "all" else servers], len(self.requests))
        self.upper = np.concatenate([base.upper, upper.ravel(), counts])
        integrality = np.ones((len(self.requests), servers, self.width))
        integrality[:, :, 3] = 0
        integrality[:, :, 5:] = 0
        self.integrality = np.concatenate([base.integrality, integrality.ravel(), np.ones(3 * len(self.requests))])
        self.objective = np.concatenate([base.objective, np.zeros(self.n - base.n)])
        self.n_requests = n

    def amounts(self) -> np.ndarray:
        """The indices of every amount variable."""
        columns = np.arange(self.first, self.first_has).reshape(len(self.requests), self.n_servers, self.width)
        return columns[:, :, 5:].ravel()

    def var(self, at: int, server: int, field: int) -> int:
        """The index of request ``self.requests[at]``'s variable ``field`` on ``server``."""
        return self.first + (at * self.n_servers + server) * self.width + field

    def constraints(self):
        rows, cols, vals, lower, upper = (list(part) for part in self.base.constraints())
        count = [len(lower)]

        def row(entries, lo, hi):
            for c, v in entries:
                rows.append(count[0])
                cols.append(c)
                vals.append(v)
            lower.append(lo)
            upper.append(hi)
            count[0] += 1

        B, G, F, CH, USED = range(5)
        inst, servers, r, cpu = self.instance, self.n_servers, self.n_resources, self.cpu
        # more than any count of servers in a channel row: CPU servers (all: servers) at most a link's channels + 1
        big = float(self.links.max()) + 2 if self.rule != "cpu" else servers + 1
        for at, i in enumerate(self.requests):
            var = self.var
            has, cpu_servers, every = (self.first_has + 3 * at + k for k in range(3))
            for s in range(servers):
                b, g, f, ch = var(at, s, B), var(at, s, G), var(at, s, F), var(at, s, CH)
                row([(b, 1), (i, -1)], -np.inf, 0)  # only if accepted
                row([(g, 1), (b, -1)], -np.inf, 0)
                row([(f, 1), (b, -1), (g, 1)], -np.inf, 0)  # the first without CPU gives no CPU
                row([(ch, 1), (b, -float(self.links[s]))], -np.inf, 0)
                row([(has, 1), (b, -1), (g, 1)], 0, np.inf)  # a server without CPU: has one
                for k in range(r):
                    amount = var(at, s, 5 + k)
                    gate = g if k == cpu else b
                    row([(amount, 1), (gate, -float(self.capacity[s, k]) - TOLERANCE)], -np.inf, 0)
                # the channels its pairs reserve on s's link, at least (the module docstring)
                if self.rule == "all":
                    row([(ch, 1), (every, -1), (b, -big)], -1 - big, np.inf)
                elif self.rule == "cpu":
                    row([(ch, 1), (every, -1), (g, -big)], -1 - big, np.inf)
                    row([(ch, 1), (cpu_servers, -1), (b, -big), (g, big)], -big, np.inf)
                else:
                    row([(ch, 1), (cpu_servers, -1), (has, -1), (g, -big)], -1 - big, np.inf)
                    row([(ch, 1), (cpu_servers, -1), (f, -big)], -big, np.inf)
            row([(var(at, s, G), 1) for s in range(servers)] + [(cpu_servers, -1)], 0, 0)
            row([(var(at, s, B), 1) for s in range(servers)] + [(every, -1)], 0, 0)
            if self.rule == "reference":
                row([(var(at, s, F), 1) for s in range(servers)] + [(has, -1)], 0, np.inf)
            for k in range(r):  # the amounts make the demand
                demand = float(inst.demand[i, k])
                row([(var(at, s, 5 + k), 1) for s in range(servers)] + [(i, -demand)], 0, 0)
            for s in range(servers if self.alike else 0):  # servers first used in order
                used, b = var(at, s, USED), var(at, s, B)
                row([(used, 1), (b, -1)], 0, np.inf)
                if at > 0:
                    row([(used, 1), (var(at - 1, s, USED), -1)], 0, np.inf)
                    row([(used, 1), (var(at - 1, s, USED), -1), (b, -1)], -np.inf, 0)
                else:
                    row([(used, 1), (b, -1)], -np.inf, 0)
                if s > 0:
                    row([(used, 1), (var(at, s - 1, USED), -1)], -np.inf, 0)
        position = {int(i): at for at, i in enumerate(self.requests)}
        terms = held_terms(self.base)
        for at, i in enumerate(self.requests):
            held = [(position[j], y, j) for j, y in terms[i] if j in position]
            for s in range(servers):
                fields = [(5 + k, float(self.capacity[s, k])) for k in range(r)] + [(CH, float(self.links[s]))]
                for field, cap in fields:
                    entries = [(self.var(at, s, field), 1.0)]
                    for other, y, j in held:
                        entries.append((self.var(other, s, field), 1.0))
                        if y is not None:  # accepted, not held: frees what it held
                            entries += [(j, -cap), (y, cap)]
                    slack = TOLERANCE * (len(held) + 1) if field != CH else 0.0  # each amount's, at most
                    row(entries, -np.inf, cap + slack)
        return (np.asarray(rows, dtype=int), np.asarray(cols, dtype=int), np.asarray(vals, dtype=float),
                np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))


def server_bound(network, sequence, time_limit: float = 600.0, relaxation: str = "milp") -> Bound:
    """The per-server model's bound: its optimum, or its dual bound where the time limit stops HiGHS, rounded
    down."""
    return solve(ServerModel(network, sequence), time_limit, relaxation)


def solve(model: ServerModel, time_limit: float = 600.0, relaxation: str = "milp") -> Bound:
    """`server_bound` of a model built already."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    # (HiGHS 1.12's presolve calls some small instances of this model infeasible, or fails on them)
    rows, cols, vals, lower, upper = model.constraints()
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lower), model.n)).tocsr()
    integrality = model.integrality if relaxation == "milp" else np.zeros_like(model.integrality)
    result = milp(-model.objective, integrality=integrality, bounds=Bounds(model.lower, model.upper),
                  constraints=LinearConstraint(matrix, lower, upper),
                  options={"time_limit": time_limit, "presolve": False})
    inst = model.instance
    offered = int((inst.measured & ~inst.skipped).sum())
    if result.status == 0:
        best, status = -result.fun, "optimal"
    else:
        dual = getattr(result, "mip_dual_bound", None)
        best, status = (float(offered), f"no bound: {result.message}") if dual is None else (-dual, "time limit")
        if not np.isfinite(best):
            best, status = float(offered), f"no bound: {result.message}"
    return Bound(accepted=min(offered, int(math.floor(best + 1e-6))), offered=offered, status=status,
                 relaxation=relaxation)


def episode(scenario: str, seed: int):
    """A nara2022 scenario's network and request sequence for one seed, as `dcbench bound` draws them."""
    from dcbench.harness import Runner, get_registry

    (found,) = [s for s in get_registry().get("suite", SUITE).scenarios if s.name == scenario]
    plan = Runner().resolve_scenario(found.topology, found.workload, found.requests)
    sequence = plan.workload_model.generate(plan.network.private_copy(), plan.requests,
                                            np.random.default_rng(seed).spawn(2)[0])
    return plan.network, sequence


def compare(argv, description: str, column: str, bound, scenarios: list[str], seeds: list[int],
            time_limit: float) -> None:
    """This script's command line and its siblings': a Markdown row per scenario and seed, the committed bound beside
    ``bound(network, sequence, time_limit)``'s, its status and seconds (the other arguments: the defaults)."""
    import pyarrow.parquet as pq

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scenarios", nargs="+", default=scenarios)
    parser.add_argument("--seeds", nargs="+", type=int, default=seeds)
    parser.add_argument("--time-limit", type=float, default=time_limit)
    args = parser.parse_args(argv)
    committed = {(row["scenario"], row["seed"]): row
                 for row in pq.read_table(ROOT / "leaderboard" / "bounds" / SUITE / "bounds.parquet").to_pylist()}
    print(f"| scenario | seed | bound | {column} | status | seconds |")
    print("|---|---:|---:|---:|---|---:|")
    for scenario in args.scenarios:
        for seed in args.seeds:
            network, sequence = episode(scenario, seed)
            started = time.perf_counter()
            found = bound(network, sequence, args.time_limit)
            print(f"| {scenario} | {seed} | {committed[(scenario, seed)]['bound']:.3f} | {found.ratio:.3f} | "
                  f"{found.status} | {time.perf_counter() - started:.0f} |", flush=True)


def main(argv=None) -> None:
    compare(argv, __doc__.split("\n\n")[0], "per-server bound", server_bound, ["8-1x1"], [0, 1, 2, 3, 4], 300.0)


if __name__ == "__main__":
    main()
