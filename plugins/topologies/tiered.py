"""The tiered fabric of the resource-disaggregated data-centre papers.

Servers hang off rack switches (SR links, tier 1); each pod's racks link to
the pod's two aggregation switches, one per plane (RA links, tier 2); each
aggregation switch links to every core switch of its plane, P/2 per plane for
P racks per pod (AC links, tier 3). Channels per link are (n, m0·n, m1·n)
with (m0, m1) given by the oversubscription label. See docs/scenarios/tiered.md.
"""

from __future__ import annotations

import numpy as np

from dcbench import MAX_CAPACITY, Param, Scenario, Suite, Topology, hookimpl

# Oversubscription label -> (RA, AC) channel multipliers of the SR channels.
RATIOS = {"1x1": (8.0, 8.0), "1x4": (4.0, 2.0), "1x8": (4.0, 1.0), "1x16": (2.0, 0.5)}

MAX_SERVERS = 1 << 20

# Capacities at most a capacity's largest (`MAX_CAPACITY`): sums of capacities stay finite. A link carries
# up to 8 times the channels of a server's (the RA and AC multipliers of RATIOS).
PARAMS = [
    Param("channels", int, 32, "channels per server-rack link (n); ignored where sr, ra, ac are given",
          positional=True, minimum=1, maximum=MAX_CAPACITY // 8),
    Param("ratio", str, "1x4", "oversubscription label; ignored where sr, ra, ac are given", choices=tuple(RATIOS),
          positional=True),
    Param("pods", int, 2, "pods", minimum=1),
    Param("racks", int, 2, "racks per pod", minimum=1),
    Param("servers", int, 16, "servers per rack", minimum=1),
    Param("cpu", int, 16, "CPU units per server", minimum=1, maximum=MAX_CAPACITY),
    Param("mem", int, 16, "memory units per server", minimum=1, maximum=MAX_CAPACITY),
    Param("sr", float, None, "explicit server-rack channels (with ra, ac)", minimum=1, maximum=MAX_CAPACITY),
    Param("ra", float, None, "explicit rack-aggregation channels", minimum=1, maximum=MAX_CAPACITY),
    Param("ac", float, None, "explicit aggregation-core channels", minimum=1, maximum=MAX_CAPACITY),
]


def ratio_label(sr: float, ra: float, ac: float, servers_per_rack: int = 16) -> str:
    """The papers' label, (2·RA / 16·SR) · (AC / RA), written 1xK."""
    ratio = (2 * ra / (servers_per_rack * sr)) * (ac / ra)
    return f"1x{1 / ratio:g}" if ratio <= 1 else f"{ratio:g}x1"


def channel_counts(channels: int, ratio: str, sr: float | None,
                   ra: float | None, ac: float | None) -> tuple[int, int, int]:
    explicit = (sr, ra, ac)
    if any(v is not None for v in explicit):
        if any(v is None for v in explicit):
            raise ValueError("give all three of sr=, ra=, ac= or none of them")
        # (channels and ratio are bound to their defaults when not given: only others conflict)
        if (channels, ratio) != (32, "1x4"):
            raise ValueError("give either channels and ratio (tiered:32,1x4) or sr=,ra=,ac=, not both")
        counts = explicit
    else:
        m0, m1 = RATIOS[ratio]
        counts = (channels, m0 * channels, m1 * channels)
    for name, value in zip(("SR", "RA", "AC"), counts):
        if float(value) != int(value):
            raise ValueError(f"{name} channels come to {value:g}; use channels for which every link "
                             "has a whole number of channels")
    return tuple(int(v) for v in counts)  # type: ignore[return-value]


def build(channels=32, ratio="1x4", pods=2, racks=2, servers=16, cpu=16, mem=16,
          sr=None, ra=None, ac=None) -> Topology:
    import networkx as nx

    sr_channels, ra_channels, ac_channels = channel_counts(channels, ratio, sr, ra, ac)
    if pods * racks * servers > MAX_SERVERS:
        raise ValueError(f"pods × racks × servers come to {pods * racks * servers:,} servers, more than the "
                         f"{MAX_SERVERS:,} a tiered fabric may have (about 2 GB, half a minute to compile); "
                         "give fewer pods, racks or servers")
    cores_per_plane = max(1, racks // 2)
    graph = nx.Graph()
    server_names, rack_of, pod_of = [], [], []
    for pod in range(pods):
        for plane in range(2):
            aggregate = f"Aggregate_{2 * pod + plane}"
            graph.add_node(aggregate)
            for core in range(cores_per_plane):
                graph.add_node(f"Core_{plane * cores_per_plane + core}")
    # Each switch lists its neighbours in the reference graph's order (an
    # aggregation switch its racks, then its cores; a rack switch its
    # aggregation switches, then its servers): the reference's walks follow it.
    for pod in range(pods):
        for plane in range(2):
            aggregate = f"Aggregate_{2 * pod + plane}"
            for rack_in_pod in range(racks):
                graph.add_edge(aggregate, f"Rack_{pod * racks + rack_in_pod}", capacity=ra_channels, tier=2)
            for core in range(cores_per_plane):
                graph.add_edge(aggregate, f"Core_{plane * cores_per_plane + core}", capacity=ac_channels, tier=3)
        for rack_in_pod in range(racks):
            rack = pod * racks + rack_in_pod
            for slot in range(servers):
                name = f"Resource_{rack * servers + slot}"
                graph.add_edge(f"Rack_{rack}", name, capacity=sr_channels, tier=1)
                server_names.append(name)
                rack_of.append(rack)
                pod_of.append(pod)
    n_servers = len(server_names)
    label = ratio_label(sr_channels, ra_channels, ac_channels, servers)
    return Topology(
        graph=graph,
        servers=server_names,
        resources=("cpu", "mem"),
        capacity=np.tile(np.array([cpu, mem], dtype=np.float64), (n_servers, 1)),
        racks=np.asarray(rack_of),
        pods=np.asarray(pod_of),
        link_unit="channels",
        default_workload="uniform",
        info={"family": "tiered", "sr": sr_channels, "ra": ra_channels, "ac": ac_channels,
              "ratio": label, "label": f"{sr_channels} ch, {label.replace('x', ':')}"},
    )


@hookimpl
def register_topologies(register):
    register(
        "tiered",
        build,
        description="Tiered disaggregated fabric (servers, racks, two aggregation and core planes)",
        params=PARAMS,
        figures="dcbench.plugins.topologies.tiered_figures:FIGURES",
    )


CHANNELS = (8, 16, 32)
LABELS = ("1x1", "1x4", "1x8", "1x16")
SEEDS = (0, 1, 2, 3, 4)


def nara2022_scenarios(size: str = "", requests: int = 128) -> tuple[Scenario, ...]:
    """The papers' twelve topologies: n channels × oversubscription label."""
    return tuple(
        Scenario(topology=f"tiered:{n},{label}{size}", workload="uniform:pairs=reference", requests=requests,
                 seeds=SEEDS, name=f"{n}-{label}")
        for n in CHANNELS for label in LABELS
    )


@hookimpl
def register_suites(register):
    register(Suite(
        name="nara2022",
        reference="tetris",
        floor="random",
        scenarios=nara2022_scenarios(),
        description="The tiered papers' 12 topologies (8/16/32 channels × 1:1..1:16), 64 servers, "
        "128-request episodes, the reference connectivity rule, seeds 0..4",
        primary_metric="acceptance_ratio",
        figures="dcbench.plugins.topologies.tiered_figures:FIGURES",
    ))
    register(Suite(
        name="nara2022-large",
        reference="tetris",
        floor="random",
        scenarios=nara2022_scenarios(",pods=8,racks=8", 2048),
        description="The same 12 topologies at 1,024 servers (8 pods × 8 racks), 2,048-request episodes",
        primary_metric="acceptance_ratio",
        figures="dcbench.plugins.topologies.tiered_figures:FIGURES",
    ))
