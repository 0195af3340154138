"""Trace-driven workloads: the ``trace`` workload replays a canonical trace file (`replay`), ``dcbench data
convert`` makes one from a public cluster trace (`command`). See docs/workloads.md."""

from __future__ import annotations

from dcbench import hookimpl
from dcbench.plugins.workloads.traces.replay import PARAMS, TraceWorkload


@hookimpl
def register_workloads(register):
    register(
        "trace",
        TraceWorkload,
        description="Requests replayed from a trace file (CSV or Parquet, docs/workloads.md), scaled onto the "
        "topology; pools, or jobs of VMs and flows for the optical fabric",
        params=PARAMS,
    )


@hookimpl
def register_commands(cli):
    from dcbench.plugins.workloads.traces.command import data

    cli.add_command(data)

