"""Trace replay speed (#48, docs/workloads.md): what replaying 100,000 trace requests costs per request, against
``uniform`` on the same fabric.

A row each for drawing the requests (``generate``; the trace's file read once before, as a sweep's worker reads it
once) and for whole runs of ``random``, in µs per request, each the best of 3 with the two workloads alternated; and
the trace's first read, parsed and checked. The trace is the file given, else 100,000 rows written here with
uniform's sizes and holding times::

    python benchmarks/trace_replay.py [TRACE.csv]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dcbench import Network
from dcbench.harness import Runner, get_registry

TOPOLOGY = "tiered:32,1x4"
REQUESTS = 100_000
REPEAT = 3


def synthetic_trace(folder: Path) -> Path:
    """100,000 rows of uniform's requests: 1..128 cores and GiB, holding 1..30, one arrival a second."""
    rng = np.random.default_rng(0)
    columns = {"arrival": np.arange(REQUESTS), "duration": rng.integers(1, 31, REQUESTS),
               "cpu": rng.integers(1, 129, REQUESTS), "mem": rng.integers(1, 129, REQUESTS)}
    path = folder / "uniform-like.csv"
    np.savetxt(path, np.column_stack(list(columns.values())), fmt="%d", delimiter=",", header=",".join(columns),
               comments="")
    return path


def best(seconds: list[float]) -> float:
    return 1e6 * min(seconds) / REQUESTS


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(sys.argv[1]) if len(sys.argv) > 1 else synthetic_trace(Path(folder))
        workloads = {"uniform": "uniform", "trace": f"trace:file={trace},wait=yes"}  # both wait, as uniform
        registry = get_registry()
        network = Network.compile(registry.build("topology", TOPOLOGY).obj)
        models = {name: registry.build("workload", spec).obj for name, spec in workloads.items()}
        first_read = timed(lambda: models["trace"].generate(network, 1, np.random.default_rng(0)))
        print(f"trace: {trace} (read and checked in {first_read:.2f} s)\n")
        print(f"| {TOPOLOGY}, {REQUESTS:,} requests | µs per request, generate | µs per request, run of random |")
        print("|---|---:|---:|")
        generate, runs = {name: [] for name in workloads}, {name: [] for name in workloads}
        for seed in range(REPEAT):  # alternated, so a machine's drift falls on both alike
            for name, spec in workloads.items():
                generate[name].append(timed(lambda: models[name].generate(network, REQUESTS,
                                                                          np.random.default_rng(seed))))
                runs[name].append(timed(lambda: Runner(registry).run("random", TOPOLOGY, spec, REQUESTS, seed)))
        for name in workloads:
            print(f"| {name} | {best(generate[name]):.2f} | {best(runs[name]):.1f} |")


if __name__ == "__main__":
    main()
