"""Two dcbench installations timed side by side, alternated (issue #49).

Runs ``dcbench bench`` of each executable in turn, A B A B …, ``--rounds``
times, and prints per cell the median µs per request of each and their
ratio (B over A). Alternating spreads the load of a shared machine over
both, so that the ratio holds where the absolute times do not:

    python benchmarks/side_by_side.py --a OLD/.venv/bin/dcbench --b .venv/bin/dcbench \\
        -t tiered:32,1x4 -t tiered:32,1x4,pods=8,racks=8 -a tetris -a nalb --rounds 3

``--reference CMD`` also times another simulator's loop each round (a
command printing ``<number> req/s``, such as the tiered papers' own code
under ``time_reference.py``) and prints B's requests/s over its.
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics
import subprocess


def bench(executable: str, topologies: list[str], allocators: list[str], requests: int, repeat: int,
          workload: str | None) -> dict[tuple[str, str], float]:
    """(topology, allocator) -> µs per request, from one ``dcbench bench`` (options repeated, as older ones take
    them)."""
    command = [executable, "bench", "-n", str(requests), "--repeat", str(repeat)]
    command += [option for topology in topologies for option in ("-t", topology)]
    command += [option for allocator in allocators for option in ("-a", allocator)]
    if workload:
        command += ["-w", workload]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    cells = {}
    for line in out.splitlines():
        row = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(row) == 7 and row[0] not in ("topology", "---"):
            cells[row[0], row[2]] = float(row[6].replace(",", ""))
    return cells


def reference(command: str) -> float:
    """Requests per second that ``command`` prints."""
    out = subprocess.run(shlex.split(command), capture_output=True, text=True, check=True).stdout
    return float(re.findall(r"([\d.]+) req/s", out)[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="the first dcbench executable (the baseline)")
    parser.add_argument("--b", required=True, help="the second dcbench executable")
    parser.add_argument("-t", "--topology", dest="topologies", action="append", help="repeated (default: "
                        "tiered:32,1x4 at 64 and 1,024 servers)")
    parser.add_argument("-a", "--allocator", dest="allocators", action="append", help="repeated (default: tetris, "
                        "nalb, nulb, random, bestfit)")
    parser.add_argument("-w", "--workload", default=None)
    parser.add_argument("-n", "--requests", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell in each bench, the best kept")
    parser.add_argument("--rounds", type=int, default=3, help="alternations A B")
    parser.add_argument("--reference", default=None, help="a command printing '<number> req/s'")
    args = parser.parse_args()
    args.topologies = args.topologies or ["tiered:32,1x4", "tiered:32,1x4,pods=8,racks=8"]
    args.allocators = args.allocators or ["tetris", "nalb", "nulb", "random", "bestfit"]
    times: dict[str, list[dict[tuple[str, str], float]]] = {"a": [], "b": []}
    ratios = []
    for _ in range(args.rounds):
        for side in ("a", "b"):
            times[side].append(bench(getattr(args, side), args.topologies, args.allocators, args.requests,
                                     args.repeat, args.workload))
        if args.reference:
            ratios.append((1e6 / times["b"][-1].get(("tiered:32,1x4", "tetris"), float("nan")),
                           reference(args.reference)))
    print("| topology | allocator | A µs/request | B µs/request | B / A |")
    print("|---|---|---:|---:|---:|")
    for cell in times["a"][0]:
        a = statistics.median(run[cell] for run in times["a"])
        b = statistics.median(run[cell] for run in times["b"])
        print(f"| {cell[0]} | {cell[1]} | {a:,.1f} | {b:,.1f} | {b / a:.2f} |")
    if ratios:
        print()
        print("| round | B tetris requests/s | reference requests/s | ratio |")
        print("|---:|---:|---:|---:|")
        for k, (ours, theirs) in enumerate(ratios, 1):
            print(f"| {k} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.1f} |")


if __name__ == "__main__":
    main()
