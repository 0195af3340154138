"""The plugin manager and the registry of what plugins register. A third-party plugin's names are qualified by its
distribution's (``dcbench-firstfit.firstfit``); the bare name is an alias where unambiguous."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import os
import sys
import tomllib
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import pluggy

import dcbench.hookspecs as hookspecs
from dcbench.errors import PluginError, SpecError, UnknownPluginError, describe
from dcbench.registry.checks import is_spec_name, registration_problem, suite_problem
from dcbench.registry.columns import Column
from dcbench.registry.distributions import disable_problems, disabled_names, is_disabled, normalized, source_digest
from dcbench.registry.entry import BuiltPlugin, PluginEntry, PluginInfo
from dcbench.registry.kinds import BUILTIN_PLUGINS, HOOK_OF_KIND, KINDS, PLURALS, REGISTER_KEYWORDS, TUPLE_KEYWORDS
from dcbench.spec import Spec, unknown

HOOK_NAMES = sorted(name for name in dir(hookspecs) if name.startswith("register_"))


class PluginLoadWarning(UserWarning):
    """A third-party plugin was skipped because it is broken."""


class Entries(Mapping[str, Any]):
    """One kind's entries by canonical name, with the bare names that are aliases and those that are `ambiguous`."""

    def __init__(self, by_name: dict[str, Any]):
        self._by_name = by_name
        self.aliases: dict[str, str] = {}
        self.ambiguous: dict[str, tuple[str, ...]] = {}
        claims: dict[str, list[str]] = {}
        for name in by_name:
            _, dot, bare = name.partition(".")
            if dot and bare not in by_name:  # a plugin of unknown distribution keeps its bare name
                claims.setdefault(bare, []).append(name)
        for bare, names in claims.items():
            if len(names) == 1:
                self.aliases[bare] = names[0]
            else:
                self.ambiguous[bare] = tuple(sorted(names))

    def __getitem__(self, name: str) -> Any:
        return self._by_name[self.aliases.get(name, name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)


class Registry:
    """Everything registered by the loaded plugins, by kind and name."""
    def __init__(self, manager: pluggy.PluginManager, plugins: list[PluginInfo], failures: list[str],
                 disabled: list[PluginInfo] | None = None):
        self.manager = manager
        self.plugins = plugins
        self.failures = failures
        self.disabled = disabled or []  # turned off by DCBENCH_DISABLE_PLUGINS: never imported
        self.builtin_commands: list[str] = []
        self._entries: dict[str, Entries] = {}

    def entries(self, kind: str) -> Entries:
        if kind not in KINDS:
            raise SpecError(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}")
        if kind not in self._entries:
            self._entries[kind] = self._collect(kind)
        return self._entries[kind]

    def columns(self) -> tuple[Column, ...]:
        """Every summary column the metric plugins declare, in their order (`dcbench.Column`)."""
        return tuple(column for metric in self.entries("metric").values() for column in metric.columns)

    def get(self, kind: str, name: str, within: str = "") -> Any:
        """The entry ``name`` names, a bare one naming the distribution ``within``'s own first."""
        entries = self.entries(kind)
        own = f"{within}.{name}" if within and "." not in name else ""
        if own and own in entries:
            return entries[own]
        if name in entries:
            return entries[name]
        if name in entries.ambiguous:
            choices = " or ".join(map(repr, entries.ambiguous[name]))
            raise UnknownPluginError(f"{kind} {name!r} is registered by more than one plugin; give {choices}")
        raise UnknownPluginError(unknown(kind, name, sorted({*entries, *entries.aliases}), PLURALS[kind]))

    def own_spec(self, kind: str, spec: str, within: str) -> str:
        """``spec`` with its bare name qualified where the distribution ``within`` registers it."""
        name, colon, rest = spec.partition(":")
        own = f"{within}.{name.strip()}"
        if within and "." not in name and own in self.entries(kind):
            return own + colon + rest
        return spec

    def own_suite(self, suite: Any, within: str) -> Any:
        """A suite of the distribution ``within`` with its own plugins' bare names qualified."""
        if not within:
            return suite
        scenarios = tuple(dataclasses.replace(
            scenario, topology=self.own_spec("topology", scenario.topology, within), name=scenario.label,
            workload=scenario.workload and self.own_spec("workload", scenario.workload, within))
            for scenario in suite.scenarios)
        return dataclasses.replace(
            suite, scenarios=scenarios, metrics=tuple(self.own_spec("metric", m, within) for m in suite.metrics),
            reference=suite.reference and self.own_spec("allocator", suite.reference, within))

    def beside(self, qualifier: str) -> Registry:
        """This registry narrowed to dcbench's plugins and those of the distribution ``qualifier``."""
        narrowed = Registry(self.manager, [p for p in self.plugins if p.builtin or p.qualifier == qualifier],
                            self.failures, self.disabled)
        narrowed.builtin_commands = self.builtin_commands
        for kind in KINDS:
            narrowed._entries[kind] = Entries({name: entry for name, entry in self.entries(kind).items()
                                               if _qualifier_of(name) in ("", qualifier)})
        return narrowed

    def build(self, kind: str, spec: Spec | str) -> BuiltPlugin:
        if isinstance(spec, str):
            spec = Spec.parse(spec)
        return self.get(kind, spec.name).build(spec)

    def _collect(self, kind: str) -> Entries:
        registered: dict[str, Any] = {}
        hook = getattr(self.manager.hook, HOOK_OF_KIND[kind])
        for impl in self.hook_implementations(hook.name):  # each on its own: a broken one is named, the others register
            self.call_plugin(impl, hook.name, functools.partial(self._register, kind, registered, impl.plugin_name))
        # Third-party entries by distribution (each plugin's in its own order), whatever order they installed in.
        return Entries(dict(sorted(registered.items(), key=lambda item: _qualifier_of(item[0]))))

    def _register(self, kind: str, registered: dict[str, Any], plugin_name: str, name_or_suite: Any,
                  target: Any = None, **keywords: Any) -> None:
        if kind == "suite":
            entry = name_or_suite
            name = getattr(entry, "name", None)
            alone = target is None and not keywords
            problem = suite_problem(entry) if alone else "register takes the Suite alone for suites"
        else:
            name = name_or_suite
            problem = registration_problem(kind, name, target, keywords)
        info = self._third_party(plugin_name)
        canonical = f"{info.qualifier}.{name}" if info is not None and info.qualifier else name
        refusal = ""
        if problem is not None:
            refusal = f": {problem}"
        elif not is_spec_name(canonical):
            refusal = f" as {canonical!r}, which no spec can give: its distribution's name is no PEP 508 name"
        elif canonical in registered or getattr(registered.get(name), "plugin", None) in BUILTIN_PLUGINS:
            taken = canonical if canonical in registered else name  # its own distribution's name, or a built-in's
            refusal = f", already registered by {getattr(registered[taken], 'plugin', '?')!r}"
        if refusal:
            self.fail(f"plugin {self.label(plugin_name)} registers {kind} {name!r}{refusal}; ignored", plugin_name)
            return
        if kind == "suite":  # the plugin's own Suite stays as it made it; the registry's names its own plugins first
            entry = dataclasses.replace(self.own_suite(entry, info.qualifier if info is not None else ""),
                                        name=canonical, plugin=plugin_name)
        else:
            given = REGISTER_KEYWORDS[kind](**keywords)
            given.update(description=" ".join(given["description"].split()),  # one line in `dcbench list`
                         **{key: tuple(given[key]) for key in TUPLE_KEYWORDS if key in given})
            entry = PluginEntry(kind, canonical, target, plugin=plugin_name,
                                distribution=self._distribution(plugin_name),
                                source=info.source if info is not None else "",
                                given=tuple(key for key in keywords if key not in ("description", "params")), **given)
        registered[canonical] = entry

    def add_builtin(self, module_name: str) -> None:
        """Register a built-in command plugin module, once."""
        if self.manager.get_plugin(module_name) is None:
            self.manager.register(importlib.import_module(module_name), name=module_name)
            self.builtin_commands.append(module_name)  # part of dcbench: not in `plugins`, nor in provenance

    def is_builtin(self, plugin_name: str) -> bool:
        return plugin_name in self.builtin_commands or any(
            plugin.name == plugin_name and plugin.builtin for plugin in self.plugins)

    def hook_implementations(self, hook_name: str) -> list[Any]:
        """A hook's implementations, the built-in plugins' first."""
        implementations = getattr(self.manager.hook, hook_name).get_hookimpls()
        return sorted(implementations, key=lambda impl: not self.is_builtin(impl.plugin_name))

    def call_plugin(self, impl: Any, hook_name: str, *args: Any, **kwargs: Any) -> bool:
        """Call one plugin's implementation of a hook; a third-party one that fails is a warning and False."""
        if impl.wrapper or impl.hookwrapper:  # called on its own, a wrapper's generator would never run
            self.fail(f"plugin {self.label(impl.plugin_name)} implements {hook_name} as a hook wrapper, which "
                      "dcbench does not call; drop wrapper=True (or hookwrapper=True) from its @hookimpl; ignored",
                      impl.plugin_name)
            return False
        try:
            impl.function(*args, **kwargs)
        except (StrictRefusal, KeyboardInterrupt):  # a strict refusal names it already; Ctrl-C stops the command
            raise
        except BaseException as exc:  # a hook's sys.exit(), too, is its failure
            if self.is_builtin(impl.plugin_name):
                raise
            self.fail(f"plugin {self.label(impl.plugin_name)} failed in {hook_name}: {describe(exc)}",
                      impl.plugin_name)
            return False
        return True

    def _third_party(self, plugin_name: str) -> PluginInfo | None:
        return next((p for p in self.plugins if p.name == plugin_name and not p.builtin), None)

    def _distribution(self, plugin_name: str) -> str:
        """``NAME VERSION`` of a third-party plugin's distribution; "" where unknown."""
        info = self._third_party(plugin_name)
        return f"{info.distribution} {info.version}" if info is not None and info.distribution != "?" else ""

    def label(self, plugin_name: str) -> str:
        distribution = self._distribution(plugin_name)
        return f"{plugin_name!r}" + (f" ({distribution})" if distribution else "")

    def fail(self, message: str, plugin_name: str = "") -> None:
        info = self._third_party(plugin_name)
        _report(message, self.failures, (info.name, info.distribution) if info is not None else None)


def column_clash(metrics: Iterable[Any]) -> str | None:
    """The one-line refusal of metrics two of which declare one summary column, or None."""
    owners: dict[str, Any] = {}
    for metric in metrics:
        for column in metric.columns:
            other = owners.setdefault(column.name, metric)
            if other is not metric and other.name != metric.name and not (other.builtin and metric.builtin):
                return (f"metrics {other.name!r} ({other.origin}) and {metric.name!r} ({metric.origin}) both write "
                        f"the column {column.name!r}; compute one of them (a run, sweep or submission holds one "
                        "meaning per column)")
    return None


def beside_caller(registry: Registry, name: str = "") -> Registry:
    """``registry`` narrowed to the distribution that qualifies ``name``, else to the one whose code calls."""
    qualifiers = {p.qualifier for p in registry.plugins if p.qualifier}
    qualifier, dot, _ = Spec.parse(name).name.partition(".") if name else ("", "", "")
    if dot and qualifier in qualifiers:
        return registry.beside(qualifier)
    frame = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).partition(".")[0] == "dcbench":
        frame = frame.f_back
    if frame is None or not qualifiers:
        return registry
    qualifier = _project_of(frame.f_code.co_filename)
    if qualifier not in qualifiers:
        top = str(frame.f_globals.get("__name__", "")).partition(".")[0]
        owners = importlib.metadata.packages_distributions().get(top, [])
        qualifier = next((normalized(name) for name in owners if normalized(name) in qualifiers), "")
    return registry.beside(qualifier) if qualifier in qualifiers else registry


@functools.lru_cache(maxsize=64)
def _project_of(filename: str) -> str:
    """The normalized ``[project] name`` of the nearest ``pyproject.toml`` above ``filename``; "" where none."""
    for folder in Path(filename).resolve().parents:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                return normalized(str(tomllib.loads(pyproject.read_text()).get("project", {}).get("name", "")))
            except (OSError, ValueError, UnicodeDecodeError):
                return ""
    return ""


def _qualifier_of(name: str) -> str:
    qualifier, dot, _ = name.partition(".")
    return qualifier if dot else ""


class StrictRefusal(PluginError):
    """A plugin's failure that ``DCBENCH_STRICT_PLUGINS`` makes an error."""


def is_strict(plugin: tuple[str, str] | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``DCBENCH_STRICT_PLUGINS`` (``1``, or a comma list of names) makes a failure of ``plugin`` (entry point,
    distribution) an error."""
    text = (os.environ if environ is None else environ).get("DCBENCH_STRICT_PLUGINS", "").strip()
    if text == "1":
        return True
    names = {normalized(item.strip()) for item in text.split(",") if item.strip()}
    return plugin is not None and is_disabled(*plugin, names)


def _report(message: str, failures: list[str], plugin: tuple[str, str] | None = None) -> None:
    if is_strict(plugin):
        raise StrictRefusal(message.removesuffix("; ignored"))
    failures.append(message)
    warnings.warn(message + " (set DCBENCH_STRICT_PLUGINS=1 to make this an error)", PluginLoadWarning, stacklevel=3)


def create_registry(entry_points: Iterable[importlib.metadata.EntryPoint] | None = None) -> Registry:
    """Load the built-in and the installed third-party plugins."""
    from dcbench._version import __version__

    manager = pluggy.PluginManager("dcbench")
    manager.add_hookspecs(hookspecs)
    plugins: list[PluginInfo] = []
    failures: list[str] = []
    for module_name in BUILTIN_PLUGINS:
        manager.register(importlib.import_module(module_name), name=module_name)
        plugins.append(PluginInfo(module_name, "dcbench", __version__, builtin=True))
    if entry_points is None:
        entry_points = importlib.metadata.entry_points(group="dcbench")
    requested = disabled_names()
    turned_off = {normalized(name) for name in requested}
    disabled: list[PluginInfo] = []
    seen: list[tuple[str, str]] = []  # (entry point, distribution) of every third-party plugin installed
    for entry_point in entry_points:
        dist = entry_point.dist
        info = PluginInfo(entry_point.name, dist.metadata["Name"] if dist is not None else "?",
                          dist.version if dist is not None else "?", builtin=False)
        seen.append((info.name, info.distribution))
        if is_disabled(info.name, info.distribution, turned_off):
            disabled.append(info)
        elif _load(manager, entry_point, info, failures):
            plugins.append(info)
    for problem in disable_problems(requested, seen):
        _report(problem, [])  # a warning (an error when strict), but no broken plugin
    registry = Registry(manager, plugins, failures, disabled)
    for kind in KINDS:  # now, so that a broken registration is reported with the broken imports
        registry.entries(kind)
    return registry


def _load(manager: pluggy.PluginManager, entry_point: importlib.metadata.EntryPoint, info: PluginInfo,
          failures: list[str]) -> bool:
    label = f"{info.name} ({info.distribution} {info.version})"
    try:
        module = entry_point.load()
        manager.register(module, name=entry_point.name)
    except pluggy.PluginValidationError as exc:  # its first line names the hook, its last the reason
        lines = str(exc).splitlines()
        _report(f"plugin {label} failed to load: {lines[0]}: {lines[-1]}", failures, (info.name, info.distribution))
        return False
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) stops the command
        raise
    except BaseException as exc:  # sys.exit() on import, too
        _report(f"plugin {label} failed to load: {describe(exc)}", failures, (info.name, info.distribution))
        return False
    for name in sorted(name for name, value in vars(module).items()
                       if hasattr(value, "dcbench_impl") and name not in HOOK_NAMES):
        _report(f"plugin {label} implements {unknown('hook', name, HOOK_NAMES)}", failures,
                (info.name, info.distribution))
    info.source = source_digest(getattr(entry_point, "module", None) or getattr(module, "__name__", ""))
    return True


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, created on first use.

    Returns:
        The registry of the built-in and installed third-party plugins.
    Raises:
        PluginError: A third-party plugin is broken and ``DCBENCH_STRICT_PLUGINS=1``."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = create_registry()
    return _REGISTRY


def reset_registry() -> None:
    """Forget the loaded plugins (tests, or after installing a plugin)."""
    global _REGISTRY
    _REGISTRY = None
