"""One registered plugin: its entry, how it is loaded and built, and how its
failures are reported.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from dcbench.errors import DcbenchError, PluginError, SpecError, describe
from dcbench.registry.kinds import BUILTIN_PLUGINS, DEMAND_KINDS
from dcbench.spec import Param, Spec, bind, resolved_spec


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
