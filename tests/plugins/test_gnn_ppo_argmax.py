"""`BoundedArgmax`: the arg-max of the whole pass, from the bounds and few servers' exact logits."""

import json

import numpy as np
import pytest
import torch

from dcbench.plugins.allocators.gnn_ppo import model as gnn_model
from dcbench.plugins.allocators.gnn_ppo.allocator import GnnPpoAllocator
from dcbench.plugins.allocators.gnn_ppo.argmax import BoundedArgmax
from dcbench.plugins.allocators.gnn_ppo.model import as_tensors

TOPOLOGIES = ["tiered:8,1x4", "tiered:32,1x16", "tiered:16,1x8,pods=8,racks=8"]


def tables(result) -> dict:
    return {name: repr(np.asarray(column).tolist()) for part in (result.tables.requests, result.tables.timeline)
            for name, column in part.items()}


def observed(runner, topology, requests=16):
    """Every decision's observation of a gnn_ppo run, with its allocator."""
    seen = []
    choose = GnnPpoAllocator.choose

    def recording(self, builder, allowed):
        seen.append(({k: v[None] for k, v in self.features.observe(builder, self._state).items()}, self))
        return choose(self, builder, allowed)

    GnnPpoAllocator.choose = recording
    try:
        runner.run("gnn_ppo", topology, requests=requests, seed=2)
    finally:
        GnnPpoAllocator.choose = choose
    return seen


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_each_servers_logit_is_within_its_bound_and_computed_alone_as_in_the_whole_pass(runner, topology):
    checked = 0
    for observation, allocator in observed(runner, topology):
        nodes, edges, globals_, mask = (x[0] for x in as_tensors(observation))
        chosen = np.flatnonzero(nodes[:len(mask), 2].numpy())
        if len(chosen) == 0:
            continue  # the bound needs the pooled embedding of a chosen server
        bounded = BoundedArgmax(allocator.greedy.model, allocator.edge_index, len(edges), len(nodes))
        with torch.no_grad():
            whole = allocator.greedy.logits(observation, allocator.edge_index)[0]
            bias = bounded.bias(nodes, edges, globals_, chosen, len(mask))
            bounds = bounded.bounds(nodes[:len(mask)], bias)
            some = np.flatnonzero(mask.numpy())[::7]
            assert torch.equal(bounded.logits(nodes, edges, bias, some), whole[torch.from_numpy(some)])
        allowed = mask.bool()
        assert (whole[allowed] <= bounds[allowed]).all()
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_the_bounded_arg_max_is_the_whole_passs(runner, topology):
    decided = []
    for observation, allocator in observed(runner, topology):
        nodes, edges, globals_, mask = (x[0] for x in as_tensors(observation))
        bounded = BoundedArgmax(allocator.greedy.model, allocator.edge_index, len(edges), len(nodes))
        with torch.no_grad():
            server = bounded(nodes, edges, globals_, mask)
        if server is not None:
            whole = int(torch.argmax(allocator.greedy.logits(observation, allocator.edge_index)[0]))
            decided.append(server == whole)
    assert len(decided) > 20 and all(decided)


def test_an_embedding_on_its_neighbourhood_is_the_whole_passs_bit_for_bit(runner):
    observation, allocator = observed(runner, "tiered:16,1x8,pods=8,racks=8")[5]
    nodes, edges, globals_, mask = (x[0] for x in as_tensors(observation))
    model = allocator.greedy.model
    bounded = BoundedArgmax(model, allocator.edge_index, len(edges), len(nodes))
    servers = np.array([0, 3, 17, 600, 1023])
    with torch.no_grad():
        h = nodes.double()
        for layer, conv in enumerate(model.convs):
            h = model._message_sums[0 if layer < len(model.convs) - 1 else 1].layer(conv.linear, h, edges.double())
        whole = h[torch.from_numpy(servers)]
        assert torch.equal(bounded.embed(nodes, edges, servers), whole)


def test_the_first_server_of_a_request_is_left_to_the_whole_pass(runner):
    observation, allocator = observed(runner, "tiered:8,1x4")[0]
    nodes, edges, globals_, mask = (x[0] for x in as_tensors(observation))
    assert not nodes[:len(mask), 2].any()
    bounded = BoundedArgmax(allocator.greedy.model, allocator.edge_index, len(edges), len(nodes))
    assert bounded(nodes, edges, globals_, mask) is None


@pytest.fixture(scope="module")
def deeper_checkpoint(tmp_path_factory):
    """Random weights of another shape: 4 layers of 24, the fit-last hint."""
    torch.manual_seed(3)
    model = gnn_model.GraphPolicy(hidden=24, layers=4, extra_features=6, sixth_hint="fit_last")
    path = tmp_path_factory.mktemp("deeper") / "deeper.pt"
    torch.save({"model": model.state_dict(), "config": json.dumps(model.config)}, path)
    return path


@pytest.mark.parametrize("topology", ["tiered:8,1x4", "tiered:16,1x8,pods=8,racks=8"])
@pytest.mark.parametrize("deeper", [False, True])
def test_runs_decided_by_the_bounds_are_the_runs_of_the_whole_pass(runner, topology, deeper, deeper_checkpoint,
                                                                   monkeypatch):
    allocator = f"gnn_ppo:checkpoint={deeper_checkpoint}" if deeper else "gnn_ppo"
    whole = tables(runner.run(allocator, topology, requests=48, seed=1))
    calls = []
    call = BoundedArgmax.__call__
    monkeypatch.setattr(BoundedArgmax, "__call__", lambda self, *a: calls.append(call(self, *a)) or calls[-1])
    monkeypatch.setattr(gnn_model, "BOUNDED_FROM", 0)
    assert tables(runner.run(allocator, topology, requests=48, seed=1)) == whole
    assert sum(server is not None for server in calls) > 0.5 * len(calls)  # the bounds decided most


@pytest.mark.slow  # two runs at 8,192 servers
def test_at_8192_servers_the_allocators_run_is_the_whole_passs(runner, monkeypatch):
    topology = "tiered:32,1x4,pods=16,racks=32"
    calls = []
    call = BoundedArgmax.__call__
    monkeypatch.setattr(BoundedArgmax, "__call__", lambda self, *a: calls.append(call(self, *a)) or calls[-1])
    bounded = tables(runner.run("gnn_ppo", topology, requests=96, seed=0))
    assert sum(server is not None for server in calls) > 0.5 * len(calls)
    monkeypatch.setattr(gnn_model, "BOUNDED_FROM", 10**9)
    assert tables(runner.run("gnn_ppo", topology, requests=96, seed=0)) == bounded
