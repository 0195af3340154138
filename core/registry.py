"""The plugin manager and the registry of everything plugins register.

Built-in plugins are the modules in `BUILTIN_PLUGINS`; third-party plugins
come through the ``dcbench`` entry-point group. A third-party plugin that
fails to import or to register is skipped with a one-line warning naming it
(``DCBENCH_STRICT_PLUGINS=1`` turns that into an error), so one broken
package never takes the command line down with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import importlib
import importlib.metadata
import os
import re
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import pluggy

from dcbench import hookspecs
from dcbench.errors import DcbenchError, PluginError, SpecError, UnknownPluginError, describe
from dcbench.spec import PARAM_TYPES, Param, Spec, bind, resolved_spec, unknown
from dcbench.suite import Scenario, Suite

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

DEMAND_KINDS = ("pool", "job")

# The keywords beyond name, target, description and params that ``register`` takes, by kind.
REGISTER_KEYWORDS = {"allocator": ("demands", "learned", "trainer"), "metric": ("headline",)}

BETTER = ("higher", "lower", None)  # a headline column's direction: None for one that only describes a run


@dataclass(frozen=True)
class Headline:
    """A summary column a metric plugin declares worth showing first
    (``register(..., headline=[(column, heading, better[, demands]), ...])``):
    ``dcbench run`` prints it under ``heading`` for runs of the ``demands``
    kinds where it has a value. ``column`` may hold one ``*``, standing for
    what varies with the topology, letters and digits (``link_util_tier*``:
    ``link_util_tier1``, not ``link_util_tier1_last25``), which ``{}`` in
    ``heading`` then repeats ("tier-{} link utilisation"). ``better`` is
    "higher", "lower" or None (a column that describes, such as a share of
    requests on one rack, with no better direction)."""

    column: str
    heading: str
    better: str | None = None
    demands: tuple[str, ...] = ("pool", "job")

    @classmethod
    def of(cls, declared: Any) -> Headline:
        """A declaration as `headline_problem` accepts it."""
        column, heading, better, *demands = declared
        kinds = demands[0] if demands else DEMAND_KINDS
        return cls(column, heading, better, (kinds,) if isinstance(kinds, str) else tuple(kinds))

    def matches(self, columns: Iterable[str]) -> list[tuple[str, str]]:
        """(column, heading) of each of ``columns`` this declares, in their order."""
        if "*" not in self.column:
            return [(self.column, self.heading)] if self.column in columns else []
        start, end = (re.escape(part) for part in self.column.split("*"))
        pattern = re.compile(f"{start}([A-Za-z0-9]+){end}")
        return [(column, self.heading.replace("{}", found[1]))
                for column in columns if (found := pattern.fullmatch(column))]

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
    distribution: str = ""  # "NAME VERSION" of a third-party plugin's distribution, where known

    @property
    def demands(self) -> tuple[str, ...]:
        """The demand kinds an allocator serves (``pool`` unless it registered others)."""
        return tuple(self.extra.get("demands", ("pool",)))

    @property
    def headline(self) -> tuple[Headline, ...]:
        """The headline columns a metric declared (none unless it did)."""
        return tuple(Headline.of(declared) for declared in self.extra.get("headline", ()))

    @property
    def builtin(self) -> bool:
        return self.plugin in BUILTIN_PLUGINS

    @property
    def origin(self) -> str:
        """``plugin NAME`` and, where known, its distribution: who to tell about a failure."""
        return f"plugin {self.plugin}" + (f", {self.distribution}" if self.distribution else "")

    def error(self, problem: str) -> PluginError:
        """A one-line error saying what this entry's plugin did wrong."""
        return PluginError(f"{self.kind} {self.name!r} ({self.origin}) {problem}; report it to the plugin's authors")

    def load(self) -> Callable[..., Any]:
        if not isinstance(self.target, str):
            return self.target
        module_name, _, attr = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) stops the command
            raise
        except BaseException as exc:  # a broken plugin must not show a traceback
            if self.builtin and not isinstance(exc, ImportError):  # a missing dependency is the user's to fix
                raise
            missing = isinstance(exc, ImportError) and getattr(exc, "name", None)
            fix = (f"install the package that provides {missing!r}, or report it to the plugin's authors"
                   if missing else "report it to the plugin's authors")
            raise PluginError(
                f"{self.kind} {self.name!r} ({self.origin}) failed to load "
                f"{self.target!r}: {describe(exc)}; {fix}"
            ) from exc

    def build(self, spec: Spec | str) -> Built:
        """Bind ``spec`` to this entry's parameters and call its factory."""
        if isinstance(spec, str):
            spec = Spec.parse(spec)
        values = bind(self.name, self.params, spec)
        factory = self.load()
        with blamed_on(self, "failed when built"):
            try:
                obj = factory(**values)
            except SpecError:
                raise
            except ValueError as exc:  # the factory refuses a parameter value: the spec's to fix
                raise SpecError(f"{self.name}: {exc}") from exc
            # anything else (a TypeError: a signature that does not match its params, say) is the plugin's
        return Built(obj, resolved_spec(self.name, values), values)


@contextlib.contextmanager
def blamed_on(entry: PluginEntry, failure: str) -> Iterator[None]:
    """Report an exception of a third-party plugin's code as a one-line
    `PluginError` (``failure`` says where it happened), keeping the exception
    as its cause. A built-in plugin's exception is a bug of dcbench itself,
    so it keeps its traceback."""
    try:
        yield
    except DcbenchError:
        raise
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) stops the command
        raise
    except BaseException as exc:
        if entry.builtin:
            raise
        raise entry.error(f"{failure}: {describe(exc)}") from exc


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
            self._call(impl, hook.name, functools.partial(self._register, kind, entries, impl.plugin_name))
        return entries

    def _call(self, impl: Any, hook_name: str, *args: Any, **kwargs: Any) -> None:
        """One plugin's implementation of a hook; a third-party one that raises (or exits) is a warning."""
        if impl.wrapper or impl.hookwrapper:  # called on its own, a wrapper's generator would never run
            self._fail(f"plugin {self._label(impl.plugin_name)} implements {hook_name} as a hook wrapper, which "
                       "dcbench does not call; drop wrapper=True (or hookwrapper=True) from its @hookimpl; ignored")
            return
        try:
            impl.function(*args, **kwargs)
        except StrictRefusal:  # what it registered, refused in strict mode: the message names it already
            raise
        except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) stops the command
            raise
        except BaseException as exc:
            if impl.plugin_name in BUILTIN_PLUGINS:  # dcbench's own bug: its traceback, not a warning
                raise
            self._fail(f"plugin {self._label(impl.plugin_name)} failed in {hook_name}: {describe(exc)}")

    def _register(self, kind: str, entries: dict[str, Any], plugin_name: str, name_or_suite: Any,
                  target: Any = None, *, description: str = "", params: Sequence[Param] = (), **extra: Any) -> None:
        """What a plugin's ``register`` calls: ``register(name, target, ...)``, or ``register(suite)``."""
        if kind == "suite":
            entry = name_or_suite
            name = getattr(entry, "name", None)
            problem = suite_problem(entry)
        else:
            name = name_or_suite
            problem = registration_problem(kind, name, target, params, extra, description)
        if problem is not None:
            self._fail(f"plugin {self._label(plugin_name)} registers {kind} {name!r}: {problem}; ignored")
            return
        if kind != "suite":
            description = " ".join(description.split())  # one line in `dcbench list`, whatever was given
            entry = PluginEntry(kind, name, target, description, tuple(params), plugin_name, extra,
                                self._distribution(plugin_name))
        if name in entries:
            self._fail(f"plugin {self._label(plugin_name)} registers {kind} {name!r}, "
                       f"already registered by {_owner(entries[name])!r}; ignored")
            return
        if kind == "suite":
            entry = dataclasses.replace(entry, plugin=plugin_name)  # the plugin's own Suite stays as it made it
        entries[name] = entry

    def call_each(self, hook_name: str, **kwargs: Any) -> None:
        """Call every implementation of a hook on its own, reporting a broken one by name;
        for ``register_commands``, a plugin cannot replace a command that is already there."""
        hook = getattr(self.manager.hook, hook_name)
        cli = kwargs["cli"] if hook_name == "register_commands" else None
        for impl in hook.get_hookimpls():  # registration order: built-ins first
            commands = {} if cli is None else _command_tree(cli)
            group = None if cli is None else _CommandState.of(cli)  # its own options and callback, too
            self._call(impl, hook_name, **kwargs)
            if cli is not None:
                if not group.unchanged():
                    group.restore()
                    self._fail(f"plugin {self._label(impl.plugin_name)} changes the options or callback of "
                               "dcbench itself; ignored")
                self._keep_commands(cli, commands, impl.plugin_name)

    def _keep_commands(self, cli: Any, before: Mapping[tuple[str, ...], _CommandState], plugin_name: str) -> None:
        """Put back the commands of ``before`` (subcommands of groups too:
        ``leaderboard verify``) that ``plugin_name`` replaced, removed or
        changed (their callback or options), and record it as the owner of
        those it added. Re-registering its own commands (``call_each`` run
        again on the same group) is fine."""
        for path, state in before.items():
            if _COMMAND_OWNERS.get(state.command) == plugin_name:
                continue
            parent = cli if len(path) == 1 else before[path[:-1]].command
            name = " ".join(path)
            if parent.commands.get(path[-1]) is not state.command:
                problem = "registers command {name!r}, already registered by {owner!r}"
            elif not state.unchanged():
                problem = "changes command {name!r} of {owner!r}"
            else:
                continue
            state.restore()
            parent.commands[path[-1]] = state.command
            owner = _COMMAND_OWNERS.get(state.command, "dcbench")
            self._fail(f"plugin {self._label(plugin_name)} {problem.format(name=name, owner=owner)}; ignored")
        import click

        for path, parent, command in _walk_commands(cli):
            if path in before and before[path].command is command:
                continue
            if not isinstance(command, click.Command):
                del parent.commands[path[-1]]
                self._fail(f"plugin {self._label(plugin_name)} registers command {' '.join(path)!r} as "
                           f"{type(command).__name__}, not a click command; ignored")
                continue
            _COMMAND_OWNERS[command] = plugin_name

    def command_owner(self, command: Any) -> str | None:
        """The third-party plugin that added ``command`` (with its distribution), or None for dcbench's own."""
        owner = _COMMAND_OWNERS.get(command)
        return None if owner is None or owner in BUILTIN_PLUGINS else self._label(owner)

    def _distribution(self, plugin_name: str) -> str:
        """``NAME VERSION`` of a third-party plugin's distribution; empty where unknown."""
        info = next((p for p in self.plugins if p.name == plugin_name and not p.builtin), None)
        return f"{info.distribution} {info.version}" if info is not None and info.distribution != "?" else ""

    def _label(self, plugin_name: str) -> str:
        distribution = self._distribution(plugin_name)
        return f"{plugin_name!r}" + (f" ({distribution})" if distribution else "")

    def _fail(self, message: str) -> None:
        _report(message, self.failures)


# Which plugin added each command, so that a plugin's commands can be told from the built-in ones.
_COMMAND_OWNERS: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def _walk_commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """(path, parent group, command) for every command under ``group``, groups' subcommands included."""
    found = []
    for name, command in list(group.commands.items()):
        found.append(((*path, name), group, command))
        if hasattr(command, "commands") and isinstance(command.commands, dict):
            found += _walk_commands(command, (*path, name))
    return found


def _command_tree(cli: Any) -> dict[tuple[str, ...], _CommandState]:
    """The state of every command under ``cli``, by its path."""
    return {path: _CommandState.of(command) for path, _, command in _walk_commands(cli)}


@dataclass(frozen=True)
class _CommandState:
    """A command as it was before a plugin's ``register_commands`` ran."""

    command: Any
    callback: Any
    params: tuple[Any, ...]
    settings: tuple[dict[str, Any], ...]  # each option's attributes (its default, say)

    @classmethod
    def of(cls, command: Any) -> _CommandState:
        return cls(command, command.callback, tuple(command.params), tuple(dict(vars(p)) for p in command.params))

    def unchanged(self) -> bool:
        return (self.command.callback is self.callback and tuple(self.command.params) == self.params
                and all(vars(param).keys() == saved.keys() and all(vars(param)[k] is v for k, v in saved.items())
                        for param, saved in zip(self.params, self.settings)))

    def restore(self) -> None:
        self.command.callback = self.callback
        self.command.params[:] = self.params
        for param, saved in zip(self.params, self.settings):
            vars(param).clear()
            vars(param).update(saved)


def registration_problem(kind: str, name: Any, target: Any, params: Any, extra: Mapping[str, Any],
                         description: Any = "") -> str | None:
    """What makes ``register(name, target, params=..., **extra)`` unusable, or None."""
    if not isinstance(name, str) or not _is_spec_name(name):
        return "no spec can give that name; use letters, digits, '_', '.' and '-', starting with a letter or '_'"
    if not isinstance(description, str):
        return f"its description {description!r} is not a string"
    if not _loadable(target):
        return f"its target {target!r} is neither a callable nor a 'module:attr' string"
    if not isinstance(params, (list, tuple)):
        return f"params={params!r} is not a list of dcbench.Param"
    strays = [param for param in params if not isinstance(param, Param)]
    if strays:
        return f"params holds {strays[0]!r}, not a dcbench.Param"
    names = [param.name for param in params]
    if len(set(names)) != len(names):
        return "two of its params have one name"
    for param in params:
        problem = param_problem(param)
        if problem is not None:
            return f"param {param.name!r} {problem}"
    known = REGISTER_KEYWORDS.get(kind, ())
    strays = sorted(set(extra) - set(known))
    if strays:  # a misspelt ``lerned=True`` would otherwise make a learned allocator a baseline
        close = difflib.get_close_matches(strays[0], known, n=1)
        keywords = ", ".join(f"{keyword}=" for keyword in ("description", "params", *known))
        takes = f"did you mean {close[0]}=?" if close else f"register takes {keywords} for {PLURALS[kind]}"
        return f"it passes the unknown keyword {strays[0]}=; {takes}"
    learned = extra.get("learned", False)
    if not isinstance(learned, bool):
        return f"learned={learned!r} is not True or False"
    trainer = extra.get("trainer")
    if trainer is not None and not _loadable(trainer):
        return f"its trainer {trainer!r} is neither a callable nor a 'module:attr'"
    demands = extra.get("demands", ("pool",))
    if kind == "allocator" and (not isinstance(demands, (list, tuple)) or not demands
                                or not set(demands) <= set(DEMAND_KINDS)):
        return f"demands={demands!r} is not a tuple of {' and/or '.join(map(repr, DEMAND_KINDS))}"
    if "headline" in extra:
        return headline_problem(extra["headline"])
    return None


HEADLINE_FORM = "give headline=[(column, heading, 'higher' | 'lower' | None[, demand kinds]), ...]"
HEADING_LENGTH = 40


def headline_problem(headline: Any) -> str | None:
    """What makes a metric's ``headline=`` unusable (`Headline`), or None."""
    if not isinstance(headline, (list, tuple)):
        return f"headline={_short_repr(headline)} is not a list; {HEADLINE_FORM}"
    for declared in headline:
        if not isinstance(declared, (list, tuple)) or len(declared) not in (3, 4):
            return f"headline holds {_short_repr(declared)}, not a tuple of 3 or 4; {HEADLINE_FORM}"
        column, heading, better, *demands = declared
        if (not isinstance(column, str) or column.count("*") > 1
                or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", column.replace("*", "x"))):
            return (f"headline column {_short_repr(column)} is no summary column's name (letters, digits and '_', "
                    "starting with a letter; one '*' where the column varies)")
        if not isinstance(heading, str) or not heading.strip() or not heading.isprintable() \
                or len(heading) > HEADING_LENGTH:
            return f"headline heading {_short_repr(heading)} of {column!r} is not one line of 1 to {HEADING_LENGTH} " \
                   "characters"
        if better not in BETTER:
            return f"headline {column!r} has better={better!r}; give 'higher', 'lower' or None"
        kinds = demands[0] if demands else DEMAND_KINDS
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        if not isinstance(kinds, (list, tuple)) or not kinds or not all(k in DEMAND_KINDS for k in kinds):
            return (f"headline {column!r} is for demands {_short_repr(demands[0])}, not "
                    f"{' and/or '.join(map(repr, DEMAND_KINDS))}")
    return None


def _short_repr(value: Any, limit: int = 60) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _loadable(target: Any) -> bool:
    """A callable, or a 'module:attr' string that `PluginEntry.load` imports."""
    return callable(target) or isinstance(target, str) and ":" in target


def param_problem(param: Param) -> str | None:
    """What makes a declared `Param` unusable, or None: a spec must be able
    to give its name, and its default must be a value it accepts (a run's
    resolved spec writes the default out, and it is parsed again)."""
    if not isinstance(param.name, str) or not param.name.isidentifier():
        return "needs a name of letters, digits and '_'"
    if param.type not in PARAM_TYPES:
        return f"has type {getattr(param.type, '__name__', param.type)}; use str, int, float or bool"
    if param.required or param.default is None:
        return None
    try:
        written = resolved_spec("probe", {param.name: param.default})
        if bind("probe", [param], Spec.parse(written))[param.name] != param.default:
            raise SpecError(written)
    except SpecError:
        return f"has default {param.default!r}, which is not a value it accepts"
    return None


def suite_problem(suite: Any) -> str | None:
    """What makes ``register(suite)`` unusable, or None: a sweep of it must
    have runs, and each (scenario, seed) one row of its own."""
    if not isinstance(suite, Suite):
        return f"it is a {type(suite).__name__}, not a dcbench.Suite"
    if not isinstance(suite.name, str) or not _is_spec_name(suite.name):
        return "its name is no name --suite can give; use letters, digits, '_', '.' and '-'"
    if not isinstance(suite.primary_metric, str) or not suite.primary_metric:
        return f"primary_metric={suite.primary_metric!r} is not a summary column's name"
    if not isinstance(suite.higher_is_better, bool):
        return f"higher_is_better={suite.higher_is_better!r} is not True or False"
    if not isinstance(suite.scenarios, (list, tuple)) or not suite.scenarios:
        return "it has no scenarios; give scenarios=[dcbench.Scenario(...), ...]"
    labels: set[Any] = set()
    for scenario in suite.scenarios:
        if not isinstance(scenario, Scenario):
            return f"scenarios holds {scenario!r}, not a dcbench.Scenario"
        problem = _scenario_problem(scenario)
        if problem is not None:
            return f"scenario {scenario.label!r} {problem}"
        if scenario.label in labels:
            return f"two scenarios are labelled {scenario.label!r}; give each its own name="
        labels.add(scenario.label)
    return None


def _scenario_problem(scenario: Scenario) -> str | None:
    if not isinstance(scenario.topology, str) or not isinstance(scenario.workload, (str, type(None))):
        return "has a topology or workload that is not a spec string"
    if not isinstance(scenario.name, str) or not scenario.label.isprintable():
        return f"has name={scenario.name!r}, not a string of one line"
    if scenario.requests is not None and (type(scenario.requests) is not int or scenario.requests < 1):
        return f"has requests={scenario.requests!r}, not a positive integer or None"
    seeds = scenario.seeds
    if (not isinstance(seeds, (list, tuple)) or not seeds
            or any(type(seed) is not int or seed < 0 for seed in seeds)):
        return f"has seeds={seeds!r}, not a non-empty list of integers >= 0"
    if len(set(seeds)) < len(seeds):
        return f"lists a seed twice in seeds={seeds!r}; its runs would count twice"
    return None


def _is_spec_name(name: str) -> bool:
    try:
        return Spec.parse(name) == Spec(name)
    except SpecError:
        return False


def _owner(entry: Any) -> str:
    return getattr(entry, "plugin", "?")


class StrictRefusal(PluginError):
    """A plugin's failure that ``DCBENCH_STRICT_PLUGINS=1`` makes an error."""


def _report(message: str, failures: list[str]) -> None:
    if os.environ.get("DCBENCH_STRICT_PLUGINS") == "1":
        raise StrictRefusal(message.removesuffix("; ignored"))
    failures.append(message)
    warnings.warn(message + " (set DCBENCH_STRICT_PLUGINS=1 to make this an error)", PluginLoadWarning, stacklevel=3)


def _dcbench_version() -> str:
    from dcbench import __version__

    return __version__


HOOK_NAMES = sorted(name for name in dir(hookspecs) if name.startswith("register_"))


def unknown_hooks(module: Any) -> list[str]:
    """The functions ``module`` marks as hook implementations that dcbench has no hook for (a typo)."""
    return sorted(name for name, value in vars(module).items()
                  if hasattr(value, "dcbench_impl") and name not in HOOK_NAMES)


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
        except pluggy.PluginValidationError as exc:  # its first line names the hook, its last the reason
            lines = str(exc).splitlines()
            _report(f"plugin {label} failed to load: {lines[0]}: {lines[-1]}", failures)
            continue
        except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) stops the command
            raise
        except BaseException as exc:
            _report(f"plugin {label} failed to load: {describe(exc)}", failures)
            continue
        for name in unknown_hooks(module):
            _report(f"plugin {label} implements {unknown('hook', name, HOOK_NAMES)}", failures)
        plugins.append(PluginInfo(entry_point.name, dist_name, dist_version, builtin=False))
    registry = Registry(manager, plugins, failures)
    for kind in KINDS:  # now, so that a broken registration is reported with the broken imports
        registry.entries(kind)
    return registry


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
