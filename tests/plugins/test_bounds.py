"""The pool bound (docs/bounds.md): its pair counts against the checker's rule, its model against brute force on
tiny instances and against every allocator the engine runs there, and the committed bounds against every committed
run on the same scenario and seed."""

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from dcbench import RequestSequence, simulate
from dcbench.model.allocation import required_pairs
from dcbench.plugins.bounds.pool import min_pairs, pool_bound, pool_instance
from tests.conftest import Scripted, tiered

ROOT = Path(__file__).resolve().parents[2]
BOUNDS = ROOT / "leaderboard" / "bounds"


@pytest.mark.parametrize("rule", ["all", "cpu", "reference"])
def test_min_pairs_is_the_fewest_any_server_order_needs(rule):
    for cpu_servers, servers in itertools.product(range(0, 5), range(1, 6)):
        fewest = None
        for k in range(max(cpu_servers, servers, 1), 7):  # more servers than needed: never fewer pairs
            for gives_cpu in itertools.product([True, False], repeat=k):
                if sum(gives_cpu) < cpu_servers or (cpu_servers == 0 and any(gives_cpu)):
                    continue
                pairs = len(required_pairs(rule, np.asarray(gives_cpu, dtype=float)))
                fewest = pairs if fewest is None else min(fewest, pairs)
        assert min_pairs(rule, cpu_servers, servers)[0] == fewest, (cpu_servers, servers)


def tiny(seed, wait=True, pairs="all", n=7):
    network = tiered("tiered:2,1x1,pods=1,racks=2,servers=2")
    from dcbench.plugins.workloads.uniform import UniformWorkload

    workload = UniformWorkload(max_cpu=40, max_mem=24, hold=4, wait=wait, pairs=pairs)
    return network, workload.generate(network, n, np.random.default_rng(seed))


def best_simulated(network, sequence):
    best = 0
    for mask in itertools.product([True, False], repeat=len(sequence)):
        for last in (False, True):
            tables = simulate(network, sequence, Scripted(mask, last), np.random.default_rng(0))
            best = max(best, int((tables.requests["outcome"] == "accepted").sum()))
    return best


def brute_force_model(instance):
    """The model's optimum without waits, by enumeration: the largest set whose held requests fit at every offer."""
    n = len(instance.demand)
    arrival = np.cumsum(instance.gaps)
    best = 0
    for chosen in itertools.product([False, True], repeat=n):
        held_ok = True
        for i in range(n):
            held = [j for j in range(i) if chosen[j] and arrival[j] + instance.holding[j] >= arrival[i]]
            use = instance.usage[held].sum(axis=0) + (instance.usage[i] if chosen[i] else 0)
            if (use > instance.capacity + 1e-9).any():
                held_ok = False
                break
        if held_ok:
            best = max(best, sum(chosen))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_the_integer_model_equals_brute_force_and_the_relaxation_is_never_below(seed):
    network, sequence = tiny(seed, wait=False)
    instance = pool_instance(network, sequence)
    exact = pool_bound(instance, "milp")
    assert exact.status == "optimal" and exact.accepted == brute_force_model(instance)
    assert pool_bound(instance, "lp").accepted >= exact.accepted


@pytest.mark.parametrize("seed,wait,pairs", [(0, True, "all"), (1, True, "reference"), (2, False, "all"),
                                             (3, False, "reference"), (4, True, "all")])
def test_no_allocator_the_engine_runs_beats_the_bound(seed, wait, pairs):
    network, sequence = tiny(seed, wait, pairs)
    instance = pool_instance(network, sequence)
    milp, lp = pool_bound(instance, "milp"), pool_bound(instance, "lp")
    assert lp.accepted >= milp.accepted >= best_simulated(network, sequence)


@pytest.mark.parametrize("seed,within", [(0, False), (1, True), (2, False), (3, True)])
def test_without_waits_the_compact_model_has_the_full_models_optimum(seed, within, monkeypatch):
    """The compact model (held sets known, dominated offers left out) solves to what the full one does."""
    from dcbench.plugins.bounds import pool

    network, sequence = tiny(seed, wait=False, n=9)
    sequence = dataclasses.replace(sequence, departures_within=within)
    instance = pool_instance(network, sequence)
    compact = [pool_bound(instance, relaxation).accepted for relaxation in ("lp", "milp")]
    assert isinstance(pool.model_of(instance), pool._NoWaitModel)
    rows = pool.model_of(instance).constraints()[3]
    monkeypatch.setattr(pool, "model_of", pool._Model)
    assert compact == [pool_bound(instance, relaxation).accepted for relaxation in ("lp", "milp")]
    assert len(rows) < len(pool._Model(instance).constraints()[3])


def test_warm_up_requests_count_for_nothing_but_still_hold_capacity():
    """Measured requests only are counted; a warm-up request the bound accepts still holds what it uses."""
    network = tiered("tiered:1,1x1,pods=1,racks=1,servers=2")
    demand = np.array([[20.0, 1.0], [20.0, 1.0], [20.0, 1.0]])
    sequence = RequestSequence(kind="pool", gaps=np.ones(3), holding=np.full(3, 5.0), demand=demand,
                               connectivity="all", measured=np.array([False, True, True]))
    bound = pool_bound(pool_instance(network, sequence), "milp")
    assert (bound.accepted, bound.offered) == (1, 2)  # the warm-up one is better refused, and one more fits


def test_without_waits_the_channels_bind():
    """Where no request waits, two requests that each need every channel of a server cannot both be held."""
    network = tiered("tiered:1,1x1,pods=1,racks=1,servers=2")  # two servers, one channel each
    sequence = RequestSequence(kind="pool", gaps=np.ones(3), holding=np.full(3, 5.0),
                               demand=np.array([[20.0, 1.0], [20.0, 1.0], [1.0, 1.0]]), connectivity="all")
    bound = pool_bound(pool_instance(network, sequence), "milp")
    assert (bound.accepted, bound.offered) == (2, 3)  # a two-server request holds both links; the third fits


def committed_bounds():
    rows = {}
    for path in sorted(BOUNDS.glob("*/bounds.parquet")):
        for row in pq.read_table(path).to_pylist():
            rows[(path.parent.name, row["scenario"], row["seed"])] = row
    return rows


def test_no_committed_run_beats_its_committed_bound():
    from dcbench.publishing.leaderboard import load_submissions

    bounds = committed_bounds()
    assert bounds, "no committed bounds under leaderboard/bounds/"
    checked = 0
    for submission in load_submissions(ROOT / "leaderboard"):
        for row in submission.rows:
            key = (submission.suite, row["scenario"], row["seed"])
            if key in bounds:
                assert row["acceptance_ratio"] <= bounds[key]["bound"] + 1e-12, (key, row["allocator"])
                checked += 1
    assert checked >= 60 * 5  # nara2022: 12 scenarios × 5 seeds, each run by several allocators


@pytest.mark.slow
def test_the_committed_bounds_are_what_the_command_computes(tmp_path):
    from click.testing import CliRunner

    from dcbench.commands import cli

    committed = {(s, seed): row for (suite, s, seed), row in committed_bounds().items() if suite == "nara2022"}
    result = CliRunner().invoke(cli, ["bound", "-t", "tiered:8,1x16", "-w", "uniform:pairs=reference", "-n", "128",
                                      "--seeds", "2", "--relaxation", "milp", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for row in pq.read_table(tmp_path / "bounds.parquet").to_pylist():
        assert row["bound"] == committed[("8-1x16", row["seed"])]["bound"]


def test_the_command_keeps_the_rows_it_has_and_bounds_jobs_with_their_own_model(tmp_path):
    from click.testing import CliRunner

    from dcbench.commands import cli

    args = ["bound", "-t", "tiered:2,1x1,pods=1,racks=2,servers=2", "-w", "uniform:max_cpu=40,max_mem=24,hold=4",
            "-n", "6", "--seeds", "2", "--out", str(tmp_path)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    written = pq.read_table(tmp_path / "bounds.parquet").to_pylist()
    assert [row["seed"] for row in written] == [0, 1] and all(0 < row["bound"] <= 1 for row in written)
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0 and "seed=" not in again.output  # nothing solved again
    assert pq.read_table(tmp_path / "bounds.parquet").to_pylist() == written  # the times too: the same rows
    small_jobs = "vmjobs:load=6,min_vms=1,max_vms=4,warmup=1"
    jobs = CliRunner().invoke(cli, ["bound", "-t", "ocs:2,servers=2", "-w", small_jobs, "-n", "6",
                                    "--out", str(tmp_path / "jobs")])
    assert jobs.exit_code == 0, jobs.output
    (row,) = pq.read_table(tmp_path / "jobs" / "bounds.parquet").to_pylist()
    assert row["offered"] == 6 and 0 < row["bound"] <= 1 and row["key"] not in {r["key"] for r in written}


def test_the_committed_openb2023_bounds_are_the_docs_means():
    """docs/bounds.md quotes their means per scenario: 0.997 at load 8 and 0.968 at load 16, every seed solved."""
    rows = [row for (suite, _, _), row in committed_bounds().items() if suite == "openb2023"]
    assert len(rows) == 10 and all(row["status"] == "optimal" and row["offered"] == 2000 for row in rows)
    means = {s: np.mean([row["bound"] for row in rows if row["scenario"] == s]) for s in {r["scenario"] for r in rows}}
    assert {s: round(float(m), 3) for s, m in means.items()} == {"tiered-load8": 0.997, "tiered-load16": 0.968}


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "traces" / "openb2023-default.csv").is_file(),
                    reason="needs traces/openb2023-default.csv (dcbench data convert alibaba-gpu-2023)")
def test_the_committed_openb2023_bounds_are_what_the_command_computes(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from dcbench.commands import cli

    monkeypatch.chdir(ROOT)  # the suite reads the trace relative to the working directory
    result = CliRunner().invoke(cli, ["bound", "-s", "openb2023", "--relaxation", "milp", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    committed = {(s, seed): row for (suite, s, seed), row in committed_bounds().items() if suite == "openb2023"}
    for row in pq.read_table(tmp_path / "bounds.parquet").to_pylist():
        assert row["accepted"] == committed[(row["scenario"], row["seed"])]["accepted"]


class Offline(Scripted):
    """Accepts request i only where ``mask[i]``, adding the server that gives the most of what it still needs."""

    def pick(self, builder, allowed):
        gives = np.minimum(builder.free_resources[allowed], builder.remaining).sum(axis=1)
        return allowed[int(np.argmax(gives))]


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "traces" / "openb2023-default.csv").is_file(),
                    reason="needs traces/openb2023-default.csv (dcbench data convert alibaba-gpu-2023)")
@pytest.mark.parametrize("scenario", ["tiered-load8", "tiered-load16"])
def test_on_openb2023_a_policy_told_the_models_choice_reaches_the_committed_bound(scenario, monkeypatch):
    """docs/bounds.md: seed 0's bound is attained, so the gap to the policies is what knowing the future is worth."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    from dcbench.harness import Runner, get_registry
    from dcbench.plugins.bounds.pool import model_of

    monkeypatch.chdir(ROOT)
    (found,) = [s for s in get_registry().get("suite", "openb2023").scenarios if s.label == scenario]
    plan = Runner().resolve_scenario(found.topology, found.workload, found.requests)
    sequence = plan.workload_model.generate(plan.network.private_copy(), plan.requests,
                                            np.random.default_rng(0).spawn(2)[0])
    model = model_of(pool_instance(plan.network, sequence))
    rows, cols, vals, lower, upper = model.constraints()
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lower), model.n)).tocsr()
    solved = milp(-model.objective, integrality=model.integrality, bounds=Bounds(model.lower, model.upper),
                  constraints=LinearConstraint(matrix, lower, upper))
    tables = simulate(plan.network.private_copy(), sequence, Offline(solved.x > 0.5), np.random.default_rng(0))
    outcome, measured = np.asarray(tables.requests["outcome"]), np.asarray(tables.requests["measured"])
    accepted = int(((outcome == "accepted") & measured).sum())
    assert accepted == committed_bounds()[("openb2023", scenario, 0)]["accepted"]


def test_scenarios_whose_instances_the_model_cannot_tell_apart_are_solved_once(monkeypatch):
    from dcbench.plugins.bounds import command, pool

    solved = []
    real = pool.pool_bound
    monkeypatch.setattr(pool, "pool_bound", lambda instance, relaxation: solved.append(instance) or real(instance,
                                                                                                         relaxation))
    workload = "uniform:max_cpu=40,max_mem=24,hold=4"
    scenarios = [(ratio, f"tiered:2,{ratio},pods=1,racks=2,servers=2", workload, 6, (0, 1)) for ratio in ("1x1", "1x4")]
    rows = command.bound_rows(scenarios, "lp", {})
    assert len(solved) == 2  # a solve per seed: the tiers above the servers' links are not in the model
    assert [row["accepted"] for row in rows[:2]] == [row["accepted"] for row in rows[2:]]
    assert len({row["key"] for row in rows}) == 4  # each row still under its own scenario's key
    other = [("wider", "tiered:4,1x1,pods=1,racks=2,servers=2", workload, 6, (0,))]
    command.bound_rows(scenarios[:1] + other, "lp", {})
    assert len(solved) == 2 + 3  # more channels: another instance


def bound_attained():
    from tests.conftest import load_script

    return load_script(ROOT / "benchmarks" / "bound_attained.py")


def test_a_memory_only_first_server_spares_the_channels_the_reference_rule_would_take():
    """Four servers of one channel each; the first request takes one server's CPU. The second needs one CPU server
    and 40 memory: placed after a server with no CPU left, its third server pairs with none, so it fits, where
    best fit's CPU server, paired with both others, runs out of channels."""
    from dcbench.harness import get_registry

    network = tiered("tiered:1,1x1,pods=1,racks=1,servers=4")
    sequence = RequestSequence(kind="pool", gaps=np.ones(2), holding=np.full(2, 10.0),
                               demand=np.array([[16.0, 1.0], [16.0, 40.0]]), connectivity="reference")
    script = bound_attained()
    for picker, expected in [(script.MemoryFirst(), ["accepted", "accepted"]),
                             (get_registry().build("allocator", "bestfit").obj, ["accepted", "rejected"])]:
        tables = simulate(network, sequence, picker, np.random.default_rng(0))
        assert tables.requests["outcome"].tolist() == expected
        assert "invalid_allocation" not in tables.requests["reason"].tolist()


def test_rack_first_keeps_a_request_in_the_one_rack_that_holds_it_where_memory_first_spreads_it():
    """Two racks of two servers; the first request takes half a server of rack 0. The second needs two whole
    servers: only rack 1 has them, so rack first keeps it there, where memory first takes the most CPU anywhere."""
    network = tiered("tiered:4,1x1,pods=1,racks=2,servers=2")
    sequence = RequestSequence(kind="pool", gaps=np.ones(2), holding=np.full(2, 10.0),
                               demand=np.array([[8.0, 8.0], [32.0, 32.0]]), connectivity="reference")
    script = bound_attained()
    for picker, spread in [(script.RackFirst(), "rack"), (script.MemoryFirst(), "pod")]:
        tables = simulate(network, sequence, picker, np.random.default_rng(0))
        assert tables.requests["outcome"].tolist() == ["accepted", "accepted"]
        assert tables.requests["spread"].tolist() == ["server", spread]
