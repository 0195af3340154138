"""The `policy` allocator and the policy store: a policy runs, sweeps and is
submitted by its content's id, never by its path."""

import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import dcbench.envs
from dcbench import SpecError
from dcbench.commands import cli
from dcbench.envs import POLICY_ALLOCATOR, AllocationEnv, add_policy, evaluate, load_policy, stored_policies
from dcbench.harness import Runner
from dcbench.publishing.submissions import registered_problem, spec_problem

LAST = ("import numpy as np\n\n\n"
        "def policy(observation):\n"
        "    return int(np.flatnonzero(observation['action_mask'])[-1])\n")


@pytest.fixture
def store(tmp_path, monkeypatch):
    folder = tmp_path / "store"
    monkeypatch.setenv("DCBENCH_POLICIES", str(folder))
    return folder


def test_the_env_names_the_allocator_that_runs_policies(registry):
    entry = registry.get("allocator", POLICY_ALLOCATOR)
    assert entry.builtin and entry.extra["learned"] and entry.extra["demands"] == ("pool", "job")
    assert "sha256" in [param.name for param in entry.params]


def test_without_a_policy_it_takes_the_first_allowed_action():
    result = Runner().run("policy", "tiered:8,1x4", requests=40, seed=1)
    [row] = evaluate(lambda o: int(np.flatnonzero(o["action_mask"])[0]), dcbench.Scenario("tiered:8,1x4"),
                     requests=40, seeds=[1])
    assert result.summary["accepted"] == row["accepted"] > 0
    assert result.summary["allocator_fingerprint"] == "" and result.summary["allocator"] == "policy"


def test_reconfigure_is_in_a_runs_spec_only_where_given_and_defaults_to_yes_for_jobs():
    runner = Runner()
    jobs = {"topology": "ocs:32,servers=2", "workload": "vmjobs:load=20,warmup=5", "requests": 40, "seed": 0}
    default, given = runner.run("policy", **jobs), runner.run("policy:reconfigure=yes", **jobs)
    fixed = runner.run("policy:reconfigure=no", **jobs)
    assert (default.summary["allocator"], given.summary["allocator"], fixed.summary["allocator"]) == (
        "policy", "policy:reconfigure=yes", "policy:reconfigure=no")
    assert default.tables.requests["outcome"].tolist() == given.tables.requests["outcome"].tolist()
    assert default.summary["reconfigurations_per_job"] == given.summary["reconfigurations_per_job"] > 0
    assert fixed.summary["reconfigurations_per_job"] == 0


def test_a_python_file_is_stored_by_its_content_not_its_path(tmp_path, store):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{folder}.py").write_text(LAST)
    first, second = add_policy(tmp_path / "a" / "a.py", name="last"), add_policy(str(tmp_path / "b" / "b.py"))
    assert first.id == second.id and first.spec == f"policy:sha256={first.id}" and len(first.id) == 16
    assert [p.id for p in stored_policies()] == [first.id] and stored_policies()[0].name == "last"
    assert str(tmp_path) not in first.spec
    runner = Runner()
    run = runner.run(first.spec, "tiered:8,1x4", requests=30, seed=0)
    assert run.summary["allocator_fingerprint"] == f"sha256={first.sha256}"
    (tmp_path / "b" / "b.py").write_text(LAST.replace("[-1]", "[-2]"))
    edited = add_policy(tmp_path / "b" / "b.py")
    assert edited.id != first.id
    assert runner.run(edited.spec, "tiered:8,1x4", requests=30, seed=0).run_id != run.run_id
    (tmp_path / "named.py").write_text(LAST.replace("def policy", "def last"))
    named = add_policy(f"{tmp_path / 'named.py'}:last")
    assert named.attribute == "last" and named.id not in (first.id, edited.id)


def test_a_run_of_a_stored_policy_can_be_submitted():
    spec = "policy:sha256=0123456789abcdef,reconfigure=yes"
    assert spec_problem("allocator", spec) is None
    assert registered_problem(spec, dcbench.harness.get_registry()) is None


def test_a_file_read_by_a_loader(tmp_path, store, monkeypatch):
    (tmp_path / "weighted.py").write_text(
        "import numpy as np\n\n\n"
        "class Weighted:\n"
        "    def __init__(self, weights):\n"
        "        self.weights = weights\n\n"
        "    def __call__(self, observation):\n"
        "        return int(np.argmax(np.where(observation['action_mask'] != 0, self.weights, -np.inf)))\n\n\n"
        "def load(path):\n"
        "    return Weighted(np.load(path)['weights'])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    np.savez(tmp_path / "w.npz", weights=np.arange(64.0))
    with pytest.raises(SpecError, match="is not a Python file: give --loader MODULE:FUNCTION"):
        add_policy(tmp_path / "w.npz")
    with pytest.raises(SpecError, match="cannot import 'weightd'"):
        add_policy(tmp_path / "w.npz", loader="weightd:load")
    stored = add_policy(tmp_path / "w.npz", loader="weighted:load")
    assert stored.kind == "file" and stored.file == "policy.npz"
    policy, digest = load_policy(stored.id)
    assert digest == stored.sha256 and list(policy.weights) == list(np.arange(64.0))
    result = Runner().run(stored.spec, "tiered:8,1x4", requests=30, seed=0)
    assert result.summary["accepted"] > 0
    # the stored copy is what runs: changed, it is refused, never run as the same id
    (stored.folder / stored.file).write_bytes(b"something else")
    sys.modules["dcbench.envs.evaluate"]._LOADED.clear()  # (loaded once per process)
    with pytest.raises(SpecError, match="is not the one added"):
        load_policy(stored.id)


def test_a_module_policy_is_checked_against_its_content_when_it_loads(tmp_path, store, monkeypatch):
    (tmp_path / "greedy.py").write_text(LAST)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "greedy", raising=False)
    stored = add_policy("greedy:policy")
    assert stored.kind == "module" and stored.source == "greedy:policy"
    import greedy

    monkeypatch.setattr(greedy, "policy", lambda observation: 0)
    with pytest.raises(SpecError, match=f"policy {stored.id} \\(greedy:policy\\) has changed since it was added"):
        load_policy(stored.id)


@pytest.mark.parametrize("spec, message", [
    ("policy:sha256=xyz", "sha256='xyz' is not a policy's id: 16 lowercase hex digits"),
    ("policy:sha256=0123456789ABCDEF", "is not a policy's id"),
    ("policy:sha256=0123456789abcdef", "policy 0123456789abcdef is not in the policy store here"),
])
def test_an_id_that_is_not_a_stored_policys_is_a_one_line_error(store, spec, message):
    with pytest.raises(SpecError, match=message):
        Runner().run(spec, "tiered:8,1x4", requests=10)


def test_the_policy_command_adds_and_lists(tmp_path, store):
    (tmp_path / "last.py").write_text(LAST)
    runner = CliRunner()
    empty = runner.invoke(cli, ["policy", "list"])
    assert empty.exit_code == 0 and "no policy in" in empty.output
    added = runner.invoke(cli, ["policy", "add", str(tmp_path / "last.py"), "--name", "last"])
    assert added.exit_code == 0, added.output
    spec = added.stdout.strip()
    assert spec.startswith("policy:sha256=") and len(spec) == len("policy:sha256=") + 16
    listed = runner.invoke(cli, ["policy", "list"])
    assert listed.stdout.split()[:3] == [spec.split("=")[1], "python", "last"]
    missing = runner.invoke(cli, ["policy", "add", str(tmp_path / "nothing.py")])
    assert missing.exit_code == 2 and "is not MODULE:ATTRIBUTE" in missing.output
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no weights')\n")
    failed = runner.invoke(cli, ["policy", "add", str(broken)])
    assert failed.exit_code == 2 and "RuntimeError: no weights" in failed.output
    assert [p.id for p in stored_policies()] == [spec.split("=")[1]]  # nothing of the failed add is left


def test_a_sweep_of_a_stored_policy_is_submitted_and_verified(tmp_path, store):
    (tmp_path / "last.py").write_text(LAST)
    spec = add_policy(tmp_path / "last.py").spec
    runner = CliRunner()
    out, root = tmp_path / "nara2022", tmp_path / "board"
    swept = runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", spec, "--out", str(out), "-j", "1", "-q"])
    assert swept.exit_code == 0, swept.output
    submitted = runner.invoke(cli, ["leaderboard", "--root", str(root), "submit", str(out)])
    assert submitted.exit_code == 0, submitted.output
    verified = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "-n", "3", "-q"])
    assert verified.exit_code == 0 and "3 runs re-run: every one gave the submitted summary" in verified.output
    built = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert built.exit_code == 0 and f"| {spec} | learned |" in (root / "README.md").read_text()
    # where the policy is not in the store, its runs are skipped as runs of a plugin not installed are
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DCBENCH_POLICIES", str(tmp_path / "elsewhere"))
        lacking = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "-n", "2"])
    assert lacking.exit_code == 2 and "none of the 2 runs drawn can be re-run here" in lacking.output
    assert "skipped (policy " in lacking.stdout and "is not in the policy store here" in lacking.stdout


def test_a_maskable_ppo_model_runs_as_in_the_environment(tmp_path, store):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    topology, workload, requests, seed = "tiered:8,1x4", "uniform:pairs=reference", 40, 2
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", AllocationEnv(topology, workload, requests=requests), seed=0)
    model.save(tmp_path / "model.zip")
    stored = add_policy(tmp_path / "model.zip", loader="sb3_contrib:MaskablePPO.load")
    env = AllocationEnv(topology, workload, requests=requests)
    observation, info = env.reset(seed=seed)
    done = info["done"]
    while not done:
        action, _ = model.predict(observation, action_masks=observation["action_mask"] != 0, deterministic=True)
        observation, _, done, _, info = env.step(action)
    result = Runner().run(stored.spec, topology, workload, requests, seed)
    assert list(result.tables.requests["outcome"]) == list(env.simulation.outcome)
    [row] = evaluate(model, dcbench.Scenario(topology, workload, requests), seeds=[seed])
    assert row["accepted"] == info["accepted"] == result.summary["accepted"]


def test_the_plugin_imports_no_gymnasium_until_it_is_built():
    code = ("import sys; from dcbench.harness import get_registry; get_registry().get('allocator', 'policy'); "
            "assert 'gymnasium' not in sys.modules and 'dcbench.envs' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
