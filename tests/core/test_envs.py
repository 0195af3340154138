import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

import dcbench.envs  # noqa: F401  (registers the environment)
from dcbench.envs import AllocationEnv


def test_check_env_passes_on_a_tiered_scenario():
    env = gymnasium.make("dcbench/Allocation-v0", topology="tiered:8,1x4", requests=16)
    check_env(env.unwrapped, skip_render_check=True)


def test_shapes_are_fixed_for_a_topology():
    env = AllocationEnv("tiered:8,1x4", requests=8)
    observation, _ = env.reset(seed=0)
    assert observation["node_features"].shape == (74, 5)  # 64 servers + 10 switches
    assert observation["edge_features"].shape == (152, 2)  # 76 links, both directions
    assert observation["action_mask"].shape == (64,) and env.action_space.n == 64
    for _ in range(5):
        observation, *_ = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        assert env.observation_space.contains(observation)


def test_reset_with_a_seed_is_deterministic():
    env = AllocationEnv("tiered:8,1x4", requests=8)
    first, _ = env.reset(seed=42)
    second, _ = env.reset(seed=42)
    for key in first:
        assert np.array_equal(first[key], second[key])
    third, _ = env.reset(seed=43)
    assert not np.array_equal(first["global_features"], third["global_features"]) or \
        not np.array_equal(first["node_features"], third["node_features"])


def test_rewards_and_an_invalid_action():
    env = AllocationEnv("tiered:8,1x4", requests=4)
    observation, _ = env.reset(seed=0)
    masked = int(np.flatnonzero(observation["action_mask"] == 0)[0]) if (observation["action_mask"] == 0).any() else 64
    _, reward, _, _, info = env.step(masked)
    assert reward == -10.0 and info["invalid_action"]
    total, done = 0.0, False
    while not done:
        observation, reward, done, _, info = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        assert reward in (0.0, 10.0, -10.0, 20.0, -20.0, 0.0)
        total += reward
    assert info["offered"] == 4 and info["acceptance_ratio"] == info["accepted"] / 4


def test_importing_dcbench_does_not_register_the_environment():
    import subprocess
    import sys

    code = ("import dcbench, gymnasium; assert 'dcbench/Allocation-v0' not in gymnasium.registry; "
            "import dcbench.envs; assert 'dcbench/Allocation-v0' in gymnasium.registry")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
