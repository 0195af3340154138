"""The behaviour-cloning warm start of gnn_ppo's training.

PPO from scratch does not move the GNN policy off uniform on these
topologies (docs/learned/gnn_ppo.md), so a
run first clones a heuristic: cross-entropy on its choices and the value
head on its discounted returns, over training episodes it drives.
``dagger_rounds`` > 0 adds DAgger rounds (tried, not shipped).
`ImitationWarmStart` is a mixin of the trainer: it uses the trainer's
environments, model, configuration and random generator, so the warm start
draws from the run's one seeded stream.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from dcbench import DcbenchError, Spec, SpecError
from dcbench.envs import AllocationEnv
from dcbench.harness import blamed_on, get_registry
from dcbench.plugins.allocators.gnn_ppo.model import as_tensors

BEST_TEACHERS = ("tetris", "nalb")  # teacher=best, the default: the one of these that accepts more on trial episodes
# Under --quick the warm start drives the teacher for this share of --steps (no trials: teacher=best is the first).
QUICK_WARM_START_SHARE = 0.25


def stack_observations(observations: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {key: np.stack([o[key] for o in observations]) for key in observations[0]}


def check_teacher(spec: str) -> None:
    """A teacher is ``best`` (the better of `BEST_TEACHERS`), or a pool
    heuristic (it picks a server per step and needs no checkpoint); anything
    else is a `SpecError`."""
    if spec == "best":
        return
    if Spec.parse(spec).name == "best":  # no allocator of that name: options for it would be "unknown allocator"
        raise SpecError(f"gnn_ppo: teacher={spec!r}: best (the better of {' and '.join(BEST_TEACHERS)}) takes no "
                        "options; give teacher=best, or options to one of them, "
                        f"e.g. teacher={BEST_TEACHERS[0]}:KEY=VALUE")
    try:
        get_registry().build("allocator", spec)
    except SpecError as exc:  # an option the heuristic does not take, say: that, not "no heuristic"
        raise SpecError(f"gnn_ppo: teacher={spec!r}: {exc}") from None
    except DcbenchError:  # a plugin that fails to build: no teacher, as is_pool_heuristic says
        pass
    if not is_pool_heuristic(spec):
        pools = sorted(name for name in get_registry().entries("allocator") if is_pool_heuristic(name))
        raise SpecError(f"gnn_ppo: teacher={spec!r} is not a heuristic that picks servers one at a time; "
                        f"a teacher is one of {', '.join(pools)}")


def is_pool_heuristic(spec: str) -> bool:
    from dcbench import PoolAllocator

    registry = get_registry()
    if registry.get("allocator", Spec.parse(spec).name).learned:
        return False
    try:
        return isinstance(registry.build("allocator", spec).obj, PoolAllocator)
    except DcbenchError:  # a third-party one that fails to build is no teacher either
        return False


class Teacher:
    """The heuristic a warm start clones. What its plugin's code raises, or
    a choice that is not an allowed server, is a one-line `PluginError`
    that names the plugin (not a traceback, nor a torch error later)."""

    def __init__(self, spec: str, network: Any, seed: int):
        registry = get_registry()
        self.entry = registry.get("allocator", Spec.parse(spec).name)
        self.heuristic = registry.build("allocator", spec).obj
        with blamed_on(self.entry, "failed as gnn_ppo's teacher"):
            self.heuristic.reset(network, np.random.default_rng(seed))

    def choose(self, builder: Any, driving: bool = True) -> int:
        """Its choice for the builder's next server: as it makes it when it
        drives the episode, else from a state that is not its own (`teacher_choice`)."""
        allowed = builder.allowed()
        with blamed_on(self.entry, "failed as gnn_ppo's teacher"):
            action = (self.heuristic.choose(builder, allowed) if driving
                      else teacher_choice(self.heuristic, builder, allowed))
        if not (isinstance(action, (int, np.integer)) and 0 <= action < len(allowed) and allowed[action]):
            raise self.entry.error(f"chose {action!r} as gnn_ppo's teacher, which is no allowed server")
        return int(action)


def teacher_choice(teacher: Any, builder: Any, allowed: np.ndarray) -> int:
    """The teacher heuristic's choice among the ``allowed`` servers in the
    builder's current state, also when the servers chosen so far were not
    its own: a walk (NALB / NULB) restarts from the request's first server."""
    from dcbench.plugins.allocators.tetris import TetrisAllocator
    from dcbench.plugins.allocators.walk import WalkAllocator

    if isinstance(teacher, WalkAllocator) and builder.chosen:
        for server in teacher._servers_from(builder.chosen[0], builder):
            if allowed[server]:
                return server
        return int(np.flatnonzero(allowed)[0])
    if isinstance(teacher, WalkAllocator):
        return TetrisAllocator.choose(teacher, builder, allowed)
    return int(teacher.choose(builder, allowed))


class ImitationWarmStart:
    """Behaviour cloning (and optionally DAgger) before PPO; mixed into `Trainer`,
    whose attributes below it reads."""

    config: Any  # the trainer's PPOConfig
    seed: int
    quick: bool  # --quick: the warm start takes QUICK_WARM_START_SHARE of the steps, which it counts
    steps: int
    envs: list[AllocationEnv]
    model: torch.nn.Module
    edge_index: torch.Tensor
    rng: np.random.Generator
    _reset: Callable[[AllocationEnv], dict[str, np.ndarray]]

    def imitate(self, progress: Callable[[dict[str, float]], None] | None = None) -> None:
        """Behaviour cloning of a heuristic (cross-entropy on its choices, and
        the value head on its returns) before PPO; see docs/learned/gnn_ppo.md."""
        config = self.config
        if config.imitation_episodes <= 0:
            return
        env = self.envs[0]
        quick = getattr(self, "quick", False)
        names = BEST_TEACHERS if config.teacher == "best" else (config.teacher,)
        trials = {}
        for name in () if quick else names:  # on training episodes, never on the test seeds
            teacher = Teacher(name, env.network, self.seed)
            results = []
            for episode in range(config.teacher_trial_episodes):
                results.append(self._episode(env, teacher, record=False)[3])
                _report(progress, {"iteration": 0, "steps": 0, "acceptance": results[-1],
                                   "teacher_trial_episode": episode + 1,
                                   "teacher_trial_episodes": config.teacher_trial_episodes})
            trials[name] = float(np.mean(results))
        teacher_name = max(names, key=lambda n: trials[n]) if len(names) > 1 and not quick else names[0]
        teacher = Teacher(teacher_name, env.network, self.seed)
        observations, actions, returns = [], [], []
        accepted = []
        budget = int(config.steps * QUICK_WARM_START_SHARE) if quick else None  # steps under --quick, else episodes
        episodes = 0
        while (len(actions) < budget) if budget is not None else (episodes < config.imitation_episodes):
            episode_observations, episode_actions, episode_returns, acceptance = self._episode(
                env, teacher, limit=None if budget is None else budget - len(actions))
            observations += episode_observations
            actions += episode_actions
            returns += episode_returns
            accepted.append(acceptance)
            episodes += 1
            if quick:
                self.steps += len(episode_actions)  # every step counts under --quick
            _report(progress, {"iteration": 0, "steps": self.steps, "acceptance": acceptance,
                               "warm_start_episode": episodes,
                               **({} if quick else {"warm_start_episodes": config.imitation_episodes})})
        if not actions:  # --quick with too few steps for a quarter of them
            self.imitation = {"teacher": teacher_name, "teacher_trials": trials, "episodes": 0, "samples": 0,
                              "steps": 0}
            return
        self._fit(observations, actions, returns, accepted, progress)
        teacher_acceptance = float(np.mean(accepted))
        dagger = []
        for round_ in range(config.dagger_rounds):
            new_observations, new_actions, new_returns, student = self._dagger_episodes(teacher_name)
            observations += new_observations
            actions += new_actions
            returns += new_returns
            self._fit(observations, actions, returns, student, progress, epochs=config.dagger_epochs)
            dagger.append({"round": round_ + 1, "student_acceptance": float(np.mean(student)),
                           "samples": len(actions), "agreement": self._agreement})
        self.imitation = {"teacher": teacher_name, "teacher_trials": trials, "episodes": episodes,
                          "samples": len(actions), "teacher_acceptance": teacher_acceptance,
                          "agreement": self._agreement, "dagger": dagger, **({"steps": len(actions)} if quick else {})}

    def _dagger_episodes(self, teacher_name: str) -> tuple[list, list, list, list]:
        """DAgger: episodes driven by the student's arg-max (as at inference),
        every visited state labelled with the teacher's choice in that state;
        the value head's targets are the student's discounted returns."""
        config = self.config
        teachers = [Teacher(teacher_name, env.network, self.seed) for env in self.envs]
        observations, actions, returns, acceptance = [], [], [], []
        remaining = config.dagger_episodes
        while remaining > 0:
            running = list(range(min(len(self.envs), remaining)))
            remaining -= len(running)
            current = {i: self._reset(self.envs[i]) for i in running}
            trace: dict[int, list] = {i: [] for i in running}
            while running:
                batch = stack_observations([current[i] for i in running])
                with torch.no_grad():
                    logits, _ = self.model(*as_tensors(batch), self.edge_index)
                choices = logits.argmax(-1).tolist()
                still = []
                for row, i in enumerate(running):
                    env = self.envs[i]
                    label = teachers[i].choose(env.builder, driving=False)
                    trace[i].append(({k: v[row] for k, v in batch.items()}, label))
                    current[i], reward, done, _, info = env.step(choices[row])
                    trace[i][-1] += (reward * config.reward_scale,)
                    if done:
                        acceptance.append(info["acceptance_ratio"])
                    else:
                        still.append(i)
                running = still
            for i in sorted(trace):
                running_return, episode_returns = 0.0, []
                for _, _, reward in reversed(trace[i]):
                    running_return = reward + config.gamma * running_return
                    episode_returns.append(running_return)
                observations += [t[0] for t in trace[i]]
                actions += [t[1] for t in trace[i]]
                returns += episode_returns[::-1]
        return observations, actions, returns, acceptance

    def _episode(self, env: AllocationEnv, teacher: Teacher, record: bool = True,
                 limit: int | None = None) -> tuple[list, list, list, float]:
        """One training episode driven by a heuristic's choices (cut off
        after ``limit`` steps, under --quick)."""
        config = self.config
        observations, actions, rewards = [], [], []
        observation = self._reset(env)
        done = False
        while not done and (limit is None or len(rewards) < limit):
            action = teacher.choose(env.builder)
            if record:
                observations.append(observation)
                actions.append(action)
            observation, reward, done, _, info = env.step(action)
            rewards.append(reward * config.reward_scale)
        running, returns = 0.0, []
        for reward in reversed(rewards):
            running = reward + config.gamma * running
            returns.append(running)
        acceptance = info["acceptance_ratio"] if done else env.accepted / max(1, env.offered)
        return observations, actions, returns[::-1], acceptance

    def _fit(self, observations: list, actions: list, returns: list, accepted: list,
             progress: Callable[[dict[str, float]], None] | None, epochs: int | None = None) -> None:
        config = self.config
        nodes, edges, globals_, masks = as_tensors(stack_observations(observations))
        targets = torch.tensor(actions)
        value_targets = torch.tensor(returns, dtype=torch.float32)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=config.imitation_learning_rate)
        n = len(actions)
        for epoch in range(config.imitation_epochs if epochs is None else epochs):
            total, agree = 0.0, 0
            for chunk in np.array_split(self.rng.permutation(n), max(1, round(n / config.minibatch))):
                index = torch.as_tensor(chunk)
                logits, values = self.model(nodes[index], edges[index], globals_[index], masks[index],
                                            self.edge_index)
                loss = torch.nn.functional.cross_entropy(logits, targets[index]) + \
                    config.value_coef * ((values - value_targets[index]) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
                optimizer.step()
                total += loss.item() * len(chunk)
                agree += int((logits.argmax(-1) == targets[index]).sum())
            self._agreement = agree / n
            if progress is not None:
                progress({"iteration": 0, "steps": getattr(self, "steps", 0), "acceptance": float(np.mean(accepted)),
                          "policy_loss": total / n, "value_loss": 0.0, "entropy": 0.0,
                          "imitation_epoch": epoch + 1, "agreement": agree / n})


def _report(progress: Callable[[dict[str, float]], None] | None, row: dict[str, float]) -> None:
    if progress is not None:
        progress(row)
