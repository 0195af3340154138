"""The hooks a dcbench plugin can implement.

A plugin is a module (or any object) with functions decorated by
`dcbench.hookimpl` and named after these specs. Built-in plugins are modules
listed in `dcbench.registry.BUILTIN_PLUGINS`; third-party plugins are
found through the ``dcbench`` entry-point group::

    [project.entry-points.dcbench]
    my_allocator = "my_package.plugin"

Registration is lazy: `register` takes a factory or a ``"module:attr"``
string, so a plugin whose allocator needs torch does not import torch until
that allocator is built.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("dcbench")
hookimpl = pluggy.HookimplMarker("dcbench")


@hookspec
def register_topologies(register):
    """Register topology families.

    Call ``register(name, factory, description=..., params=[Param(...), ...])``
    once per family. ``factory(**params)`` returns a `dcbench.Topology`.
    """


@hookspec
def register_workloads(register):
    """Register request generators.

    Call ``register(name, factory, description=..., params=[...])``.
    ``factory(**params)`` returns a `dcbench.Workload`: an object whose
    ``generate(network, requests, rng)`` draws a `dcbench.RequestSequence`.
    """


@hookspec
def register_allocators(register):
    """Register allocation policies.

    Call ``register(name, factory, description=..., params=[...],
    demands=("pool",))``. ``factory(**params)`` returns a `dcbench.Allocator`;
    ``demands`` lists the demand kinds it serves (``"pool"``, ``"job"``).

    A learned allocator also passes ``learned=True`` (it is left out of
    ``dcbench bench`` and is never a leaderboard baseline) and, to be
    trainable with ``dcbench train``, ``trainer="module:function"``, called
    as ``function(topology=, workload=, steps=, seed=, out=, progress=)``
    (plus ``options=``, the ``KEY=VALUE`` texts of ``-a name:KEY=VALUE``)
    and returning the checkpoint's path. An allocator whose behaviour
    depends on more than its spec (a checkpoint file) gives itself a
    ``fingerprint(network) -> str`` method: it is hashed into the run id,
    so new weights make new runs instead of reusing cached ones.
    """


@hookspec
def register_metrics(register):
    """Register metric families.

    Call ``register(name, function, description=...)``.
    ``function(tables, network)`` receives the recorded `dcbench.RunTables`
    and the compiled `dcbench.Network` and returns a dict of summary columns:
    new names only (not the core's, not another metric's), a number each.

    Optionally, ``headline=[(column, heading, better), ...]`` names the
    columns ``dcbench run`` shows in its table: ``heading`` is how the table
    names the column (one line, at most 40 characters), ``better`` is
    ``"higher"``, ``"lower"`` or ``None`` (a column that describes a run
    rather than scores it). A fourth item limits the column to runs of the
    demand kinds given (``"pool"``, ``"job"``, or a tuple of both); without
    it, it is shown for both. A ``*`` in ``column`` stands for what varies
    with the topology (``"link_util_tier*"``) and ``{}`` in ``heading``
    repeats it (``"tier-{} link utilisation"``). A run's table shows the
    headline columns its summary has a value in (not NaN), the demand
    kind's primary column first (``acceptance_ratio`` for pools,
    ``blocking_probability`` for jobs); a metric without ``headline`` is in
    the summary but not in that table.
    """


@hookspec
def register_suites(register):
    """Register named suites of scenarios.

    Call ``register(dcbench.Suite(name=..., scenarios=[...], ...))``.
    """


@hookspec
def register_commands(cli):
    """Add commands to the ``dcbench`` command line.

    ``cli`` is the top-level `click.Group`; decorate new commands with
    ``@cli.command()``. A command that replaces or changes one already
    there is put back with a warning; one that raises is reported as a
    one-line error naming the plugin.
    """
