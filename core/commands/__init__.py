"""The ``dcbench`` command line, made of command plugins: dcbench's own are the modules of `BUILTIN_COMMANDS`, loaded
only here, so nothing below the command line imports click."""

from __future__ import annotations

import sys
from typing import Any

import click

from dcbench.commands.base import (
    COMMAND_OWNERS,
    DcbenchGroup,
    error_line,
    interrupted,
    load_registry,
    plugin_prints_to_stderr,
    sigterm_as_interrupt,
    warnings_as_lines,
)
from dcbench.errors import DcbenchError
from dcbench.registry import Registry

BUILTIN_COMMANDS = ("dcbench.commands.run", "dcbench.commands.sweep", "dcbench.commands.train",
                    "dcbench.commands.report", "dcbench.commands.bench", "dcbench.commands.leaderboard",
                    "dcbench.commands.policy")


@click.group(cls=DcbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dcbench")
def cli() -> None:
    """dcbench: network-aware resource allocation, benchmarked.

    \b
    Quick start:
      dcbench list                                 what is installed
      dcbench run -a gnn_ppo -t tiered:32,1x4      the trained agent on one scenario
      dcbench sweep -s nara2022 -a tetris,gnn_ppo  a whole suite, every seed
      dcbench report results/nara2022              its tables with 95% CIs
      dcbench runs                                 the runs in results/, a line each
      dcbench report results                       those runs compared, as a sweep's
      dcbench leaderboard                          rebuild the rankings
      dcbench leaderboard verify                   re-run submitted runs: same numbers?
    """


def add_commands(group: click.Group, registry: Registry) -> None:
    """Add the built-in command plugins' commands, then each third-party plugin's; one that is no click command or
    takes another plugin's command name is a warning, and the command there stays."""
    for module_name in BUILTIN_COMMANDS:
        registry.add_builtin(module_name)
    for impl in registry.hook_implementations("register_commands"):
        plugin = "dcbench" if registry.is_builtin(impl.plugin_name) else impl.plugin_name
        before = dict(group.commands)
        registry.call_plugin(impl, "register_commands", cli=group)
        for name, command in list(group.commands.items()):
            if before.get(name) is command:
                continue
            owner = COMMAND_OWNERS.get(before[name], "dcbench") if name in before else plugin
            if not isinstance(command, click.Command):
                problem = f"registers command {name!r} as {type(command).__name__}, not a click command"
            elif owner != plugin:
                problem = f"registers command {name!r}, already registered by {owner!r}"
            else:  # a new name, or its own command renewed (tests load the commands again)
                COMMAND_OWNERS[command] = plugin
                continue
            if name in before:
                group.commands[name] = before[name]
            else:
                del group.commands[name]
            registry.fail(f"plugin {registry.label(impl.plugin_name)} {problem}; ignored", impl.plugin_name)


def load_commands(group: Any = cli) -> None:
    """`add_commands` with the process's registry."""
    registry = load_registry()
    with warnings_as_lines(), plugin_prints_to_stderr():
        add_commands(group, registry)


cli.load_commands = load_commands


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show "±" or "Φ" gets an escape, not a crash
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    with sigterm_as_interrupt():
        try:
            cli.commands_loaded()
        except DcbenchError as exc:  # a strict registry's refusal, before the group runs
            error_line(exc).show()
            sys.exit(2)
        except KeyboardInterrupt as exc:  # while a plugin imports (torch, say)
            sys.exit(interrupted(exc).exit_code)
        cli(prog_name="dcbench")
