"""Bring your own RL algorithm: sb3-contrib's MaskablePPO on a dcbench
scenario, compared with the heuristics on the suite's test seeds, and
submitted to a leaderboard, with no plugin package to write.

    pip install -e '.[rl]'        # dcbench with sb3-contrib (CPU torch)
    python examples/sb3-maskable-ppo/train_and_submit.py --steps 50000 --leaderboard my-leaderboard

The walk-through is docs/rl.md; what this recipe scores (below `random`
at 50,000 steps), and recipes that do better, are in its "What to expect".
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO

import dcbench.envs
from dcbench.envs import evaluate

HEURISTICS = ("tetris", "nalb", "random")


def train(env_id: str, steps: int, seed: int) -> MaskablePPO:
    """MaskablePPO on the scenario's environment: the mask comes from its
    ``action_masks()``, the observation is a dict (``MultiInputPolicy``)."""
    env = gym.make(env_id)
    # A training seed, not 0: seeds 0..4 are the suite's test seeds (env.unwrapped.seeds.test).
    assert env.unwrapped.seeds.role(seed) == "training", f"{seed} is not a training seed"
    model = MaskablePPO("MultiInputPolicy", env, n_steps=256, batch_size=64, n_epochs=4, seed=seed, verbose=0)
    return model.learn(total_timesteps=steps)


def mean_acceptance(rows: list[dict]) -> float:
    return float(np.nanmean([row["acceptance_ratio"] for row in rows]))


def dcbench(*args: str) -> str:
    """A dcbench command, as a user types it; its standard output."""
    done = subprocess.run([sys.executable, "-m", "dcbench", *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"dcbench {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="dcbench/nara2022-8-1x16-v0", help="a registered scenario (dcbench list envs)")
    parser.add_argument("--steps", type=int, default=50_000, help="environment steps to train")
    parser.add_argument("--seed", type=int, default=1_000_000, help="a training seed (1,000,000 and up)")
    parser.add_argument("--out", type=Path, default=Path("results/maskable-ppo"), help="folder for model and sweep")
    parser.add_argument("--leaderboard", type=Path, default=None,
                        help="a leaderboard folder to submit to (a copy of dcbench's, say); none: no submission")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small networks: one thread is fastest, and runs repeat bit for bit

    model = train(args.env, args.steps, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save(args.out / "model.zip")

    # The scenario it trained on, on the suite's test seeds, beside the heuristics on the same requests.
    spec = gym.spec(args.env)
    scenario = f"{spec.kwargs['suite']}/{spec.kwargs['scenario']}"
    print(f"{scenario}, test seeds: mean acceptance ratio")
    print(f"  maskable-ppo  {mean_acceptance(evaluate(model, args.env)):.3f}")
    for heuristic in HEURISTICS:
        print(f"  {heuristic:<13} {mean_acceptance(evaluate(heuristic, args.env)):.3f}")

    if args.leaderboard is None:
        return
    # Onto the leaderboard: stored by content, swept over the whole suite like any allocator, submitted.
    added = dcbench("policy", "add", str(args.out / "model.zip"), "--loader", "sb3_contrib:MaskablePPO.load")
    allocator = added.splitlines()[0]  # policy:sha256=ID, its id by content
    sweep = args.out / "sweep"
    shutil.rmtree(sweep, ignore_errors=True)
    dcbench("sweep", "-s", spec.kwargs["suite"], "-a", allocator, "--out", str(sweep), "-q")
    # Who it is, and what it trained on: its first episode's seed, then the environment's own training seeds.
    about = args.out / "about.toml"
    about.write_text(f'["{allocator}"]\nname = "MaskablePPO, {args.steps:,} steps"\nkind = "learned"\n'
                     'code = "https://github.com/Stable-Baselines-Team/stable-baselines3-contrib"\n'
                     f'description = "sb3-contrib MaskablePPO with its default network on {args.env}"\n'
                     f'trained_on = "{scenario}"\ntraining_seeds = ["{args.seed}", "3000000.."]\n')
    print(dcbench("leaderboard", "--root", str(args.leaderboard), "submit", str(sweep), "--about", str(about)).strip())
    dcbench("leaderboard", "--root", str(args.leaderboard))
    print(f"ranked in {args.leaderboard / 'README.md'} as {allocator}")


if __name__ == "__main__":
    main()
