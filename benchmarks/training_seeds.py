"""Every training seed of a learned agent on a suite scenario's test seeds, beside the best baseline.

Reads each candidate checkpoint's `.json` record (its training seed and the validation score its trainer recorded
on the held-out seeds from 2,000,000, `selected`), marks the candidate that validation alone selects, then runs
every candidate and the baselines on the scenario's test seeds (`dcbench sweep` with the suite scenario's topology,
workload and requests) and prints a Markdown table: per candidate its validation score, its test score (mean and
95% interval over the test seeds) and its paired difference from the best baseline, then how many training seeds
beat that baseline. The runs go to ``--out`` and are reused when the command is run again.

    python benchmarks/training_seeds.py -s odcn2025 -c 64x128-load1320 -b jcb \\
        plugins/allocators/a2c_multistep/checkpoints/ocs-64.pt benchmarks/training-seeds/ocs-64-seed*.pt
    python benchmarks/training_seeds.py -s nara2022 -c 8-1x1 -b bestfit:local=no -b tetris:fit_last=yes \\
        plugins/allocators/gnn_ppo/checkpoints/tiered-8-1x1.pt benchmarks/training-seeds/tiered-8-1x1-seed*.pt
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from dcbench.envs import scenario_episode
from dcbench.registry import get_registry
from dcbench.running.stats import format_ci, mean_ci
from dcbench.running.sweep import resolved_allocator


def read_candidates(paths: list[Path], higher: bool) -> list[tuple[int, Path, float, str]]:
    """(training seed, path, validation score, allocator spec) per checkpoint, from its `.json` record, by seed."""
    candidates = []
    for path in paths:
        record = json.loads(path.with_suffix(".json").read_text())
        validation = record["selected"]["acceptance" if higher else "blocking"]
        candidates.append((record["seed"], path, validation, f"{record['allocator']}:checkpoint={path}"))
    return sorted(candidates)


def selected(candidates: list[tuple[int, Path, float, str]], higher: bool) -> tuple[int, Path, float, str]:
    """The candidate with the best validation score (the first of equals): the test seeds play no part."""
    return (max if higher else min)(candidates, key=lambda c: c[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-s", "--suite", required=True)
    parser.add_argument("-c", "--scenario", required=True, help="the scenario's name in the suite")
    parser.add_argument("-b", "--baseline", action="append", required=True, help="a baseline spec; repeat it")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default results/training-seeds-…)")
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("checkpoints", nargs="+", type=Path)
    args = parser.parse_args()

    registry = get_registry()
    suite = registry.entries("suite")[args.suite]
    scenario = next(s for s in suite.scenarios if s.name == args.scenario)
    higher = suite.higher_is_better
    metric = suite.primary_metric
    out = args.out or Path(f"results/training-seeds-{args.suite}-{args.scenario}")

    candidates = read_candidates(args.checkpoints, higher)
    chosen = selected(candidates, higher)

    measured, _ = scenario_episode(scenario)  # sweep's -n counts the requests after the warm-up
    command = [sys.executable, "-m", "dcbench", "sweep", "-t", scenario.topology, "-w", scenario.workload,
               "-n", str(measured), "--seeds", str(len(scenario.seeds)), "--out", str(out),
               "-j", str(args.jobs), "-q"]
    for spec in [c[3] for c in candidates] + args.baseline:
        command += ["-a", spec]
    subprocess.run(command, check=True, stdout=sys.stderr)

    scores: dict[str, dict[int, float]] = {}
    for row in pq.read_table(out / "summary.parquet").to_pylist():
        if row["seed"] in scenario.seeds:
            scores.setdefault(row["allocator"], {})[row["seed"]] = row[metric]

    def test(spec: str) -> tuple[float, float]:
        return mean_ci(seeds(spec).values())[:2]

    def seeds(spec: str) -> dict[int, float]:
        return scores[resolved_allocator(registry, spec)]

    best = (max if higher else min)(args.baseline, key=lambda b: test(b)[0])
    sign = 1 if higher else -1
    word = "acceptance" if higher else "blocking"
    print(f"`{args.suite}` scenario `{args.scenario}`, {word} on test seeds "
          f"{scenario.seeds[0]}..{scenario.seeds[-1]} (mean ± 95% interval); validation: the trainer's record.\n")
    print(f"| training seed | checkpoint | validation {word} | test {word} | minus `{best}` (paired) | |")
    print("|---:|---|---:|---:|---:|---|")
    beat = significant = worse = 0
    for seed, path, validation, spec in candidates:
        mean, half = test(spec)
        diff, dhalf = mean_ci(seeds(spec)[s] - seeds(best)[s] for s in scenario.seeds)[:2]
        beat += sign * diff > 0
        significant += sign * diff > dhalf
        worse += sign * diff < -dhalf
        print(f"| {seed} | `{path.name}` | {validation:.4f} | {format_ci(mean, half, 4)} | "
              f"{format_ci(diff, dhalf, 4)} | {'selected' if path == chosen[1] else ''} |")
    for baseline in args.baseline:
        mark = "best baseline" if baseline == best else ""
        print(f"| | `{baseline}` | | {format_ci(*test(baseline), 4)} | | {mark} |")
    print(f"\nTraining beat `{best}` on the test mean in {beat} of {len(candidates)} seeds; the paired 95% interval "
          f"shows it better in {significant} and worse in {worse}.")


if __name__ == "__main__":
    main()
