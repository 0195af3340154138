"""How long `dcbench bound` takes (docs/bounds.md):

    python benchmarks/bounds.py [--suite nara2022] [--seeds K] [--relaxation lp|milp]

Solves the bound of every scenario of the suite for its first K seeds (default: all) in this process, one at a
time, and prints a Markdown row per scenario: the mean bound, the model's size (requests, held pairs) and the
mean and largest solve time in seconds, then the total. Times are the machine's; nothing is cached.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def rows(suite: str, seeds: int | None, relaxation: str) -> list[dict]:
    """One dict per scenario: its mean bound, model size and solve times.

    Args:
        suite: A registered suite of pool requests.
        seeds: Its first K seeds (None: all).
        relaxation: "lp" or "milp".
    Returns:
        The rows, in the suite's order."""
    from dcbench.harness import Runner, get_registry
    from dcbench.plugins.bounds.pool import model_of, pool_bound, pool_instance

    runner = Runner()
    found = []
    for scenario in get_registry().get("suite", suite).scenarios:
        plan = runner.resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
        bounds, times, pairs = [], [], 0
        for seed in scenario.seeds[:seeds]:
            sequence = plan.workload_model.generate(plan.network.private_copy(), plan.requests,
                                                    np.random.default_rng(seed).spawn(2)[0])
            started = time.perf_counter()
            instance = pool_instance(plan.network, sequence)
            bounds.append(pool_bound(instance, relaxation).ratio)
            times.append(time.perf_counter() - started)
            pairs = max(pairs, len(model_of(instance).pairs))
        found.append({"scenario": scenario.label, "bound": float(np.mean(bounds)), "requests": plan.requests,
                      "pairs": pairs, "mean_s": float(np.mean(times)), "max_s": float(np.max(times)),
                      "total_s": float(np.sum(times))})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="nara2022")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--relaxation", choices=("lp", "milp"), default="lp")
    args = parser.parse_args()
    found = rows(args.suite, args.seeds, args.relaxation)
    print("| scenario | bound | requests | held pairs | mean s | max s |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in found:
        print(f"| {row['scenario']} | {row['bound']:.3f} | {row['requests']} | {row['pairs']:,} | "
              f"{row['mean_s']:.2f} | {row['max_s']:.2f} |")
    print(f"\ntotal: {sum(row['total_s'] for row in found):.1f} s ({args.relaxation})")


if __name__ == "__main__":
    main()
