"""A2C for the multi-step job scheduler, as the OCS paper's Algorithm 1.

A job is placed a VM at a time in the gymnasium environment's job mode; its
decisions are stored once the job is settled, each with its Eq. 1 reward.
As soon as the buffer holds 2L − 1 samples, the first L are trained on: the
return of sample n is σ_n = Σ_{t<L} γ^t ρ_{n+t} (Eq. 2), its advantage
σ_n − V(s_n) (Eq. 3); the actor minimises −log π(a_n|s_n)·advantage plus β
times the negative entropy (Eq. 4), the critic the squared error of its
value (Eq. 5); both with Adam. Then the L samples are dropped and the
exploration rate ε steps down by ε₀ to at least ε_min. A decision is the
roulette draw from π with probability ε, its arg-max otherwise.

Training runs in episodes of ``episode_jobs`` jobs from an empty data
centre (seeds from 1,000,000 up, never the suites' test seeds); the state
saved after every episode resumes exactly.

Options against the policy's entropy collapse (advantage normalisation, an
entropy floor, the actor's own learning rate, gradient clipping, reward
scaling) are ours and off by default: from scratch on the paper's state
none helped on validation seeds, and the shipped checkpoints, warm-started
from `jcb`, use the actor's own learning rate (see
docs/learned/a2c_multistep.md).
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
from dcbench.harness import Runner, config_options
from dcbench.plugins.allocators._learned.checkpoints import (
    command_line,
    export_checkpoint,
    resume_training_state,
    save_training_state,
)
from dcbench.plugins.allocators._learned.early_stopping import BestWeights
from dcbench.plugins.allocators._learned.status import with_status
from dcbench.plugins.allocators.a2c_multistep.config import STATE_VALUES, A2CConfig
from dcbench.plugins.allocators.a2c_multistep.model import ACTORS, ActorCritic, NumpyActor
from dcbench.plugins.metrics.jobs import offered_and_blocked

# Settings that may differ when a run is resumed: how long to train and how the exported weights are chosen.
RESUMABLE_CHANGES = ("steps", "validation_episodes", "validation_jobs")
# What the export and its plot read from a resumed curve's rows.
CURVE_COLUMNS = ("steps", "epsilon", "blocking")

TRAINING_SEED_OFFSET = 1_000_000
VALIDATION_SEED_OFFSET = 2_000_000  # held-out episodes for early stopping, as gnn_ppo's
MAX_ENTROPY_COEF = 100.0  # the adaptive β's bound
# `dcbench train --quick`: a smoke test's settings (an option given with -a still wins): short episodes, and
# --steps counts every decision, exactly, the last episode cut where they run out. No jcb warm start.
QUICK = {"episode_jobs": 50}
QUICK_STEPS = 1_000  # --steps under --quick when it is not given


def parse_options(options: dict[str, str] | None) -> dict[str, Any]:
    """``a2c_multistep:key=value`` options of `dcbench train`, typed as A2CConfig's fields."""
    return config_options(A2CConfig, options, "a2c_multistep")


def check_an_update_fits(config: A2CConfig, workload: Any, episode_jobs_option: str = "episode_jobs") -> None:
    """Refuse, before training, episodes too short for a single update: one
    needs 2L − 1 decisions in one episode (the buffer is emptied when it
    ends), and without one the export would be the untrained weights. Known
    where the workload says how many VMs a job has at most (a decision per
    VM); a run that clones jcb first exports the clone, so it may make none."""
    most_vms = getattr(workload, "max_vms", None)
    if config.imitation_jobs > 0 or not isinstance(most_vms, int):
        return
    needed = 2 * config.window - 1
    most_decisions = config.episode_jobs * most_vms
    if most_decisions < needed:
        raise SpecError(f"a2c_multistep: an episode of {config.episode_jobs} job(s) ({episode_jobs_option}) takes at "
                        f"most {most_decisions} decisions ({most_vms} VMs a job at most), fewer than the {needed} "
                        f"an update needs (2 × window − 1, window={config.window}); give a larger "
                        f"{episode_jobs_option} or a smaller window")


def no_update_error(trainer: Trainer, episode_jobs_option: str = "episode_jobs") -> SpecError:
    """What a run that made no update says instead of writing its untrained weights."""
    window = trainer.config.window
    return SpecError(f"a2c_multistep: {trainer.episodes} episode(s) of {trainer.config.episode_jobs} job(s) "
                     f"({episode_jobs_option}) made no update: none took the {2 * window - 1} decisions one needs "
                     f"(2 × window − 1, window={window}), so no checkpoint is written; delete {trainer.state_dir} "
                     f"and give a larger {episode_jobs_option} or a smaller window")


def check_quick(config: A2CConfig) -> None:
    """Refuse, before training, what --quick cannot keep to its steps: the
    jcb warm start (jobs on top of them), or fewer steps than an update needs."""
    if config.imitation_jobs > 0:
        raise SpecError("a2c_multistep: --quick trains exactly --steps decisions, and imitation_jobs would clone "
                        "jcb on top of them; give imitation_jobs without --quick")
    needed = 2 * config.window - 1
    if config.steps < needed:
        raise SpecError(f"a2c_multistep: --steps {config.steps:,} with --quick is fewer than the {needed} decisions "
                        f"an update needs (2 × window − 1, window={config.window}); give --steps {needed} or more, "
                        "or a smaller window")


def full_window_returns(rewards: np.ndarray, window: int, gamma: float) -> np.ndarray:
    """Eq. 2, σ_n = Σ_{t<L} γ^t ρ_{n+t}, for every n with a whole window of rewards after it."""
    if len(rewards) < window:
        raise ValueError(f"{len(rewards)} rewards; a window of {window} needs at least {window}")
    return np.convolve(np.asarray(rewards, dtype=np.float64), (gamma ** np.arange(window))[::-1], mode="valid")


def window_returns(rewards: list[float], window: int, gamma: float) -> list[float]:
    """Eq. 2 for the first L samples of an update (needs 2L − 1 rewards). A
    dot product per sample, not `full_window_returns`' convolution: the
    summation order is the one the shipped checkpoints were trained with."""
    if len(rewards) < 2 * window - 1:
        raise ValueError(f"{len(rewards)} rewards; a window of {window} needs {2 * window - 1}")
    discounts = gamma ** np.arange(window)
    values = np.asarray(rewards, dtype=np.float64)
    return [float(values[n:n + window] @ discounts) for n in range(window)]


class Trainer:
    def __init__(self, topology: str, workload: str | None, config: A2CConfig, seed: int, out: Path,
                 quick: bool = False):
        self.config = config
        self.seed = seed
        self.quick = quick  # --quick: the last episode stops at --steps decisions
        self.out = Path(out)
        self.state_dir = self.out.with_name(self.out.name + ".train")
        runner = Runner()  # an episode is episode_jobs jobs, the warm-up among them
        self.env = AllocationEnv.of_plan(runner.resolve_scenario(topology, workload, config.episode_jobs), runner,
                                         alpha=config.alpha, reconfiguration_cost=config.reconfiguration_cost)
        if self.env.kind != "job":
            raise SpecError("a2c_multistep trains on jobs: use an ocs topology and a vmjobs workload")
        self.topology = self.env.spec_text["topology"]
        self.workload = self.env.spec_text["workload"]
        if config.state not in STATE_VALUES:
            raise SpecError(f"a2c_multistep: state={config.state!r} is not one of {', '.join(STATE_VALUES)}")
        if config.actor not in ACTORS:
            raise SpecError(f"a2c_multistep: actor={config.actor!r} is not one of {', '.join(ACTORS)}")
        torch.manual_seed(seed)
        self.model = ActorCritic(self.env.network.n_racks, config.hidden, config.layers, STATE_VALUES[config.state],
                                 config.actor)
        self.optimizer = _optimizer(self.model, config)
        self.entropy_coef = config.entropy_coef  # moves only with a target_entropy
        self.rng = np.random.default_rng(seed)
        self.epsilon = 1.0
        self.steps = 0
        self.episodes = 0
        self.updates = 0
        self.curve: list[dict[str, float]] = []
        self.wall_time = 0.0
        self.imitated = False
        self.best = BestWeights(higher_is_better=False, score_name="blocking")
        self.validation_env = self.env
        if config.validation_jobs > 0:
            warmup = int(getattr(self.env.workload, "warmup_jobs", 0))
            self.validation_env = AllocationEnv.of_plan(
                runner.resolve_scenario(topology, workload, warmup + config.validation_jobs), runner,
                alpha=config.alpha, reconfiguration_cost=config.reconfiguration_cost)

    # ----- acting --------------------------------------------------------
    def _state(self, observation: dict[str, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor | None]:
        state = observation["rack_state"]
        if self.config.state == "placement":
            state = np.concatenate([state, observation["node_features"][:, 5]])
        state = torch.as_tensor(state, dtype=torch.float32)
        mask = torch.as_tensor(observation["action_mask"], dtype=torch.bool) if self.config.mask else None
        return state, mask

    def act(self, observation: dict[str, np.ndarray]) -> int:
        state, mask = self._state(observation)
        with torch.no_grad():
            logits = self.model.logits(state[None], None if mask is None else mask[None])[0]
        if self.rng.random() < self.epsilon:  # the roulette: the first action whose cumulative probability ≥ u
            # (x / 1.0 is x exactly: the default draws as the paper's roulette did, bit for bit)
            tempered = logits.double() / self.config.explore_temperature
            cumulative = torch.softmax(tempered, dim=-1).cumsum(-1).numpy()
            return int(min(np.searchsorted(cumulative, self.rng.random() * cumulative[-1]), len(cumulative) - 1))
        return int(torch.argmax(logits))

    # ----- learning ------------------------------------------------------
    def update(self, samples: list[tuple[torch.Tensor, torch.Tensor | None, int, float]]) -> dict[str, float]:
        window = self.config.window
        rewards = [s[3] * self.config.reward_scale for s in samples]
        returns = torch.tensor(window_returns(rewards, window, self.config.gamma), dtype=torch.float32)
        head = samples[:window]
        states = torch.stack([s[0] for s in head])
        masks = torch.stack([s[1] for s in head]) if head[0][1] is not None else None
        actions = torch.tensor([s[2] for s in head])
        logits = self.model.logits(states, masks)
        log_probs = torch.log_softmax(logits, dim=-1)
        probs = log_probs.exp()
        values = self.model.value(states)
        advantages = (returns - values).detach()
        if self.config.normalize_advantages:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        chosen = log_probs.gather(1, actions[:, None]).squeeze(1)
        negative_entropy = (probs * log_probs).sum(-1).mean()
        policy_loss = -(chosen * advantages).mean() + self.entropy_coef * negative_entropy
        value_loss = ((returns - values) ** 2).mean()
        self.optimizer.zero_grad()
        (policy_loss + value_loss).backward()
        if self.config.max_grad_norm > 0:  # apart: the critic's squared errors would swamp one joint norm
            torch.nn.utils.clip_grad_norm_(self.model.actor.parameters(), self.config.max_grad_norm)
            torch.nn.utils.clip_grad_norm_(self.model.critic.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        self.epsilon = max(self.epsilon - self.config.epsilon_step, self.config.epsilon_min)
        entropy = -negative_entropy.item()
        if self.config.target_entropy > 0:
            step = np.exp(self.config.entropy_coef_step * (self.config.target_entropy - entropy))
            # A saturated softmax has almost no entropy gradient, so β alone cannot revive it: bounded, or it
            # grows until the loss overflows (seen, to NaN, with a step of 0.1).
            self.entropy_coef = float(np.clip(self.entropy_coef * step, self.config.entropy_coef, MAX_ENTROPY_COEF))
        return {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy,
                "entropy_coef": self.entropy_coef}

    def episode(self, limit: int | None = None) -> dict[str, float]:
        """One episode of ``episode_jobs`` jobs, learning as it goes; cut
        off once ``steps`` reaches ``limit`` (--quick): the job under way and
        the samples short of an update are dropped, as at an episode's end."""
        seed = TRAINING_SEED_OFFSET + self.seed * 100_000_000 + self.episodes
        observation, _ = self.env.reset(seed=seed)
        buffer: list[tuple] = []
        job: list[tuple] = []
        losses: list[dict[str, float]] = []
        blocked = served = reconfigurations = 0
        done = False
        while not done and (limit is None or self.steps < limit):
            state, mask = self._state(observation)
            action = self.act(observation)
            observation, _, done, _, info = self.env.step(action)
            job.append((state, mask, action))
            self.steps += 1
            if "step_rewards" in info:
                buffer.extend((s, m, a, r) for (s, m, a), r in zip(job, info["step_rewards"]))
                job = []
                served += info["job_accepted"]
                blocked += not info["job_accepted"]
                reconfigurations += info["reconfigurations"]
                while len(buffer) >= 2 * self.config.window - 1:
                    losses.append(self.update(buffer))
                    del buffer[: self.config.window]
        self.episodes += 1
        jobs = max(1, served + blocked) if done or served + blocked else float("nan")  # (cut off before a job)
        row = {"steps": float(self.steps), "episode": float(self.episodes), "epsilon": self.epsilon,
               "blocking": blocked / jobs, "acceptance": served / jobs,
               "reconfigurations_per_job": reconfigurations / jobs}
        for key in ("policy_loss", "value_loss", "entropy", "entropy_coef"):
            row[key] = float(np.mean([loss[key] for loss in losses])) if losses else float("nan")
        return row

    # ----- early stopping (ours; off by default) --------------------------
    def validate(self) -> float:
        """Blocking of the greedy policy on the held-out episodes' measured
        jobs, scored with the allocator's own forward pass (`NumpyActor`), so
        a near-tie is decided as `dcbench run` decides it; draws no random
        numbers, so resuming stays exact."""
        env = self.validation_env
        actor = NumpyActor(self.model)
        blocked = jobs = 0
        for k in range(self.config.validation_episodes):
            observation, _ = env.reset(seed=VALIDATION_SEED_OFFSET + k)
            done = False
            while not done:
                state, mask = self._state(observation)
                logits = actor(state.numpy(), None if mask is None else mask.numpy())
                observation, _, done, _, _ = env.step(int(np.argmax(logits)))
            if env is self.env:  # every job counts (as the 16- and 32-ToR checkpoints were selected)
                blocked += env.offered - env.accepted
                jobs += env.offered
            else:
                offered, refused = offered_and_blocked({"measured": env.simulation.measured,
                                                        "outcome": env.simulation.outcome})
                blocked += int(refused.sum())
                jobs += int(offered.sum())
        return blocked / max(1, jobs)

    def keep_if_best(self) -> float:
        return self.best.offer(self.validate(), self.model, steps=self.steps, episode=self.episodes)

    # ----- imitation warm start (ours; off by default) -------------------
    def imitate(self) -> None:
        """Behaviour cloning of `jcb` on ``imitation_jobs`` jobs: the actor
        learns jcb's racks (cross-entropy), the critic the Eq. 2 returns of
        jcb's Eq. 1 rewards, each with its own Adam at ``learning_rate``, so
        that A2C starts from a policy and a critic that agree."""
        from dcbench.plugins.allocators.jcb import JCBAllocator

        teacher = JCBAllocator()
        teacher.network = self.env.network
        samples: list[tuple] = []  # (state, mask, action, reward) in decision order, settled jobs only
        jobs = 0
        while jobs < self.config.imitation_jobs:
            observation, _ = self.env.reset(seed=TRAINING_SEED_OFFSET // 2 + self.seed * 100_000_000 + jobs)
            done = False
            job: list[tuple] = []
            while not done and jobs < self.config.imitation_jobs:
                state, mask = self._state(observation)
                action = teacher.choose_rack(self.env.builder, observation["action_mask"].astype(bool))
                job.append((state, mask, action))
                observation, _, done, _, info = self.env.step(action)
                if "step_rewards" in info:
                    samples.extend((s, m, a, r) for (s, m, a), r in zip(job, info["step_rewards"]))
                    job = []
                    jobs += 1
        window, gamma = self.config.window, self.config.gamma
        if len(samples) < window:
            raise SpecError(f"imitation_jobs={self.config.imitation_jobs} gave {len(samples)} decisions, fewer than "
                            f"the window of {window}: clone more jobs")
        rewards = np.array([sample[3] for sample in samples]) * self.config.reward_scale
        returns = full_window_returns(rewards, window, gamma)
        count = len(returns)
        states = torch.stack([sample[0] for sample in samples[:count]])
        masks = torch.stack([sample[1] for sample in samples[:count]]) if samples[0][1] is not None else None
        actions = torch.tensor([sample[2] for sample in samples[:count]])
        targets = torch.as_tensor(returns, dtype=torch.float32)
        actor_optimizer = torch.optim.Adam(self.model.actor.parameters(), lr=self.config.learning_rate)
        critic_optimizer = torch.optim.Adam(self.model.critic.parameters(), lr=self.config.learning_rate)
        generator = torch.Generator().manual_seed(self.seed)
        for _ in range(self.config.imitation_epochs):
            for batch in torch.randperm(count, generator=generator).split(256):
                logits = self.model.logits(states[batch], None if masks is None else masks[batch])
                actor_loss = torch.nn.functional.cross_entropy(logits, actions[batch])
                critic_loss = ((self.model.value(states[batch]) - targets[batch]) ** 2).mean()
                actor_optimizer.zero_grad()
                critic_optimizer.zero_grad()
                (actor_loss + critic_loss).backward()
                actor_optimizer.step()
                critic_optimizer.step()
        self.imitated = True

    # ----- saving and resuming --------------------------------------------
    def save_state(self) -> None:
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "counters": torch.tensor([self.steps, self.episodes, self.updates, int(self.imitated)]),
                 "epsilon": torch.tensor(self.epsilon, dtype=torch.float64),
                 "entropy_coef": torch.tensor(self.entropy_coef, dtype=torch.float64),
                 "rng": json.dumps(self.rng.bit_generator.state), "torch_rng": torch.get_rng_state(),
                 "wall_time": torch.tensor(self.wall_time, dtype=torch.float64),
                 **self.best.state()}
        save_training_state(self.state_dir, state, self.curve, self.identity())

    def identity(self) -> dict[str, Any]:
        """What a resumed run must share with the saved one: the scenario,
        the seed and every setting but those that only say how long to
        train or how to pick the exported weights."""
        settings = {key: value for key, value in asdict(self.config).items() if key not in RESUMABLE_CHANGES}
        return {"topology": self.topology, "workload": self.workload, "seed": self.seed, **settings,
                **({"quick": True} if self.quick else {})}

    def resume(self) -> bool:
        curve = resume_training_state(self.state_dir, self.restore, self.identity(), CURVE_COLUMNS)
        if curve is None:
            return False
        self.curve = curve
        return True

    def restore(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.steps, self.episodes, self.updates, imitated = (int(x) for x in state["counters"])
        self.imitated = bool(imitated)
        self.epsilon = float(state["epsilon"])
        self.entropy_coef = float(state.get("entropy_coef", self.config.entropy_coef))
        self.rng.bit_generator.state = json.loads(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        self.wall_time = float(state["wall_time"])
        self.best.load(state)

    def write_checkpoint(self, command: str) -> Path:
        """The checkpoint and, beside it, its record, curve and plot, all four or none."""
        config = {"model": self.model.config(), "a2c": asdict(self.config)}
        last = self.curve[-1] if self.curve else {}
        record = {"allocator": "a2c_multistep", "command": command, "seed": self.seed, "steps": self.steps,
                  "episodes": self.episodes, "updates": self.updates, "wall_time_s": round(self.wall_time, 1),
                  "topology": self.topology, "workload": self.workload, "torch": torch.__version__,
                  **({"quick": True} if self.quick else {}),
                  "final_training_blocking": last.get("blocking"), "config": asdict(self.config),
                  "selected": None if self.best.record is None else {
                      **self.best.record, "validation_episodes": self.config.validation_episodes,
                      "seeds": f"{VALIDATION_SEED_OFFSET}.."}}
        short = f"{self.topology.split(',')[0]}, {self.workload.split(',')[0]}"  # ocs:tors=16, vmjobs:load=66
        export_checkpoint(self.out, {"config": json.dumps(config), "model": self.best.export(self.model)}, record,
                          self.curve, _curve_figure(self.curve, f"a2c_multistep on {short}"))
        return self.out


def _optimizer(model: ActorCritic, config: A2CConfig) -> torch.optim.Adam:
    if config.actor_learning_rate <= 0:  # one group, as the paper (and resumable from older states)
        return torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    return torch.optim.Adam([{"params": model.actor.parameters(), "lr": config.actor_learning_rate},
                             {"params": model.critic.parameters(), "lr": config.learning_rate}])


def _curve_figure(rows: list[dict[str, float]], title: str) -> Any | None:
    """The training curve plotted; None without matplotlib or rows (no plot is written then)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    if not rows:
        return None
    figure = Figure(figsize=(6, 3))
    axis = figure.subplots()
    steps = [r["steps"] for r in rows]
    marked = {"marker": "o", "markersize": 3}  # a point on every episode: a curve of one episode is seen too
    axis.plot(steps, [r["blocking"] for r in rows], label="blocking (training, with exploration)", **marked)
    axis.plot(steps, [r["epsilon"] for r in rows], label="ε", linestyle="--", **marked)
    axis.set_xlabel("decisions")
    axis.set_ylim(-0.03, 1.03)  # (a point at 0 or 1 whole, not cut in half by the frame)
    axis.legend(fontsize=8)
    axis.set_title(title, fontsize=9)
    figure.tight_layout()
    return figure


def train(topology: str, workload: str | None = None, steps: int | None = None, seed: int = 0,
          out: Path | str = "a2c_multistep.pt", progress: Callable[[dict[str, float]], None] | None = None,
          options: dict[str, str] | None = None, episode_jobs_option: str = "episode_jobs",
          quick: bool = False) -> Path:
    """Train (or resume) a checkpoint; returns its path. ``episode_jobs_option``
    is what the caller calls ``episode_jobs``, for the errors that say to change it.
    ``quick`` (`dcbench train --quick`) starts from the `QUICK` settings and
    trains exactly ``steps`` decisions (1,000 by default)."""
    torch.set_num_threads(1)
    progress = with_status(progress)  # the line `dcbench train` shows
    config = A2CConfig(**{**(QUICK if quick else {}), **parse_options(options)})
    if steps is not None:
        config.steps = steps
    elif quick:
        config.steps = QUICK_STEPS
    if quick:
        check_quick(config)
    trainer = Trainer(topology, workload, config, seed, Path(out), quick=quick)
    check_an_update_fits(config, trainer.env.workload, episode_jobs_option)
    trainer.resume()
    if config.imitation_jobs and not trainer.imitated:
        trainer.imitate()
        if config.validation_episodes > 0:  # the cloned policy is a candidate too
            trainer.keep_if_best()
    while trainer.steps < config.steps:
        started = time.perf_counter()
        row = trainer.episode(config.steps if quick else None)
        if config.validation_episodes > 0:
            row["validation_blocking"] = trainer.keep_if_best()
        trainer.wall_time += time.perf_counter() - started
        row["wall_time_s"] = trainer.wall_time
        trainer.curve.append(row)
        trainer.save_state()
        if progress is not None:
            progress(row)
    if trainer.updates == 0 and not trainer.imitated:
        raise no_update_error(trainer, episode_jobs_option)
    return trainer.write_checkpoint(command_line())
