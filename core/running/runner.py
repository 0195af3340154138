"""Running one (topology, workload, allocator, seed): the harness in one call."""

from __future__ import annotations

import contextlib
import hashlib
import json
import platform
import subprocess
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from dcbench.engine.simulation import SKIPPED, RunTables, simulate
from dcbench.errors import AllocatorError, IncompatibleError, NotInstalledError, SpecError, short_repr
from dcbench.model.network import Network, Topology
from dcbench.model.requests import RequestSequence, SequenceProblem, checked_sequence
from dcbench.registry import PluginEntry, Registry, blamed_on, get_registry
from dcbench.registry.columns import COLUMN_NAME
from dcbench.registry.manager import column_clash
from dcbench.spec import MAX_REQUESTS, Spec, check_bounds
from dcbench.storage.tables import write_run

# Summary columns the core adds after the metrics' (``scenario`` in a sweep's combined summary).
LATER_COLUMNS = ("dcbench_version", "scenario")


@dataclass
class RunResult:
    """One run's results, as `Runner.run` returns them.

    Attributes:
        run_id: 16 hex digits hashing its resolved specs, requests, seed, dcbench's version and fingerprint.
        summary: The summary row: the run's identity and counts, then each metric's columns.
        tables: The per-request and timeline tables.
        provenance: What made the run (versions, plugins, git commit, ...), written into every table's metadata.
        notes: What makes its figures n/a or thinner than asked for, and the allocator's own notes, one line each.
        metric_columns: The summary columns each metric wrote, by metric name.
        network: The network the engine ran on (None: not recorded)."""

    run_id: str
    summary: dict[str, Any]
    tables: RunTables
    provenance: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    metric_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    network: Network | None = None

    def write(self, out_dir: Path) -> Path:
        """Write the run's three tables into ``out_dir/<run_id>/``, atomically.

        Args:
            out_dir: The results folder; made where it is missing.
        Returns:
            The run's folder.
        Raises:
            ResultsError: The folder cannot be written, or something that is no run folder is in the way."""
        return write_run(out_dir, self.run_id, tables_of(self), self.provenance)


def tables_of(result: RunResult) -> dict[str, Mapping[str, Any]]:
    """A run's three tables, as `write_run` takes them."""
    return {"requests": result.tables.requests, "timeline": result.tables.timeline,
            "summary": {k: [v] for k, v in result.summary.items()}}


def run_hash(topology: str, workload: str, allocator: str, requests: int, seed: int, version: str,
             fingerprint: str = "") -> str:
    """A run's id: its resolved specs, seed, dcbench version and fingerprint, hashed."""
    if fingerprint:
        allocator = f"{allocator}@{fingerprint}"
    key = json.dumps({"topology": topology, "workload": workload, "allocator": allocator,
                      "requests": requests, "seed": seed, "dcbench": version}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def run_notes(requests: Mapping[str, np.ndarray]) -> list[str]:
    """What makes a run's figures n/a or thinner than asked for, one line each."""
    notes = []
    total = len(requests["outcome"])
    skipped = int((requests["outcome"] == SKIPPED).sum())
    if skipped:
        notes.append(f"{skipped} of {total} requests were never offered: each needs more than the topology's "
                     "whole capacity; give a larger topology or a workload with smaller demands")
    if total and not requests["measured"].any():
        notes.append(f"none of the {total} requests is measured, all are in the workload's warm-up, so the "
                     "metrics of the measured window are n/a; ask for more requests or a shorter warm-up")
    invalid = np.flatnonzero(requests["reason"] == "invalid_allocation")
    if len(invalid):
        notes.append(f"{len(invalid)} of the allocator's answers were impossible allocations, counted as "
                     f"rejections (the first, request {invalid[0]}: {requests['detail'][invalid[0]]}); the "
                     "requests table's detail column says what was wrong with each")
    return notes


@dataclass(frozen=True)
class ResolvedRun:
    """A combination `Runner.resolve` checked: all a run of it needs but its seed (`run_plan`).

    Attributes:
        topology: The resolved topology spec.
        workload: The resolved workload spec.
        allocator: The resolved allocator spec ("" for a scenario alone).
        requests: Requests per run.
        fingerprint: What besides its spec decides the allocator, and the third-party plugins ("" if nothing).
        network: The compiled topology.
        workload_model: What the workload plugin built.
        workload_entry: The workload's registry entry.
        allocator_entry: The allocator's registry entry, or None.
        metrics: The third-party metrics asked for.
        allocator_spec: The parsed allocator spec each run builds a fresh allocator from, or None.
        computed: Every metric a run computes: dcbench's own, then those asked for.
        plugins: What a run's provenance records of the loaded plugins."""

    topology: str
    workload: str
    allocator: str
    requests: int
    fingerprint: str
    network: Network
    workload_model: Any
    workload_entry: PluginEntry
    allocator_entry: PluginEntry | None
    metrics: tuple[PluginEntry, ...] = ()
    allocator_spec: Spec | None = None
    computed: tuple[PluginEntry, ...] = ()
    plugins: tuple[tuple[str, str], ...] = ()

    def run_id(self, seed: int) -> str:
        """The id of this plan's run with ``seed``.

        Args:
            seed: The run's seed.
        Returns:
            16 hex digits."""
        from dcbench._version import __version__

        return run_hash(self.topology, self.workload, self.allocator, self.requests, seed, __version__,
                        self.fingerprint)

    def new_allocator(self) -> Any:
        """A fresh allocator for one run (allocators keep state from run to run).

        Returns:
            What the allocator plugin built."""
        return self.allocator_entry.build(self.allocator_spec).obj


METRICS_PART = "metrics "  # how a run's fingerprint names the third-party metrics it computed
WORKLOAD_PART = "workload "  # and its workload's


def run_fingerprint(fingerprint: str, entries: tuple[PluginEntry, ...], metrics: tuple[PluginEntry, ...],
                    workload: str = "") -> str:
    """The allocator's ``fingerprint``, the ``workload``'s, every third-party plugin's identity (a new release makes
    new runs), then the third-party ``metrics`` computed."""
    parts = [fingerprint] if fingerprint else []
    if workload:
        parts.append(WORKLOAD_PART + workload)
    parts += [f"plugin {name}" for name in sorted({entry.identity for entry in entries if not entry.builtin})]
    if metrics:
        parts.append(METRICS_PART + ",".join(m.name for m in metrics))
    return "; ".join(parts)


def metrics_of(fingerprint: str) -> tuple[str, ...]:
    """The third-party metrics a run's fingerprint (`run_fingerprint`) says it computed."""
    for part in fingerprint.split("; "):
        if part.startswith(METRICS_PART):
            return tuple(part.removeprefix(METRICS_PART).split(","))
    return ()


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the dcbench source tree, when it is a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def compile_topology(entry: PluginEntry, topology: Any) -> Network:
    """The network of what a topology plugin built."""
    if not isinstance(topology, Topology):
        raise entry.error(f"returned {type(topology).__name__} when built, not a dcbench.Topology")
    failure = "built a topology that does not compile"
    with blamed_on(entry, failure):
        try:
            return Network.compile(topology)
        except SpecError as exc:  # what the topology's own parameters should have ruled out
            raise entry.error(f"{failure}: {exc}") from exc


def metric_columns(entry: PluginEntry, columns: Any, written_by: dict[str, str]) -> dict[str, float]:
    """A metric's summary columns, checked: new names only (``written_by``: column -> writer), numbers."""
    if not isinstance(columns, Mapping):
        raise entry.error(f"returned {type(columns).__name__}, not a dict of summary columns")
    values: dict[str, float] = {}
    for column, value in columns.items():
        if not isinstance(column, str) or not COLUMN_NAME.fullmatch(column):
            raise entry.error(f"returned a column named {column!r}; a column name is letters, digits and '_', "
                              "starting with a letter")
        if column in written_by:
            raise entry.error(f"returned column {column!r}, which {written_by[column]} writes; "
                              "a metric may only add columns of its own")
        number = summary_number(value)
        if number is None:
            raise entry.error(f"returned {column}={short_repr(value)}, not a number")
        values[column] = number
        written_by[column] = f"metric {entry.name!r}"
    return values


def summary_number(value: Any) -> float | None:
    """``value`` as a float; None for text (which ``float`` would parse) and non-numbers."""
    if isinstance(value, (str, bytes)):
        return None
    try:
        return float(value)
    except Exception:  # TypeError, ValueError, OverflowError (10**400), or a __float__ that fails
        return None


def allocator_notes(entry: PluginEntry, allocator: Any) -> list[str]:
    """The allocator's ``notes`` (what a run prints and records), each one line."""
    notes = getattr(allocator, "notes", [])
    if not isinstance(notes, (list, tuple)) or not all(isinstance(note, str) for note in notes):
        raise entry.error(f"has notes={short_repr(notes)}, not a list of strings")
    return [" ".join(note.split()) for note in notes]


def checked_against(entry: PluginEntry, allocator: Any, network: Network) -> None:
    """Call the allocator's ``check(network)``; its `SpecError` names the allocator's spec."""
    check = getattr(allocator.obj, "check", None)
    if check is None:
        return
    with blamed_on(entry, "failed in check(network)"):
        try:
            check(network.private_copy())
        except SpecError as exc:
            raise SpecError(f"{allocator.spec}: {exc}") from None


@contextlib.contextmanager
def naming_the_allocator(entry: PluginEntry) -> Iterator[None]:
    """The engine's `AllocatorError` names a third-party allocator's plugin."""
    try:
        yield
    except AllocatorError as exc:
        if entry.builtin:
            raise
        raise entry.error(exc.did if exc.did is not None else f"failed: {exc}") from exc


def draw_requests(plan: ResolvedRun, requests: int, rng: np.random.Generator) -> RequestSequence:
    """A plan's request sequence drawn from ``rng``; what the workload got wrong is a one-line error."""
    with blamed_on(plan.workload_entry, "failed in generate()"):
        try:
            sequence = plan.workload_model.generate(plan.network.private_copy(), requests, rng)
        except NotInstalledError:  # (a trace file not downloaded: its message names the file)
            raise
        except ValueError as exc:
            raise SpecError(f"{plan.workload}: {exc}") from exc
    if not isinstance(sequence, RequestSequence):
        raise plan.workload_entry.error(f"returned {type(sequence).__name__} from generate(), "
                                           "not a dcbench.RequestSequence")
    try:
        return checked_sequence(sequence, plan.network, requests, getattr(plan.workload_model, "kind", "pool"))
    except SequenceProblem as exc:
        raise plan.workload_entry.error(f"returned an unusable request sequence from generate(): {exc}") from None


def plugin_fingerprint(entry: PluginEntry | None, built: Any, network: Network, refused: Callable[[str], Exception]
                       ) -> str:
    """A plugin's ``fingerprint(network)`` (a checkpoint's or a trace file's digest), "" where it has none; what it
    raises for a missing or changed file becomes ``refused``'s error."""
    fingerprint = getattr(built, "fingerprint", None)
    if entry is None or fingerprint is None:
        return ""
    with blamed_on(entry, "failed in fingerprint(network)"):
        try:
            value = fingerprint(network.private_copy())
        except (OSError, ValueError) as exc:
            raise refused(str(exc)) from exc
    if not isinstance(value, str):
        raise entry.error(f"returned {type(value).__name__} from fingerprint(network), not a str")
    return value


def warmup_requests(plan: ResolvedRun) -> int:
    """The requests opening a run that the metrics leave out (a warm-up), from seed 0's draw, doubled until the
    warm-up ends within it."""
    requests = plan.requests
    while True:
        measured = draw_requests(plan, requests, np.random.default_rng(0)).measured
        if measured is None or measured.all():
            return 0
        if measured.any() or requests >= MAX_REQUESTS:
            return int(np.argmax(measured)) if measured.any() else requests
        requests = min(2 * requests, MAX_REQUESTS)


def measuring(plan: ResolvedRun, measured: int | None, label: str, give: str = "-n N") -> tuple[ResolvedRun, int]:
    """The plan with ``measured`` requests after the workload's warm-up: what ``-n`` and ``requests=`` mean.

    Args:
        plan: A resolved plan.
        measured: Requests to measure after the warm-up (None: the plan's own, warm-up included).
        label: What the error calls the plan, e.g. "scenario 'x'".
        give: How the error says to ask for N measured requests, e.g. "-n N".
    Returns:
        ``(plan, warmup)``: the plan with its requests set, and the warm-up's requests.
    Raises:
        SpecError: The plan would measure nothing, or too many requests."""
    warmup = warmup_requests(plan)
    if measured is not None:
        check_bounds("--requests", warmup + measured, 1, MAX_REQUESTS)
        plan = replace(plan, requests=warmup + measured)
    if warmup >= plan.requests:
        raise SpecError(f"{label} measures none of its {plan.requests:,} requests, all in the workload's warm-up "
                        f"of {warmup:,}; give {give} for N measured requests after it")
    return plan, warmup


@dataclass
class Runner:
    """Resolves specs into plans (`resolve`), caching compiled topologies; `run_plan` runs a plan with a seed.

    Attributes:
        registry: The plugins it builds from (the process's, `get_registry`, by default)."""

    registry: Registry = field(default_factory=get_registry)
    _networks: dict[str, tuple[str, Network]] = field(default_factory=dict)  # by spec as given and as resolved
    _fixed_fabrics: dict[str, Network] = field(default_factory=dict)  # by resolved topology spec

    def network(self, topology: str) -> tuple[str, Network]:
        """The resolved spec and compiled network of a topology spec (``tiered:32,1x4``).

        Args:
            topology: The topology spec.
        Returns:
            ``(resolved spec, network)``, the same network for specs that resolve alike.
        Raises:
            SpecError: A malformed spec, or a parameter the plugin refuses.
            UnknownPluginError: No such topology is registered.
            PluginError: A third-party plugin failed to build it, or built a topology that does not compile."""
        if topology not in self._networks:
            spec = Spec.parse(topology)
            entry = self.registry.get("topology", spec.name)
            built = entry.build(spec)
            if built.spec not in self._networks:
                self._networks[built.spec] = (built.spec, compile_topology(entry, built.obj))
            self._networks[topology] = self._networks[built.spec]
        return self._networks[topology]

    def fixed_fabric(self, topology: str) -> Network:
        """The network a run that never reconfigures runs on (`Network.fixed_fabric` of the topology's), made once.

        Args:
            topology: The topology spec.
        Returns:
            The fixed fabric."""
        topology_spec, network = self.network(topology)
        if topology_spec not in self._fixed_fabrics:
            self._fixed_fabrics[topology_spec] = network.fixed_fabric()
        return self._fixed_fabrics[topology_spec]

    def resolve_scenario(self, topology: str, workload: str | None = None, requests: int | None = None
                         ) -> ResolvedRun:
        """`resolve` without an allocator (``allocator`` is "" and ``allocator_entry`` None), raising as it does.

        Args:
            topology: The topology spec.
            workload: The workload spec (None: the topology's default).
            requests: Requests per run (None: the workload's default).
        Returns:
            The resolved scenario."""
        return self.resolve(None, topology, workload, requests)

    def resolve(self, allocator: str | None, topology: str, workload: str | None = None,
                requests: int | None = None, metrics: Sequence[str] = ()) -> ResolvedRun:
        """Read the specs once and check the combination: the plan every run of it uses (`run_plan`).

        Args:
            allocator: The allocator spec (None: the scenario alone, `resolve_scenario`).
            topology: The topology spec.
            workload: The workload spec (None: the topology's default).
            requests: Requests per run (None: the workload's ``default_requests(network)``, else two per server).
            metrics: Third-party metrics to compute besides dcbench's own; their names enter the run id.
        Returns:
            The plan, without a seed.
        Raises:
            SpecError: A malformed spec, a parameter a plugin refuses, no workload and no default, or bad ``requests``.
            UnknownPluginError: A spec names no registered plugin.
            IncompatibleError: The topology or the allocator serves no demand of the workload's kind.
            PluginError: A third-party plugin failed to build or returned something unusable.
            AllocatorError: The allocator's fingerprint cannot be taken (a missing or unreadable checkpoint)."""
        topology_spec, network = self.network(topology)
        if not workload and not network.default_workload:
            raise SpecError(f"topology {Spec.parse(topology).name!r} names no default workload; give one with -w")
        try:  # a topology's default workload names its own distribution's plugin first
            default = workload or self._own_default(topology, network.default_workload)
            workload_spec = Spec.parse(default)
            workload_built = self.registry.build("workload", workload_spec)
        except SpecError as exc:
            if workload is not None:
                raise
            entry = self.registry.get("topology", Spec.parse(topology).name)  # its default workload is wrong
            raise entry.error(f"has the default workload {network.default_workload!r}, which does not build "
                              f"({exc}); give a workload with -w") from exc
        allocator_spec = entry = allocator_built = None
        if allocator is not None:
            allocator_spec = Spec.parse(allocator)
            entry = self.registry.get("allocator", allocator_spec.name)
            allocator_built = entry.build(allocator_spec)
        kind = getattr(workload_built.obj, "kind", "pool")
        makes = f"workload {workload_built.spec.split(':')[0]!r} makes {kind} demands"
        if kind not in network.demand_kinds:
            raise IncompatibleError(
                f"topology {topology_spec.split(':')[0]!r} serves {'/'.join(network.demand_kinds)} demands but {makes}"
                + (f"; use its default workload {network.default_workload!r}" if network.default_workload else "")
            )
        if entry is not None:
            if kind not in entry.demands:
                serving = sorted(name for name, e in self.registry.entries("allocator").items() if kind in e.demands)
                raise IncompatibleError(f"allocator {entry.name!r} serves {'/'.join(entry.demands)} demands but "
                                        f"{makes}; allocators for {kind} demands: {', '.join(serving) or 'none'}")
            checked_against(entry, allocator_built, network)
            if getattr(allocator_built.obj, "reconfigure", True) is False:
                network = self.fixed_fabric(topology)  # the OCS paper's ALL2ALL: a policy that never reconfigures
        check_bounds("--requests", requests, 1, MAX_REQUESTS)
        workload_entry = self.registry.get("workload", workload_spec.name)
        topology_entry = self.registry.get("topology", topology_spec.split(":")[0])
        asked = self.asked_metrics(metrics)
        entries = (topology_entry, workload_entry) + ((entry,) if entry is not None else ()) + asked
        builtin_metrics = tuple(m for m in self.registry.entries("metric").values() if m.builtin)
        return ResolvedRun(
            topology=topology_spec, workload=workload_built.spec,
            allocator=allocator_built.spec if allocator_built is not None else "",
            requests=requests or self._default_requests(workload_entry, workload_built.obj, network),
            fingerprint=run_fingerprint(
                plugin_fingerprint(entry, getattr(allocator_built, "obj", None), network,
                                   lambda problem: AllocatorError(f"{entry.name}: {problem}")),  # (a checkpoint)
                entries, asked, " ".join(plugin_fingerprint(
                    workload_entry, workload_built.obj, network,
                    lambda problem: SpecError(f"{workload_built.spec}: {problem}")).split())),
            network=network, workload_model=workload_built.obj, workload_entry=workload_entry,
            allocator_entry=entry, metrics=asked, allocator_spec=allocator_spec,
            computed=builtin_metrics + asked,
            plugins=tuple((p.name, f"{p.distribution} {p.version}") for p in self.registry.plugins),
        )

    def asked_metrics(self, names: Sequence[str]) -> tuple[PluginEntry, ...]:
        """The third-party metrics among ``names``, once each, in registration order (so order changes no id).

        Args:
            names: Metric names, as ``--metric`` or a suite's ``metrics`` give them.
        Returns:
            Their registry entries, built-in ones left out.
        Raises:
            UnknownPluginError: A name no metric plugin registers.
            SpecError: Two of the metrics run would write one summary column."""
        wanted = {self.registry.get("metric", name).name for name in names}
        asked = tuple(entry for name, entry in self.registry.entries("metric").items()
                      if name in wanted and not entry.builtin)
        if asked:
            clash = column_clash([*(m for m in self.registry.entries("metric").values() if m.builtin), *asked])
            if clash is not None:
                raise SpecError(clash)
        return asked

    def _own_default(self, topology: str, default: str) -> str:
        """A topology's default workload, a bare name its topology's distribution's where that registers it."""
        name = self.registry.get("topology", Spec.parse(topology).name).name
        qualifier, dot, _ = name.partition(".")
        return self.registry.own_spec("workload", default, qualifier) if dot else default

    @staticmethod
    def _default_requests(entry: PluginEntry, workload: Any, network: Network) -> int:
        chooser = getattr(workload, "default_requests", None)
        if chooser is None:  # two per server: the papers' 128 on 64 servers, 2,048 on 1,024
            return 2 * network.n_servers
        with blamed_on(entry, "failed in default_requests(network)"):
            value = chooser(network.private_copy())
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 1 <= value <= MAX_REQUESTS:
            raise entry.error(f"returned {short_repr(value)} from default_requests(network), "
                              f"not an integer from 1 to {MAX_REQUESTS:,}")
        return int(value)

    def run(self, allocator: str, topology: str, workload: str | None = None, requests: int | None = None,
            seed: int = 0, progress: Callable[[int], None] | None = None, metrics: Sequence[str] = ()
            ) -> RunResult:
        """`resolve` then `run_plan` in one call, raising as they do.

        Args:
            allocator: The allocator spec.
            topology: The topology spec.
            workload: The workload spec (None: the topology's default).
            requests: Requests per run (None: the workload's default).
            seed: A non-negative integer.
            progress: Called with the number of requests done, every hundredth of the run (None: not called).
            metrics: Third-party metrics to compute besides dcbench's own.
        Returns:
            The run's results, not yet written (`RunResult.write`)."""
        check_seed(seed)
        return run_plan(self.resolve(allocator, topology, workload, requests, metrics), seed, progress)


def check_seed(seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SpecError(f"a seed is a non-negative integer, got {seed!r}")


def run_plan(plan: ResolvedRun, seed: int, progress: Callable[[int], None] | None = None) -> RunResult:
    """Run a plan with a seed, a fresh allocator and its metrics; nothing is parsed or resolved."""
    from dcbench._version import __version__

    check_seed(seed)
    network = plan.network
    run_id = plan.run_id(seed)
    workload_rng, allocator_rng = np.random.default_rng(seed).spawn(2)
    sequence = draw_requests(plan, plan.requests, workload_rng)
    allocator = plan.new_allocator()
    with naming_the_allocator(plan.allocator_entry):
        tables = simulate(network, sequence, allocator, allocator_rng, progress)
    identity = {"allocator": plan.allocator, "allocator_fingerprint": plan.fingerprint, "topology": plan.topology,
                "workload": plan.workload}
    summary: dict[str, Any] = {
        "run_id": run_id, **identity, "seed": seed, "requests": plan.requests,
        "offered": int((tables.requests["outcome"] != "skipped").sum()),
        "accepted": int((tables.requests["outcome"] == "accepted").sum()),
    }
    written_by = dict.fromkeys([*summary, *LATER_COLUMNS], "the core")
    columns_of: dict[str, tuple[str, ...]] = {}
    for entry in plan.computed:
        with blamed_on(entry, "failed"):  # (its columns too: a mapping may fail as it is read)
            columns = entry.load()(RunTables(read_only_copy(tables.requests), read_only_copy(tables.timeline)),
                                   network.private_copy())
            values = metric_columns(entry, columns, written_by)
        summary.update(values)
        columns_of[entry.name] = tuple(values)
    summary["dcbench_version"] = __version__
    provenance = {
        "dcbench_version": __version__, "run_id": run_id, **identity, "requests": plan.requests, "seed": seed,
        "plugins": dict(plan.plugins),
        **({"metrics": [entry.name for entry in plan.metrics]} if plan.metrics else {}),
        "git_commit": git_commit(), "python": platform.python_version(), "numpy": np.__version__,
    }
    notes = [*run_notes(tables.requests), *allocator_notes(plan.allocator_entry, allocator)]
    if notes:
        provenance["notes"] = notes
    return RunResult(run_id, summary, tables, provenance, notes, columns_of, network)


def read_only_copy(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A read-only copy of a table for one metric: nothing it does reaches the next one."""
    copies = {name: array.copy() for name, array in columns.items()}
    for array in copies.values():
        array.flags.writeable = False
    return copies
