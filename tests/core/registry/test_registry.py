import importlib.metadata
import warnings

import click
import pytest

from dcbench import Column, Param, PluginError, UnknownPluginError
from dcbench.commands import add_commands
from dcbench.plugins.allocators.tetris import TetrisAllocator
from dcbench.registry import PluginEntry, PluginLoadWarning, create_registry
from dcbench.registry.checks import registration_problem
from dcbench.registry.columns import demand_kind, ranking_columns

STRICT_HINT = " (set DCBENCH_STRICT_PLUGINS=1 to make this an error)"

GOOD = '''
from dcbench import hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator

@hookimpl
def register_allocators(register):
    register("tetris2", TetrisAllocator, description="tetris again", demands=("pool",))
'''

FAILS_IN_HOOK = '''
from dcbench import hookimpl

@hookimpl
def register_allocators(register):
    raise RuntimeError("misconfigured")
'''

DUPLICATE = '''
from dcbench import hookimpl

@hookimpl
def register_allocators(register):
    register("tetris", "nowhere:Nothing", description="an impostor")
'''

LAZY_BROKEN = '''
from dcbench import hookimpl

@hookimpl
def register_allocators(register):
    register("ghost", "dcbench_missing_module:Ghost", description="never importable")
'''

WRAPPERS = '''
from dcbench import hookimpl

@hookimpl(wrapper=True)
def register_allocators(register):
    register("wrapped", "nowhere:Nothing")
    return (yield)

@hookimpl(hookwrapper=True)
def register_commands(cli):
    cli.command(name="wrapped")(lambda: None)
    yield

@hookimpl
def register_metrics(register):
    register("plain", lambda tables, network: {})
'''


@pytest.fixture
def plugin_modules(tmp_path, monkeypatch):
    for name, text in {"tp_good": GOOD, "tp_hook": FAILS_IN_HOOK, "tp_dup": DUPLICATE, "tp_lazy": LAZY_BROKEN,
                       "tp_wrappers": WRAPPERS}.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)


def entry_points(*pairs):
    return [importlib.metadata.EntryPoint(name, value, "dcbench") for name, value in pairs]


def test_good_third_party_plugins_register_and_broken_ones_warn(plugin_modules):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(
            ("good", "tp_good"), ("missing", "tp_does_not_exist"), ("hook", "tp_hook"), ("dup", "tp_dup")))
        allocators = registry.entries("allocator")
    assert "tetris2" in allocators and allocators["tetris2"].plugin == "good"
    assert allocators["tetris"].plugin == "dcbench.plugins.allocators.tetris"  # built-in wins
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginLoadWarning)]
    assert any("plugin missing" in m and "ModuleNotFoundError" in m for m in messages)
    assert any("'hook' failed in register_allocators: RuntimeError: misconfigured" in m for m in messages)
    assert any("registers allocator 'tetris', already registered" in m for m in messages)
    assert all("\n" not in m for m in messages)
    assert len(registry.failures) == 3


def test_a_hook_wrapper_is_refused_by_name_and_the_plugins_plain_hooks_still_register(plugin_modules):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(("wrappers", "tp_wrappers")))
        cli = click.Group("dcbench")
        add_commands(cli, registry)
        assert "wrapped" not in registry.entries("allocator") and "plain" in registry.entries("metric")
    assert "wrapped" not in cli.commands
    assert [m for m in plugin_warnings(caught) if "wrapper" in m] == [
        f"plugin 'wrappers' implements {hook} as a hook wrapper, which dcbench does not call; drop wrapper=True "
        f"(or hookwrapper=True) from its @hookimpl; ignored{STRICT_HINT}"
        for hook in ("register_allocators", "register_commands")]


def test_strict_mode_turns_a_broken_plugin_into_an_error(plugin_modules, monkeypatch):
    monkeypatch.setenv("DCBENCH_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="plugin missing .* failed to load"):
        create_registry(entry_points(("missing", "tp_does_not_exist")))
    with pytest.raises(PluginError) as refused:  # refused as it registers: said once, and not "ignored"
        create_registry(entry_points(("dup", "tp_dup")))
    assert str(refused.value) == ("plugin 'dup' registers allocator 'tetris', already registered by "
                                  "'dcbench.plugins.allocators.tetris'")


def test_a_lazy_target_that_cannot_be_imported_fails_when_built(plugin_modules):
    registry = create_registry(entry_points(("lazy", "tp_lazy")))
    assert "ghost" in registry.entries("allocator")  # listing does not import it
    with pytest.raises(PluginError, match="allocator 'ghost' \\(plugin lazy\\) failed to load"):
        registry.build("allocator", "ghost")


def test_unknown_names_list_the_known_ones():
    registry = create_registry([])
    with pytest.raises(UnknownPluginError, match="unknown allocator 'randm'; did you mean 'random'\\? "
                                                 "Known allocators: .*random, tetris"):
        registry.get("allocator", "randm")


UNUSABLE = '''
from dcbench import Param, hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator

@hookimpl
def register_allocators(register):
    register("stray_param", TetrisAllocator, params=["penalty"])
    register("demand_text", TetrisAllocator, demands="pool")
    register("demand_unknown", TetrisAllocator, demands=("pool", "gpu"))
    register("colon:name", TetrisAllocator)
    register("comma,name", TetrisAllocator)
    register("no_target", None)
    register("nan_default", TetrisAllocator, params=[Param("penalty", float, float("nan"))])
    register("text_default", TetrisAllocator, params=[Param("scale", int, "ten")])
    register("comma_default", TetrisAllocator, params=[Param("names", str, "a,b")])
    register("off_range_default", TetrisAllocator, params=[Param("scale", int, 0, minimum=1)])
    register("list_type", TetrisAllocator, params=[Param("scale", list, None)])
    register("spaced_name", TetrisAllocator, params=[Param("my scale", int, 1)])
    register("twice", TetrisAllocator, params=[Param("scale", int, 1), Param("scale", float, 1.0)])
    register("listed_description", TetrisAllocator, description=["first-fit"])
    register("misspelt_learned", TetrisAllocator, lerned=True)
    register("stray_keyword", TetrisAllocator, shade="blue")
    register("learned_text", TetrisAllocator, learned="yes")
    register("fine", TetrisAllocator, params=[Param("penalty", float, 0.9)], demands=["pool"],
             description="A fine one,\\n    over two lines")
'''

BUILD_FAILS = '''
from dcbench import Param, hookimpl

def explode(how):
    raise {"runtime": RuntimeError("boom in init"), "key": KeyError("weights"),
           "type": TypeError("unsupported operand type(s) for +: 'NoneType' and 'int'")}[how]

@hookimpl
def register_allocators(register):
    register("explodes", explode, params=[Param("how", str)])
'''

COMMANDS = '''
from dcbench import hookimpl

@hookimpl
def register_commands(cli):
    @cli.command(name="run")
    def run():
        """A run that takes no -a."""

    @cli.command(name="extra")
    def extra():
        """A command of its own."""
'''

SAME_COMMAND = COMMANDS.replace('name="run"', 'name="other"')


@pytest.fixture
def more_plugin_modules(tmp_path, monkeypatch):
    for name, text in {"tp_unusable": UNUSABLE, "tp_build": BUILD_FAILS, "tp_commands": COMMANDS,
                       "tp_same_command": SAME_COMMAND}.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)


def plugin_warnings(caught):
    return [str(w.message) for w in caught if issubclass(w.category, PluginLoadWarning)]


def test_a_failed_registration_is_reported_when_the_registry_is_created(plugin_modules):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(("hook", "tp_hook")))
    # reported with the import failures, which the command line prints as one-line warnings
    assert any("'hook' failed in register_allocators: RuntimeError: misconfigured" in m
               for m in plugin_warnings(caught))
    assert "tetris" in registry.entries("allocator")


@pytest.mark.parametrize("name, fragment", [
    ("stray_param", "registers allocator 'stray_param': params holds 'penalty', not a dcbench.Param; ignored"),
    ("demand_text", "registers allocator 'demand_text': demands='pool' is not a tuple of 'pool' and/or 'job'"),
    ("demand_unknown", "registers allocator 'demand_unknown': demands=('pool', 'gpu') is not a tuple of"),
    ("colon:name", "registers allocator 'colon:name': no spec can give that name"),
    ("comma,name", "registers allocator 'comma,name': no spec can give that name"),
    ("no_target", "registers allocator 'no_target': its target None is neither a callable nor a 'module:attr'"),
    ("nan_default", "registers allocator 'nan_default': param 'penalty' has default nan, which is not a value it "
                    "accepts"),
    *((name, f"registers allocator {name!r}: param {param!r} has default {default}, which is not a value it accepts")
      for name, param, default in [("text_default", "scale", "'ten'"), ("comma_default", "names", "'a,b'"),
                                   ("off_range_default", "scale", "0")]),
    ("list_type", "registers allocator 'list_type': param 'scale' has type list; use str, int, float or bool"),
    ("spaced_name", "registers allocator 'spaced_name': param 'my scale' needs a name of letters, digits and '_'"),
    ("twice", "registers allocator 'twice': two of its params have one name"),
    ("listed_description", "registers allocator 'listed_description': its description ['first-fit'] is not a string"),
    # a misspelt keyword would otherwise be dropped silently: a learned allocator taken for a baseline
    ("misspelt_learned", "registers allocator 'misspelt_learned': it passes the unknown keyword lerned=; "
                         "did you mean learned=?; ignored"),
    ("stray_keyword", "registers allocator 'stray_keyword': it passes the unknown keyword shade=; register takes "
                      "description=, params=, demands=, learned=, trainer=, training_options=, colour=, "
                      "authors=, paper=, code=, training_seeds= for allocators; ignored"),
    ("learned_text", "registers allocator 'learned_text': learned='yes' is not True or False"),
])
def test_an_unusable_registration_is_skipped_with_a_warning(more_plugin_modules, name, fragment):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(("unusable", "tp_unusable")))
    allocators = registry.entries("allocator")
    assert name not in allocators and allocators["fine"].demands == ("pool",)
    assert sum(f"plugin 'unusable' {fragment}" in m for m in plugin_warnings(caught)) == 1
    assert len(registry.failures) == 17
    assert allocators["fine"].description == "A fine one, over two lines"  # one line in `dcbench list`


def test_an_allocators_authors_links_and_training_seeds_are_checked_at_registration():
    fine = {"authors": ["A. Researcher"], "paper": "https://arxiv.org/abs/1", "code": "https://github.com/a/b"}
    assert registration_problem("allocator", "mine", TetrisAllocator, fine) is None
    assert registration_problem("allocator", "mine", TetrisAllocator, {"paper": "arxiv.org/abs/1"}) == (
        "paper 'arxiv.org/abs/1' is not an https:// link")
    assert registration_problem("allocator", "mine", TetrisAllocator, {"training_seeds": ["1000.."]}) == (
        "it gives training_seeds but its allocator is not learned=True")
    assert registration_problem("allocator", "mine", TetrisAllocator,
                                {"learned": True, "training_seeds": ["1000.."]}) is None


def test_each_kind_takes_its_own_keywords_beyond_description_and_params():
    assert registration_problem("topology", "mesh", TetrisAllocator, {"demands": ("pool",)}) == (
        "it passes the unknown keyword demands=; register takes description=, params=, figures= for topologies")
    assert registration_problem("workload", "mesh", TetrisAllocator, {"figures": "a:b"}) == (
        "it passes the unknown keyword figures=; register takes description=, params= for workloads")
    fine = {"demands": ("pool",), "learned": True}
    assert registration_problem("allocator", "mine", TetrisAllocator, fine) is None
    assert registration_problem("allocator", "mine", TetrisAllocator, {"weights": []}) == (
        "it passes the unknown keyword weights=; register takes description=, params=, demands=, learned=, "
        "trainer=, training_options=, colour=, authors=, paper=, code=, training_seeds= for allocators")
    assert registration_problem("metric", "mine", len, {"column": []}) == (
        "it passes the unknown keyword column=; did you mean columns=?")


def test_training_options_are_declared_as_a_module_attr_string():
    # Lazily: `dcbench list NAME` imports the dataclass only, never the trainer (and torch).
    lazy = {"learned": True, "trainer": "pkg.train:train", "training_options": "pkg.config:Config"}
    assert registration_problem("allocator", "mine", TetrisAllocator, lazy) is None
    for declared, shown in ((TetrisAllocator, "<class 'dcbench.plugins.allocators.tetris.TetrisAllocator'>"),
                            ("pkg.config", "'pkg.config'")):
        assert registration_problem("allocator", "mine", TetrisAllocator, {**lazy, "training_options": declared}) \
            == f"training_options={shown} is not a 'module:attr' string"


def measure(tables, network):
    return {}


@pytest.mark.parametrize("columns", [
    [], [Column("paths_share", "paths", "lower")], (Column("paths_share", "share of paths", None, ("pool", "job")),),
    [Column("gpu_*_util", "{} GPU utilisation", "higher", ("job",), headline=True, ranks=("job",),
            description="GPU utilisation by kind"), Column("idle", "idle servers", headline=("pool",))],
])
def test_a_metric_may_declare_its_columns(columns):
    assert registration_problem("metric", "paths", measure, {"columns": columns}) is None


@pytest.mark.parametrize("columns, problem", [
    ("paths_share", "columns='paths_share' is not a list of dcbench.Column"),
    ([("paths_share", "paths", None)], "columns holds ('paths_share', 'paths', None), not a dcbench.Column"),
    ([Column("paths share", "paths")], "column 'paths share' is no summary column's name"),
    ([Column("a*b*", "paths")], "column 'a*b*' is no summary column's name"),
    ([Column(3, "paths")], "column 3 is no summary column's name"),
    ([Column("paths", "")], "column 'paths' has heading '', not one line of 1 to 40 characters"),
    ([Column("paths", "two\nlines")], "column 'paths' has heading 'two\\nlines', not one line"),
    ([Column("paths", "x" * 41)], "not one line of 1 to 40 characters"),
    ([Column("paths", "paths", True)], "column 'paths' has better=True; give 'higher', 'lower' or None"),
    ([Column("paths", "paths", "lower", "pool")], "column 'paths' has demands='pool', not a tuple of 'pool' and/or"),
    ([Column("paths", "paths", "lower", ())], "column 'paths' has demands=(), not a tuple of 'pool' and/or 'job'"),
    ([Column("paths", "paths", headline=("pools",))], "column 'paths' has headline=('pools',); give True, False or"),
    ([Column("paths", "paths", ranks="job")], "column 'paths' has ranks='job'; give True, False or a tuple"),
    ([Column("paths", "paths", description="x" * 101)], "has description 'xxx"),
])
def test_an_unusable_column_is_named(columns, problem):
    assert problem in registration_problem("metric", "paths", measure, {"columns": columns})


def test_a_metric_registered_without_columns_has_none_and_with_them_has_them(tmp_path, monkeypatch):
    (tmp_path / "tp_columns.py").write_text(
        "from dcbench import Column, hookimpl\n\n"
        "@hookimpl\n"
        "def register_metrics(register):\n"
        "    register('plain', lambda tables, network: {}, description='no columns')\n"
        "    register('declared', lambda tables, network: {}, columns=[Column('paths', 'paths', 'lower', ('job',))])\n"
        "    register('broken', lambda tables, network: {}, columns=[Column('paths', 'paths', 'down')])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(("columns", "tp_columns")))
        metrics = registry.entries("metric")
    assert metrics["plain"].columns == ()
    assert metrics["declared"].columns == (Column("paths", "paths", "lower", ("job",)),)
    assert registry.columns()[-1] == Column("paths", "paths", "lower", ("job",))  # after the built-ins'
    assert "broken" not in metrics
    assert any("registers metric 'broken': column 'paths' has better='down'" in m for m in plugin_warnings(caught))


def test_a_column_is_a_headline_and_ranks_only_for_its_own_demand_kinds():
    blocking = Column("blocking", "blocking", "lower", headline=("job",), ranks=("job",))
    assert [blocking.is_headline(k) for k in ("pool", "job")] == [False, True]
    assert [blocking.ranks_kind(k) for k in ("pool", "job")] == [False, True]
    accepted = Column("accepted", "accepted", "higher", demands=("pool",), headline=True, ranks=True)
    assert [accepted.is_headline(k) for k in ("pool", "job")] == [True, False]
    assert [accepted.ranks_kind(k) for k in ("pool", "job")] == [True, False]
    assert ranking_columns([Column("x", "x"), accepted, blocking]) == {"pool": ("accepted", True),
                                                                      "job": ("blocking", False)}


def test_a_run_is_of_jobs_where_it_has_a_column_declared_for_jobs_alone():
    declared = [Column("accepted", "accepted", demands=("pool",)), Column("swaps", "swaps", demands=("job",))]
    assert demand_kind({"accepted": 0.5, "swaps": 2.0}, declared) == "job"
    assert demand_kind({"accepted": 0.5, "swaps": None}, declared) == "pool"
    assert demand_kind({"accepted": 0.5, "swaps": float("nan")}, declared) == "job"  # a run of jobs measuring none
    assert demand_kind({"accepted": 0.5}, declared) == "pool"


@pytest.mark.parametrize("how, error", [("runtime", "RuntimeError: boom in init"), ("key", "KeyError: 'weights'"),
                                        # a bug in the plugin, not the user's spec: only ValueError is that
                                        ("type", "TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'")])
def test_a_third_party_factory_that_raises_is_a_plugin_error(more_plugin_modules, how, error):
    registry = create_registry(entry_points(("build", "tp_build")))
    with pytest.raises(PluginError) as raised:
        registry.build("allocator", f"explodes:how={how}")
    assert str(raised.value) == (f"allocator 'explodes' (plugin build) failed when built: {error}; "
                                 "report it to the plugin's authors")
    assert raised.value.__cause__ is not None  # the plugin's own traceback, for its authors


def test_a_builtin_plugin_missing_a_dependency_is_one_line_but_its_bugs_keep_their_traceback(tmp_path, monkeypatch):
    (tmp_path / "tp_buggy_module.py").write_text("undefined_name + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    builtin = "dcbench.plugins.allocators.tetris"
    missing = PluginEntry("allocator", "needs_torch", "a_module_not_installed:Thing", plugin=builtin)
    with pytest.raises(PluginError, match=r"failed to load 'a_module_not_installed:Thing': ModuleNotFoundError: .*; "
                                          r"install the package that provides 'a_module_not_installed', or report"):
        missing.load()
    with pytest.raises(NameError):
        PluginEntry("allocator", "buggy", "tp_buggy_module:Thing", plugin=builtin).load()
    with pytest.raises(PluginError, match="failed to load 'tp_buggy_module:Thing': NameError: .*; report it to the "
                                          "plugin's authors$"):
        PluginEntry("allocator", "buggy", "tp_buggy_module:Thing", plugin="someone").load()

    def takes_nothing():
        return object()

    with pytest.raises(TypeError):  # a signature bug of dcbench's own, not the user's spec
        PluginEntry("allocator", "mine", lambda how: takes_nothing(how), params=(Param("how", str),),
                    plugin=builtin).build("mine:how=x")


def test_a_builtin_plugins_bug_keeps_its_traceback():
    def broken(**values):
        raise RuntimeError("a bug in dcbench")

    entry = PluginEntry("allocator", "broken", broken, plugin="dcbench.plugins.allocators.tetris")
    with pytest.raises(RuntimeError, match="a bug in dcbench"):
        entry.build("broken")


def test_a_plugin_cannot_replace_a_command(more_plugin_modules):
    import dcbench.commands.run

    cli = click.Group("dcbench")
    builtin_run = dcbench.commands.run.run
    registry = create_registry(entry_points(("commands", "tp_commands"), ("same", "tp_same_command")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        add_commands(cli, registry)
        extra = cli.commands["extra"]
        add_commands(cli, registry)  # again, as tests do: a plugin may renew its own
    assert cli.commands["run"] is builtin_run and "other" in cli.commands
    assert cli.commands["extra"] is not extra and cli.commands["extra"].callback.__module__ == "tp_commands"
    assert plugin_warnings(caught) == 2 * [
        f"plugin 'commands' registers command 'run', already registered by 'dcbench'; ignored{STRICT_HINT}",
        f"plugin 'same' registers command 'extra', already registered by 'commands'; ignored{STRICT_HINT}",
    ]


def test_a_sweep_worker_does_not_repeat_the_warnings(plugin_modules):
    from dcbench.running.workers import quiet_plugin_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_plugin_warnings()  # what a sweep's worker process runs first
        registry = create_registry(entry_points(("missing", "tp_does_not_exist"), ("hook", "tp_hook")))
    assert plugin_warnings(caught) == []
    assert len(registry.failures) == 2  # still known, for `dcbench plugins`


SUITES = '''
from dcbench import Scenario, Suite, hookimpl

TIERED = "tiered:8,1x4"

@hookimpl
def register_suites(register):
    register(Suite("empty", ()))
    register(Suite("bad name", (Scenario(TIERED),)))
    register(Suite("not_scenarios", ("tiered:8,1x4",)))
    register(Suite("no_seeds", (Scenario(TIERED, seeds=()),)))
    register(Suite("seed_twice", (Scenario(TIERED, seeds=(0, 1, 0)),)))
    register(Suite("zero_requests", (Scenario(TIERED, requests=0),)))
    register(Suite("same_label", (Scenario(TIERED), Scenario(TIERED, "uniform:pairs=reference"))))
    register(Suite("metric_none", (Scenario(TIERED),), primary_metric=None))
    register(Suite("metrics_text", (Scenario(TIERED),), metrics="locality"))
    register(Suite("described", (Scenario(TIERED),)), description="twice")
    register(Suite("fine", [Scenario(TIERED, seeds=[0, 1]), Scenario(TIERED, name="again")]))
'''


@pytest.mark.parametrize("name, fragment", [
    ("empty", "it has no scenarios; give scenarios=[dcbench.Scenario(...), ...]"),
    ("bad name", "its name is no name --suite can give"),
    ("not_scenarios", "scenarios holds 'tiered:8,1x4', not a dcbench.Scenario"),
    ("no_seeds", "scenario 'tiered:8,1x4' has seeds=(), not a non-empty list of integers >= 0"),
    ("seed_twice", "scenario 'tiered:8,1x4' lists a seed twice in seeds=(0, 1, 0)"),
    ("zero_requests", "scenario 'tiered:8,1x4' has requests=0, not a positive integer or None"),
    ("same_label", "two scenarios are labelled 'tiered:8,1x4'; give each its own name="),
    ("metric_none", "primary_metric=None is not a summary column's name"),
    ("metrics_text", "metrics='locality' is not a tuple of metric names"),
    ("described", "register takes the Suite alone for suites; ignored"),
])
def test_an_unusable_suite_is_skipped_with_a_warning(tmp_path, monkeypatch, name, fragment):
    (tmp_path / "tp_suites.py").write_text(SUITES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(("suites", "tp_suites")))
    suites = registry.entries("suite")
    assert name not in suites and "fine" in suites and "nara2022" in suites
    assert sum(f"plugin 'suites' registers suite {name!r}: {fragment}" in m for m in plugin_warnings(caught)) == 1
    assert len(registry.failures) == 10


def test_a_plugin_that_exits_while_loading_is_reported_not_obeyed(tmp_path, monkeypatch):
    (tmp_path / "tp_exits.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "tp_exits_later.py").write_text(
        "import sys\nfrom dcbench import hookimpl\n\n@hookimpl\ndef register_allocators(register):\n"
        "    sys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(("exits", "tp_exits"), ("later", "tp_exits_later")))
    assert "tetris" in registry.entries("allocator")
    assert [m.split(STRICT_HINT)[0] for m in plugin_warnings(caught)] == [
        "plugin exits (? ?) failed to load: SystemExit: 0",
        "plugin 'later' failed in register_allocators: SystemExit: 3"]


def test_a_target_that_exits_on_import_is_a_broken_plugin(tmp_path, monkeypatch):
    (tmp_path / "tp_exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="failed to load 'tp_exits_on_import:Thing': SystemExit: 3; report it"):
        PluginEntry("allocator", "exits", "tp_exits_on_import:Thing", plugin="someone").load()


def test_an_exception_that_cannot_say_what_it_is_is_still_described():
    from dcbench.errors import describe

    class Mute(Exception):
        def __str__(self):
            raise RuntimeError("no words")

    assert describe(Mute()) == "Mute"


def test_a_misspelt_hook_a_wrong_signature_and_a_command_that_is_none_are_warned_about(tmp_path, monkeypatch):
    modules = {
        "tp_misspelt": "from dcbench import hookimpl\n\n@hookimpl\ndef register_allocator(register):\n    pass\n",
        "tp_signature": "from dcbench import hookimpl\n\n@hookimpl\ndef register_allocators(register, extra):\n"
                        "    pass\n",
        "tp_not_a_command": "from dcbench import hookimpl\n\n@hookimpl\ndef register_commands(cli):\n"
                            "    cli.commands['weird'] = 'not a command'\n",
    }
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)

    @click.group()
    def cli():
        pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = create_registry(entry_points(("typo", "tp_misspelt"), ("signature", "tp_signature"),
                                                ("commands", "tp_not_a_command")))
        add_commands(cli, registry)
    messages = [m.split(STRICT_HINT)[0] for m in plugin_warnings(caught)]
    assert messages[0].startswith("plugin typo (? ?) implements unknown hook 'register_allocator'; did you mean "
                                  "'register_allocators'?")
    assert messages[1] == ("plugin signature (? ?) failed to load: Plugin 'signature' for hook 'register_allocators': "
                           "Argument(s) {'extra'} are declared in the hookimpl but can not be found in the hookspec")
    assert messages[2] == "plugin 'commands' registers command 'weird' as str, not a click command; ignored"
    assert "weird" not in cli.commands


def importable(tmp_path, monkeypatch, module, source):
    """``source`` as the module ``module``, importable for this test; strict mode off."""
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)
