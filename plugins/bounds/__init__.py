"""Upper bounds on what any allocator can accept (docs/bounds.md): the ``dcbench bound`` command."""

from __future__ import annotations

from dcbench import hookimpl


@hookimpl
def register_commands(cli):
    """Add ``dcbench bound``.

    Args:
        cli: The ``dcbench`` click group."""
    from dcbench.plugins.bounds.command import bound

    cli.add_command(bound)
