"""PPO for the GNN policy, in one file in the manner of CleanRL.

Clipped surrogate objective, GAE, a value head (squared error), an entropy
bonus (``entropy_coef``, 0 by default as in RLlib) and RLlib's adaptive KL
penalty (on the KL estimated from the sampled actions); gradients clipped
to norm 10. Minibatches, clip, γ, λ and the KL coefficient default to the
reference's RLlib settings (minibatches of 256, clip 0.3, γ 0.99, λ 1.0,
KL coefficient 0.2), the rest differs (`PPOConfig`, config.py). A behaviour-cloning
warm start comes first (`imitation.py`). Each iteration collects whole
episodes from ``envs`` environments stepped in lockstep: every environment
finishes the episode in which it reaches its share of ``batch`` steps, so
with 128-request episodes (550 to 950 decisions) a batch is 5,500 to 8,000
steps, not 2,048. An iteration boundary is thus a clean point to save and
resume: resuming from the last saved iteration gives exactly the weights an
uninterrupted run would have.

With ``validation_episodes`` > 0 the policy is scored greedily (arg-max, as
the allocator acts) on held-out episodes every ``validate_every``
iterations, and the best-scoring weights are the ones exported: early
stopping on a validation set, so a long run cannot end on a worse policy
than it passed through. Validation draws no random numbers, so it does not
change the training trajectory.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from dcbench import SpecError
from dcbench.envs import AllocationEnv
from dcbench.harness import config_options
from dcbench.plugins.allocators._learned.checkpoints import (
    check_identity,
    command_line,
    export_checkpoint,
    resume_training_state,
    save_training_state,
)
from dcbench.plugins.allocators._learned.early_stopping import BestWeights
from dcbench.plugins.allocators._learned.status import with_status
from dcbench.plugins.allocators.gnn_ppo.config import PPOConfig
from dcbench.plugins.allocators.gnn_ppo.imitation import ImitationWarmStart, check_teacher, stack_observations
from dcbench.plugins.allocators.gnn_ppo.model import (
    EXTRA_FEATURES,
    GraphPolicy,
    GreedyPolicy,
    as_tensors,
    hint_features,
    with_self_loops,
)

TRAINING_SEED_OFFSET = 1_000_000  # episode seeds never overlap the test seeds 0..4 of the suites
VALIDATION_SEED_OFFSET = 2_000_000  # nor the training episodes (at most a few thousand per run)
# Settings that may differ when a run is resumed: they do not change the weights a run passes through.
RESUMABLE_CHANGES = ("steps", "validation_episodes", "validate_every")
# What the export and its plot read from a resumed curve's rows.
CURVE_COLUMNS = ("steps", "acceptance", "policy_loss", "value_loss", "entropy")
# `dcbench train --quick`: a smoke test's settings, each an option that -a may still set otherwise. The warm start
# drives the teacher for a quarter of the steps, without trials between teachers (teacher=best is then Tetris),
# and --steps counts every environment step, exactly: episodes are cut where the steps run out.
QUICK = {"envs": 2, "batch": 256, "epochs": 2, "episode_requests": 32, "imitation_epochs": 2, "teacher": "tetris",
         "validation_episodes": 0}
QUICK_STEPS = 1_000  # --steps under --quick when it is not given


class Trainer(ImitationWarmStart):
    def __init__(self, topology: str, workload: str | None, config: PPOConfig, seed: int, out: Path,
                 quick: bool = False):
        self.config = config
        self.seed = seed
        self.quick = quick  # --steps counts every environment step, warm start included, exactly (QUICK)
        self.out = Path(out)
        self.state_dir = self.out.with_name(self.out.name + ".train")
        hint_count = EXTRA_FEATURES if config.fit_hint or config.fit_last_hint else 5
        sixth_hint = "fit_last" if config.fit_last_hint else "bestfit"
        # The hints come with the environment's observation, as "hint_features" (dcbench.envs.PoolHints).
        hints = hint_features(hint_count, sixth_hint) if config.hints else ()
        self.envs = [AllocationEnv(topology, workload, config.episode_requests, hints=hints)
                     for _ in range(config.envs)]
        if config.fit_hint and config.fit_last_hint:
            raise SpecError("gnn_ppo: fit_hint and fit_last_hint are two choices of the one sixth hint; "
                            "set at most one")
        if config.batch < config.envs:
            raise SpecError(f"gnn_ppo: batch={config.batch} must be at least envs={config.envs} "
                            "(each environment takes batch / envs steps an iteration)")
        check_teacher(config.teacher)
        features = self.envs[0].features
        self.edge_index = with_self_loops(features.edge_index, features.n_nodes)
        self.topology = self.envs[0].spec_text["topology"]
        self.workload = self.envs[0].spec_text["workload"]
        torch.manual_seed(seed)
        self.model = GraphPolicy(extra_features=hint_count if config.hints else 0, sixth_hint=sixth_hint)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.learning_rate)
        self.rng = np.random.default_rng(seed)
        self.iteration = 0
        self.episodes = 0
        self.steps = 0
        self.kl_coef = config.kl_coef
        self.curve: list[dict[str, float]] = []
        self.wall_time = 0.0
        self.best = BestWeights(higher_is_better=True, score_name="acceptance")

    # ----- rollouts -------------------------------------------------------
    def _reset(self, env: AllocationEnv) -> dict[str, np.ndarray]:
        seed = TRAINING_SEED_OFFSET + self.seed * 100_000_000 + self.episodes
        self.episodes += 1
        observation, _ = env.reset(seed=seed)
        return observation

    def collect(self, limit: int | None = None) -> dict[str, Any]:
        """Whole episodes, each environment's up to its share of the batch;
        with a ``limit`` (--quick) at most that many steps in all, the
        episodes under way then cut off (their returns bootstrapped from the
        value of the state they stopped in)."""
        quota = self.config.batch // self.config.envs
        observations = [self._reset(env) for env in self.envs]
        active = list(range(len(self.envs)))
        taken = [0] * len(self.envs)
        per_env: list[list[tuple]] = [[] for _ in self.envs]
        episode_acceptance = []
        while active:
            if limit is not None:
                active = active[:max(0, limit - sum(taken))]
                if not active:
                    break
            batch = stack_observations([observations[i] for i in active])
            with torch.no_grad():
                logits, values = self.model(*as_tensors(batch), self.edge_index)
                distribution = torch.distributions.Categorical(logits=logits)
                actions = distribution.sample()
                log_probs = distribution.log_prob(actions)
            still = []
            for row, i in enumerate(active):
                action = int(actions[row])
                following, reward, done, _, info = self.envs[i].step(action)
                per_env[i].append(({k: v[row] for k, v in batch.items()}, action, float(log_probs[row]),
                                   float(values[row]), reward, done))
                taken[i] += 1
                if done:
                    episode_acceptance.append(info["acceptance_ratio"])
                    if taken[i] >= quota:
                        continue
                    following = self._reset(self.envs[i])
                observations[i] = following
                still.append(i)
            active = still
        # Episodes cut off by the limit: their acceptance so far, and the value of where they stopped.
        cut = [i for i, steps in enumerate(per_env) if steps and not steps[-1][5]]
        bootstrap = {}
        if cut:
            episode_acceptance += [self.envs[i].accepted / max(1, self.envs[i].offered) for i in cut]
            with torch.no_grad():
                _, values = self.model(*as_tensors(stack_observations([observations[i] for i in cut])),
                                       self.edge_index)
            bootstrap = {i: float(values[row]) for row, i in enumerate(cut)}
        transitions = [t for steps in per_env for t in steps]
        advantages, returns = [], []
        for env_index, steps in enumerate(per_env):
            advantage = 0.0
            computed = []
            for index in reversed(range(len(steps))):
                _, _, _, value, reward, done = steps[index]
                reward *= self.config.reward_scale
                if index + 1 == len(steps) and not done:  # cut off by the limit
                    next_value = bootstrap[env_index]
                else:
                    next_value = 0.0 if done else steps[index + 1][3]
                delta = reward + self.config.gamma * next_value - value
                advantage = delta + self.config.gamma * self.config.gae_lambda * (0.0 if done else advantage)
                computed.append(advantage)
            computed.reverse()
            advantages.extend(computed)
            returns.extend(a + s[3] for a, s in zip(computed, steps))
        return {
            "observations": stack_observations([t[0] for t in transitions]),
            "actions": torch.tensor([t[1] for t in transitions]),
            "log_probs": torch.tensor([t[2] for t in transitions]),
            "values": torch.tensor([t[3] for t in transitions]),
            "advantages": torch.tensor(advantages, dtype=torch.float32),
            "returns": torch.tensor(returns, dtype=torch.float32),
            "acceptance": float(np.mean(episode_acceptance)),
        }

    # ----- validation -----------------------------------------------------
    def validate(self) -> float:
        """Mean acceptance of the greedy policy on the held-out episodes
        ``VALIDATION_SEED_OFFSET + k``, k < ``validation_episodes``."""
        seeds = [VALIDATION_SEED_OFFSET + k for k in range(self.config.validation_episodes)]
        greedy = GreedyPolicy(self.model)
        acceptance = []
        while seeds:
            running = list(range(min(len(self.envs), len(seeds))))
            current = {i: self.envs[i].reset(seed=seeds.pop(0))[0] for i in running}
            while running:
                logits = greedy.logits(stack_observations([current[i] for i in running]), self.edge_index)
                still = []
                for row, i in enumerate(running):
                    current[i], _, done, _, info = self.envs[i].step(int(logits[row].argmax()))
                    if done:
                        acceptance.append(info["acceptance_ratio"])
                    else:
                        still.append(i)
                running = still
        return float(np.mean(acceptance))

    def _keep_if_best(self) -> float:
        return self.best.offer(self.validate(), self.model, steps=self.steps, iteration=self.iteration)

    # ----- updates --------------------------------------------------------
    def update(self, rollout: dict[str, Any]) -> dict[str, float]:
        config = self.config
        nodes, edges, globals_, masks = as_tensors(rollout["observations"])
        n = len(rollout["actions"])
        advantages = rollout["advantages"]
        if n > 1:  # (one step, which only --quick's last iteration can have, has no spread to scale by)
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        else:
            advantages = advantages - advantages.mean()
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "kl": 0.0}
        updates = 0
        for _ in range(config.epochs):
            # Nearly equal minibatches: a whole number of them, none tiny.
            for chunk in np.array_split(self.rng.permutation(n), max(1, round(n / config.minibatch))):
                index = torch.as_tensor(chunk)
                logits, values = self.model(nodes[index], edges[index], globals_[index], masks[index], self.edge_index)
                distribution = torch.distributions.Categorical(logits=logits)
                log_probs = distribution.log_prob(rollout["actions"][index])
                ratio = torch.exp(log_probs - rollout["log_probs"][index])
                advantage = advantages[index]
                policy_loss = -torch.min(ratio * advantage,
                                         ratio.clamp(1 - config.clip, 1 + config.clip) * advantage).mean()
                value_loss = ((values - rollout["returns"][index]) ** 2).mean()
                entropy = distribution.entropy().mean()
                kl = (rollout["log_probs"][index] - log_probs).mean()
                loss = (policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
                        + self.kl_coef * kl)
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
                self.optimizer.step()
                for key, value in (("policy_loss", policy_loss), ("value_loss", value_loss),
                                   ("entropy", entropy), ("kl", kl)):
                    stats[key] += value.item()
                updates += 1
        stats = {key: value / updates for key, value in stats.items()}
        # RLlib's adaptive KL coefficient.
        if stats["kl"] > 2.0 * config.kl_target:
            self.kl_coef *= 1.5
        elif stats["kl"] < 0.5 * config.kl_target:
            self.kl_coef *= 0.5
        return stats

    # ----- saving and resuming ------------------------------------------
    def save_state(self) -> None:
        state = {
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "iteration": self.iteration, "episodes": self.episodes, "steps": self.steps, "kl_coef": self.kl_coef,
            "torch_rng": torch.get_rng_state(), "numpy_rng": json.dumps(self.rng.bit_generator.state),
            "wall_time": self.wall_time, "config": json.dumps(asdict(self.config)), "seed": self.seed,
            "imitation": json.dumps(getattr(self, "imitation", None)),
            **self.best.state(),
        }
        save_training_state(self.state_dir, state, self.curve, self.identity())

    def identity(self) -> dict[str, Any]:
        """What a resumed run must share with the saved one besides the
        configuration and seed, which `restore` checks (and --quick, which
        counts its steps otherwise)."""
        return {"topology": self.topology, "workload": self.workload, **({"quick": True} if self.quick else {})}

    def resume(self) -> bool:
        curve = resume_training_state(self.state_dir, self.restore, self.identity(), CURVE_COLUMNS)
        if curve is None:
            return False
        self.curve = curve
        return True

    def restore(self, state: dict[str, Any]) -> None:
        saved = json.loads(state["config"])
        wanted, defaults = asdict(self.config), asdict(PPOConfig())
        for key in RESUMABLE_CHANGES:  # training longer than before is what resuming is for
            saved.pop(key, None)
            wanted.pop(key)
            defaults.pop(key)
        saved = {**defaults, **saved}  # settings added since the state was saved had their defaults
        check_identity(self.state_dir / "state.pt", self.state_dir, {**saved, "seed": state["seed"]},
                       {**wanted, "seed": self.seed})
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.iteration, self.episodes, self.steps = state["iteration"], state["episodes"], state["steps"]
        self.kl_coef, self.wall_time = state["kl_coef"], state["wall_time"]
        self.imitation = json.loads(state["imitation"])
        self.best.load(state)
        torch.set_rng_state(state["torch_rng"])
        self.rng.bit_generator.state = json.loads(state["numpy_rng"])

    def run(self, progress: Callable[[dict[str, float]], None] | None = None) -> None:
        if self.iteration == 0 and not self.curve:
            started = time.perf_counter()
            self.imitate(progress)
            self.wall_time += time.perf_counter() - started
        validating = self.config.validation_episodes > 0
        if validating and self.best.record is None:  # the starting point is a candidate too
            started = time.perf_counter()
            self._keep_if_best()
            self.wall_time += time.perf_counter() - started
        while self.steps < self.config.steps:
            started = time.perf_counter()
            rollout = self.collect(self.config.steps - self.steps if self.quick else None)
            stats = self.update(rollout)
            self.iteration += 1
            self.steps += len(rollout["actions"])
            validation = float("nan")
            if validating and (self.iteration % self.config.validate_every == 0 or self.steps >= self.config.steps):
                validation = self._keep_if_best()
            self.wall_time += time.perf_counter() - started
            row = {"iteration": self.iteration, "steps": self.steps, "acceptance": rollout["acceptance"],
                   "mean_return": float(rollout["returns"].mean()), **stats, "kl_coef": self.kl_coef,
                   "validation_acceptance": validation, "wall_time_s": self.wall_time}
            self.curve.append(row)
            self.save_state()
            if progress is not None:
                progress(row)

    def export(self, command: str) -> None:
        """The checkpoint (weights and model configuration) and, beside it, its
        provenance record, its training curve as Parquet and plotted, all four or none."""
        record = {
            "allocator": "gnn_ppo", "topology": self.topology, "workload": self.workload,
            "command": command, "seed": self.seed, "steps": self.steps, "iterations": self.iteration,
            **({"quick": True} if self.quick else {}),
            "wall_time_s": round(self.wall_time, 1), "torch": torch.__version__,
            "final_training_acceptance": self.curve[-1]["acceptance"] if self.curve else None,
            "ppo": asdict(self.config), "imitation": getattr(self, "imitation", None),
            "selected": None if self.best.record is None else {
                **self.best.record, "episodes": self.config.validation_episodes,
                "seeds": f"{VALIDATION_SEED_OFFSET}..{VALIDATION_SEED_OFFSET + self.config.validation_episodes - 1}"},
        }
        export_checkpoint(self.out, {"model": self.best.export(self.model), "config": json.dumps(self.model.config)},
                          record, self.curve, curve_figure(self.curve, f"gnn_ppo on {self.topology}"))


def curve_figure(curve: list[dict[str, float]], title: str) -> Any | None:
    """The training curve plotted; None without matplotlib (no plot is written then)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(11, 3))
    axes = figure.subplots(1, 3)
    steps = [row["steps"] for row in curve]
    marked = {"marker": "o", "markersize": 3}  # a point on every iteration: a curve of one iteration is seen too
    axes[0].plot(steps, [row["acceptance"] for row in curve], **marked)
    axes[0].set_title("training acceptance")
    axes[1].plot(steps, [row["policy_loss"] for row in curve], label="policy", **marked)
    axes[1].plot(steps, [row["value_loss"] for row in curve], label="value", **marked)
    axes[1].legend()
    axes[1].set_title("losses")
    axes[2].plot(steps, [row["entropy"] for row in curve], **marked)
    axes[2].set_title("entropy")
    for axis in axes:
        axis.set_xlabel("steps")
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def train(topology: str, workload: str | None = None, steps: int | None = None, seed: int = 0,
          out: Path | None = None, progress: Callable[[dict[str, float]], None] | None = None,
          options: dict[str, str] | None = None, quick: bool = False, **overrides: Any) -> Path:
    """Train (or resume training) a gnn_ppo checkpoint; returns its path.
    ``options`` are `dcbench train -a gnn_ppo:key=value` texts, ``overrides``
    typed values of the same PPOConfig fields. ``quick`` (`dcbench train
    --quick`) starts from the `QUICK` settings and makes ``steps`` (1,000
    by default) every environment step, warm start included, exactly."""
    torch.set_num_threads(1)  # reproducible, and leaves the other cores to other runs
    progress = with_status(progress)  # the line `dcbench train` shows
    config = PPOConfig(**{**(QUICK if quick else {}), **config_options(PPOConfig, options, "gnn_ppo"),
                          **overrides})
    if steps is not None:
        config.steps = steps
    elif quick:
        config.steps = QUICK_STEPS
    if quick and config.dagger_rounds:
        raise SpecError("gnn_ppo: --quick counts the warm start in --steps, which DAgger rounds would not keep to; "
                        "give dagger_rounds without --quick")
    out = Path(out) if out is not None else Path("checkpoints") / "gnn_ppo.pt"
    trainer = Trainer(topology, workload, config, seed, out, quick=quick)
    trainer.resume()
    trainer.run(progress)
    trainer.export(command_line())
    return out
