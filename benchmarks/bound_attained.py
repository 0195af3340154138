"""How much of the nara2022 bound an offline schedule attains (docs/bounds.md, "How tight it is"):

    python benchmarks/bound_attained.py --scenarios 8-1x1 8-1x4 8-1x8 8-1x16 --seeds 0 [--runs 3000]
    python benchmarks/bound_attained.py --online rack --seeds 0 1 2 3 4

A schedule says, for every request of a scenario's sequence, whether it is refused and else which picker places it
first (`PICKERS`; the others are tried in turn where it fails). The engine runs it (`dcbench.simulate`, which checks
every allocation), so its acceptance ratio is a lower bound on the best any allocator reaches on that sequence, the
committed bound an upper one. The search starts from the best schedule that refuses nothing and puts one picker
first everywhere, then goes through the requests in order, trying each other choice and keeping the first that
accepts more, until a pass keeps nothing or ``--runs`` engine runs are spent. Deterministic. Prints a Markdown row
per scenario and seed: the committed bound, the schedule's ratio and its start's, and the search: the start's first
picker, then changes kept/engine runs.

With ``--online PICKER`` it searches nothing: the schedule that puts that picker first for every request is an online
policy (no picker reads the future), and a row per scenario gives its acceptance ratio's mean over the seeds beside
the committed bound's.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from dcbench import PoolAllocator, PoolBuilder, Reject, simulate

ROOT = Path(__file__).resolve().parents[1]
SUITE = "nara2022"


class MemoryFirst(PoolAllocator):
    """Best fit on CPU and channels that places a memory-only server first where a request needs servers for memory
    alone.

    Under the reference pair rule a server giving no CPU pairs with the servers before it up to the first that gave
    none: after a first server that gives no CPU (one whose CPU is all taken), the servers that give memory alone
    need no path at all, where otherwise each takes a channel on every CPU server's link. CPU servers come next,
    the one giving most CPU first among those with a free channel for every server the request will pair it with
    (the tightest that completes it last), then memory, the tightest that completes it first.

    Args:
        near: Which CPU servers with enough channels come first: "any" (none before others), "previous" (those in
            the previous pick's rack) or "racks" (those in a rack the request uses, the first in the rack with
            most such CPU free).
        fresh_last: Whether CPU servers with their whole link free come after the others with enough channels
            (kept for the requests that need them)."""

    def __init__(self, near: str = "any", fresh_last: bool = False):
        self.near, self.fresh_last = near, fresh_last

    def reset(self, network, rng) -> None:
        super().reset(network, rng)
        self.links = network.server_link
        self.cpu, self.mem = network.resources.index("cpu"), network.resources.index("mem")
        self.largest = network.server_capacity.max(axis=0)

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        free, remaining, chosen = builder.free_resources, builder.remaining, builder.chosen
        channels = builder.free_links[self.links]
        cpu_servers_left = int(np.ceil(remaining[self.cpu] / self.largest[self.cpu] - 1e-9))
        if not chosen:
            spare = allowed & (free[:, self.cpu] <= 0) & (channels >= cpu_servers_left)
            if remaining[self.mem] > cpu_servers_left * self.largest[self.mem] and spare.any():
                return int(np.where(spare, free[:, self.mem] * 1e3 - channels, -np.inf).argmax())
        if remaining[self.cpu] > 0:
            score = self.cpu_score(builder, channels, cpu_servers_left)
        else:
            score = self.memory_score(builder, channels)
        return int(np.where(allowed, score, -np.inf).argmax())

    def cpu_score(self, builder: PoolBuilder, channels: np.ndarray, cpu_servers_left: int) -> np.ndarray:
        """Servers with a channel for each pair they will be in first, then the CPU and memory they give, then the
        fewest free channels; the tightest server that completes the CPU above all, where one server is left."""
        free, remaining, chosen = builder.free_resources, builder.remaining, builder.chosen
        gives = np.minimum(free, remaining)
        enough = channels >= len(chosen) + cpu_servers_left - 1
        score = enough * 1e9 + gives[:, self.cpu] * 1e5 + gives[:, self.mem] * 1e2 - channels
        score += enough * self.near_bonus(builder, enough)
        if self.fresh_last:
            score -= (enough & (channels >= self.network.link_capacity[self.links])) * 7e8
        if cpu_servers_left == 1:
            completes = (gives[:, self.cpu] >= remaining[self.cpu]) & (channels >= len(chosen))
            leftover = (free - remaining).clip(min=0).sum(axis=1)
            score = np.where(completes, 1e12 - leftover * 1e3 - channels, score)
        return score

    def near_bonus(self, builder: PoolBuilder, enough: np.ndarray) -> np.ndarray:
        """5e8 for the servers `near` puts first, else 0."""
        racks, chosen = self.network.racks, builder.chosen
        if self.near == "previous" and chosen:
            return (racks == racks[chosen[-1]]) * 5e8
        if self.near == "racks" and chosen:
            return np.isin(racks, racks[chosen]) * 5e8
        if self.near == "racks":
            free_cpu = np.bincount(racks, weights=builder.free_resources[:, self.cpu] * enough)
            return (racks == free_cpu.argmax()) * 5e8
        return np.zeros(len(racks))

    def memory_score(self, builder: PoolBuilder, channels: np.ndarray) -> np.ndarray:
        """Servers with a channel for each CPU server first (none needed after a first server that gave no CPU),
        then the tightest that completes the memory, else the most memory; then servers with no CPU left."""
        free, remaining = builder.free_resources[:, self.mem], builder.remaining[self.mem]
        gives_cpu = [amounts[self.cpu] > 0 for amounts in builder.amounts]
        pairs = sum(gives_cpu) if gives_cpu[0] else 0
        no_cpu = builder.free_resources[:, self.cpu] <= 0
        fit = np.where(free >= remaining, 1e7 - (free - remaining) * 1e3, free * 1e3)
        return (channels >= pairs) * 1e9 + fit + no_cpu * 1e2 - channels


class RackFirst(MemoryFirst):
    """`MemoryFirst` among the servers of one rack: the racks with the request's CPU and memory free, tightest first
    (``order="tight"``) or loosest, then the pods likewise, then every server; the first that builds it wins.

    Args:
        order: "tight" (least CPU left over first) or "loose" (most first).
        kwargs: `MemoryFirst`'s."""

    def __init__(self, order: str = "tight", **kwargs):
        super().__init__(**kwargs)
        self.order, self.within = order, None

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        if self.within is not None and (allowed & self.within).any():
            allowed = allowed & self.within
        return super().choose(builder, allowed)

    def allocate(self, request, state):
        free, demand = state.free_resources, np.asarray(request.demand, dtype=float)
        groups = []
        for labels in (self.network.racks, self.network.pods):
            holding = [(free[labels == label].sum(axis=0), label) for label in np.unique(labels)]
            holding = [(have[self.cpu] - demand[self.cpu], label) for have, label in holding
                       if (have >= demand - 1e-9).all()]
            groups += [labels == label for _, label in sorted(holding, reverse=self.order == "loose")]
        for within in [*groups, None]:
            self.within = within
            result = super().allocate(request, state)
            if not isinstance(result, Reject):
                break
        self.within = None
        return result


def registered(spec: str):
    """A registered allocator, built from its spec."""
    from dcbench.harness import get_registry

    return get_registry().build("allocator", spec).obj


# The pickers a schedule chooses among, by name, each made afresh (it holds its run's builder).
PICKERS = {
    "memory": MemoryFirst,
    "bestfit": lambda: registered("bestfit"),
    "bestfit-local": lambda: registered("bestfit:local=yes"),
    "tetris": lambda: registered("tetris"),
    "memory-previous": lambda: MemoryFirst("previous"),
    "memory-racks": lambda: MemoryFirst("racks"),
    "memory-fresh": lambda: MemoryFirst(fresh_last=True),
    "memory-racks-fresh": lambda: MemoryFirst("racks", fresh_last=True),
    "rack": RackFirst,
    "rack-loose": lambda: RackFirst("loose"),
}
REFUSE = -1


class Schedule:
    """An offline policy: refuses request i where ``choice[i]`` is `REFUSE`, else places it with picker
    ``choice[i]`` or, where that one fails, the first of the others that does not."""

    def __init__(self, choice: np.ndarray):
        self.choice = choice
        self.pickers = [make() for make in PICKERS.values()]

    def reset(self, network, rng) -> None:
        for picker in self.pickers:
            picker.reset(network, rng)

    def allocate(self, request, state):
        first = int(self.choice[request.id])
        if first == REFUSE:
            return Reject("refused")
        for k in [first, *(k for k in range(len(self.pickers)) if k != first)]:
            result = self.pickers[k].allocate(request, state)
            if not isinstance(result, Reject):
                return result
        return result


def episode(label: str, seed: int):
    """The network and request sequence of a scenario of the suite and a seed, as `dcbench run` draws them."""
    from dcbench.harness import Runner, get_registry

    (scenario,) = [s for s in get_registry().get("suite", SUITE).scenarios if s.label == label]
    plan = Runner().resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
    workload_rng = np.random.default_rng(seed).spawn(2)[0]
    return plan.network, plan.workload_model.generate(plan.network.private_copy(), plan.requests, workload_rng)


def run(network, sequence, seed: int, choice: np.ndarray):
    """The engine's tables of `Schedule` ``choice`` (the allocator's generator the runner's for ``seed``)."""
    return simulate(network.private_copy(), sequence, Schedule(choice), np.random.default_rng(seed).spawn(2)[1])


def accepted(tables) -> np.ndarray:
    """Which requests the engine accepted."""
    return np.asarray(tables.requests["outcome"]) == "accepted"


def measured_accepted(tables) -> int:
    """The measured requests the engine accepted."""
    return int((accepted(tables) & np.asarray(tables.requests["measured"], dtype=bool)).sum())


@dataclass(frozen=True)
class Found:
    """The best schedule a search found: its choices, the measured requests it accepts, those its start accepts
    (nothing refused, one picker first everywhere), and how: that picker, the changes kept and the engine runs."""

    choice: np.ndarray
    accepted: int
    start: int
    by: str


def search(network, sequence, seed: int, runs: int) -> Found:
    """Local search over schedules (the module's docstring), from the best with no refusals and one picker first
    everywhere."""
    starts = [np.full(len(sequence.demand), k) for k in range(len(PICKERS))]
    tables = [run(network, sequence, seed, choice) for choice in starts]
    first = int(np.argmax([measured_accepted(t) for t in tables]))
    choice, best, placed = starts[first], measured_accepted(tables[first]), accepted(tables[first])
    start = best
    spent, kept = len(PICKERS), 0
    improved = True
    while improved and spent < runs:
        improved = False
        for i in range(len(choice)):
            # a request every picker failed is refused whichever comes first
            others = [REFUSE, *range(len(PICKERS))] if placed[i] or choice[i] == REFUSE else [REFUSE]
            for option in others:
                if option == choice[i] or spent >= runs:
                    continue
                trial = choice.copy()
                trial[i] = option
                tables = run(network, sequence, seed, trial)
                spent += 1
                if measured_accepted(tables) > best:
                    choice, best, placed, improved = trial, measured_accepted(tables), accepted(tables), True
                    kept += 1
                    break
    by = f"{list(PICKERS)[first]}; {kept}/{spent}"
    return Found(choice=choice, accepted=best, start=start, by=by)


@cache
def committed_bounds() -> dict[tuple[str, int], dict]:
    """leaderboard/bounds/nara2022/bounds.parquet's rows by scenario and seed, read once."""
    import pyarrow.parquet as pq

    rows = pq.read_table(ROOT / "leaderboard" / "bounds" / SUITE / "bounds.parquet").to_pylist()
    return {(row["scenario"], row["seed"]): row for row in rows}


def committed_bound(label: str, seed: int) -> dict:
    """The committed bound's row: ``bound`` on the acceptance ratio, ``offered``, the measured requests offered."""
    return committed_bounds()[(label, seed)]


def online_means(label: str, seeds: list[int], picker: str) -> tuple[float, float]:
    """Means over ``seeds`` of the committed bound and of the ratio `PICKERS` ``picker`` reaches first for every
    request, on scenario ``label``."""
    bounds, online = [], []
    for seed in seeds:
        network, sequence = episode(label, seed)
        tables = run(network, sequence, seed, np.full(len(sequence.demand), list(PICKERS).index(picker)))
        bound = committed_bound(label, seed)
        bounds.append(bound["bound"])
        online.append(measured_accepted(tables) / bound["offered"])
    return float(np.mean(bounds)), float(np.mean(online))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", help="default: the 8-channel ones, every one with --online")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--runs", type=int, default=3000, help="engine runs per scenario and seed, at most")
    parser.add_argument("--online", choices=list(PICKERS), help="no search: this picker first, as a policy")
    args = parser.parse_args()
    if args.scenarios is None:
        from dcbench.harness import get_registry

        labels = [s.label for s in get_registry().get("suite", SUITE).scenarios]
        args.scenarios = labels if args.online else [label for label in labels if label.startswith("8-")]
    if args.online:
        print(f"| scenario | bound | {args.online} first (online) |")
        print("|---|---:|---:|")
        for label in args.scenarios:
            bound, online = online_means(label, args.seeds, args.online)
            print(f"| {label} | {bound:.3f} | {online:.3f} |", flush=True)
        return
    print("| scenario | seed | bound | offline schedule | no refusals | search |")
    print("|---|---:|---:|---:|---:|---|")
    for label in args.scenarios:
        for seed in args.seeds:
            network, sequence = episode(label, seed)
            found = search(network, sequence, seed, args.runs)
            bound = committed_bound(label, seed)
            offered = bound["offered"]
            print(f"| {label} | {seed} | {bound['bound']:.3f} | {found.accepted / offered:.3f} | "
                  f"{found.start / offered:.3f} | {found.by} |", flush=True)


if __name__ == "__main__":
    main()
