"""`VectorAllocationEnv`: N episodes of one scenario in lockstep, what ``gym.make_vec(id, num_envs=N,
vectorization_mode="vector_entry_point")`` makes for every dcbench id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from dcbench.envs.batched import BatchedPool, unsupported
from dcbench.envs.features import _squash, write_pool_observation
from dcbench.errors import AllocatorError, SpecError

BATCHED_FROM = 8  # envs from which `BatchedPool` steps faster than the episodes one by one (benchmarks/)


class _PoolBatch:
    """The pool observations of every episode at once, from (N, …) arrays whose rows the builders write in place."""

    def __init__(self, envs: Sequence[Any]):
        self.builders = [env.builder for env in envs]
        self.features = envs[0].features
        n, network = len(envs), self.features.network
        self.free = np.empty((n, network.n_servers, len(network.resources)))
        self.chosen = np.zeros((n, network.n_servers), bool)
        self.allowed = np.zeros((n, network.n_servers), bool)
        self.links = np.empty((n, network.n_links))
        self.remaining = np.zeros((n, len(network.resources)))
        self.used = np.zeros((n, 2))
        self.holding = np.zeros(n)
        for i, builder in enumerate(self.builders):  # the builder's own arrays become the batch's rows
            for name, rows in (("free_resources", self.free), ("chosen_mask", self.chosen),
                               ("_allowed", self.allowed), ("_free_links_array", self.links)):
                np.copyto(rows[i], getattr(builder, name))
                setattr(builder, name, rows[i])

    def settled(self, i: int, env: Any) -> None:
        # row i after a request changed (a settled request, a reset): the committed use and the holding time
        builder = self.builders[i]
        self.used[i] = 1.0 - env.simulation.state.free_resources.sum(axis=0) / self.features.total
        self.holding[i] = builder.request.holding / self.features.holding_scale if builder.request else 0.0

    def observe(self, obs: dict[str, np.ndarray], pending: np.ndarray) -> None:
        # every row's observation (those of a pending decision only; the caller zeroes the rest)
        for i in np.flatnonzero(pending).tolist():
            builder = self.builders[i]
            self.remaining[i] = builder._remaining
            if builder._stale_links:
                builder.free_links  # noqa: B018  (brings the links' array up to date)
        remaining, free_links = self.remaining, self.links[:, self.features.edge_link]
        inverse = np.divide(1.0, remaining, out=np.zeros_like(remaining), where=remaining > 0)
        write_pool_observation(obs, self.features, self.free, self.chosen, self.allowed, free_links, self.used,
                               self.holding, _squash(self.free * inverse[:, None, :]), _squash(free_links))


class VectorAllocationEnv(gym.vector.VectorEnv):
    """N episodes of one scenario stepped in lockstep, with autoreset (docs/envs.md).

    Pool episodes are stepped by `BatchedPool` where it can step them (``unbatched_reason`` says why not); then the
    envs keep their seeds but not a `Simulation` of their own.

    Args:
        envs: The episodes' `AllocationEnv` s of one scenario, each with its own builder, none reset yet.
        autoreset_mode: `gymnasium.vector.AutoresetMode.NEXT_STEP` or ``SAME_STEP`` (or their values).
        batched: Whether pool episodes are stepped as one batch: None (from `BATCHED_FROM` envs on), True, False.

    Attributes:
        unbatched_reason: Why the episodes are stepped one by one (None: they are batched).

    Raises:
        SpecError: No env, another autoreset mode, or ``batched`` not None, True or False.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, envs: Sequence[Any], autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 batched: bool | None = None):
        modes = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
        if autoreset_mode not in modes and autoreset_mode not in [m.value for m in modes]:
            raise SpecError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {autoreset_mode!r}")
        if not envs:
            raise SpecError("a vector env needs at least one env")
        if batched is not None and not isinstance(batched, (bool, np.bool_)):
            raise SpecError(f"batched must be None, True or False, got {batched!r}")
        self.metadata = {**self.metadata, "autoreset_mode": AutoresetMode(autoreset_mode)}
        self.envs = list(envs)
        first = self.envs[0]
        self.num_envs = n = len(self.envs)
        self.kind = first.kind
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, n)
        self.action_space = batch_space(first.action_space, n)
        self._obs = {key: np.zeros((n, *space.shape), space.dtype)
                     for key, space in first.observation_space.spaces.items()}
        self._obs["action_mask"][:] = 1
        self._pending = np.zeros(n, bool)  # a decision is pending (else the observation is zeros, all allowed)
        self._reset_next = np.zeros(n, bool)  # NEXT_STEP: ended last step
        self._started = False
        if batched is False or (batched is None and n < BATCHED_FROM):
            self.unbatched_reason = "batched=False" if batched is False else f"fewer than {BATCHED_FROM} envs"
        else:
            self.unbatched_reason = unsupported(first)
        self._batch = BatchedPool(first.network, n) if self.unbatched_reason is None else None
        self._pool = _PoolBatch(self.envs) if self.kind == "pool" and self._batch is None else None

    def _reset_env(self, i: int, seed: int | None) -> dict[str, Any]:
        env = self.envs[i]
        if self._batch is not None:
            reward, done = self._batch.start(i, env._draw(seed))
            info = {"reward_before_first_step": reward, "done": done}
        else:
            _, info = env.reset(seed=seed)
        self._pending[i] = not info["done"]
        self._reset_next[i] = info["done"]  # an episode with no decision at all: reset again
        if self._pool is not None:
            self._pool.settled(i, env)
        # the env's own `action_masks` and `render` read the batch's rows (its reset made its own observation)
        env._mask, env._last = self._obs["action_mask"][i], {key: array[i] for key, array in self._obs.items()}
        return info

    def _observe(self) -> dict[str, np.ndarray]:
        obs, pending = self._obs, self._pending
        if self._batch is not None:
            self._batch.observe(obs, self.envs[0].features)
        elif self._pool is not None:
            self._pool.observe(obs, pending)
            if "hint_features" in obs:
                for i in np.flatnonzero(pending).tolist():
                    obs["hint_features"][i] = self.envs[i].features.hints.compute(self.envs[i].builder)
        else:
            for i in np.flatnonzero(pending).tolist():
                env = self.envs[i]
                for key, value in env.features.observe(env.builder, env.simulation.view).items():
                    obs[key][i] = value
        if not pending.all():
            for array in obs.values():
                array[~pending] = 0
            obs["action_mask"][~pending] = 1
        return {key: array.copy() for key, array in obs.items()}

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        """Start every episode.

        Args:
            seed: None (each env's next training seed), an int s (env i on s + i) or one seed (or None) per env.
            options: Not read.

        Returns:
            ``(observations, infos)``, batched.

        Raises:
            SpecError: A list of seeds not one per env.
        """
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None if seed is None else int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = [None if one is None else int(one) for one in seed]
            if len(seeds) != self.num_envs:
                raise SpecError(f"reset(seed=...) takes one seed per env ({self.num_envs}), got {len(seeds)}")
        infos: dict[str, Any] = {}
        for i, one in enumerate(seeds):
            infos = self._add_info(infos, self._reset_env(i, one), i)
        self._started = True
        return self._observe(), infos

    def step(self, actions: Any):
        """Take one decision in every episode (NEXT_STEP: reset those that ended the step before).

        Args:
            actions: One integer action per env (num_envs,).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, batched; truncations always False.

        Raises:
            AllocatorError: ``actions`` not one integer per env (nothing changes).
            gymnasium.error.ResetNeeded: Before the first `reset`.
        """
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer):
            raise AllocatorError(f"actions must be {self.num_envs} integers, got {actions.dtype} {actions.shape}")
        if not self._started:
            raise gym.error.ResetNeeded("call reset() before the first step()")
        if self._batch is not None:
            return self._step_batch(actions)
        n = self.num_envs
        rewards, terminated = np.zeros(n), np.zeros(n, bool)
        counts = np.zeros((2, n), np.int64)
        infos: dict[str, Any] = {}
        for i, action in enumerate(actions.tolist()):
            env = self.envs[i]
            if self._reset_next[i]:
                info = self._reset_env(i, None)
            else:
                offered = env.offered
                rewards[i], done, info = env._act(action)
                if done:
                    terminated[i] = True
                    self._pending[i] = False
                    info = self._ended(i, env._counts(info, done))
                elif self._pool is not None and env.offered != offered:
                    self._pool.settled(i, env)
            counts[:, i] = env.accepted, env.offered
            if info:
                infos = self._add_info(infos, info, i)
        infos.update(accepted=counts[0], offered=counts[1], _accepted=np.ones(n, bool), _offered=np.ones(n, bool))
        return self._observe(), rewards, terminated, np.zeros(n, bool), infos

    def _step_batch(self, actions: np.ndarray):
        batch, n = self._batch, self.num_envs
        resetting = self._reset_next.copy()
        rewards, terminated, invalid = batch.step(actions, self._pending)
        rewards[resetting] = 0.0
        self._pending &= ~terminated
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(resetting | terminated | invalid).tolist():
            if resetting[i]:
                info = self._reset_env(i, None)
            else:
                info = {"invalid_action": True} if invalid[i] else {}
                if terminated[i]:
                    info.update(accepted=int(batch.accepted[i]), offered=int(batch.offered[i]), **batch.ratios(i))
                    info = self._ended(i, info)
            infos = self._add_info(infos, info, i)
        infos.update(accepted=batch.accepted.copy(), offered=batch.offered.copy(), _accepted=np.ones(n, bool),
                     _offered=np.ones(n, bool))
        return self._observe(), rewards, terminated, np.zeros(n, bool), infos

    def _ended(self, i: int, info: dict[str, Any]) -> dict[str, Any]:
        # SAME_STEP resets an ended episode now, its last observation and info under final_obs and final_info
        if self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP:
            return {"final_obs": self.envs[i]._blank(), "final_info": info, **self._reset_env(i, None)}
        self._reset_next[i] = True
        return info

    def action_masks(self) -> np.ndarray:
        """Every env's allowed actions as booleans (all True where no decision is pending, as before `reset`).

        Returns:
            (num_envs, actions) booleans, a copy.
        """
        return self._obs["action_mask"].astype(bool)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """An attribute of every env, as on Gymnasium's `SyncVectorEnv`.

        Args:
            name: The attribute's name.

        Returns:
            One value per env.
        """
        return tuple(getattr(env, name) for env in self.envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method of every env, or read an attribute, as `SyncVectorEnv` does.

        Args:
            name: The method's (or attribute's) name.
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            One result per env.
        """
        return tuple(value(*args, **kwargs) if callable(value) else value for value in self.get_attr(name))

    def as_sb3(self) -> Any:
        """This env as a Stable-Baselines3 ``VecEnv``; its autoreset mode becomes SAME_STEP, as SB3 expects.

        Returns:
            The ``VecEnv`` (stable-baselines3 must be installed).
        """
        from stable_baselines3.common.vec_env import VecEnv

        vector = self
        vector.metadata = {**vector.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}

        class SB3VecEnv(VecEnv):
            def __init__(self) -> None:
                super().__init__(vector.num_envs, vector.single_observation_space, vector.single_action_space)

            def reset(self):
                obs, infos = vector.reset(seed=self._seeds if any(s is not None for s in self._seeds) else None)
                self._reset_seeds()
                self.reset_infos = [{} for _ in range(self.num_envs)]
                return obs

            def step_async(self, actions: np.ndarray) -> None:
                self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64)

            def step_wait(self):
                obs, rewards, terminated, truncated, infos = vector.step(self._actions)
                listed = [{} for _ in range(self.num_envs)]
                final = infos.get("final_info", {})
                for i in np.flatnonzero(terminated).tolist():
                    listed[i] = {key: value[i] for key, value in final.items() if not key.startswith("_")
                                 and final[f"_{key}"][i]}
                    listed[i].update(terminal_observation=infos["final_obs"][i], **{"TimeLimit.truncated": False})
                return obs, rewards.astype(np.float32), terminated | truncated, listed

            def close(self) -> None:
                vector.close()

            def get_attr(self, attr_name, indices=None):
                return [getattr(vector.envs[i], attr_name) for i in self._get_indices(indices)]

            def set_attr(self, attr_name, value, indices=None) -> None:
                for i in self._get_indices(indices):
                    setattr(vector.envs[i], attr_name, value)

            def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
                if method_name == "action_masks":  # the batch's masks, without a call per env
                    masks = vector.action_masks()
                    return [masks[i] for i in self._get_indices(indices)]
                return [getattr(vector.envs[i], method_name)(*method_args, **method_kwargs)
                        for i in self._get_indices(indices)]

            def env_is_wrapped(self, wrapper_class, indices=None):
                return [False for _ in self._get_indices(indices)]

        return SB3VecEnv()
