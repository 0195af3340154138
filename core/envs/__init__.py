"""Gymnasium environments over the engine's builders; ``import dcbench.envs`` registers ``dcbench/Allocation-v0``
and one id per suite scenario. The episode is the engine's own loop, so a policy makes the same decisions here as in
``dcbench run`` on a seed (docs/envs.md)."""

from __future__ import annotations

import copy
import functools
import inspect
import math
from collections.abc import Sequence
from numbers import Real
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from dcbench.engine.jobs import PLACED, JobBuilder
from dcbench.engine.pool import PoolBuilder
from dcbench.engine.simulation import ACCEPTED, SKIPPED, Simulation
from dcbench.envs.evaluate import (
    POLICY_ALLOCATOR,
    StoredPolicy,
    add_policy,
    evaluate,
    load_policy,
    policy_digest,
    policy_function,
    policy_store,
    stored_policies,
)
from dcbench.envs.features import NODE_KINDS, JobFeatures, PoolFeatures, StaticGraph
from dcbench.envs.hints import HINT_FEATURES, PoolHints, hint_names
from dcbench.envs.rewards import FAILURE_REWARD, SUCCESS_REWARD, _floor_latency_ns, episode_ratios, job_step_rewards
from dcbench.envs.suites import (
    TRAINING_SEEDS_FROM,
    VALIDATION_SEEDS,
    SeedSplit,
    SuiteEnv,
    check_measured,
    env_id,
    env_listing,
    find_scenario,
    register_suite_envs,
    scenario_episode,
    shown,
    suite_envs,
)
from dcbench.envs.vector import VectorAllocationEnv
from dcbench.errors import AllocatorError, SpecError
from dcbench.model.network import Network
from dcbench.model.requests import RequestSequence
from dcbench.model.suite import Scenario
from dcbench.running.runner import ResolvedRun, Runner, draw_requests, measuring, warmup_requests
from dcbench.spec import Range

__all__ = ["AllocationEnv", "PoolFeatures", "JobFeatures", "job_step_rewards", "SUCCESS_REWARD", "FAILURE_REWARD",
           "ScenarioEnv", "SeedSplit", "SuiteEnv", "StaticGraph", "PoolHints", "HINT_FEATURES", "NODE_KINDS",
           "TRAINING_SEEDS_FROM", "VALIDATION_SEEDS", "ALLOCATION_ENV_ID", "env_id", "suite_envs",
           "register_suite_envs", "scenario_episode", "env_listing", "VectorAllocationEnv"]
__all__ += ["evaluate", "policy_function", "policy_digest", "load_policy", "add_policy", "stored_policies",
            "policy_store", "StoredPolicy", "POLICY_ALLOCATOR"]  # any policy, run as an allocator (envs/evaluate.py)


ALLOCATION_ENV_ID = "dcbench/Allocation-v0"  # AllocationEnv: any topology and workload


def _reward_weight(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise SpecError(f"{name} must be a finite number, got {shown(value)}")
    problem = Range(0).violation(value)
    if problem:
        raise SpecError(f"{name} must be {problem}, got {shown(value)}")
    return float(value)


def _settings(alpha: Any, reconfiguration_cost: Any, reconfigure: Any, hints: Any, render_mode: Any
              ) -> tuple[float, float, bool, tuple[str, ...], str | None]:
    if render_mode is not None and render_mode not in AllocationEnv.metadata["render_modes"]:  # (make_vec_env's)
        raise SpecError(f"render_mode must be None or 'rgb_array', got {shown(render_mode)}")
    alpha = _reward_weight("alpha", alpha)
    reconfiguration_cost = _reward_weight("reconfiguration_cost", reconfiguration_cost)
    if not isinstance(reconfigure, (bool, np.bool_)):
        raise SpecError(f"reconfigure must be True or False, got {shown(reconfigure)}")
    return alpha, reconfiguration_cost, reconfigure, hint_names(hints), render_mode


def _action_index(action: Any, space: gym.spaces.Discrete) -> int:
    integral = isinstance(action, (int, np.integer)) and not isinstance(action, bool)
    if integral or (isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer)):
        return int(action)
    raise AllocatorError(f"action {shown(action)} is not an integer; the action space {space} takes an int, "
                         "a numpy integer or a 0-d integer array")


class AllocationEnv(gym.Env):
    """One server per step for the pool requests of a scenario, or one rack per VM for its jobs.

    ``reset(seed=s)`` draws the requests of ``dcbench run --seed s --requests N``. An action outside the mask fails
    the request (``info["invalid_action"]``). Where no decision is pending the observation is zeros with an all-ones
    "action_mask", so a masked policy never sees an empty mask.

    Args:
        topology: The topology spec.
        workload: The workload spec (None: the topology's default).
        requests: Measured requests per episode, after the workload's warm-up.
        runner: Resolves the scenario (None: a new `Runner` on the process's plugins).
        alpha: α of the jobs' reward, a finite number ≥ 0.
        reconfiguration_cost: Φ_reconf of the jobs' reward, a finite number ≥ 0.
        reconfigure: Whether the job builder may reconfigure circuits.
        hints: `PoolHints` as "hint_features" (pools only): False, True (all) or their names.
        render_mode: None, or "rgb_array" for `render`'s image of the observation.

    Attributes:
        builder: The `PoolBuilder` or `JobBuilder` the steps drive.
        features: The `PoolFeatures` or `JobFeatures` that observe them.
        simulation: The engine's loop of the episode (None before `reset`).

    Raises:
        SpecError: A setting of the wrong type or range, or a malformed spec or parameter; hints for jobs.
        UnknownPluginError: A spec names no registered plugin.
        IncompatibleError: The topology serves no demand of the workload's kind.
        PluginError: A third-party plugin failed to build the scenario.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, topology: str = "tiered:32,1x4", workload: str | None = None, requests: int = 32,
                 runner: Runner | None = None, alpha: float = 100.0, reconfiguration_cost: float = 25.0,
                 reconfigure: bool = True, hints: bool | Sequence[str] = False, render_mode: str | None = None):
        for name, value, example in (("topology", topology, "tiered:32,1x4"), ("workload", workload, "uniform")):
            if not isinstance(value, str) and not (name == "workload" and value is None):
                raise SpecError(f"{name} must be a spec such as {example!r}, got {shown(value)}")
        check_measured(requests)
        settings = _settings(alpha, reconfiguration_cost, reconfigure, hints, render_mode)
        runner = runner or Runner()
        measured = None if requests is None else int(requests)  # None: the workload's own
        self._start(*measuring(runner.resolve_scenario(topology, workload), measured, "the environment", "requests=N"),
                    runner, *settings)

    @classmethod
    def of_plan(cls, plan: ResolvedRun, runner: Runner | None = None, **settings: Any) -> AllocationEnv:
        """The environment of a resolved scenario, its requests the whole episode, a warm-up included.

        Args:
            plan: A scenario from `Runner.resolve_scenario`.
            runner: As the constructor's.
            **settings: The constructor's settings (``alpha`` to ``render_mode``).

        Returns:
            The environment.

        Raises:
            SpecError: A setting the constructor refuses, or one it does not take.
        """
        names = ("alpha", "reconfiguration_cost", "reconfigure", "hints", "render_mode")
        defaults = {name: inspect.signature(AllocationEnv.__init__).parameters[name].default for name in names}
        if set(settings) - set(defaults):
            raise SpecError(f"of_plan takes the constructor's settings, not {', '.join(set(settings) - set(defaults))}")
        env = cls.__new__(cls)
        env._start(plan, min(warmup_requests(plan), plan.requests), runner or Runner(),
                   *_settings(**{**defaults, **settings}))
        return env

    def _start(self, plan: ResolvedRun, warmup: int, runner: Runner, alpha: float, reconfiguration_cost: float,
               reconfigure: bool, hints: tuple[str, ...], render_mode: str | None) -> None:
        self.alpha, self.reconfiguration_cost, self.hints = alpha, reconfiguration_cost, hints
        self.render_mode = render_mode
        self.plan = plan
        self.warmup, self.measured_requests = warmup, plan.requests - warmup
        # A policy that never reconfigures runs on the fabric's fixed all-to-all, as `Runner` runs it.
        self.network: Network = plan.network if reconfigure else runner.fixed_fabric(plan.topology)
        self.workload = plan.workload_model
        self.kind = self.workload.kind
        self.requests = plan.requests
        self.spec_text = {"topology": plan.topology, "workload": plan.workload}
        if self.kind == "job" and self.hints:
            raise SpecError("hints are per-server features of pool steps; a job step (a rack per VM) has none")
        self._reconfigure = bool(reconfigure)
        self._build()
        self.action_space = gym.spaces.Discrete(self.network.n_racks if self.kind == "job" else self.network.n_servers)
        self.observation_space = self.features.space()
        self.graph: StaticGraph = self.features.graph()
        self.seeds = SeedSplit()

    def _build(self) -> None:
        # a new builder and features, and no episode: what each copy of a vector env needs of its own
        if self.kind == "job":
            self.builder = JobBuilder(self.network, self._reconfigure)
            self.features = JobFeatures(self.network, self.builder)
        else:
            self.features = PoolFeatures(self.network, self.hints)
            self.builder = PoolBuilder(self.network)
        self.simulation: Simulation | None = None
        self._open = self._done = False
        self._mask: np.ndarray | None = None  # the last observation's "action_mask" (`action_masks`)
        self.episode_seed: int | None = None
        self.floor_latency_ns = math.nan  # of the sequence `reset` draws

    def _twin(self) -> AllocationEnv:
        twin = copy.copy(self)
        twin._build()
        return twin

    def served_latency_ns(self) -> float:
        """l of Eq. 1 once a job is committed: the mean packet latency, at least `floor_latency_ns`.

        Returns:
            The latency (ns).
        """
        latency_us = self.simulation.network_qos()[0]
        return self.floor_latency_ns if np.isnan(latency_us) else max(latency_us * 1e3, self.floor_latency_ns)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: draw its requests and move to the first decision.

        Args:
            seed: The episode's seed, as ``dcbench run --seed`` (None: a training seed ≥ 3,000,000).
            options: Not read.

        Returns:
            ``(observation, info)``; ``info`` has ``reward_before_first_step`` and ``done``.

        Raises:
            SpecError: The workload refuses its parameters for this network.
            PluginError: A third-party workload failed or returned an unusable request sequence.
        """
        sequence = self._draw(seed)
        self.simulation = Simulation(self.network, sequence)
        self.floor_latency_ns = _floor_latency_ns(sequence.packets, self.network.circuits)
        self.accepted = self.offered = 0
        reward, done = self._advance()
        self._done = done
        return self._observation(), {"reward_before_first_step": reward, "done": done}

    def _draw(self, seed: int | None) -> RequestSequence:
        super().reset(seed=seed)
        if seed is None:  # a training seed, never a test or a validation one
            seed = int(self.np_random.integers(VALIDATION_SEEDS.stop, 2**62))
        self.episode_seed = seed
        workload_rng, _ = np.random.default_rng(seed).spawn(2)
        return draw_requests(self.plan, self.requests, workload_rng)

    def _blank(self) -> dict[str, np.ndarray]:
        # the observation where no decision is pending: zeros, every action allowed
        observation = {k: np.zeros(v.shape, v.dtype) for k, v in self.observation_space.spaces.items()}
        observation["action_mask"][:] = 1
        return observation

    def _observation(self) -> dict[str, np.ndarray]:
        pending = self._open and self.simulation.request is not None
        observation = self.features.observe(self.builder, self.simulation.view) if pending else self._blank()
        self._mask, self._last = observation["action_mask"], observation
        return observation

    def action_masks(self) -> np.ndarray:
        """The current decision's allowed actions as booleans, for MaskablePPO (all True where none is pending).

        Returns:
            One boolean per action, a copy.
        """
        if self._mask is None:
            return np.ones(self.action_space.n, bool)
        return self._mask.astype(bool)

    def render(self) -> np.ndarray | None:
        """The last observation as an image, with ``render_mode="rgb_array"`` (None without a render mode).

        Returns:
            uint8 (nodes, features + 1, 3): the node features in grey, then each node's action in colour.
        """
        if self.render_mode != "rgb_array":
            return None
        space = self.observation_space["node_features"]
        image = np.zeros((space.shape[0], space.shape[1] + 1, 3), np.uint8)
        if self._mask is None:
            return image
        features = self._last["node_features"]
        grey = (features - space.low) / np.maximum(space.high - space.low, 1e-9)
        image[:, :-1] = np.round(255 * np.clip(grey, 0, 1))[..., None].astype(np.uint8)
        mask = self._mask.astype(bool)[:, None]  # the first nodes are the actions: servers (pools) or racks (jobs)
        image[:len(mask), -1] = np.where(mask, [0, 255, 0], [255, 0, 0])
        return image

    def _settle(self, result) -> bool:
        accepted = self.simulation.resolve(result)
        self.offered += 1
        self.accepted += accepted
        return accepted

    def _resolve(self, result) -> float:
        return SUCCESS_REWARD if self._settle(result) else FAILURE_REWARD

    def _advance(self) -> tuple[float, bool]:
        # move to the next request that needs a decision, refusing those with no allowed server (rack)
        reward = 0.0
        while (request := self.simulation.next_request()) is not None:
            self.builder.start(request, self.simulation.view)
            if (self.builder.rack_fits() if self.kind == "job" else self.builder.allowed()).any():
                self._open = True
                return reward, False
            self.builder.fail("no_server")
            if self.kind == "job":  # no decision was taken: no sample, no reward
                self._settle(self.builder.result())
            else:
                reward += self._resolve(self.builder.result())
        self._open = False
        return reward, True

    def _settle_job(self, info: dict[str, Any]) -> float:
        builder = self.builder
        actions = builder.step + bool(info.get("invalid_action"))  # decisions taken for this job
        if builder.status == PLACED:
            builder.route()
        accepted = self._settle(builder.result())  # the allocation, or the builder's Reject
        latency_ns = self.served_latency_ns() if accepted else 0.0
        rewards = job_step_rewards(actions, None if accepted else actions - 1, latency_ns,
                                   accepted and bool(builder.swaps), self.alpha, self.reconfiguration_cost,
                                   vms=len(builder.vms))
        info.update(step_rewards=rewards, job_accepted=accepted, reconfigurations=len(builder.swaps) if accepted else 0)
        return float(sum(rewards))

    def step(self, action):
        """Take one decision: a server for the current pool request, or a rack for the current job's next VM.

        Args:
            action: The server's or rack's index (int, numpy integer or 0-d integer array); outside the mask fails.

        Returns:
            ``(observation, reward, terminated, truncated, info)``; ``truncated`` is always False.

        Raises:
            AllocatorError: ``action`` is not an integer (nothing changes).
            gymnasium.error.ResetNeeded: No episode is under way.
        """
        if self.simulation is None:
            raise gym.error.ResetNeeded("call reset() before the first step()")
        if self._done:
            raise gym.error.ResetNeeded("the episode is over; call reset() before step()")
        reward, done, info = self._act(_action_index(action, self.action_space))
        return self._observation(), reward, done, False, self._counts(info, done)

    def _act(self, action: int) -> tuple[float, bool, dict[str, Any]]:
        # `step` but its observation and counts
        builder = self.builder
        allowed, take = (builder.rack_fits, builder.place) if self.kind == "job" else (builder.allowed, builder.add)
        info: dict[str, Any] = {}
        if not (0 <= action < self.action_space.n and allowed()[action]):
            info["invalid_action"] = True
            builder.fail("invalid_action")
        else:
            take(action)
            if builder.is_open and not allowed().any():
                builder.fail("no_server")
        reward, done = 0.0, False
        if not builder.is_open:
            reward = self._settle_job(info) if self.kind == "job" else self._resolve(builder.result())
            more, done = self._advance()
            reward += more
        self._done = done
        return reward, done, info

    def _counts(self, info: dict[str, Any], done: bool) -> dict[str, Any]:
        info.update(accepted=self.accepted, offered=self.offered)
        if done:
            outcome = self.simulation.outcome
            offered = self.simulation.measured & (outcome != SKIPPED)
            info.update(episode_ratios(self.accepted, self.offered, offered, offered & (outcome == ACCEPTED)))
        return info


class ScenarioEnv(AllocationEnv):
    """A suite's scenario as an environment: what each id ``dcbench/<suite>-<scenario>-v0`` (`env_id`) makes.

    The episode is the workload's warm-up, then ``requests`` measured requests, so ``reset(seed=s)`` draws the
    suite's run on seed s.

    Args:
        suite: The suite's name (qualified, or a bare alias).
        scenario: The scenario's label in it (`Scenario.label`).
        requests: Measured requests per episode, after the warm-up (None: the scenario's).
        runner: Resolves the scenario (None: a new `Runner` on the process's plugins).
        alpha: As `AllocationEnv`'s.
        reconfiguration_cost: As `AllocationEnv`'s.
        reconfigure: As `AllocationEnv`'s.
        hints: As `AllocationEnv`'s.
        render_mode: As `AllocationEnv`'s.

    Raises:
        UnknownPluginError: No such suite, or a spec names no registered plugin.
        SpecError: No such scenario, or as `AllocationEnv`.
        IncompatibleError: As `AllocationEnv`.
        PluginError: As `AllocationEnv`.
    """

    def __init__(self, suite: str, scenario: str, requests: int | None = None, runner: Runner | None = None,
                 alpha: float = 100.0, reconfiguration_cost: float = 25.0, reconfigure: bool = True,
                 hints: bool | Sequence[str] = False, render_mode: str | None = None):
        runner = runner or Runner()
        found_suite, found = find_scenario(runner.registry, suite, scenario)
        check_measured(requests)
        own = runner.resolve_scenario(found.topology, found.workload, found.requests)
        measured = None if requests is None else int(requests)
        self._start(*measuring(own, measured, f"scenario {found.label!r}", "requests=N"), runner,
                    *_settings(alpha, reconfiguration_cost, reconfigure, hints, render_mode))
        self.suite = found_suite.name
        self.scenario: Scenario = found
        self.seeds = SeedSplit(tuple(int(seed) for seed in found.seeds))


def _vector(cls: type[AllocationEnv], num_envs: Any = 1, **kwargs: Any) -> VectorAllocationEnv:
    # what gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point", ...) makes: one env built, the
    # others its twins (no scenario resolved again)
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise SpecError(f"num_envs must be a whole number of at least 1, got {shown(num_envs)}")
    mode = kwargs.pop("autoreset_mode", AutoresetMode.NEXT_STEP)
    batched = kwargs.pop("batched", None)
    first = cls(**kwargs)
    return VectorAllocationEnv([first, *(first._twin() for _ in range(num_envs - 1))], mode, batched)


allocation_vector_env = functools.partial(_vector, AllocationEnv)
scenario_vector_env = functools.partial(_vector, ScenarioEnv)


gym.register(ALLOCATION_ENV_ID, entry_point="dcbench.envs:AllocationEnv",
             vector_entry_point="dcbench.envs:allocation_vector_env")
register_suite_envs()  # one id per suite scenario, third parties' included, as ALE and MiniGrid register theirs
