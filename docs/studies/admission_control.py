"""Would declining large requests raise the acceptance ratio? (docs/learned/gnn_ppo.md)

Acceptance counts requests, so a policy might decline a request of many
servers' worth to keep room for several small ones. This wraps Tetris and
NALB in a rule that declines every request of at least ``k`` servers' worth
once the fullest resource is at least ``u`` used, and prints each
topology's acceptance without the rule and with its best setting, over the
validation seeds 100..129 (never the suites' test seeds 0..4). About five
minutes on one core:

    python docs/studies/admission_control.py
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from dcbench import Reject, Runner, get_registry, simulate

TOPOLOGIES = ("tiered:8,1x1", "tiered:8,1x4", "tiered:16,1x1", "tiered:16,1x4", "tiered:32,1x16")
WORKLOAD = "uniform:pairs=reference"
SEEDS = range(100, 130)
SERVERS_WORTH = (4, 5, 6, 7, 8)
USED = (0.0, 0.5, 0.7, 0.85)


class Declining:
    """Declines a request of at least ``servers_worth`` servers' worth once
    the fullest resource is at least ``used`` used; passes the rest on."""

    def __init__(self, inner, servers_worth: int, used: float):
        self.inner = inner
        self.servers_worth = servers_worth
        self.used = used

    def reset(self, network, rng) -> None:
        self.inner.reset(network, rng)
        self.total = network.server_capacity.sum(axis=0)
        self.per_server = network.server_capacity.max(axis=0)

    def allocate(self, request, state):
        used = 1 - state.free_resources.sum(axis=0) / self.total
        servers_worth = math.ceil((request.demand / self.per_server).max())
        if servers_worth >= self.servers_worth and used.max() >= self.used:
            return Reject("declined")
        return self.inner.allocate(request, state)


def acceptance(runner: Runner, topology: str, make_allocator) -> float:
    plan = runner.resolve("tetris", topology, WORKLOAD, 128)
    ratios = []
    for seed in SEEDS:
        workload_rng, allocator_rng = np.random.default_rng(seed).spawn(2)  # as `dcbench run --seed` draws them
        sequence = plan.workload_model.generate(plan.network, 128, workload_rng)
        outcome = simulate(plan.network, sequence, make_allocator(), allocator_rng).requests["outcome"]
        ratios.append((outcome == "accepted").sum() / (outcome != "skipped").sum())
    return statistics.mean(ratios)


def main() -> None:
    registry = get_registry()
    runner = Runner(registry)
    print("| topology | allocator | acceptance | best with declining (k, u) | change |")
    print("|---|---|---:|---:|---:|")
    for topology in TOPOLOGIES:
        for name in ("tetris", "nalb"):
            plain = acceptance(runner, topology, lambda: registry.build("allocator", name).obj)
            best, setting = max((acceptance(runner, topology,
                                            lambda: Declining(registry.build("allocator", name).obj, k, u)), (k, u))
                                for k in SERVERS_WORTH for u in USED)
            print(f"| {topology} | {name} | {plain:.3f} | {best:.3f} {setting} | {best / plain - 1:+.1%} |",
                  flush=True)


if __name__ == "__main__":
    main()
