"""Progress of long commands on stderr: rich's bar on a terminal, elsewhere a line per unit of work and at most every
`LOG_INTERVAL` seconds between."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable

LOG_INTERVAL = 10.0  # seconds between two lines of a log while no unit of work ends
BAR_WIDTH, BAR_WIDTH_WITH_STATUS = 20, 12  # the bar's own width on a terminal, at most
MIN_DESCRIPTION = 16  # the fewest cells a description is cut to
TaskID = int


class Progress:
    """What every command reports its progress through (this base reports nothing: ``-q``)."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def add_task(self, description: str, total: float | None = None, completed: float = 0, noun: str = "",
                 **fields: Any) -> TaskID:
        """A task of ``total`` units (None: unknown) named ``description``; ``noun`` names its units in a log's lines
        ("runs", "steps"); ``fields`` are the status columns' values."""
        return 0

    def update(self, task: TaskID, *, completed: float | None = None, advance: float | None = None,
               total: float | None = None, description: str | None = None, unit_done: bool = False,
               **fields: Any) -> None:
        """The task's new count (or ``advance`` on it) and status; ``unit_done``: a unit of work ended now."""

    def advance(self, task: TaskID, amount: float = 1) -> None:
        """``amount`` more units done, the end of a unit of work."""
        self.update(task, advance=amount, unit_done=True)

    def note(self, text: str) -> None:
        """A line of its own: above the bar on a terminal, in the log elsewhere."""


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, ended with '…', cut after a word where that keeps two thirds of it."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    cut = set_cell_size(text, width - 1)
    if text[len(cut)] not in " ,":  # the cut falls inside a word: back to the end of the last one, if near
        at = max(cut.rfind(" "), cut.rfind(","))
        if at + 1 >= 2 * (width - 1) // 3:
            cut = cut[:at + 1]
    return cut.rstrip() + "…"


def fit_line(width: int, description: str, statuses: list[str], count_cells: int) -> tuple[str, int, list[str]]:
    """The description, bar width and statuses cut so the bar's line fits ``width`` cells."""
    from rich.cells import cell_len

    fixed = count_cells + 8 + 3  # count, elapsed time (h:mm:ss), a space before each of the three
    widest = BAR_WIDTH_WITH_STATUS if statuses else BAR_WIDTH
    bar = max(10, min(widest, width - fixed - MIN_DESCRIPTION - 8 * bool(statuses)))
    room = max(0, width - fixed - bar)
    wanted = cell_len(description)
    share = room if not statuses else max(MIN_DESCRIPTION, room * 3 // 5, min(wanted, room - 18))
    description = shorten(description, min(wanted, share, room))
    left = room - cell_len(description)
    fitted = []
    for status in statuses:
        cells = max(0, left - 1)
        fitted.append(shorten(status, cells) if cells >= 4 else "")
        left -= 1 + cell_len(fitted[-1])
    return description, bar, fitted


def count_cells(completed: float, total: float | None) -> int:
    total_text = "?" if total is None else str(int(total))
    return max(len(str(int(completed))), len(total_text)) + 1 + len(total_text)


class ProgressBar(Progress):
    """rich's bar on ``console`` (a terminal's), fitted to its width."""

    def __init__(self, console: Any, status: tuple[str, ...] = ()):
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress
        from rich.table import Column

        self.console = console
        self.status = status
        self.bar = BarColumn(bar_width=BAR_WIDTH)
        columns = [TextColumn("{task.description}", table_column=Column(no_wrap=True)), self.bar,
                   MofNCompleteColumn(), TimeElapsedColumn(),
                   *(TextColumn(f"{{task.fields[{name}]}}", table_column=Column(no_wrap=True)) for name in status)]
        self.rich = RichProgress(*columns, console=console, transient=True)
        self.texts: dict[TaskID, dict[str, str]] = {}

    def __enter__(self) -> ProgressBar:
        self.rich.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.rich.__exit__(*exc)

    def _fitted(self, task: TaskID, completed: float, total: float | None) -> dict[str, Any]:
        texts = self.texts[task]
        description, bar, statuses = fit_line(self.console.width, texts["description"],
                                              [texts.get(name, "") for name in self.status],
                                              count_cells(completed, total))
        self.bar.bar_width = bar
        return {"description": description, **dict(zip(self.status, statuses))}

    def add_task(self, description: str, total: float | None = None, completed: float = 0, noun: str = "",
                 **fields: Any) -> TaskID:
        task = self.rich.add_task(description, total=total, completed=completed,
                                  **{name: "" for name in self.status})
        self.texts[task] = {"description": description, **{name: str(fields.get(name, "")) for name in self.status}}
        self.rich.update(task, **self._fitted(task, completed, total))
        return task

    def update(self, task: TaskID, *, completed: float | None = None, advance: float | None = None,
               total: float | None = None, description: str | None = None, unit_done: bool = False,
               **fields: Any) -> None:
        texts = self.texts[task]
        if description is not None:
            texts["description"] = description
        texts.update({name: str(value) for name, value in fields.items() if name in self.status})
        self.rich.update(task, completed=completed, advance=advance, total=total)
        current = self.rich.tasks[[t.id for t in self.rich.tasks].index(task)]
        self.rich.update(task, **self._fitted(task, current.completed, current.total))

    def note(self, text: str) -> None:
        self.rich.console.print(text, markup=False, highlight=False, soft_wrap=True)


def elapsed_text(seconds: float) -> str:
    whole = max(0, int(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.1f}"


class _LogTask:
    def __init__(self, description: str, total: float | None, completed: float, noun: str,
                 fields: dict[str, Any], started: float):
        self.description, self.total, self.completed, self.noun = description, total, completed, noun
        self.fields, self.started = fields, started
        self.logged: tuple | None = None  # what the last line said (count, status), so the end says only news


class ProgressLog(Progress):
    """A plain line per unit of work and per ``interval`` seconds between them, written by ``write``."""

    def __init__(self, write: Callable[[str], None], status: tuple[str, ...] = (), interval: float = LOG_INTERVAL,
                 clock: Callable[[], float] = time.monotonic, heartbeat: bool = True):
        self.write = write
        self.status = status
        self.interval = interval
        self.clock = clock
        self.heartbeat = heartbeat
        self.tasks: dict[TaskID, _LogTask] = {}
        self.last_line = clock()
        self.lines = 0
        self.lock = threading.RLock()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> ProgressLog:
        self.last_line = self.clock()
        if self.heartbeat:
            self.thread = threading.Thread(target=self._beat, name="dcbench-progress", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
        if exc_type is None:  # the end, where a line before it said less: not after an error or an interrupt
            with self.lock:
                for task in self.tasks.values():
                    if self.lines and task.logged != self._state(task):
                        self._line(task)

    def _beat(self) -> None:
        while not self.stopped.wait(min(1.0, self.interval / 4)):
            self.tick()

    def tick(self) -> None:
        with self.lock:
            if self.tasks and self.clock() - self.last_line >= self.interval:
                self._line(list(self.tasks.values())[-1])

    def add_task(self, description: str, total: float | None = None, completed: float = 0, noun: str = "",
                 **fields: Any) -> TaskID:
        with self.lock:
            task = len(self.tasks)
            self.tasks[task] = _LogTask(description, total, completed, noun,
                                        {name: fields.get(name, "") for name in self.status}, self.clock())
            return task

    def update(self, task: TaskID, *, completed: float | None = None, advance: float | None = None,
               total: float | None = None, description: str | None = None, unit_done: bool = False,
               **fields: Any) -> None:
        with self.lock:
            state = self.tasks[task]
            if completed is not None:
                state.completed = completed
            if advance is not None:
                state.completed += advance
            if total is not None:
                state.total = total
            if description is not None:
                state.description = description
            state.fields.update({name: value for name, value in fields.items() if name in self.status})
            if unit_done or self.clock() - self.last_line >= self.interval:
                self._line(state)

    def note(self, text: str) -> None:
        with self.lock:
            self.write(text)
            self.last_line = self.clock()

    def _state(self, task: _LogTask) -> tuple:
        return (task.completed, task.total, *(str(task.fields.get(name, "")) for name in self.status))

    def _line(self, task: _LogTask) -> None:
        count = _number(task.completed) + ("" if task.total is None else f"/{_number(task.total)}")
        percent = f" ({100 * task.completed / task.total:.0f}%)" if task.total else ""
        noun = f" {task.noun}" if task.noun else ""
        statuses = "".join(f"  {value}" for name in self.status if (value := str(task.fields.get(name, ""))))
        self.write(f"{task.description}: {count}{noun}{percent}, {elapsed_text(self.clock() - task.started)} "
                   f"elapsed{statuses}")
        task.logged = self._state(task)
        self.last_line = self.clock()
        self.lines += 1


def _write_to_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")  # (sys.stderr as it is now, flushed: a log shows the line at once)
    sys.stderr.flush()


def progress_bar(quiet: bool, *status: str, console: Any = None, write: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, interval: float = LOG_INTERVAL,
                 heartbeat: bool = True) -> Progress:
    """The progress of a command: nothing when ``quiet``; rich's bar where stderr is a terminal; else a `ProgressLog`.

    Args:
        quiet: Whether to report nothing (``-q``).
        *status: The names of the tasks' status fields, shown after the count in this order.
        console: The rich console to draw on (None: one on stderr); a bar is drawn only where it is a terminal.
        write: Writes a log's line where it is not (None: to stderr, flushed).
        clock: The time in seconds, for a log's intervals and elapsed times.
        interval: The most seconds between two lines of a log while work goes on.
        heartbeat: Whether a log's thread writes that line also while nothing reports.
    Returns:
        A `Progress`, to use as a context manager: ``add_task``, ``update``, ``advance`` and ``note``."""
    if quiet:
        return Progress()
    if console is None:
        from rich.console import Console

        console = Console(stderr=True)
    if console.is_terminal:
        return ProgressBar(console, status)
    return ProgressLog(write or _write_to_stderr, status, interval=interval, clock=clock, heartbeat=heartbeat)
