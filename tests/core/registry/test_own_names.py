"""Two distributions that register the same bare names (a topology, a
workload, a metric, a suite) each keep their own: inside a distribution (its
suite, its topology's default workload, its tests' conformance checks) a
bare name is its own plugin; elsewhere it is an error listing both. Two
metrics that write one column are refused together; strict mode may be
asked for one distribution alone."""

import importlib.util
import sys
import textwrap

import pytest

from dcbench import PluginError, SpecError, UnknownPluginError
from dcbench.harness import Runner
from dcbench.registry import create_registry
from dcbench.registry.manager import is_strict
from dcbench.testing import ContractError, check_metric, check_suite, check_topology, check_workload
from tests.core.registry import test_names
from tests.core.registry.test_names import created, install

site = test_names.site  # the fixture: a folder distributions are installed into

PLUGIN = '''
import dataclasses

from dcbench import Column, Scenario, Suite, hookimpl
from dcbench.plugins.topologies.tiered import build
from dcbench.plugins.workloads.uniform import UniformWorkload


def fabric():
    return dataclasses.replace(build(8, "1x4"), default_workload="bursty")


def bursty():
    return UniformWorkload(max_cpu={cpu}, max_mem={cpu})


def locality(tables, network):
    requests = tables.requests
    accepted = requests["measured"] & (requests["outcome"] == "accepted")
    local = (requests["spread"][accepted] == "server") | (requests["spread"][accepted] == "rack")
    share = float(local.sum() / accepted.sum()) if accepted.sum() else float("nan")
    return {{"rack_local_share": {share}}}


@hookimpl
def register_topologies(register):
    register("fabric", fabric, description="a small tiered fabric whose default workload is bursty")


@hookimpl
def register_workloads(register):
    register("bursty", bursty, description="uniform requests of up to {cpu} CPUs")


@hookimpl
def register_metrics(register):
    register("locality", locality, description="rack locality, as {distribution} means it",
             columns=[Column("rack_local_share", "rack local", "higher", demands=("pool",))])


@hookimpl
def register_suites(register):
    register(Suite("home", (Scenario("fabric", requests=16, seeds=(0, 1)),
                            Scenario("tiered:8,1x4", "bursty", requests=16, seeds=(0,), name="tiered")),
                   metrics=("locality",)))
'''

# A package's own test of its plugins, as its authors write it: bare names, nothing else installed in mind.
PACKAGE_TEST = '''
from dcbench.testing import check_metric, check_suite, check_topology, check_workload


def check_everything(registry):
    check_topology("fabric", registry=registry)
    check_workload("bursty", registry=registry)
    check_metric("locality", registry=registry)
    check_suite("home", registry=registry)
'''

DISTRIBUTIONS = {"dcbench-alpha": dict(cpu=8, share="share"), "dcbench-beta": dict(cpu=16, share="1 - share")}


def twins(site):
    """``dcbench-alpha`` and ``dcbench-beta`` installed in ``site``, each with a project folder (its pyproject.toml
    and its tests); their entry points."""
    entry_points = []
    for distribution, values in DISTRIBUTIONS.items():
        module = "tp_names_" + distribution.removeprefix("dcbench-")
        entry_points += install(site, distribution, {module: module},
                                {f"{module}.py": PLUGIN.format(distribution=distribution, **values)})
        project = site / "projects" / distribution
        (project / "tests").mkdir(parents=True)
        (project / "pyproject.toml").write_text(f'[project]\nname = "{distribution}"\nversion = "0.1.0"\n')
        (project / "tests" / "test_plugins.py").write_text(textwrap.dedent(PACKAGE_TEST))
    return entry_points


def package_test(site, distribution):
    """The ``check_everything`` of ``distribution``'s own tests, imported from its project folder."""
    path = site / "projects" / distribution / "tests" / "test_plugins.py"
    name = "tp_names_test_" + distribution.removeprefix("dcbench-")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.check_everything


def test_two_distributions_sharing_names_load_without_a_warning_and_a_bare_name_lists_both(site):
    registry, warned = created(*twins(site))
    assert warned == [] and registry.failures == []
    for kind, name in [("topology", "fabric"), ("workload", "bursty"), ("metric", "locality"), ("suite", "home")]:
        with pytest.raises(UnknownPluginError) as ambiguous:
            registry.get(kind, name)  # what a command line's bare name does
        assert str(ambiguous.value) == (f"{kind} {name!r} is registered by more than one plugin; give "
                                        f"'dcbench-alpha.{name}' or 'dcbench-beta.{name}'")
    with pytest.raises(UnknownPluginError, match="give 'dcbench-alpha.bursty' or 'dcbench-beta.bursty'"):
        Runner(registry).resolve("random", "tiered:8,1x4", "bursty", requests=8)


@pytest.mark.parametrize("distribution, cpu", [("dcbench-alpha", 8), ("dcbench-beta", 16)])
def test_each_suite_names_its_own_distributions_plugins_and_sweeps(site, distribution, cpu):
    registry, _ = created(*twins(site))
    suite = registry.get("suite", f"{distribution}.home")
    assert [(s.topology, s.workload, s.label) for s in suite.scenarios] == [
        (f"{distribution}.fabric", None, "fabric"), ("tiered:8,1x4", f"{distribution}.bursty", "tiered")]
    assert suite.metrics == (f"{distribution}.locality",)
    runner = Runner(registry)
    for scenario in suite.scenarios:  # as a sweep of the suite runs it
        for seed in scenario.seeds:
            result = runner.run("random", scenario.topology, scenario.workload, scenario.requests, seed,
                                metrics=suite.metrics)
            assert result.summary["workload"] == f"{distribution}.bursty"
            assert 0 <= result.summary["rack_local_share"] <= 1
            assert list(result.metric_columns)[-1] == f"{distribution}.locality"


@pytest.mark.parametrize("distribution, cpu", [("dcbench-alpha", 8), ("dcbench-beta", 16)])
def test_a_topologys_default_workload_is_its_own_distributions(site, distribution, cpu):
    registry, _ = created(*twins(site))
    plan = Runner(registry).resolve_scenario(f"{distribution}.fabric", requests=200)
    assert plan.workload.startswith(f"{distribution}.bursty")
    assert plan.workload_model.max_cpu == cpu


@pytest.mark.parametrize("distribution", ["dcbench-alpha", "dcbench-beta"])
def test_each_packages_own_tests_pass_with_the_other_installed(site, distribution):
    registry, _ = created(*twins(site))
    package_test(site, distribution)(registry)  # bare names, checked beside dcbench's plugins and its own


def test_outside_a_package_the_kit_refuses_a_bare_name_both_register_and_checks_a_qualified_one_beside_its_own(
        site):
    registry, _ = created(*twins(site))
    with pytest.raises(UnknownPluginError, match="'dcbench-alpha.locality' or 'dcbench-beta.locality'"):
        check_metric("locality", registry=registry)
    check_metric("dcbench-alpha.locality", registry=registry)  # not against beta's rack_local_share
    check_topology("dcbench-beta.fabric", registry=registry)
    check_workload("dcbench-beta.bursty", registry=registry)
    check_suite("dcbench-beta.home", registry=registry)


def test_two_metrics_that_write_one_column_are_refused_in_one_line_naming_both(site):
    registry, _ = created(*twins(site))
    with pytest.raises(SpecError) as refused:
        Runner(registry).resolve("random", "tiered:8,1x4", requests=8,
                                 metrics=["dcbench-alpha.locality", "dcbench-beta.locality"])
    assert str(refused.value) == (
        "metrics 'dcbench-alpha.locality' (plugin tp_names_alpha, dcbench-alpha 0.1.0) and 'dcbench-beta.locality' "
        "(plugin tp_names_beta, dcbench-beta 0.1.0) both write the column 'rack_local_share'; compute one of them "
        "(a run, sweep or submission holds one meaning per column)")
    Runner(registry).resolve("random", "tiered:8,1x4", requests=8, metrics=["dcbench-beta.locality"])


BROKEN = "raise ImportError('needs a library that is not installed')\n"


def test_strict_mode_for_named_distributions_fails_on_theirs_alone(site, monkeypatch):
    broken = install(site, "dcbench-broken", {"broken": "tp_names_broken"}, {"tp_names_broken.py": BROKEN})
    mine = twins(site)
    monkeypatch.setenv("DCBENCH_STRICT_PLUGINS", "dcbench-alpha, dcbench_Beta")
    registry, warned = created(*broken, *mine)  # someone else's broken package: a warning
    assert [message.split(" failed")[0] for message in warned] == ["plugin broken (dcbench-broken 0.1.0)"]
    assert registry.get("suite", "dcbench-alpha.home")
    monkeypatch.setenv("DCBENCH_STRICT_PLUGINS", "dcbench-alpha,DCBench.Broken")
    with pytest.raises(PluginError, match=r"^plugin broken \(dcbench-broken 0.1.0\) failed to load: ImportError"):
        create_registry(broken + mine)
    monkeypatch.setenv("DCBENCH_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="^plugin broken"):
        create_registry(broken + mine)


@pytest.mark.parametrize("value, plugin, strict", [
    ("1", None, True), ("1", ("x", "dcbench-x"), True), ("", ("x", "dcbench-x"), False),
    ("0", ("x", "dcbench-x"), False), ("dcbench-y", ("x", "dcbench-x"), False),
    ("dcbench-y,DCBench_X", ("x", "dcbench-x"), True), ("x", ("x", "dcbench-x"), True),
    ("dcbench-x", None, False),  # a failure of no one plugin's (a DCBENCH_DISABLE_PLUGINS typo): only "1"'s
])
def test_strict_mode_takes_1_or_a_list_of_distributions(value, plugin, strict):
    assert is_strict(plugin, {"DCBENCH_STRICT_PLUGINS": value}) is strict


def test_the_kit_still_catches_a_metric_that_takes_a_builtin_column(site):
    source = PLUGIN.format(distribution="dcbench-gamma", cpu=8, share="share").replace(
        '"rack_local_share": ', '"acceptance_ratio": ')
    registry, _ = created(*install(site, "dcbench-gamma", {"tp_names_gamma": "tp_names_gamma"},
                                   {"tp_names_gamma.py": source}))
    with pytest.raises(ContractError, match="adds only columns of its own.*'acceptance_ratio', which metric "
                                            "'acceptance' writes"):
        check_metric("locality", registry=registry)
