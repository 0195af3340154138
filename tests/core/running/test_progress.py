"""Progress of long commands (dcbench.running.progress): rich's bar on a terminal,
fitted to its width; plain lines in a log, per unit of work and per
interval, driven here by a fake clock."""

import io
import threading

import pytest
from rich.cells import cell_len
from rich.console import Console

from dcbench.running.progress import Progress, ProgressBar, ProgressLog, elapsed_text, progress_bar, shorten

RUN = "gnn_ppo on tiered:channels=32,ratio=1x4,pods=2,racks=2,servers=16,cpu=16,mem=16"
STATUS = "acceptance 0.612  policy +0.0100  value 2.000  entropy 3.000  validation 0.700"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def logger(interval=10.0):
    clock, lines = Clock(), []
    return ProgressLog(lines.append, ("status",), interval=interval, clock=clock, heartbeat=False), clock, lines


def test_a_log_gets_a_line_per_unit_of_work_and_per_interval_and_no_more():
    log, clock, lines = logger()
    with log:
        task = log.add_task("sweep nara2022", total=120, noun="runs", status="")
        for second in range(1, 10):  # updates within the first interval: no line
            clock.now += 1
            log.update(task, completed=second / 10)
            log.tick()
        assert lines == []
        clock.now += 1  # 10 s since the start
        log.update(task, completed=1)
        assert lines == ["sweep nara2022: 1/120 runs (1%), 0:00:10 elapsed"]
        clock.now += 3
        log.update(task, completed=1.5)
        log.tick()
        assert len(lines) == 1  # 3 s after the last line: nothing
        log.advance(task)  # a run ended: its line at once
        assert lines[-1] == "sweep nara2022: 2.5/120 runs (2%), 0:00:13 elapsed"
        log.update(task, completed=3, unit_done=True, status="tetris seed 4")
        assert lines[-1] == "sweep nara2022: 3/120 runs (2%), 0:00:13 elapsed  tetris seed 4"
        clock.now += 9.5
        log.tick()
        assert len(lines) == 3  # 9.5 s since the last line
        clock.now += 0.5
        log.tick()  # nothing reported for 10 s: a line says it goes on
        assert lines[-1] == "sweep nara2022: 3/120 runs (2%), 0:00:23 elapsed  tetris seed 4" and len(lines) == 4
        log.tick()
        assert len(lines) == 4
        log.update(task, completed=120)
    assert lines[-1] == "sweep nara2022: 120/120 runs (100%), 0:00:23 elapsed  tetris seed 4"  # the end: news
    assert len(lines) == 5


def test_short_work_leaves_no_line_and_the_end_says_only_news():
    log, clock, lines = logger()
    with log:
        task = log.add_task("run", total=640, noun="requests")
        clock.now += 2
        log.update(task, completed=640)
    assert lines == []  # a few seconds of work: nothing to read in a log
    log, clock, lines = logger()
    with log:
        task = log.add_task("train", total=None, noun="steps")
        log.update(task, completed=5_400, unit_done=True)
    assert lines == ["train: 5,400 steps, 0:00:00 elapsed"]  # no total: no share; no repeat at the end


def test_an_interrupted_task_writes_no_line_after_it():
    log, clock, lines = logger()
    with pytest.raises(KeyboardInterrupt):
        with log:
            task = log.add_task("verify 4 runs", total=4, noun="runs")
            log.advance(task)
            log.update(task, completed=2)
            raise KeyboardInterrupt
    assert lines == ["verify 4 runs: 1/4 runs (25%), 0:00:00 elapsed"]  # the interrupt's own line comes last


def test_a_note_is_a_line_of_its_own_and_restarts_the_interval():
    log, clock, lines = logger()
    with log:
        log.add_task("verify", total=2)
        clock.now += 9
        log.note("checking run a")
        clock.now += 9
        log.tick()
        assert lines == ["checking run a"]
        clock.now += 1
        log.tick()
        assert lines[-1] == "verify: 0/2 (0%), 0:00:19 elapsed"


def test_the_heartbeat_writes_the_interval_line_while_nothing_reports():
    clock, lines, written = Clock(), [], threading.Event()

    def write(line):
        lines.append(line)
        written.set()

    with ProgressLog(write, interval=10.0, clock=clock) as log:  # its thread looks every 1 s (of real time)
        log.add_task("train gnn_ppo on tiered:8,1x16", total=1000, noun="steps")
        clock.now += 10
        assert written.wait(timeout=60), "no line from the heartbeat"
    assert lines[0] == "train gnn_ppo on tiered:8,1x16: 0/1,000 steps (0%), 0:00:10 elapsed"


def test_quiet_writes_nothing_and_a_terminal_gets_the_bar_elsewhere_the_log():
    assert type(progress_bar(True, console=Console(file=io.StringIO(), force_terminal=True))) is Progress
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80)
    assert isinstance(progress_bar(False, "status", console=terminal), ProgressBar)
    lines = []
    log = progress_bar(False, console=Console(file=io.StringIO(), force_terminal=False), write=lines.append,
                       heartbeat=False)
    assert isinstance(log, ProgressLog)
    quiet = progress_bar(True, write=lines.append)
    with quiet:
        task = quiet.add_task("x", total=1)
        quiet.advance(task)
        quiet.note("said")
    assert lines == []


def rendered(progress, width):
    """The bar's lines as a terminal of ``width`` columns shows them."""
    screen = Console(file=io.StringIO(), width=width, record=True)
    screen.print(progress.rich.make_tasks_table(progress.rich.tasks))
    return screen.export_text().splitlines()


@pytest.mark.parametrize("width", [80, 60, 120])
@pytest.mark.parametrize("status", [(), ("status",)])
def test_the_bar_and_its_description_fit_the_terminal(width, status):
    progress = progress_bar(False, *status, console=Console(file=io.StringIO(), force_terminal=True, width=width))
    task = progress.add_task(RUN, total=640, **dict.fromkeys(status, STATUS))
    progress.update(task, completed=100, **dict.fromkeys(status, STATUS + " and more"))
    (line,) = rendered(progress, width)  # one line: the description no longer wraps the bar onto others
    assert cell_len(line) <= width
    assert "━" in line and "100/640" in line and line.startswith("gnn_ppo on")
    if width >= 80:  # the plugin, the topology's name and its first arguments, and the status's start
        assert line.startswith("gnn_ppo on tiered:channels=")
        assert not status or "acceptance 0.612" in line


@pytest.mark.parametrize("status", [(), ("status",)])
def test_a_short_description_is_shown_whole(status):
    progress = progress_bar(False, *status, console=Console(file=io.StringIO(), force_terminal=True, width=80))
    progress.add_task("train gnn_ppo on tiered:8,1x16", total=1000, **dict.fromkeys(status, STATUS))
    (line,) = rendered(progress, 80)
    assert line.startswith("train gnn_ppo on tiered:8,1x16 ") and cell_len(line) <= 80
    assert not status or "acceptance 0.612…" in line


def test_shorten_cuts_at_a_separator_within_the_width():
    assert shorten("tetris", 10) == "tetris"
    assert shorten("tiered:channels=32,ratio=1x4,pods=2", 24) == "tiered:channels=32,…"
    assert shorten("abcdefghijklmnop", 8) == "abcdefg…"
    assert all(cell_len(shorten(RUN, width)) <= width for width in range(0, 90))


def test_elapsed_time_reads_as_the_bars():
    assert elapsed_text(0) == "0:00:00" and elapsed_text(3_725.9) == "1:02:05"
