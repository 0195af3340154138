"""dcbench.testing: each check passes a plugin that honours its kind's
contracts and fails, naming the contract, on one with a planted defect.

The plugins are defined here and registered as a third party's would be,
from a plugin module loaded through an entry point (`create_registry`)."""

import importlib.metadata
import pickle
import re
import sys
import types
from dataclasses import dataclass

import networkx as nx
import numpy as np
import pytest

from dcbench import (
    Allocation,
    Column,
    Param,
    PoolAllocator,
    Reject,
    RequestSequence,
    Scenario,
    SpecError,
    Suite,
    Topology,
    hookimpl,
)
from dcbench.registry import create_registry
from dcbench.testing import ContractError, check_allocator, check_metric, check_suite, check_topology, check_workload

# ----- allocators -------------------------------------------------------------


class FirstFit(PoolAllocator):
    """The lowest-numbered server that can still help (the example's)."""

    def choose(self, builder, allowed):
        return int(np.flatnonzero(allowed)[0])


class Impossible(PoolAllocator):
    """Grants every request from server 0, far beyond its capacity."""

    def allocate(self, request, state):
        return Allocation(servers=np.array([0]), amounts=np.array([request.demand]) * 1000)


class Unseeded(PoolAllocator):
    """Draws from a generator of its own, not from the run's."""

    def choose(self, builder, allowed):
        return int(np.random.default_rng().choice(np.flatnonzero(allowed)))


class Remembers(PoolAllocator):
    """Seeded, but keeps a count from one run to the next."""

    runs = []

    def reset(self, network, rng):
        super().reset(network, rng)
        self.runs.append(1)

    def choose(self, builder, allowed):
        candidates = np.flatnonzero(allowed)
        return int(candidates[len(self.runs) % len(candidates)])


class Raises(PoolAllocator):
    def allocate(self, request, state):
        raise RuntimeError("boom")


class Refuses(PoolAllocator):
    def allocate(self, request, state):
        return Reject("not today")


class Slow(FirstFit):
    """Right, but a tenth of a second a decision."""

    def allocate(self, request, state):
        import time

        time.sleep(0.1)
        return super().allocate(request, state)


# ----- workloads --------------------------------------------------------------


@dataclass(frozen=True)
class Bursty:
    """The guide's workload: everything drawn from ``rng``."""

    kind: str = "pool"
    flaw: str = "none"

    def generate(self, network, requests, rng):
        if self.flaw == "fixed":
            rng = np.random.default_rng(0)  # ignores the seed
        elif self.flaw == "unseeded":
            rng = np.random.default_rng()  # ignores the seed, differently every time
        # A stream per quantity, so that a longer episode begins with a shorter one; one stream for all with
        # flaw=sequential, so that the memory draws follow the whole episode's CPU draws.
        cpu, mem, gaps, holding = [rng] * 4 if self.flaw == "sequential" else rng.spawn(4)
        demand = np.zeros((requests, len(network.resources)))
        demand[:, 0] = cpu.integers(1, 16, requests, endpoint=True)
        demand[:, 1] = mem.integers(1, 16, requests, endpoint=True)
        if self.flaw == "negative":
            demand[3, 1] = -2
        return RequestSequence(kind="pool", gaps=gaps.exponential(1.0, requests),
                               holding=holding.integers(1, 30, requests, endpoint=True).astype(float),
                               demand=demand, connectivity="all")


# ----- topologies -------------------------------------------------------------


def star(servers=8, channels=4, resources=2, default_workload="uniform", tier="1"):
    """The guide's topology: servers around one switch (tier=none: links without a tier)."""
    graph = nx.Graph()
    names = [f"s{i}" for i in range(servers)]
    for name in names:
        graph.add_edge(name, "hub", capacity=channels, tier=None if tier == "none" else int(tier))
    return Topology(graph=graph, servers=names, resources=("cpu", "mem"),
                    capacity=np.full((servers, resources), 16.0), racks=np.zeros(servers, int),
                    pods=np.zeros(servers, int), default_workload=default_workload)


# ----- metrics ----------------------------------------------------------------


def no_path(tables, network):
    """The guide's metric, counting only what is measured."""
    requests = tables.requests
    offered = requests["measured"] & (requests["outcome"] != "skipped")
    refused = offered & (requests["reason"] == "no_path")
    return {"no_path_share": float(refused.sum() / offered.sum()) if offered.any() else float("nan")}


def fickle(tables, network):
    """A busy share only where something was accepted."""
    accepted = tables.requests["outcome"] == "accepted"
    return {"idle_share": 0.0, **({"busy_share": 1.0} if accepted.any() else {})}


def wordy(tables, network):
    return {"mood_share": "fine"}


# ----- the plugin module ------------------------------------------------------


@hookimpl
def register_topologies(register):
    params = [Param("servers", int, 8, positional=True), Param("resources", int, 2),
              Param("default_workload", str, "uniform"), Param("tier", str, "1")]
    register("star", star, description="servers around one switch", params=params)


@hookimpl
def register_workloads(register):
    flaws = ("none", "fixed", "unseeded", "negative", "sequential")
    register("bursty", Bursty, description="exponential gaps", params=[Param("flaw", str, "none", choices=flaws)])


@hookimpl
def register_allocators(register):
    for name, allocator in [("firstfit", FirstFit), ("impossible", Impossible), ("unseeded", Unseeded),
                            ("remembers", Remembers), ("raises", Raises), ("refuses", Refuses), ("slow", Slow)]:
        register(name, allocator, description=allocator.__doc__ or name, demands=("pool",))


@hookimpl
def register_metrics(register):
    register("no_path", no_path, description="requests refused for want of a path",
             columns=[Column("no_path_share", "refused for want of a path", "lower")])
    register("fickle", fickle, description="columns that come and go")
    register("wordy", wordy, description="text, not a number")
    register("boastful", lambda tables, network: {"real_share": 0.0}, description="declares what it never writes",
             columns=[Column("ghost_share", "a ghost", "lower")])


@hookimpl
def register_suites(register):
    register(Suite("stars", (Scenario("star:8", "bursty", requests=20, seeds=(0, 1)),), description="good",
                   primary_metric="no_path_share", higher_is_better=False, metrics=("no_path",)))
    register(Suite("unlisted", (Scenario("star:8", "bursty", requests=20),), primary_metric="no_path_share",
                   higher_is_better=False, description="ranked by a metric its sweep does not compute"))
    register(Suite("twins", (Scenario("star:8", requests=20, name="a"), Scenario("star:servers=8", requests=20,
                                                                                  name="b")),
                   description="two scenarios of the same runs"))
    register(Suite("misnamed", (Scenario("star:8", requests=20),), metrics=("no_paths",),
                   description="a metric no plugin registers"))
    register(Suite("lost", (Scenario("star:8", requests=20), Scenario("nebula:3", requests=20)),
                   description="an unregistered topology"))
    register(Suite("unranked", (Scenario("star:8", requests=20),), primary_metric="no_path_count",
                   description="ranked by a column nobody declares"))
    register(Suite("upside_down", (Scenario("star:8", "bursty", requests=20),), primary_metric="no_path_share",
                   metrics=("no_path",), description="ranks the share of refusals up"))


@pytest.fixture(scope="module")
def probes():
    """A registry of the built-in plugins and this file's, as a third party's plugin module."""
    module = types.ModuleType("dcbench_contract_probes")
    for hook in (register_topologies, register_workloads, register_allocators, register_metrics, register_suites):
        setattr(module, hook.__name__, hook)
    sys.modules[module.__name__] = module
    try:
        registry = create_registry([importlib.metadata.EntryPoint("probes", module.__name__, "dcbench")])
        assert registry.failures == []
        yield registry
    finally:
        del sys.modules[module.__name__]


def fails(check, name, contract, seen, **kwargs):
    """``check(name)`` raises a ContractError naming the plugin and ``contract``, with ``seen`` in what it saw."""
    with pytest.raises(ContractError) as raised:
        check(name, **kwargs)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f'{raised.value.kind} {name!r} broke "{contract}": '), message
    assert re.search(seen, raised.value.seen), message
    return raised.value


# ----- the good ones pass -----------------------------------------------------


@pytest.mark.parametrize(("check", "name"), [(check_allocator, "firstfit"), (check_topology, "star"),
                                             (check_topology, "star:8,default_workload=bursty"),
                                             (check_workload, "bursty"), (check_metric, "no_path"),
                                             (check_suite, "stars")])
def test_a_plugin_that_keeps_its_contracts_passes(probes, check, name):
    assert check(name, registry=probes) is None


def test_the_checks_take_the_scenario_they_are_given(probes):
    check_allocator("firstfit", topology="star:16", workload="bursty", registry=probes)
    check_workload("bursty", topology="star:16", registry=probes)
    check_metric("no_path", topology="tiered:8,1x1", registry=probes)
    with pytest.raises(ContractError, match=r'"accepts requests with room to spare": pools on star:2 with '
                                            r"uniform:min_cpu=200,max_cpu=300"):
        check_allocator("firstfit", topology="star:2", workload="uniform:min_cpu=200,max_cpu=300", registry=probes)


# ----- allocators -------------------------------------------------------------


def test_an_impossible_allocation_fails_with_the_engines_detail(probes):
    fails(check_allocator, "impossible", "valid allocations on easy requests",
          r"^pools on tiered:8,1x4 with uniform:max_cpu=32,max_mem=32, request 0: \S", registry=probes)


def test_an_allocator_that_ignores_its_seed_fails(probes):
    fails(check_allocator, "unseeded", "the same decisions for the same seed",
          r"two runs of seed 0: request \d+: servers \[[\d, ]+\], then \[[\d, ]+\]$", registry=probes)


def test_an_allocator_that_keeps_state_from_one_run_to_the_next_fails(probes):
    fails(check_allocator, "remembers", "the same decisions for the same seed", "request 0: servers", registry=probes)


def test_an_allocator_that_raises_fails_and_keeps_the_exception(probes):
    error = fails(check_allocator, "raises", "runs without raising", "RuntimeError: boom", registry=probes)
    assert error.__cause__ is not None


def test_an_allocator_that_accepts_nothing_fails(probes):
    fails(check_allocator, "refuses", "accepts requests with room to spare", "none of 60 small requests",
          registry=probes)


def test_a_bad_spec_is_the_callers_error_not_the_plugins(probes):
    from dcbench import SpecError, UnknownPluginError

    with pytest.raises(UnknownPluginError):
        check_allocator("firstfti", registry=probes)
    with pytest.raises(SpecError):
        check_allocator("firstfit", topology="tiered:8,1x5", registry=probes)


# ----- workloads --------------------------------------------------------------


def test_a_workload_that_ignores_its_seed_fails(probes):
    fails(check_workload, "bursty:flaw=fixed", "other requests for another seed", "seeds 0 and 1 give the same",
          registry=probes)
    check_workload("bursty:flaw=fixed", varies_with_seed=False, registry=probes)  # a trace's replay may


def test_a_workload_that_draws_from_another_generator_fails(probes):
    fails(check_workload, "bursty:flaw=unseeded", "the same requests for the same seed",
          "two draws of seed 0 differ in gaps", registry=probes)


def test_a_workload_whose_first_requests_depend_on_the_episode_length_fails(probes):
    fails(check_workload, "bursty:flaw=sequential", "a longer episode of a seed that begins with the shorter one",
          "the first 50 of 100 requests of seed 0 differ from 50 drawn alone in gaps", registry=probes)


def test_a_negative_demand_fails(probes):
    fails(check_workload, "bursty:flaw=negative", "demands non-negative and not all zero",
          r"request 3 demands \[\d+\.0, -2\.0\]", registry=probes)


# ----- topologies -------------------------------------------------------------


def test_a_capacity_of_the_wrong_shape_fails(probes):
    fails(check_topology, "star:resources=1", "servers, capacities and labels the model accepts",
          r"capacity has shape \(8, 1\), expected \(servers, resources\) = \(8, 2\)", registry=probes)


@pytest.mark.parametrize(("spec", "contract", "seen"), [
    # the product: `dcbench run` fails on the tier's column (link_util_tier-1), Network.compile on a tier of None
    ("star:tier=-1", "every link of a tier from 0 (1 nearest the servers)", r"^the link 's0'-'hub' has tier -1$"),
    ("star:tier=none", "compiles into a network", r"^Network.compile: TypeError: int\(\) argument")])
def test_a_link_without_a_usable_tier_fails_as_the_product_refuses_it(probes, spec, contract, seen):
    from dcbench import DcbenchError
    from dcbench.running.runner import Runner

    with pytest.raises(DcbenchError, match=r"tier-1|does not compile"):
        Runner(probes).run("random", spec, requests=20)
    fails(check_topology, spec, contract, seen, registry=probes)


def test_an_unregistered_default_workload_fails(probes):
    fails(check_topology, "star:default_workload=nonesuch", "a default workload that is registered and serves it "
          "(or None)", "default_workload='nonesuch'; registered: .*bursty", registry=probes)


# ----- metrics ----------------------------------------------------------------


def test_a_metric_whose_columns_come_and_go_fails(probes):
    fails(check_metric, "fickle", "the same columns whatever the run did",
          r"^run 3 \(nothing accepted, pools on tiered:8,1x4 with uniform:max_cpu=32,max_mem=32\) lacks "
          r"\['busy_share'\], beside run 1 \(random, seed 0, pools on", registry=probes)


def test_a_metric_that_returns_text_fails(probes):
    fails(check_metric, "wordy", "a number in every column", r"^run 1 \(random, seed 0, .*\): mood_share='fine'$",
          registry=probes)


def test_a_metric_that_never_writes_a_column_it_declares_fails(probes):
    fails(check_metric, "boastful", "writes every column it declares",
          r"it declares 'ghost_share' for pool/job runs, but no run has it \(they have \['real_share'\]\)",
          registry=probes)


# ----- suites -----------------------------------------------------------------


def test_a_suite_with_a_scenario_that_does_not_resolve_fails(probes):
    fails(check_suite, "lost", "every scenario resolves", r"^scenario 'nebula:3': UnknownPluginError: .*'nebula'",
          registry=probes)


def test_a_suite_ranked_by_an_undeclared_column_fails(probes):
    fails(check_suite, "unranked", "a primary metric that a metric its sweep computes declares",
          r"\(dcbench's own\) declares 'no_path_count'; declared: acceptance_ratio, ",
          registry=probes)


def test_a_suite_that_ranks_against_its_column_fails(probes):
    fails(check_suite, "upside_down", "ranks as its primary metric says",
          "higher_is_better=True but 'no_path_share' is better lower", registry=probes)


def test_a_suite_ranked_by_a_metric_its_sweep_does_not_compute_fails(probes):
    # its sweep would run every run, then find no no_path_share column (sweep.check_ranked_by)
    fails(check_suite, "unlisted", "a primary metric that a metric its sweep computes declares",
          r"no metric a sweep of it computes \(dcbench's own\) declares 'no_path_share'; metric 'no_path' declares "
          r"it, but a sweep computes it only where the suite lists it in metrics=", registry=probes)


@pytest.mark.parametrize(("name", "seen"), [
    ("twins", r"^sweep -s twins -a random: PluginError: .*'a' and 'b', which resolve to the same runs"),
    ("misnamed", r"^sweep -s misnamed -a random: UnknownPluginError: suite 'misnamed', .*unknown metric 'no_paths'")])
def test_a_suite_that_sweep_refuses_before_running_fails(probes, name, seen):
    from dcbench.running.runner import Runner
    from dcbench.running.sweep import plan

    with pytest.raises(Exception):  # noqa: B017 (the product refuses it: the kit must too)
        plan(Runner(probes), probes.get("suite", name), ["random"])
    fails(check_suite, name, "a suite `dcbench sweep` plans", seen, registry=probes)


# ----- time -------------------------------------------------------------------


def test_a_slow_allocator_fails_on_its_time_bound_at_the_decision_it_reached(probes):
    error = fails(check_allocator, "slow", "its check takes at most 0.35 s",
                  r"^\d+\.\d s in, at run 1 of pools on tiered:8,1x4 with uniform:max_cpu=32,max_mem=32, "
                  r"request \d+; pass time_limit= a larger bound", registry=probes, time_limit=0.35)
    assert error.__cause__ is None


@pytest.mark.parametrize(("check", "name"), [(check_allocator, "firstfit"), (check_topology, "star"),
                                             (check_workload, "bursty"), (check_metric, "no_path"),
                                             (check_suite, "stars")])
def test_every_check_is_bounded_in_time(probes, check, name):
    fails(check, name, "its check takes at most 1e-09 s", r"^\d+\.\d s in, (at|after) ", registry=probes,
          time_limit=1e-9)
    with pytest.raises(SpecError, match=r"time_limit=0 is not a positive number of seconds"):
        check(name, registry=probes, time_limit=0)


def test_a_contract_error_is_an_assertion_error_that_pickles():
    error = ContractError("metric", "x", "a contract", "what was seen")
    assert isinstance(error, AssertionError)
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) == "metric 'x' broke \"a contract\": what was seen"
    assert (again.kind, again.name, again.contract, again.seen) == ("metric", "x", "a contract", "what was seen")


def test_importing_it_imports_neither_pytest_nor_the_harness():
    import subprocess

    code = ("import sys; import dcbench.testing; "
            "print(sorted(m for m in ('pytest', 'dcbench.harness', 'torch', 'pyarrow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
