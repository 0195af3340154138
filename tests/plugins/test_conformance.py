"""Every registered plugin of each kind honours its contract."""

import math

import numpy as np
import pytest

from dcbench import Network
from dcbench.harness import get_registry
from dcbench.registry import create_registry

REGISTRY = get_registry()
# The smallest useful spec of every topology family, for running the others on it.
SMALL = {"tiered": "tiered:8,1x4", "ocs": "ocs:16,servers=2"}  # 16 ToRs: a shipped a2c checkpoint
# Small episodes: the warm-up must leave something to measure.
WORKLOAD = {"ocs": "vmjobs:load=8,warmup=10"}


def names(kind):
    return sorted(REGISTRY.entries(kind))


def network_for(topology_name):
    spec = SMALL.get(topology_name, topology_name)
    return Network.compile(REGISTRY.build("topology", spec).obj)


@pytest.mark.parametrize("name", names("topology"))
def test_topology(name):
    entry = REGISTRY.get("topology", name)
    assert entry.description
    network = network_for(name)
    assert network.n_servers > 0 and network.n_links > 0
    assert network.server_capacity.shape == (network.n_servers, len(network.resources))
    assert (network.server_capacity > 0).all() and (network.link_capacity >= 0).all()
    assert network.link_capacity.sum() > 0
    assert len(network.racks) == len(network.pods) == network.n_servers
    assert network.default_workload in REGISTRY.entries("workload")
    assert network.demand_kinds and set(network.demand_kinds) <= {"pool", "job"}
    if "pool" in network.demand_kinds:
        # every server reaches every other one
        assert all(network.paths.between_servers(0, b) for b in range(1, network.n_servers, 7))
    if "job" in network.demand_kinds:
        # every rack has a switch, and a link (perhaps of no capacity yet) to every other rack's
        assert network.rack_node is not None and len(network.rack_node) == network.n_racks
        nodes = network.rack_node.tolist()
        assert all((a, b) in network.link_of_pair or (b, a) in network.link_of_pair
                   for a in nodes for b in nodes if a != b)


@pytest.mark.parametrize("name", names("workload"))
def test_workload(name):
    workload = REGISTRY.build("workload", name).obj
    topology = next(t for t in names("topology") if network_for(t).default_workload == name)
    network = network_for(topology)
    first = workload.generate(network, 50, np.random.default_rng(0))
    again = workload.generate(network, 50, np.random.default_rng(0))
    assert len(first) == 50 and first.demand.shape == (50, len(network.resources))
    assert (first.demand >= 0).all() and (first.demand.sum(axis=1) > 0).all()
    assert (first.holding > 0).all() and (first.gaps >= 0).all()
    assert np.array_equal(first.demand, again.demand) and np.array_equal(first.holding, again.holding)


@pytest.mark.parametrize("name", names("allocator"))
def test_allocator(name, runner):
    entry = REGISTRY.get("allocator", name)
    assert entry.description and entry.extra.get("demands")
    for topology in names("topology"):
        network = network_for(topology)
        workload = REGISTRY.build("workload", network.default_workload).obj
        if workload.kind not in entry.extra["demands"]:
            continue
        spec = SMALL.get(topology, topology)
        workload = WORKLOAD.get(topology)
        first = runner.run(name, spec, workload, requests=60, seed=11)
        second = runner.run(name, spec, workload, requests=60, seed=11)
        assert first.summary["accepted"] > 0
        assert first.summary["invalid_allocations"] == 0
        assert np.array_equal(first.tables.requests["outcome"], second.tables.requests["outcome"])


@pytest.mark.parametrize("name", names("metric"))
@pytest.mark.parametrize("topology", sorted(SMALL))
def test_metric(name, topology, runner):
    spec = SMALL[topology]
    result = runner.run("random", spec, WORKLOAD.get(topology), requests=60)
    columns = REGISTRY.get("metric", name).load()(result.tables, runner.network(spec)[1])
    assert columns and all(isinstance(k, str) for k in columns)
    assert all(isinstance(v, float) or isinstance(v, (int, np.floating)) for v in columns.values())
    assert any(not math.isnan(float(v)) for v in columns.values())
    # of the headline columns it declares for the demands of this topology, it gives some (a topology without
    # disks has no disk_util, say, but a metric whose declared headlines all miss has misnamed them)
    kinds = network_for(topology).demand_kinds
    headlines = [c for c in REGISTRY.get("metric", name).columns if any(c.is_headline(kind) for kind in kinds)]
    if headlines:
        assert any(column.matches(list(columns)) for column in headlines), (headlines, list(columns))
    # a run that measured nothing (a warm-up as long as the run) has the same columns: NaN or a count of none
    result.tables.requests["measured"] = np.zeros_like(result.tables.requests["measured"])
    nothing = REGISTRY.get("metric", name).load()(result.tables, runner.network(spec)[1])
    assert list(nothing) == list(columns)
    assert all(math.isnan(float(v)) or v == 0 for v in nothing.values())


@pytest.mark.parametrize("name", names("suite"))
def test_suite(name):
    suite = REGISTRY.entries("suite")[name]
    assert suite.scenarios and suite.description
    for scenario in suite.scenarios:
        REGISTRY.build("topology", scenario.topology)
        if scenario.workload:
            REGISTRY.build("workload", scenario.workload)


def test_builtins_alone_register_the_same_names():
    bare = create_registry([])
    for kind in ("topology", "workload", "allocator", "metric"):
        assert set(bare.entries(kind)) <= set(REGISTRY.entries(kind))
