"""Sweeps: every (scenario, allocator, seed) of a suite or of ad-hoc specs, each run in a folder of its own (a killed
sweep resumes), then the combined ``summary.parquet``, rebuilt from the run folders."""

from __future__ import annotations

import difflib
import json
import socket
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from dcbench.errors import DcbenchError, IncompatibleError, PluginError, ResultsError, SpecError, describe, short_repr
from dcbench.model.suite import Scenario, Suite
from dcbench.running.runner import Runner, measuring
from dcbench.running.summary import SUMMARY_COLUMNS, is_adhoc, is_complete, sweep_provenance_problem
from dcbench.running.workers import (
    PlannedRun,
    RunOutput,
    by_allocator,
    check_network,
    network_digest,
    run_apart,
    run_in_worker,
    start_worker,
)
from dcbench.spec import Spec, bind, resolved_spec
from dcbench.storage.paths import starts_with
from dcbench.storage.tables import provenance_of, read_table, write_run, write_table_atomic

SUMMARY = "summary.parquet"


def split_specs(values: Iterable[str], flag: str, example: str) -> list[str]:
    """A repeatable option's comma lists of specs: a piece with '=' and no ':', or one that starts with no spec's name,
    is a further argument of the spec before it (``ccf:reconfigure=no,jcb`` is two specs, ``tiered:32,1x4`` one)."""
    from dcbench.registry.checks import is_spec_name

    specs: list[str] = []
    for value in values:
        for part in (piece.strip() for piece in value.split(",")):
            if part and (("=" in part and ":" not in part) or not is_spec_name(part.split(":")[0])):
                if not specs or ":" not in specs[-1]:
                    raise SpecError(f"{short_repr(part)} in {flag} {short_repr(value)} is an argument that follows "
                                    "no NAME:ARGUMENTS spec; write it after its plugin's name and ':'")
                specs[-1] += "," + part
            else:
                specs.append(part)
    if not specs:
        raise SpecError(f"give at least one, e.g. {flag} {example}")
    if any(not spec for spec in specs):
        raise SpecError(f"{flag} {short_repr(', '.join(values))} has an empty spec between commas; "
                        "remove the extra comma")
    return specs


def split_allocators(values: Iterable[str]) -> list[str]:
    return split_specs(values, "--allocator", "tetris,nalb,nulb,random")


ADHOC_OUT = "sweep"  # an ad-hoc sweep's folder under results/ (a suite's is named after the suite)
ADHOC = "ad-hoc sweep"  # the name of an ad-hoc sweep's suite, which no registered suite can have (a space)


def adhoc_suite(runner: Runner, topologies: Sequence[str], workloads: Sequence[str | None], requests: int | None,
                seeds: int, allocators: Sequence[str]) -> Suite:
    """Every topology with every workload, seeds 0 to ``seeds`` - 1; two that resolve alike are refused."""
    from dcbench.running.labels import scenario_labels

    def options(topology: str, workload: str | None) -> str:
        return f"-t {topology}" + (f" -w {workload}" if workload else "")

    given: dict[tuple[str, str, int], tuple[str, str | None]] = {}
    for topology in topologies:
        for workload in workloads:
            resolved = runner.resolve_scenario(topology, workload)  # (`plan` checks the allocators)
            resolved, _ = measuring(resolved, requests, options(topology, workload))
            key = (resolved.topology, resolved.workload, resolved.requests)
            if key in given:
                raise SpecError(f"{options(*given[key])} and {options(topology, workload)} are the same scenario "
                                f"({key[0]}, {key[1]}); give each once")
            given[key] = (topology, workload)
    names = scenario_labels(list(given), runner.registry)
    return Suite(ADHOC, tuple(Scenario(topology, workload, key[2] if requests else None, tuple(range(seeds)),
                                       names[key])
                           for key, (topology, workload) in given.items()))


def described(suite: Suite) -> dict[str, Any]:
    """What a sweep's provenance records of its suite: its name, or an ad-hoc sweep's scenarios."""
    if suite.name != ADHOC:
        return {"suite": suite.name}
    return {"scenarios": [{"name": s.label, "topology": s.topology, "workload": s.workload, "requests": s.requests,
                           "seeds": list(s.seeds)} for s in suite.scenarios]}


def plan(runner: Runner, suite: Suite, allocators: Sequence[str], metrics: Sequence[str] = ()) -> list[PlannedRun]:
    """Every run of the sweep, each (scenario, allocator) resolved once; an allocator given twice is refused."""
    metrics = (*suite.metrics, *metrics)
    given: dict[str, str] = {}
    for allocator in allocators:
        resolved = resolved_allocator(runner.registry, allocator)
        if resolved in given:
            raise SpecError(f"allocator {allocator!r} is given twice (also as {given[resolved]!r}, the same "
                            f"{resolved}); give each allocator once")
        given[resolved] = allocator
    runs = []
    scenario_of: dict[str, str] = {}
    digests: dict[int, str] = {}  # by network (id): the scenarios' networks are shared by the allocators
    for scenario in suite.scenarios:
        for allocator in allocators:
            try:
                resolved = runner.resolve(allocator, scenario.topology, scenario.workload, scenario.requests,
                                          metrics)
            except (SpecError, IncompatibleError) as exc:  # say where in the suite (a third-party one's specs)
                where = "scenario" if suite.name == ADHOC else f"suite {suite.name!r}, scenario"
                raise type(exc)(f"{where} {scenario.label!r}: {exc}") from exc
            for seed in scenario.seeds:
                run_id = resolved.run_id(seed)
                if scenario_of.setdefault(run_id, scenario.label) != scenario.label:
                    raise PluginError(f"suite {suite.name!r} (plugin {suite.plugin or '?'}) has scenarios "
                                      f"{scenario_of[run_id]!r} and {scenario.label!r}, which resolve to the same "
                                      "runs; they would count twice in every mean: report it to the plugin's authors")
                if id(resolved.network) not in digests:
                    digests[id(resolved.network)] = network_digest(resolved.network)
                runs.append(PlannedRun(scenario.label, allocator, scenario.topology, scenario.workload,
                                       scenario.requests, seed, run_id, tuple(metrics),
                                       digests[id(resolved.network)], resolved))
    return runs


def run_local(runs: Sequence[PlannedRun], out_dir: Path, workers: int, advance: Callable[[PlannedRun], None]) -> None:
    """Make the runs in forked workers, each allocator's apart, writing each as it comes."""
    def write(run: PlannedRun, output: RunOutput) -> None:
        write_run(out_dir, run.run_id, output.tables, output.provenance)
        advance(run)

    run_apart(runs, workers, write)


def _run_remote(runs: Sequence[PlannedRun]) -> list[RunOutput]:
    """A Ray task: make a batch of one allocator's runs, resolved there once, and send them back."""
    start_worker()  # into the worker's log: the driver has warned already
    return [run_in_worker(run) for run in runs]


def ray_batches(runs: Sequence[PlannedRun], cpus: int) -> list[list[PlannedRun]]:
    """The runs in batches of one allocator each, about two per CPU for each allocator."""
    batches = []
    for allocator_runs in by_allocator(runs):
        size = -(-len(allocator_runs) // (2 * max(1, cpus)))
        batches += [allocator_runs[i:i + size] for i in range(0, len(allocator_runs), size)]
    return batches


def run_ray(runs: Sequence[PlannedRun], out_dir: Path, address: str | None,
            advance: Callable[[PlannedRun], None]) -> None:
    """Make the runs as Ray tasks, each allocator's in workers of their own; the driver writes the run folders."""
    try:
        import ray
    except ImportError:
        raise DcbenchError("--executor ray needs Ray: pip install 'dcbench[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        check_reachable(address)
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(max_calls=1)(_run_remote)  # (Ray reuses a worker for other tasks otherwise)
        batches = ray_batches(runs, int(ray.cluster_resources().get("CPU", 1)))
        pending = {task.remote(batch): batch for batch in batches}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            batch = pending.pop(done[0])
            try:
                outputs = ray.get(done[0])
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause if isinstance(getattr(exc, "cause", None), DcbenchError) else None
                if cause is not None:
                    raise cause from None
                raise
            for run, output in zip(batch, outputs):
                check_network(run, output)
                if output.run_id != run.run_id:  # resolved on another machine
                    raise ResultsError(f"run {run.run_id} came out as {output.run_id}: the worker resolved the "
                                       "specs differently (is the same dcbench installed everywhere?)")
                write_run(out_dir, run.run_id, output.tables, output.provenance)
                advance(run)
    finally:
        if started_here:
            ray.shutdown()


def check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """Refuse a ``host:port`` (or ``ray://host:port``) where nothing listens (Ray would retry for minutes)."""
    if address is None or address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")  # an IPv6 address in brackets
    if not host or not (port.isascii() and port.isdigit()):
        raise DcbenchError(f"--address {address!r} is not HOST:PORT (or ray://HOST:PORT); give the address "
                           "`ray start --head` printed")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise DcbenchError(f"no Ray cluster answers at {address} ({exc.strerror or describe(exc)}); start one "
                           "with `ray start --head`, or leave out --address to start a local one") from None


def combine(runs: Sequence[PlannedRun], out_dir: Path, provenance: dict[str, Any]) -> Any:
    """Write ``out_dir/summary.parquet`` from the plan's run folders, in plan order."""
    import pyarrow as pa

    tables = [read_table(out_dir / run.run_id / SUMMARY) for run in runs]
    combined = pa.concat_tables([t.replace_schema_metadata(None) for t in tables], promote_options="default")
    scenario = pa.array([run.scenario for run in runs], type=pa.string())
    combined = combined.add_column(1, "scenario", scenario)
    combined = combined.replace_schema_metadata({b"dcbench": json.dumps(provenance, sort_keys=True).encode()})
    write_table_atomic(out_dir / SUMMARY, combined)
    return combined


def check_ranked_by(suite: Suite, combined: Any, out_dir: Path) -> None:
    """Refuse a suite whose primary metric is no column of its runs' summary (known only once they ran)."""
    metrics = [c for c in combined.column_names if c not in SUMMARY_COLUMNS]
    if suite.primary_metric in metrics:
        return
    close = difflib.get_close_matches(suite.primary_metric, metrics, n=1)
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    raise PluginError(f"suite {suite.name!r} (plugin {suite.plugin or '?'}) is ranked by {suite.primary_metric!r}, "
                      f"which is no metric column of its runs{guess}; fix its primary_metric to one of the metric "
                      f"columns of '{out_dir / SUMMARY}' (the runs are kept)")


def previous_sweep(out_dir: Path, suite: Suite, allocators: Sequence[str], registry: Any) -> list[str]:
    """Refuse an ``out_dir`` whose summary this sweep must not replace; return what an earlier sweep there had that
    this one leaves out (allocators, scenarios)."""
    if (out_dir / "submission.json").exists():
        raise ResultsError(f"'{out_dir}' is a leaderboard submission; give the sweep its own --out "
                           "(default results/<suite>)")
    summary = out_dir / SUMMARY
    if not summary.exists():
        return []
    try:
        table = read_table(summary)
    except ResultsError:
        if not starts_with(summary, b"PAR1"):  # a truncated Parquet file still starts as one
            raise ResultsError(f"'{summary}' is not a dcbench sweep's summary (it is not a Parquet file); give "
                               "this sweep another --out, or remove that file") from None
        return []  # damaged past reading (a truncated copy, say): rebuilt from the run folders, as `report` advises
    problem = sweep_provenance_problem(table)
    if problem is not None:
        raise ResultsError(f"'{summary}' is not a dcbench sweep's summary ({problem}); give this sweep another "
                           "--out, or remove that file")
    earlier = provenance_of(table)
    adhoc = suite.name == ADHOC
    if is_adhoc(earlier) and not adhoc:
        raise ResultsError(f"'{out_dir}' holds an ad-hoc sweep (of -t specs); give {suite.name!r} its own folder "
                           f"with --out (default results/{suite.name})")
    if not is_adhoc(earlier) and (earlier["suite"] != suite.name or adhoc):
        this = "this ad-hoc sweep" if adhoc else repr(suite.name)
        default = ADHOC_OUT if adhoc else suite.name
        raise ResultsError(f"'{out_dir}' holds a sweep of suite {earlier['suite']!r}; give {this} its own "
                           f"folder with --out (default results/{default})")
    kept = {resolved_allocator(registry, a) for a in allocators}
    left_out = [a for a in earlier.get("allocators", []) if resolved_allocator(registry, a) not in kept]
    if is_adhoc(earlier):
        names = {scenario.label for scenario in suite.scenarios}
        left_out += [f"scenario {s.get('name')!r}" for s in earlier["scenarios"] if s.get("name") not in names]
    return left_out


def resolved_allocator(registry: Any, allocator: str) -> str:
    """An allocator spec with every parameter; as given where it no longer resolves."""
    try:
        spec = Spec.parse(allocator)
        return resolved_spec(spec.name, bind(spec.name, registry.get("allocator", spec.name).params, spec))
    except DcbenchError:
        return allocator


def pending(runs: Sequence[PlannedRun], out_dir: Path) -> list[PlannedRun]:
    return [run for run in runs if not is_complete(out_dir / run.run_id)]
