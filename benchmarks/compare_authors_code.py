"""dcbench's tiered baselines as published beside the authors' own code (docs/reproduction-nara2022.md):

    python benchmarks/compare_authors_code.py [--sweep DIR] [--same-requests]

Prints a Markdown row per topology: the acceptance of the authors' code (the mean of its five episodes, from
benchmarks/reference/nara2022-authors-code.csv) beside that of the same heuristic with published=yes on the suite
nara2022-published (the mean of seeds 0..4), and the mean absolute difference (MAE) per heuristic. The suite is
swept into --sweep DIR unless that folder holds its sweep already.

--same-requests replays the authors' own requests instead: their environment draws them with Python's random
seeded with rnd_seed 10 (three randint draws a request: CPU 1..128, memory 1..128, holding 1..30; its constructor
draws one request that no episode offers), five consecutive 128-request episodes. Tetris, NALB and NULB then
decide as the authors' code does, request by request; random draws its own servers. The authors' agent lives
through its five episodes, so the Tetris penalty's anchor is carried from one to the next here too.
"""

from __future__ import annotations

import argparse
import csv
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HEURISTICS = ("tetris", "nalb", "nulb", "random")
SUITE = "nara2022-published"
AUTHORS = Path(__file__).resolve().parent / "reference" / "nara2022-authors-code.csv"


def authors_results(path: Path = AUTHORS) -> dict[tuple[str, str], list[float]]:
    """(scenario, heuristic) -> the acceptance of each of the authors' episodes."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    results: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        results.setdefault((row["scenario"], row["heuristic"]), []).append(float(row["acceptance"]))
    return results


def authors_requests(episodes: int = 5, requests: int = 128, rnd_seed: int = 10) -> list[np.ndarray]:
    """The authors' request stream: per episode, requests × (cpu, mem, holding)."""
    draw = random.Random(rnd_seed)
    stream = [(draw.randint(1, 128), draw.randint(1, 128), draw.randint(1, 30))
              for _ in range(1 + episodes * requests)][1:]
    return [np.array(stream[e * requests:(e + 1) * requests], dtype=np.float64) for e in range(episodes)]


def swept(sweep: Path) -> dict[tuple[str, str], list[float]]:
    """(scenario, heuristic) -> dcbench's acceptance per seed on the suite, swept into ``sweep`` if not there."""
    summary = sweep / "summary.parquet"
    if not summary.exists():
        forms = ",".join(f"{h}:published=yes" for h in HEURISTICS)
        subprocess.run([sys.executable, "-m", "dcbench", "sweep", "-s", SUITE, "-a", forms, "--out", str(sweep),
                        "-q"], check=True)
    import pyarrow.parquet as pq

    results: dict[tuple[str, str], list[float]] = {}
    for row in pq.read_table(summary).to_pylist():
        heuristic = row["allocator"].split(":")[0]
        if "published=yes" in row["allocator"]:
            results.setdefault((row["scenario"], heuristic), []).append(row["acceptance_ratio"])
    return results


def replayed(episodes: list[np.ndarray]) -> dict[tuple[str, str], list[float]]:
    """(scenario, heuristic) -> dcbench's acceptance on each of the authors' episodes."""
    from dcbench.engine.simulation import simulate
    from dcbench.harness import get_registry
    from dcbench.model.requests import RequestSequence
    from dcbench.running.runner import Runner

    registry = get_registry()
    runner = Runner(registry)
    suite = registry.entries("suite")[SUITE]
    results: dict[tuple[str, str], list[float]] = {}
    for scenario in suite.scenarios:
        for heuristic in HEURISTICS:
            plan = runner.resolve(f"{heuristic}:published=yes", scenario.topology, scenario.workload, 128)
            options = plan.workload_model.generate(plan.network, 1, np.random.default_rng(0))
            allocator = plan.new_allocator()
            anchor = -1
            for number, episode in enumerate(episodes):
                sequence = RequestSequence(
                    kind="pool", gaps=np.ones(len(episode)), holding=episode[:, 2], demand=episode[:, :2],
                    connectivity=options.connectivity, wait_until_fits=options.wait_until_fits,
                    time_step=options.time_step, allowed_servers=options.allowed_servers,
                    departures_within=options.departures_within, keep_useless=options.keep_useless)
                carry_anchor(allocator, anchor)
                tables = simulate(plan.network, sequence, allocator, np.random.default_rng(number))
                anchor = getattr(allocator, "_last_pick", -1)
                accepted = float((tables.requests["outcome"] == "accepted").mean())
                results.setdefault((scenario.name, heuristic), []).append(accepted)
    return results


def carry_anchor(allocator, anchor: int) -> None:
    """Start the next run with the Tetris anchor of the last (its `reset` forgets it: dcbench's runs are
    independent)."""
    if not hasattr(allocator, "_last_pick"):
        return
    reset = type(allocator).reset

    def reset_keeping(network, rng):
        reset(allocator, network, rng)
        allocator._last_pick = anchor

    allocator.reset = reset_keeping


def table(authors: dict, ours: dict, paired: bool) -> list[str]:
    scenarios = list(dict.fromkeys(scenario for scenario, _ in authors))
    header = "| topology | " + " | ".join(f"{h} authors | {h} dcbench" for h in HEURISTICS) + " |"
    lines = [header, "|---|" + "---:|" * (2 * len(HEURISTICS))]
    errors: dict[str, list[float]] = {h: [] for h in HEURISTICS}
    same: dict[str, int] = {h: 0 for h in HEURISTICS}
    for scenario in scenarios:
        cells = []
        for h in HEURISTICS:
            theirs, mine = authors.get((scenario, h)), ours.get((scenario, h))
            if not theirs or not mine:
                cells += ["", ""]
                continue
            errors[h].append(abs(np.mean(theirs) - np.mean(mine)))
            same[h] += sum(a == b for a, b in zip(theirs, mine)) if paired else 0
            cells += [f"{np.mean(theirs):.3f}", f"{np.mean(mine):.3f}"]
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    lines.append("| MAE | " + " | ".join(f"| {np.mean(errors[h]):.3f}" if errors[h] else "|" for h in HEURISTICS)
                 + " |")
    if paired:
        lines.append("| episodes alike | " + " | ".join(f"| {same[h]} of {5 * len(errors[h])}" for h in HEURISTICS)
                     + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", type=Path, default=None, help="the suite's sweep (made there if absent)")
    parser.add_argument("--same-requests", action="store_true", help="replay the authors' requests instead")
    parser.add_argument("--authors", type=Path, default=AUTHORS, help="the authors' code's results")
    args = parser.parse_args()
    authors = authors_results(args.authors)
    if args.same_requests:
        ours = replayed(authors_requests())
    elif args.sweep is not None:
        ours = swept(args.sweep)
    else:
        with tempfile.TemporaryDirectory() as folder:
            ours = swept(Path(folder) / "sweep")
    print("\n".join(table(authors, ours, args.same_requests)))


if __name__ == "__main__":
    main()
