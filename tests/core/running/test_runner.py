import importlib
import importlib.metadata
import re

import numpy as np
import pytest

from dcbench import IncompatibleError, PluginError, SpecError, UnknownPluginError
from dcbench.harness import Runner
from dcbench.registry import create_registry
from dcbench.running.runner import metrics_of, run_hash
from dcbench.running.summary import RUN_IDENTITY


def same(a, b):
    return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def test_same_seed_same_tables(runner):
    first = runner.run("random", "tiered:8,1x4", requests=64, seed=3)
    second = runner.run("random", "tiered:8,1x4", requests=64, seed=3)
    assert first.run_id == second.run_id
    for name in first.tables.requests:
        assert same(first.tables.requests[name], second.tables.requests[name]), name
    for name in first.tables.timeline:
        assert same(first.tables.timeline[name], second.tables.timeline[name]), name
    assert first.summary.keys() == second.summary.keys()
    assert all(v == second.summary[k] or (v != v and second.summary[k] != second.summary[k])
               for k, v in first.summary.items())


def test_other_seed_other_requests(runner):
    a = runner.run("tetris", "tiered:8,1x4", requests=64, seed=0)
    b = runner.run("tetris", "tiered:8,1x4", requests=64, seed=1)
    assert not np.array_equal(a.tables.requests["demand_cpu"], b.tables.requests["demand_cpu"])
    assert a.run_id != b.run_id


def test_every_allocator_sees_the_same_request_sequence(runner):
    names = ("random", "tetris", "tetris:penalty=0.5")
    runs = [runner.run(name, "tiered:8,1x4", requests=64, seed=7) for name in names]
    for column in ("demand_cpu", "demand_mem", "holding_time", "size"):
        assert all(np.array_equal(runs[0].tables.requests[column], r.tables.requests[column]) for r in runs)
    assert len({r.run_id for r in runs}) == 3


def test_summary_columns(runner):
    summary = runner.run("tetris", "tiered:8,1x4", requests=32).summary
    for column in ("run_id", "allocator", "topology", "workload", "seed", "requests", "accepted",
                   "acceptance_ratio", "cpu_util", "mem_util", "link_util_tier1", "link_util_tier2",
                   "link_util_tier3", "cpu_util_last25", "acceptance_size_1", "spread_rack"):
        assert column in summary, column
    assert summary["topology"] == "tiered:channels=8,ratio=1x4,pods=2,racks=2,servers=16,cpu=16,mem=16"
    assert summary["allocator"] == "tetris:penalty=0.9,scale=10,fit_last=no"
    assert summary["acceptance_ratio"] == summary["accepted"] / summary["offered"]


def test_a_run_says_why_its_figures_are_thin_or_missing(runner):
    # four servers of 16 CPUs: a uniform request (up to 128 CPUs) that needs more is never offered
    thin = runner.run("tetris", "tiered:8,1x4,pods=1,racks=1,servers=4", requests=40)
    skipped = int((thin.tables.requests["outcome"] == "skipped").sum())
    assert 0 < skipped < 40 and thin.summary["offered"] == 40 - skipped
    assert thin.notes == [f"{skipped} of 40 requests were never offered: each needs more than the topology's "
                          "whole capacity; give a larger topology or a workload with smaller demands"]
    assert thin.provenance["notes"] == thin.notes
    warm = runner.run("jcb", "ocs:4,servers=4", "vmjobs:load=12,warmup=20", requests=20)
    assert warm.notes == ["none of the 20 requests is measured, all are in the workload's warm-up, so the metrics "
                          "of the measured window are n/a; ask for more requests or a shorter warm-up"]
    assert np.isnan(warm.summary["blocking_probability"])
    assert runner.run("jcb", "ocs:4,servers=4", "vmjobs:load=12,warmup=19", requests=20).notes == []
    assert runner.run("tetris", "tiered:8,1x4", requests=40).notes == []


def test_equivalent_specs_share_a_run_id(runner):
    a = runner.run("tetris", "tiered:8,1x4", requests=16)
    b = runner.run("tetris:penalty=0.9", "tiered:channels=8,ratio=1x4,pods=2", requests=16)
    assert a.run_id == b.run_id


def test_run_hash_depends_on_every_part():
    base = ("t", "w", "a", 10, 0, "1.0")
    hashes = {run_hash(*base)}
    for i, value in enumerate(("t2", "w2", "a2", 11, 1, "1.1")):
        changed = list(base)
        changed[i] = value
        hashes.add(run_hash(*changed))
    assert len(hashes) == 7


def test_default_requests_are_two_per_server(runner):
    assert runner.run("random", "tiered:8,1x4").summary["requests"] == 128


@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"allocator": "tetriss"}, UnknownPluginError, "did you mean 'tetris'"),
    ({"topology": "fat-tree:4"}, UnknownPluginError, "Known topologies: ocs, tiered"),
    ({"workload": "uniform:pairs=some"}, SpecError, "not one of all, cpu, reference"),
    ({"requests": 0}, SpecError, "at least 1"),
])
def test_bad_combinations(runner, kwargs, error, fragment):
    args = {"allocator": "tetris", "topology": "tiered:8,1x4", "requests": 8} | kwargs
    with pytest.raises(error, match=fragment):
        runner.run(**args)


def test_an_allocator_that_cannot_serve_the_demand_kind_is_refused(runner, monkeypatch):
    class JobWorkload:
        kind = "job"

    build = runner.registry.build

    def fake_build(kind, spec):
        if kind == "workload":
            return type("Built", (), {"obj": JobWorkload(), "spec": "jobs"})()
        return build(kind, spec)

    monkeypatch.setattr(runner.registry, "build", fake_build)
    with pytest.raises(IncompatibleError, match="serves pool demands but workload 'jobs' makes job demands"):
        runner.run("tetris", "tiered:8,1x4", requests=8)


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_a_seed_is_a_non_negative_integer(runner, seed):
    with pytest.raises(SpecError, match="a seed is a non-negative integer, got"):
        runner.run("tetris", "tiered:8,1x4", requests=4, seed=seed)


PROBE = '''
from dcbench import Param, hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator
from dcbench.plugins.topologies.tiered import build as tiered

HOW = [Param("how", str, "ok")]
METRIC_COLUMNS = {}  # what the metric returns; a test sets it
WORKLOAD_FINGERPRINT = ""  # what the workload's fingerprint returns or raises; a test sets it


class Fingerprinted(TetrisAllocator):
    def __init__(self, how):
        super().__init__()
        self.how = how

    def fingerprint(self, network):
        if self.how == "raise":
            raise RuntimeError("no weights")
        return 7


def topology(how):
    if how == "raise":
        raise RuntimeError("no fabric")
    if how == "int":
        return 7
    built = tiered(channels=8, ratio="1x4")
    if how in ("default", "none"):
        built.default_workload = "nosuch" if how == "default" else None
        return built
    del next(iter(built.graph.edges(data=True)))[2]["capacity"]
    return built


class Workload:
    kind = "pool"

    def __init__(self, how):
        self.how = how

    def generate(self, network, requests, rng):
        import numpy as np
        from dcbench import RequestSequence

        if self.how == "raise":
            raise RuntimeError("no requests")
        if self.how == "int":
            return 7
        n = 2 * requests if self.how == "long" else requests
        holding = np.full(n, -1.0 if self.how == "negative_holding" else 3.0)
        demand = np.tile([[20.0, 20.0]], (n, 1))
        return RequestSequence("job" if self.how == "job" else "pool", np.ones(n), holding, demand,
                               "nobody" if self.how == "connectivity" else "all", wait_until_fits=True,
                               time_step=0.0 if self.how == "no_time_step" else 1.0)

    def default_requests(self, network):
        return {"zero": 0, "half": 0.5, "huge": 10**10}.get(self.how, 8)

    def fingerprint(self, network):
        if isinstance(WORKLOAD_FINGERPRINT, BaseException):
            raise WORKLOAD_FINGERPRINT
        return WORKLOAD_FINGERPRINT


class Raises(TetrisAllocator):
    def allocate(self, request, state):
        raise RuntimeError("boom in allocate")


class Overbooks(TetrisAllocator):
    def allocate(self, request, state):
        import dataclasses

        allocation = super().allocate(request, state)
        return dataclasses.replace(allocation, amounts=allocation.amounts * 2) if request.id % 2 else allocation


class Notes(TetrisAllocator):
    def __init__(self, how):
        super().__init__()
        self.notes = {"int": 5, "dicts": [{"note": 1}], "lines": ["first line\\n  second line"]}[how]


@hookimpl
def register_allocators(register):
    register("probe_alloc", Fingerprinted, params=HOW)
    register("probe_raises", Raises)
    register("probe_overbooks", Overbooks)
    register("probe_notes", Notes, params=[Param("how", str, "lines")])


@hookimpl
def register_topologies(register):
    register("probe_topo", topology, params=HOW)


@hookimpl
def register_workloads(register):
    register("probe_work", Workload, params=HOW)


@hookimpl
def register_metrics(register):
    register("probe_metric", metric)


TAMPER = None  # what the metric also does to the tables and network; a test sets it


def metric(tables, network):
    if TAMPER is not None:
        TAMPER(tables, network)
    return METRIC_COLUMNS
'''


class Unreadable(dict):
    """A metric's columns that fail as they are read."""

    def items(self):
        raise RuntimeError("cannot be read")


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A runner whose registry has a third-party plugin ``probe`` that misbehaves as told."""
    (tmp_path / "tp_runner_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)
    registry = create_registry([importlib.metadata.EntryPoint("probe", "tp_runner_probe", "dcbench")])
    return Runner(registry), importlib.import_module("tp_runner_probe")


def probe_error(what, problem):
    return re.escape(f"{what} (plugin probe) {problem}; report it to the plugin's authors")


@pytest.mark.parametrize("columns, problem", [
    ({"seed": 99}, "returned column 'seed', which the core writes; a metric may only add columns of its own"),
    ({"dcbench_version": 1}, "returned column 'dcbench_version', which the core writes; a metric may only add "
                             "columns of its own"),
    ({"acceptance_ratio": 2.0}, "returned column 'acceptance_ratio', which metric 'acceptance' writes; a metric "
                                "may only add columns of its own"),
    ({"mine": "high"}, "returned mine='high', not a number"),
    ({"mine": "0.5"}, "returned mine='0.5', not a number"),
    ({"mine": np.ones(3)}, "returned mine=array([1., 1., 1.]), not a number"),
    ({1: 0.5}, "returned a column named 1; a column name is letters, digits and '_', starting with a letter"),
    ({"": 0.5}, "returned a column named ''; a column name is letters, digits and '_', starting with a letter"),
    ({"a|b\nc": 0.5}, "returned a column named 'a|b\\nc'; a column name is letters, digits and '_', starting with "
                      "a letter"),  # it would break a Markdown table
    ({"mine": 10**400}, "returned mine=1" + "0" * 58 + "…, not a number"),  # too big for a float
    (Unreadable(), "failed: RuntimeError: cannot be read"),
    ([("mine", 0.5)], "returned list, not a dict of summary columns"),
])
def test_a_metric_returns_new_columns_of_numbers_only(probe, monkeypatch, columns, problem):
    runner, module = probe
    monkeypatch.setattr(module, "METRIC_COLUMNS", columns)
    with pytest.raises(PluginError, match=probe_error("metric 'probe_metric'", problem)):
        runner.run("tetris", "tiered:8,1x4", requests=8, metrics=["probe_metric"])


def test_a_metric_adds_its_own_columns(probe, monkeypatch):
    runner, module = probe
    monkeypatch.setattr(module, "METRIC_COLUMNS", {"mine": np.int64(3), "also_mine": 0.5})
    summary = runner.run("tetris", "tiered:8,1x4", requests=8, metrics=["probe_metric"]).summary
    assert summary["mine"] == 3.0 and summary["also_mine"] == 0.5 and summary["seed"] == 0


@pytest.mark.parametrize("kwargs, what, problem", [
    ({"allocator": "probe_alloc:how=raise"}, "allocator 'probe_alloc'",
     "failed in fingerprint(network): RuntimeError: no weights"),
    ({"allocator": "probe_alloc"}, "allocator 'probe_alloc'", "returned int from fingerprint(network), not a str"),
    ({"topology": "probe_topo:how=raise"}, "topology 'probe_topo'", "failed when built: RuntimeError: no fabric"),
    ({"topology": "probe_topo:how=int"}, "topology 'probe_topo'", "returned int when built, not a dcbench.Topology"),
    ({"topology": "probe_topo"}, "topology 'probe_topo'",
     "built a topology that does not compile: KeyError: 'capacity'"),
    ({"workload": "probe_work:how=raise"}, "workload 'probe_work'", "failed in generate(): RuntimeError: no requests"),
    ({"topology": "probe_topo:how=default"}, "topology 'probe_topo'",
     "has the default workload 'nosuch', which does not build (unknown workload 'nosuch'. Known workloads: "
     "probe_work, trace, uniform, vmjobs); give a workload with -w"),
    ({"workload": "probe_work:how=int"}, "workload 'probe_work'",
     "returned int from generate(), not a dcbench.RequestSequence"),
    ({"allocator": "probe_raises"}, "allocator 'probe_raises'", "raised RuntimeError: boom in allocate (request 0)"),
    ({"allocator": "probe_notes:how=int"}, "allocator 'probe_notes'", "has notes=5, not a list of strings"),
    ({"allocator": "probe_notes:how=dicts"}, "allocator 'probe_notes'",
     "has notes=[{'note': 1}], not a list of strings"),
    *(({"workload": f"probe_work:how={how}"}, "workload 'probe_work'",
       f"returned an unusable request sequence from generate(): {problem}") for how, problem in [
        ("long", "it has 16 requests, 8 were asked for"),
        ("negative_holding", "holding holds a negative, NaN or infinite value"),
        ("job", "it is of kind 'job', the workload declares 'pool'"),
        ("connectivity", "it has connectivity='nobody', not one of all, cpu, reference"),
        ("no_time_step", "it waits until requests fit with time_step=0.0; it must be a positive finite number"),
    ]),
    *(({"workload": f"probe_work:how={how}", "requests": None}, "workload 'probe_work'",
       f"returned {value} from default_requests(network), not an integer from 1 to 1,000,000")
      for how, value in [("zero", "0"), ("half", "0.5"), ("huge", "10000000000")]),
])
def test_a_misbehaving_third_party_plugin_is_a_plugin_error(probe, kwargs, what, problem):
    runner, _ = probe
    args = {"allocator": "tetris", "topology": "tiered:8,1x4", "requests": 8} | kwargs
    with pytest.raises(PluginError, match=probe_error(what, problem)):
        runner.run(**args)


def test_a_topology_that_names_no_default_workload_needs_one_given(probe):
    runner, _ = probe
    with pytest.raises(SpecError, match=re.escape("topology 'probe_topo' names no default workload; give one with -w")):
        runner.resolve("tetris", "probe_topo:how=none")
    assert runner.run("tetris", "probe_topo:how=none", "uniform", requests=8).summary["offered"] == 8
    with pytest.raises(IncompatibleError, match=r"makes job demands$"):  # and no default to point to
        runner.resolve("tetris", "probe_topo:how=none", "vmjobs")


class Tampering:
    """A metric that changes the tables it reads, and the network."""

    def __init__(self, target):
        self.target = target

    def __call__(self, tables, network):
        if self.target == "tables":
            tables.requests["outcome"][:] = "accepted"
        elif self.target == "unlocked tables":
            for column in (tables.requests["outcome"], tables.timeline["cpu_util"]):
                column.flags.writeable = True  # its own copy: allowed, and seen by no one else
                column[:] = column[0]
        elif self.target == "columns":
            del tables.requests["outcome"]
        else:
            network.server_capacity[:] *= 100


@pytest.mark.parametrize("target, error", [("tables", "ValueError: assignment destination is read-only"),
                                           ("network", "ValueError: output array is read-only"),
                                           ("columns", None), ("unlocked tables", None)])
def test_a_metric_cannot_change_the_tables_that_are_written_or_the_network(probe, monkeypatch, tmp_path,
                                                                          target, error):
    runner, module = probe
    monkeypatch.setattr(module, "TAMPER", Tampering(target))
    if error is not None:
        with pytest.raises(PluginError, match=probe_error("metric 'probe_metric'", f"failed: {error}")):
            runner.run("tetris", "tiered:8,1x4", requests=16, metrics=["probe_metric"])
    else:
        result = runner.run("tetris", "tiered:8,1x4", requests=16, metrics=["probe_metric"])
        assert "outcome" in result.tables.requests and result.summary["accepted"] < 16
        untouched = Runner().run("tetris", "tiered:8,1x4", requests=16)
        for table in ("requests", "timeline"):
            for name, column in getattr(untouched.tables, table).items():
                written = getattr(result.tables, table)[name]
                assert np.array_equal(written, column, equal_nan=column.dtype.kind == "f"), name
        for name in ("acceptance_ratio", "cpu_util"):  # what metrics run after it read
            assert result.summary[name] == untouched.summary[name]
    monkeypatch.setattr(module, "TAMPER", None)
    clean = runner.run("tetris", "tiered:8,1x4", requests=16, seed=1)  # on the runner's cached network
    assert clean.summary["accepted"] == Runner().run("tetris", "tiered:8,1x4", requests=16, seed=1).summary["accepted"]


def test_a_run_says_when_allocations_were_impossible(probe):
    runner, _ = probe
    result = runner.run("probe_overbooks", "tiered:8,1x4", requests=8)
    invalid = result.tables.requests["reason"] == "invalid_allocation"
    assert invalid.tolist() == [False, True] * 4 and result.summary["invalid_allocations"] == 4
    (note,) = result.notes
    assert note.startswith("4 of the allocator's answers were impossible allocations, counted as rejections (the "
                           f"first, request 1: {result.tables.requests['detail'][1]}); the requests table's detail")
    assert "demand is" in note


def test_an_allocators_note_is_one_line(probe):
    runner, _ = probe
    assert runner.run("probe_notes", "tiered:8,1x4", requests=8).notes == ["first line second line"]


def test_a_third_party_plugins_release_makes_new_run_ids_and_builtin_runs_keep_theirs(tmp_path, monkeypatch):
    import importlib
    from types import SimpleNamespace

    from dcbench.registry import create_registry
    from dcbench.running.runner import Runner
    from tests.conftest import random_allocator_module

    random_allocator_module(tmp_path, monkeypatch, "tp_released", "released")

    class Released:  # an installed distribution's entry point, as importlib.metadata gives it
        def __init__(self, version):
            self.name, self.dist = "released", SimpleNamespace(metadata={"Name": "dcbench-released"}, version=version)

        def load(self):
            return importlib.import_module("tp_released")

    plans = {version: Runner(create_registry([Released(version)])) for version in ("0.1", "0.2")}
    first, second = (plans[v].resolve("released", "tiered:8,1x4", requests=10) for v in ("0.1", "0.2"))
    # the release and its source (`src=`, a digest of the package's files: the same in both here)
    assert re.fullmatch(r"plugin dcbench-released 0\.1 src=[0-9a-f]{12}", first.fingerprint)
    assert second.fingerprint == first.fingerprint.replace(" 0.1 ", " 0.2 ")
    assert first.run_id(0) != second.run_id(0)
    builtin = plans["0.1"].resolve("random", "tiered:8,1x4", requests=10)
    assert builtin.fingerprint == "" and builtin.run_id(0) == Runner().resolve(
        "random", "tiered:8,1x4", requests=10).run_id(0)


def test_an_installed_metric_changes_no_run_that_does_not_ask_for_it(probe, monkeypatch):
    runner, module = probe
    monkeypatch.setattr(module, "METRIC_COLUMNS", {"mine": 1.0})
    builtins_only = Runner(create_registry([])).run("tetris", "tiered:8,1x4", requests=16, seed=2)
    plain = runner.run("tetris", "tiered:8,1x4", requests=16, seed=2)
    assert plain.run_id == builtins_only.run_id
    assert list(plain.summary) == list(builtins_only.summary) and "mine" not in plain.summary
    assert plain.summary["allocator_fingerprint"] == ""
    assert "metrics" not in plain.provenance
    monkeypatch.setattr(module, "METRIC_COLUMNS", {"mine": "broken"})  # fails the runs that ask, only them
    assert runner.run("tetris", "tiered:8,1x4", requests=16, seed=2).run_id == plain.run_id
    with pytest.raises(PluginError, match="metric 'probe_metric'"):
        runner.run("tetris", "tiered:8,1x4", requests=16, seed=2, metrics=["probe_metric"])


def test_a_metric_asked_for_adds_its_columns_and_enters_the_run_id(probe, monkeypatch):
    runner, module = probe
    monkeypatch.setattr(module, "METRIC_COLUMNS", {"mine": 1.0})
    plain = runner.run("tetris", "tiered:8,1x4", requests=16, seed=2)
    asked = runner.run("tetris", "tiered:8,1x4", requests=16, seed=2, metrics=["probe_metric"])
    assert asked.run_id != plain.run_id and asked.summary["mine"] == 1.0
    assert asked.metric_columns["probe_metric"] == ("mine",)
    name = asked.provenance["metrics"][0]
    assert metrics_of(asked.summary["allocator_fingerprint"]) == (name,)
    identity = ("mine", "run_id", "allocator_fingerprint")
    assert repr({k: v for k, v in asked.summary.items() if k not in identity}) == \
        repr({k: v for k, v in plain.summary.items() if k not in identity})  # (repr: NaN is NaN)
    # the row says by itself what made it: its id is the hash of its columns, as a submission's check recomputes
    assert run_hash(*(asked.summary[c] for c in RUN_IDENTITY[1:])) == asked.run_id
    # asking twice, or for dcbench's own metrics too, is the same run
    again = runner.run("tetris", "tiered:8,1x4", requests=16, seed=2, metrics=["acceptance", name, "probe_metric"])
    assert again.run_id == asked.run_id and list(again.summary) == list(asked.summary)
    assert runner.run("tetris", "tiered:8,1x4", requests=16, seed=2, metrics=["acceptance"]).run_id == plain.run_id


def test_an_unknown_metric_asked_for_is_a_spec_error(probe):
    runner, _ = probe
    with pytest.raises(UnknownPluginError, match="unknown metric 'nosuch'"):
        runner.resolve("tetris", "tiered:8,1x4", metrics=["nosuch"])


def counting(monkeypatch, owner, name, counts, key=None):
    """Count the calls of ``owner.name`` in ``counts``, by ``key`` of their arguments (by ``name``)."""
    raw = owner.__dict__[name]
    original = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw

    def counted(*args, **kwargs):
        counted_as = name if key is None else key(*args, **kwargs)
        counts[counted_as] = counts.get(counted_as, 0) + 1
        return original(*args, **kwargs)

    wrapped = {staticmethod: staticmethod, classmethod: classmethod}.get(type(raw), lambda f: f)(counted)
    monkeypatch.setattr(owner, name, wrapped)


def test_a_run_of_two_seeds_resolves_its_specs_once_and_builds_a_fresh_allocator_per_seed(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from dcbench.commands import cli
    from dcbench.registry import KINDS, get_registry
    from dcbench.registry.entry import PluginEntry
    from dcbench.running import runner as runner_module
    from dcbench.running.runner import Runner as InternalRunner
    from dcbench.spec import Spec

    for kind in KINDS:  # the plugins loaded and checked first: their own names are specs too
        get_registry().entries(kind)
    counts: dict[str, int] = {}
    counting(monkeypatch, InternalRunner, "resolve", counts)
    counting(monkeypatch, runner_module, "plugin_fingerprint", counts)
    counting(monkeypatch, Spec, "parse", counts)
    counting(monkeypatch, PluginEntry, "build", counts, key=lambda entry, spec: f"build {entry.kind}")
    result = CliRunner().invoke(cli, ["run", "-a", "tetris", "-t", "tiered:8,1x4", "-w", "uniform", "-n", "16",
                                      "--seeds", "2", "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    assert counts == {"resolve": 1, "plugin_fingerprint": 2, "parse": 3,  # each of the three specs once
                      "build topology": 1, "build workload": 1, "build allocator": 1 + 2}  # a fresh one per seed


def test_a_workloads_fingerprint_enters_the_run_id(probe, monkeypatch):
    runner, module = probe
    ids = {}
    for value in ("", "sha256=1", "sha256=2"):
        monkeypatch.setattr(module, "WORKLOAD_FINGERPRINT", value)
        plan = runner.resolve("tetris", "tiered:8,1x4", "probe_work", requests=8)
        ids[value] = plan.run_id(0)
        assert ("workload " + value in plan.fingerprint) == bool(value)
    assert len(set(ids.values())) == 3
    run = runner.run("tetris", "tiered:8,1x4", "probe_work", requests=8)
    assert "workload sha256=2" in run.summary["allocator_fingerprint"]
    assert run_hash(*(run.summary[c] for c in RUN_IDENTITY[1:])) == run.run_id


@pytest.mark.parametrize("value, error, message", [
    (ValueError("no trace file 'x.csv'"), SpecError, "probe_work:how=ok: no trace file 'x.csv'"),
    (RuntimeError("unreadable"), PluginError, "failed in fingerprint(network): RuntimeError: unreadable"),
    (7, PluginError, "returned int from fingerprint(network), not a str"),
])
def test_a_workloads_fingerprint_that_fails_is_one_line(probe, monkeypatch, value, error, message):
    runner, module = probe
    monkeypatch.setattr(module, "WORKLOAD_FINGERPRINT", value)
    with pytest.raises(error, match=re.escape(message)):
        runner.resolve("tetris", "tiered:8,1x4", "probe_work", requests=8)
