"""``dcbench bench``: requests per second and time per request of allocators."""

from __future__ import annotations

import click

from dcbench.commands.base import MAX_REPEAT, MAX_REQUESTS, check_bounds, load_registry, plugin_prints_to_stderr
from dcbench.hookspecs import hookimpl

# The papers' fabric at 64, 1,024, 8,192 and 65,536 servers, and an optical fabric of 128 ToRs (8,192 servers).
DEFAULT_TOPOLOGIES = (
    "tiered:32,1x4",
    "tiered:32,1x4,pods=8,racks=8",
    "tiered:32,1x4,pods=16,racks=32",
    "tiered:32,1x4,pods=64,racks=64",
    "ocs:128,servers=64",
)


@click.command()
@click.option("--allocator", "-a", "allocators", multiple=True,
              help="Allocators to time, repeated or listed with commas as for sweep "
                   "(default: every heuristic that serves the topology).")
@click.option("--topology", "-t", "topologies", multiple=True,
              help="Topologies, repeated or listed with commas (default: tiered:32,1x4 at 64, 1,024, 8,192 and "
                   "65,536 servers, and ocs:128,servers=64).")
@click.option("--workload", "-w", default=None, help="Workload spec (default: each topology's own).")
@click.option("--requests", "-n", type=int, default=4096, show_default=True,
              help=f"Requests per run, at most {MAX_REQUESTS:,}.")
@click.option("--repeat", type=int, default=3, show_default=True,
              help=f"Timed runs per cell, at most {MAX_REPEAT}; the best is kept.")
def bench(allocators: tuple[str, ...], topologies: tuple[str, ...], workload: str | None, requests: int | None,
          repeat: int) -> None:
    """Measure requests per second and time per request of allocators."""
    from dcbench.running.bench import run_bench
    from dcbench.running.sweep import split_allocators, split_specs

    check_bounds("--requests", requests, 1, at_most=MAX_REQUESTS)
    check_bounds("--repeat", repeat, 1, at_most=MAX_REPEAT)
    registry = load_registry()
    named = bool(allocators)
    topologies = tuple(split_specs(topologies, "--topology", "tiered:32,1x4")) if topologies else ()
    if allocators:
        allocators = tuple(split_allocators(allocators))
    else:
        allocators = tuple(sorted(name for name, e in registry.entries("allocator").items() if not e.learned))
    with plugin_prints_to_stderr() as echo:
        run_bench(registry, list(allocators), list(topologies or DEFAULT_TOPOLOGIES), requests, repeat, echo,
                  workload, every_allocator_runs=named)


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(bench)
