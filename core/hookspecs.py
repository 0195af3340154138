"""The hooks a dcbench plugin can implement (docs/writing-plugins.md): a plugin is a module of functions named after
these, decorated with `dcbench.hookimpl`, found through the ``dcbench`` entry-point group. ``register(name, target,
...)`` takes a factory or a lazy ``"module:attr"`` string, then the keywords each hook lists; any other keyword is a
one-line warning and that registration is skipped."""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("dcbench")
hookimpl = pluggy.HookimplMarker("dcbench")


@hookspec
def register_topologies(register):
    """Register topology families: ``factory(**params)`` returns a `dcbench.Topology`; keywords ``description=``,
    ``params=[Param(...), ...]``, ``figures="module:attr"`` (drawn of runs no suite groups)."""


@hookspec
def register_workloads(register):
    """Register request generators: ``factory(**params)`` returns a `dcbench.Workload`; keywords ``description=``,
    ``params=``. A workload's optional ``fingerprint(network) -> str`` (a trace file's digest) enters the run id."""


@hookspec
def register_allocators(register):
    """Register allocation policies: ``factory(**params)`` returns a `dcbench.Allocator`, which is ``reset(network,
    rng)`` once per run, then asked ``allocate(request, state)`` per request, and may have ``check(network)`` and
    ``fingerprint(network) -> str``. Keywords ``description=``, ``params=``, ``demands=("pool",)``, ``colour=``,
    ``learned=``, ``trainer="module:function"``, ``training_options="module:attr"``, ``authors=``, ``paper=``,
    ``code=``, ``training_seeds=``."""


@hookspec
def register_metrics(register):
    """Register metric families: ``function(tables, network)`` returns a dict of new summary columns, a number each;
    keywords ``description=``, ``params=``, ``columns=[dcbench.Column(...), ...]``."""


@hookspec
def register_suites(register):
    """Register named suites: ``register(dcbench.Suite(...))``, the Suite alone."""


@hookspec
def register_commands(cli):
    """Add commands to ``cli``, the ``dcbench`` `click.Group`; one that takes a taken name is a warning and left out."""
