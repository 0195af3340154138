"""What every command shares: errors as one line and exit code 2, Ctrl-C and
SIGTERM as one line, warnings as one line each, plugins' prints kept off
stdout, path options that refuse "", and the bounds on counts.
"""

from __future__ import annotations

import contextlib
import errno
import signal
import sys
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from dcbench.errors import DcbenchError, SpecError, describe
from dcbench.registry import Registry, get_registry
from dcbench.spec import LARGEST_INTEGER, MAX_REQUESTS


class ErrorLine(click.ClickException):
    """What the group makes of an error: ``Error: MESSAGE`` on one line, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True)


def error_line(exc: DcbenchError) -> ErrorLine:
    """A `DcbenchError` as one line, even where a plugin raised one with several."""
    return ErrorLine(" ".join(line.strip() for line in str(exc).splitlines() if line.strip()))


def usage_line(exc: click.UsageError, command: str) -> ErrorLine:
    """click's usage error as one line that says where to look (click would print the usage and a hint too)."""
    message = exc.format_message().rstrip(".")
    return ErrorLine(f"{message}{'' if message.endswith('?') else ';'} see `{command} --help`")


# The plugin that added each command ("dcbench" for a built-in one), so that
# a third-party command's failure is one line, not a traceback.
COMMAND_OWNERS: weakref.WeakKeyDictionary[click.Command, str] = weakref.WeakKeyDictionary()


class DcbenchGroup(click.Group):
    """The ``dcbench`` group: its plugins' commands loaded on first use
    (``load_commands``), and every error one line with exit code 2."""

    load_commands: Callable[[click.Group], None] | None = None
    _commands_loaded = False

    def commands_loaded(self) -> None:
        """Load the plugins' commands, once."""
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
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
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
            raise ErrorLine(f"cannot use{where}: {exc.strerror or exc}; check the path and its permissions") from None
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
    """SIGTERM (`kill`, `timeout`, a batch scheduler's time limit), raised
    where Ctrl-C raises KeyboardInterrupt, so that it stops a command as
    Ctrl-C does: every clean-up that Ctrl-C runs (a sweep's workers ended,
    half-written folders removed, a training state kept) runs for it too."""


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
    """Say so in one line (not click's bare "Aborted!") and exit as a shell
    reports a command that the signal stopped: 128 + its number."""
    said, stopped_by = ("Terminated", signal.SIGTERM) if isinstance(exc, Terminated) else ("Interrupted", signal.SIGINT)
    click.echo(f"{said}: what was finished is kept and nothing is left half-written; run the same command again "
               "to go on", err=True)
    return click.exceptions.Exit(128 + stopped_by)


class NonEmptyPath(click.Path):
    """A path option or argument that refuses "": an unset shell variable
    (``--out $OUT``) would otherwise mean the current folder."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("is empty (an unset shell variable?); give a path", param, ctx)
        return super().convert(value, param, ctx)


PATH = NonEmptyPath(path_type=Path)


# Bounds that keep a typo from becoming a MemoryError: far above any suite, far below what fits in memory.
MAX_RUN_REQUESTS = MAX_REQUESTS


# Seeds of one `run`: 2,000 times a suite's 5; each summary is kept until the table at the end.
MAX_SEEDS = 10_000


# Worker processes of a sweep, each with its own copy of the plugins (100 to 300 MB): more than any machine's cores
# this project knows of, and never more than there are runs to do.
MAX_JOBS = 256


# The best of 100 timed runs is as steady as timing gets; a typo's 3,000 would run for hours.
MAX_REPEAT = 100


# Seeds of each scenario of an ad-hoc sweep unless --seeds says: the suites' number.
ADHOC_SEEDS = 5


def check_bounds(option: str, value: int | None, minimum: int, at_most: int = LARGEST_INTEGER) -> None:
    if value is not None and value < minimum:
        raise SpecError(f"{option} must be at least {minimum}, got {value}")
    if value is not None and value > at_most:
        raise SpecError(f"{option} must be at most {at_most:,}, got {value:,}")


@contextlib.contextmanager
def warnings_as_lines(show_all: bool = True) -> Iterator[None]:
    """Warnings raised inside (a broken third-party plugin, say) printed as
    one ``Warning:`` line each, not Python's two lines with a source line;
    every one where ``show_all``, else those Python's filters let through."""
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
    """Run plugins' code with its prints on stderr: stdout carries only
    results, which a plugin's stray debug print would otherwise get into
    (`dcbench run ... > table.txt`). Yields an echo to the real stdout, for
    results printed meanwhile."""
    results = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        yield lambda text: click.echo(text, file=results)


def load_registry() -> Registry:
    """The registry, with broken third-party plugins reported as one-line
    warnings (and what they print on loading on stderr)."""
    with warnings_as_lines(), plugin_prints_to_stderr():
        return get_registry()
