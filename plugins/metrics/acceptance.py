"""Acceptance ratio, overall and by request size (1..8 servers' worth), over
the measured requests offered (a workload's warm-up is left out, as in
every metric); the number of invalid allocations over the whole run."""

from __future__ import annotations

import numpy as np

from dcbench import Column, Network, RunTables, hookimpl
from dcbench.plugins.metrics.jobs import offered_and_blocked

SIZE_BRACKETS = 8


def acceptance(tables: RunTables, network: Network) -> dict[str, float]:
    offered, blocked = offered_and_blocked(tables.requests)
    accepted = offered & ~blocked
    n_offered = int(offered.sum())
    columns: dict[str, float] = {
        "acceptance_ratio": accepted.sum() / n_offered if n_offered else float("nan"),
        # a count of the allocator's faults, not a figure of merit: the warm-up's count too
        "invalid_allocations": float((tables.requests["reason"] == "invalid_allocation").sum()),
    }
    size = np.minimum(tables.requests["size"], SIZE_BRACKETS)
    for bracket in range(1, SIZE_BRACKETS + 1):
        in_bracket = offered & (size == bracket)
        total = int(in_bracket.sum())
        n_accepted = int((accepted & in_bracket).sum())
        columns[f"acceptance_size_{bracket}"] = n_accepted / total if total else float("nan")
        columns[f"accepted_size_{bracket}"] = float(n_accepted)
    return columns


@hookimpl
def register_metrics(register):
    register(
        "acceptance",
        acceptance,
        description="acceptance_ratio; acceptance_size_1..8 and accepted_size_1..8 by the servers' worth "
        "a request needs (8 includes larger), over the measured requests; invalid_allocations (the whole run)",
        columns=[Column("acceptance_ratio", "acceptance ratio", "higher", demands=("pool",), headline=True, ranks=True,
                        description="Acceptance ratio")],
    )
