"""The plugin manager and the registry of everything plugins register.

Built-in plugins are the modules in `BUILTIN_PLUGINS`; third-party plugins
come through the ``dcbench`` entry-point group. A third-party plugin that
fails to import or to register is skipped with a one-line warning naming it
(``DCBENCH_STRICT_PLUGINS=1`` turns that into an error), so one broken
package never takes the command line down with it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import pluggy

from dcbench import hookspecs
from dcbench.errors import PluginError, SpecError, UnknownPluginError, describe
from dcbench.spec import Param, Spec, bind, resolved_spec, unknown

KINDS = ("topology", "workload", "allocator", "metric", "suite")

BUILTIN_PLUGINS = (
    "dcbench.plugins.topologies.tiered",
    "dcbench.plugins.topologies.ocs",
    "dcbench.plugins.workloads.uniform",
    "dcbench.plugins.workloads.vmjobs",
    "dcbench.plugins.allocators.random_server",
    "dcbench.plugins.allocators.tetris",
    "dcbench.plugins.allocators.bestfit",
    "dcbench.plugins.allocators.walk",
    "dcbench.plugins.allocators.ccf",
    "dcbench.plugins.allocators.jcb",
    "dcbench.plugins.allocators.gnn_ppo",
    "dcbench.plugins.allocators.a2c_multistep",
    "dcbench.plugins.metrics.acceptance",
    "dcbench.plugins.metrics.utilisation",
    "dcbench.plugins.metrics.spread",
    "dcbench.plugins.metrics.jobs",
)

PLURALS = {kind: kind + "s" for kind in KINDS} | {"topology": "topologies"}

_HOOK_OF_KIND = {
    "topology": "register_topologies",
    "workload": "register_workloads",
    "allocator": "register_allocators",
    "metric": "register_metrics",
    "suite": "register_suites",
}


class PluginLoadWarning(UserWarning):
    """A third-party plugin was skipped because it is broken."""


@dataclass(frozen=True)
class Built:
    """What `PluginEntry.build` returns: the object and its resolved spec."""

    obj: Any
    spec: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class PluginEntry:
    """One registered topology, workload, allocator or metric."""

    kind: str
    name: str
    target: Callable[..., Any] | str
    description: str = ""
    params: tuple[Param, ...] = ()
    plugin: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def demands(self) -> tuple[str, ...]:
        """The demand kinds an allocator serves (``pool`` unless it registered others)."""
        return tuple(self.extra.get("demands", ("pool",)))

    def load(self) -> Callable[..., Any]:
        if not isinstance(self.target, str):
            return self.target
        module_name, _, attr = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except Exception as exc:  # a broken plugin must not show a traceback
            raise PluginError(
                f"{self.kind} {self.name!r} (plugin {self.plugin}) failed to load "
                f"{self.target!r}: {describe(exc)}"
            ) from exc

    def build(self, spec: Spec | str) -> Built:
        """Bind ``spec`` to this entry's parameters and call its factory."""
        if isinstance(spec, str):
            spec = Spec.parse(spec)
        values = bind(self.name, self.params, spec)
        factory = self.load()
        try:
            obj = factory(**values)
        except SpecError:
            raise
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{self.name}: {exc}") from exc
        return Built(obj, resolved_spec(self.name, values), values)


@dataclass
class PluginInfo:
    """A loaded plugin module, for ``dcbench plugins``."""

    name: str
    distribution: str
    version: str
    builtin: bool


class Registry:
    """Everything registered by the loaded plugins, by kind and name."""

    def __init__(self, manager: pluggy.PluginManager, plugins: list[PluginInfo], failures: list[str]):
        self.manager = manager
        self.plugins = plugins
        self.failures = failures
        self._entries: dict[str, dict[str, Any]] = {}

    def entries(self, kind: str) -> dict[str, Any]:
        if kind not in KINDS:
            raise SpecError(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}")
        if kind not in self._entries:
            self._entries[kind] = self._collect(kind)
        return self._entries[kind]

    def get(self, kind: str, name: str) -> Any:
        entries = self.entries(kind)
        if name in entries:
            return entries[name]
        raise UnknownPluginError(unknown(kind, name, sorted(entries), PLURALS[kind]))

    def build(self, kind: str, spec: Spec | str) -> Built:
        if isinstance(spec, str):
            spec = Spec.parse(spec)
        return self.get(kind, spec.name).build(spec)

    def _collect(self, kind: str) -> dict[str, Any]:
        entries: dict[str, Any] = {}
        hook = getattr(self.manager.hook, _HOOK_OF_KIND[kind])
        # Call each plugin's implementation on its own so that one broken
        # plugin is reported by name and the others still register.
        for impl in hook.get_hookimpls():  # registration order: built-ins first
            register = functools.partial(self._register, kind, entries, impl.plugin_name)
            try:
                impl.function(register)
            except Exception as exc:
                self._fail(f"plugin {impl.plugin_name!r} failed in {hook.name}: {describe(exc)}")
        return entries

    def _register(self, kind: str, entries: dict[str, Any], plugin_name: str, name_or_suite: Any,
                  target: Any = None, *, description: str = "", params: Sequence[Param] = (), **extra: Any) -> None:
        """What a plugin's ``register`` calls: ``register(name, target, ...)``, or ``register(suite)``."""
        if kind == "suite":
            entry = name_or_suite
            name = entry.name
        else:
            name = name_or_suite
            entry = PluginEntry(kind, name, target, description, tuple(params), plugin_name, extra)
        if name in entries:
            self._fail(f"plugin {plugin_name!r} registers {kind} {name!r}, "
                       f"already registered by {_owner(entries[name])!r}; ignored")
            return
        if kind == "suite":
            object.__setattr__(entry, "plugin", plugin_name)
        entries[name] = entry

    def call_each(self, hook_name: str, **kwargs: Any) -> None:
        """Call every implementation of a hook on its own, reporting a broken one by name."""
        hook = getattr(self.manager.hook, hook_name)
        for impl in hook.get_hookimpls():  # registration order: built-ins first
            try:
                impl.function(**kwargs)
            except Exception as exc:
                self._fail(f"plugin {impl.plugin_name!r} failed in {hook_name}: {describe(exc)}")

    def _fail(self, message: str) -> None:
        _report(message, self.failures)


def _owner(entry: Any) -> str:
    return getattr(entry, "plugin", "?")


def _report(message: str, failures: list[str]) -> None:
    if os.environ.get("DCBENCH_STRICT_PLUGINS") == "1":
        raise PluginError(message)
    failures.append(message)
    warnings.warn(message + " (set DCBENCH_STRICT_PLUGINS=1 to make this an error)",
                  PluginLoadWarning, stacklevel=3)


def _dcbench_version() -> str:
    from dcbench import __version__

    return __version__


def create_registry(entry_points: Iterable[importlib.metadata.EntryPoint] | None = None) -> Registry:
    """Load the built-in and the installed third-party plugins."""
    manager = pluggy.PluginManager("dcbench")
    manager.add_hookspecs(hookspecs)
    plugins: list[PluginInfo] = []
    failures: list[str] = []
    version = _dcbench_version()
    for module_name in BUILTIN_PLUGINS:
        manager.register(importlib.import_module(module_name), name=module_name)
        plugins.append(PluginInfo(module_name, "dcbench", version, builtin=True))
    if entry_points is None:
        entry_points = importlib.metadata.entry_points(group="dcbench")
    for entry_point in entry_points:
        dist = entry_point.dist
        dist_name = dist.metadata["Name"] if dist is not None else "?"
        dist_version = dist.version if dist is not None else "?"
        label = f"{entry_point.name} ({dist_name} {dist_version})"
        try:
            module = entry_point.load()
            manager.register(module, name=entry_point.name)
        except Exception as exc:
            _report(f"plugin {label} failed to load: {describe(exc)}", failures)
            continue
        plugins.append(PluginInfo(entry_point.name, dist_name, dist_version, builtin=False))
    return Registry(manager, plugins, failures)


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, created on first use."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = create_registry()
    return _REGISTRY


def reset_registry() -> None:
    """Forget the loaded plugins (tests, or after installing a plugin)."""
    global _REGISTRY
    _REGISTRY = None
