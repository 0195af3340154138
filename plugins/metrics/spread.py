"""How spread accepted requests are: one server, one rack, one pod, or across
pods (the measured ones: a workload's warm-up is left out)."""

from __future__ import annotations

from dcbench import SPREAD_LEVELS, Column, Network, RunTables, hookimpl
from dcbench.plugins.metrics.jobs import offered_and_blocked


def spread(tables: RunTables, network: Network) -> dict[str, float]:
    offered, blocked = offered_and_blocked(tables.requests)
    accepted = offered & ~blocked
    n_accepted = int(accepted.sum())
    levels = tables.requests["spread"][accepted]
    columns = {f"spread_{level}": float((levels == level).sum() / n_accepted) if n_accepted else float("nan")
               for level in SPREAD_LEVELS}
    columns["servers_per_request"] = (
        float(tables.requests["servers_used"][accepted].mean()) if n_accepted else float("nan")
    )
    return columns


@hookimpl
def register_metrics(register):
    register(
        "spread",
        spread,
        description="spread_server/rack/pod/cross_pod: share of accepted requests at each level; servers_per_request",
        # where requests land describes an allocator, it does not score it; a job's VMs go to racks, not pods
        columns=[Column(name, heading, None, demands=("pool",), headline=True)
                 for name, heading in (("spread_server", "on one server"), ("spread_rack", "on one rack"),
                                       ("spread_pod", "on one pod"), ("spread_cross_pod", "across pods"),
                                       ("servers_per_request", "servers per request"))],
    )
