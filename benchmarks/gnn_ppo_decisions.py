"""Per-decision time of the shipped gnn_ppo agent (docs/performance.md).

A decision is one forward pass of the network over the whole graph, batch
of one, one thread: `GnnPpoAllocator.choose`, timed around every call of a
run after a short warm-up run. Run from a checkout with dcbench installed:

    python benchmarks/gnn_ppo_decisions.py
    python benchmarks/gnn_ppo_decisions.py --check 0   # replay the committed gnn_ppo runs (0: all; N: N a submission)
    python benchmarks/gnn_ppo_decisions.py --routes    # 65,536 servers: a decision's parts, the routes to a faster one

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

import numpy as np
import torch

from dcbench.harness import Runner
from dcbench.plugins.allocators.gnn_ppo.allocator import GnnPpoAllocator
from dcbench.plugins.allocators.gnn_ppo.argmax import BoundedArgmax

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


def products_ms(model, network, repeats: int = 21) -> float:
    """The median time of a decision's dense products alone (`decision_logits`' matrix products on inputs of their
    shapes, into kept buffers, in the model's dtype, one thread): what no reordering of the rest goes below."""
    dtype = model.logit[0].weight.dtype
    n_nodes, n_edges, n_servers = network.n_nodes, 2 * network.n_links, network.n_servers
    nodes = torch.rand(n_nodes, model.convs[0].linear.in_features - 2, dtype=dtype)
    edges = torch.rand(n_edges, 2, dtype=dtype)
    first, last = model.logit[0], model.logit[2]
    widths = [nodes.shape[1]] + [conv.linear.out_features for conv in model.convs]
    into = [n_edges] * (len(model.convs) - 1) + [n_servers]  # edges into the targets (the last: servers)
    messages = [torch.empty(rows, width, dtype=dtype) for rows, width in zip(into, widths[1:])]
    embeddings = [torch.empty(n_nodes, width, dtype=dtype) for width in widths[1:]]
    per_server = torch.rand(n_servers, widths[-1] + widths[0], dtype=dtype)
    hidden = torch.empty(n_servers, first.out_features, dtype=dtype)

    def products() -> None:
        h = nodes
        for layer, conv in enumerate(model.convs):
            weight, width = conv.linear.weight, h.shape[1]
            torch.addmm(conv.linear.bias, edges[:into[layer]], weight[:, width:].t(), out=messages[layer])
            h = torch.mm(h, weight[:, :width].t(), out=embeddings[layer])
        torch.addmm(first.bias, per_server, first.weight[:, -per_server.shape[1]:].t(), out=hidden)
        torch.addmm(last.bias, hidden, last.weight.t())

    return median_ms(products, repeats)


def median_ms(call, repeats: int) -> float:
    times = []
    with torch.no_grad():
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def routes(decisions: int = 24) -> None:
    """At 65,536 servers, time a decision's parts and the routes to a faster one on the first decisions of a run
    (seed 0): the observation, the shipped float64 pass, its dense products alone, the float32 model as trained
    (and how often it picks the float64 pass's server), torch.compile of the shipped pass, and `BoundedArgmax` on
    the decisions it takes (a request's later servers); and count the distinct node-feature rows, which bound any
    computation on distinct rows. A pass's time is the median of three passes over the decisions, per decision."""
    from dcbench.plugins.allocators.gnn_ppo.model import as_tensors

    topology = TOPOLOGIES[-1][0]
    observations, observe_ms, allocators = [], [], []
    untimed = GnnPpoAllocator.choose

    def recording(self, builder, allowed):
        start = time.perf_counter()
        observation = self.features.observe(builder, self._state)
        observe_ms.append(1000 * (time.perf_counter() - start))
        if len(observations) < decisions:
            observations.append({k: v[None] for k, v in observation.items()})
            allocators[:] = [self]
        return untimed(self, builder, allowed)

    GnnPpoAllocator.choose = recording
    runner = Runner()
    runner.run("gnn_ppo", topology, requests=16, seed=0)
    GnnPpoAllocator.choose = untimed
    allocator = allocators[0]
    shipped, float32, edge_index = allocator.greedy.model, allocator.model, allocator.edge_index
    inputs = [[x[0] for x in as_tensors(observation)] for observation in observations]

    def per_decision(decide, dtype) -> float:
        def every_decision():
            for nodes, edges, globals_, mask in inputs:
                decide(nodes.to(dtype), edges.to(dtype), globals_.to(dtype), mask, edge_index)
        return median_ms(every_decision, 3) / len(inputs)

    with torch.no_grad():
        same = sum(int(torch.argmax(allocator.greedy.logits(observation, edge_index)[0]))
                   == int(torch.argmax(float32.decision_logits(*x, edge_index))) for observation, x in
                   zip(observations, inputs))
    rows = [("observation (PoolFeatures.observe)", statistics.median(observe_ms), ""),
            ("logits, float64 as shipped", per_decision(shipped.decision_logits, torch.float64), ""),
            ("its dense products alone", products_ms(shipped, runner.network(topology)[1]), ""),
            ("logits, float32 as trained", per_decision(float32.decision_logits, torch.float32),
             f"float64's server in {same} of {len(inputs)}")]
    try:
        compiled = torch.compile(shipped.decision_logits)
        per_decision(compiled, torch.float64)  # compiles it
        rows.append(("logits, float64, torch.compile", per_decision(compiled, torch.float64), ""))
    except Exception as error:  # noqa: BLE001 - inductor needs a C++ compiler; the table says why it is missing
        rows.append(("logits, float64, torch.compile", float("nan"), f"not run: {type(error).__name__}"))
    bounded = BoundedArgmax(shipped, edge_index, len(inputs[0][1]), len(inputs[0][0]))
    with torch.no_grad():
        servers = [bounded(*x) for x in inputs]
        later = [x for x, server in zip(inputs, servers) if server is not None]
        same = sum(server == int(torch.argmax(allocator.greedy.logits(observation, edge_index)[0]))
                   for server, observation in zip(servers, observations) if server is not None)

        def every_later_decision():
            for x in later:
                bounded(*x)

        rows.append(("arg-max by bounds, a request's later servers", median_ms(every_later_decision, 3) / len(later),
                     f"float64's server in {same} of {len(later)}"))
    distinct = statistics.median(len(np.unique(nodes.numpy(), axis=0)) for nodes, *_ in inputs)
    print(f"{topology}: {len(inputs[0][0]):,} nodes, {len(inputs)} decisions; "
          f"distinct node-feature rows per decision (median): {distinct:,.0f}")
    print("| part or route | ms/decision | |")
    print("|---|---:|---|")
    for name, ms, remark in rows:
        print(f"| {name} | {ms:.1f} | {remark} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", type=int, default=None, metavar="N",
                        help="replay the committed gnn_ppo runs instead (N a submission; 0: all)")
    parser.add_argument("--routes", action="store_true",
                        help="at 65,536 servers, time a decision's parts and the routes to a faster one instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.routes:
        routes()
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
