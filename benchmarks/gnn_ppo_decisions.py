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


def products_floor(repeats: int = 21) -> None:
    """Time a decision's dense products alone (`decision_logits`' matrix products on inputs of their shapes: float64,
    one thread, the shipped weights) at each size: what no reordering of the rest can go below."""
    from dcbench.plugins.allocators.gnn_ppo.allocator import checkpoint_for, load_policy

    runner = Runner()
    print("| topology | nodes | edges | median ms of the products alone |")
    print("|---|---:|---:|---:|")
    for topology, _ in TOPOLOGIES:
        network = runner.network(topology)[1]
        model = load_policy(checkpoint_for(network)[0]).double()
        n_nodes, n_edges, n_servers = network.n_nodes, 2 * network.n_links, network.n_servers
        nodes = torch.rand(n_nodes, model.convs[0].linear.in_features - 2, dtype=torch.float64)
        edges = torch.rand(n_edges, 2, dtype=torch.float64)
        first, last = model.logit[0], model.logit[2]

        widths = [nodes.shape[1]] + [conv.linear.out_features for conv in model.convs]
        into = [n_edges] * (len(model.convs) - 1) + [n_servers]  # edges into the targets (the last: servers)
        messages = [torch.empty(rows, width, dtype=torch.float64) for rows, width in zip(into, widths[1:])]
        embeddings = [torch.empty(n_nodes, width, dtype=torch.float64) for width in widths[1:]]
        per_server = torch.rand(n_servers, widths[-1] + widths[0], dtype=torch.float64)
        hidden = torch.empty(n_servers, first.out_features, dtype=torch.float64)

        def products() -> None:  # into kept buffers, as the decision does
            h = nodes
            for layer, conv in enumerate(model.convs):
                weight, width = conv.linear.weight, h.shape[1]
                torch.addmm(conv.linear.bias, edges[:into[layer]], weight[:, width:].t(), out=messages[layer])
                h = torch.mm(h, weight[:, :width].t(), out=embeddings[layer])
            torch.addmm(first.bias, per_server, first.weight[:, -per_server.shape[1]:].t(), out=hidden)
            torch.addmm(last.bias, hidden, last.weight.t())

        with torch.no_grad():
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                products()
                times.append(1000 * (time.perf_counter() - start))
        print(f"| {topology} | {n_nodes:,} | {n_edges:,} | {statistics.median(times):.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", type=int, default=None, metavar="N",
                        help="replay the committed gnn_ppo runs instead (N a submission; 0: all)")
    parser.add_argument("--floor", action="store_true", help="time a decision's dense products alone instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.floor:
        products_floor()
        return
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
