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
    Optionally, ``figures="module:attr"`` names the figures ``dcbench plot``
    draws of runs on the family that no suite groups.
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

    The allocator protocol: ``reset(network, rng)`` once per run, then
    ``allocate(request, state)`` per request, returning a
    `dcbench.Allocation`, a `dcbench.Reject` or None. Optionally,
    ``check(network) -> None`` refuses parameters that do not suit the
    network: it is called when a run's specs are resolved, before anything
    is drawn, with a private copy of the network, and raises
    `dcbench.SpecError` ("k=12 but the topology has only 8 racks"), which
    is reported as an error in the spec; anything else it raises is the
    plugin's bug. `dcbench.Allocator`, `dcbench.PoolAllocator` and
    `dcbench.JobAllocator` give a ``check`` that accepts any network.

    ``colour=`` (optional) is the colour of its lines and bars in figures:
    a matplotlib colour ("C1"), or a mapping from "" and ``KEY=VALUE``
    options of its spec to colours (``{"": "C5", "reconfigure=no": "C7"}``).

    A learned allocator also passes ``learned=True`` (it is left out of
    ``dcbench bench`` and is never a leaderboard baseline) and, to be
    trainable with ``dcbench train``, ``trainer="module:function"``, called
    as ``function(topology=, workload=, steps=, seed=, out=, progress=)``
    (plus ``options=``, the ``KEY=VALUE`` texts of ``-a name:KEY=VALUE``)
    and returning the checkpoint's path; ``training_options="module:attr"``
    names its configuration dataclass (fields declared with `Param.option`,
    in a module that imports no torch), which ``dcbench list NAME`` shows
    with each option's help. An allocator whose behaviour
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

    Optionally, ``columns=[dcbench.Column(...), ...]`` declares how the
    tools show its columns: a heading and whether higher or lower is better;
    which ``dcbench run``'s table shows (``headline=``), which rank runs where
    no suite says (``ranks=``, e.g. acceptance for pools), which get a table
    in ``dcbench report`` (``description=``); the leaderboard shows every
    declared column. A metric without ``columns`` is in the summary only.
    """


@hookspec
def register_suites(register):
    """Register named suites of scenarios.

    Call ``register(dcbench.Suite(name=..., scenarios=[...], ...))``; a
    suite may name its figures, ``Suite(figures="module:attr")``, which
    ``dcbench plot`` draws of a sweep of it.
    """


@hookspec
def register_commands(cli):
    """Add commands to the ``dcbench`` command line.

    ``cli`` is the top-level `click.Group`: ``cli.add_command(command)``,
    or decorate new commands with ``@cli.command()``. dcbench's own commands
    (``run``, ``sweep``, ``train``, ``report``, ``plot``, ``bench``,
    ``leaderboard``) are built-in plugins of this hook and come first. A
    plugin that takes a name another plugin's command has, or whose hook
    raises, is one warning line and its command is left out; a third-party
    command that raises is one error line naming the plugin.
    """
