"""Resource and per-tier link utilisation.

``<resource>_util`` and ``link_util_tier<t>`` are time-averaged over the
measured part of the episode (from the first offer of a measured request —
after the workload's warm-up, if it has one — to the last offer, each state
weighted by how long it lasted). The ``_last25`` columns are the reference
code's table statistic: the mean of the last 25 values it logs, one per
request, taken once the next request's departures are done (the state the
next request finds; after the last request, the state it leaves).

``paper_link_util_tier<t>`` is what the tiered papers' tables call tier-t
link utilisation, as the authors' code computes it: the mean over the
tier's links of *free* channels over total channels, at the same last 25
logged states. It is the free share, despite its name: one minus
``link_util_tier<t>_last25`` wherever a tier's links have equal capacity,
as on ``tiered`` (elsewhere dcbench weighs links by capacity).
"""

from __future__ import annotations

import numpy as np

from dcbench import Column, Network, RunTables, hookimpl
from dcbench.plugins.metrics.jobs import measured_window, row_at

LAST = 25


def time_average(time: np.ndarray, values: np.ndarray, start: float, end: float) -> float:
    """Mean of a piecewise-constant signal (``values[k]`` holds from
    ``time[k]`` to ``time[k+1]``) over ``[start, end]``."""
    if len(time) == 0:
        return float("nan")
    if end <= start:
        row = row_at(time, end)
        return float(values[row if row is not None else 0])
    following = np.append(time[1:], end)
    weight = np.clip(following, start, end) - np.clip(time, start, end)
    return float((weight * values).sum() / weight.sum())


def utilisation(tables: RunTables, network: Network) -> dict[str, float]:
    """The same columns whatever happened: NaN when no request was measured."""
    timeline = tables.timeline
    names = [f"{r}_util" for r in network.resources] + [f"link_util_tier{t}" for t in network.tiers]
    window = measured_window(tables)
    paper = {f"paper_link_util_tier{t}": f"link_util_tier{t}" for t in network.tiers}
    if window is None:
        return {column: float("nan") for name in names for column in (name, f"{name}_last{LAST}")} | dict.fromkeys(
            paper, float("nan"))
    start, end = window
    logged = reference_log_rows(timeline["event"])
    columns: dict[str, float] = {}
    for name in names:
        values = timeline[name]
        columns[name] = time_average(timeline["time"], values, start, end)
        columns[f"{name}_last{LAST}"] = float(values[logged].mean()) if len(logged) else float("nan")
    for column, name in paper.items():
        columns[column] = 1.0 - columns[f"{name}_last{LAST}"]
    return columns


def reference_log_rows(event: np.ndarray) -> np.ndarray:
    """The timeline rows of the reference's last ``LAST`` logged values: for
    each request, the row just before the next arrival (after the departures
    due by then); for the last request, its own row."""
    arrivals = np.flatnonzero(event == "arrival")
    if len(arrivals) == 0:
        return arrivals
    return np.append(arrivals[1:] - 1, arrivals[-1])[-LAST:]


@hookimpl
def register_metrics(register):
    register(
        "utilisation",
        utilisation,
        description="time-averaged <resource>_util and link_util_tier<t>, and their _last25 "
        "(the reference's mean of its last 25 per-request values)",
        # on OCS a job's traffic is in its latency and loss: its tier-1 circuits' utilisation is no headline
        columns=[Column("cpu_util", "cpu utilisation", "higher", headline=True,
                        description="CPU utilisation (time-averaged)"),
                 Column("mem_util", "mem utilisation", "higher", headline=True,
                        description="Memory utilisation (time-averaged)"),
                 Column("disk_util", "disk utilisation", "higher", headline=True,
                        description="Disk utilisation (time-averaged)"),
                 Column("*_util", "{} utilisation", "higher", headline=True),
                 Column("link_util_tier1", "tier-1 link utilisation", "higher", headline=("pool",),
                        description="Tier-1 link utilisation (server-rack; OCS circuits on ocs)"),
                 Column("link_util_tier2", "tier-2 link utilisation", "higher", headline=("pool",),
                        description="Tier-2 (rack-aggregation) link utilisation"),
                 Column("link_util_tier3", "tier-3 link utilisation", "higher", headline=("pool",),
                        description="Tier-3 (aggregation-core) link utilisation"),
                 Column("link_util_tier*", "tier-{} link utilisation", "higher", headline=("pool",)),
                 Column("paper_link_util_tier*", "tier-{} link util., papers' (free)")],
    )
