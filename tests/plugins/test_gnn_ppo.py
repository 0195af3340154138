import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from dcbench.envs import AllocationEnv
from dcbench.harness import curve_columns
from dcbench.plugins.allocators.gnn_ppo.allocator import GnnPpoAllocator, checkpoint_for, load_policy
from dcbench.plugins.allocators.gnn_ppo.model import (
    GraphPolicy,
    GreedyPolicy,
    MessageSums,
    as_tensors,
    with_self_loops,
)
from dcbench.plugins.allocators.gnn_ppo.train import train
from tests.conftest import failed_export_keeps_the_previous_files, run_tables_digest, strict_json, tiered


@pytest.fixture(scope="module")
def random_checkpoint(tmp_path_factory):
    torch.manual_seed(7)
    model = GraphPolicy()
    path = tmp_path_factory.mktemp("ckpt") / "random.pt"
    torch.save({"model": model.state_dict(), "config": json.dumps(model.config)}, path)
    return path


def test_the_env_and_the_allocator_make_the_same_decisions(runner, random_checkpoint, monkeypatch):
    topology, requests, seed = "tiered:8,1x8", 40, 3
    model = load_policy(random_checkpoint)
    env = AllocationEnv(topology, requests=requests)
    edge_index = with_self_loops(env.features.edge_index, env.features.n_nodes)
    observation, _ = env.reset(seed=seed)
    env_actions, done = [], False
    greedy = GreedyPolicy(model)
    while not done:
        action = int(torch.argmax(greedy.logits({k: v[None] for k, v in observation.items()}, edge_index)[0]))
        env_actions.append(action)
        observation, _, done, _, info = env.step(action)

    allocator_actions = []
    original = GnnPpoAllocator.choose
    monkeypatch.setattr(GnnPpoAllocator, "choose",
                        lambda self, b, a: allocator_actions.append(original(self, b, a)) or allocator_actions[-1])
    result = runner.run(f"gnn_ppo:checkpoint={random_checkpoint}", topology, requests=requests, seed=seed)
    assert allocator_actions == env_actions
    assert result.summary["accepted"] == info["accepted"]
    assert list(result.tables.requests["outcome"]) == list(env.simulation.outcome)


def test_checkpoints_are_matched_to_the_topology():
    from dcbench.plugins.allocators._learned.checkpoints import shipped_checkpoints
    from dcbench.plugins.allocators.gnn_ppo.allocator import CHECKPOINTS

    shipped = shipped_checkpoints(CHECKPOINTS)
    if not shipped:
        pytest.skip("no shipped checkpoints in this checkout")
    path, note = checkpoint_for(tiered("tiered:16,1x8"))
    assert path.name == "tiered-16-1x8.pt" and note == ""
    path, note = checkpoint_for(tiered("tiered:16,1x8,pods=8,racks=8"))
    assert path.name == "tiered-16-1x8.pt" and note == ""  # size-agnostic: the same one serves 1,024 servers
    path, note = checkpoint_for(tiered("tiered:12,1x8"))
    assert "no checkpoint for tiered-12-1x8; using tiered-" in note


@pytest.mark.parametrize("channels", [8, 16, 32])
@pytest.mark.parametrize("ratio", ["1x1", "1x4", "1x8", "1x16"])
def test_every_nara2022_topology_has_a_safe_checkpoint_that_says_how_it_was_made(channels, ratio):
    path, note = checkpoint_for(tiered(f"tiered:{channels},{ratio}"))
    assert path.name == f"tiered-{channels}-{ratio}.pt" and note == ""
    policy = load_policy(path)  # torch.load(weights_only=True): no pickled code
    record = strict_json(path.with_suffix(".json"))
    assert record["command"].startswith("dcbench train -a gnn_ppo")
    assert record["topology"].startswith(f"tiered:channels={channels},ratio={ratio},")
    assert record["workload"].endswith("pairs=reference")  # the suites' workload
    assert isinstance(record["seed"], int) and record["steps"] > 0 and record["wall_time_s"] > 0
    assert record["imitation"]["teacher"].split(":")[0] in ("tetris", "nalb", "bestfit")
    # The weights read the hints the recorded training options gave them.
    trained = record["ppo"]
    sixth = trained.get("fit_hint") or trained.get("fit_last_hint")
    assert policy.extra_features == ((6 if sixth else 5) if trained["hints"] else 0)
    assert policy.sixth_hint == ("fit_last" if trained.get("fit_last_hint") else "bestfit")
    # docs/learned/gnn_ppo.md's table of the shipped checkpoints says what this record says.
    docs = Path(__file__).parents[2] / "docs" / "learned" / "gnn_ppo.md"
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in docs.read_text().splitlines() if line.startswith(f"| {channels}-{ratio} |")]
    row = next(cells for cells in rows if len(cells) == 9 and " of " in cells[5])
    assert row[3:6] == [str(record["seed"]), f"{record['steps']:,}",
                        f"{record['selected']['iteration']} of {record['iterations']}, "
                        f"{record['selected']['steps']:,}"]


def _mean_acceptance(runner, allocator, topology, seeds):
    return sum(runner.run(allocator, topology, "uniform:pairs=reference", 128, seed).summary["acceptance_ratio"]
               for seed in seeds) / len(seeds)


# Seeds 100.. are the ones the shipped checkpoints were chosen on (docs/learned/gnn_ppo.md): not the suites'
# test seeds (0..4), not training or in-training validation seeds.
@pytest.mark.parametrize("topology", ["tiered:8,1x16", "tiered:16,1x8"])
def test_the_shipped_agent_beats_the_paper_heuristics_where_it_gains_most(runner, topology):
    agent = _mean_acceptance(runner, "gnn_ppo", topology, range(100, 103))
    best = max(_mean_acceptance(runner, heuristic, topology, range(100, 103)) for heuristic in ("tetris", "nalb"))
    assert agent > best * 1.05


@pytest.mark.slow
@pytest.mark.parametrize("channels", [8, 16, 32])
@pytest.mark.parametrize("ratio", ["1x1", "1x4", "1x8", "1x16"])
def test_every_shipped_agent_is_at_least_the_best_paper_heuristic(runner, channels, ratio):
    topology, seeds = f"tiered:{channels},{ratio}", range(100, 110)
    heuristics = ("tetris", "nalb", "nulb", "random")
    best = max(_mean_acceptance(runner, heuristic, topology, seeds) for heuristic in heuristics)
    assert _mean_acceptance(runner, "gnn_ppo", topology, seeds) >= best


def test_the_checkpoint_option_of_run_is_the_allocators_parameter(random_checkpoint, tmp_path):
    from click.testing import CliRunner

    from dcbench.commands import cli

    def run(*args):
        return CliRunner().invoke(cli, ["run", "-t", "tiered:8,1x4", "-n", "6", "-q", "--out", str(tmp_path), *args])

    by_option = run("-a", "gnn_ppo", "--checkpoint", str(random_checkpoint))
    by_spec = run("-a", f"gnn_ppo:checkpoint={random_checkpoint}")
    shipped = run("-a", "gnn_ppo")
    assert by_option.exit_code == by_spec.exit_code == shipped.exit_code == 0, by_option.output
    assert by_option.output == by_spec.output != shipped.output  # the same run id: the same run
    refused = run("-a", "tetris", "--checkpoint", str(random_checkpoint))
    assert refused.exit_code == 2
    assert "allocator 'tetris' takes no checkpoint; --checkpoint is for a2c_multistep, gnn_ppo" in refused.output
    twice = run("-a", f"gnn_ppo:checkpoint={random_checkpoint}", "--checkpoint", str(random_checkpoint))
    assert twice.exit_code == 2 and "the checkpoint is given twice" in twice.output


def test_a_missing_checkpoint_file_is_a_clear_error(runner):
    from dcbench import SpecError

    with pytest.raises(SpecError, match="is not a file"):
        runner.run("gnn_ppo:checkpoint=/nowhere.pt", "tiered:8,1x4", requests=4)


@pytest.mark.parametrize("contents, fragment", [
    (b"not a checkpoint", "cannot be read by torch.load(weights_only=True) (it is not the zip archive torch.save "
                          "writes)"),
    ({"weights": {}}, "is not a checkpoint of gnn_ppo (KeyError: 'config')"),
    ({"model": {}, "config": json.dumps({"hidden": 16, "wings": 2})},
     "its configuration has 'wings', which no gnn_ppo checkpoint has"),
    ({"model": {}, "config": json.dumps({})}, "its weights lack convs.0.linear.weight, which its configuration makes"),
    # torch warned about indexing a tensor with a string before the error line
    (torch.zeros(3), "is not a checkpoint of gnn_ppo (it holds a Tensor, not a dictionary)"),
])
def test_a_file_that_is_not_a_checkpoint_is_a_one_line_error(tmp_path, contents, fragment):
    from click.testing import CliRunner

    from dcbench.commands import cli

    path = tmp_path / "weights.pt"
    if isinstance(contents, bytes):
        path.write_bytes(contents)
    else:
        torch.save(contents, path)
    result = CliRunner().invoke(cli, ["run", "-a", f"gnn_ppo:checkpoint={path}", "-t", "tiered:8,1x4",
                                      "--requests", "4", "--out", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and str(path) in result.output
    assert "dcbench train --allocator gnn_ppo" in result.output
    assert result.output.count("\n") == 1
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_plain_pickle_is_refused_without_torchs_warning(tmp_path, runner):
    import pickle
    import warnings

    from dcbench import AllocatorError, ResultsError

    path = tmp_path / "weights.pkl"
    path.write_bytes(pickle.dumps({"model": {}, "config": "{}"}, protocol=4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises((ResultsError, AllocatorError), match="cannot be read by torch.load"):
            runner.run(f"gnn_ppo:checkpoint={path}", "tiered:8,1x4", requests=4)
    assert [str(w.message) for w in caught] == []


def test_training_is_reproducible_and_resumable(tmp_path):
    settings = dict(envs=2, batch=64, minibatch=32, epochs=2, imitation_episodes=1, imitation_epochs=1,
                    episode_requests=4)
    straight = train("tiered:8,1x4", steps=128, seed=5, out=tmp_path / "a.pt", **settings)
    halfway = train("tiered:8,1x4", steps=64, seed=5, out=tmp_path / "b.pt", **settings)
    resumed = train("tiered:8,1x4", steps=128, seed=5, out=tmp_path / "b.pt", **settings)
    assert halfway == resumed
    a = torch.load(straight, weights_only=True)["model"]
    b = torch.load(resumed, weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    record = strict_json(tmp_path / "a.json")
    assert record["imitation"]["teacher_trials"].keys() == {"tetris", "nalb"}
    assert record["seed"] == 5 and record["steps"] >= 128 and record["iterations"] >= 2
    curve = pq.read_table(tmp_path / "a.pt.train" / "curve.parquet").to_pylist()
    assert [row["iteration"] for row in curve] == list(range(1, len(curve) + 1))
    beside = pq.read_table(tmp_path / "a.curve.parquet")  # beside the checkpoint too, as the help says
    assert beside.column_names == list(curve[0]) and beside.column("acceptance").to_pylist() == [
        row["acceptance"] for row in curve]
    assert (tmp_path / "a.png").exists()


def test_a_training_state_and_its_curve_are_replaced_together_or_not_at_all(tmp_path, monkeypatch):
    import errno

    import torch

    from dcbench.plugins.allocators._learned import checkpoints as checkpoint_files

    state_dir = tmp_path / "x.pt.train"
    checkpoint_files.save_training_state(state_dir, {"weights": torch.zeros(2)}, [{"steps": 1}], {"seed": 0})
    before = {path.name: path.read_bytes() for path in state_dir.iterdir()}

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint_files.pq, "write_table", full_disk)  # the curve
    with pytest.raises(OSError):
        checkpoint_files.save_training_state(state_dir, {"weights": torch.ones(2)}, [{"steps": 1}, {"steps": 2}],
                                             {"seed": 0})
    assert {path.name: path.read_bytes() for path in state_dir.iterdir()} == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked writer")
def test_a_state_saved_by_a_trainer_killed_between_two_renames_resumes_with_its_own_curve(tmp_path):
    """Resumed as a library call (no `dcbench train` to finish the write
    first): the state is renamed last, so it is never ahead of its curve,
    and a curve ahead of it is read up to the state's rows."""
    from dcbench.plugins.allocators._learned import checkpoints as checkpoint_files
    from dcbench.storage import journal as atomic
    from tests.core.storage.test_atomic import killed_at

    state_dir = tmp_path / "x.pt.train"
    rows = [{"steps": 1.0}, {"steps": 2.0}]
    checkpoint_files.save_training_state(state_dir, {"weights": torch.zeros(2)}, rows[:1], {"seed": 0})
    renamed_once = 1 + 2 + 2 + 1  # its marker, two temporaries, the journal written and renamed, the curve renamed
    killed_at(renamed_once, lambda: checkpoint_files.save_training_state(
        state_dir, {"weights": torch.ones(2)}, rows, {"seed": 0}))
    assert len(pq.read_table(state_dir / "curve.parquet")) == 2  # the new curve beside the old state
    restored = {}
    curve = checkpoint_files.resume_training_state(state_dir, restored.update, {"seed": 0}, ["steps"])
    assert curve == rows[:1] and torch.equal(restored["weights"], torch.zeros(2))
    atomic.recover([state_dir / "state.pt"])  # what `dcbench train` does first, and the next save
    curve = checkpoint_files.resume_training_state(state_dir, restored.update, {"seed": 0}, ["steps"])
    assert curve == rows and torch.equal(restored["weights"], torch.ones(2))
    assert sorted(path.name for path in state_dir.iterdir()) == ["curve.parquet", "state.pt"]


def test_a_curve_behind_its_state_is_refused(tmp_path):
    from dcbench import ResultsError
    from dcbench.plugins.allocators._learned import checkpoints as checkpoint_files

    state_dir = tmp_path / "x.pt.train"
    checkpoint_files.save_training_state(state_dir, {"weights": torch.zeros(2)}, [{"steps": 1}, {"steps": 2}],
                                         {"seed": 0})
    pq.write_table(pa.table({"steps": [1]}), state_dir / "curve.parquet")  # a curve copied from elsewhere
    with pytest.raises(ResultsError) as refused:
        checkpoint_files.resume_training_state(state_dir, lambda state: None, {"seed": 0}, ["steps"])
    assert str(refused.value) == (f"cannot resume from {state_dir / 'curve.parquet'}: it is not a training curve "
                                  f"(1 row(s) where its state has 2); delete {state_dir} to start over")


@pytest.mark.parametrize("damage", ["cut short", "pickles more than weights"])
def test_a_corrupt_training_state_is_a_clear_error(tmp_path, damage):
    import datetime

    from dcbench import ResultsError

    state = tmp_path / "c.pt.train" / "state.pt"
    state.parent.mkdir()
    if damage == "cut short":
        state.write_bytes(b"half a state")
    else:
        torch.save({"saved": datetime.date(2026, 11, 23)}, state)  # torch's refusal says to load it unsafely
    before = state.read_bytes()
    with pytest.raises(ResultsError) as refused:
        train("tiered:8,1x4", steps=64, seed=5, out=tmp_path / "c.pt", envs=2, batch=64, minibatch=32,
              imitation_episodes=1, imitation_epochs=1, episode_requests=4)
    assert re.fullmatch(rf"cannot resume from {re.escape(str(state))}: torch.load\(weights_only=True\) cannot read "
                        rf"it \((\w+Error|it is not the zip archive torch.save writes)\); delete "
                        rf"{re.escape(str(state.parent))} to start over", str(refused.value))
    assert state.read_bytes() == before


def a_sweeps_summary(curve):
    """What a user copied over the curve: a table with other columns."""
    pq.write_table(pa.table({"allocator": ["tetris"], "acceptance_ratio": [0.9]}), curve)


def text_for_numbers(curve):
    rows = pq.read_table(curve).to_pylist()
    pq.write_table(pa.table({**curve_columns(rows), "acceptance": [f"{row['acceptance']}" for row in rows]}), curve)


def cut_short(curve):
    curve.write_bytes(curve.read_bytes()[:100])


@pytest.mark.parametrize("damage, problem", [
    (a_sweeps_summary, "no 'steps' column)"),
    (text_for_numbers, "'acceptance' holds string, not numbers)"),
    (cut_short, "ArrowInvalid: "),  # pyarrow's own words follow
])
def test_a_damaged_training_curve_is_refused_before_training(tmp_path, damage, problem):
    from dcbench import ResultsError

    settings = dict(envs=2, batch=64, minibatch=32, epochs=1, imitation_episodes=1, imitation_epochs=1,
                    episode_requests=4, validation_episodes=0)
    train("tiered:8,1x4", steps=64, seed=5, out=tmp_path / "y.pt", **settings)
    curve = tmp_path / "y.pt.train" / "curve.parquet"
    damage(curve)
    before = {path: path.read_bytes() for path in sorted(tmp_path.rglob("*")) if path.is_file()}
    with pytest.raises(ResultsError) as refused:
        train("tiered:8,1x4", steps=128, seed=5, out=tmp_path / "y.pt", **settings)
    assert str(refused.value).startswith(f"cannot resume from {curve}: it is not a training curve ({problem}")
    assert str(refused.value).endswith(f"; delete {curve.parent} to start over")
    assert "\n" not in str(refused.value)
    assert {path: path.read_bytes() for path in sorted(tmp_path.rglob("*")) if path.is_file()} == before


def test_an_export_that_fails_leaves_the_previous_checkpoint_and_its_record_together(tmp_path, monkeypatch):
    settings = dict(envs=2, batch=64, minibatch=32, epochs=1, imitation_episodes=1, imitation_epochs=1,
                    episode_requests=4, validation_episodes=0)
    train("tiered:8,1x4", steps=64, seed=5, out=tmp_path / "e.pt", **settings)
    failed_export_keeps_the_previous_files(tmp_path, monkeypatch, lambda: train(
        "tiered:8,1x4", steps=128, seed=5, out=tmp_path / "e.pt", **settings))


def test_resuming_with_another_seed_or_configuration_is_refused(tmp_path):
    from dcbench import ResultsError

    settings = dict(envs=2, batch=64, minibatch=32, imitation_episodes=1, imitation_epochs=1, episode_requests=4)
    train("tiered:8,1x4", steps=64, seed=5, out=tmp_path / "c.pt", **settings)
    state = (tmp_path / "c.pt.train" / "state.pt").read_bytes()
    for seed, changed, difference in ((6, {}, "seed 5, not 6"), (5, {"gamma": 0.5}, "gamma 0.99, not 0.5")):
        with pytest.raises(ResultsError, match=rf"state.pt was saved training with {difference}; give another "
                                               r"--out, or remove .*c.pt.train to start over"):
            train("tiered:8,1x4", steps=128, seed=seed, out=tmp_path / "c.pt", **settings, **changed)
    # Another scenario with the same settings would resume weights trained elsewhere under its name.
    for topology, workload, what in (("tiered:16,1x1", None, "topology"),
                                     ("tiered:8,1x4", "uniform:pairs=all", "workload")):
        with pytest.raises(ResultsError, match=rf"state.pt was saved training with {what} 'tiered:channels=8|"
                                               rf"state.pt was saved training with {what} 'uniform:"):
            train(topology, workload, steps=128, seed=5, out=tmp_path / "c.pt", **settings)
    assert (tmp_path / "c.pt.train" / "state.pt").read_bytes() == state


def test_heuristics_and_help_never_import_torch():
    code = ("import sys; from dcbench.harness import Runner; Runner().run('tetris', 'tiered:8,1x4', requests=8); "
            "from click.testing import CliRunner; from dcbench.commands import cli; "
            "CliRunner().invoke(cli, ['--help']); CliRunner().invoke(cli, ['list']); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_training_row_is_one_status_line_and_a_row_without_one_shows_its_numbers():
    from dcbench.commands.train import status_line
    from dcbench.plugins.allocators._learned.status import with_status

    shown = []
    with_status(shown.append)({"steps": 10, "acceptance": 0.5, "policy_loss": 0.01, "value_loss": 2.0,
                               "entropy": 3.0, "validation_acceptance": 0.75})
    assert shown[0]["status"] == "acceptance 0.500  policy +0.0100  value 2.000  entropy 3.000  validation 0.750"
    with_status(shown.append)({"steps": 4, "blocking": 0.25, "epsilon": 0.1, "policy_loss": 0.0, "value_loss": 1.0,
                               "entropy": 0.5})
    assert shown[1]["status"].startswith("blocking 0.250  ε 0.100  policy +0.0000")
    with_status(shown.append)({"steps": 0, "teacher_trial_episode": 2, "teacher_trial_episodes": 20, "acceptance": 1})
    assert shown[2]["status"] == "teacher trial 2/20  acceptance 1.000"
    assert status_line(shown[0]) == shown[0]["status"]  # the command shows the trainer's own line
    assert status_line({"steps": 3, "loss": 0.123456, "done": True}) == "loss 0.1235"  # a third party's numbers


def test_train_command_and_its_errors(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import dcbench.plugins.allocators.gnn_ppo.train as training
    from dcbench.commands import cli

    calls = []

    def fake_train(**kwargs):
        calls.append(kwargs)
        progress = training.with_status(kwargs["progress"])  # as the real trainer reports
        progress({"steps": 10, "acceptance": 0.5, "policy_loss": 0.01, "value_loss": 2.0, "entropy": 3.0})
        kwargs["out"].write_bytes(b"PK\x03\x04 a zip archive, as torch.save writes")
        return kwargs["out"]

    monkeypatch.setattr(training, "train", fake_train)
    args = ["train", "-a", "gnn_ppo", "-t", "tiered:8,1x4", "--steps", "10", "--seed", "3",
            "--out", str(tmp_path / "x.pt")]
    result = CliRunner().invoke(cli, [*args, "-q"])
    assert result.exit_code == 0, result.output
    assert calls[0]["topology"] == "tiered:8,1x4" and calls[0]["steps"] == 10 and calls[0]["seed"] == 3
    assert result.output == f"checkpoint: {tmp_path / 'x.pt'}\n"
    logged = CliRunner().invoke(cli, args)  # not a terminal: no bar, but a line per iteration, and the last stays
    assert logged.stdout.splitlines()[0] == "steps 10  acceptance 0.500  policy +0.0100  value 2.000  entropy 3.000"
    assert logged.stderr == ("train gnn_ppo on tiered:8,1x4: 10/10 steps (100%), 0:00:00 elapsed  acceptance 0.500  "
                             "policy +0.0100  value 2.000  entropy 3.000\n")
    assert CliRunner().invoke(cli, [*args, "-q"]).stderr == ""  # -q: no progress lines either
    refused = CliRunner().invoke(cli, ["train", "-a", "tetris", "-t", "tiered:8,1x4"])
    assert refused.exit_code == 2 and "is not trained; trainable allocators: a2c_multistep, gnn_ppo" in refused.output
    bad = CliRunner().invoke(cli, ["train", "-a", "gnn_ppo", "-t", "tiered:8,1x3"])
    assert bad.exit_code == 2 and "not one of" in bad.output
    optical = CliRunner().invoke(cli, ["train", "-a", "gnn_ppo", "-t", "ocs:16"])
    assert optical.exit_code == 2 and optical.output == (
        "Error: gnn_ppo learns pool demands but workload 'vmjobs' makes job demands; "
        "train it on a topology that serves them, e.g. -t tiered:8,1x1\n")



def test_a_quick_training_takes_exactly_its_steps_says_so_and_says_when_nothing_is_left_to_train(tmp_path):
    from click.testing import CliRunner

    from dcbench.commands import cli

    out = tmp_path / "q.pt"
    args = ["train", "-a", "gnn_ppo", "-t", "tiered:8,1x16", "--steps", "1000", "--quick", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    record = strict_json(tmp_path / "q.json")
    assert record["quick"] is True and record["steps"] == 1000  # every step, the warm start's included, exactly
    assert record["imitation"]["steps"] == 250 and record["imitation"]["teacher"] == "tetris"
    assert record["imitation"]["teacher_trials"] == {} and record["selected"] is None  # no trials, no validation
    assert record["ppo"]["envs"] == 2 and record["ppo"]["validation_episodes"] == 0
    curve = pq.read_table(tmp_path / "q.curve.parquet").to_pylist()
    assert curve[-1]["steps"] == 1000 and curve[0]["steps"] > 250 and len(curve) == record["iterations"] >= 2
    assert load_policy(out) is not None  # finite weights of the model's shapes
    # Not a terminal: a line per warm-start episode and epoch and per iteration, each with its count of the 1,000.
    lines = result.stderr.splitlines()
    assert all(line.startswith("train gnn_ppo on tiered:8,1x16: ") and "/1,000 steps (" in line for line in lines)
    assert [line for line in lines if "warm start: teacher episode" in line][-1].startswith(
        "train gnn_ppo on tiered:8,1x16: 250/1,000 steps (25%), ")
    assert sum("warm start: epoch" in line for line in lines) == 2
    assert [line.split(": ")[1].split(" steps")[0] for line in lines if "  acceptance" in line
            and "warm start" not in line] == [f"{row['steps']:,}/1,000" for row in curve]
    assert result.stdout.splitlines()[-1] == f"checkpoint: {out}"
    # The same command again: the state has its steps; it says so instead of nothing.
    curve_before = (tmp_path / "q.pt.train" / "curve.parquet").read_bytes()
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert again.stderr == (f"Note: the training state at {out}.train already has 1,000 steps ≥ --steps 1,000; "
                            "nothing to train: give more --steps, or another --out (the checkpoint was written "
                            "again from the state)\n")
    assert (tmp_path / "q.pt.train" / "curve.parquet").read_bytes() == curve_before
    # Without --quick the state is not resumed: it counted its steps otherwise.
    plain = CliRunner().invoke(cli, [*args[:-3], "--out", str(out)])
    assert plain.exit_code == 2 and plain.output == (
        f"Error: {out}.train/state.pt was saved by a training with --quick; train with it as that one did, give "
        f"another --out, or remove {out}.train to start over\n")


def test_quick_settings_are_options_that_the_spec_may_set_otherwise(tmp_path):
    from dcbench import SpecError

    out = train("tiered:8,1x4", steps=300, seed=1, out=tmp_path / "o.pt", quick=True,
                options={"envs": "3", "teacher": "nalb", "imitation_epochs": "1"})
    record = strict_json(tmp_path / "o.json")
    assert record["ppo"]["envs"] == 3 and record["ppo"]["batch"] == 256 and record["ppo"]["episode_requests"] == 32
    assert record["imitation"]["teacher"] == "nalb" and record["steps"] == 300 and out.exists()
    # A handful of steps: no warm start (a quarter of 3 is none) and an iteration of 3; finite weights all the same.
    train("tiered:8,1x4", steps=3, seed=1, out=tmp_path / "tiny.pt", quick=True)
    tiny = strict_json(tmp_path / "tiny.json")
    assert tiny["steps"] == 3 and tiny["imitation"]["steps"] == 0 and load_policy(tmp_path / "tiny.pt") is not None
    with pytest.raises(SpecError, match="give dagger_rounds without --quick"):
        train("tiered:8,1x4", steps=300, out=tmp_path / "d.pt", quick=True, options={"dagger_rounds": "1"})
    assert not (tmp_path / "d.pt.train").exists()


def test_quick_is_refused_for_a_trainer_without_it(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import dcbench.plugins.allocators.gnn_ppo.train as training
    from dcbench.commands import cli

    def older_train(topology, workload, steps, seed, out, progress):  # a third party's, say
        pytest.fail("trained")

    monkeypatch.setattr(training, "train", older_train)
    result = CliRunner().invoke(cli, ["train", "-a", "gnn_ppo", "-t", "tiered:8,1x4", "--quick",
                                      "--out", str(tmp_path / "x.pt")])
    assert result.exit_code == 2
    assert result.output == "Error: gnn_ppo's trainer has no quick setting; train it without --quick\n"
    assert list(tmp_path.iterdir()) == []


def test_a_curve_of_one_iteration_is_drawn_as_points():
    from dcbench.plugins.allocators.gnn_ppo.train import curve_figure

    figure = curve_figure([{"steps": 541, "acceptance": 0.3, "policy_loss": 0.01, "value_loss": 40.0,
                            "entropy": 4.0}], "one iteration")
    lines = [line for axis in figure.axes for line in axis.get_lines()]
    assert len(lines) == 4 and {len(line.get_xdata()) for line in lines} == {1}
    assert all(line.get_marker() == "o" for line in lines)  # a line of one point shows nothing; a marker does
    assert all(axis.get_lines() for axis in figure.axes)


@pytest.mark.parametrize("allocator, topology", [("gnn_ppo", "tiered:8,1x4"), ("a2c_multistep", "ocs:4")])
def test_steps_past_any_useful_run_are_refused_before_training(tmp_path, monkeypatch, allocator, topology):
    from click.testing import CliRunner

    import dcbench.plugins.allocators.a2c_multistep.train as a2c_training
    import dcbench.plugins.allocators.gnn_ppo.train as training
    from dcbench.commands import cli

    for module in (training, a2c_training):
        monkeypatch.setattr(module, "train", lambda **kwargs: pytest.fail("trained"))
    # 300,000 steps with three zeros too many: days of training, not a recipe
    result = CliRunner().invoke(cli, ["train", "-a", allocator, "-t", topology, "--steps", "300000000",
                                      "--out", str(tmp_path / "x.pt")])
    assert result.exit_code == 2
    assert result.output == "Error: --steps must be at most 10,000,000, got 300,000,000\n"
    assert list(tmp_path.iterdir()) == []


def not_a_checkpoint(folder):
    (folder / "m.pt").write_text("my notes")


def png_is_a_folder(folder):
    (folder / "m.png").mkdir()


def state_is_a_file(folder):
    (folder / "m.pt.train").write_text("x")


@pytest.mark.parametrize("out, prepare, fragment", [
    ("m.png", None, "--out {folder}/m.png: give a .pt file name"),
    ("m.pt", not_a_checkpoint, "--out {folder}/m.pt exists and is not a checkpoint; give another path, or remove it"),
    ("m.pt", png_is_a_folder, "{folder}/m.png, where training writes its png file, is not a file"),
    ("m.pt", state_is_a_file, "{folder}/m.pt.train, where training keeps its state, is not a folder"),
])
def test_train_refuses_to_replace_what_is_not_its_own_before_training(tmp_path, monkeypatch, out, prepare, fragment):
    from click.testing import CliRunner

    import dcbench.plugins.allocators.gnn_ppo.train as training
    from dcbench.commands import cli

    monkeypatch.setattr(training, "train", lambda **kwargs: pytest.fail("trained"))
    if prepare is not None:
        prepare(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = CliRunner().invoke(cli, ["train", "-a", "gnn_ppo", "-t", "tiered:8,1x4", "--out", str(tmp_path / out)])
    assert result.exit_code == 2 and result.output.startswith("Error: " + fragment.format(folder=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_train_takes_no_positional_option(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from dcbench.commands import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["train", "-a", "gnn_ppo:1", "-t", "tiered:8,1x4"])
    assert result.exit_code == 2
    assert result.output == ("Error: gnn_ppo takes its training options as KEY=VALUE, got '1'; "
                             "see `dcbench list gnn_ppo`\n")
    assert list(tmp_path.iterdir()) == []  # not even the default checkpoints/ folder


@pytest.mark.parametrize("topology", ["tiered:8,1x4", "tiered:32,1x16", "tiered:16,1x8,pods=8,racks=8"])
def test_a_decision_gives_the_batched_paths_logits_and_value_bit_for_bit(runner, topology, monkeypatch):
    # One observation without gradients takes EdgeMeanConv.forward_by_target; with gradients it takes
    # PyG's propagate, as training does. Every decision of a run, both ways.
    compared = []
    choose = GnnPpoAllocator.choose

    def choose_both_ways(self, builder, allowed):
        inputs = as_tensors({k: v[None] for k, v in self.features.observe(builder, self._state).items()})
        with torch.no_grad():
            fast = self.model(*inputs, self.edge_index)
        batched = [t.detach() for t in self.model(*inputs, self.edge_index)]
        compared.append(all(torch.equal(a, b) for a, b in zip(fast, batched)))
        return choose(self, builder, allowed)

    monkeypatch.setattr(GnnPpoAllocator, "choose", choose_both_ways)
    runner.run("gnn_ppo", topology, requests=24)
    assert len(compared) > 24 and all(compared)


@pytest.mark.parametrize("topology", ["tiered:8,1x4", "tiered:16,1x8,pods=8,racks=8"])
def test_a_decisions_split_products_give_the_trained_forwards_arg_max(runner, topology, monkeypatch):
    # GreedyPolicy decides by GraphPolicy.decision_logits: forward's sums in another order. Every decision of a
    # run, both ways: the same arg-max (and, on these, the same float32 logits).
    compared = []
    choose = GnnPpoAllocator.choose

    def choose_both_ways(self, builder, allowed):
        observation = {k: v[None] for k, v in self.features.observe(builder, self._state).items()}
        nodes, edges, globals_, mask = as_tensors(observation)
        with torch.no_grad():
            trained = self.greedy.model(nodes.double(), edges.double(), globals_.double(), mask, self.edge_index)[0]
        decided = self.greedy.logits(observation, self.edge_index)
        compared.append((int(torch.argmax(trained.float()[0])) == int(torch.argmax(decided[0])),
                         torch.equal(trained.float(), decided)))
        return choose(self, builder, allowed)

    monkeypatch.setattr(GnnPpoAllocator, "choose", choose_both_ways)
    runner.run("gnn_ppo", topology, requests=24)
    assert len(compared) > 24 and all(same for same, _ in compared)
    assert sum(bits for _, bits in compared) >= 0.99 * len(compared)


@pytest.mark.parametrize("n_targets", [3, 7])  # every target has a link's edge in; node 3 has none
def test_a_decisions_message_sums_are_the_segment_sums_bit_for_bit(n_targets):
    # decision_logits adds each node's messages in propagate's order (its edges', the self loop's last) by
    # slices and index_add_: the same bits as a segment sum over the edges sorted by target, on messages
    # of magnitudes far enough apart that another order rounds otherwise.
    g = torch.Generator().manual_seed(3)
    links = torch.tensor([[4, 5, 6, 0, 1, 2, 5, 6, 4, 0, 1, 2, 4, 6],
                          [0, 1, 2, 4, 4, 4, 4, 4, 5, 6, 6, 6, 1, 0]])
    edge_index = with_self_loops(links, 7)
    linear = torch.nn.Linear(5 + 2, 4).double()
    with torch.no_grad():
        linear.weight.copy_(torch.rand(4, 7, generator=g, dtype=torch.float64))  # (positive: no message is 0)
        linear.bias.copy_(torch.rand(4, generator=g, dtype=torch.float64))
    h = torch.rand(7, 5, generator=g, dtype=torch.float64) * 10.0 ** torch.arange(-3, 4)[:, None]
    edges = torch.rand(links.shape[1], 2, generator=g, dtype=torch.float64)
    order = torch.argsort(edge_index[1], stable=True)
    in_degree = torch.bincount(edge_index[1], minlength=7)
    with torch.no_grad():
        messages = torch.addmm(linear.bias, torch.cat([edges, edges.new_zeros(7, 2)]).index_select(0, order),
                               linear.weight[:, 5:].t())
        messages += torch.mm(h, linear.weight[:, :5].t()).index_select(0, edge_index[0, order])
        summed = torch.segment_reduce(messages.clamp(min=0), "sum", lengths=in_degree, axis=0)
        expected = torch.nn.functional.normalize(summed / in_degree[:, None], dim=-1)[:n_targets]
        sums = MessageSums(edge_index, links.shape[1], n_targets)
        assert torch.equal(sums.layer(linear, h, edges), expected)
        assert torch.equal(sums.layer(linear, h, edges), expected)  # again, in the buffers the first call left


@pytest.mark.slow  # every shipped checkpoint under several kernel settings
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the kernel switches are x86 ones")
def test_the_shipped_policies_make_the_same_runs_whichever_cpu_kernels_run_them():
    # torch and MKL pick vector kernels by CPU; forcing others stands in for other
    # machines. What a run promises is its decisions and tables, not the logits'
    # last bits, which no kernel promises. With float32 logits, 64 requests at
    # 1,024 servers already decided otherwise under MKL's AVX2 kernels than under
    # its AVX-512 ones (as 0.4.1's committed runs did on an Intel CPU): the
    # allocator's GreedyPolicy rounds float64 logits to float32.
    runs = [("gnn_ppo", "tiered:8,1x1", "uniform:pairs=reference", 16, 0),
            ("gnn_ppo", "tiered:32,1x16", "uniform:pairs=reference", 16, 0),
            ("gnn_ppo", "tiered:8,1x4,pods=8,racks=8", "uniform:pairs=reference", 64, 0)]
    settings = ({}, {"ATEN_CPU_CAPABILITY": "default"}, {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
                {"MKL_CBWR": "COMPATIBLE"})
    digests = [run_tables_digest(runs, setting) for setting in settings]
    assert len(set(digests)) == 1, digests


def test_other_weights_make_another_run(runner, random_checkpoint, tmp_path):
    torch.manual_seed(8)
    model = GraphPolicy()
    other = tmp_path / "other.pt"
    torch.save({"model": model.state_dict(), "config": json.dumps(model.config)}, other)
    first = runner.run(f"gnn_ppo:checkpoint={random_checkpoint}", "tiered:8,1x4", requests=4)
    copy = tmp_path / "random.pt"
    copy.write_bytes(random_checkpoint.read_bytes())
    renamed = runner.run(f"gnn_ppo:checkpoint={copy}", "tiered:8,1x4", requests=4)
    retrained = runner.run(f"gnn_ppo:checkpoint={other}", "tiered:8,1x4", requests=4)
    assert first.summary["allocator_fingerprint"] == renamed.summary["allocator_fingerprint"]
    assert retrained.summary["allocator_fingerprint"] != first.summary["allocator_fingerprint"]
    assert retrained.run_id != first.run_id


def test_the_exported_weights_are_the_best_validated_ones(runner, tmp_path):
    from dcbench.plugins.allocators.gnn_ppo.train import VALIDATION_SEED_OFFSET

    requests = 6
    settings = dict(envs=2, batch=64, minibatch=32, epochs=2, imitation_episodes=1, imitation_epochs=1,
                    episode_requests=requests, validation_episodes=3, validate_every=1)
    out = train("tiered:8,1x4", steps=256, seed=2, out=tmp_path / "v.pt", **settings)
    selected = json.loads((tmp_path / "v.json").read_text())["selected"]
    curve = pq.read_table(tmp_path / "v.pt.train" / "curve.parquet").to_pylist()
    scores = [row["validation_acceptance"] for row in curve]
    assert len(scores) >= 2 and all(score == score for score in scores)  # every iteration validated
    assert selected["acceptance"] >= max(scores)
    if selected["steps"] > 0:
        assert selected["acceptance"] == scores[selected["iteration"] - 1]
    # The allocator with the exported weights scores exactly that on the validation seeds.
    accepted = [runner.run(f"gnn_ppo:checkpoint={out}", "tiered:8,1x4", requests=requests,
                           seed=VALIDATION_SEED_OFFSET + k).summary["acceptance_ratio"] for k in range(3)]
    assert sum(accepted) / 3 == pytest.approx(selected["acceptance"])


def test_training_options_are_typed_and_checked(tmp_path):
    from dcbench import SpecError

    with pytest.raises(SpecError, match=r"gnn_ppo: unknown training option 'epoch'; did you mean 'epochs'\? "
                                        r"Known training options: .*epochs"):
        train("tiered:8,1x4", steps=1, out=tmp_path / "x.pt", options={"epoch": "3"})
    with pytest.raises(SpecError, match=r"gnn_ppo: epochs='three' is not an integer"):
        train("tiered:8,1x4", steps=1, out=tmp_path / "x.pt", options={"epochs": "three"})
    with pytest.raises(SpecError, match=r"gnn_ppo: steps=10 is not a training option; give it as --steps 10"):
        train("tiered:8,1x4", out=tmp_path / "x.pt", options={"steps": "10"})
    with pytest.raises(SpecError, match="fit_hint and fit_last_hint are two choices of the one sixth hint"):
        train("tiered:8,1x4", steps=1, out=tmp_path / "x.pt", options={"fit_hint": "yes", "fit_last_hint": "yes"})
    assert not (tmp_path / "x.pt").exists() and not (tmp_path / "x.pt.train").exists()


def listed_without_torch(name: str) -> list[str]:
    """The lines of `dcbench list NAME`, run where a test checks that torch was never imported."""
    code = ("import sys; from click.testing import CliRunner; from dcbench.commands import cli; "
            f"result = CliRunner().invoke(cli, ['list', {name!r}]); assert result.exit_code == 0, result.output; "
            "assert 'torch' not in sys.modules, 'torch imported'; print(result.output, end='')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_every_training_option_is_a_param_with_help_and_its_bounds():
    from dataclasses import fields

    from dcbench import Param
    from dcbench.plugins.allocators.gnn_ppo.config import PPOConfig
    from dcbench.registry.checks import param_problem
    from dcbench.spec import config_params

    options = {option.name: option for option in config_params(PPOConfig)}
    assert list(options) == [field.name for field in fields(PPOConfig) if field.name != "steps"]
    assert all(option.help for option in options.values())
    assert all(param_problem(option) is None for option in options.values())  # every default is a value it takes
    assert options["envs"] == Param("envs", int, 8, options["envs"].help, minimum=1, maximum=256)
    assert (options["clip"].minimum, options["clip"].above, options["clip"].maximum) == (0, True, 10)
    assert options["teacher"].type is str and options["hints"].type is bool and options["hints"].default is True


def test_list_shows_every_training_option_with_its_help_without_importing_torch():
    from dcbench.plugins.allocators.gnn_ppo.config import PPOConfig
    from dcbench.spec import config_params

    listed = listed_without_torch("gnn_ppo")
    options = config_params(PPOConfig)
    width = max(len(option.name) for option in options)
    heading = listed.index("  training options (-a gnn_ppo:KEY=VALUE with dcbench train):")
    assert listed[heading + 1:] == [f"    {option.help_line(width)}" for option in options]
    assert "    envs                    integer from 1 to 256; default 8 — environments stepped in lockstep, one " \
           "batched forward pass" in listed


@pytest.mark.parametrize("options, fragment", [
    ({"envs": "0"}, "gnn_ppo: envs='0' must be at least 1"),
    # bounded above too: a typo would hang for hours or fill the memory, or make the logits NaN
    ({"envs": "100000000"}, "gnn_ppo: envs='100000000' must be at most 256"),
    ({"reward_scale": "1e308"}, "gnn_ppo: reward_scale='1e308' must be at most 1000000"),
    ({"minibatch": "0"}, "gnn_ppo: minibatch='0' must be at least 1"),
    ({"learning_rate": "-1"}, "gnn_ppo: learning_rate='-1' must be greater than 0"),
    ({"gamma": "2"}, "gnn_ppo: gamma='2' must be at most 1"),
    ({"clip": "0"}, "gnn_ppo: clip='0' must be greater than 0"),
    ({"validate_every": "0"}, "gnn_ppo: validate_every='0' must be at least 1"),
    ({"batch": "4"}, "gnn_ppo: batch=4 must be at least envs=8"),
    ({"teacher": "ccf"}, "gnn_ppo: teacher='ccf' is not a heuristic that picks servers one at a time; "
                         "a teacher is one of bestfit, nalb, nulb, random, tetris"),
    ({"teacher": "gnn_ppo"}, "gnn_ppo: teacher='gnn_ppo' is not a heuristic"),
    ({"teacher": "tetris:x=1"}, "gnn_ppo: teacher='tetris:x=1': tetris: unknown parameter 'x'"),
    ({"teacher": "best:x=1"}, "gnn_ppo: teacher='best:x=1': best (the better of tetris and nalb) takes no "
                              "options; give teacher=best, or options to one of them, e.g. teacher=tetris:KEY=VALUE"),
])
def test_training_options_out_of_range_are_refused_before_training(tmp_path, options, fragment):
    from dcbench import SpecError

    # Each of these crashed deep in training, or trained forever, before it was checked.
    with pytest.raises(SpecError, match=re.escape(fragment)):
        train("tiered:8,1x4", steps=1, out=tmp_path / "x.pt", options=options)
    assert not (tmp_path / "x.pt").exists() and not (tmp_path / "x.pt.train").exists()


TEACHERS = """
from dcbench import Allocator, PoolAllocator, hookimpl


class Raises(PoolAllocator):
    def choose(self, builder, allowed):
        raise RuntimeError("choose broke")


class Wanders(PoolAllocator):
    def choose(self, builder, allowed):
        return 10 ** 6


class Whole(Allocator):  # allocates whole requests: it picks no server at a time
    def allocate(self, request, state):
        return None


@hookimpl
def register_allocators(register):
    register("tp_raises", Raises)
    register("tp_wanders", Wanders)
    register("tp_whole", Whole)
"""


@pytest.mark.parametrize("teacher, problem", [
    ("tp_raises", "failed as gnn_ppo's teacher: RuntimeError: choose broke"),
    ("tp_wanders", "chose 1000000 as gnn_ppo's teacher, which is no allowed server"),
])
def test_a_third_party_teacher_that_fails_is_named_in_one_line(tmp_path, monkeypatch, fresh_registry, teacher,
                                                               problem):
    from dcbench import PluginError, SpecError
    from tests.core.running.test_sweep import with_plugin

    with_plugin(tmp_path, monkeypatch, "teachers", TEACHERS)
    settings = dict(envs=1, batch=16, minibatch=16, imitation_episodes=1, teacher_trial_episodes=1,
                    episode_requests=4, validation_episodes=0)
    with pytest.raises(PluginError) as info:
        train("tiered:8,1x1", steps=16, out=tmp_path / "x.pt", teacher=teacher, **settings)
    assert str(info.value) == (f"allocator {teacher!r} (plugin teachers) {problem}; "
                               "report it to the plugin's authors")
    with pytest.raises(SpecError) as refused:
        train("tiered:8,1x1", steps=16, out=tmp_path / "x.pt", teacher="tp_whole", **settings)
    assert str(refused.value).endswith("a teacher is one of bestfit, nalb, nulb, random, tetris, tp_raises, tp_wanders")


def test_building_the_policy_leaves_no_generated_file_behind(tmp_path):

    code = "from dcbench.plugins.allocators.gnn_ppo.model import GraphPolicy; GraphPolicy(); GraphPolicy()"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []  # PyG's rendered propagate() is removed once loaded


def test_the_fit_hint_ranks_the_allowed_servers_in_bestfits_order():

    from dcbench import Request, State
    from dcbench.plugins.allocators.bestfit import BestFitAllocator
    from dcbench.plugins.allocators.gnn_ppo.model import ServerHints

    network = tiered("tiered:8,1x4")
    state = State(network)
    state.free_resources[:10] = 0
    state.free_resources[12] = [4, 4]  # the tightest fit for the request below
    bestfit = BestFitAllocator()
    bestfit.reset(network, np.random.default_rng(0))
    builder = bestfit.builder
    builder.start(Request(0, 0.0, 1.0, np.array([3.0, 3.0]), "pool", "all"), state)
    node_features = np.zeros((network.n_nodes, 5), dtype=np.float32)
    old, new = ServerHints(network)(builder, node_features), ServerHints(network, 6)(builder, node_features)
    assert old.shape[1] == 10 and new.shape[1] == 11
    assert np.array_equal(old, new[:, :10])  # five-hint checkpoints see what they were trained on
    rank = new[: network.n_servers, 10]
    assert rank.argmax() == bestfit.choose(builder, builder.allowed()) == 12
    assert (rank[:10] == 0).all() and len(set(rank[10:].tolist())) == network.n_servers - 10
    with pytest.raises(ValueError, match="5 or 6 hint features"):
        ServerHints(network, 4)


def test_the_fit_last_hint_ranks_the_servers_that_complete_the_request_in_its_racks():

    from dcbench import Request, State
    from dcbench.plugins.allocators.gnn_ppo.model import GraphPolicy, ServerHints
    from dcbench.plugins.allocators.tetris import TetrisAllocator

    network = tiered("tiered:8,1x4")  # racks of 16 servers
    state = State(network)
    state.free_resources[3] = [5, 5]  # completes the request below in rack 0, tighter than server 4
    state.free_resources[4] = [8, 8]
    state.free_resources[20] = [4, 4]  # tightest of all, but in rack 1
    tetris = TetrisAllocator(fit_last=True)
    tetris.reset(network, np.random.default_rng(0))
    builder = tetris.builder
    builder.start(Request(0, 0.0, 1.0, np.array([20.0, 20.0]), "pool", "all"), state)
    builder.add(0)  # 16 of 20 placed in rack 0; 4 of each left
    hints = ServerHints(network, 6, "fit_last")
    rank = hints(builder, np.zeros((network.n_nodes, 5), dtype=np.float32))[: network.n_servers, 10]
    completing_in_rack_0 = [server for server in range(16) if server != 0]
    assert rank.argmax() == tetris.choose(builder, builder.allowed()) == 3
    assert rank[4] < rank[3] and (rank[completing_in_rack_0] > 0).all()
    assert (np.delete(rank, completing_in_rack_0) == 0).all()  # rack 1's server 20 too
    assert ServerHints(network, 6)(builder, np.zeros((network.n_nodes, 5), dtype=np.float32))[20, 10] > rank[20]
    assert GraphPolicy(extra_features=6, sixth_hint="fit_last").config["sixth_hint"] == "fit_last"
    assert "sixth_hint" not in GraphPolicy(extra_features=6).config  # the fourth set's configurations
    with pytest.raises(ValueError, match="the sixth hint is one of bestfit, fit_last"):
        ServerHints(network, 6, "nalb")



def test_dagger_rounds_add_the_students_states_labelled_by_the_teacher(tmp_path):
    settings = dict(envs=2, batch=32, minibatch=16, epochs=1, imitation_episodes=1, imitation_epochs=1,
                    episode_requests=4, teacher="nalb")
    train("tiered:8,1x4", steps=32, seed=2, out=tmp_path / "bc.pt", **settings)
    cloned = strict_json(tmp_path / "bc.json")["imitation"]
    train("tiered:8,1x4", steps=32, seed=2, out=tmp_path / "dagger.pt", dagger_rounds=2, dagger_episodes=3,
          dagger_epochs=1, **settings)
    imitation = strict_json(tmp_path / "dagger.json")["imitation"]
    assert cloned["dagger"] == [] and [r["round"] for r in imitation["dagger"]] == [1, 2]
    # each round adds the states of its three student-driven episodes, labelled, to the teacher's own
    first, second = (r["samples"] for r in imitation["dagger"])
    assert cloned["samples"] < first < second == imitation["samples"]
    assert all(0 <= r["agreement"] <= 1 and 0 <= r["student_acceptance"] <= 1 for r in imitation["dagger"])
    again = train("tiered:8,1x4", steps=32, seed=2, out=tmp_path / "again.pt", dagger_rounds=2, dagger_episodes=3,
                  dagger_epochs=1, **settings)
    a = torch.load(tmp_path / "dagger.pt", weights_only=True)["model"]
    b = torch.load(again, weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_walk_teacher_labels_a_students_state_from_the_requests_first_server():
    from dcbench.plugins.allocators.gnn_ppo.imitation import Teacher

    env = AllocationEnv(topology="tiered:8,1x4", workload="uniform", requests=50)
    env.reset(seed=3)
    teacher = Teacher("nalb", env.network, 0)
    labelled = 0
    for _ in range(200):
        builder = env.builder
        allowed = builder.allowed()
        if builder.chosen:
            label = teacher.choose(builder, driving=False)
            assert allowed[label]
            racks = env.network.racks
            same_rack = allowed & (racks == racks[builder.chosen[0]])
            # NALB walks out from the first server: its own rack first, whichever servers the student chose
            assert not same_rack.any() or same_rack[label]
            labelled += 1
        choices = np.flatnonzero(allowed)
        _, _, done, _, _ = env.step(int(choices[-1]))  # not NALB's choice: the last allowed server
        if done:
            break
    assert labelled > 10


@pytest.mark.parametrize("teacher, hint, sixth", [("bestfit", "fit_hint", "bestfit"),
                                                  ("tetris:fit_last=yes", "fit_last_hint", "fit_last")])
def test_a_policy_trained_with_a_sixth_hint_and_teacher_runs_as_the_allocator(runner, tmp_path, teacher, hint,
                                                                              sixth):
    settings = dict(envs=2, batch=64, minibatch=32, epochs=1, imitation_episodes=1, imitation_epochs=1,
                    episode_requests=4, teacher=teacher, **{hint: True})
    out = train("tiered:8,1x1", steps=64, seed=1, out=tmp_path / "f.pt", **settings)
    policy = load_policy(out)
    assert (policy.extra_features, policy.sixth_hint) == (6, sixth)
    imitation = strict_json(tmp_path / "f.json")["imitation"]
    assert imitation["teacher"] == teacher
    assert 0 <= imitation["teacher_trials"][teacher] <= 1  # measured, though there was no choice to make
    result = runner.run(f"gnn_ppo:checkpoint={out}", "tiered:8,1x1", requests=20, seed=0)
    assert result.summary["offered"] == 20 and result.summary["invalid_allocations"] == 0


def shipped_weights(name: str = "tiered-8-1x4") -> dict:
    from dcbench.plugins.allocators._learned.checkpoints import shipped_checkpoints
    from dcbench.plugins.allocators.gnn_ppo.allocator import CHECKPOINTS

    return torch.load(shipped_checkpoints(CHECKPOINTS)[name], weights_only=True)


def test_every_shipped_checkpoint_is_within_the_limits_and_its_weights_are_the_shapes_its_configuration_makes():
    from dcbench.plugins.allocators._learned.checkpoints import shipped_checkpoints
    from dcbench.plugins.allocators.gnn_ppo.allocator import CHECKPOINTS
    from dcbench.plugins.allocators.gnn_ppo.model import weight_shapes

    for name, path in shipped_checkpoints(CHECKPOINTS).items():
        saved = shipped_weights(name)
        assert {key: tuple(tensor.shape) for key, tensor in saved["model"].items()} == weight_shapes(
            json.loads(saved["config"]))
        assert load_policy(path).config == json.loads(saved["config"])


@pytest.mark.parametrize("config", [{}, {"hidden": 3, "layers": 1, "extra_features": 5},
                                    {"node_dim": 4, "edge_dim": 1, "global_dim": 2, "hidden": 5, "layers": 4,
                                     "global_hidden": 3, "extra_features": 6, "sixth_hint": "fit_last"}])
def test_the_shapes_the_check_expects_are_the_models(config):
    from dcbench.plugins.allocators.gnn_ppo.model import weight_shapes

    built = GraphPolicy(**config).state_dict()
    assert {key: tuple(tensor.shape) for key, tensor in built.items()} == weight_shapes(config)


@pytest.mark.parametrize("change, said", [
    ({"hidden": 12000}, "hidden=12000, which must be at most 1024"),  # 1.6 GB before the weights were refused
    ({"layers": 10_000_000}, "layers=10000000, which must be at most 16"),  # minutes before
    ({"global_hidden": 2**40}, "global_hidden=1099511627776, which must be at most 1024"),
    ({"node_dim": 0}, "node_dim=0, which must be at least 1 and at most 64"),
    ({"hidden": 16.0}, "hidden=16.0, which must be an integer"),
    ({"layers": True}, "layers=True, which must be an integer"),
    ({"extra_features": 7}, "extra_features=7, which must be one of 0, 5, 6"),
    ({"sixth_hint": "worst"}, "sixth_hint='worst', which must be one of 'bestfit', 'fit_last'"),
])
def test_a_configuration_beyond_the_limits_is_refused_before_anything_is_built(tmp_path, monkeypatch, change, said):
    import dcbench.plugins.allocators.gnn_ppo.allocator as allocator
    from dcbench import ResultsError

    def never(**config):
        raise AssertionError("a policy was built")

    monkeypatch.setattr(allocator, "GraphPolicy", never)
    saved = shipped_weights()
    path = tmp_path / "hostile.pt"
    torch.save({"model": {}, "config": json.dumps({**json.loads(saved["config"]), **change})}, path)  # 1.3 KB
    with pytest.raises(ResultsError) as refused:
        load_policy(path)
    assert str(refused.value) == (f"{path}: its configuration says {said} in a checkpoint of gnn_ppo; pass one "
                                  "written by `dcbench train --allocator gnn_ppo`")


@pytest.mark.parametrize("damage, said", [
    (lambda weights: weights.pop("value.2.bias"), "its weights lack value.2.bias, which its configuration makes"),
    (lambda weights: weights.update({"extra": torch.zeros(1)}),
     "its weights hold extra, which its configuration does not make"),
    (lambda weights: weights.update({"convs.0.linear.weight": torch.zeros(16, 100_000)}),
     "its weight convs.0.linear.weight is 16×100000, its configuration makes it 16×12"),
])
def test_weights_that_are_not_their_configurations_are_refused_before_a_policy_is_built(tmp_path, monkeypatch,
                                                                                       damage, said):
    import dcbench.plugins.allocators.gnn_ppo.allocator as allocator
    from dcbench import ResultsError

    monkeypatch.setattr(allocator, "GraphPolicy", None)  # (calling it would be a TypeError, not these words)
    saved = shipped_weights("tiered-16-1x4")  # five hints: 12 inputs to the first layer, with the links' 2
    damage(saved["model"])
    path = tmp_path / "mismatched.pt"
    torch.save(saved, path)
    with pytest.raises(ResultsError) as refused:
        load_policy(path)
    assert str(refused.value) == f"{path}: {said}; pass one written by `dcbench train --allocator gnn_ppo`"


def test_an_archive_torch_did_not_write_is_refused_before_torch_reads_it(tmp_path, monkeypatch):
    """Compressed entries could expand a thousandfold, and a file past the
    limit is refused by its size alone."""
    import zipfile

    import dcbench.plugins.allocators._learned.checkpoints as checkpoint_files
    from dcbench import ResultsError

    written = tmp_path / "written.pt"
    torch.save(shipped_weights(), written)
    packed = tmp_path / "packed.pt"
    with zipfile.ZipFile(written) as source, zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            target.writestr(entry.filename, source.read(entry))
    monkeypatch.setattr(checkpoint_files.torch, "load", None)  # torch must not be asked
    with pytest.raises(ResultsError, match=r"packed.pt cannot be read by torch.load\(weights_only=True\) \(its "
                                           r"entries are compressed, which torch.save's never are\); pass one"):
        load_policy(packed)
    monkeypatch.setattr(checkpoint_files, "MAX_CHECKPOINT_BYTES", written.stat().st_size - 1)
    with pytest.raises(ResultsError, match=rf"\(it is {written.stat().st_size:,} bytes, more than the "
                                           rf"{written.stat().st_size - 1:,} it may be\)"):
        load_policy(written)


def test_a_checkpoint_with_nan_weights_is_refused(tmp_path):
    from click.testing import CliRunner

    from dcbench.commands import cli
    from dcbench.plugins.allocators._learned.checkpoints import shipped_checkpoints
    from dcbench.plugins.allocators.gnn_ppo.allocator import CHECKPOINTS

    saved = torch.load(shipped_checkpoints(CHECKPOINTS)["tiered-8-1x4"], weights_only=True)
    first = next(iter(saved["model"]))
    saved["model"][first] = torch.full_like(saved["model"][first], float("nan"))
    diverged = tmp_path / "diverged.pt"
    torch.save(saved, diverged)
    result = CliRunner().invoke(cli, ["run", "-a", "gnn_ppo", "--checkpoint", str(diverged), "-t", "tiered:8,1x4",
                                      "-n", "8", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.endswith(f"{diverged} holds NaN or infinite weights (a training run that diverged); "
                                  "pass one written by `dcbench train --allocator gnn_ppo`\n")


SAVE_ON_A_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
import torch
from dcbench.plugins.allocators._learned.checkpoints import save_checkpoint

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
path = Path(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
try:
    save_checkpoint(path, {"model": {"weight": torch.zeros(100_000)}})
except OSError as exc:
    print("OSError", exc.errno, exc.filename == str(path))
except BaseException as exc:
    print(type(exc).__name__)
"""


def test_a_checkpoint_that_does_not_fit_on_the_disk_is_an_os_error_and_the_previous_one_stays(tmp_path):
    # torch.save writing a file itself raised RuntimeError ("unexpected pos ..."), a traceback on the command line
    import errno
    import subprocess
    import sys

    path = tmp_path / "x.pt"
    path.write_bytes(b"PK\x03\x04 the previous checkpoint")
    done = subprocess.run([sys.executable, "-c", SAVE_ON_A_FULL_DISK, str(path)], capture_output=True, text=True)
    assert done.stdout.split() == ["OSError", str(errno.EFBIG), "True"], done.stderr  # named by the checkpoint
    assert path.read_bytes() == b"PK\x03\x04 the previous checkpoint"
    assert [p.name for p in tmp_path.iterdir()] == ["x.pt"]
