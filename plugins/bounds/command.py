"""``dcbench bound``: the bound of every scenario and seed of a suite, or of one ad-hoc scenario, in a Parquet table
that keeps the rows already computed for the same inputs (so a second call solves nothing)."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

import click
import numpy as np

import dcbench
from dcbench import SpecError
from dcbench.harness import Runner, get_registry, measuring, write_table_atomic

COLUMNS = ("scenario", "seed", "bound", "metric", "accepted", "offered", "status", "relaxation", "seconds",
           "topology", "workload", "requests", "key")


def bound_key(topology: str, workload: str, requests: int, seed: int, relaxation: str, kind: str = "pool") -> str:
    """What a bound depends on, hashed as run ids are: the resolved scenario, the seed, the model and dcbench's version.

    Args:
        topology: The resolved topology spec.
        workload: The resolved workload spec.
        requests: Requests per episode, the warm-up included.
        seed: The seed.
        relaxation: "lp" or "milp".
        kind: The requests' kind, "pool" or "job": which model bounds them.
    Returns:
        16 hex digits."""
    from dcbench.plugins.bounds import jobs, pool

    model = jobs.MODEL if kind == "job" else pool.MODEL
    text = "\n".join(map(str, (topology, workload, requests, seed, relaxation, model, dcbench.__version__)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def bound_rows(scenarios: list[tuple[str, str, str | None, int | None, tuple[int, ...]]], relaxation: str,
               known: dict[str, dict], say=lambda line: None, measured: bool = False) -> list[dict]:
    """One row per scenario and seed: solved, or taken from ``known`` where its key is there.

    Args:
        scenarios: ``(name, topology, workload, requests, seeds)`` each.
        relaxation: "lp" or "milp".
        known: Rows already computed, by key.
        say: Called with a line per row.
        measured: Whether ``requests`` counts the measured requests after the warm-up (else all of them).
    Returns:
        The rows (`COLUMNS`).
    Raises:
        SpecError: A scenario the bound does not cover (jobs that wait, servers on more than one link)."""
    runner = Runner()
    rows = []
    solved: dict[str, object] = {}  # by instance digest: scenarios the model cannot tell apart are solved once
    for name, topology, workload, requests, seeds in scenarios:
        plan = runner.resolve_scenario(topology, workload, None if measured else requests)
        if measured:  # -n: measured requests after the warm-up, as `dcbench run` reads it
            plan, _ = measuring(plan, requests, f"-t {topology}")
        kind = plan.workload_model.kind
        for seed in seeds:
            key = bound_key(plan.topology, plan.workload, plan.requests, seed, relaxation, kind)
            if key in known:
                rows.append(known[key])
                continue
            workload_rng = np.random.default_rng(seed).spawn(2)[0]  # the run's workload stream (run_plan)
            sequence = plan.workload_model.generate(plan.network.private_copy(), plan.requests, workload_rng)
            started = time.perf_counter()
            result = solve(plan.network, sequence, relaxation, solved)
            rows.append({"scenario": name, "seed": seed, "bound": result.ratio, "metric": "acceptance_ratio",
                         "accepted": result.accepted, "offered": result.offered, "status": result.status,
                         "relaxation": result.relaxation, "seconds": round(time.perf_counter() - started, 3),
                         "topology": plan.topology, "workload": plan.workload, "requests": plan.requests,
                         "key": key})
            say(f"{name} seed={seed}: bound {result.ratio:.4f} ({result.accepted}/{result.offered}, "
                f"{result.status})")
    return rows


def solve(network, sequence, relaxation: str, solved: dict):
    """The bound of one sequence: the job model for jobs, the pool model for pools; taken from ``solved`` (by the
    instance's digest) where an identical instance was solved, and kept there."""
    if sequence.kind == "job":
        from dcbench.plugins.bounds.jobs import job_bound as bound_of
        from dcbench.plugins.bounds.jobs import job_instance as instance_of
    else:
        from dcbench.plugins.bounds.pool import pool_bound as bound_of
        from dcbench.plugins.bounds.pool import pool_instance as instance_of
    instance = instance_of(network, sequence)
    digest = instance_digest(instance, relaxation)
    if digest not in solved:
        solved[digest] = bound_of(instance, relaxation)
    return solved[digest]


def instance_digest(instance, relaxation: str) -> str:
    """Every field of a bound's instance, hashed with the relaxation: what the model reads, and only that (nara2022's
    four oversubscriptions at one channel count give one instance: the tiers above the servers' links are not in it)."""
    digest = hashlib.sha256(relaxation.encode())
    for field in dataclasses.fields(instance):
        value = getattr(instance, field.name)
        digest.update(field.name.encode())
        if isinstance(value, np.ndarray):
            digest.update(f"{value.dtype.str}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
        else:
            digest.update(repr(value).encode())
    return digest.hexdigest()


@click.command("bound")
@click.option("-s", "--suite", help="Bound every scenario and seed of this suite.")
@click.option("-t", "--topology", help="An ad-hoc scenario's topology spec (instead of -s).")
@click.option("-w", "--workload", help="Its workload spec (default: the topology's own).")
@click.option("-n", "--requests", type=int,
              help="Its measured requests per episode, after the warm-up (default: the workload's).")
@click.option("--seeds", type=click.IntRange(1, 10_000), default=1, show_default=True,
              help="Its seeds 0..K-1.")
@click.option("--relaxation", type=click.Choice(["lp", "milp"]), default="lp", show_default=True,
              help="The model's linear relaxation, or the integer model (tighter, slower).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("bounds"), show_default=True,
              help="Writes DIR/bounds.parquet, keeping the rows already there for the same inputs.")
def bound(suite, topology, workload, requests, seeds, relaxation, out):
    """Upper-bound the acceptance ratio any allocator reaches on each scenario and seed (docs/bounds.md)."""
    if (suite is None) == (topology is None):
        raise SpecError("give a suite with -s, or a scenario with -t (and -w, -n, --seeds)")
    if suite is not None:
        found = get_registry().get("suite", suite)
        scenarios = [(s.name, s.topology, s.workload, s.requests, tuple(s.seeds)) for s in found.scenarios]
    else:
        scenarios = [(topology, topology, workload, requests, tuple(range(seeds)))]
    path = out / "bounds.parquet"
    known = {}
    if path.exists():
        import pyarrow.parquet as pq

        known = {row["key"]: row for row in pq.read_table(path).to_pylist()}
    rows = bound_rows(scenarios, relaxation, known, say=click.echo, measured=suite is None)
    out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(path, {column: [row[column] for row in rows] for column in COLUMNS},
                       {"dcbench_version": dcbench.__version__, "suite": suite, "relaxation": relaxation})
    click.echo(f"wrote {path} ({len(rows)} rows)")
