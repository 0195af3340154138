"""The benchmark as RL researchers use it (#31, points 1 and 2): one
registered Gymnasium id per suite scenario, with its seeds, and masks where
the RL libraries look for them."""

import importlib.metadata
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from click.testing import CliRunner
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import dcbench.envs  # noqa: F401  (registers the environments)
from dcbench import Scenario, SpecError, UnknownPluginError
from dcbench.envs import (
    VALIDATION_SEEDS,
    AllocationEnv,
    ScenarioEnv,
    SeedSplit,
    SuiteEnv,
    env_id,
    register_suite_envs,
    scenario_episode,
    suite_envs,
)
from dcbench.harness import Runner, get_registry
from dcbench.running.runner import draw_requests


def test_every_suite_scenario_has_its_registered_id():
    ids = [env.id for env in suite_envs()]
    scenarios = sum(len(suite.scenarios) for suite in get_registry().entries("suite").values())
    assert len(ids) == len(set(ids)) == scenarios
    assert {"dcbench/nara2022-8-1x16-v0", "dcbench/nara2022-large-32-1x4-v0",
            "dcbench/odcn2025-16x32-load66-v0", "dcbench/odcn2025-64x128-load1320-v0"} <= set(ids)
    for env in suite_envs():
        spec = gymnasium.spec(env.id)
        assert spec.entry_point == "dcbench.envs:ScenarioEnv"
        assert spec.kwargs == {"suite": env.suite, "scenario": env.scenario.label}
        assert gymnasium.envs.registration.parse_env_id(env.id) == ("dcbench", env.id[8:-3], 0)
    assert "dcbench/Allocation-v0" in gymnasium.registry  # custom specs, as before


def test_an_id_is_the_suite_and_the_scenario_made_valid():
    assert env_id("nara2022", "8-1x16") == "dcbench/nara2022-8-1x16-v0"
    assert env_id("mine", "tiered:8,1x4") == "dcbench/mine-tiered-8-1x4-v0"  # a label that is a topology spec
    assert env_id("dcbench-firstfit.firstfit-small", "uniform 8 × 16") == \
        "dcbench/dcbench-firstfit.firstfit-small-uniform-8-16-v0"
    for made in (env_id("a", "b=c/d:e"), env_id("x.y", "ocs:16,servers=64")):
        assert ":" not in made and made.count("/") == 1
        assert gymnasium.envs.registration.ENV_ID_RE.fullmatch(made)


def test_importing_dcbench_envs_registers_them_and_the_module_prefixed_id_imports_it():
    code = ("import gymnasium; assert 'dcbench/nara2022-8-1x16-v0' not in gymnasium.registry; "
            "env = gymnasium.make('dcbench.envs:dcbench/nara2022-8-1x16-v0'); "
            "assert env.unwrapped.scenario.label == '8-1x16'")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_a_scenario_env_is_the_scenario_with_its_seeds():
    env = gymnasium.make("dcbench/nara2022-8-1x16-v0").unwrapped
    scenario = next(s for s in get_registry().get("suite", "nara2022").scenarios if s.label == "8-1x16")
    assert isinstance(env, ScenarioEnv) and env.scenario == scenario and env.suite == "nara2022"
    assert env.plan.topology == Runner().resolve_scenario(scenario.topology).topology
    assert (env.requests, env.warmup, env.measured_requests) == (128, 0, 128)
    assert env.seeds.test == (0, 1, 2, 3, 4) and env.seeds.validation == VALIDATION_SEEDS
    # reset(seed=s) is the suite's run on seed s: the same requests
    env.reset(seed=2)
    expected = draw_requests(env.plan, 128, np.random.default_rng(2).spawn(2)[0])
    assert np.array_equal(env.simulation.sequence.demand, expected.demand)


def test_a_job_episode_counts_its_measured_requests_after_the_warm_up():
    env = gymnasium.make("dcbench/odcn2025-16x32-load66-v0", requests=128).unwrapped
    assert (env.warmup, env.measured_requests, env.requests) == (330, 128, 458)
    env.reset(seed=0)
    assert env.simulation.measured.sum() == 128 and not env.simulation.measured[:330].any()
    default = ScenarioEnv("odcn2025", "16x32-load66")
    assert (default.warmup, default.measured_requests, default.requests) == (330, 10_000, 10_330)  # the suite's run
    assert scenario_episode(default.scenario) == (10_000, 330)
    for requests in (0, -1, 2.5, True, "128"):
        with pytest.raises(SpecError, match="requests must be a whole number of measured requests"):
            ScenarioEnv("odcn2025", "16x32-load66", requests=requests)
    with pytest.raises(SpecError, match="has no scenario 'nope'; its scenarios are 16x32-load54, "):
        gymnasium.make("dcbench/odcn2025-16x32-load66-v0", scenario="nope")
    with pytest.raises(UnknownPluginError):
        ScenarioEnv("nope", "x")


def test_the_end_of_an_episode_reports_the_acceptance_of_the_measured_requests():
    env = gymnasium.make("dcbench/odcn2025-16x32-load54-v0", requests=20).unwrapped
    observation, _ = env.reset(seed=0)
    done, info = False, {}
    while not done:
        observation, _, done, _, info = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
    measured = env.simulation.measured
    accepted = env.simulation.outcome == "accepted"
    offered = measured & (env.simulation.outcome != "skipped")
    assert offered.sum() == 20
    assert info["measured_acceptance_ratio"] == (accepted & offered).sum() / 20
    pool = gymnasium.make("dcbench/nara2022-8-1x4-v0").unwrapped  # no warm-up: the two are the same
    observation, _ = pool.reset(seed=0)
    done = False
    while not done:
        observation, _, done, _, info = pool.step(int(np.flatnonzero(observation["action_mask"])[0]))
    assert info["measured_acceptance_ratio"] == info["acceptance_ratio"]


@pytest.mark.parametrize("env_id_, settings", [("dcbench/nara2022-8-1x4-v0", {}),
                                                ("dcbench/odcn2025-16x32-load54-v0", {"requests": 16})])
def test_check_env_passes_on_a_registered_id(env_id_, settings):
    env = gymnasium.make(env_id_, **settings)
    check_env(env.unwrapped, skip_render_check=True)
    first, second = gymnasium.make(env_id_, **settings), gymnasium.make(env_id_, **settings)
    a, _ = first.reset(seed=7)
    b, _ = second.reset(seed=7)
    for _ in range(30):  # the same seed, the same episode
        assert all(np.array_equal(a[key], b[key]) for key in a)
        action = int(np.flatnonzero(a["action_mask"])[-1])
        a, ra, done, _, _ = first.step(action)
        b, rb, _, _, _ = second.step(action)
        assert ra == rb
        if done:
            break


def test_seeds_are_split_so_that_nobody_trains_on_the_test_seeds():
    split = SeedSplit((0, 1, 2, 3, 4))
    assert [split.role(seed) for seed in (0, 4, 5, 999_999, 1_000_000, 2_000_000, 2_999_999, 3_000_000)] == \
        ["test", "test", "none", "none", "training", "validation", "validation", "training"]
    assert split.training(0) == 1_000_000 and split.training(7, run=2) == 201_000_007  # the shipped trainers'
    assert all(split.role(split.training(episode, run)) == "training"
               for episode in (0, 999_999) for run in (0, 1, 30))
    with pytest.raises(ValueError, match="episode must be 0 to 999,999"):
        split.training(1_000_000)
    with pytest.raises(ValueError, match="one of this scenario's test seeds"):
        SeedSplit((1_000_003,)).training(3)
    env = gymnasium.make("dcbench/nara2022-8-1x4-v0").unwrapped
    env.reset(seed=1)
    assert env.episode_seed == 1
    for _ in range(20):  # reset() without a seed: a training seed, never a validation or test one
        env.reset()
        assert env.seeds.role(env.episode_seed) == "training" and env.episode_seed >= VALIDATION_SEEDS.stop
    assert AllocationEnv("tiered:8,1x4", requests=4).seeds.test == ()


def masked_episode(env, seed):
    """Every observation of an episode of first-allowed actions, with what action_masks() said at it."""
    get_masks = env.get_wrapper_attr("action_masks")  # what sb3-contrib's vec envs call (env_method)
    observation, _ = env.reset(seed=seed)
    seen = [(observation, get_masks())]
    done = False
    while not done:
        observation, _, done, _, _ = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        seen.append((observation, get_masks()))
    return seen


@pytest.mark.parametrize("env_id_, settings", [("dcbench/nara2022-8-1x4-v0", {}),
                                                ("dcbench/odcn2025-16x32-load54-v0", {"requests": 10})])
def test_action_masks_is_the_observations_mask_and_the_terminal_mask_allows_something(env_id_, settings):
    env = gymnasium.make(env_id_, **settings)  # wrapped, as gymnasium.make returns it
    before = env.get_wrapper_attr("action_masks")()  # before the first reset: as at the end
    seen = masked_episode(env, seed=0)
    assert len(seen) > 10
    for observation, masks in seen:
        assert masks.dtype == np.bool_ and masks.shape == (env.action_space.n,)
        assert np.array_equal(masks, observation["action_mask"].astype(bool))
        assert masks.any()
    terminal, masks = seen[-1]
    assert masks.all() and (terminal["action_mask"] == 1).all()  # no decision pending: any action, never taken
    assert np.array_equal(before, masks)
    assert all((value == 0).all() for key, value in terminal.items() if key != "action_mask")
    masks[:] = False  # a copy: the env's own stays
    assert env.unwrapped.action_masks().all()


def test_a_vector_env_never_shows_an_empty_mask():
    def make():
        return gymnasium.make("dcbench/nara2022-8-1x4-v0", requests=6)

    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        envs = SyncVectorEnv([make, make], autoreset_mode=mode)
        observation, _ = envs.reset(seed=0)
        ends = 0
        for _ in range(200):
            masks = np.stack(envs.call("action_masks"))
            assert np.array_equal(masks, observation["action_mask"].astype(bool)) and masks.any(axis=1).all()
            actions = np.array([np.flatnonzero(mask)[0] for mask in masks])
            observation, _, terminated, _, _ = envs.step(actions)
            ends += int(terminated.sum())
        assert ends >= 4
        envs.close()


def test_a_third_party_suite_gets_its_qualified_id(tmp_path, monkeypatch):
    from dcbench.registry import create_registry

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)
    monkeypatch.delenv("DCBENCH_DISABLE_PLUGINS", raising=False)
    info = tmp_path / "dcbench_envtest-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dcbench-envtest\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[dcbench]\nenvtest = tp_envtest_suite\n")
    (tmp_path / "tp_envtest_suite.py").write_text(
        "from dcbench import Scenario, Suite, hookimpl\n\n@hookimpl\ndef register_suites(register):\n"
        "    register(Suite('small', (Scenario('tiered:8,1x4', requests=8, seeds=(0, 1)),\n"
        "                             Scenario('tiered:8,1x4', requests=8, name='tiered-8-1x4'))))\n")
    (dist,) = [d for d in importlib.metadata.distributions(path=[str(tmp_path)])
               if d.metadata["Name"] == "dcbench-envtest"]
    registry = create_registry(dist.entry_points.select(group="dcbench"))
    try:
        with pytest.warns(UserWarning, match="scenario 'tiered-8-1x4' has no environment: its id "
                          "dcbench/dcbench-envtest.small-tiered-8-1x4-v0 is that of suite 'dcbench-envtest.small' "
                          "scenario 'tiered:8,1x4'"):
            ids = register_suite_envs(registry)
        assert "dcbench/dcbench-envtest.small-tiered-8-1x4-v0" in ids and "dcbench/nara2022-8-1x4-v0" in ids
        # (gymnasium.make deep-copies its keywords, a runner's plugins too: the spec's keywords, made here)
        env = ScenarioEnv(**gymnasium.spec("dcbench/dcbench-envtest.small-tiered-8-1x4-v0").kwargs,
                          runner=Runner(registry))
        assert env.suite == "dcbench-envtest.small" and env.seeds.test == (0, 1) and env.requests == 8
        check_env(env, skip_render_check=True)
    finally:
        del sys.modules["tp_envtest_suite"]
        register_suite_envs()  # back to the process's plugins: the third party's id is gone
    assert "dcbench/dcbench-envtest.small-tiered-8-1x4-v0" not in gymnasium.registry


def test_an_id_someone_else_registered_is_left_alone():
    gymnasium.registry.pop("dcbench/nara2022-8-1x1-v0")
    gymnasium.register("dcbench/nara2022-8-1x1-v0", entry_point="dcbench.envs:AllocationEnv")
    try:
        with pytest.warns(UserWarning, match="already registered by dcbench.envs:AllocationEnv"):
            import dcbench.envs.suites as suites

            suites._REGISTERED.discard("dcbench/nara2022-8-1x1-v0")
            assert "dcbench/nara2022-8-1x1-v0" not in register_suite_envs()
    finally:
        gymnasium.registry.pop("dcbench/nara2022-8-1x1-v0")
        register_suite_envs()
    assert gymnasium.spec("dcbench/nara2022-8-1x1-v0").entry_point == "dcbench.envs:ScenarioEnv"


def test_list_envs_shows_every_id_with_its_measured_requests_warmup_and_test_seeds_in_80_columns():
    from dcbench.commands import cli

    result = CliRunner().invoke(cli, ["list", "envs"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0] == "environments" and lines[1].split() == ["id", "measured", "warm-up", "test", "seeds"]
    row = next(line for line in lines if "dcbench/odcn2025-16x32-load66-v0" in line).split()
    assert row == ["dcbench/odcn2025-16x32-load66-v0", "10,000", "330", "0..4"]
    assert next(line for line in lines if "dcbench/nara2022-8-1x16-v0" in line).split()[1:] == ["128", "-", "0..4"]
    listed = {line.split()[0] for line in lines if line.startswith("  dcbench/") and len(line.split()) == 4}
    assert listed == {env.id for env in suite_envs()}
    assert "dcbench/Allocation-v0 takes any topology and workload" in " ".join(lines)
    assert CliRunner().invoke(cli, ["list", "env"]).output == result.output
    assert "did you mean 'envs'?" in CliRunner().invoke(cli, ["list", "evns"]).output


def test_list_envs_says_once_why_the_ids_of_a_trace_not_here_have_no_counts(tmp_path, monkeypatch):
    from dcbench.commands import cli

    monkeypatch.chdir(tmp_path)  # (the openb2023 suites replay traces/openb2023-default.csv, not downloaded here)
    lines = CliRunner().invoke(cli, ["list", "envs"]).output.splitlines()
    openb = [line.split() for line in lines if line.startswith("  dcbench/openb2023")]
    assert len(openb) == 4 and all(row[1:] == ["n/a", "-", "0..4"] for row in openb)
    assert [line for line in lines if "n/a:" in line] == [
        "  n/a: no trace file 'traces/openb2023-default.csv'; the scenario replays the"]
    assert max(len(line) for line in lines) <= 80


def test_env_listing_puts_an_id_too_long_for_80_columns_alone_on_its_line(monkeypatch):
    import dcbench.envs.suites as suites

    long = SuiteEnv("dcbench/" + "x" * 70 + "-v0", "nara2022", ScenarioEnv("nara2022", "8-1x4").scenario)
    monkeypatch.setattr(suites, "suite_envs", lambda registry=None: (long,))
    lines = suites.env_listing()
    at = lines.index("  " + long.id)
    assert lines[at + 1].split() == ["128", "-", "0..4"]
    assert all(len(line) <= 80 for line in lines if line != lines[at])
    assert suites._seed_ranges((0, 1, 2, 5, 7, 8)) == "0..2,5,7,8"


def test_scenario_is_a_dataclass_of_the_suite():  # (the env's scenario is the suite's own object)
    env = ScenarioEnv("nara2022", "8-1x4")
    assert isinstance(env.scenario, Scenario)



def test_importing_the_envs_registers_every_suite_id_without_loading_torch():
    script = ("import dcbench.envs, gymnasium, sys; "
              "print('dcbench/nara2022-8-1x4-v0' in gymnasium.registry, 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]
