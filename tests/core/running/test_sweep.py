import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench import ResultsError, SpecError, UnknownPluginError
from dcbench.commands import cli
from dcbench.running.sweep import split_allocators, split_specs


def test_split_allocators():
    assert split_allocators(["tetris,nalb", "tetris:penalty=0.5,scale=5"]) == [
        "tetris", "nalb", "tetris:penalty=0.5,scale=5"]
    assert split_allocators(["ccf:reconfigure=no,ccf,jcb", "nalb:route=reference,queue=lifo,tetris"]) == [
        "ccf:reconfigure=no", "ccf", "jcb", "nalb:route=reference,queue=lifo", "tetris"]
    with pytest.raises(SpecError, match="'tetris,,nalb' has an empty spec between commas; remove the extra comma"):
        split_allocators(["tetris,,nalb"])
    with pytest.raises(SpecError):
        split_allocators(["penalty=0.5,tetris"])  # a keyword with no spec before it


def test_every_repeatable_flag_takes_a_comma_list_by_the_allocators_rule():
    # a positional argument (no name: 1x4, 32) continues its spec, as a KEY=VALUE one does
    assert split_specs(["tiered:32,1x4,pods=8,tiered:16,1x8", "ocs:4,servers=4"], "--topology", "x") == [
        "tiered:32,1x4,pods=8", "tiered:16,1x8", "ocs:4,servers=4"]
    assert split_specs(["acceptance,busy", "spread"], "--metric", "x") == ["acceptance", "busy", "spread"]
    with pytest.raises(SpecError, match="'1x4' in --topology '1x4,tiered:8' is an argument that follows no"):
        split_specs(["1x4,tiered:8"], "--topology", "x")
    with pytest.raises(SpecError, match="give at least one, e.g. --metric locality"):
        split_specs([], "--metric", "locality")


def test_a_sweep_takes_its_topologies_as_a_comma_list(tmp_path):
    result = CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4,tiered:8,1x8", "-w", "uniform", "-n", "8",
                                      "--seeds", "1", "-a", "random", "-q", "-j", "1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert pq.read_table(tmp_path / "summary.parquet").column("scenario").to_pylist() == [
        "tiered:8,1x4", "tiered:8,1x8"]


def test_a_narrow_ranking_table_keeps_every_spec_apart():
    import io

    from rich.console import Console

    from dcbench.commands.sweep import print_ranking
    from dcbench.registry import get_registry

    specs = ["acme_allocators.firstfit:stay_in_rack=no", "acme_allocators.firstfit:stay_in_rack=yes",
             "tetris:penalty=0.5", "nalb"]
    rows = [{"scenario": "tiered:32,1x4", "allocator": spec, "acceptance_ratio": 0.5} for spec in specs]
    console = Console(width=60, file=io.StringIO(), color_system=None)
    print_ranking(rows, "acceptance_ratio", True, get_registry(), console)
    lines = console.file.getvalue().splitlines()
    header = lines[2:lines.index(next(line for line in lines if line.startswith("┡")))]
    cells = [line.strip("┃").split("┃") for line in header]
    names = ["".join(cell[column].strip() for cell in cells) for column in range(len(cells[0]))]
    assert names == ["scenario", *specs]  # whole: labels() shows every option where variants compete


def test_a_sweep_writes_every_run_and_one_combined_summary(tmp_path):
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "tetris,random", "--out", str(tmp_path),
                                      "--jobs", "2", "-q"])
    assert result.exit_code == 0, result.output
    summary = pq.read_table(tmp_path / "summary.parquet").to_pylist()
    assert len(summary) == 12 * 2 * 5
    assert len({row["run_id"] for row in summary}) == 120
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 120
    # every allocator saw the same requests: same seed and scenario, same run-independent columns
    by_key = {}
    for row in summary:
        by_key.setdefault((row["scenario"], row["seed"]), []).append(row)
    for rows in by_key.values():
        assert len({r["requests"] for r in rows}) == 1 and len(rows) == 2
        demands = [pq.read_table(tmp_path / r["run_id"] / "requests.parquet").column("demand_cpu").to_numpy()
                   for r in rows]
        assert np.array_equal(demands[0], demands[1])
    assert {row["workload"].split(":")[0] for row in summary} == {"uniform"}
    assert all("pairs=reference" in row["workload"] for row in summary)


def test_a_folder_holding_another_suites_sweep_is_refused_and_a_narrower_sweep_says_what_it_drops(tmp_path):
    runner = CliRunner()
    assert runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", "random,tetris", "--out", str(tmp_path),
                               "-q"]).exit_code == 0
    summary = (tmp_path / "summary.parquet").read_bytes()
    other = runner.invoke(cli, ["sweep", "-s", "odcn2025", "-a", "jcb", "--out", str(tmp_path), "-q"])
    assert other.exit_code == 2
    assert "holds a sweep of suite 'nara2022'; give 'odcn2025' its own folder with --out" in other.output
    assert (tmp_path / "summary.parquet").read_bytes() == summary
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 120  # nothing of odcn2025 was run
    spelt_out = runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "-a", "tetris:scale=10,penalty=0.9",
                                    "--out", str(tmp_path), "-q"])  # the same two allocators, written otherwise
    assert spelt_out.exit_code == 0 and "no longer lists" not in spelt_out.output
    narrower = runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(tmp_path), "-q"])
    assert narrower.exit_code == 0 and "Note: the summary no longer lists tetris:scale=10,penalty=0.9 " \
        in narrower.output
    assert {row["allocator"] for row in pq.read_table(tmp_path / "summary.parquet").to_pylist()} == {"random"}
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 120  # tetris's runs are kept


def test_an_address_without_ray_is_refused(tmp_path):
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--address", "head:6379",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output == (
        "Error: --address is the Ray cluster's, for --executor ray; give both, or neither\n")


def test_unknown_suite(tmp_path):
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2021", "-a", "tetris", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "did you mean 'nara2022'" in result.output


def test_a_killed_sweep_resumes_without_duplicates_or_gaps(tmp_path):
    out = tmp_path / "sweep"
    command = [sys.executable, "-m", "dcbench", "sweep", "-s", "nara2022", "-a", "tetris,nalb,nulb,random",
               "--out", str(out), "--jobs", "1", "-q"]
    process = subprocess.Popen(command, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        done = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")] if out.exists() else []
        if len(done) >= 20:
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished_before = {p.name: (p / "summary.parquet").stat().st_mtime_ns
                       for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert 20 <= len(finished_before) < 240, "the sweep should have been killed mid-way"
    assert not (out / "summary.parquet").exists()

    rerun = subprocess.run(command, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"({len(finished_before)} already done)" in rerun.stdout
    rows = pq.read_table(out / "summary.parquet").to_pylist()
    assert len(rows) == 240 and len({r["run_id"] for r in rows}) == 240
    for name, mtime in finished_before.items():  # finished runs were skipped, not redone
        assert (out / name / "summary.parquet").stat().st_mtime_ns == mtime
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # staging of the killed run removed


def small_jobs(*requests_and_seeds):
    """Sweep jobs of `random` on tiered:8,1x4, one per (requests, seed)."""
    from dcbench.running import sweep as sweeps

    runner = sweeps.Runner()
    return [sweeps.PlannedRun("small", "random", "tiered:8,1x4", None, requests, seed,
                              runner.resolve("random", "tiered:8,1x4", None, requests).run_id(seed))
            for requests, seed in requests_and_seeds]


def test_parallel_workers_start_with_one_math_thread_and_the_caller_keeps_its_settings(tmp_path, monkeypatch):
    """Each worker's BLAS reads these when it starts: a worker started with
    the caller's environment runs a thread per core and spins against the
    other workers (the pool starts its workers at the first submissions,
    after the settings had been put back: 0.4.0's odcn2025 sweep took 35
    minutes, not 10)."""
    import concurrent.futures

    from dcbench.running import sweep as sweeps
    from dcbench.running import workers

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    submit = concurrent.futures.ProcessPoolExecutor.submit
    probes = []

    def submit_and_ask_a_worker(pool, *args, **kwargs):
        future = submit(pool, *args, **kwargs)
        # What a worker of the pool has in its environment, as its BLAS read it when the worker started.
        probes.append({name: submit(pool, os.getenv, name) for name in workers.MATH_THREAD_VARIABLES})
        return future

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", submit_and_ask_a_worker)
    sweeps.run_local(small_jobs((8, 0), (8, 1), (8, 2)), tmp_path, 2, lambda job: None)
    assert len(probes) == 3
    for probe in probes:  # one thread, where the user set no number of their own
        assert {name: answer.result() for name, answer in probe.items()} == {
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "3"}
    assert "OMP_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"


def test_parallel_workers_get_the_longest_runs_first(tmp_path, monkeypatch):
    import concurrent.futures

    from dcbench.running import sweep as sweeps

    submit = concurrent.futures.ProcessPoolExecutor.submit
    submitted = []

    def submit_and_note(pool, function, job, *args, **kwargs):
        submitted.append((job.requests, job.seed))
        return submit(pool, function, job, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", submit_and_note)
    jobs = small_jobs((8, 0), (30, 0), (8, 1), (30, 1), (16, 0))
    sweeps.run_local(jobs, tmp_path, 2, lambda job: None)
    assert submitted == [(30, 0), (30, 1), (16, 0), (8, 0), (8, 1)]  # the plan's order among equals
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(job.run_id for job in jobs)


def contents(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def a_users_table(out):
    out.mkdir()
    pq.write_table(pa.table({"x": [1.0]}), out / "summary.parquet")
    return out


def a_single_run(out):
    assert CliRunner().invoke(cli, ["run", "-a", "random", "-t", "tiered:8,1x4", "-n", "8", "--out", str(out),
                                    "-q"]).exit_code == 0
    (run,) = out.iterdir()
    return run


def a_table_with_provenance(stored):
    def make(out):
        out.mkdir()
        table = pa.table({"scenario": ["8-1x4"], "acceptance_ratio": [0.5]})
        pq.write_table(table.replace_schema_metadata({b"dcbench": stored}), out / "summary.parquet")
        return out
    return make


def a_csv_named_like_a_summary(out):
    out.mkdir()
    (out / "summary.parquet").write_text("scenario,acceptance_ratio\n8-1x4,0.5\n")
    return out


@pytest.mark.parametrize("make, problem", [
    (a_users_table, "it has no dcbench provenance"),
    (a_csv_named_like_a_summary, "it is not a Parquet file"),  # a truncated Parquet file is rebuilt (below)
    (a_single_run, "it is a single run's"),
    (a_table_with_provenance(b"{not json"), "its dcbench provenance is not JSON"),
    (a_table_with_provenance(b"[1, 2]"), "its dcbench provenance is a JSON list, not an object"),
])
def test_a_sweep_refuses_to_replace_a_summary_that_is_not_a_sweeps(tmp_path, make, problem):
    out = make(tmp_path / "out")
    before = contents(out)
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(out), "-j", "1", "-q"])
    assert result.exit_code == 2
    assert result.output == (f"Error: '{out / 'summary.parquet'}' is not a dcbench sweep's summary ({problem}); "
                             "give this sweep another --out, or remove that file\n")
    assert contents(out) == before  # nothing run, nothing replaced


def keep_metadata(change):
    return lambda path: pq.write_table(change(pq.read_table(path)).replace_schema_metadata(
        pq.read_table(path).schema.metadata), path)


@pytest.mark.parametrize("table, damage", [
    ("requests", lambda path: path.write_bytes(path.read_bytes()[:300])),  # truncated
    ("summary", keep_metadata(lambda t: pa.concat_tables([t, t]))),  # two rows
    ("summary", keep_metadata(lambda t: t.drop_columns(["seed"]))),  # a column lost
    ("summary", keep_metadata(lambda t: t.set_column(t.schema.get_field_index("acceptance_ratio"), "acceptance_ratio",
                                                     pa.array(["high"])))),  # text for a number
])
def test_a_run_whose_files_do_not_read_is_run_again_and_the_rest_are_kept(random_sweep, tmp_path, table, damage):
    out = tmp_path / "nara2022"
    shutil.copytree(random_sweep, out)
    summary = (out / "summary.parquet").read_bytes()
    damaged, *others = sorted(p for p in out.iterdir() if p.is_dir())
    rows = pq.read_table(damaged / "requests.parquet").num_rows
    damage(damaged / f"{table}.parquet")
    kept = {p.name: (p / "requests.parquet").stat().st_mtime_ns for p in others}
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(out), "-j", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert "(59 already done)" in result.output
    assert pq.read_table(damaged / "requests.parquet").num_rows == rows
    assert {p.name: (p / "requests.parquet").stat().st_mtime_ns for p in others} == kept
    assert (out / "summary.parquet").read_bytes() == summary  # the same run again: the same table
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("damage", [
    lambda path: path.write_bytes(path.read_bytes()[:500]),  # unreadable
    lambda path: pq.write_table(pq.read_table(path).drop_columns(["acceptance_ratio"]), path),  # provenance kept
])
def test_a_damaged_summary_of_the_same_suite_is_rebuilt_from_the_run_folders(random_sweep, tmp_path, damage):
    out = tmp_path / "nara2022"
    shutil.copytree(random_sweep, out)
    summary = (out / "summary.parquet").read_bytes()
    damage(out / "summary.parquet")
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(out), "-j", "1", "-q"])
    assert result.exit_code == 0 and "(60 already done)" in result.output, result.output
    assert (out / "summary.parquet").read_bytes() == summary


@pytest.mark.parametrize("allocators, fragment", [
    (["-a", "random,random"], "allocator 'random' is given twice (also as 'random', the same random)"),
    (["-a", "tetris", "-a", "tetris:penalty=0.9"], "allocator 'tetris:penalty=0.9' is given twice (also as 'tetris'"),
])
def test_an_allocator_given_twice_is_refused_before_anything_runs(tmp_path, allocators, fragment):
    # Its runs would count twice in every mean and interval of the report.
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", *allocators, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and fragment in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_worker_that_dies_is_one_line_and_the_finished_runs_stay(tmp_path, monkeypatch):
    import concurrent.futures

    import dcbench.running.workers

    def dies(futures):
        raise concurrent.futures.process.BrokenProcessPool("A process in the process pool was terminated abruptly")

    monkeypatch.setattr(dcbench.running.workers.concurrent.futures, "as_completed", dies)
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "-j", "2", "--out",
                                      str(tmp_path / "out"), "-q"])
    assert result.exit_code == 2, result.output
    assert result.output == ("Error: a worker process died (killed for want of memory?); the runs it finished are "
                             "kept: run the same sweep again to resume it, with fewer workers (-j)\n")


def with_plugin(tmp_path, monkeypatch, name, source):
    """Make the registry the command line uses hold the plugin ``name`` (module ``tp_<name>``, its ``source``)."""
    import importlib.metadata

    import dcbench.registry

    (tmp_path / f"tp_{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, f"tp_{name}", raising=False)  # another test's module of that name
    monkeypatch.setattr(dcbench.registry.manager, "_REGISTRY", dcbench.registry.create_registry(
        [importlib.metadata.EntryPoint(name, f"tp_{name}", "dcbench")]))


TYPO_SUITE = '''
from dcbench import Scenario, Suite, hookimpl

@hookimpl
def register_suites(register):
    register(Suite("typo", (Scenario("tiered:8,1x4", requests=8, seeds=(0, 1)),), primary_metric="acceptance_ration"))
    register(Suite("text", (Scenario("tiered:8,1x4", requests=8, seeds=(0, 1)),), primary_metric="topology"))
'''


@pytest.mark.parametrize("suite, column, guess", [("typo", "acceptance_ration", " (did you mean 'acceptance_ratio'?)"),
                                                  ("text", "topology", "")])  # a column, but of text
def test_a_suite_ranked_by_a_column_its_runs_lack_is_one_line_and_keeps_the_runs(tmp_path, monkeypatch,
                                                                                  fresh_registry, suite, column, guess):
    with_plugin(tmp_path, monkeypatch, "typo", TYPO_SUITE)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["sweep", "-s", suite, "-a", "random", "--out", str(out), "-j", "1"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        f"Error: suite {suite!r} (plugin typo) is ranked by {column!r}, which is no metric column of its runs{guess}; "
        f"fix its primary_metric to one of the metric columns of '{out / 'summary.parquet'}' (the runs are kept)")
    assert len([p for p in out.iterdir() if p.is_dir()]) == 2


TWIN_SUITE = """
from dcbench import Scenario, Suite, hookimpl

@hookimpl
def register_suites(register):
    register(Suite("twins", (Scenario("tiered:8,1x4", requests=8), Scenario("tiered:8,1x4,pods=2", requests=8))))
    register(Suite("typos", (Scenario("tiered:8,1x4", requests=8), Scenario("tiered:8,1x5", requests=8))))
"""


def test_two_scenarios_that_are_the_same_runs_are_refused_before_anything_runs(tmp_path, monkeypatch,
                                                                               fresh_registry):
    with_plugin(tmp_path, monkeypatch, "twins", TWIN_SUITE)
    result = CliRunner().invoke(cli, ["sweep", "-s", "twins", "-a", "random", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output == ("Error: suite 'twins' (plugin twins) has scenarios 'tiered:8,1x4' and "
                             "'tiered:8,1x4,pods=2', which resolve to the same runs; they would count twice in "
                             "every mean: report it to the plugin's authors\n")
    assert not (tmp_path / "out").exists()


def test_a_suite_whose_scenario_does_not_resolve_says_which(tmp_path, monkeypatch, fresh_registry):
    with_plugin(tmp_path, monkeypatch, "twins", TWIN_SUITE)
    result = CliRunner().invoke(cli, ["sweep", "-s", "typos", "-a", "random", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith("Error: suite 'typos', scenario 'tiered:8,1x5': tiered: ratio='1x5' is not one of")
    assert not (tmp_path / "out").exists()


COUNTING_METRIC = '''
from dcbench import hookimpl

@hookimpl
def register_metrics(register):
    register("counting", lambda tables, network: {"counted": float(len(tables.requests["outcome"]))})
'''


def test_runs_in_this_process_use_the_plugins_loaded_now(tmp_path, monkeypatch, fresh_registry):
    from dcbench.registry import reset_registry
    from dcbench.running.workers import PlannedRun, run_in_worker

    with_plugin(tmp_path, monkeypatch, "counting", COUNTING_METRIC)
    job = PlannedRun("small", "random", "tiered:8,1x4", None, 8, 0, "", metrics=("counting",))
    assert run_in_worker(job).summary["counted"] == 8.0
    reset_registry()  # the plugin uninstalled, say: a sweep with -j 1 must not run with it still
    with pytest.raises(UnknownPluginError, match="unknown metric 'counting'"):
        run_in_worker(job)
    assert "counted" not in run_in_worker(dataclasses.replace(job, metrics=())).summary


BUSY_PLUGIN = '''
from dcbench import Column, Scenario, Suite, hookimpl

@hookimpl
def register_metrics(register):
    register("busy", busy, columns=[Column("busy_share", "share busy", "lower", headline=True,
                                           description="Requests accepted"),
                                    Column("idle_share", "share idle", "higher", description="Requests refused")])

def busy(tables, network):
    accepted = float((tables.requests["outcome"] == "accepted").mean())
    return {"busy_share": accepted, "idle_share": 1 - accepted}

@hookimpl
def register_suites(register):
    register(Suite("busy_suite", (Scenario("tiered:8,1x4", requests=8, seeds=(0, 1)),), metrics=("busy",),
                   primary_metric="busy_share", higher_is_better=False))
'''


def test_a_third_party_metric_runs_where_a_suite_or_an_option_asks_for_it_and_nowhere_else(tmp_path, monkeypatch):
    with_plugin(tmp_path, monkeypatch, "busy", BUSY_PLUGIN)
    runner = CliRunner()
    out = tmp_path / "busy"
    swept = runner.invoke(cli, ["sweep", "-s", "busy_suite", "-a", "random,tetris", "--out", str(out), "-q", "-j", "1"])
    assert swept.exit_code == 0, swept.output
    assert pq.read_table(out / "summary.parquet").column("busy_share").null_count == 0
    report = runner.invoke(cli, ["report", str(out)])
    assert report.exit_code == 0 and "#### Requests accepted" in report.stdout  # its declared description
    adhoc = ["sweep", "-t", "tiered:8,1x4", "-n", "8", "--seeds", "1", "-a", "tetris", "-q", "-j", "1", "--out"]
    assert runner.invoke(cli, [*adhoc, str(tmp_path / "plain")]).exit_code == 0
    assert "busy_share" not in pq.read_table(tmp_path / "plain" / "summary.parquet").column_names
    assert runner.invoke(cli, [*adhoc, str(tmp_path / "asked"), "-m", "acceptance,busy"]).exit_code == 0
    assert "busy_share" in pq.read_table(tmp_path / "asked" / "summary.parquet").column_names
    shown = runner.invoke(cli, ["run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "8", "-m", "spread,busy",
                                "--out", str(tmp_path / "runs")])
    assert shown.exit_code == 0 and "share busy ↓" in shown.stdout and "busy_share" in shown.stdout
    not_shown = runner.invoke(cli, ["run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "8",
                                    "--out", str(tmp_path / "runs")])
    assert not_shown.exit_code == 0 and "busy" not in not_shown.stdout
    unknown = runner.invoke(cli, ["run", "-a", "tetris", "-t", "tiered:8,1x4", "-m", "busy,bussy"])
    assert unknown.exit_code == 2 and "unknown metric 'bussy'" in unknown.output


def test_a_submission_is_ranked_as_it_was_submitted_where_its_plugin_is_not_installed(tmp_path, monkeypatch):
    import dcbench.registry
    from tests.conftest import installed_plugin

    installed_plugin(tmp_path / "plugins", monkeypatch, "busy", BUSY_PLUGIN)  # (the replay on submit loads it)
    runner = CliRunner()
    out, root = tmp_path / "busy", tmp_path / "board"
    swept = runner.invoke(cli, ["sweep", "-s", "busy_suite", "-a", "random,tetris", "--out", str(out), "-q", "-j", "1"])
    assert swept.exit_code == 0, swept.output
    submitted = runner.invoke(cli, ["leaderboard", "--root", str(root), "submit", str(out)])
    assert submitted.exit_code == 0, submitted.output
    (record,) = (json.loads(p.read_text()) for p in root.glob("submissions/*/submission.json"))
    assert record["ranked_by"] == {"metric": "busy_share", "higher_is_better": False}
    assert [c["name"] for c in record["columns"]][-2:] == ["busy_share", "idle_share"]
    assert runner.invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0
    with_plugin_page = (root / "README.md").read_text()
    with_plugin_table = (root / "tables" / "tp-busy.busy_suite-scenarios.csv").read_text()
    monkeypatch.setattr(dcbench.registry.manager, "_REGISTRY", dcbench.registry.create_registry([]))  # uninstalled
    rebuilt = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert rebuilt.exit_code == 0, rebuilt.output
    page = (root / "README.md").read_text()
    table = (root / "tables" / "tp-busy.busy_suite-scenarios.csv").read_text()
    for built, scenarios in ((with_plugin_page, with_plugin_table), (page, table)):  # as the plugin declares them
        assert "Ranked by busy share (lower is better)" in built and "| busy share ↓ | Δ |" in built
        assert "idle_share,idle_share_ci95" in scenarios.splitlines()[0]
    record.pop("ranked_by")  # a submission of an older dcbench records nothing: ranked by default, and said so
    record.pop("columns")
    (path,) = root.glob("submissions/*/submission.json")
    path.write_text(json.dumps(record))
    old = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert old.exit_code == 0 and "Ranked by acceptance ratio (higher is better)" in (root / "README.md").read_text()
    assert "'tp-busy.busy_suite' is not installed here and its submissions record no ranking" in old.stderr
    for damage, problem in [({"ranked_by": {"metric": "nosuch", "higher_is_better": True}, "columns": []},
                             "its submission.json's ranked_by is not {metric: a column of its summary"),
                            ({"ranked_by": {"metric": "busy_share", "higher_is_better": False}, "columns": [{}]},
                             "its submission.json's columns are not column declarations"),
                            ({"ranks": "busy_share"}, "its submission.json has unknown keys ['ranks']")]:
        path.write_text(json.dumps({**record, **damage}))
        damaged = runner.invoke(cli, ["leaderboard", "--root", str(root)])
        assert damaged.exit_code == 2 and problem in damaged.output, damaged.output


def test_a_sweep_removes_what_killed_commands_left_in_its_folder_and_nothing_else(random_sweep, tmp_path):
    """No other command writes into the folder while the sweep holds its
    lock: every half-written run and temporary file there is a killed one's."""
    out = tmp_path / "nara2022"
    shutil.copytree(random_sweep, out)
    own = sorted(p.name for p in out.iterdir() if p.is_dir())[0]
    leftovers = [out / f".{own}.tmp-killed", out / ".0123456789abcdef.tmp-x1y2z3w4"]  # this sweep's run, another's
    for folder in leftovers:
        folder.mkdir()
        (folder / "timeline.parquet").write_bytes(b"half")
    leftovers.append(out / ".summary.parquet.tmp-q8r7s6t5")  # a killed write of the combined summary
    leftovers[-1].write_bytes(b"PAR1 half")
    users = [out / "notes.txt", out / ".notes.tmp"]
    for path in users:
        path.write_text("mine")
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert not any(path.exists() for path in leftovers)
    assert all(path.read_text() == "mine" for path in users)
    assert not (out / ".dcbench.lock").exists()  # released, and removed


@pytest.mark.parametrize("command", [["sweep", "-s", "nara2022", "-a", "random"],
                                     ["sweep", "-t", "tiered:8,1x4", "-a", "random", "-n", "8", "--seeds", "2"],
                                     ["run", "-a", "random", "-t", "tiered:8,1x4", "-n", "8"]])
def test_a_second_command_writing_to_a_results_folder_is_refused_in_one_line(tmp_path, command):
    from dcbench.storage.locks import folder_lock, sole_writer

    out = tmp_path / "results"
    with sole_writer(folder_lock(out), "sweep", out):
        result = CliRunner().invoke(cli, [*command, "--out", str(out), "-q"])
        assert result.exit_code == 2
        assert result.output == (f"Error: another dcbench sweep is writing to '{out}' (pid {os.getpid()}); wait for "
                                 "it or choose another --out\n")
        assert os.listdir(out) == [".dcbench.lock"]
    result = CliRunner().invoke(cli, [*command, "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("jobs, said", [("0", "--jobs must be at least 1, got 0"),
                                        ("257", "--jobs must be at most 256, got 257")])
def test_workers_beyond_the_bounds_are_refused(tmp_path, jobs, said):
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "-j", jobs, "--out",
                                      str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output == f"Error: {said}\n"
    assert not (tmp_path / "out").exists()


HUNG = """
import os, time
from pathlib import Path
from dcbench import PoolAllocator, hookimpl

class Hung(PoolAllocator):
    def allocate(self, request, state):
        Path(os.environ["HUNG_WORKERS"], str(os.getpid())).touch()  # where the test finds the workers
        while True:  # a plugin that never returns
            time.sleep(0.01)

@hookimpl
def register_allocators(register):
    register("hung", Hung, description="never returns")
"""


def hung_sweep(tmp_path):
    """`dcbench sweep -a hung -j 2` started in a process of its own, its two
    workers stuck in the plugin: (the process, the workers' pids, the results folder)."""
    plugins, workers, out = tmp_path / "plugins", tmp_path / "workers", tmp_path / "out"
    (plugins / "hung_plugin-1.0.dist-info").mkdir(parents=True)
    workers.mkdir()
    (plugins / "hung_plugin.py").write_text(HUNG)
    (plugins / "hung_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: hung-plugin\n"
                                                                    "Version: 1.0\n")
    (plugins / "hung_plugin-1.0.dist-info" / "entry_points.txt").write_text("[dcbench]\nhung = hung_plugin\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]),
           "HUNG_WORKERS": str(workers)}
    process = subprocess.Popen([sys.executable, "-m", "dcbench", "sweep", "-s", "nara2022", "-a", "hung", "-j", "2",
                                "--out", str(out), "-q"], env=env, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while len(os.listdir(workers)) < 2 and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert len(os.listdir(workers)) == 2, process.communicate()
    return process, [int(name) for name in os.listdir(workers)], out


def running(pid):
    """Whether the process ``pid`` runs (a zombie, ended but not yet reaped by whoever adopted it, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return sys.platform.startswith("linux") is False


def wait_until_gone(pids, seconds=30):
    deadline = time.time() + seconds
    while any(running(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if running(pid)]


def end(process, workers):
    """What a failed test leaves running is ended, by pid (only what it started)."""
    for pid in workers:
        if running(pid):
            os.kill(pid, signal.SIGKILL)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_the_workers_of_a_killed_sweep_die_with_it(tmp_path):
    process, workers, _ = hung_sweep(tmp_path)
    try:
        os.kill(process.pid, signal.SIGKILL)  # the sweep only: its workers are left to notice
        process.wait()
        assert wait_until_gone(workers) == []
    finally:
        end(process, workers)


def test_sigterm_ends_a_sweep_whose_workers_are_stuck_in_a_plugin(tmp_path):
    process, workers, out = hung_sweep(tmp_path)
    try:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 128 + signal.SIGTERM
        assert stderr.splitlines()[-1].startswith("Terminated: what was finished is kept")
        assert wait_until_gone(workers) == []
        assert not out.exists()  # the runs under way removed, the lock too, and the folder the sweep made
    finally:
        end(process, workers)


def test_ctrl_c_while_the_pool_starts_its_workers_ends_those_started(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM between two submissions (each may start a worker)
    left the workers started running, and the command waited for them at
    exit: for ever, where a plugin was stuck (one SIGTERM in eight)."""
    import concurrent.futures
    import multiprocessing

    from dcbench.running import sweep as sweeps

    submit = concurrent.futures.ProcessPoolExecutor.submit
    submitted = []

    def interrupted_at_the_second(pool, *args, **kwargs):
        if submitted:
            raise KeyboardInterrupt
        submitted.append(submit(pool, *args, **kwargs))
        return submitted[-1]

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", interrupted_at_the_second)
    jobs = [sweeps.PlannedRun("small", "random", "tiered:8,1x4", None, 8, seed, "") for seed in (0, 1)]
    with pytest.raises(KeyboardInterrupt):
        sweeps.run_local(jobs, tmp_path, 2, lambda job: None)
    deadline = time.time() + 30  # (the pool's own thread may be the one to reap the worker it ended)
    while multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def test_a_pipe_named_like_the_sweeps_summary_is_refused_not_waited_on(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    os.mkfifo(out / "summary.parquet")
    # In a process of its own: a sweep that waits on the pipe is killed by the timeout, not the test run.
    command = [sys.executable, "-m", "dcbench", "sweep", "-s", "nara2022", "-a", "random", "--out", str(out), "-q"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr == (
        f"Error: '{out / 'summary.parquet'}' is not a dcbench sweep's summary (it is not a Parquet file); give this "
        "sweep another --out, or remove that file\n")


def test_an_adhoc_sweep_writes_a_suites_layout_with_scenarios_named_from_the_specs(tmp_path):
    out = tmp_path / "mine"
    result = CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4", "-t", "tiered:16,1x8", "-a", "tetris,nalb",
                                      "--seeds", "3", "-n", "30", "--out", str(out), "-j", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"12 runs (0 already done) -> {out / 'summary.parquet'}")
    assert "acceptance_ratio, mean over seeds" in result.stdout and "│ tiered:16,1x8 │" in result.stdout
    table = pq.read_table(out / "summary.parquet")
    rows = table.to_pylist()
    assert [(r["scenario"], r["allocator"].split(":")[0], r["seed"]) for r in rows] == [
        (scenario, allocator, seed) for scenario in ("tiered:8,1x4", "tiered:16,1x8")
        for allocator in ("tetris", "nalb") for seed in (0, 1, 2)]  # seeds 0..N-1, as `run --seeds N`
    assert {r["requests"] for r in rows} == {30}
    assert len([p for p in out.iterdir() if p.is_dir()]) == 12
    provenance = json.loads(table.schema.metadata[b"dcbench"])
    assert "suite" not in provenance and provenance["scenarios"] == [
        {"name": "tiered:8,1x4", "topology": "tiered:8,1x4", "workload": None, "requests": 30, "seeds": [0, 1, 2]},
        {"name": "tiered:16,1x8", "topology": "tiered:16,1x8", "workload": None, "requests": 30, "seeds": [0, 1, 2]}]
    # the same runs as `dcbench run` makes, so a run made before is not made again
    again = CliRunner().invoke(cli, ["run", "-a", "nalb", "-t", "tiered:16,1x8", "-n", "30", "--seed", "2",
                                     "--out", str(tmp_path / "single"), "-q"])
    assert again.exit_code == 0 and (tmp_path / "single" / rows[-1]["run_id"]).is_dir()


def test_an_adhoc_sweep_resumes_takes_more_scenarios_later_and_says_what_it_leaves_out(tmp_path):
    out = tmp_path / "mine"
    first = ["sweep", "-t", "ocs:16,servers=2", "-w", "vmjobs:load=8,warmup=10", "-w", "vmjobs:load=12,warmup=10",
             "-a", "jcb", "--seeds", "2", "-n", "30", "--out", str(out), "-j", "1"]
    assert CliRunner().invoke(cli, [*first, "-q"]).exit_code == 0
    names = pq.read_table(out / "summary.parquet").column("scenario").to_pylist()
    assert names == ["ocs:servers=2 vmjobs:load=8,warmup=10"] * 2 + ["ocs:servers=2 vmjobs:load=12,warmup=10"] * 2
    assert set(pq.read_table(out / "summary.parquet").column("requests").to_pylist()) == {10 + 30}  # -n: measured
    killed = pq.read_table(out / "summary.parquet").column("run_id")[1].as_py()
    shutil.rmtree(out / killed)  # as if killed before this run was written
    resumed = CliRunner().invoke(cli, [*first, "-a", "random"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.startswith("8 runs (3 already done)")
    assert "blocking_probability, mean over seeds" in resumed.stdout  # jobs are ranked by blocking
    narrower = CliRunner().invoke(cli, [*first[:5], *first[7:], "-q"])
    assert narrower.exit_code == 0, narrower.output
    assert narrower.stderr == ("Note: the summary no longer lists random, scenario 'ocs:servers=2 "
                               "vmjobs:load=12,warmup=10' (their run folders stay); name them with -a, -t or -w to "
                               "keep them in it\n")
    rows = pq.read_table(out / "summary.parquet").to_pylist()
    assert len(rows) == 2 and len([p for p in out.iterdir() if p.is_dir()]) == 8


@pytest.mark.parametrize("args, said", [
    (["-s", "nara2022", "-t", "tiered:8,1x4"], "give a suite with -s SUITE or topologies with -t, not both"),
    ([], "give a suite with -s SUITE (see `dcbench list suites`), or topologies to sweep with -t, e.g. "
         "-t tiered:16,1x8 -t tiered:32,1x4"),
    (["-s", "nara2022", "-w", "uniform"], "-w is for an ad-hoc sweep (-t); a suite sets its own workloads, requests "
                                          "and seeds"),
    (["-s", "nara2022", "--seeds", "2"], "--seeds is for an ad-hoc sweep (-t)"),
    (["-t", "tiered:8,1x4", "--seeds", "0"], "--seeds must be at least 1, got 0"),
    (["-t", "tiered:8,1x4", "-n", "0"], "--requests must be at least 1, got 0"),
    (["-t", "tiered", "-t", "tiered:32,1x4"], "-t tiered and -t tiered:32,1x4 are the same scenario "
                                              "(tiered:channels=32,ratio=1x4,"),
    (["-t", "tiered:8,1x5"], "tiered: ratio='1x5' is not one of 1x1, 1x4, 1x8, 1x16"),
    (["-t", "tiered:8,1x4", "-t", "ocs:4", "-w", "uniform"], "topology 'ocs' serves job demands but workload "
                                                             "'uniform' makes pool demands"),
    (["-t", "ocs:4", "-a", "random,nalb"], "scenario 'ocs:4': allocator 'nalb' serves pool demands but workload "
                                           "'vmjobs' makes job demands"),
])
def test_an_adhoc_sweep_with_bad_options_is_one_line_and_runs_nothing(tmp_path, args, said):
    allocators = [] if "-a" in args else ["-a", "random"]
    result = CliRunner().invoke(cli, ["sweep", *args, *allocators, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: {said}") and len(result.output.splitlines()) == 1, result.output
    assert not (tmp_path / "out").exists()


def test_a_suites_sweep_and_an_adhoc_one_keep_to_their_own_folders(tmp_path, random_sweep):
    adhoc = tmp_path / "adhoc"
    assert CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4", "-a", "random", "-n", "8", "--seeds", "1",
                                    "--out", str(adhoc), "-q"]).exit_code == 0
    suite = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(adhoc), "-q"])
    assert suite.exit_code == 2 and suite.output == (
        f"Error: '{adhoc}' holds an ad-hoc sweep (of -t specs); give 'nara2022' its own folder with --out "
        "(default results/nara2022)\n")
    into_suite = CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4", "-a", "random", "--out", str(random_sweep)])
    assert into_suite.exit_code == 2 and into_suite.output == (
        f"Error: '{random_sweep}' holds a sweep of suite 'nara2022'; give this ad-hoc sweep its own folder with "
        "--out (default results/sweep)\n")
    # a suite's summary keeps its layout: the suite, its allocators, version and runs
    provenance = json.loads(pq.read_schema(random_sweep / "summary.parquet").metadata[b"dcbench"])
    assert sorted(provenance) == ["allocators", "dcbench_version", "runs", "suite"]


def test_the_leaderboard_refuses_an_adhoc_sweep_in_one_line(tmp_path):
    out = tmp_path / "mine"
    assert CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4", "-a", "random", "-n", "8", "--seeds", "2",
                                    "--out", str(out), "-q"]).exit_code == 0
    board = tmp_path / "board"
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(board), "submit", str(out)])
    assert result.exit_code == 2
    assert result.output == (f"Error: submission refused: '{out}' is an ad-hoc sweep (of -t/-w specs, not a suite); "
                             "the leaderboard ranks registered suites only: sweep one with -s SUITE (see `dcbench "
                             "list suites`)\n")
    assert not board.exists()
    # nor is one copied into its submissions ranked: it is named as damaged
    from dcbench.publishing.leaderboard import load_submissions

    (board / "submissions" / "copied").mkdir(parents=True)
    shutil.copy(out / "summary.parquet", board / "submissions" / "copied" / "summary.parquet")
    with pytest.raises(ResultsError, match="it is an ad-hoc sweep's .*, and the leaderboard ranks registered suites "
                                           "only"):
        load_submissions(board)


def test_a_sweep_resolves_each_scenario_and_allocator_once_in_the_parent_and_never_in_a_worker(tmp_path,
                                                                                               monkeypatch):
    from dcbench.running.runner import Runner

    calls = tmp_path / "resolved"
    resolve = Runner.resolve

    def noted(self, allocator, *args, **kwargs):
        with open(calls, "a") as file:
            file.write(f"{os.getpid()} {allocator}\n")
        return resolve(self, allocator, *args, **kwargs)

    monkeypatch.setattr(Runner, "resolve", noted)
    result = CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4", "-t", "tiered:16,1x4", "-a", "random,tetris",
                                      "--seeds", "2", "-n", "12", "-j", "2", "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output
    lines = calls.read_text().splitlines()
    assert {line.split()[0] for line in lines} == {str(os.getpid())}  # the workers take the parent's plans
    allocators = [line.split()[1] for line in lines]
    assert sorted(a for a in allocators if a != "None") == ["random", "random", "tetris", "tetris"]
    assert allocators.count("None") == 2  # each ad-hoc scenario, resolved alone to name it


def test_ctrl_c_during_a_sweep_removes_the_run_folders_it_left_half_written(tmp_path, monkeypatch):
    from dcbench.running import sweep as sweeps
    from dcbench.storage.files import staging_folder

    out = tmp_path / "sweep"
    out.mkdir()

    def stopped(todo, out_dir, workers, done):  # a run being written when Ctrl-C comes
        staging_folder(out_dir / todo[0].run_id)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweeps, "run_local", stopped)
    result = CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4", "-a", "random", "-n", "8", "--seeds", "2",
                                      "--out", str(out), "-q"])
    assert result.exit_code == 130 and "nothing is left half-written" in result.output
    assert list(out.iterdir()) == []
