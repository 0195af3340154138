"""The native vector env (#49, point 2): ``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
steps N episodes, each the single env's on its seed, with autoreset, masks and per-env seeds."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import dcbench.envs  # noqa: F401  (registers the environments)
from dcbench import AllocatorError, SpecError
from dcbench.envs import VectorAllocationEnv, suite_envs

POOL = ("dcbench/nara2022-8-1x4-v0", {"requests": 12})
# the batched engine on each pair rule, with and without waiting, on a fabric of several racks
ALL_PAIRS = ("dcbench/Allocation-v0", {"topology": "tiered:32,1x4", "workload": "uniform:pairs=all", "requests": 40})
CPU_PAIRS = ("dcbench/Allocation-v0", {"topology": "tiered:32,1x4", "workload": "uniform:pairs=cpu,min_cpu=0,wait=no",
                                       "requests": 40})
REFERENCE = ("dcbench/Allocation-v0", {"topology": "tiered:8,1x1", "workload": "uniform:min_cpu=0,hold=60",
                                       "requests": 40})
HINTS = ("dcbench/nara2022-8-1x4-v0", {"requests": 6, "hints": True})
# a small OCS fabric with a short warm-up, as dcbench.testing checks jobs on
JOB = ("dcbench/Allocation-v0", {"topology": "ocs:4,servers=4", "workload": "vmjobs:load=4,warmup=10", "requests": 6})
FIXED = ("dcbench/Allocation-v0", {**JOB[1], "reconfigure": False})


def make_vec(case, n, **more):
    env_id, kwargs = case
    return gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point", **kwargs, **more)


def actions_for(masks, rng):
    """A random allowed action per env, and now and then one outside the mask (or the action space)."""
    chosen = (rng.random(masks.shape) * masks).argmax(axis=1)
    odd = rng.random(len(masks)) < 0.05
    chosen[odd] = rng.integers(0, masks.shape[1] + 1, odd.sum())
    return chosen


def info_of(infos, i):
    """Env i's keys of a vector env's ``infos``."""
    return {key: value[i] for key, value in infos.items()
            if not key.startswith("_") and infos.get(f"_{key}", np.ones(1, bool)).any() and infos[f"_{key}"][i]}


def assert_same(value, expected):
    if isinstance(expected, float) and np.isnan(expected):
        assert np.isnan(value)
    else:
        np.testing.assert_array_equal(value, expected)


@pytest.mark.parametrize("case, batched", [(POOL, True), (ALL_PAIRS, True), (CPU_PAIRS, True), (REFERENCE, True),
                                           (POOL, False), (HINTS, True), (JOB, True), (FIXED, True)],
                         ids=["pool", "pairs-all", "pairs-cpu-no-wait", "pairs-reference", "pool-by-episode",
                              "hints", "job", "job-fixed"])
def test_each_episode_of_the_batch_is_the_single_envs_on_its_seed_step_by_step(case, batched):
    n, seed = 3, 1_000_000
    vector = make_vec(case, n, batched=batched)
    assert (vector.unbatched_reason is None) == (batched and case not in (HINTS, JOB, FIXED))
    singles = [gymnasium.make(case[0], **case[1]).unwrapped for _ in range(n)]
    obs, infos = vector.reset(seed=seed)
    expected = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    ended, reset_next, rng = np.zeros(n, int), [False] * n, np.random.default_rng(5)
    for _ in range(300):
        for i, (single_obs, single_info) in enumerate(expected):
            for key, value in single_obs.items():
                np.testing.assert_array_equal(obs[key][i], value, err_msg=key)  # bit for bit
            np.testing.assert_array_equal(vector.action_masks()[i], singles[i].action_masks())
            for key, value in single_info.items():
                assert_same(info_of(infos, i)[key], value)
        actions = actions_for(obs["action_mask"], rng)
        obs, rewards, terminated, truncated, infos = vector.step(actions)
        for i, env in enumerate(singles):
            if reset_next[i]:  # NEXT_STEP: the step after the last resets, reward 0
                single_obs, single_info = env.reset()
                reward, done = 0.0, False
            else:
                single_obs, reward, done, _, single_info = env.step(int(actions[i]))
            reset_next[i] = done
            expected[i] = (single_obs, single_info)
            assert (rewards[i], terminated[i], truncated[i]) == (reward, done, False)
            assert vector.envs[i].episode_seed == env.episode_seed
        ended += terminated
    assert (ended >= 1).all()  # every env went through an autoreset


def test_pool_episodes_are_batched_from_eight_envs_where_the_batch_can_step_them():
    assert make_vec(POOL, 2).unbatched_reason == "fewer than 8 envs"
    assert make_vec(POOL, 8).unbatched_reason is None
    assert make_vec(POOL, 8, batched=False).unbatched_reason == "batched=False"
    assert "hint features" in make_vec(HINTS, 8).unbatched_reason
    assert "job" in make_vec(JOB, 8).unbatched_reason
    published = gymnasium.make_vec("dcbench/nara2022-published-8-1x4-v0", num_envs=8, batched=True, requests=4)
    assert "allowed=free" in published.unbatched_reason
    with pytest.raises(SpecError, match="batched must be"):
        make_vec(POOL, 2, batched="yes")


def test_same_step_autoreset_resets_in_the_ending_step_and_keeps_the_last_observation():
    vector = make_vec(POOL, 2, autoreset_mode=AutoresetMode.SAME_STEP, batched=True)
    assert vector.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    single = gymnasium.make(POOL[0], **POOL[1]).unwrapped
    obs, _ = vector.reset(seed=1_000_000)
    single.reset(seed=1_000_000)
    rng = np.random.default_rng(0)
    while True:
        actions = actions_for(obs["action_mask"], rng)
        obs, rewards, terminated, _, infos = vector.step(actions)
        single_obs, reward, done, _, single_info = single.step(int(actions[0]))
        assert (rewards[0], terminated[0]) == (reward, done)
        if done:
            break
    final = infos["final_obs"][0]
    assert (final["action_mask"] == 1).all() and not final["node_features"].any()
    assert info_of(infos["final_info"], 0)["acceptance_ratio"] == single_info["acceptance_ratio"]
    first_obs, _ = single.reset()  # the next episode is there already
    for key, value in first_obs.items():
        np.testing.assert_array_equal(obs[key][0], value)


def test_per_env_seeds():
    vector = make_vec(POOL, 3)
    vector.reset(seed=[7_000_001, None, np.int64(7_000_003)])
    seeds = vector.get_attr("episode_seed")
    assert seeds[0] == 7_000_001 and seeds[2] == 7_000_003 and seeds[1] >= 3_000_000
    vector.reset(seed=1_000_000)
    assert vector.get_attr("episode_seed") == (1_000_000, 1_000_001, 1_000_002)
    with pytest.raises(SpecError, match="one seed per env"):
        vector.reset(seed=[1, 2])


def test_masks_before_reset_and_through_call():
    vector = gymnasium.make_vec(JOB[0], num_envs=2, **JOB[1])  # the default mode, where an id has an entry point
    assert isinstance(vector, VectorAllocationEnv) and vector.kind == "job"
    assert vector.action_masks().all() and vector.action_masks().shape == (2, 4)
    obs, _ = vector.reset(seed=1_000_000)
    np.testing.assert_array_equal(np.stack(vector.call("action_masks")), obs["action_mask"].astype(bool))
    assert vector.get_attr("graph")[0] is vector.envs[0].graph


def test_bad_actions_and_settings_are_refused():
    vector = make_vec(POOL, 2)
    with pytest.raises(gymnasium.error.ResetNeeded):
        vector.step(np.zeros(2, np.int64))
    vector.reset(seed=1_000_000)
    for actions in (np.zeros(3, np.int64), np.zeros(2), [[0, 0]]):
        with pytest.raises(AllocatorError, match="actions must be 2 integers"):
            vector.step(actions)
    for num_envs in (0, 1.5, True):
        with pytest.raises(SpecError, match="num_envs must be"):
            make_vec(POOL, num_envs)
    with pytest.raises(SpecError, match="autoreset_mode"):
        make_vec(POOL, 2, autoreset_mode=AutoresetMode.DISABLED)


def test_make_vec_works_for_every_registered_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where no trace was downloaded
    traced = {env.id for env in suite_envs() if (env.scenario.workload or "").startswith("trace:")}
    for env_id in traced:  # a trace file nobody downloaded here: the single env's error
        with pytest.raises(SpecError, match="no trace file"):
            gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point")
    ids = ["dcbench/Allocation-v0", *(env.id for env in suite_envs() if env.id not in traced)]
    assert any("odcn2025" in env_id for env_id in ids)  # jobs too
    for env_id in ids:
        vector = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", requests=1,
                                    batched=True)
        assert isinstance(vector, VectorAllocationEnv)
        assert vector.observation_space == gymnasium.vector.utils.batch_space(vector.single_observation_space, 2)
        obs, _ = vector.reset(seed=1_000_000)
        assert obs in vector.observation_space
        obs, *_ = vector.step((np.random.default_rng(0).random(obs["action_mask"].shape)
                               * obs["action_mask"]).argmax(axis=1))
        assert obs in vector.observation_space


@pytest.mark.slow
def test_maskable_ppo_learns_on_the_vector_env():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    vector = make_vec((POOL[0], {"requests": 2}), 8)  # batched
    assert vector.unbatched_reason is None
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", vector.as_sb3(), n_steps=16, batch_size=32, n_epochs=1,
                                    seed=1_000_000, device="cpu")
    model.learn(128)
    assert model.num_timesteps == 128
    assert vector.get_attr("episode_seed")[1] != 1_000_001  # autoreset: episodes after the first
