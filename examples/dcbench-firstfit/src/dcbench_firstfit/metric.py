"""Rack locality: the share of accepted requests that fit on one rack."""

from __future__ import annotations

from dcbench import Network, RunTables


def rack_locality(tables: RunTables, network: Network) -> dict[str, float]:
    requests = tables.requests
    # The measured requests only (a workload's warm-up is left out), as every metric counts.
    accepted = requests["measured"] & (requests["outcome"] == "accepted")
    n_accepted = int(accepted.sum())
    on_one_rack = (requests["spread"][accepted] == "server") | (requests["spread"][accepted] == "rack")
    # The same column whatever the run did: NaN where nothing was accepted.
    return {"rack_local_share": float(on_one_rack.sum() / n_accepted) if n_accepted else float("nan")}
