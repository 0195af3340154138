"""Per-decision time of the shipped gnn_ppo agent (docs/performance.md).

A decision is one forward pass of the network over the whole graph, batch
of one, one thread: `GnnPpoAllocator.choose`, timed around every call of a
run after a short warm-up run. Run from a checkout with dcbench installed:

    python benchmarks/gnn_ppo_decisions.py
"""

from __future__ import annotations

import statistics
import time

import torch

from dcbench.harness import Runner
from dcbench.plugins.allocators.gnn_ppo.allocator import GnnPpoAllocator

# (topology, requests timed): 64, 1,024, 8,192 and 65,536 servers
TOPOLOGIES = (("tiered:32,1x4", 1024), ("tiered:32,1x4,pods=8,racks=8", 1024), ("tiered:32,1x4,pods=16,racks=32", 256),
              ("tiered:32,1x4,pods=64,racks=64", 64))


def main() -> None:
    torch.set_num_threads(1)
    untimed = GnnPpoAllocator.choose
    seconds: list[float] = []

    def timed(self, builder, allowed):
        start = time.perf_counter()
        chosen = untimed(self, builder, allowed)
        seconds.append(time.perf_counter() - start)
        return chosen

    GnnPpoAllocator.choose = timed
    runner = Runner()
    print("| topology | decisions timed | median ms/decision | mean ms/decision | requests/s |")
    print("|---|---:|---:|---:|---:|")
    for topology, requests in TOPOLOGIES:
        runner.run("gnn_ppo", topology, requests=64, seed=1)  # warm-up: the paths catalogue, torch's first calls
        seconds.clear()
        start = time.perf_counter()
        runner.run("gnn_ppo", topology, requests=requests, seed=0)
        wall = time.perf_counter() - start
        ms = [1000 * s for s in seconds]
        print(f"| {topology} | {len(ms):,} | {statistics.median(ms):.2f} | {statistics.mean(ms):.2f} | "
              f"{requests / wall:.0f} |", flush=True)


if __name__ == "__main__":
    main()
