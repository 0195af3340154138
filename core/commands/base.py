"""What every command shares: errors, Ctrl-C, SIGTERM and warnings as one line each, plugins' prints kept off
stdout, path options that refuse "", and the bounds on counts."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from dcbench.errors import DcbenchError, describe
from dcbench.registry import Registry, get_registry
from dcbench.spec import MAX_REQUESTS, check_bounds  # noqa: F401 (MAX_REQUESTS: the commands')


class ErrorLine(click.ClickException):
    """What the group makes of an error: ``Error: MESSAGE`` on one line, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True)


def error_line(exc: DcbenchError) -> ErrorLine:
    return ErrorLine(" ".join(line.strip() for line in str(exc).splitlines() if line.strip()))


def usage_line(exc: click.UsageError, command: str) -> ErrorLine:
    """click's usage error as one line that says where to look."""
    message = exc.format_message().rstrip(".")
    return ErrorLine(f"{message}{'' if message.endswith('?') else ';'} see `{command} --help`")


# the plugin that added each command ("dcbench" for a built-in one)
COMMAND_OWNERS: weakref.WeakKeyDictionary[click.Command, str] = weakref.WeakKeyDictionary()


class DcbenchGroup(click.Group):
    """The ``dcbench`` group: plugins' commands loaded on first use, and every error one line, exit code 2."""

    load_commands: Callable[[click.Group], None] | None = None
    _commands_loaded = False

    def commands_loaded(self) -> None:
        if not self._commands_loaded and self.load_commands is not None:
            self._commands_loaded = True
            self.load_commands(self)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self.commands_loaded()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.commands_loaded()
        return super().list_commands(ctx)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:  # a bare `dcbench`: its help
            raise
        except click.UsageError as exc:  # `dcbench --bogus`
            raise usage_line(exc, info_name or "dcbench") from None

    def invoke(self, ctx: click.Context) -> Any:
        with warnings_as_lines(show_all=False):  # numpy's, matplotlib's, torch's: one line each, not two
            try:
                return super().invoke(ctx)
            except DcbenchError as exc:  # every command's errors, dcbench's and plugins'
                raise error_line(exc) from None
            except click.UsageError as exc:
                if exc.ctx is not None:
                    command = exc.ctx.command_path
                else:  # click's parser gives no context for some errors (an option missing its value)
                    command = " ".join(filter(None, (ctx.command_path, ctx.invoked_subcommand)))
                raise usage_line(exc, command) from None
            except MemoryError:
                raise ErrorLine("ran out of memory; ask for fewer requests or seeds, or a smaller topology") from None
            except BrokenPipeError:  # `dcbench list | head`: click quiets the closed pipe
                raise
            except OSError as exc:  # a path the commands did not check first: still one line, not a traceback
                where = f" '{exc.filename}'" if exc.filename else ""
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # pyarrow's and matplotlib's name no file
                    raise ErrorLine(f"no space left to write{where or ' the output'}: {exc.strerror or exc}; free some "
                                    "space (or give another --out / --root) and run it again; what was there is "
                                    "kept") from None
                raise ErrorLine(f"cannot use{where}: {exc.strerror or exc}; check the path and its "
                                "permissions") from None
            except (click.ClickException, click.exceptions.Exit, click.Abort):
                raise
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`Terminated`)
                raise interrupted(exc) from None
            except Exception as exc:  # a third-party command's bug is one line; dcbench's own keeps its traceback
                command = self.commands.get(ctx.invoked_subcommand or "")
                owner = COMMAND_OWNERS.get(command, "dcbench") if isinstance(command, click.Command) else "dcbench"
                if owner == "dcbench":
                    raise
                raise ErrorLine(f"command {ctx.invoked_subcommand!r} of plugin {get_registry().label(owner)} failed: "
                                f"{describe(exc)}; report it to the plugin's authors") from None


class Terminated(KeyboardInterrupt):
    """SIGTERM raised as Ctrl-C is, so that every clean-up Ctrl-C runs runs for it too."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    def terminate(signum: int, frame: Any) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted(exc: KeyboardInterrupt) -> click.exceptions.Exit:
    """Say so in one line and exit as a shell reports a signal: 128 + its number."""
    said, stopped_by = ("Terminated", signal.SIGTERM) if isinstance(exc, Terminated) else ("Interrupted", signal.SIGINT)
    click.echo(f"{said}: what was finished is kept and nothing is left half-written; run the same command again "
               "to go on", err=True)
    return click.exceptions.Exit(128 + stopped_by)


class NonEmptyPath(click.Path):
    """A path that refuses "": an unset shell variable (``--out $OUT``) would mean the current folder."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("is empty (an unset shell variable?); give a path", param, ctx)
        return super().convert(value, param, ctx)


PATH = NonEmptyPath(path_type=Path)


# Bounds that refuse a typo rather than run out of memory or time, far above any suite's needs.
MAX_SEEDS = 10_000  # seeds of one `run`
MAX_JOBS = 256  # a sweep's worker processes, 100 to 300 MB each
MAX_REPEAT = 100  # `bench --repeat`: the best of 100 is as steady as timing gets
ADHOC_SEEDS = 5  # seeds per scenario of an ad-hoc sweep, as the suites have


def worker_count(jobs: int | None) -> int:
    """``--jobs`` checked, or every core (at most `MAX_JOBS`) where it is not given."""
    check_bounds("--jobs", jobs, 1, at_most=MAX_JOBS)
    return jobs or min(os.cpu_count() or 1, MAX_JOBS)


@contextlib.contextmanager
def warnings_as_lines(show_all: bool = True) -> Iterator[None]:
    """Print warnings raised inside as one line each: all where ``show_all``, else those the filters pass."""
    with warnings.catch_warnings(record=True) as caught:
        if show_all:
            warnings.simplefilter("always")
        try:
            yield
        finally:
            for message in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
                click.echo(f"Warning: {message}", err=True)


@contextlib.contextmanager
def plugin_prints_to_stderr() -> Iterator[Callable[[str], None]]:
    """Plugins' prints on stderr, stdout kept for results; yields an echo to the real stdout."""
    results = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        yield lambda text: click.echo(text, file=results)


def load_registry() -> Registry:
    """The registry, broken third-party plugins reported as one-line warnings."""
    with warnings_as_lines(), plugin_prints_to_stderr():
        return get_registry()
