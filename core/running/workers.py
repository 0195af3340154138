"""Runs in worker processes, each allocator's in workers of its own (its code can reach anything in its process); the
parent, which alone writes, takes a run only from a worker whose network still has the digest it computed."""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from dcbench.errors import DcbenchError, ResultsError
from dcbench.model.network import Network
from dcbench.running.runner import ResolvedRun

MATH_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class PlannedRun:
    """One run of a plan: its specs as given, seed, the id it must come out with and its network's digest ("": not
    checked); a worker without its ``plan`` resolves the specs."""

    scenario: str
    allocator: str
    topology: str
    workload: str | None
    requests: int | None
    seed: int
    run_id: str
    metrics: tuple[str, ...] = ()
    network_digest: str = ""
    plan: ResolvedRun | None = field(default=None, compare=False, repr=False)

    @property
    def specs(self) -> tuple[Any, ...]:
        return self.allocator, self.topology, self.workload, self.requests, self.metrics

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "plan": None}  # (plugin objects need not pickle)


@dataclass
class RunOutput:
    """What a worker sends back of a run (``tables`` None where not asked for), with its network's digest after."""

    run_id: str
    summary: dict[str, Any]
    tables: dict[str, dict[str, Any]] | None
    provenance: dict[str, Any]
    network_digest: str


def network_digest(network: Network) -> str:
    """A digest of everything of ``network`` the engine's checks read."""
    digest = hashlib.sha256()
    for value in (network.n_servers, network.n_nodes, network.n_links, network.n_racks, network.resources,
                  network.directed, network.circuits, network.link_unit, network.k_paths):
        digest.update(repr(value).encode() + b"\0")
    for array in (network.server_capacity, network.racks, network.pods, network.link_ends, network.link_capacity,
                  network.link_tier, network.rack_node, network.server_link, network.server_attachment,
                  network._link_tail, network._link_head):
        if array is not None:
            array = np.ascontiguousarray(array)
            digest.update(f"{array.dtype}{array.shape}".encode() + array.tobytes())
    return digest.hexdigest()[:16]


def run_apart(runs: Sequence[PlannedRun], workers: int, on_output: Callable[[PlannedRun, RunOutput], None],
              tables: bool = True, fresh: bool = False, environ: Mapping[str, str] | None = None,
              on_error: Callable[[PlannedRun, DcbenchError], None] | None = None) -> None:
    """Make ``runs`` in at most ``workers`` workers, each allocator's in its own, handing each output to ``on_output``
    once its network is checked. ``fresh`` workers load the plugins anew, with ``environ``; ``on_error`` takes a run's
    `DcbenchError` while the others go on (None: it ends them all)."""
    context = worker_context(fresh)
    for allocator_runs in by_allocator(runs):
        # The workers fill the cores: a BLAS that also starts a thread per core in each of them spins against the
        # others. Each pool starts its workers at its first submissions, within these settings.
        with environment({name: os.environ.get(name, "1") for name in MATH_THREAD_VARIABLES}):
            pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=min(workers, len(allocator_runs)), mp_context=context, initializer=start_worker,
                initargs=(os.getpid(), {**os.environ, **(environ or {})}, plans_of(allocator_runs, context)))
            try:
                # Longest first, by episode length: the short runs left for the end let the workers finish together.
                longest_first = sorted(allocator_runs, key=lambda run: -((run.plan or run).requests or 0))
                futures = {pool.submit(run_in_worker, run, tables): run for run in longest_first}
                for future in concurrent.futures.as_completed(futures):
                    run = futures[future]
                    try:
                        output = future.result()
                    except DcbenchError as exc:
                        if on_error is None:
                            raise
                        on_error(run, exc)
                        continue
                    check_network(run, output)
                    on_output(run, output)
            except concurrent.futures.process.BrokenProcessPool:
                stop(pool)
                raise ResultsError("a worker process died (killed for want of memory?); the runs it finished are "
                                   "kept: run the same sweep again to resume it, with fewer workers (-j)") from None
            except BaseException:  # Ctrl-C too: no waiting for runs (test_ctrl_c_while_the_pool_starts_its_workers_...)
                stop(pool)
                raise
            pool.shutdown()


# What a fresh worker's server imports before it forks the workers: dcbench, never a third party's plugin.
FRESH_PRELOAD = ["numpy", "pyarrow.parquet", "networkx", "dcbench.running.runner", "dcbench.running.workers"]


def worker_context(fresh: bool) -> Any:
    """Forked from this process (Linux), or, ``fresh``, from a server that imported only `FRESH_PRELOAD`; spawned
    where there is no fork."""
    methods = multiprocessing.get_all_start_methods()
    if not fresh and sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(FRESH_PRELOAD)
    return context


def by_allocator(runs: Sequence[PlannedRun]) -> list[list[PlannedRun]]:
    groups: dict[str, list[PlannedRun]] = {}
    for run in runs:
        groups.setdefault(run.allocator, []).append(run)
    return list(groups.values())


def check_network(run: PlannedRun, output: RunOutput) -> None:
    if run.network_digest and output.network_digest != run.network_digest:
        raise ResultsError(f"allocator {run.allocator} changed the network its worker was handed (run "
                           f"{run.run_id}, {run.scenario} seed {run.seed}); its runs from there on are refused")


def plans_of(runs: Sequence[PlannedRun], context: Any) -> dict[tuple[Any, ...], ResolvedRun]:
    """The runs' plans, for workers forked from this process (plans need not pickle)."""
    if context.get_start_method() != "fork":
        return {}
    return {run.specs: run.plan for run in runs if run.plan is not None}


_HANDED: dict[tuple[Any, ...], ResolvedRun] = {}  # the plans a forked worker was handed, by their runs' specs
_RESOLVED: tuple[Any, dict[tuple[Any, ...], ResolvedRun]] = (None, {})  # this process's runner, and its plans


def plan_here(run: PlannedRun) -> ResolvedRun:
    """The plan ``run`` brought or this process was handed, else resolved here once per registry."""
    global _RESOLVED
    from dcbench.registry import get_registry
    from dcbench.running.runner import Runner

    plan = run.plan or _HANDED.get(run.specs)
    if plan is not None:
        return plan
    runner, plans = _RESOLVED
    if runner is None or runner.registry is not get_registry():
        runner, plans = _RESOLVED = Runner(), {}
    if run.specs not in plans:
        plans[run.specs] = runner.resolve(*run.specs)
    return plans[run.specs]


def run_in_worker(run: PlannedRun, tables: bool = True) -> RunOutput:
    from dcbench.running.runner import run_plan, tables_of

    result = run_plan(plan_here(run), run.seed)
    return RunOutput(result.run_id, result.summary, tables_of(result) if tables else None, result.provenance,
                     network_digest(result.network))


def quiet_plugin_warnings() -> None:
    from dcbench.registry import PluginLoadWarning

    warnings.filterwarnings("ignore", category=PluginLoadWarning)


def start_worker(parent: int | None = None, environ: Mapping[str, str] | None = None,
                 plans: Mapping[tuple[Any, ...], ResolvedRun] | None = None) -> None:
    """Take ``environ`` before any plugin loads, die with ``parent``, keep the ``plans``, warn no second time, print on
    stderr, and leave Ctrl-C to the command."""
    _HANDED.update(plans or {})
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    if parent is not None:
        die_with(parent)
    quiet_plugin_warnings()
    sys.stdout = sys.stderr = sys.__stderr__  # (the process's own: a forked worker's copy of a capture is lost)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (forked, it had the command's handler, which raises and prints)
    if "torch" in sys.modules:  # forked after the parent loaded a checkpoint: its threads read no variable now
        sys.modules["torch"].set_num_threads(1)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_CHECK_SECONDS = 0.5


def die_with(parent: int) -> None:
    """SIGKILL this process once ``parent`` is gone (``prctl`` on Linux, else a thread polling it)."""
    if os.getppid() == parent and sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # gone before the signal was asked for
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass  # no prctl to be had: the thread below

    def watch() -> None:
        while _running(parent):
            time.sleep(PARENT_CHECK_SECONDS)
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))

    threading.Thread(target=watch, name="dcbench-parent-watch", daemon=True).start()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # (Permission: someone else's process now has the number)
        return False
    return True


STOP_SECONDS = 5.0  # what a worker is given to end on SIGTERM before SIGKILL


def stop(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now, with their runs under way."""
    workers = {id(worker): worker for worker in (pool._processes or {}).values()}  # (no public way before 3.14)
    workers.update((id(child), child) for child in multiprocessing.active_children())
    results = pool._result_queue  # (shutdown drops it)
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers.values():
        worker.terminate()
    for worker in workers.values():
        worker.join(timeout=STOP_SECONDS)
        if worker.is_alive():
            worker.kill()
            worker.join()
    if results is not None:
        # A worker ended while sending its result leaves the pool's thread reading the rest, and the interpreter
        # waiting for that thread at exit: with the last writing end closed, the read ends and the thread with it.
        results._writer.close()


@contextlib.contextmanager
def environment(variables: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
