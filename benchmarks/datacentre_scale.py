"""Data-centre scale (#34, docs/performance.md): what a 65,536-server fabric costs.

For each fabric: the time to build the topology and compile it, the time to
find the candidate paths of 1,000 new pairs of rack switches (random, seed
0, an empty catalogue: a pair drawn again is found in it), and this process's
peak resident memory. Then the whole runs, as ``dcbench bench`` times them:

    python benchmarks/datacentre_scale.py
    dcbench bench -t tiered:32,1x4 -t tiered:32,1x4,pods=64,racks=64 -a tetris,nalb -n 4096 --repeat 1
    dcbench bench -t ocs:64,servers=128 -a jcb -n 4096 --repeat 1
"""

from __future__ import annotations

import resource
import time

import numpy as np

from dcbench import Network
from dcbench.harness import get_registry

TOPOLOGIES = ("tiered:32,1x4", "tiered:32,1x4,pods=16,racks=32", "tiered:32,1x4,pods=64,racks=64",
              "ocs:64,servers=128")
PAIRS = 1000
REPEAT = 3


def main() -> None:
    registry = get_registry()
    print("| topology | servers | build s | compile s | µs per new switch pair (k=3) | peak RSS MB (so far) |")
    print("|---|---:|---:|---:|---:|---:|")
    for spec in TOPOLOGIES:
        build = compile_ = search = float("inf")
        for _ in range(REPEAT):
            start = time.perf_counter()
            topology = registry.build("topology", spec).obj
            built = time.perf_counter()
            network = Network.compile(topology)
            compiled = time.perf_counter()
            build, compile_ = min(build, built - start), min(compile_, compiled - built)
            search = min(search, _new_pairs(network))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"| {spec} | {network.n_servers:,} | {build:.2f} | {compile_:.2f} | {1e6 * search / PAIRS:,.1f} "
              f"| {peak:,.0f} |")


def _new_pairs(network: Network) -> float:
    """Seconds to find the paths of `PAIRS` random pairs of rack switches, cold."""
    catalogue = network.private_copy().catalogue(3)
    racks = np.unique(np.asarray(network.server_attachment)) if network.rack_node is None else network.rack_node
    racks = racks[racks >= network.n_servers] if network.rack_node is None else racks
    rng = np.random.default_rng(0)
    pairs = [tuple(rng.choice(racks, 2, replace=False).tolist()) for _ in range(PAIRS)]
    start = time.perf_counter()
    for a, b in pairs:
        catalogue.between_nodes(a, b)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
