"""How long `dcbench bound` takes (docs/bounds.md):

    python benchmarks/bounds.py [--suite nara2022] [--seeds K] [--relaxation lp|milp] [--scenario S]
                                [--requests N ...]

Solves the bound of every scenario of the suite for its first K seeds (default: all) in this process, one at a
time, and prints a Markdown row per scenario: the mean bound, the model's size (requests, held pairs) and the
mean and largest solve time in seconds, then the total. Times are the machine's; nothing is cached.
``--requests N`` solves only each episode's first N requests, once per N given: how the time grows with the
model's size where the whole episode is too big (nara2022-large).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def prefix(sequence, n: int | None):
    """The first ``n`` requests of a pool sequence (all where None)."""
    import dataclasses

    if n is None:
        return sequence
    cut = {name: getattr(sequence, name)[:n] for name in ("gaps", "holding", "demand")}
    measured = None if sequence.measured is None else sequence.measured[:n]
    return dataclasses.replace(sequence, measured=measured, **cut)


def rows(suite: str, seeds: int | None, relaxation: str, scenario_label: str | None = None,
         requests: int | None = None) -> list[dict]:
    """One dict per scenario: its mean bound, model size and solve times.

    Args:
        suite: A registered suite of pool requests.
        seeds: Its first K seeds (None: all).
        relaxation: "lp" or "milp".
        scenario_label: Only this scenario (None: all).
        requests: Only each episode's first N requests (None: all).
    Returns:
        The rows, in the suite's order."""
    from dcbench.harness import Runner, get_registry
    from dcbench.plugins.bounds.pool import model_of, pool_bound, pool_instance

    runner = Runner()
    found = []
    for scenario in get_registry().get("suite", suite).scenarios:
        if scenario_label is not None and scenario.label != scenario_label:
            continue
        plan = runner.resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
        bounds, times, pairs = [], [], 0
        for seed in scenario.seeds[:seeds]:
            sequence = prefix(plan.workload_model.generate(plan.network.private_copy(), plan.requests,
                                                           np.random.default_rng(seed).spawn(2)[0]), requests)
            started = time.perf_counter()
            instance = pool_instance(plan.network, sequence)
            bounds.append(pool_bound(instance, relaxation).ratio)
            times.append(time.perf_counter() - started)
            pairs = max(pairs, len(model_of(instance).pairs))
        found.append({"scenario": scenario.label, "bound": float(np.mean(bounds)),
                      "requests": requests or plan.requests,
                      "pairs": pairs, "mean_s": float(np.mean(times)), "max_s": float(np.max(times)),
                      "total_s": float(np.sum(times))})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="nara2022")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--relaxation", choices=("lp", "milp"), default="lp")
    parser.add_argument("--scenario", default=None, help="only this scenario")
    parser.add_argument("--requests", type=int, nargs="*", default=[None], help="only the first N requests")
    args = parser.parse_args()
    found = [row for n in args.requests for row in rows(args.suite, args.seeds, args.relaxation, args.scenario, n)]
    print("| scenario | bound | requests | held pairs | mean s | max s |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in found:
        print(f"| {row['scenario']} | {row['bound']:.3f} | {row['requests']} | {row['pairs']:,} | "
              f"{row['mean_s']:.2f} | {row['max_s']:.2f} |")
    print(f"\ntotal: {sum(row['total_s'] for row in found):.1f} s ({args.relaxation})")


if __name__ == "__main__":
    main()
