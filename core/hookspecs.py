"""The hooks a dcbench plugin can implement.

A plugin is a module with functions decorated by `dcbench.hookimpl` and named after these specs. Built-in plugins are
listed in `dcbench.registry.BUILTIN_PLUGINS`; third-party plugins are found through the ``dcbench`` entry-point
group::

    [project.entry-points.dcbench]
    my_allocator = "my_package.plugin"

``register(name, target, ...)`` takes a factory or a lazy ``"module:attr"`` string (an allocator that needs torch
imports it only when built), then the keywords each hook lists; any other keyword is a one-line warning and that
registration is skipped."""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("dcbench")
hookimpl = pluggy.HookimplMarker("dcbench")


@hookspec
def register_topologies(register):
    """Register topology families: ``factory(**params)`` returns a `dcbench.Topology`.

    Keywords: ``description=``, ``params=[Param(...), ...]``, and ``figures="module:attr"``, the figures
    ``dcbench plot`` draws of runs on the family that no suite groups."""


@hookspec
def register_workloads(register):
    """Register request generators: ``factory(**params)`` returns a `dcbench.Workload`.

    Keywords: ``description=``, ``params=``. Optionally, the workload's ``fingerprint(network) -> str`` names what
    beyond its spec decides its requests (a trace file's digest), hashed into the run id."""


@hookspec
def register_allocators(register):
    """Register allocation policies: ``factory(**params)`` returns a `dcbench.Allocator`.

    Keywords: ``description=``, ``params=``, and ``demands=("pool",)``: the demand kinds it serves (``"pool"``,
    ``"job"``); ``colour=``: its colour in figures, a matplotlib colour ("C1") or a mapping from "" and ``KEY=VALUE``
    options of its spec to colours; ``learned=True``: left out of ``dcbench bench``, never a baseline;
    ``trainer="module:function"``: ``dcbench train`` calls it as ``function(topology=, workload=, steps=, seed=, out=,
    progress=)`` (plus ``options=``, the ``-a name:KEY=VALUE`` texts) and it returns the checkpoint's path;
    ``training_options="module:attr"``: its configuration dataclass (fields declared with `Param.option`, in a module
    without torch), which ``dcbench list NAME`` shows.

    The allocator protocol: ``reset(network, rng)`` once per run, then ``allocate(request, state)`` per request,
    returning a `dcbench.Allocation`, a `dcbench.Reject` or None. Optionally, ``check(network)`` raises
    `dcbench.SpecError` for parameters that do not suit the network (called on a private copy before anything is
    drawn), and ``fingerprint(network) -> str`` names what beyond its spec decides its behaviour (a checkpoint file),
    hashed into the run id."""


@hookspec
def register_metrics(register):
    """Register metric families: ``function(tables, network)`` receives the recorded `dcbench.RunTables` and the
    `dcbench.Network` and returns a dict of new summary columns, a number each.

    Keywords: ``description=``, ``params=``, and ``columns=[dcbench.Column(...), ...]``: how the tools show its
    columns (heading, better direction, ``headline=``, ``ranks=``, ``description=``); a metric without them is in the
    summary only."""


@hookspec
def register_suites(register):
    """Register named suites: ``register(dcbench.Suite(...))``, the Suite alone."""


@hookspec
def register_commands(cli):
    """Add commands to the ``dcbench`` command line: ``cli`` is the top-level `click.Group`
    (``cli.add_command(command)`` or ``@cli.command()``).

    dcbench's own commands are built-in plugins of this hook and come first. A plugin that takes a taken name, or
    whose hook raises, is one warning line and its command is left out; a third-party command that raises is one error
    line naming the plugin."""
