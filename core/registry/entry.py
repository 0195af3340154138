"""One registered plugin: its entry, how it is loaded and built, and how its failures are reported."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from dcbench.errors import DcbenchError, PluginError, SpecError, describe
from dcbench.registry.columns import Column
from dcbench.registry.distributions import normalized
from dcbench.registry.kinds import BUILTIN_PLUGINS
from dcbench.spec import Param, Spec, bind, resolved_spec


def import_target(target: str, builtin: bool, failed: str, passing: tuple[type[BaseException], ...] = ()) -> Any:
    """What ``"module:attr"`` names; a failed import is a one-line `PluginError` starting ``failed`` (a built-in
    plugin's keeps its traceback but for a missing dependency)."""
    module_name, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (KeyboardInterrupt, *passing):  # Ctrl-C (or SIGTERM) stops the command
        raise
    except BaseException as exc:  # a module that exits on import, too, is a broken plugin
        if builtin and not isinstance(exc, ImportError):  # a missing dependency is the user's to fix
            raise
        missing = isinstance(exc, ImportError) and getattr(exc, "name", None)
        fix = (f"install the package that provides {missing!r}, or report it to the plugin's authors"
               if missing else "report it to the plugin's authors")
        raise PluginError(f"{failed} {target!r}: {describe(exc)}; {fix}") from exc


@dataclass(frozen=True)
class BuiltPlugin:
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
    distribution: str = ""  # "NAME VERSION" of a third-party plugin's distribution, where known
    source: str = ""  # the digest of a third-party plugin's source (`distributions.source_digest`), where known
    # What `register` takes beyond description and params, by kind (`kinds.REGISTER_KEYWORDS`):
    demands: tuple[str, ...] = ("pool",)  # an allocator's demand kinds
    learned: bool = False
    trainer: Callable[..., Any] | str | None = None
    training_options: str | None = None  # 'module:attr' of a trainer's configuration dataclass
    colour: str | Mapping[str, str] | None = None  # an allocator's colour in figures
    authors: tuple[str, ...] = ()  # an allocator's authors, its paper's and code's links (`dcbench.model.about`)
    paper: str | None = None
    code: str | None = None
    training_seeds: tuple[str, ...] = ()  # a learned allocator's: the episode seeds its trainer draws, "A..B"/"A.."
    columns: tuple[Column, ...] = ()  # a metric's declared summary columns
    figures: str | None = None  # 'module:attr' of a topology's figures, for runs no suite groups
    given: tuple[str, ...] = ()  # which of those its plugin passed

    @property
    def extra(self) -> dict[str, Any]:
        """The keywords beyond description and params that its plugin passed, by name."""
        return {name: getattr(self, name) for name in self.given}

    @property
    def builtin(self) -> bool:
        return self.plugin in BUILTIN_PLUGINS

    @property
    def identity(self) -> str:
        """What a third-party plugin is, for run ids: ``DIST VERSION src=DIGEST``; "" for a built-in one."""
        if self.builtin:
            return ""
        return (self.distribution or self.plugin) + (f" src={self.source}" if self.source else "")

    @property
    def origin(self) -> str:
        """``plugin NAME`` and its distribution, where known."""
        return f"plugin {self.plugin}" + (f", {self.distribution}" if self.distribution else "")

    def error(self, problem: str) -> PluginError:
        """A one-line error saying what this entry's plugin did wrong."""
        return PluginError(f"{self.kind} {self.name!r} ({self.origin}) {problem}; report it to the plugin's authors")

    def load(self) -> Callable[..., Any]:
        if not isinstance(self.target, str):
            return self.target
        return import_target(self.target, self.builtin, f"{self.kind} {self.name!r} ({self.origin}) failed to load")

    def build(self, spec: Spec | str) -> BuiltPlugin:
        """Bind ``spec`` to this entry's parameters and call its factory."""
        if isinstance(spec, str):
            spec = Spec.parse(spec)
        values = bind(self.name, self.params, spec)
        factory = self.load()
        with blamed_on(self, "failed when built"):
            try:
                obj = factory(**values)
            except ValueError as exc:  # the factory refuses a parameter value: the spec's to fix
                raise SpecError(f"{self.name}: {exc}") from exc
            # anything else (a TypeError: a signature that does not match its params, say) is the plugin's
        return BuiltPlugin(obj, resolved_spec(self.name, values), values)


@contextlib.contextmanager
def blamed_on(entry: PluginEntry, failure: str) -> Iterator[None]:
    """Make an exception of a third-party plugin's code in the block a one-line `PluginError`; a built-in's keeps its
    traceback.

    Args:
        entry: The registry entry of the plugin whose code runs in the block.
        failure: Where it failed, as the message says it ("failed in generate()").
    Raises:
        PluginError: The block raised anything else, in a third-party plugin's code."""
    try:
        yield
    except (DcbenchError, KeyboardInterrupt):  # (Ctrl-C, or SIGTERM, stops the command)
        raise
    except BaseException as exc:  # a plugin's own, too, that is no Exception
        if entry.builtin:
            raise
        raise entry.error(f"{failure}: {describe(exc)}") from exc


@dataclass
class PluginInfo:
    """A loaded plugin module: its entry point's name (a built-in's module), its distribution's name and version ("?"
    where unknown)."""

    name: str
    distribution: str
    version: str
    builtin: bool
    source: str = ""

    @property
    def qualifier(self) -> str:
        """The normalized distribution name that qualifies a third-party plugin's names; "" where none does."""
        return "" if self.builtin or self.distribution == "?" else normalized(self.distribution)
