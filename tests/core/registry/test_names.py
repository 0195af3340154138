"""What a third-party plugin is called and what it is: names qualified by
its distribution (``DIST.NAME``) that do not depend on what else is
installed, a bare alias where it is unambiguous, a digest of its source in
the ids of its runs, and ``DCBENCH_DISABLE_PLUGINS``."""

import importlib.metadata
import sys
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dcbench import PluginError, Scenario, Spec, UnknownPluginError
from dcbench.harness import Runner
from dcbench.publishing.submissions import (
    SUBMISSION_NAME,
    name_problem,
    registered_problem,
    spec_problem,
    submission_name,
)
from dcbench.registry import PluginLoadWarning, create_registry
from dcbench.registry.checks import registration_problem, suite_problem
from dcbench.registry.distributions import normalized, source_digest
from dcbench.running.sweep import split_allocators

ROOT = Path(__file__).resolve().parents[3]
STRICT_HINT = " (set DCBENCH_STRICT_PLUGINS=1 to make this an error)"

ALLOCATOR = '''
from dcbench import hookimpl
from dcbench.plugins.allocators.random_server import RandomAllocator

@hookimpl
def register_allocators(register):
    register({name!r}, RandomAllocator, description="the random allocator, as a third party")
'''

SUITE = '''
from dcbench import Scenario, Suite, hookimpl

MINE = Suite("mine", (Scenario("tiered:8,1x4", requests=8, seeds=(0,)),))

@hookimpl
def register_suites(register):
    register(MINE)
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder distributions are installed into (`install`), importable; no strict mode, nothing disabled."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)
    monkeypatch.delenv("DCBENCH_DISABLE_PLUGINS", raising=False)
    before = set(sys.modules)
    yield tmp_path
    for module in set(sys.modules) - before:  # the next test's modules of the same names are others
        if module.startswith("tp_names_"):
            del sys.modules[module]


def install(site, distribution, entry_points, modules=(), version="0.1.0"):
    """``distribution`` as pip installs it into ``site``: its metadata, its
    ``dcbench`` entry points ({name: module}) and ``modules`` ({file: source},
    relative to ``site``). Returns its entry points, which know their
    distribution as those of an installed one do."""
    info = site / f"{normalized(distribution).replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "[dcbench]\n" + "".join(f"{name} = {module}\n" for name, module in entry_points.items()))
    for path, source in dict(modules).items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(source)
    (found,) = [dist for dist in importlib.metadata.distributions(path=[str(site)])
                if dist.metadata["Name"] == distribution]
    return sorted(found.entry_points.select(group="dcbench"), key=lambda entry_point: entry_point.name)


def allocator_distribution(site, distribution, name, module, entry_point=None):
    return install(site, distribution, {entry_point or module: module},
                   {f"{module}.py": ALLOCATOR.format(name=name)})


def created(*entry_points):
    """The registry of ``entry_points`` and the plugin warnings its creation gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(list(entry_points))
    return registry, [str(w.message).removesuffix(STRICT_HINT) for w in caught
                      if issubclass(w.category, PluginLoadWarning)]


# ----- names -----------------------------------------------------------------

def test_a_third_party_name_is_qualified_by_its_normalized_distribution_and_its_bare_name_is_an_alias(site):
    registry, warned = created(*allocator_distribution(site, "DCBench_First.Fit", "firstfit", "tp_names_firstfit"))
    assert warned == []
    entry = registry.get("allocator", "firstfit")
    assert entry is registry.get("allocator", "dcbench-first-fit.firstfit")
    assert entry.name == "dcbench-first-fit.firstfit" and entry.plugin == "tp_names_firstfit"
    assert entry.build("firstfit").spec == "dcbench-first-fit.firstfit"
    allocators = registry.entries("allocator")
    assert [name for name in allocators if "firstfit" in name] == ["dcbench-first-fit.firstfit"]  # listed once
    assert "firstfit" in allocators and allocators["firstfit"] is entry
    assert "tetris" in allocators and allocators["tetris"].name == "tetris"  # a built-in's name is its own
    plan = Runner(registry).resolve("firstfit", "tiered:8,1x4", requests=10)
    assert plan.allocator == "dcbench-first-fit.firstfit"  # what the run id, the tables and the pages hold


def test_a_name_two_distributions_register_is_refused_bare_for_both_whatever_the_install_order(site):
    first = allocator_distribution(site, "dcbench-alpha", "firstfit", "tp_names_alpha")
    second = allocator_distribution(site, "dcbench-beta", "firstfit", "tp_names_beta")
    registries = [created(*first, *second), created(*second, *first)]
    for registry, warned in registries:
        assert warned == []  # two well-behaved plugins: nothing is broken (each names its own first)
        assert registry.get("allocator", "dcbench-alpha.firstfit").plugin == "tp_names_alpha"
        assert registry.get("allocator", "dcbench-beta.firstfit").plugin == "tp_names_beta"
        assert "firstfit" not in registry.entries("allocator")
        with pytest.raises(UnknownPluginError) as ambiguous:
            registry.get("allocator", "firstfit")
        assert str(ambiguous.value) == ("allocator 'firstfit' is registered by more than one plugin; give "
                                        "'dcbench-alpha.firstfit' or 'dcbench-beta.firstfit'")
    (one, _), (other, _) = registries
    assert list(one.entries("allocator")) == list(other.entries("allocator"))  # the same names, in the same order
    runs = [Runner(registry).resolve("dcbench-beta.firstfit", "tiered:8,1x4", requests=10).run_id(0)
            for registry, _ in registries]
    assert runs[0] == runs[1]
    from click.testing import CliRunner

    import dcbench.registry
    from dcbench.commands import cli

    with pytest.MonkeyPatch.context() as patch:  # `dcbench list firstfit` says which to give, too
        patch.setattr(dcbench.registry.manager, "_REGISTRY", one)
        listed = CliRunner().invoke(cli, ["list", "firstfit"])
    assert listed.exit_code == 2 and listed.output == (
        "Error: allocator 'firstfit' is registered by more than one plugin; give 'dcbench-alpha.firstfit' or "
        "'dcbench-beta.firstfit'\n")


def test_a_name_a_plugin_alone_registers_has_the_same_run_id_when_another_plugin_is_installed(site):
    alone = allocator_distribution(site, "dcbench-alpha", "firstfit", "tp_names_alpha")
    other = allocator_distribution(site, "dcbench-beta", "firstfit", "tp_names_beta")
    plans = [Runner(created(*entry_points)[0]).resolve("dcbench-alpha.firstfit", "tiered:8,1x4", requests=10)
             for entry_points in (alone, [*other, *alone])]
    assert plans[0].run_id(0) == plans[1].run_id(0)


def test_a_builtin_name_cannot_be_taken_and_a_distribution_registers_a_name_once(site):
    impostor = allocator_distribution(site, "dcbench-impostor", "tetris", "tp_names_impostor")
    twice = install(site, "dcbench-twice", {"one": "tp_names_twice_one", "two": "tp_names_twice_two"},
                    {f"tp_names_twice_{n}.py": ALLOCATOR.format(name="twice") for n in ("one", "two")})
    registry, warned = created(*impostor, *twice)
    assert warned == [
        "plugin 'tp_names_impostor' (dcbench-impostor 0.1.0) registers allocator 'tetris', already registered by "
        "'dcbench.plugins.allocators.tetris'; ignored",
        "plugin 'two' (dcbench-twice 0.1.0) registers allocator 'twice', already registered by 'one'; ignored"]
    assert "dcbench-impostor.tetris" not in registry.entries("allocator")
    assert registry.get("allocator", "tetris").builtin
    assert registry.get("allocator", "twice").plugin == "one"


def test_a_registered_name_holds_no_dot_which_the_qualified_name_keeps_for_the_distribution():
    problem = ("its name has a '.', which dcbench keeps for the distribution's name that qualifies it (DIST.NAME); "
               "use '_' or '-'")
    assert registration_problem("allocator", "first.fit", len, {}) == problem
    assert registration_problem("allocator", "first-fit", len, {}) is None
    from dcbench import Suite

    assert suite_problem(Suite("my.suite", (Scenario("tiered:8,1x4"),))) == problem


def test_a_third_party_suite_is_known_by_its_qualified_name_and_its_plugin_keeps_its_own(site):
    registry, warned = created(*install(site, "dcbench-suites", {"suites": "tp_names_suites"},
                                        {"tp_names_suites.py": SUITE}))
    assert warned == []
    suite = registry.get("suite", "mine")
    assert suite.name == "dcbench-suites.mine" and suite.plugin == "suites"
    assert "dcbench-suites.mine" in registry.entries("suite") and "mine" not in list(registry.entries("suite"))
    assert sys.modules["tp_names_suites"].MINE.name == "mine"  # the plugin's own Suite, as it made it


def test_a_plugin_of_unknown_distribution_keeps_its_names_as_registered(site):
    (site / "tp_names_handmade.py").write_text(ALLOCATOR.format(name="handmade"))
    registry, _ = created(importlib.metadata.EntryPoint("handmade", "tp_names_handmade", "dcbench"))
    assert registry.get("allocator", "handmade").name == "handmade"


@pytest.mark.parametrize("text, name", [
    ("dcbench-firstfit.firstfit:stay_in_rack=no", "dcbench-firstfit.firstfit"),
    ("3d-pack.first_fit", "3d-pack.first_fit"),  # a distribution's name may start with a digit
    (" dcbench-firstfit.firstfit : stay_in_rack = no ", "dcbench-firstfit.firstfit"),
])
def test_a_spec_takes_a_qualified_name(text, name):
    assert Spec.parse(text).name == name


def test_allocators_split_on_commas_with_qualified_names():
    assert split_allocators(["dcbench-firstfit.firstfit:stay_in_rack=no,tetris,dcbench-x.y"]) == [
        "dcbench-firstfit.firstfit:stay_in_rack=no", "tetris", "dcbench-x.y"]


def test_a_submission_may_name_qualified_plugins_but_still_no_path(site):
    assert spec_problem("allocator", "dcbench-firstfit.firstfit:stay_in_rack=no") is None
    assert name_problem("suite", "dcbench-suites.mine") is None
    assert "holds '..'" in spec_problem("allocator", "dcbench-x..firstfit")
    assert "holds '/'" in spec_problem("allocator", "../x/firstfit")
    folder = submission_name("dcbench-suites.mine", ["dcbench-firstfit.firstfit:stay_in_rack=no", "tetris"],
                             ["0123456789abcdef"], "0.3.3")
    assert folder.startswith("dcbench-suites.mine--dcbench-firstfit.firstfit-tetris--")
    assert SUBMISSION_NAME.fullmatch(folder) and ".." not in folder
    registry, _ = created(*allocator_distribution(site, "dcbench-firstfit", "firstfit", "tp_names_firstfit"))
    assert registered_problem("dcbench-firstfit.firstfit", registry) is None
    assert registered_problem("firstfit", registry) == (
        "allocator 'firstfit' is not written as its runs write it ('dcbench-firstfit.firstfit')")


# ----- what a plugin is: its source ------------------------------------------

PACKAGE_PLUGIN = '''
from dcbench import hookimpl
from tp_names_srcpkg.policy import Policy

@hookimpl
def register_allocators(register):
    register("versioned", Policy)
'''

POLICY = '''
from dcbench.plugins.allocators.random_server import RandomAllocator

class Policy(RandomAllocator):
    """Version one."""
'''


def test_a_plugins_changed_source_makes_new_run_ids_and_the_same_source_the_same(site):
    entry_points = install(site, "dcbench-src", {"src": "tp_names_srcpkg.plugin"},
                           {"tp_names_srcpkg/__init__.py": "", "tp_names_srcpkg/plugin.py": PACKAGE_PLUGIN,
                            "tp_names_srcpkg/policy.py": POLICY})

    def identity_and_run_id():
        registry, warned = created(*entry_points)
        assert warned == []
        plan = Runner(registry).resolve("versioned", "tiered:8,1x4", requests=10)
        return plan.allocator_entry.identity, plan.run_id(0)

    identity, run_id = identity_and_run_id()
    assert identity == f"dcbench-src 0.1.0 src={source_digest('tp_names_srcpkg.plugin')}"
    assert len(identity.rpartition("src=")[2]) == 12
    assert identity_and_run_id() == (identity, run_id)  # the same source: the same run
    (site / "tp_names_srcpkg" / "policy.py").write_text(POLICY.replace("one", "two"))  # not the module registered
    changed, changed_run = identity_and_run_id()
    assert changed != identity and changed_run != run_id
    (site / "tp_names_srcpkg" / "policy.py").write_text(POLICY)
    assert identity_and_run_id() == (identity, run_id)


def test_a_data_file_a_plugin_ships_is_in_its_run_ids_and_its_compiled_files_are_not(site):
    package = site / "tp_names_datapkg"
    entry_points = install(site, "dcbench-data", {"data": "tp_names_datapkg.plugin"},
                           {"tp_names_datapkg/__init__.py": "",
                            "tp_names_datapkg/plugin.py": PACKAGE_PLUGIN.replace("srcpkg", "datapkg"),
                            "tp_names_datapkg/policy.py": POLICY, "tp_names_datapkg/tables/weights.csv": "a,b\n1,2\n"})

    def run_id():
        registry, warned = created(*entry_points)
        assert warned == []
        return Runner(registry).resolve("versioned", "tiered:8,1x4", requests=10).run_id(0)

    shipped = run_id()
    (package / "tables" / "weights.csv").write_text("a,b\n1,3\n")  # what the plugin reads, not its code
    assert run_id() != shipped
    (package / "tables" / "weights.csv").write_text("a,b\n1,2\n")
    assert run_id() == shipped
    (package / "__pycache__").mkdir(exist_ok=True)
    (package / "__pycache__" / "other.cpython-311.pyc").write_bytes(b"compiled here, not shipped")
    (package / "tables" / "legacy.pyc").write_bytes(b"compiled here too")
    assert run_id() == shipped


def test_the_source_of_a_plain_module_is_its_file(site):
    entry_points = allocator_distribution(site, "dcbench-plain", "plain", "tp_names_plain")
    registry, _ = created(*entry_points)
    digest = registry.get("allocator", "plain").source
    assert len(digest) == 12 and registry.plugins[-1].source == digest
    (site / "tp_names_plain.py").write_text(ALLOCATOR.format(name="plain") + "# changed\n")
    assert source_digest("tp_names_plain") != digest


def test_a_builtin_run_keeps_its_committed_id_with_third_party_plugins_installed(site):
    registry, _ = created(*allocator_distribution(site, "dcbench-firstfit", "firstfit", "tp_names_firstfit"))
    summary = sorted(ROOT.glob("leaderboard/submissions/*/summary.parquet"))[0]
    row = pq.read_table(summary).slice(0, 1).to_pylist()[0]
    plan = Runner(registry).resolve(row["allocator"], row["topology"], row["workload"], row["requests"])
    assert plan.allocator_entry.identity == "" and plan.fingerprint == (row["allocator_fingerprint"] or "")
    assert plan.run_id(row["seed"]) == row["run_id"]


# ----- DCBENCH_DISABLE_PLUGINS -----------------------------------------------

BREAKS_ON_IMPORT = "raise ImportError('needs a library that is not installed')\n"


@pytest.mark.parametrize("disabled", ["DCBench_Broken", "dcbench.broken", "broken-entry", " x-first , broken_entry"])
def test_a_disabled_plugin_is_not_imported_by_its_distribution_or_entry_point_name(site, monkeypatch, disabled):
    broken = install(site, "dcbench-broken", {"broken_entry": "tp_names_broken"},
                     {"tp_names_broken.py": BREAKS_ON_IMPORT})
    first = allocator_distribution(site, "x-first", "first", "tp_names_first")
    monkeypatch.setenv("DCBENCH_DISABLE_PLUGINS", disabled)
    registry, warned = created(*broken, *first)
    assert warned == [] and registry.failures == []
    assert "tp_names_broken" not in sys.modules
    assert [(p.name, p.distribution) for p in registry.disabled][0] == ("broken_entry", "dcbench-broken")
    assert "broken_entry" not in [plugin.name for plugin in registry.plugins]
    assert ("first" in registry.entries("allocator")) == ("x-first" not in disabled)


def test_a_name_that_turns_nothing_off_is_one_warning_naming_the_installed_plugins(site, monkeypatch):
    first = allocator_distribution(site, "dcbench-firstfit", "firstfit", "tp_names_firstfit", entry_point="firstfit")
    monkeypatch.setenv("DCBENCH_DISABLE_PLUGINS", "firstfitt,tetris,dcbench")
    registry, warned = created(*first)
    assert warned == [
        "DCBENCH_DISABLE_PLUGINS turns nothing off: unknown third-party plugin 'firstfitt'; did you mean "
        "'firstfit'? Known third-party plugins: dcbench-firstfit, firstfit",
        "DCBENCH_DISABLE_PLUGINS names 'tetris', which is part of dcbench and cannot be turned off; take it off "
        "the list",
        "DCBENCH_DISABLE_PLUGINS names 'dcbench', which is part of dcbench and cannot be turned off; take it off "
        "the list"]
    assert "firstfit" in registry.entries("allocator") and "tetris" in registry.entries("allocator")
    assert registry.failures == [] and registry.disabled == []  # no broken plugin: a typo of the user's
    monkeypatch.setenv("DCBENCH_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="^DCBENCH_DISABLE_PLUGINS turns nothing off: unknown third-party plugin "
                                          "'firstfitt'"):
        create_registry(first)
