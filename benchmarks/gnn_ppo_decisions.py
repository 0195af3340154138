"""Per-decision time of the shipped gnn_ppo agent (docs/performance.md).

A decision is one forward pass of the network over the whole graph, batch
of one, one thread: `GnnPpoAllocator.choose`, timed around every call of a
run after a short warm-up run. Run from a checkout with dcbench installed:

    python benchmarks/gnn_ppo_decisions.py
    python benchmarks/gnn_ppo_decisions.py --check 0   # replay the committed gnn_ppo runs (0: all; N: N a submission)

``--check`` replays the committed leaderboard's gnn_ppo runs, each
decision computed both by `GraphPolicy.forward` (as trained) and by the
allocator's `decision_logits`, and prints per submission the runs whose
summaries came out bit for bit, the decisions compared and how many had
the same arg-max and the same float32 logits.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from dcbench.harness import Runner
from dcbench.plugins.allocators.gnn_ppo.allocator import GnnPpoAllocator

# (topology, requests timed): 64, 1,024, 8,192 and 65,536 servers
TOPOLOGIES = (("tiered:32,1x4", 1024), ("tiered:32,1x4,pods=8,racks=8", 1024), ("tiered:32,1x4,pods=16,racks=32", 256),
              ("tiered:32,1x4,pods=64,racks=64", 64))


def check(runs_per_submission: int) -> None:
    """Replay the committed gnn_ppo runs, every decision both ways."""
    from dcbench.plugins.allocators.gnn_ppo.model import as_tensors
    from dcbench.publishing.leaderboard import load_submissions, rerun

    counts = {"decisions": 0, "same arg-max": 0, "same logits": 0}
    untimed = GnnPpoAllocator.choose

    def both_ways(self, builder, allowed):
        observation = {k: v[None] for k, v in self.features.observe(builder, self._state).items()}
        nodes, edges, globals_, mask = as_tensors(observation)
        with torch.no_grad():
            trained, _ = self.greedy.model(nodes.double(), edges.double(), globals_.double(), mask, self.edge_index)
        decided = self.greedy.logits(observation, self.edge_index)
        counts["decisions"] += 1
        counts["same arg-max"] += int(torch.argmax(trained.float()[0])) == int(torch.argmax(decided[0]))
        counts["same logits"] += torch.equal(trained.float(), decided)
        return untimed(self, builder, allowed)

    GnnPpoAllocator.choose = both_ways
    runner = Runner()
    print("| submission | runs | bit for bit | decisions | same arg-max | same float32 logits |")
    print("|---|---:|---:|---:|---:|---:|")
    for submission in load_submissions(Path(__file__).resolve().parent.parent / "leaderboard"):
        rows = [row for row in submission.rows if row["allocator"].split(":")[0] == "gnn_ppo"]
        rows = rows[:runs_per_submission] if runs_per_submission else rows
        if not rows:
            continue
        counts.update(dict.fromkeys(counts, 0))
        same = sum(rerun(row, runner) == [] for row in rows)
        print(f"| {submission.name} | {len(rows)} | {same} | {counts['decisions']:,} | {counts['same arg-max']:,} | "
              f"{counts['same logits']:,} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", type=int, default=None, metavar="N",
                        help="replay the committed gnn_ppo runs instead (N a submission; 0: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.check is not None:
        check(args.check)
        return
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
