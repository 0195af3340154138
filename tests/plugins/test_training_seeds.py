"""The training seeds the learned allocators declare (`register(training_seeds=...)`, which marks their leaderboard
entries clean) are the seeds their trainers draw: every episode a training starts lies in them, none in the suites'
test seeds."""

import pytest

from dcbench.envs import AllocationEnv
from dcbench.model.about import seed_ranges
from dcbench.registry import get_registry


@pytest.fixture
def episode_seeds(monkeypatch):
    seeds = []
    reset = AllocationEnv.reset

    def recorded(self, *, seed=None, options=None):
        seeds.append(seed)
        return reset(self, seed=seed, options=options)

    monkeypatch.setattr(AllocationEnv, "reset", recorded)
    return seeds


def within_declared(allocator, seeds):
    ranges = seed_ranges(get_registry().entries("allocator")[allocator].training_seeds)
    return all(any(low <= seed and (high is None or seed <= high) for low, high in ranges) for seed in seeds)


def test_gnn_ppo_trains_and_validates_on_the_seeds_it_declares(tmp_path, episode_seeds):
    from dcbench.plugins.allocators.gnn_ppo.train import train

    train("tiered:8,1x4", steps=64, seed=5, out=tmp_path / "a.pt", envs=2, batch=64, minibatch=32, epochs=1,
          imitation_episodes=1, imitation_epochs=1, episode_requests=4, validate_every=1, validation_episodes=2)
    assert episode_seeds and None not in episode_seeds
    assert within_declared("gnn_ppo", episode_seeds) and not set(episode_seeds) & set(range(5))
    assert not within_declared("gnn_ppo", [4])  # (the check can fail)


def test_a2c_multistep_trains_warm_starts_and_validates_on_the_seeds_it_declares(tmp_path, episode_seeds):
    from dcbench.plugins.allocators.a2c_multistep.train import train

    train("ocs:16", "vmjobs:load=66", steps=200, seed=3, out=tmp_path / "a.pt",
          options={"episode_jobs": "50", "imitation_jobs": "20", "validation_episodes": "1", "validation_jobs": "20"})
    assert episode_seeds and None not in episode_seeds
    assert 3 * 100_000_000 + 500_000 in episode_seeds  # the warm start's first episode (seed 3)
    assert within_declared("a2c_multistep", episode_seeds)
