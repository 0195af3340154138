"""``alibaba-2018``: the batch tasks of Alibaba's cluster-trace-v2018 (``batch_task.csv``, no header).

A task of ``instance_num`` instances is a request of that many VMs (``vms``); it arrives at its ``start_time`` and
holds for ``end_time - start_time`` seconds; each instance asks for ``plan_cpu / 100`` cores and ``plan_mem``
percent of a machine's memory (``Machine.mem``: the trace normalises memory). Dropped: tasks without a plan
(``plan_cpu``, ``plan_mem`` or ``instance_num`` empty or 0), that never started, whose end is not after their
start (still running at the trace's end), or of more than 10,000 instances.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dcbench.plugins.workloads.traces.convert import Kept, Machine, csv_batches, source_file
from dcbench.plugins.workloads.traces.schema import MAX_VMS, TraceError

COLUMNS = ["task_name", "instance_num", "job_name", "task_type", "status", "start_time", "end_time", "plan_cpu",
           "plan_mem"]
NUMERIC = ("instance_num", "start_time", "end_time", "plan_cpu", "plan_mem")
WHAT = "batch_task.csv of cluster-trace-v2018"


def convert(source: Path, kept: Kept, machine: Machine = Machine()) -> None:
    """Read the tasks of ``source`` into ``kept``.

    Args:
        source: A ``batch_task.csv``.
        kept: Where the rows go.
        machine: Whose memory ``plan_mem`` is a percentage of.
    Raises:
        TraceError: The source is no such file, has other than its nine columns, or holds a cell that is no number."""
    source_file(source, WHAT)
    with open(source, "rb") as file:
        first = file.readline(1 << 16).decode("utf-8", errors="replace").rstrip("\r\n")
    if first.count(",") + 1 != len(COLUMNS):
        other = " (batch_instance.csv has 14: its instances carry no plan)" if first.count(",") == 13 else ""
        raise TraceError(f"source '{source}' has {first.count(',') + 1} columns, not the {len(COLUMNS)} of "
                         f"batch_task.csv{other}; give {WHAT}")
    for cells, _ in csv_batches(source, COLUMNS, NUMERIC, ("job_name", "task_name")):
        instances, start = cells["instance_num"], cells["start_time"]
        duration = cells["end_time"] - start
        keep = np.ones(len(start), dtype=bool)
        planned = (cells["plan_cpu"] > 0) & (cells["plan_mem"] > 0) & (instances >= 1) & (instances % 1 == 0)
        keep = kept.drop("without a plan", ~planned, keep)
        keep = kept.drop("never started", ~(start > 0), keep)
        keep = kept.drop("without an end after their start", ~(duration > 0), keep)
        keep = kept.drop(f"of more than {MAX_VMS:,} instances", instances > MAX_VMS, keep)
        names = [f"{job}/{task}" for job, task in zip(cells["job_name"], cells["task_name"])]
        kept.add({"arrival": start, "duration": duration, "cpu": instances * cells["plan_cpu"] / 100,
                  "mem": instances * cells["plan_mem"] / 100 * machine.mem, "vms": instances},
                 np.asarray(names, dtype=object), keep)
