"""The error hierarchy of dcbench.

Every error a user can cause (a bad spec, an unknown plugin, a broken plugin,
an allocator that misbehaves, a corrupt results file) is a `DcbenchError`.
Its message is one line that names the problem and, where there is one, the
fix; the CLI prints it and exits with code 2, without a traceback.
"""

from __future__ import annotations


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
    """An allocator raised, or returned something that is not an allocation."""


class ResultsError(DcbenchError):
    """Results cannot be written, or a results file is missing or corrupt."""
