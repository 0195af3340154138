"""What a learning baseline from a standard library reaches (docs/rl.md, "What to expect").

sb3-contrib's MaskablePPO, trained on one registered scenario with a few
recipes, each on several training seeds, then run by
`dcbench.envs.evaluate` on the scenario's test seeds (0..4) beside the
`random` and `tetris` heuristics on the same requests. A recipe's score is
the mean acceptance ratio over the test seeds, one per training seed; the
table gives their mean and the half-width of a 95% Student t interval over
the training seeds (each run's score and training time go to stderr).
Recipes (``--recipes``):

- ``example``: the example's settings (n_steps 256, batch 64, 4 epochs),
  plain observation;
- ``tuned``: plain observation, n_steps 512, batch 128, 10 epochs,
  learning rate 0.001 and γ 0.95;
- ``hints``: the example's settings on ``gym.make(id, hints=True)``;
- ``hints-only``: as ``hints``, the observation cut by Gymnasium's
  ``FilterObservation`` to "hint_features" and "action_mask";
- ``hints-only-tuned``: as ``hints-only`` with ``tuned``'s settings;
- ``hint-rules``: as ``hints-only``, but an action is one of the 7 hint
  columns and the step takes the allowed server it ranks first.

Training runs in parallel processes (``--jobs``), one math thread each.
``--rules`` trains nothing: it runs fixed rules that take the allowed
server highest in one column of the observation, which shows what a
policy could get from each.

    python benchmarks/rl_baseline.py --steps 50000 --recipes example hints-only-tuned hint-rules --jobs 9
    python benchmarks/rl_baseline.py --rules
    python benchmarks/rl_baseline.py --steps 300 --seeds 1000000 1000001 --recipes example   # a smoke run
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

ENV_ID = "dcbench/nara2022-8-1x16-v0"
HEURISTICS = ("random", "tetris")
EXAMPLE_PPO = {"n_steps": 256, "batch_size": 64, "n_epochs": 4}  # examples/sb3-maskable-ppo's settings


TUNED_PPO = {"n_steps": 512, "batch_size": 128, "n_epochs": 10, "learning_rate": 1e-3, "gamma": 0.95}


@dataclass(frozen=True)
class Recipe:
    """How to train: the environment's ``hints``, the observation keys kept (None: all), MaskablePPO's settings, and
    whether an action is a hint rule (`HintRules`) rather than a server."""

    hints: bool
    keep: tuple[str, ...] | None
    ppo: dict
    rules: bool = False


RECIPES = {
    "example": Recipe(False, None, EXAMPLE_PPO),
    "tuned": Recipe(False, None, TUNED_PPO),
    "hints": Recipe(True, None, EXAMPLE_PPO),
    "hints-only": Recipe(True, ("hint_features", "action_mask"), EXAMPLE_PPO),
    "hints-only-tuned": Recipe(True, ("hint_features", "action_mask"), TUNED_PPO),
    "hint-rules": Recipe(True, ("hint_features", "action_mask"), EXAMPLE_PPO, rules=True),
}


def rule_choice(observation, rule: int) -> int:
    """The allowed server that ranks first by hint column ``rule`` (the lowest index among ties)."""
    mask = np.asarray(observation["action_mask"]) != 0
    score = observation["hint_features"][: len(mask), rule]
    return int(np.argmax(np.where(mask, score, -np.inf)))


def hint_rules(env):
    """``env`` whose action is a hint column: the step takes the allowed server ranking first by it."""
    import gymnasium as gym

    class HintRules(gym.Wrapper):
        def __init__(self, env):
            super().__init__(env)
            self.action_space = gym.spaces.Discrete(env.observation_space["hint_features"].shape[1])

        def reset(self, **kwargs):
            self.last, info = self.env.reset(**kwargs)
            return self.last, info

        def step(self, action):
            result = self.env.step(rule_choice(self.last, int(action)))
            self.last = result[0]
            return result

        def action_masks(self):
            return np.ones(self.action_space.n, dtype=bool)

    return HintRules(env)


class RulePolicy:
    """A model trained on `hint_rules` as `evaluate` runs it: its rule, then that rule's server."""

    def __init__(self, model, keep: tuple[str, ...]):
        self.model, self.keep = model, keep

    def __call__(self, observation):
        kept = {key: observation[key] for key in self.keep}
        rule = self.model.predict(kept, deterministic=True)[0]
        return rule_choice(observation, int(rule))


class KeptKeys:
    """A trained model as `evaluate` runs it: the observation cut to the keys it trained on, the mask passed."""

    def __init__(self, model, keep: tuple[str, ...] | None):
        self.model, self.keep = model, keep

    def predict(self, observation, action_masks=None, deterministic=True):
        if self.keep is not None:
            observation = {key: observation[key] for key in self.keep}
        return self.model.predict(observation, action_masks=action_masks, deterministic=deterministic)


def column_rule(key: str, column: int):
    """The policy that takes the allowed server highest in one column of the observation (the lowest index of ties)."""
    def policy(observation) -> int:
        mask = np.asarray(observation["action_mask"]) != 0
        return int(np.argmax(np.where(mask, observation[key][: len(mask), column], -np.inf)))
    return policy


def first_allowed(observation) -> int:
    """A fixed order: the allowed server of lowest index, whatever the state."""
    return int(np.flatnonzero(observation["action_mask"])[0])


def rules(env_id: str) -> dict[str, float]:
    """Fixed rules on the test seeds: a fixed order, and the highest server in each server column of the
    observation, plain (node features) and hinted."""
    from dcbench.envs import HINT_FEATURES, evaluate
    from dcbench.envs.features import NODE_FEATURES

    found = {"first allowed server": mean_acceptance(evaluate(first_allowed, env_id))}
    for key, names, hints in (("node_features", NODE_FEATURES, False), ("hint_features", HINT_FEATURES, True)):
        for column, name in enumerate(names):
            found[f"highest {key}.{name}"] = mean_acceptance(evaluate(column_rule(key, column), env_id, hints=hints))
    return found


def mean_acceptance(rows: list[dict]) -> float:
    return float(np.mean([row["acceptance_ratio"] for row in rows]))


def train_and_evaluate(job: tuple[str, str, int, int]) -> tuple[str, int, float, float]:
    """One recipe on one training seed: (recipe, seed, mean acceptance on the test seeds, training seconds)."""
    name, env_id, steps, seed = job
    import gymnasium as gym
    import torch
    from gymnasium.wrappers import FilterObservation
    from sb3_contrib import MaskablePPO

    import dcbench.envs  # noqa: F401  (registers the ids)
    from dcbench.envs import evaluate

    torch.set_num_threads(1)
    recipe = RECIPES[name]
    env = gym.make(env_id, hints=recipe.hints)
    assert env.unwrapped.seeds.role(seed) == "training", f"{seed} is not a training seed"
    if recipe.keep is not None:
        env = FilterObservation(env, list(recipe.keep))
    if recipe.rules:
        env = hint_rules(env)
    start = time.perf_counter()
    model = MaskablePPO("MultiInputPolicy", env, seed=seed, verbose=0, **recipe.ppo).learn(total_timesteps=steps)
    seconds = time.perf_counter() - start
    policy = RulePolicy(model, recipe.keep) if recipe.rules else KeptKeys(model, recipe.keep)
    score = mean_acceptance(evaluate(policy, env_id, hints=recipe.hints))
    return name, seed, score, seconds


def interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student t interval (nan for one value)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float("nan")
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return float(values.mean()), float(half)


def seed_list(seeds: Sequence[int]) -> str:
    """Seeds in few words: ``first..last`` where they run on by one."""
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(seed) for seed in seeds)


def table(steps: int, seeds: Sequence[int], results: list[tuple[str, int, float, float]],
          heuristics: dict[str, float]) -> str:
    """The Markdown table: one row per recipe (mean ± 95% half-width over training seeds of the mean acceptance
    ratio on the test seeds), then the heuristics on the same test seeds."""
    lines = ["| recipe | steps | training seeds | acceptance, test seeds |", "|---|---:|---|---|"]
    for name in dict.fromkeys(result[0] for result in results):
        mean, half = interval([result[2] for result in results if result[0] == name])
        spread = "" if np.isnan(half) else f" ± {half:.3f}"
        lines.append(f"| {name} | {steps:,} | {seed_list(seeds)} | {mean:.3f}{spread} |")
    lines += [f"| `{name}` | | | {score:.3f} |" for name, score in heuristics.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=ENV_ID, help="a registered pool scenario (dcbench list envs)")
    parser.add_argument("--steps", type=int, default=100_000, help="environment steps to train, per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1_000_000, 1_000_001, 1_000_002],
                        help="training seeds (1,000,000 and up), one run each per recipe")
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES), help="what to train")
    parser.add_argument("--jobs", type=int, default=1, help="training runs at once, one process each")
    parser.add_argument("--rules", action="store_true",
                        help="train nothing: the heuristics beside fixed rules on single observation columns")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.jobs < 1:
        parser.error("--steps and --jobs must be at least 1")
    from dcbench.envs import evaluate

    heuristics = {name: mean_acceptance(evaluate(name, args.env)) for name in HEURISTICS}
    if args.rules:
        lines = ["| policy | acceptance, test seeds |", "|---|---|"]
        lines += [f"| `{name}` | {score:.3f} |" for name, score in heuristics.items()]
        lines += [f"| {name} | {score:.3f} |" for name, score in rules(args.env).items()]
        print("\n".join(lines))
        return "\n".join(lines)
    jobs = [(name, args.env, args.steps, seed) for name in args.recipes for seed in args.seeds]
    if args.jobs == 1:
        results = [train_and_evaluate(job) for job in jobs]
    else:
        with multiprocessing.get_context("spawn").Pool(min(args.jobs, len(jobs))) as pool:
            results = pool.map(train_and_evaluate, jobs, chunksize=1)
    for name, seed, score, seconds in results:
        print(f"{name}, seed {seed}: {score:.3f} in {seconds:.0f} s of training", file=sys.stderr)
    text = table(args.steps, args.seeds, results, heuristics)
    print(text)
    return text


if __name__ == "__main__":
    main()
