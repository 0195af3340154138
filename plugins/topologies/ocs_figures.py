"""The OCS paper's figures of a sweep of jobs (its Figs. 5-7): blocking,
latency, loss and reconfigurations against the load, one figure per network
size. Declared by the ``ocs`` topology (`FIGURES`) and the ``odcn2025``
suite (`ODCN2025`, whose leaderboard axis names its loads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from dcbench.harness import Colours, mean_over, metric_panels

Row = dict[str, Any]

JOB_PANELS = (("blocking_probability", "blocking prob."), ("latency_us", "latency (µs)"),
              ("packet_loss", "packet loss"), ("reconfigurations_per_job", "reconf. per job"))
LOAD_XLABEL = "load (Erlangs)"


def load_label(row: Row) -> str:
    """A scenario's load in Erlangs ('66'), from its workload; its label where the workload names none."""
    load = re.search(r"load=([0-9.]+)", row.get("workload", ""))
    return f"{float(load.group(1)):g}" if load else row.get("scenario", row["topology"])


def job_figure(topology: str, index: int) -> tuple[str, str]:
    """The file name and title of the ``index``-th network size's figure."""
    tors = re.search(r"tors=(\d+)", topology)
    servers = re.search(r"servers=(\d+)", topology)
    if tors and servers:
        return f"jobs_{tors.group(1)}x{servers.group(1)}.png", f"{tors.group(1)} ToRs × {servers.group(1)} servers"
    return f"jobs_{index}.png", topology


def job_figures(rows: list[Row]) -> dict[str, tuple[str, str]]:
    """Each topology's figure (`job_figure`); topologies of one size that
    differ otherwise (an ad-hoc sweep of ``ocs:16`` and ``ocs:16,
    reconfigurable=no``) are named by their place and spec, so that neither
    figure replaces the other."""
    topologies = list(dict.fromkeys(r["topology"] for r in rows))
    named = {topology: job_figure(topology, index) for index, topology in enumerate(topologies)}
    files = [name for name, _ in named.values()]
    return {topology: (name, label) if files.count(name) == 1 else (f"jobs_{index}.png", topology)
            for index, (topology, (name, label)) in enumerate(named.items())}


@dataclass(frozen=True)
class JobFigures:
    """The OCS paper's Figs. 5-7 (`dcbench.harness.Figures`); ``xlabel``
    names the loads where each scenario is one tick."""

    xlabel: str = LOAD_XLABEL
    columns: tuple[str, ...] = tuple(column for column, _ in JOB_PANELS)

    def tick_label(self, row: Row) -> str:
        return load_label(row)

    def files(self, rows: list[Row]) -> list[str]:
        return [name for name, _ in job_figures(rows).values()]

    def draw(self, rows: list[Row], out_dir: Path, name: str, defaults: Mapping[str, str] | None,
             colours: Colours) -> list[Path]:
        paths = []
        for topology, (file_name, label) in job_figures(rows).items():
            chosen = [r for r in rows if r["topology"] == topology]
            paths.append(metric_panels(chosen, JOB_PANELS, out_dir / file_name,
                                       f"{name}: {label}, {mean_over(chosen)}", colours, xlabel=LOAD_XLABEL,
                                       defaults=defaults, tick_label=load_label))
        return paths


FIGURES = JobFigures()
ODCN2025 = JobFigures(xlabel="load in Erlangs (54..78: 16 ToRs; 300: 32 ToRs; 1,320: 64 ToRs)")
