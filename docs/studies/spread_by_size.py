"""Where accepted requests land, by their size: the tiered papers' spread figure, from a sweep's run folders.

The journal paper (Shabka & Zervas, 2022) plots how spread an accepted request is (one server, one rack,
one pod, across pods) against its size, the fewest servers that could hold it. The committed
submissions keep one summary row per run, so this reads the per-request tables of a sweep instead:

    dcbench sweep -s nara2022 -a tetris,nalb,nulb,random,gnn_ppo
    python docs/studies/spread_by_size.py results/nara2022 --out docs/figures/nara2022/spread_by_size.png

Each bar pools the measured requests of every seed; sizes of 8 servers or more share the last bar.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

LEVELS = ("server", "rack", "pod", "cross_pod")
SIZES = range(1, 9)
ALLOCATORS = ("gnn_ppo", "tetris", "nalb")
TOPOLOGIES = ("8-1x16", "32-1x4")


def shares(sweep: Path, allocator: str, scenario: str) -> dict[int, dict[str, float]]:
    """Share of accepted measured requests at each spread level, by size bracket (1..8), over every seed."""
    counts: Counter[tuple[int, str]] = Counter()
    for run in pq.read_table(sweep / "summary.parquet", columns=["run_id", "scenario", "allocator"]).to_pylist():
        if run["scenario"] != scenario or run["allocator"].split(":")[0] != allocator:
            continue
        requests = pq.read_table(sweep / run["run_id"] / "requests.parquet",
                                 columns=["size", "outcome", "spread", "measured"]).to_pylist()
        counts.update((min(r["size"], SIZES[-1]), r["spread"]) for r in requests
                      if r["measured"] and r["outcome"] == "accepted")
    found = {}
    for size in SIZES:
        total = sum(counts[size, level] for level in LEVELS)
        if total:
            found[size] = {level: counts[size, level] / total for level in LEVELS}
    return found


def draw(sweep: Path, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(TOPOLOGIES), len(ALLOCATORS), figsize=(10, 5.5), sharex=True, sharey=True)
    colours = ("#1b9e77", "#7570b3", "#e7298a", "#d95f02")
    for row, scenario in enumerate(TOPOLOGIES):
        for column, allocator in enumerate(ALLOCATORS):
            axis, found = axes[row][column], shares(sweep, allocator, scenario)
            bottom = [0.0] * len(found)
            for level, colour in zip(LEVELS, colours):
                heights = [found[size][level] for size in found]
                axis.bar(list(found), heights, bottom=bottom, color=colour, label=level.replace("_", " "))
                bottom = [b + h for b, h in zip(bottom, heights)]
            axis.set_title(f"{allocator}, {scenario}", fontsize=9)
            axis.set_xticks(list(SIZES), [*map(str, SIZES[:-1]), "8+"])
    for axis in axes[-1]:
        axis.set_xlabel("request size (servers' worth)")
    for row in axes:
        row[0].set_ylabel("share of accepted")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="a nara2022 sweep's folder (its summary.parquet and run folders)")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args()
    draw(args.sweep, args.out)


if __name__ == "__main__":
    main()
