"""Requests per second and time per request of allocators (``dcbench bench``)."""

from __future__ import annotations

import time
import warnings
from typing import Callable

from dcbench.errors import DcbenchError, IncompatibleError, SpecError
from dcbench.registry import PluginLoadWarning, Registry
from dcbench.running.runner import Runner, run_plan


def run_bench(registry: Registry, allocators: list[str], topologies: list[str], requests: int | None,
              repeat: int, echo: Callable[[str], None], workload: str | None = None,
              every_allocator_runs: bool = False) -> list[dict[str, float | str]]:
    """Print a Markdown table of each cell's best of ``repeat`` whole runs of seed 0 (not writing them)."""
    runner = Runner(registry)
    kinds: dict[str, set[str]] = {}
    for topology in topologies:  # every bad spec fails before the table starts
        kinds[topology] = set(runner.network(topology)[1].demand_kinds)
    serves: dict[str, set[str]] = {}
    given: dict[str, str] = {}
    failed: set[str] = set()

    def leave_out(allocator: str, failure: DcbenchError) -> None:
        # A failing third-party allocator of the default set is left out; any other failure stops all.
        if every_allocator_runs or registry.get("allocator", allocator.split(":")[0]).builtin:
            raise failure
        warnings.warn(f"bench leaves out allocator {allocator!r}, which fails: {failure}; name it with -a to see it "
                      "fail alone", PluginLoadWarning, stacklevel=3)
        failed.add(allocator)

    for allocator in allocators:
        try:
            resolved = registry.build("allocator", allocator).spec
        except DcbenchError as exc:
            leave_out(allocator, exc)
            continue
        if resolved in given:
            raise SpecError(f"allocator {allocator!r} is given twice (also as {given[resolved]!r}); give each once")
        given[resolved] = allocator
        serves[allocator] = set(registry.get("allocator", allocator.split(":")[0]).demands)
        if every_allocator_runs and not any(serves[allocator] & topology_kinds for topology_kinds in kinds.values()):
            raise IncompatibleError(f"allocator {allocator!r} serves {'/'.join(sorted(serves[allocator]))} demands and "
                                    f"none of the topologies {', '.join(topologies)} does; give a topology "
                                    "for it with -t")
    if workload is not None:
        registry.build("workload", workload)
    n = requests or 4096
    cells = [(topology, allocator) for topology in topologies for allocator in allocators
             if allocator not in failed and serves[allocator] & kinds[topology]]
    plans = {}
    for topology, allocator in cells:  # a workload the topology cannot serve, a missing checkpoint: before the table
        try:
            plans[topology, allocator] = runner.resolve(allocator, topology, workload, n)
        except DcbenchError as exc:
            if allocator not in failed:
                leave_out(allocator, exc)
    rows: list[dict[str, float | str]] = []
    echo("| topology | servers | allocator | requests | acceptance | requests/s | µs/request |")
    echo("|---|---:|---|---:|---:|---:|---:|")
    for topology, allocator in cells:
        if allocator in failed:
            continue
        network = plans[topology, allocator].network
        best = float("inf")
        result = None
        try:
            for _ in range(max(1, repeat)):
                start = time.perf_counter()
                result = run_plan(plans[topology, allocator], 0)
                best = min(best, time.perf_counter() - start)
        except DcbenchError as exc:
            leave_out(allocator, exc)
            continue
        assert result is not None
        acceptance = result.summary["accepted"] / max(1, result.summary["offered"])
        row = {"topology": topology, "servers": network.n_servers, "allocator": allocator, "requests": n,
               "acceptance": acceptance, "requests_per_s": n / best,
               "us_per_request": best / n * 1e6}
        rows.append(row)
        echo(f"| {topology} | {network.n_servers:,} | {allocator} | {n:,} | {row['acceptance']:.3f} "
             f"| {row['requests_per_s']:,.0f} | {row['us_per_request']:,.1f} |")
    return rows

