"""``dcbench policy``: keep a policy by its content, to run, sweep and submit
it as ``policy:sha256=ID`` (docs/policies.md)."""

from __future__ import annotations

import click

from dcbench.errors import SpecError
from dcbench.hookspecs import hookimpl


@click.group()
def policy() -> None:
    """Keep policies by their content: `add` one, `list` them.

    \b
    A stored policy runs as the allocator policy:sha256=ID, ID the first 16
    hex digits of its content's SHA-256 (never its path), so its runs can be
    submitted: dcbench run -a policy:sha256=ID, dcbench sweep -s SUITE -a
    policy:sha256=ID. The store is $DCBENCH_POLICIES (default
    ~/.cache/dcbench/policies).
    """


@policy.command()
@click.argument("source")
@click.option("--loader", default=None,
              help="MODULE:FUNCTION that loads SOURCE from its path, for a file that is not Python "
                   "(sb3_contrib:MaskablePPO.load for a saved MaskablePPO model).")
@click.option("--name", default=None, help="A name for people, shown by `dcbench policy list`.")
def add(source: str, loader: str | None, name: str | None) -> None:
    """Store the policy SOURCE and print the allocator spec that runs it.

    \b
    SOURCE is one of:
      FILE.py[:NAME]     a Python file that defines the policy as `policy` (or NAME)
      FILE --loader M:F  any file, loaded by calling F(path) (a saved SB3 model)
      MODULE:ATTR        an importable policy, checked against its content when loaded
    A policy is a callable from the environment's observation to an action,
    or an object with predict(observation) (an SB3 model).
    """
    from dcbench.envs.evaluate import add_policy

    if name is not None and (not name.isprintable() or not name.strip()):
        raise SpecError(f"--name {name!r} is not one printable line")
    stored = add_policy(source, loader=loader, name=name)
    click.echo(stored.spec)
    click.echo(f"policy {stored.id} ({stored.kind}) is in '{stored.folder}'; run it with "
               f"`dcbench run -a {stored.spec}` or `dcbench sweep -s SUITE -a {stored.spec}`", err=True)


@policy.command(name="list")
def list_policies() -> None:
    """List the stored policies: id, kind, name, what was added."""
    from dcbench.envs.evaluate import policy_store, stored_policies

    found = stored_policies()
    if not found:
        click.echo(f"no policy in '{policy_store()}'; add one with `dcbench policy add`", err=True)
        return
    for stored in found:
        click.echo(f"{stored.id}  {stored.kind:<6}  {stored.name or '-'}  {stored.source}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(policy)
