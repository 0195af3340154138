import importlib.metadata
import warnings

import pytest

from dcbench import PluginError, UnknownPluginError
from dcbench.registry import PluginLoadWarning, create_registry

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


@pytest.fixture
def plugin_modules(tmp_path, monkeypatch):
    for name, text in {"tp_good": GOOD, "tp_hook": FAILS_IN_HOOK, "tp_dup": DUPLICATE, "tp_lazy": LAZY_BROKEN}.items():
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


def test_strict_mode_turns_a_broken_plugin_into_an_error(plugin_modules, monkeypatch):
    monkeypatch.setenv("DCBENCH_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="plugin missing .* failed to load"):
        create_registry(entry_points(("missing", "tp_does_not_exist")))


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
