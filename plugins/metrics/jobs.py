"""Job metrics of the OCS paper: blocking, reconfigurations, latency, loss.

Every figure counts only the measured requests (those after the workload's
warm-up). ``blocking_probability`` is the share of measured requests refused
(for pools, one minus the acceptance ratio). For jobs:

* ``reconfigurations_per_job``: circuit swaps per measured job offered;
* ``latency_us`` and ``packet_loss``: the mean over the packets sent in the
  measured window (from its first offer to its last), of the end-to-end
  queueing delay and the loss along each flow's path, each link an M/M/1/K
  queue (`dcbench.engine.qos`): the engine's instantaneous network-wide
  values, weighted by the inter-rack traffic and by how long they held.
"""

from __future__ import annotations

import numpy as np

from dcbench import Column, Network, RunTables, hookimpl


def measured_window(tables: RunTables) -> tuple[float, float] | None:
    """From the first to the last offer of a measured request."""
    requests = tables.requests
    offers = requests["offer_time"][requests["measured"] & ~np.isnan(requests["offer_time"])]
    if len(offers) == 0:
        return None
    return float(offers.min()), float(offers.max())


def row_at(time: np.ndarray, instant: float) -> int | None:
    """The timeline row that holds at ``instant`` (the last one recorded by
    then), or None before the first."""
    rows = np.flatnonzero(time <= instant)
    return int(rows[-1]) if len(rows) else None


def traffic_weighted_mean(timeline: dict[str, np.ndarray], column: str, start: float, end: float) -> float:
    """Mean of ``column`` over ``[start, end]``, each state weighted by how
    long it held and by the inter-rack traffic; NaN where nothing flowed. A
    window of one instant (a single measured job) takes the state at that
    instant, as the utilisation's time average does."""
    time = timeline["time"]
    if end <= start:
        row = row_at(time, end)
        if row is None or not timeline["inter_rack_gbps"][row] > 0 or np.isnan(timeline[column][row]):
            return float("nan")
        return float(timeline[column][row])
    following = np.append(time[1:], end)
    duration = np.clip(following, start, end) - np.clip(time, start, end)
    values = timeline[column]
    weight = duration * timeline["inter_rack_gbps"]
    known = ~np.isnan(values) & (weight > 0)
    return float((weight[known] * values[known]).sum() / weight[known].sum()) if known.any() else float("nan")


def offered_and_blocked(requests: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the measured requests offered to the allocator, and of those refused."""
    offered = requests["measured"] & (requests["outcome"] != "skipped")
    return offered, offered & (requests["outcome"] != "accepted")


def job_metrics(tables: RunTables, network: Network) -> dict[str, float]:
    """The same columns whatever happened: NaN where no measured job says
    anything (none offered, none accepted, no traffic)."""
    requests = tables.requests
    offered, blocked = offered_and_blocked(requests)
    n_offered = int(offered.sum())
    columns = {"blocking_probability": float(blocked.sum() / n_offered) if n_offered else float("nan")}
    if "vms" not in requests:
        return columns
    accepted = offered & ~blocked
    columns["reconfigurations_per_job"] = (
        float(requests["reconfigurations"][offered].mean()) if n_offered else float("nan"))
    columns["inter_rack_gbps_per_job"] = (
        float(requests["inter_rack_gbps"][accepted].mean()) if accepted.any() else float("nan"))
    if "latency_us" in tables.timeline:
        window = measured_window(tables)
        for column in ("latency_us", "packet_loss"):
            columns[column] = (traffic_weighted_mean(tables.timeline, column, *window)
                               if window is not None else float("nan"))
    return columns


@hookimpl
def register_metrics(register):
    register(
        "jobs",
        job_metrics,
        description="blocking_probability over the measured requests; for jobs also reconfigurations_per_job, "
        "inter_rack_gbps_per_job, latency_us and packet_loss (M/M/1/K per link)",
        # for pools, blocking is one minus the acceptance ratio, which their table shows
        columns=[Column("blocking_probability", "blocking probability", "lower", headline=("job",), ranks=("job",),
                        description="Blocking probability (measured requests)"),
                 Column("reconfigurations_per_job", "reconfigurations per job", "lower", demands=("job",),
                        headline=True, description="Reconfigurations (circuit swaps) per job"),
                 Column("latency_us", "latency (µs, M/M/1/K)", "lower", demands=("job",), headline=True,
                        description="End-to-end latency, µs (M/M/1/K per link)"),
                 Column("packet_loss", "packet loss (M/M/1/K)", "lower", demands=("job",), headline=True,
                        description="Packet loss (M/M/1/K per link)"),
                 Column("inter_rack_gbps_per_job", "inter-rack Gbps per job", None, demands=("job",))],
    )
