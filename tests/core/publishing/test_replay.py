"""A submission is replayed on arrival: one seed of every scenario and
allocator, made again in fresh processes that load only the plugins it
uses, and refused on any difference; `verify` draws from every submission."""

from __future__ import annotations

import datetime
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dcbench.commands import cli
from tests.core.publishing.test_submission_integrity import forge


def submit(results, root):
    return CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(results)])


def test_submit_replays_one_seed_of_every_scenario_and_allocator_and_records_them(random_sweep, tmp_path):
    root = tmp_path / "leaderboard"
    result = submit(random_sweep, root)
    assert result.exit_code == 0, result.output
    (submission,) = (root / "submissions").iterdir()
    rows = {row["run_id"]: row for row in pq.read_table(submission / "summary.parquet").to_pylist()}
    replayed = json.loads((submission / "submission.json").read_text())["replayed"]
    from dcbench import __version__

    assert replayed["dcbench_version"] == __version__
    assert replayed["date"] == datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    cells = [(rows[run]["scenario"], rows[run]["allocator"]) for run in replayed["runs"]]
    assert sorted(cells) == sorted({(row["scenario"], row["allocator"]) for row in rows.values()})
    assert CliRunner().invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0  # a rebuild reads it


def test_a_run_forged_within_every_range_is_refused_on_arrival_naming_it(random_sweep, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    # Every seed of one scenario, a utilisation nudged: within its range, and consistent with every count.
    forge(results, lambda row: {**row, "cpu_util": row["cpu_util"] * 0.999} if row["scenario"] == "16-1x4" else row)
    root = tmp_path / "leaderboard"
    result = submit(results, root)
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith("Error: submission refused: run ")
    assert " (16-1x4 random seed " in result.output and "replayed, came out otherwise: other cpu_util" in result.output
    assert not (root / "submissions").exists() or not any((root / "submissions").iterdir())


def test_a_replayed_record_that_names_other_runs_is_damage(random_sweep, tmp_path):
    root = tmp_path / "leaderboard"
    assert submit(random_sweep, root).exit_code == 0
    (submission,) = (root / "submissions").iterdir()
    record = json.loads((submission / "submission.json").read_text())
    for forged in ({**record["replayed"], "runs": ["0123456789abcdef"]}, {**record["replayed"], "date": "yesterday"},
                   "all of them"):
        (submission / "submission.json").write_text(json.dumps({**record, "replayed": forged}))
        result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
        assert result.exit_code == 2 and "its submission.json's replayed is not" in result.output


def test_the_replay_turns_off_every_installed_plugin_the_submission_does_not_use(monkeypatch):
    from types import SimpleNamespace

    from dcbench.publishing.replay import only_these_plugins, plugins_used
    from dcbench.registry import get_registry

    registry = get_registry()
    rows = [{"allocator": "random", "topology": "tiered:8,1x4", "workload": "uniform", "allocator_fingerprint": ""}]
    used = plugins_used(rows, "nara2022", registry)
    assert used <= {plugin.name for plugin in registry.plugins if plugin.builtin}
    plugins = [SimpleNamespace(name="dcbench.plugins.allocators.random_server", builtin=True),
               SimpleNamespace(name="theirs", builtin=False), SimpleNamespace(name="mine", builtin=False)]
    monkeypatch.setenv("DCBENCH_DISABLE_PLUGINS", "broken")
    assert only_these_plugins({"mine", *used}, SimpleNamespace(plugins=plugins)) == {
        "DCBENCH_DISABLE_PLUGINS": "broken,theirs"}
    monkeypatch.delenv("DCBENCH_DISABLE_PLUGINS")
    assert only_these_plugins({"mine", "theirs"}, SimpleNamespace(plugins=plugins)) == {}


def test_verify_draws_from_every_allocator_of_every_submission_and_all_of_them_with_all(random_sweep, tmp_path):
    from dcbench.publishing.leaderboard import Submission
    from dcbench.publishing.verify import sample_runs

    submissions = [Submission(name, "nara2022", ["x", "y"], [{"run_id": f"{name}{i}", "allocator": "xy"[i % 2]}
                                                              for i in range(size)])
                   for name, size in (("a", 50), ("b", 3), ("c", 1))]
    for seed in range(20):
        drawn = sample_runs(submissions, 6, seed)
        assert len(drawn) == 6 and {(name, row["allocator"]) for name, row in drawn} == {
            ("a", "x"), ("a", "y"), ("b", "x"), ("b", "y"), ("c", "x")}
    assert len(sample_runs(submissions, 1, 0)) == 5  # one of each, at least
    root = tmp_path / "leaderboard"
    assert submit(random_sweep, root).exit_code == 0
    every = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "verify", "--all", "-q"])
    assert every.exit_code == 0, every.output
    assert every.stdout.splitlines()[-1] == "60 runs re-run: every one gave the submitted summary bit for bit"


def test_verify_runs_each_allocator_in_workers_of_its_own_and_compares_there(random_sweep, tmp_path, monkeypatch):
    """verify hands its runs to `run_apart`, which keeps each allocator's
    apart (tests/core/running/test_workers.py): a run that comes out
    otherwise there is named here."""
    import dcbench.publishing.verify as verify

    calls = []
    run_apart = verify.run_apart

    def noting(runs, *args, **kwargs):
        calls.append(sorted({run.allocator for run in runs}))
        return run_apart(runs, *args, **kwargs)

    monkeypatch.setattr(verify, "run_apart", noting)
    root = tmp_path / "leaderboard"
    assert submit(random_sweep, root).exit_code == 0
    (submission,) = (root / "submissions").iterdir()
    table = pq.read_table(submission / "summary.parquet")
    nudged = table.set_column(table.schema.get_field_index("mem_util"), "mem_util",
                              pa.array([v * 0.5 for v in table.column("mem_util").to_pylist()]))
    pq.write_table(nudged, submission / "summary.parquet")
    calls.clear()
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "verify", "-n", "3", "-q"])
    assert result.exit_code == 1 and result.stdout.splitlines()[-1] == "3 of 3 runs came out otherwise"
    assert calls == [["random"]]
