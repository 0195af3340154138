"""Gymnasium environments over the same builders the engine's allocators use.

``import dcbench.envs`` registers ``dcbench/Allocation-v0``::

    import gymnasium, dcbench.envs
    env = gymnasium.make("dcbench/Allocation-v0", topology="tiered:32,1x4", requests=32)

A step chooses one server for the current pool request (the pool builder's
step); the episode is the engine's own loop (`dcbench.engine.Simulation`), so
a policy acting in the environment and the same policy acting as an
allocator in ``dcbench run`` make the same decisions on the same seed.
Rewards are the papers': +10 when a request is accepted, −10 when it fails,
0 otherwise.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from dcbench.allocation import Reject, State
from dcbench.engine import Simulation
from dcbench.network import Network
from dcbench.pool import PoolBuilder
from dcbench.runner import Runner

SUCCESS_REWARD = 10.0
FAILURE_REWARD = -10.0
NODE_FEATURES = ("free_over_needed_cpu", "free_over_needed_mem", "chosen", "free_share_cpu", "free_share_mem")
EDGE_FEATURES = ("free_over_demand", "free_share")


def _squash(x: np.ndarray) -> np.ndarray:
    """sigmoid(x − 1): 1 free share per share needed maps to 0.5."""
    return 1.0 / (1.0 + np.exp(1.0 - x))


class PoolFeatures:
    """The observation of a pool step, as in the reference model.

    - node features (nodes × 5): for each of CPU and memory, sigmoid(free /
      still needed − 1) (sigmoid(−1) where nothing is needed, and for
      switches); a flag for servers already chosen for this request; and, an
      addition to the reference, each resource's free share of the server's
      capacity (0 for switches);
    - edge features (2 · links × 2, both directions): sigmoid(free channels − 1)
      and, an addition, the free share of the link's channels;
    - global features: 1 − free/total of each resource (committed state) and
      the holding time over H = 30 per 64 servers;
    - the action mask: the builder's allowed servers.

    Servers are nodes ``0..servers−1``; shapes are fixed for a topology.
    """

    def __init__(self, network: Network):
        if network.resources != ("cpu", "mem"):
            raise ValueError(f"pool features need resources (cpu, mem), got {network.resources}")
        self.network = network
        ends = network.link_ends
        self.edge_index = np.concatenate([ends.T, ends[:, ::-1].T], axis=1).astype(np.int64)
        self.edge_link = np.concatenate([np.arange(network.n_links), np.arange(network.n_links)])
        self.total = network.server_capacity.sum(axis=0)
        self.inverse_capacity = 1.0 / network.server_capacity
        self.inverse_link_capacity = 1.0 / network.link_capacity[self.edge_link]
        self.holding_scale = 30.0 * network.n_servers / 64.0
        self.n_nodes = network.n_nodes
        self.n_servers = network.n_servers
        self._switch_value = float(_squash(np.zeros(1))[0])

    def space(self) -> gym.spaces.Dict:
        return gym.spaces.Dict({
            "node_features": gym.spaces.Box(0.0, 1.0, (self.n_nodes, len(NODE_FEATURES)), np.float32),
            "edge_features": gym.spaces.Box(0.0, 1.0, (len(self.edge_link), len(EDGE_FEATURES)), np.float32),
            "global_features": gym.spaces.Box(0.0, np.array([1.0, 1.0, 1e3], np.float32), (3,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (self.n_servers,), np.int8),
        })

    def observe(self, builder: PoolBuilder, state: State) -> dict[str, np.ndarray]:
        nodes = np.full((self.n_nodes, len(NODE_FEATURES)), self._switch_value, dtype=np.float32)
        remaining = builder.remaining
        inverse = np.divide(1.0, remaining, out=np.zeros_like(remaining), where=remaining > 0)
        nodes[: self.n_servers, :2] = _squash(builder.free_resources * inverse)
        nodes[:, 2] = 0.0
        nodes[: self.n_servers, 2] = builder.chosen_mask
        nodes[:, 3:5] = 0.0
        nodes[: self.n_servers, 3:5] = builder.free_resources * self.inverse_capacity
        free_links = builder.free_links[self.edge_link]
        edges = np.empty((len(self.edge_link), len(EDGE_FEATURES)), dtype=np.float32)
        edges[:, 0] = _squash(free_links)
        edges[:, 1] = free_links * self.inverse_link_capacity
        used = 1.0 - state.free_resources.sum(axis=0) / self.total
        holding = builder.request.holding / self.holding_scale
        return {
            "node_features": nodes,
            "edge_features": edges,
            "global_features": np.array([used[0], used[1], holding], dtype=np.float32),
            "action_mask": builder.allowed().astype(np.int8),
        }


class AllocationEnv(gym.Env):
    """One server per step for the pool requests of a scenario.

    ``reset(seed=s)`` draws the request sequence exactly as ``dcbench run
    --seed s --requests N`` does. An action outside the mask fails the
    request (reward −10, ``info["invalid_action"]``).
    """

    metadata = {"render_modes": []}

    def __init__(self, topology: str = "tiered:32,1x4", workload: str | None = None, requests: int = 32,
                 runner: Runner | None = None):
        runner = runner or Runner()
        plan = runner.resolve("random", topology, workload, requests)
        self.network: Network = plan["network"]
        self.workload = plan["workload_obj"]
        if self.workload.kind != "pool":
            raise ValueError(f"workload {plan['workload']} makes {self.workload.kind} demands; "
                             "this environment steps pool requests")
        self.requests = plan["requests"]
        self.spec_text = {"topology": plan["topology"], "workload": plan["workload"]}
        self.features = PoolFeatures(self.network)
        self.observation_space = self.features.space()
        self.action_space = gym.spaces.Discrete(self.network.n_servers)
        self.builder = PoolBuilder(self.network)
        self.simulation: Simulation | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**62))
        workload_rng, _ = np.random.default_rng(seed).spawn(2)
        sequence = self.workload.generate(self.network, self.requests, workload_rng)
        self.simulation = Simulation(self.network, sequence)
        self.accepted = 0
        self.offered = 0
        reward, done = self._advance()
        return self._observation(), {"reward_before_first_step": reward, "done": done}

    def _observation(self) -> dict[str, np.ndarray]:
        if self.builder.request is None or self.simulation.request is None:
            return {k: np.zeros(v.shape, v.dtype) for k, v in self.observation_space.spaces.items()}
        return self.features.observe(self.builder, self.simulation.view)

    def _resolve(self, result) -> float:
        accepted = self.simulation.resolve(result)
        self.offered += 1
        self.accepted += accepted
        return SUCCESS_REWARD if accepted else FAILURE_REWARD

    def _advance(self) -> tuple[float, bool]:
        """Move to the next request that needs a decision; requests with no
        allowed server are refused on the way (as `PoolAllocator` does)."""
        reward = 0.0
        while (request := self.simulation.next_request()) is not None:
            self.builder.start(request, self.simulation.view)
            if self.builder.allowed().any():
                return reward, False
            self.builder.fail("no_server")
            reward += self._resolve(self.builder.result())
        self.builder.request = None
        return reward, True

    def step(self, action):
        builder = self.builder
        action = int(action)
        info: dict[str, Any] = {}
        if not (0 <= action < self.network.n_servers and builder.allowed()[action]):
            info["invalid_action"] = True
            builder.fail("invalid_action")
        else:
            builder.add(action)
            if builder.is_open and not builder.allowed().any():
                builder.fail("no_server")
        reward = 0.0
        if not builder.is_open:
            reward = self._resolve(builder.result() if builder.status == "done" else Reject(builder.reason))
            more, done = self._advance()
            reward += more
        else:
            done = False
        info.update(accepted=self.accepted, offered=self.offered)
        if done:
            info["acceptance_ratio"] = self.accepted / max(1, self.offered)
        return self._observation(), reward, done, False, info


gym.register("dcbench/Allocation-v0", entry_point="dcbench.envs:AllocationEnv")
