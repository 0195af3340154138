"""The pool bound with tiers (docs/bounds.md, "How tight it is"): does keeping each request's CPU per rack and pod for
its whole life, and charging the pairs it splits to the links out of each rack and pod, tighten the nara2022 bound?

    python benchmarks/bound_racks.py [--scenarios 16-1x16 8-1x16 8-1x1] [--seeds 0] [--time-limit 240]

The model is the pool bound's (`dcbench.plugins.bounds.pool.model_of`: the same variables, waits and rows) with, for
every offered request i and group g (each rack, then each pod): ``e`` (i has CPU in g, binary), ``a`` (the CPU it has
there) and ``c`` (it has CPU in g and in another group of g's kind), and per kind a binary ``split`` (it has CPU in
more than one group of that kind). At every offer, each group's CPU holds the held requests' amounts and the offered
one's, and each group's cut (the fewest channels whose links, taken away, part its servers from the others: a
maximum flow) carries the pairs that cross it. A request whose CPU lies in two groups has ``k`` CPU servers, ``s`` of
them in g: its ``s (k - s)`` CPU pairs across g's cut, each a path (every rule pairs CPU servers), are at least
``k - 1``, at least the fewest CPU servers its CPU needs less one; every such path crosses every cut between its
ends, taking a channel on it. So every run is a point of the model, and its optimum bounds every policy.

Prints a Markdown row per scenario and seed: the committed bound, this model's (its dual bound, rounded down, where
the time limit stops HiGHS: still an upper bound), the solver's status and seconds.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from dcbench.plugins.bounds.pool import model_of, pool_instance

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (run as a script or loaded by path: its sibling)
from bound_server import TOLERANCE, compare, held_terms, solve  # noqa: E402


def groups_of(network) -> list[tuple[str, np.ndarray, float]]:
    """Each rack's, then each pod's servers and cut: ``(kind, servers, channels)``, for groups short of every
    server."""
    import networkx as nx

    graph = nx.Graph()
    for (a, b), capacity in zip(network.link_ends.tolist(), network.link_capacity.tolist()):
        graph.add_edge(a, b, capacity=float(capacity))
    groups = []
    for kind, labels in (("rack", network.racks), ("pod", network.pods)):
        for label in np.unique(labels):
            inside = labels == label
            if inside.all():
                continue
            flow = graph.copy()
            flow.add_edges_from((("in", s) for s in np.flatnonzero(inside).tolist()), capacity=math.inf)
            flow.add_edges_from(((s, "out") for s in np.flatnonzero(~inside).tolist()), capacity=math.inf)
            groups.append((kind, np.flatnonzero(inside), float(nx.minimum_cut_value(flow, "in", "out"))))
    return groups


class RackModel:
    """`model_of`'s model with each request's CPU per rack and pod and the pairs across their cuts (module
    docstring).

    Args:
        network: The compiled topology, with its racks and pods.
        sequence: The pool requests, as the workload drew them."""

    def __init__(self, network, sequence):
        self.instance = inst = pool_instance(network, sequence)
        self.base = base = model_of(inst)
        self.cpu = network.resources.index("cpu")
        self.groups = groups_of(network)
        self.cpu_capacity = [float(network.server_capacity[servers, self.cpu].sum()) for _, servers, _ in self.groups]
        self.kinds = sorted({kind for kind, _, _ in self.groups})
        self.requests = np.flatnonzero(~inst.skipped)
        largest = float(network.server_capacity[:, self.cpu].max())
        # the fewest CPU servers each request's CPU needs, less one: the least of the pairs a split takes across a cut
        self.crossing = np.maximum(np.ceil(inst.demand[:, self.cpu] / largest - 1e-9) - 1, 0)
        n_groups, n_kinds, n_requests = len(self.groups), len(self.kinds), len(self.requests)
        self.width = 3 * n_groups + n_kinds  # per request: e per group, a per group, c per group, split per kind
        self.first = base.n
        self.n = base.n + n_requests * self.width
        upper = np.ones((n_requests, self.width))
        upper[:, n_groups:2 * n_groups] = inst.demand[self.requests, self.cpu][:, None]
        integrality = np.zeros((n_requests, self.width))
        integrality[:, :n_groups] = integrality[:, 3 * n_groups:] = 1
        self.lower = np.concatenate([base.lower, np.zeros(n_requests * self.width)])
        self.upper = np.concatenate([base.upper, upper.ravel()])
        self.integrality = np.concatenate([base.integrality, integrality.ravel()])
        self.objective = np.concatenate([base.objective, np.zeros(n_requests * self.width)])
        self.n_requests = base.n_requests

    def var(self, at: int, field: int) -> int:
        """The index of request ``self.requests[at]``'s variable ``field``."""
        return self.first + at * self.width + field

    def constraints(self):
        rows, cols, vals, lower, upper = (list(part) for part in self.base.constraints())

        def row(entries, lo, hi):
            for c, v in entries:
                rows.append(len(lower))
                cols.append(c)
                vals.append(v)
            lower.append(lo)
            upper.append(hi)

        inst, var, n_groups = self.instance, self.var, len(self.groups)
        members = {kind: [g for g, (of, _, _) in enumerate(self.groups) if of == kind] for kind in self.kinds}
        racks_of_pod = [(g, [r for r in members.get("rack", []) if np.isin(self.groups[r][1], servers).all()])
                        for g, (kind, servers, _) in enumerate(self.groups) if kind == "pod"]
        for at, i in enumerate(self.requests):
            cpu = float(inst.demand[i, self.cpu])
            for k, kind in enumerate(self.kinds):
                split = var(at, 3 * n_groups + k)
                row([(var(at, n_groups + g), 1) for g in members[kind]] + [(i, -cpu)], 0, 0)  # its CPU, if accepted
                row([(var(at, g), 1) for g in members[kind]] + [(split, 1 - len(members[kind]))], -np.inf, 1)
                for g in members[kind]:
                    e, amount, crossing = var(at, g), var(at, n_groups + g), var(at, 2 * n_groups + g)
                    row([(e, 1), (i, -1)], -np.inf, 0)
                    row([(amount, 1), (e, -cpu)], -np.inf, 0)
                    row([(crossing, 1), (e, -1), (split, -1)], -1, np.inf)
            for pod, racks in racks_of_pod:  # a pod's CPU is its racks'
                if racks:
                    row([(var(at, n_groups + r), 1) for r in racks] + [(var(at, n_groups + pod), -1)], 0, 0)
        position = {int(i): at for at, i in enumerate(self.requests)}
        terms = held_terms(self.base)
        demand = inst.demand[:, self.cpu]
        for at, i in enumerate(self.requests):
            held = [(at, None, i)] + [(position[j], y, j) for j, y in terms[i] if j in position]
            for g, (_, _, cut) in enumerate(self.groups):
                # the group's CPU, then the pairs across its cut: (field, weight, the most one request holds, capacity)
                for field, weight, most, capacity in (
                        (n_groups + g, np.ones_like(demand), demand, self.cpu_capacity[g] + TOLERANCE * len(held)),
                        (2 * n_groups + g, self.crossing, self.crossing, cut)):
                    entries = []
                    for other, y, j in held:
                        if most[j] == 0:
                            continue
                        entries.append((var(other, field), float(weight[j])))
                        if y is not None:  # accepted, not held: frees what it held
                            entries += [(j, -float(most[j])), (y, float(most[j]))]
                    if entries:
                        row(entries, -np.inf, capacity)
        return (np.asarray(rows, dtype=int), np.asarray(cols, dtype=int), np.asarray(vals, dtype=float),
                np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))


def racks_bound(network, sequence, time_limit: float):
    """This model's bound: its optimum, or its dual bound where the time limit stops HiGHS, rounded down."""
    return solve(RackModel(network, sequence), time_limit)


def main(argv=None) -> None:
    compare(argv, __doc__.split("\n\n")[0], "with racks and pods", racks_bound, ["16-1x16", "8-1x16", "8-1x1"], [0],
            240.0)


if __name__ == "__main__":
    main()
