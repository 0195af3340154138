"""The per-server pool bound (benchmarks/bound_server.py): on tiny instances its integer model equals brute force over
every placement of every accepted set, and no allocator the engine runs beats it, waits or not."""

import itertools
from pathlib import Path

import numpy as np
import pytest

from dcbench.plugins.bounds.pool import held_matrix, pool_bound, pool_instance
from dcbench.plugins.workloads.uniform import UniformWorkload
from tests.conftest import load_script, tiered
from tests.plugins.test_bounds import best_simulated

ROOT = Path(__file__).resolve().parents[2]
server = load_script(ROOT / "benchmarks" / "bound_server.py")

SMALL = "tiered:2,1x1,pods=1,racks=1,servers=3,cpu=2,mem=2"  # three servers of 2 CPU, 2 memory, 2 channels


def least_channels(rule, gives_cpu, used, first_without_cpu):
    """Each server's channels at least, as the model has them, for one placement."""
    cpu_servers, servers = int(gives_cpu.sum()), int(used.sum())
    if rule == "all":
        return np.where(used, servers - 1, 0)
    if rule == "cpu":
        return np.where(gives_cpu, servers - 1, np.where(used, cpu_servers, 0))
    others = int(first_without_cpu is not None)
    channels = np.where(gives_cpu, cpu_servers - 1 + others, 0)
    if first_without_cpu is not None:
        channels[first_without_cpu] = cpu_servers
    return channels


@pytest.mark.parametrize("rule", ["all", "cpu", "reference"])
def test_every_order_of_a_requests_servers_needs_at_least_the_least_channels_and_one_no_more(rule):
    """The model's channels: each server's pairs under the checker's rule, whatever the allocation's order, are at
    least `least_channels` with the first server that gives no CPU in that order; some order needs no more."""
    from dcbench.model.allocation import required_pairs

    for k in range(1, 6):
        for gives_cpu in itertools.product([True, False], repeat=k):
            gives_cpu = np.asarray(gives_cpu)
            if not gives_cpu.any():  # a request asks for some CPU
                continue
            attained = False
            for order in itertools.permutations(range(k)):
                degree = np.zeros(k, dtype=int)
                for a, b in required_pairs(rule, gives_cpu[list(order)].astype(float)):
                    degree[order[a]] += 1
                    degree[order[b]] += 1
                first = next((s for s in order if not gives_cpu[s]), None)
                least = least_channels(rule, gives_cpu, np.ones(k, dtype=bool), first)
                assert (degree >= least).all(), (gives_cpu, order)
                attained = attained or (degree == least).all()
            assert attained, gives_cpu


def placements(demand, capacity, rule):
    """Every whole split of ``demand`` over the servers, with its channels: (servers, resources + 1) uses."""
    servers = len(capacity)
    per_server = [list(itertools.product(*(range(int(min(c, d)) + 1) for c, d in zip(cap, demand))))
                  for cap in capacity]
    found = set()
    for split in itertools.product(*per_server):
        amounts = np.asarray(split, dtype=float)
        if not np.array_equal(amounts.sum(axis=0), demand):
            continue
        used, gives_cpu = amounts.sum(axis=1) > 0, amounts[:, 0] > 0
        without = [s for s in range(servers) if used[s] and not gives_cpu[s]]
        for first in (without if rule == "reference" and without else [None]):
            channels = least_channels(rule, gives_cpu, used, first)
            found.add(tuple(map(tuple, np.column_stack([amounts, channels]))))
    return [np.asarray(p) for p in sorted(found)]


def brute_force_servers(network, sequence):
    """The per-server model's optimum without waits and with whole amounts: the most measured requests accepted, each
    placed on servers for its whole life, the held ones and the offered one fitting every server at every offer."""
    instance = pool_instance(network, sequence)
    held = held_matrix(instance)
    limit = np.column_stack([network.server_capacity, network.link_capacity[network.server_link]])
    options = [placements(d, network.server_capacity, sequence.connectivity) for d in instance.demand]
    n = len(instance.demand)
    memo = {}

    def best(i, placed):
        if i == n:
            return 0
        placed = tuple((j, p) for j, p in placed if held[j, i:].any())  # only those still held at some offer
        key = (i, tuple((j, p.tobytes()) for j, p in placed))
        if key not in memo:
            value = best(i + 1, placed)
            if not instance.skipped[i]:
                load = sum((p for j, p in placed if held[j, i]), np.zeros_like(limit))
                for option in options[i]:
                    if (load + option <= limit).all():
                        value = max(value, int(instance.measured[i]) + best(i + 1, placed + ((i, option),)))
            memo[key] = value
        return memo[key]

    return best(0, ())


def whole(model):
    """Make the model's amounts whole (brute force's): every split the brute force tries, and no other."""
    amounts = model.amounts()
    model.integrality[amounts] = 1
    model.upper[amounts] = np.floor(model.upper[amounts])


def small(seed, pairs, wait=False, n=6, servers=3, max_cpu=4, max_mem=4):
    network = tiered(SMALL.replace("servers=3", f"servers={servers}"))
    workload = UniformWorkload(max_cpu=max_cpu, max_mem=max_mem, min_cpu=1, min_mem=0, hold=3, wait=wait, pairs=pairs)
    return network, workload.generate(network, n, np.random.default_rng(seed))


@pytest.mark.parametrize("seed,pairs", [(0, "reference"), (1, "reference"), (2, "all"), (3, "cpu"),
                                        (4, "reference"), (5, "reference")])
def test_with_whole_amounts_the_per_server_model_equals_brute_force(seed, pairs):
    network, sequence = small(seed, pairs)
    model = server.ServerModel(network, sequence)
    whole(model)
    exact = server.solve(model)
    assert exact.status == "optimal"
    assert exact.accepted == brute_force_servers(network, sequence)
    assert server.server_bound(network, sequence).accepted >= exact.accepted  # amounts split anyhow: never fewer


def test_the_per_server_model_can_be_tighter_than_the_pooled_one():
    """Four servers of 2 CPU and 2 channels: the pooled model accepts 4, placements that stay put 3."""
    network, sequence = small(16, "reference", n=7, servers=4, max_cpu=5, max_mem=3)
    model = server.ServerModel(network, sequence)
    whole(model)
    assert server.solve(model).accepted == brute_force_servers(network, sequence) == 3
    assert server.server_bound(network, sequence).accepted == 3 >= best_simulated(network, sequence)
    assert pool_bound(pool_instance(network, sequence), "milp").accepted == 4


@pytest.mark.parametrize("seed,wait,pairs", [(0, True, "all"), (1, True, "reference"), (2, False, "all"),
                                             (3, False, "reference"), (4, True, "all"), (5, True, "reference")])
def test_no_allocator_the_engine_runs_beats_the_per_server_bound(seed, wait, pairs):
    network = tiered("tiered:2,1x1,pods=1,racks=2,servers=2")
    workload = UniformWorkload(max_cpu=40, max_mem=24, hold=4, wait=wait, pairs=pairs)
    sequence = workload.generate(network, 7, np.random.default_rng(seed))
    bound = server.server_bound(network, sequence)
    assert bound.status == "optimal"
    assert pool_bound(pool_instance(network, sequence), "milp").accepted >= bound.accepted
    assert bound.accepted >= best_simulated(network, sequence)
