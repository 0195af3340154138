"""The reconfigurable optical data-centre network of the OCS paper.

Racks of servers hang off ToR switches; the ToRs connect through optical
circuit switches. Each ToR has ``ports`` output and ``ports`` input OCS
ports of ``port_gbps``; a circuit joins an output port of one ToR to an
input port of another, so the network is a directed graph with one link
per ordered pair of ToRs whose capacity is its circuits × ``port_gbps``
(zero where it has none). Initially each ToR spreads its circuits as
evenly as possible over the other ToRs — all-to-all when the ports allow —
as a circulant: ToR u has circuits to u + d for the offsets
d_k = 1 + ⌊k (T − 1) / P⌋, k = 0..P−1, so every ToR also receives exactly P.
A run that does not reconfigure (``reconfigurable=no``, or a policy's
``reconfigure=no``) runs on the fixed all-to-all of the paper's ALL2ALL
instead (``fixed=all2all``): each ToR's P × B Gbps shared equally by the
other T − 1, as wavelength routing through an AWGR gives them.
Inside a rack the servers and their ToR are non-blocking (no links are
modelled there: the paper's intra-rack traffic uses no OCS capacity).
See docs/scenarios/ocs.md.
"""

from __future__ import annotations

import numpy as np

from dcbench import MAX_CAPACITY, Circuits, Param, Scenario, Suite, Topology, hookimpl

RESOURCES = ("cpu", "mem", "disk")
FIXED_FABRICS = ("all2all", "circuits")
MAX_SERVERS = 1 << 20  # as for the tiered fabric: the per-server state is what grows

PARAMS = [
    # Every ToR pair is a link: 2,048 ToRs are 4 million links, 4 GB and over a minute to compile.
    Param("tors", int, 16, "ToR switches (racks)", positional=True, minimum=2, maximum=2048),
    Param("servers", int, 32, "servers per ToR", minimum=1),
    # At most a capacity's largest (`MAX_CAPACITY`): sums of capacities stay finite.
    Param("cpu", float, 32.0, "CPU cores per server", minimum=0, above=True, maximum=MAX_CAPACITY),
    Param("mem", float, 256.0, "memory per server (GB)", minimum=0, above=True, maximum=MAX_CAPACITY),
    Param("disk", float, 3584.0, "disk per server (GB)", minimum=0, above=True, maximum=MAX_CAPACITY),
    Param("ports", int, 15, "OCS output ports (and as many input ports) per ToR", minimum=1, maximum=4096),
    # At least 1 Mbps: the engine compares capacities to within 1e-9 Gbps, so below that every port looks idle.
    Param("port_gbps", float, 40.0, "capacity of a port, i.e. of one circuit (Gbps)", minimum=0.001, maximum=1e6),
    Param("reconfigurable", bool, True, "whether circuits may be re-pointed during the run"),
    Param("max_hops", int, 1, "circuits a flow may cross: 1 (the paper's direct rack-to-rack bandwidth) "
          "or 2 (ToRs relay)", choices=(1, 2)),
    Param("fixed", str, "all2all", "the fabric of a run without reconfiguration (reconfigurable=no, or a policy's "
          "reconfigure=no): all2all, every ordered ToR pair a share ports × port_gbps / (tors − 1), wavelength-"
          "routed (the paper's ALL2ALL); circuits, the initial circuits (dcbench 0.3)", choices=FIXED_FABRICS),
]


def initial_circuits(tors: int, ports: int) -> np.ndarray:
    """circuits[u, v]: circuits from ToR u to ToR v, spread evenly (a circulant)."""
    circuits = np.zeros((tors, tors), dtype=np.int64)
    offsets = [1 + (k * (tors - 1)) // ports for k in range(ports)]
    for u in range(tors):
        for offset in offsets:
            circuits[u, (u + offset) % tors] += 1
    return circuits


def build(tors=16, servers=32, cpu=32.0, mem=256.0, disk=3584.0, ports=15, port_gbps=40.0,
          reconfigurable=True, max_hops=1, fixed="all2all") -> Topology:
    import networkx as nx

    if tors * servers > MAX_SERVERS:
        raise ValueError(f"tors × servers come to {tors * servers:,} servers, more than the {MAX_SERVERS:,} "
                         "an ocs network may have; give fewer ToRs or servers per ToR")
    circuits = initial_circuits(tors, ports)
    # Each ToR's ports, wavelength-routed to every other ToR in equal shares (an AWGR's all-to-all).
    fixed_gbps = ports * port_gbps / (tors - 1) if fixed == "all2all" else None
    graph = nx.DiGraph()
    server_names = [f"Server_{i}" for i in range(tors * servers)]
    graph.add_nodes_from(server_names)
    tor_names = [f"ToR_{u}" for u in range(tors)]
    for u in range(tors):
        for v in range(tors):
            if u != v:
                gbps = circuits[u, v] * port_gbps if reconfigurable or fixed_gbps is None else fixed_gbps
                graph.add_edge(tor_names[u], tor_names[v], capacity=float(gbps), tier=1)
    n_servers = tors * servers
    return Topology(
        graph=graph,
        servers=server_names,
        resources=RESOURCES,
        capacity=np.tile(np.array([cpu, mem, disk], dtype=np.float64), (n_servers, 1)),
        racks=np.repeat(np.arange(tors), servers),
        pods=np.zeros(n_servers, dtype=np.int64),
        link_unit="Gbps",
        default_workload="vmjobs",
        rack_nodes=tor_names,
        demand_kinds=("job",),
        circuits=Circuits(ports=ports, port_gbps=float(port_gbps), reconfigurable=bool(reconfigurable),
                          max_hops=int(max_hops), fixed_gbps=fixed_gbps),
        info={"family": "ocs", "tors": tors, "servers_per_tor": servers, "label": f"{tors} ToRs × {servers}"},
    )


@hookimpl
def register_topologies(register):
    register(
        "ocs",
        build,
        description="Spine-leaf optical DCN: racks joined by reconfigurable OCS circuits (directed, Gbps)",
        params=PARAMS,
        figures="dcbench.plugins.topologies.ocs_figures:FIGURES",
    )


SEEDS = (0, 1, 2, 3, 4)
LOADS = (54, 60, 66, 72, 78)


def odcn2025_scenarios(measured: int = 10_000) -> tuple[Scenario, ...]:
    """The paper's 16-ToR loads and its two larger networks.

    Each episode is a warm-up of five mean holding times (in jobs: arrivals
    come at rate 1), which the metrics leave out, then ``measured`` jobs."""
    def scenario(topology: str, load: int, name: str) -> Scenario:
        warmup = 5 * load
        return Scenario(topology=topology, workload=f"vmjobs:load={load},warmup={warmup}",
                        requests=warmup + measured, seeds=SEEDS, name=name)

    return tuple(
        [scenario("ocs:16", load, f"16x32-load{load}") for load in LOADS]
        + [scenario("ocs:32,servers=64", 300, "32x64-load300"),
           scenario("ocs:64,servers=128", 1320, "64x128-load1320")]
    )


@hookimpl
def register_suites(register):
    register(Suite(
        name="odcn2025",
        reference="ccf",
        scenarios=odcn2025_scenarios(),
        description="The OCS paper: 16 ToRs × 32 servers at loads 54..78, 32 × 64 at 300, 64 × 128 at 1,320; "
        "ring jobs, warm-up of 5 holding times then 10,000 measured jobs, seeds 0..4",
        primary_metric="blocking_probability",
        higher_is_better=False,
        figures="dcbench.plugins.topologies.ocs_figures:ODCN2025",
    ))
