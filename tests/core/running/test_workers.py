"""Each allocator's runs in worker processes of their own: whatever an
allocator does inside its process (walk the stack to the engine, rebind the
network the runner caches, patch dcbench's modules) reaches no other
allocator's run of the same sweep, and a worker whose network changed is
refused by the parent."""

from __future__ import annotations

import os
import sys
import time

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench.commands import cli

SWEEP = ["sweep", "-t", "tiered:8,1x16", "-n", "64", "--seeds", "2", "-q", "-j", "2"]

CHEATS = '''
import sys

import numpy as np

import dcbench.engine.simulation
import dcbench.model.allocation
from dcbench import Allocation, hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator


class PatchesTheEngine(TetrisAllocator):
    """Makes the engine's check pass everything and its books agree, then
    serves every request from server 0 with no routes."""

    def allocate(self, request, state):
        dcbench.engine.simulation.check_snapshot = lambda allocation, request, state: (
            None, dcbench.model.allocation.LinkUsage(np.zeros(0, dtype=np.int64), np.zeros(0)))
        dcbench.engine.simulation.Books.mismatch = lambda books, state: None
        return Allocation(np.array([0]), np.asarray(request.demand, dtype=float)[None, :])


class RebindsTheCachedNetwork(TetrisAllocator):
    """Reaches the engine's network, which the runner keeps for the next
    runs, and gives every server ten times its capacity."""

    def allocate(self, request, state):
        network = sys._getframe(1).f_locals["simulation"].network
        if network.server_capacity.max() < 1000:
            object.__setattr__(network, "server_capacity", network.server_capacity * 10)
        return super().allocate(request, state)


@hookimpl
def register_allocators(register):
    register("patcher", PatchesTheEngine, description="patches the engine", demands=("pool",))
    register("rebinder", RebindsTheCachedNetwork, description="rebinds the cached network", demands=("pool",))
'''


@pytest.fixture
def cheats(tmp_path, monkeypatch, fresh_registry):
    from tests.core.running.test_sweep import with_plugin

    with_plugin(tmp_path, monkeypatch, "cheats", CHEATS)


def rows_by_allocator(out):
    """Each allocator's summary rows, every value as its repr (NaN equals NaN)."""
    rows = [{column: repr(value) for column, value in row.items()}
            for row in pq.read_table(out / "summary.parquet").to_pylist()]
    return {eval(allocator): [row for row in rows if row["allocator"] == allocator]
            for allocator in dict.fromkeys(row["allocator"] for row in rows)}


def test_an_allocator_that_patches_the_engine_changes_only_its_own_runs(cheats, tmp_path):
    clean, mixed = tmp_path / "clean", tmp_path / "mixed"
    assert CliRunner().invoke(cli, [*SWEEP, "-a", "tetris,random", "--out", str(clean)]).exit_code == 0
    result = CliRunner().invoke(cli, [*SWEEP, "-a", "patcher,tetris,random", "--out", str(mixed)])
    assert result.exit_code == 0, result.output
    honest, beside = rows_by_allocator(clean), rows_by_allocator(mixed)
    for name in honest:
        assert beside[name] == honest[name]  # every column of every run, as a clean sweep's
    # In its own worker the patch took: every request accepted, none of them with a route.
    assert all(row["acceptance_ratio"] == "1.0" for row in beside["patcher"])


def test_a_worker_whose_network_changed_is_refused_and_the_others_runs_stay(cheats, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [*SWEEP, "-a", "tetris,rebinder", "--out", str(out)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(
        "Error: allocator rebinder changed the network its worker was handed (run ")
    assert result.output.splitlines()[-1].endswith("its runs from there on are refused")
    written = {pq.read_table(folder / "summary.parquet").column("allocator")[0].as_py()
               for folder in out.iterdir() if folder.is_dir()}
    assert written == {"tetris:penalty=0.9,scale=10,fit_last=no"}  # the refused worker's run is not written


def noting_the_worker(run, tables=True):
    """`run_in_worker`, its output naming the process that made it."""
    from dcbench.running.runner import run_plan
    from dcbench.running.workers import RunOutput, plan_here

    result = run_plan(plan_here(run), run.seed)
    return RunOutput(result.run_id, {**result.summary, "worker_pid": os.getpid()}, None, {}, "")


def test_each_worker_runs_one_allocator_only(tmp_path, monkeypatch):
    import dcbench.running.workers as workers

    served: dict[int, set[str]] = {}

    def noted(run, output):
        served.setdefault(output.summary.pop("worker_pid"), set()).add(run.allocator)

    monkeypatch.setattr(workers, "run_in_worker", noting_the_worker)  # (the forked workers call it)
    runs = [workers.PlannedRun("small", allocator, "tiered:8,1x4", None, 8, seed, "")
            for seed in range(3) for allocator in ("random", "tetris", "nalb")]
    workers.run_apart(runs, 2, noted, tables=False)
    assert all(len(allocators) == 1 for allocators in served.values())
    assert set().union(*served.values()) == {"nalb", "random", "tetris"}
    assert os.getpid() not in served


def test_a_run_error_in_a_worker_reaches_the_parent_once_and_stops_the_rest(tmp_path, monkeypatch):
    import dcbench.running.workers as workers
    from dcbench.errors import SpecError

    runs = [workers.PlannedRun("small", "random", "tiered:8,1x4", None, 8, seed, "") for seed in range(2)]
    runs.append(workers.PlannedRun("small", "no_such_allocator", "tiered:8,1x4", None, 8, 0, ""))
    errors = []
    workers.run_apart(runs, 2, lambda run, output: None, tables=False, on_error=lambda run, exc: errors.append(
        (run.allocator, type(exc))))
    assert [allocator for allocator, _ in errors] == ["no_such_allocator"]
    with pytest.raises(SpecError, match="no_such_allocator"):
        workers.run_apart(runs, 2, lambda run, output: None, tables=False)


def test_a_fresh_worker_loads_only_the_plugins_it_is_given(tmp_path, monkeypatch):
    """`fresh` workers do not inherit this process's plugins: they load the
    installed ones anew, and the environment given turns the others off."""
    import dcbench.running.workers as workers

    plugins = tmp_path / "plugins"
    (plugins / "tp_loud-1.0.dist-info").mkdir(parents=True)
    (plugins / "tp_loud-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: tp-loud\nVersion: 1.0\n")
    (plugins / "tp_loud-1.0.dist-info" / "entry_points.txt").write_text("[dcbench]\nloud = tp_loud\n")
    (plugins / "tp_loud.py").write_text(
        "import os\nfrom dcbench import hookimpl\n"
        "open(os.environ['LOUD_MARK'], 'a').write('imported\\n')\n\n"
        "@hookimpl\ndef register_allocators(register):\n"
        "    from dcbench.plugins.allocators.random_server import RandomAllocator\n"
        "    register('loud', RandomAllocator, description='random, loudly')\n")
    mark = tmp_path / "mark"
    run = workers.PlannedRun("small", "random", "tiered:8,1x4", None, 8, 0, "")
    workers.run_apart([run], 1, lambda run, output: None, tables=False, fresh=True)  # (the fork server is up)
    monkeypatch.syspath_prepend(str(plugins))  # (a fresh worker starts from its parent's sys.path)
    monkeypatch.setenv("LOUD_MARK", str(mark))  # ... and its environment as it is now
    workers.run_apart([run], 1, lambda run, output: None, tables=False, fresh=True)
    assert mark.read_text() == "imported\n"  # a fresh worker loads the installed plugins itself
    mark.unlink()
    workers.run_apart([run], 1, lambda run, output: None, tables=False, fresh=True,
                      environ={"DCBENCH_DISABLE_PLUGINS": "loud"})
    assert not mark.exists() and "tp_loud" not in sys.modules


STUCK = '''
import os
import time

import dcbench.running.workers as workers


def stuck(run, tables=True):
    open(os.path.join(os.environ["STUCK_MARKS"], str(os.getpid())), "w").close()
    time.sleep(600)


if __name__ == "__main__":
    workers.run_in_worker = stuck
    run = workers.PlannedRun("small", "random", "tiered:8,1x4", None, 8, 0, "")
    workers.run_apart([run, run], 2, lambda run, output: None, tables=False, fresh=True)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_fresh_workers_and_their_server_die_with_a_killed_command(tmp_path):
    """A fresh worker's parent is the fork server, not the command: it
    watches the command itself, and the server ends once its workers have."""
    import signal
    import subprocess
    import time

    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "stuck_command.py").write_text(STUCK)
    env = {**os.environ, "STUCK_MARKS": str(marks),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    command = subprocess.Popen([sys.executable, str(tmp_path / "stuck_command.py")], env=env,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while len(list(marks.iterdir())) < 2 and time.time() < deadline:
        time.sleep(0.1)
    workers = [int(path.name) for path in marks.iterdir()]
    servers = {int(os.popen(f"ps -o ppid= -p {pid}").read()) for pid in workers}
    command.send_signal(signal.SIGKILL)
    command.wait()
    assert len(workers) == 2 and command.pid not in servers  # (forked by a server, not by the command)
    deadline = time.time() + 30
    while any(os.path.exists(f"/proc/{pid}") for pid in [*workers, *servers]) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in [*workers, *servers])


def _send_half_a_result(_):
    # in a forked worker: the start of a result message on the pool's result pipe, then death
    import struct

    os.write(_POOL[0]._result_queue._writer.fileno(), struct.pack("!i", 100_000) + b"x" * 10)
    os._exit(1)


_POOL: list = []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks the pool's workers")
def test_stopping_a_pool_whose_worker_died_mid_result_ends_the_pools_thread():
    """Else the interpreter waits at exit for the thread reading the half-sent result (a hung CI run)."""
    import concurrent.futures
    import multiprocessing

    from dcbench.running.workers import stop

    pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    _POOL[:] = [pool]
    pool.submit(int).result()  # the worker and the pool's thread are up
    thread = pool._executor_manager_thread
    pool.submit(_send_half_a_result, None)
    time.sleep(1.0)  # the thread now waits for the rest of the message
    stop(pool)
    thread.join(timeout=10)
    assert not thread.is_alive()
