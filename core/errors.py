"""The error hierarchy of dcbench.

Every error a user can cause (a bad spec, an unknown plugin, a broken plugin,
an allocator that misbehaves, a corrupt results file) is a `DcbenchError`.
Its message is one line that names the problem and, where there is one, the
fix; the CLI prints it and exits with code 2, without a traceback.
"""

from __future__ import annotations

from typing import Any


class DcbenchError(Exception):
    """Base class of every error dcbench reports to a user."""


class SpecError(DcbenchError):
    """A malformed spec, or a parameter a plugin does not accept."""


class UnknownPluginError(SpecError):
    """A spec names a plugin that is not registered."""


class PluginError(DcbenchError):
    """A plugin failed to load, to register, or to build what it registered."""


class IncompatibleError(DcbenchError):
    """An allocator cannot serve the kind of demand a workload produces."""


class AllocatorError(DcbenchError):
    """An allocator raised, or returned something that is not an allocation.

    ``did`` is what the allocator did ("raised ..."), for a message that
    names a third-party allocator's plugin; None where a builder refused a
    step (the message says it all)."""

    def __init__(self, message: str, did: str | None = None) -> None:
        super().__init__(message)
        self.did = did

    @classmethod
    def of_allocator(cls, did: str, fix: bool = True) -> AllocatorError:
        return cls(f"allocator {did}" + ("; fix the allocator" if fix else ""), did)

    def __reduce__(self) -> Any:  # pickled whole across processes
        return type(self), (str(self), self.did)


class ResultsError(DcbenchError):
    """Results cannot be written, or a results file is missing or corrupt."""


def describe(exc: BaseException, limit: int = 200) -> str:
    """An exception in one line: its type and the first line of its message,
    with the next line too where the first ends in a colon (torch's and
    pyarrow's messages run to several lines), cut at ``limit`` characters."""
    try:
        text = str(exc)
    except Exception:  # a plugin's exception whose __str__ fails
        text = ""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    message = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    if len(message) > limit:
        message = message[: limit - 1] + "…"
    return f"{type(exc).__name__}: {message}"
