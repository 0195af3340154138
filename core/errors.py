"""The error ladder: every error a user can cause is a `DcbenchError` whose one-line message names the problem and
the fix; the command line prints it and exits with code 2."""

from __future__ import annotations

from typing import Any


class DcbenchError(Exception):
    """Base class of every error dcbench reports to a user; raised as such where nothing more specific fits."""


class SpecError(DcbenchError):
    """A malformed spec, or a setting out of its type or range (a parameter, an option, a seed)."""


class UnknownPluginError(SpecError):
    """A spec names a plugin that is not registered; the message lists the known ones."""


class NotInstalledError(UnknownPluginError):
    """What a sound spec names is not on this machine (a stored policy, a trace file not downloaded)."""


class PluginError(DcbenchError):
    """A plugin failed to load, register or build, or its code raised or returned something unusable."""


class IncompatibleError(DcbenchError):
    """An allocator or a topology cannot serve the kind of demand a workload produces."""


class AllocatorError(DcbenchError):
    """An allocator raised or returned something unusable, or asked a builder for a step it refuses.

    Args:
        message: The one-line message.
        did: What a third-party allocator did ("raised ValueError: ..."), to name its plugin; None for a builder."""

    def __init__(self, message: str, did: str | None = None) -> None:
        super().__init__(message)
        self.did = did

    @classmethod
    def of_allocator(cls, did: str, fix: bool = True) -> AllocatorError:
        """The error of an allocator that misbehaved: "allocator " and what it did.

        Args:
            did: What it did ("raised ValueError: ... (request 3)").
            fix: Whether the message ends with "; fix the allocator".
        Returns:
            The error, its ``did`` set."""
        return cls(f"allocator {did}" + ("; fix the allocator" if fix else ""), did)

    def __reduce__(self) -> Any:  # pickled whole across processes
        return type(self), (str(self), self.did)


class ResultsError(DcbenchError):
    """Results cannot be written (or their folder is locked), or a results file is missing or corrupt."""


def describe(exc: BaseException, limit: int = 200) -> str:
    """An exception in one line: its type and its message's first line (two where the first ends in a colon).

    Args:
        exc: The exception; one whose ``__str__`` fails is named by its type.
        limit: The most characters of the message (an ellipsis ends a cut one).
    Returns:
        ``"ValueError: the message"``, or the type's name where it has none."""
    try:
        text = str(exc)
    except Exception:  # a plugin's exception whose __str__ fails
        text = ""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    message = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return f"{type(exc).__name__}: {cut(message, limit)}"


def short_repr(value: Any, limit: int = 60) -> str:
    """``value``'s repr on one line, cut at ``limit`` characters: how an error quotes a plugin's value."""
    return cut(" ".join(repr(value).split()), limit)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
