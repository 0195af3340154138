"""How many seeds separate the leading entries of nara2022, scenario by scenario?

Sweeps the suite's 12 scenarios with more seeds than its five, for the leading entries of the committed leaderboard,
then ranks the first K seeds with the leaderboard's own statistics (`dcbench.publishing.ranking`) for several K: in
how many scenarios one entry is significantly better than every other, and whether the aggregate separates the two
leaders. Prints a Markdown table.

    python benchmarks/seeds_to_separate.py --seeds 30 --out results/seeds-to-separate
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from dcbench.publishing.ranking import rank_suite
from dcbench.registry import get_registry

ENTRIES = ("gnn_ppo", "tetris:fit_last=yes", "bestfit:local=yes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("results/seeds-to-separate"))
    args = parser.parse_args()
    suite = get_registry().entries("suite")["nara2022"]
    command = [sys.executable, "-m", "dcbench", "sweep", "-n", "128", "--seeds", str(args.seeds), "--out",
               str(args.out), "-q", "-w", suite.scenarios[0].workload]
    for scenario in suite.scenarios:
        command += ["-t", scenario.topology]
    for entry in ENTRIES:
        command += ["-a", entry]
    subprocess.run(command, check=True)
    rows = pq.read_table(args.out / "summary.parquet").to_pylist()
    print(f"| seeds per scenario | scenarios with a significant winner (of {len(suite.scenarios)}) "
          "| largest gap between a tied scenario's two leaders | the two leaders separated over all scenarios |")
    print("|---:|---:|---:|---|")
    for seeds in sorted({5, 10, 20, args.seeds}):
        values: dict[str, dict[str, dict[int, float]]] = {}
        for row in rows:
            if row["seed"] < seeds:
                values.setdefault(row["allocator"], {}).setdefault(row["scenario"], {})[row["seed"]] = \
                    row["acceptance_ratio"]
        scenarios = sorted({row["scenario"] for row in rows})
        ranking = rank_suite(values, scenarios, True, None)
        won = sum(any(r.win for r in ranked) for ranked in ranking.scenarios.values())
        gaps = [abs(ranked[0].value.mean - ranked[1].value.mean) for ranked in ranking.scenarios.values()
                if not any(r.win for r in ranked)]
        print(f"| {seeds} | {won} | {max(gaps, default=0):.3f} | {'yes' if ranking.leaders_separated else 'no'} |")


if __name__ == "__main__":
    main()
