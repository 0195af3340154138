"""Conformance checks for plugins, to call from a plugin's own tests (as Gymnasium's ``check_env``): each runs one
plugin on small scenarios and returns None, or raises `ContractError` naming the plugin and the contract it broke."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import time
from types import MappingProxyType, SimpleNamespace
from typing import Any, Iterator, Mapping, cast

import numpy as np

from dcbench.engine.simulation import RunTables, simulate
from dcbench.errors import DcbenchError, IncompatibleError, SpecError, cut, describe, short_repr
from dcbench.model.network import Network, Topology
from dcbench.model.requests import RequestSequence, SequenceProblem, checked_sequence
from dcbench.registry import Registry, get_registry
from dcbench.registry.manager import beside_caller
from dcbench.running import sweep
from dcbench.running.numbers import value_range
from dcbench.running.runner import (
    COLUMN_NAME,
    LATER_COLUMNS,
    ResolvedRun,
    Runner,
    draw_requests,
    read_only_copy,
    run_plan,
    summary_number,
)
from dcbench.spec import Spec

__all__ = ["ContractError", "SCENARIOS", "check_allocator", "check_topology", "check_workload", "check_metric",
           "check_suite"]
# The small scenario each check runs by demand kind, (topology, workload): little demand on much room.
SCENARIOS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "pool": ("tiered:8,1x4", "uniform:max_cpu=32,max_mem=32"),
    "job": ("ocs:4,servers=4", "vmjobs:load=4,warmup=10"),
})
METRIC_ALLOCATORS = ("random", "tetris")  # the allocators whose runs a metric is checked on; both serve both kinds
REQUESTS = 60
TIME_LIMIT = 30.0  # seconds a check may take (``time_limit=``), measured between its steps and per decision


class ContractError(AssertionError):
    """A plugin broke a contract of its kind (an `AssertionError`: a test failure, not an error).

    Args:
        kind: The plugin's kind: "allocator", "topology", "workload", "metric" or "suite".
        name: The plugin's name or spec, as checked.
        contract: The contract it broke, in a few words.
        seen: What the check saw, in a line."""

    def __init__(self, kind: str, name: str, contract: str, seen: str):
        super().__init__(f'{kind} {name!r} broke "{contract}": {seen}')
        self.kind, self.name, self.contract, self.seen = kind, name, contract, seen

    def __reduce__(self) -> Any:  # pickled whole (pytest-xdist, multiprocessing)
        return type(self), (self.kind, self.name, self.contract, self.seen)


@contextlib.contextmanager
def _failing(kind: str, name: str, contract: str, where: str) -> Iterator[None]:
    try:
        yield
    except _Overtime as exc:  # raised inside the engine, which passes a DcbenchError on unchanged
        raise exc.error from None
    except (ContractError, SpecError, IncompatibleError):
        raise
    except Exception as exc:
        raise ContractError(kind, name, contract, f"{where}: {describe(exc, 300)}") from exc


class _Overtime(DcbenchError):
    def __init__(self, error: ContractError):
        super().__init__(str(error))
        self.error = error


class _Clock:
    """A check's time bound, looked at between its steps: a single step that never returns is not caught."""

    def __init__(self, kind: str, name: str, limit: float):
        if not (isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0):
            raise SpecError(f"time_limit={limit!r} is not a positive number of seconds")
        self.kind, self.name, self.limit = kind, name, float(limit)
        self.start = time.monotonic()

    def check(self, where: str) -> None:
        spent = time.monotonic() - self.start
        if spent > self.limit:
            raise ContractError(self.kind, self.name, f"its check takes at most {self.limit:g} s",
                                f"{spent:.1f} s in, {where}; pass time_limit= a larger bound for a plugin "
                                "this slow")


class _WithoutMetrics:
    """A registry that shows a runner no metric, so a broken metric fails its own check alone."""

    def __init__(self, registry: Registry):
        self._registry = registry

    def entries(self, kind: str) -> dict[str, Any]:
        return {} if kind == "metric" else self._registry.entries(kind)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._registry, name)


def _runner(registry: Registry | None, name: str = "") -> tuple[Runner, Registry]:
    # what the calling package's plugins run beside (dcbench's and its own), its bare names its own
    plugins = beside_caller(registry if registry is not None else get_registry(), name)
    return Runner(cast("Registry", _WithoutMetrics(plugins))), plugins


def _scenarios(runner: Runner, topology: str | None, workload: str | None) -> dict[str, tuple[str, str | None]]:
    scenarios: dict[str, tuple[str, str | None]] = dict(SCENARIOS)
    if topology is None and workload is None:
        return scenarios
    if topology is None:
        topology = SCENARIOS[_kind(runner.registry.build("workload", cast(str, workload)).obj)][0]
    plan = runner.resolve_scenario(topology, workload)
    scenarios[_kind(plan.workload_model)] = (topology, workload)
    return scenarios


def _kind(workload: Any) -> str:
    return str(getattr(workload, "kind", "pool"))


def _where(kind: str, topology: str, workload: str | None) -> str:
    return f"{kind}s on {topology} with {workload or 'its default workload'}"


def check_allocator(name_or_spec: str, *, topology: str | None = None, workload: str | None = None,
                    requests: int = REQUESTS, registry: Registry | None = None,
                    time_limit: float = TIME_LIMIT) -> None:
    """Check an allocator on two runs with seed 0 of a small scenario of each demand kind it declares.

    Args:
        name_or_spec: The allocator's name or spec (``"firstfit:stay_in_rack=no"``).
        topology: A topology spec instead of the demand kind's default (a checkpoint may need one), with room to spare.
        workload: A workload spec (default: the topology's own where one is given, else the demand kind's default).
        requests: Requests in each run.
        registry: The plugins to look the names up in (default: the process's).
        time_limit: Seconds the check may take, looked at before each decision.
    Raises:
        ContractError: The allocator raised, made an impossible allocation, accepted nothing, decided differently
            for the same seed, or took more than ``time_limit``.
        SpecError: A spec does not parse or names no registered plugin.
        IncompatibleError: The scenario's demands are of a kind the allocator does not declare."""
    clock = _Clock("allocator", name_or_spec, time_limit)
    runner, plugins = _runner(registry, name_or_spec)
    entry = plugins.get("allocator", Spec.parse(name_or_spec).name)
    broke = functools.partial(ContractError, "allocator", name_or_spec)
    scenarios = _scenarios(runner, topology, workload)
    for kind in entry.demands:
        scenario_topology, scenario_workload = scenarios[kind]
        where = _where(kind, scenario_topology, scenario_workload)
        with _failing("allocator", name_or_spec, "builds for the scenario", where):
            plan = runner.resolve(name_or_spec, scenario_topology, scenario_workload, requests)
        runs = []
        for run in range(2):  # each with an allocator of its own, as each run of a sweep
            clock.check(f"at the start of run {run + 1} of {where}")
            with _failing("allocator", name_or_spec, "builds for the scenario", where):
                recorder = _Recorder(plan.new_allocator(), clock, f"run {run + 1} of {where}")
            with _failing("allocator", name_or_spec, "runs without raising", where):
                runs.append((_simulate(plan, recorder, seed=0), recorder.decisions))
            clock.check(f"at the end of run {run + 1} of {where}")
        table = runs[0][0].requests
        invalid = np.flatnonzero(table["reason"] == "invalid_allocation")
        if len(invalid):
            raise broke("valid allocations on easy requests",
                        f"{where}, request {invalid[0]}: {table['detail'][invalid[0]]}")
        if not (table["outcome"] == "accepted").any():
            raise broke("accepts requests with room to spare",
                        f"{where}: none of {requests} small requests accepted on the empty topology")
        (first, decided), (second, again) = runs
        difference = _first_decision_difference(decided, again) or _first_difference(first, second)
        if difference is not None:
            raise broke("the same decisions for the same seed", f"{where}, two runs of seed 0: {difference}")


def _simulate(plan: ResolvedRun, allocator: Any, seed: int) -> RunTables:
    """A run with ``allocator``, on `Runner.run`'s streams of ``seed``, and no metric."""
    workload_rng, allocator_rng = np.random.default_rng(seed).spawn(2)
    return simulate(plan.network, draw_requests(plan, plan.requests, workload_rng), allocator, allocator_rng)


Decision = tuple[int, tuple[tuple[str, str], ...]]  # a request's id, and the parts of the answer to it


class _Recorder:
    """An allocator whose answers are recorded, part by part."""

    def __init__(self, allocator: Any, clock: _Clock, where: str):
        self.allocator, self.clock, self.where = allocator, clock, where
        self.decisions: list[Decision] = []

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        self.allocator.reset(network, rng)

    def allocate(self, request: Any, state: Any) -> Any:
        try:
            self.clock.check(f"at {self.where}, request {request.id}")
        except ContractError as exc:
            raise _Overtime(exc) from None
        answer = self.allocator.allocate(request, state)
        try:
            routes = answer.routes if isinstance(answer.routes, (tuple, list)) else ()  # an iterator: not consumed
            parts = (("servers", str(np.asarray(answer.servers).tolist())),
                     ("amounts", str(np.asarray(answer.amounts).tolist())),
                     ("routes", str([tuple(route) for route in routes])),
                     ("VMs' servers", str(answer.vm_servers)), ("swaps", str(answer.reconfigure)))
        except Exception:  # a refusal, or what the engine will call malformed
            parts = (("answer", short_repr(answer)),)
        self.decisions.append((request.id, parts))
        return answer


def _first_decision_difference(first: list[Decision], second: list[Decision]) -> str | None:
    for (request, a), (_, b) in zip(first, second):
        if a != b:
            if len(a) != len(b):  # an allocation, then a refusal
                return f"request {request}: {cut(a[0][1], 80)}, then {cut(b[0][1], 80)}"
            part, one, other = next((part, one, other) for (part, one), (_, other) in zip(a, b) if one != other)
            return f"request {request}: {part} {cut(one, 80)}, then {cut(other, 80)}"
    return None


def _first_difference(first: RunTables, second: RunTables) -> str | None:
    for table in ("requests", "timeline"):
        a, b = getattr(first, table), getattr(second, table)
        if list(a) != list(b):
            return f"the {table} tables have columns {list(a)}, then {list(b)}"
        for column in a:
            x, y = np.asarray(a[column]), np.asarray(b[column])
            if x.shape != y.shape:
                return f"the {table} table has {len(x)} rows, then {len(y)}"
            same = np.asarray(x == y, dtype=bool) | (_isnan(x) & _isnan(y))
            if not same.all():
                row = int(np.flatnonzero(~same)[0])
                return f"{table}[{column!r}] differs first at row {row}: {x[row]!r}, then {y[row]!r}"
    return None


def _isnan(values: np.ndarray) -> np.ndarray:
    return np.asarray(values != values, dtype=bool)  # NaN alone differs from itself


def check_topology(name_or_spec: str, *, registry: Registry | None = None, time_limit: float = TIME_LIMIT) -> None:
    """Check that a topology builds and compiles into a consistent network.

    Its servers have capacity and labels, its links capacity and a tier from 0; pools' servers reach each other, jobs'
    rack switches link to each other; its default workload (or None) is registered and runs on it.

    Args:
        name_or_spec: The topology's name or spec (``"tiered:8,1x4"``).
        registry: The plugins to look the names up in (default: the process's).
        time_limit: Seconds the check may take, looked at between its steps.
    Raises:
        ContractError: The topology broke one of those contracts, or its check took more than ``time_limit``.
        SpecError: The spec does not parse or names no registered topology."""
    clock = _Clock("topology", name_or_spec, time_limit)
    runner, plugins = _runner(registry, name_or_spec)
    broke = functools.partial(ContractError, "topology", name_or_spec)
    with _failing("topology", name_or_spec, "builds a dcbench.Topology", "its factory"):
        topology = plugins.build("topology", name_or_spec).obj
    if not isinstance(topology, Topology):
        raise broke("builds a dcbench.Topology", f"its factory returned {type(topology).__name__}")
    kinds = topology.demand_kinds
    if not isinstance(kinds, tuple) or not kinds or not set(kinds) <= {"pool", "job"}:
        raise broke("serves pool and/or job demands", f"demand_kinds={kinds!r}")
    with _failing("topology", name_or_spec, "compiles into a network", "Network.compile"):
        try:
            network = Network.compile(topology)
        except SpecError as exc:  # the model's own checks: servers, capacities, labels, circuits
            raise broke("servers, capacities and labels the model accepts", str(exc)) from None
    clock.check("after compiling it")
    capacity = network.server_capacity
    for axis, what in ((1, "server"), (0, "resource")):  # a server without a GPU, yes; a server of nothing, no
        if not (capacity.sum(axis=axis) > 0).all():
            bad = int(np.flatnonzero(capacity.sum(axis=axis) <= 0)[0])
            raise broke("capacities are servers × resources, positive", f"{what} "
                        f"{(network.nodes if axis else network.resources)[bad]!r} has no capacity at all")
    if network.n_links == 0 or not network.link_capacity.sum() > 0:
        raise broke("links of some capacity", f"{network.n_links} links of {network.link_capacity.sum()} in all")
    if (network.link_tier < 0).any():  # a run's link_util_tier<t> columns need one (the product refuses the run)
        link = int(np.flatnonzero(network.link_tier < 0)[0])
        a, b = (network.nodes[end] for end in network.link_ends[link])
        raise broke("every link of a tier from 0 (1 nearest the servers)",
                    f"the link {a!r}-{b!r} has tier {int(network.link_tier[link])}")
    if "pool" in kinds:
        for server in np.unique(np.linspace(1, network.n_servers - 1, min(network.n_servers - 1, 256), dtype=int)):
            if not network.paths.between_servers(0, int(server)):
                raise broke("every server reaches the others (pools)",
                            f"no path from server {network.nodes[0]!r} to {network.nodes[server]!r}")
    if "job" in kinds:
        if network.rack_node is None or len(network.rack_node) != network.n_racks:
            raise broke("a switch for every rack (jobs)", f"rack_nodes={topology.rack_nodes!r} for "
                                                          f"{network.n_racks} racks")
        for a, b in itertools.combinations(network.rack_node.tolist(), 2):
            if a != b and (a, b) not in network.link_of_pair and (b, a) not in network.link_of_pair:
                raise broke("every rack's switch linked to every other's (jobs)",
                            f"no link between {network.nodes[a]!r} and {network.nodes[b]!r}")
    clock.check("after its paths")
    default = network.default_workload
    if default is not None:
        contract = "a default workload that is registered and serves it (or None)"
        if not isinstance(default, str) or Spec.parse(default).name not in plugins.entries("workload"):
            raise broke(contract, f"default_workload={default!r}; registered: "
                                  f"{', '.join(sorted(plugins.entries('workload')))}")
        try:
            runner.resolve_scenario(name_or_spec)
        except Exception as exc:
            raise broke(contract, describe(exc, 300)) from exc
        clock.check("after resolving its default workload")
        try:  # what `dcbench run` makes of it, with dcbench's own metrics: the product's refusals, not a copy
            run_plan(Runner(plugins).resolve(METRIC_ALLOCATORS[0], name_or_spec, requests=REQUESTS), 0)
        except Exception as exc:
            raise broke("runs as `dcbench run` runs it", f"{METRIC_ALLOCATORS[0]}, {REQUESTS} requests of its "
                                                         f"default workload, seed 0: {describe(exc, 300)}") from exc
        clock.check("after a short run")


def check_workload(name_or_spec: str, *, topology: str | None = None, requests: int = 50,
                   varies_with_seed: bool = True, registry: Registry | None = None,
                   time_limit: float = TIME_LIMIT) -> None:
    """Check that a workload generates a sane request sequence from its seed alone.

    Demands are non-negative and not all zero, holding times positive, gaps non-negative; the same seed gives the same
    sequence, another seed another, and a longer episode of a seed begins with the shorter.

    Args:
        name_or_spec: The workload's name or spec (``"uniform:max_cpu=64"``).
        topology: The topology spec to generate for (default: the demand kind's in `SCENARIOS`).
        requests: Requests to generate.
        varies_with_seed: Whether another seed must give other requests; False only for a fixed-trace replay.
        registry: The plugins to look the names up in (default: the process's).
        time_limit: Seconds the check may take, looked at after each draw.
    Raises:
        ContractError: The workload broke one of those contracts, or its check took more than ``time_limit``.
        SpecError: A spec does not parse or names no registered plugin.
        IncompatibleError: The topology does not serve the workload's demand kind."""
    clock = _Clock("workload", name_or_spec, time_limit)
    runner, plugins = _runner(registry, name_or_spec)
    broke = functools.partial(ContractError, "workload", name_or_spec)
    with _failing("workload", name_or_spec, "builds", "its factory"):
        kind = _kind(plugins.build("workload", name_or_spec).obj)
    if kind not in SCENARIOS:
        raise broke("makes pool or job demands", f"its kind is {kind!r}")
    topology = topology or SCENARIOS[kind][0]
    plan = runner.resolve_scenario(topology, name_or_spec, requests)
    network = plan.network

    def draw(seed: int, length: int = requests) -> RequestSequence:
        with _failing("workload", name_or_spec, "generate() runs", f"on {topology}, seed {seed}"):
            sequence = plan.workload_model.generate(network.private_copy(), length, np.random.default_rng(seed))
        clock.check(f"after drawing {length} requests of seed {seed} on {topology}")
        if not isinstance(sequence, RequestSequence):
            raise broke("generate() returns a dcbench.RequestSequence", f"it returned {type(sequence).__name__}")
        return sequence

    first = draw(0)
    shapes = {"gaps": (requests,), "holding": (requests,), "demand": (requests, len(network.resources))}
    arrays = {}
    for field, shape in shapes.items():
        arrays[field] = np.asarray(getattr(first, field))
        if arrays[field].shape != shape or arrays[field].dtype.kind not in "iuf":
            raise broke("as many requests as asked for, of the network's resources",
                        f"{field} has shape {arrays[field].shape} and dtype {arrays[field].dtype}, expected numbers "
                        f"of shape {shape} for {requests} requests on {topology}")
    demand, holding, gaps = arrays["demand"], arrays["holding"], arrays["gaps"]
    bad = ~(np.isfinite(demand) & (demand >= 0)).all(axis=1) | ~(demand.sum(axis=1) > 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise broke("demands non-negative and not all zero", f"request {row} demands {demand[row].tolist()}")
    if not (np.isfinite(holding) & (holding > 0)).all():
        raise broke("positive holding times", f"holding holds {float(holding.min())}")
    if not (np.isfinite(gaps) & (gaps >= 0)).all():
        raise broke("non-negative gaps", f"gaps holds {float(gaps.min())}")
    try:
        checked_sequence(first, network, requests, kind)
    except SequenceProblem as exc:
        raise broke("a sequence the engine runs", str(exc)) from None
    difference = _sequence_difference(first, draw(0))
    if difference is not None:
        raise broke("the same requests for the same seed", f"two draws of seed 0 differ in {difference}")
    if varies_with_seed and _sequence_difference(first, draw(1)) is None:
        raise broke("other requests for another seed",
                    "seeds 0 and 1 give the same requests: draw them from the rng generate() is given")
    difference = _sequence_difference(first, _first_requests(draw(0, 2 * requests), requests))
    if difference is not None:
        raise broke("a longer episode of a seed that begins with the shorter one",
                    f"the first {requests} of {2 * requests} requests of seed 0 differ from {requests} drawn alone "
                    f"in {difference}: draw each quantity from a stream of its own (rng.spawn)")


def _first_requests(sequence: RequestSequence, n: int) -> RequestSequence:
    cut: dict[str, Any] = {}
    for name in ("gaps", "holding", "demand", "measured"):
        value = getattr(sequence, name)
        cut[name] = None if value is None else np.asarray(value)[:n]
    for offsets, items in (("vm_offsets", "vm_demand"), ("flow_offsets", "flows")):  # a job's VMs and flows
        if getattr(sequence, offsets) is not None:
            cut[offsets] = np.asarray(getattr(sequence, offsets))[: n + 1]
            cut[items] = np.asarray(getattr(sequence, items))[: int(cut[offsets][-1])]
    return dataclasses.replace(sequence, **cut)


def _sequence_difference(first: RequestSequence, second: RequestSequence) -> str | None:
    """The first field (but the workload's own ``extra``) in which two sequences differ, or None."""
    for field in dataclasses.fields(first):
        a, b = getattr(first, field.name), getattr(second, field.name)
        if field.name == "extra" or (a is None and b is None):
            continue
        if a is None or b is None:
            return field.name
        if isinstance(a, (str, bool, int, float)) or dataclasses.is_dataclass(a):
            if a != b:
                return field.name
        elif not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind in "fc"):
            return field.name
    return None


@dataclasses.dataclass
class _MetricRun:
    label: str
    kind: str
    tables: RunTables
    network: Network
    measured: bool = True  # whether any request is measured; False: the metric has nothing to measure
    ordinary: bool = True  # a run of a registered allocator, as a sweep makes


def _metric_runs(runner: Runner, scenarios: Mapping[str, tuple[str, str | None]], clock: _Clock
                 ) -> tuple[list[_MetricRun], set[str]]:
    """Per demand kind, runs of two allocators, one accepting nothing, one measuring nothing; and the core's columns."""
    runs: list[_MetricRun] = []
    core = set(LATER_COLUMNS)
    for kind, (topology, workload) in scenarios.items():
        where = _where(kind, topology, workload)
        for seed, allocator in enumerate(METRIC_ALLOCATORS):
            plan = runner.resolve(allocator, topology, workload, REQUESTS)
            result = run_plan(plan, seed)
            clock.check(f"after a run of {allocator} ({where})")
            core |= set(result.summary)
            runs.append(_MetricRun(f"run {len(runs) + 1} ({allocator}, seed {seed}, {where})", kind, result.tables,
                                   plan.network))
        rejects_all = SimpleNamespace(reset=lambda network, rng: None, allocate=lambda request, state: None)
        tables = _simulate(plan, rejects_all, seed=0)
        runs.append(_MetricRun(f"run {len(runs) + 1} (nothing accepted, {where})", kind, tables, plan.network,
                               ordinary=False))
        measured = runs[-3]
        nothing = np.zeros_like(measured.tables.requests["measured"])
        tables = dataclasses.replace(measured.tables, requests={**measured.tables.requests, "measured": nothing})
        runs.append(_MetricRun(f"run {len(runs) + 1} (nothing measured, {where})", kind, tables, measured.network,
                               measured=False, ordinary=False))
    return runs, core


def check_metric(name: str, *, topology: str | None = None, workload: str | None = None,
                 registry: Registry | None = None, time_limit: float = TIME_LIMIT) -> None:
    """Check a metric on a few small runs of each demand kind.

    On runs of `METRIC_ALLOCATORS`, one accepting nothing and one measuring nothing, it returns the same new columns,
    each a number in the range its name promises (NaN or 0 where nothing is measured), and every column it declares.

    Args:
        name: The metric's name.
        topology: A topology spec instead of the demand kind's default.
        workload: A workload spec (default: the topology's own where one is given, else the demand kind's default).
        registry: The plugins to look the names up in (default: the process's).
        time_limit: Seconds the check may take, looked at after each run and each call of the metric.
    Raises:
        ContractError: The metric broke one of those contracts, or its check took more than ``time_limit``.
        SpecError: A spec does not parse or names no registered plugin."""
    clock = _Clock("metric", name, time_limit)
    runner, plugins = _runner(registry, name)
    entry = plugins.get("metric", name)
    broke = functools.partial(ContractError, "metric", name)
    runs, core = _metric_runs(runner, _scenarios(runner, topology, workload), clock)
    others = {column.name: other for other, metric in plugins.entries("metric").items() if other != entry.name
              for column in metric.columns if "*" not in column.name}
    written: dict[str, list[str]] = {}
    measures = False
    for run in runs:
        with _failing("metric", name, "runs on every run's tables", run.label):
            columns = entry.load()(RunTables(read_only_copy(run.tables.requests), read_only_copy(run.tables.timeline)),
                                   run.network.private_copy())
        clock.check(f"after measuring {run.label}")
        if not isinstance(columns, Mapping) or not columns:
            raise broke("returns a dict of summary columns", f"{run.label}: it returned {short_repr(columns)}")
        for column, value in columns.items():
            if not isinstance(column, str) or not COLUMN_NAME.fullmatch(column):
                raise broke("columns named with letters, digits and _", f"{run.label}: a column {short_repr(column)}")
            if column in core or column in others:
                owner = "the core" if column in core else f"metric {others[column]!r}"
                raise broke("adds only columns of its own", f"{run.label}: {column!r}, which {owner} writes")
            number = summary_number(value)
            if number is None:
                raise broke("a number in every column", f"{run.label}: {column}={short_repr(value)}")
            allowed = value_range(column)
            if not allowed.allowed(np.array([number]))[0]:
                raise broke("values in the range their names promise",
                            f"{run.label}: {column}={number!r} is not {allowed.what}")
            if not run.measured and not (np.isnan(number) or number == 0):
                raise broke("NaN (or 0) where nothing is measured", f"{run.label}: {column}={number!r}")
            measures |= run.ordinary and not np.isnan(number)
        first = next(other for other in runs if other.kind == run.kind)
        reference = written.get(first.label, list(columns))
        lacks, adds = sorted(set(reference) - set(columns)), sorted(set(columns) - set(reference))
        if lacks or adds:
            seen = " and ".join([f"lacks {lacks}"] * bool(lacks) + [f"adds {adds}"] * bool(adds))
            raise broke("the same columns whatever the run did", f"{run.label} {seen}, beside {first.label}")
        written[run.label] = list(columns)
    if not measures:
        raise broke("measures something in an ordinary run",
                    f"every column is NaN in every run of {' and '.join(METRIC_ALLOCATORS)}")
    kinds = {run.kind for run in runs}
    for declared in entry.columns:
        if set(declared.demands) <= kinds and not any(declared.matches(written[run.label]) for run in runs
                                                      if run.kind in declared.demands):
            everything = sorted({column for columns in written.values() for column in columns})
            raise broke("writes every column it declares", f"it declares {declared.name!r} for "
                        f"{'/'.join(declared.demands)} runs, but no run has it (they have {everything})")


def check_suite(name: str, *, registry: Registry | None = None, time_limit: float = TIME_LIMIT) -> None:
    """Check that a suite's scenarios resolve, a sweep of it plans, and its ranking is declared.

    Its primary metric must be a column that dcbench's metrics or its ``metrics`` declare for its demand kinds, and
    ``higher_is_better`` agree with that column's ``better``.

    Args:
        name: The suite's name.
        registry: The plugins to look the names up in (default: the process's).
        time_limit: Seconds the check may take, looked at after each scenario.
    Raises:
        ContractError: The suite broke one of those contracts, or its check took more than ``time_limit``.
        SpecError: No suite of that name is registered."""
    clock = _Clock("suite", name, time_limit)
    runner, plugins = _runner(registry, name)
    suite = plugins.get("suite", name)
    broke = functools.partial(ContractError, "suite", name)
    kinds = set()
    for scenario in suite.scenarios:
        where = f"scenario {scenario.label!r}"
        try:
            resolved = runner.resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
        except Exception as exc:
            raise broke("every scenario resolves", f"{where}: {describe(exc, 300)}") from exc
        kinds.add(_kind(resolved.workload_model))
        clock.check(f"after resolving {where}")
    sweeper = Runner(plugins)  # with the metrics, as `dcbench sweep` has them
    try:
        sweep.plan(sweeper, suite, [METRIC_ALLOCATORS[0]])
    except Exception as exc:  # what `dcbench sweep -s NAME` refuses before it runs anything
        raise broke("a suite `dcbench sweep` plans", f"sweep -s {name} -a {METRIC_ALLOCATORS[0]}: "
                                                     f"{describe(exc, 300)}") from exc
    clock.check("after planning a sweep")
    primary = suite.primary_metric
    computed = [entry for entry in plugins.entries("metric").values() if entry.builtin]
    computed += sweeper.asked_metrics(suite.metrics)
    declared = [column for entry in computed for column in entry.columns if column.matches([primary])]
    if not declared:
        elsewhere = [other for other, entry in plugins.entries("metric").items()
                     if any(column.matches([primary]) for column in entry.columns)]
        hint = (f"metric {elsewhere[0]!r} declares it, but a sweep computes it only where the suite lists it in "
                "metrics=" if elsewhere else
                f"declared: {', '.join(column.name for entry in computed for column in entry.columns)}")
        raise broke("a primary metric that a metric its sweep computes declares",
                    f"no metric a sweep of it computes (dcbench's own"
                    f"{', ' + ', '.join(suite.metrics) if suite.metrics else ''}) declares {primary!r}; {hint}")
    column = declared[0]
    if not kinds <= set(column.demands):
        raise broke("a primary metric of its scenarios' demands",
                    f"{primary!r} is declared for {'/'.join(column.demands)} runs, its scenarios make "
                    f"{'/'.join(sorted(kinds))} demands")
    if column.better is not None and (column.better == "higher") != suite.higher_is_better:
        raise broke("ranks as its primary metric says", f"higher_is_better={suite.higher_is_better} but "
                                                        f"{primary!r} is better {column.better}")
