"""What `dcbench leaderboard submit` spends replaying each committed submission
on arrival: one seed of every (scenario, allocator), drawn at random, in
fresh worker processes that load only the plugins it uses (docs/leaderboard.md):

    python benchmarks/replay_committed.py [--jobs N]

Prints a row per submission (runs replayed, seconds) and the total; a
submission whose replay differs is named, as `submit` names it.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from dcbench.harness import get_registry
from dcbench.publishing.leaderboard import load_submissions
from dcbench.publishing.replay import replay

ROOT = Path(__file__).resolve().parent.parent / "leaderboard"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    jobs = parser.parse_args().jobs
    registry = get_registry()
    print(f"| submission | runs replayed | seconds ({jobs} workers) |")
    print("|---|---:|---:|")
    total = 0.0
    for submission in load_submissions(ROOT, registry):
        start = time.perf_counter()
        replayed = replay(submission.rows, submission.suite, registry, jobs)
        seconds = time.perf_counter() - start
        total += seconds
        print(f"| {submission.name} | {len(replayed['runs'])} | {seconds:.0f} |", flush=True)
    print(f"| all | | {total:.0f} |")


if __name__ == "__main__":
    main()
