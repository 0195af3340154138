"""The error hierarchy of dcbench.

Every error a user can cause (a bad spec, an unknown plugin, a broken plugin,
an allocator that misbehaves, a corrupt results file) is a `DcbenchError`.
Its message is one line that names the problem and, where there is one, the
fix; the CLI prints it and exits with code 2, without a traceback.
"""

from __future__ import annotations

from typing import Any


class DcbenchError(Exception):
    """Base class of every error dcbench reports to a user.

    Raised as such where nothing more specific fits (matplotlib missing for
    a figure); the CLI prints its one-line message and exits with code 2.
    """


class SpecError(DcbenchError):
    """A malformed spec, or a parameter a plugin does not accept.

    Also raised for any other setting a user gives out of its type or range:
    a seed, ``--requests``, an environment's settings, a training option.
    """


class UnknownPluginError(SpecError):
    """A spec names a plugin that is not registered.

    Its message lists the known plugins of that kind and, where one is
    close, suggests it.
    """


class NotInstalledError(UnknownPluginError):
    """What a spec names is not on this machine, though the spec is sound:
    a stored policy (``policy:sha256=ID``) missing from the policy store.

    `dcbench leaderboard verify` skips the runs that need it, as it skips
    runs of a plugin that is not installed.
    """


class PluginError(DcbenchError):
    """A plugin failed to load, to register, or to build what it registered.

    Also raised where a third-party plugin's code raises or returns
    something unusable during a run (a topology that does not compile, a
    workload's bad request sequence, a metric's bad columns); the message
    names the plugin and its distribution.
    """


class IncompatibleError(DcbenchError):
    """An allocator cannot serve the kind of demand a workload produces.

    Also raised where a topology serves no demand of that kind.
    """


class AllocatorError(DcbenchError):
    """An allocator raised, or returned something that is not an allocation.

    Also raised where a builder refuses a step an allocator asked for (a
    server already chosen, a rack out of range), where an allocator's
    fingerprint cannot be taken (a missing checkpoint), and where the
    environment is given an action that is not an integer.

    Args:
        message: The one-line message.
        did: What the allocator did ("raised ValueError: ..."), for a
            message that names a third-party allocator's plugin; None where
            a builder refused a step (the message says it all).

    Attributes:
        did: ``did`` as given.
    """

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
            The error, its ``did`` set.
        """
        return cls(f"allocator {did}" + ("; fix the allocator" if fix else ""), did)

    def __reduce__(self) -> Any:  # pickled whole across processes
        return type(self), (str(self), self.did)


class ResultsError(DcbenchError):
    """Results cannot be written, or a results file is missing or corrupt.

    Also raised where another dcbench command holds the lock of the folder
    or file to write.
    """


def describe(exc: BaseException, limit: int = 200) -> str:
    """An exception in one line: its type and the first line of its message,
    with the next line too where the first ends in a colon (torch's and
    pyarrow's messages run to several lines), cut at ``limit`` characters.

    Args:
        exc: The exception; one whose ``__str__`` fails is named by its type.
        limit: The most characters of the message (an ellipsis ends a cut one).

    Returns:
        ``"ValueError: the message"``, or the type's name alone where the
        message is empty.
    """
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


def short_repr(value: Any, limit: int = 60) -> str:
    """``value``'s repr on one line, cut at ``limit`` characters (an
    ellipsis ends a cut one): how an error message quotes what a plugin
    gave."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
