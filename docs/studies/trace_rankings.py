"""Rankings on real requests beside the synthetic suites on the same fabrics, from the leaderboard's tables.

The trace suites replay Alibaba's openb pods; the synthetic ones draw the papers' requests. Each column is
one scenario of the built leaderboard (`leaderboard/tables/SUITE-scenarios.csv`), each cell an entry's
rank there (entries the paired tests cannot separate share one) and its mean with the 95 % interval:

    python docs/studies/trace_rankings.py [--leaderboard leaderboard]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

# (suite, scenario, heading, ranking column): the trace scenarios beside the synthetic ones on the same fabric
TIERED = (("nara2022", "32-1x4", "uniform, 32-1x4", "acceptance_ratio"),
          ("openb2023", "tiered-load8", "openb ×8", "acceptance_ratio"),
          ("openb2023", "tiered-load16", "openb ×16", "acceptance_ratio"))
OPTICAL = (("odcn2025", "16x32-load66", "vmjobs, 16 ToRs, load 66", "blocking_probability"),
           ("openb2023-ocs", "ocs-load32", "openb ×32", "blocking_probability"),
           ("openb2023-ocs", "ocs-load64", "openb ×64", "blocking_probability"))


def cells(leaderboard: Path, suite: str, scenario: str, column: str) -> dict[str, tuple[int, str]]:
    """The rank and ``rank: mean ± half-width`` by entry name, in one scenario of a suite's built tables."""
    with open(leaderboard / "tables" / f"{suite}-scenarios.csv", newline="") as table:
        rows = [row for row in csv.DictReader(table) if row["scenario"] == scenario]
    if not rows:
        raise SystemExit(f"no scenario {scenario!r} in {suite}'s tables: build the leaderboard first")
    return {row["name"]: (int(row["rank"]), f"{row['rank']}: {float(row[column]):.3f} ± "
                                            f"{float(row[column + '_ci95']):.3f}") for row in rows}


def table(leaderboard: Path, columns) -> str:
    found = [cells(leaderboard, suite, scenario, column) for suite, scenario, _, column in columns]
    names = sorted({name for column in found for name in column},
                   key=lambda name: (min(c[name][0] for c in found if name in c), name))
    lines = ["| entry | " + " | ".join(heading for _, _, heading, _ in columns) + " |",
             "|---|" + "---|" * len(columns)]
    lines += [f"| {name} | " + " | ".join(column[name][1] if name in column else "—" for column in found) + " |"
              for name in names]
    return "\n".join(lines) + "\n"


def tables(leaderboard: Path) -> str:
    """Both tables, as the workloads page shows them."""
    return (f"Acceptance ratio, 64-server tiered fabric:\n\n{table(leaderboard, TIERED)}\n"
            f"Blocking probability, 16-ToR optical fabric:\n\n{table(leaderboard, OPTICAL)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaderboard", type=Path, default=Path("leaderboard"))
    print(tables(parser.parse_args().leaderboard), end="")


if __name__ == "__main__":
    main()
