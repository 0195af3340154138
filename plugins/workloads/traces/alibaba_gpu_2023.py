"""``alibaba-gpu-2023``: the pod lists of Alibaba's cluster-trace-gpu-v2023 (``openb_pod_list_*.csv``).

A pod arrives at its ``creation_time`` and holds its resources for ``deletion_time - scheduled_time`` seconds; it
asks for ``cpu_milli / 1000`` cores, ``memory_mib / 1024`` GiB and ``num_gpu × gpu_milli / 1000`` GPUs. Dropped:
pods never scheduled (no ``scheduled_time``: pending), pods whose deletion is not after their scheduling, pods
asking for neither CPU nor memory (GPU-only), and with ``cpu_only`` every pod that asks for a GPU.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dcbench.plugins.workloads.traces.convert import Kept, csv_batches, source_file

NUMERIC = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time")
WHAT = "an openb_pod_list CSV of cluster-trace-gpu-v2023"


def convert(source: Path, kept: Kept, cpu_only: bool = False) -> None:
    """Read the pods of ``source`` into ``kept``.

    Args:
        source: An ``openb_pod_list_*.csv``.
        kept: Where the rows go.
        cpu_only: Drop the pods that ask for a GPU.
    Raises:
        TraceError: The source is no such file, lacks a column, or holds a cell that is no number."""
    source_file(source, WHAT)
    for cells, _ in csv_batches(source, None, NUMERIC, ("name",)):
        scheduled = cells["scheduled_time"]
        duration = cells["deletion_time"] - scheduled
        cpu, mem = cells["cpu_milli"] / 1000, cells["memory_mib"] / 1024
        gpu = np.nan_to_num(cells["num_gpu"]) * np.nan_to_num(cells["gpu_milli"]) / 1000
        keep = np.ones(len(cpu), dtype=bool)
        keep = kept.drop("never scheduled", np.isnan(scheduled), keep)
        keep = kept.drop("deleted before they ran", ~(duration > 0), keep)
        keep = kept.drop("without CPU or memory (GPU-only)", ~(np.nan_to_num(cpu) + np.nan_to_num(mem) > 0), keep)
        if cpu_only:
            keep = kept.drop("asking for a GPU (--cpu-only)", gpu > 0, keep)
        keep = kept.drop("with an empty cell", np.isnan(cells["creation_time"]) | np.isnan(cpu) | np.isnan(mem),
                         keep)
        kept.add({"arrival": cells["creation_time"], "duration": duration, "cpu": cpu, "mem": mem, "gpu": gpu},
                 np.asarray(cells["name"], dtype=object), keep)
