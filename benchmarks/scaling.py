"""Time per request against the number of servers (#34, docs/performance.md).

Whole runs as ``dcbench bench`` times them (4,096 requests of the
topology's own workload, seed 0) on the tiered fabric of the papers
(32 channels, 1:4) at 64, 1,024, 8,192 and 65,536 servers. With the default
``--repeat 1`` every run starts with an empty path catalogue, so the first
use of every path is timed. Writes the table (Markdown, on stdout, and CSV)
and the log-log figure; needs matplotlib (``pip install 'dcbench[plot]'``):

    python benchmarks/scaling.py
    python benchmarks/scaling.py --from-csv   # the figure again from the CSV
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dcbench.harness import get_registry  # noqa: E402
from dcbench.running.bench import run_bench  # noqa: E402

TOPOLOGIES = ("tiered:32,1x4", "tiered:32,1x4,pods=8,racks=8", "tiered:32,1x4,pods=16,racks=32",
              "tiered:32,1x4,pods=64,racks=64")
ALLOCATORS = ("tetris", "nalb", "nulb", "random")
GROWTH_AIM = 4.0  # #34: time per request from 64 to 65,536 servers grows at most 4×
HERE = Path(__file__).resolve().parent


def draw(rows: list[dict], path: Path) -> None:
    """Left, µs per request against servers (log-log); right, each
    allocator's time relative to its own on the smallest fabric, with the
    4× aim."""
    figure, (absolute, relative) = plt.subplots(1, 2, figsize=(10, 4.2))
    sizes = sorted({row["servers"] for row in rows})
    for allocator in dict.fromkeys(row["allocator"] for row in rows):
        mine = sorted((row["servers"], row["us_per_request"]) for row in rows if row["allocator"] == allocator)
        servers, micros = zip(*mine)
        absolute.plot(servers, micros, marker="o", label=allocator)
        relative.plot(servers, [m / micros[0] for m in micros], marker="o", label=allocator)
    relative.plot(sizes, [size / sizes[0] for size in sizes], color="0.6", linestyle=":",
                  label="proportional to servers")
    relative.axhline(GROWTH_AIM, color="0.4", linestyle="--", label=f"the aim: at most {GROWTH_AIM:g}×")
    relative.set_ylim(0.5, 2 * GROWTH_AIM)
    absolute.set_ylabel("µs per request (whole run, one core)")
    relative.set_ylabel(f"time per request / its own at {sizes[0]:,} servers")
    absolute.set_title("Time per request")
    relative.set_title("Growth from the smallest fabric")
    for axes in (absolute, relative):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xticks(sizes, [f"{size:,}" for size in sizes])
        axes.minorticks_off()
        axes.set_xlabel("servers (tiered:32,1x4, more pods and racks)")
        axes.grid(True, alpha=0.3)
    relative.set_yticks([0.5, 1, 2, 4, 8], ["0.5", "1", "2", "4", "8"])
    ticks = [100, 200, 400, 800, 1600, 3200]
    absolute.set_yticks(ticks, [f"{tick:,}" for tick in ticks])
    micros = [row["us_per_request"] for row in rows]
    absolute.set_ylim(min(micros) / 1.3, max(micros) * 1.3)
    absolute.legend(fontsize="small")
    relative.legend(fontsize="small", loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell, the best kept (default 1)")
    parser.add_argument("--csv", type=Path, default=HERE.parent / "docs" / "figures" / "performance" / "scaling.csv")
    parser.add_argument("--figure", type=Path, default=HERE.parent / "docs" / "figures" / "performance" /
                        "scaling.png")
    parser.add_argument("--from-csv", action="store_true", help="draw the figure from --csv, measuring nothing")
    args = parser.parse_args()
    if args.from_csv:
        with args.csv.open() as file:
            rows = [{**row, "servers": int(row["servers"]), "us_per_request": float(row["us_per_request"])}
                    for row in csv.DictReader(file)]
        draw(rows, args.figure)
        return
    print(f"load average {os.getloadavg()[0]:.2f} at the start\n")
    rows = run_bench(get_registry(), list(ALLOCATORS), list(TOPOLOGIES), 4096, args.repeat, print)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    with args.csv.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    draw(rows, args.figure)
    print(f"wrote {args.csv} and {args.figure}")


if __name__ == "__main__":
    main()
