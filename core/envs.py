"""Gymnasium environments over the same builders the engine's allocators use.

``import dcbench.envs`` registers ``dcbench/Allocation-v0``::

    import gymnasium, dcbench.envs
    env = gymnasium.make("dcbench/Allocation-v0", topology="tiered:32,1x4", requests=32)

For pools, a step chooses one server for the current request (the pool
builder's step); for jobs (``workload="vmjobs..."`` on an ``ocs`` topology) a
step chooses the rack of the current VM (the job builder's step, the OCS
paper's multi-step formulation). The episode is the engine's own loop
(`dcbench.engine.Simulation`), so a policy acting in the environment and the
same policy acting as an allocator in ``dcbench run`` make the same
decisions on the same seed.

Rewards for pools are the tiered papers': +10 when a request is accepted,
−10 when it fails, 0 otherwise. For jobs they are the OCS paper's Eq. 1,
known only once the job is settled: the step that settles a job returns the
sum of the rewards of all its steps, and ``info["step_rewards"]`` lists them
one per step (what an actor-critic learner stores per sample).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import gymnasium as gym
import numpy as np

from dcbench.allocation import State
from dcbench.engine import Simulation
from dcbench.errors import AllocatorError, SpecError
from dcbench.jobs import PLACED, JobBuilder
from dcbench.network import Network
from dcbench.pool import PoolBuilder
from dcbench.runner import Runner, draw_requests
from dcbench.spec import Range

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


RACK_FEATURES = ("free_share_cpu", "free_share_mem", "free_share_disk", "it_if_placed", "job_vms_here",
                 "traffic_kept_here")
LINK_FEATURES = ("free_share", "capacity_share")


class JobFeatures:
    """The observation of a job step (a rack for the current VM).

    - ``rack_state`` (2 · racks): the OCS paper's state. For each rack, if
      the VM went there: the smallest residual share, over CPU, memory and
      disk, of the rack's free capacity; and the bottleneck residual share of
      the rack's circuit bundles in and out, after the VM's flows to the VMs
      already placed. −1 where the rack has no server for the VM, or its
      direct circuits cannot carry those flows.
    - node features (racks × 6): the rack's free share of each resource,
      the first state value, the share of this job's VMs placed there, and
      the share of the VM's traffic to them that would stay inside the rack;
    - edge features (links × 2): free share of each circuit bundle, and its
      capacity over the most a bundle can have (all of a ToR's ports);
    - global features (4): committed share of CPU, memory, disk; the share
      of the job's VMs placed so far;
    - the action mask: racks with a server for the VM.
    """

    def __init__(self, network: Network, builder: JobBuilder):
        self.network = network
        self.builder = builder
        self.n_racks = network.n_racks
        self.total = network.server_capacity.sum(axis=0)
        full = float(network.info.get("ports", 1)) * float(network.info.get("port_gbps", 1.0))
        self.full_bundle = full if full > 0 else 1.0
        self.out_links = builder.rack_link
        self.in_links = builder.rack_link.T.copy()

    def space(self) -> gym.spaces.Dict:
        racks, links = self.n_racks, self.network.n_links
        return gym.spaces.Dict({
            "rack_state": gym.spaces.Box(-1.0, 1.0, (2 * racks,), np.float32),
            "node_features": gym.spaces.Box(-1.0, 1.0, (racks, len(RACK_FEATURES)), np.float32),
            "edge_features": gym.spaces.Box(0.0, 1.0, (links, len(LINK_FEATURES)), np.float32),
            "global_features": gym.spaces.Box(0.0, 1.0, (4,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (racks,), np.int8),
        })

    def rack_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The paper's two values per rack (IT, bandwidth) and the mask."""
        builder = self.builder
        fits = builder.rack_fits()
        it = builder.share_left()
        it = np.where(fits, np.clip(it, 0.0, 1.0), -1.0)
        free = builder.free_links
        capacity = builder.link_capacity
        # Free bandwidth of every rack's bundles, out (u -> v) and in (v -> u), after this job's placed traffic.
        out_free = free[self.out_links] - builder.pending
        in_free = free[self.in_links] - builder.pending.T
        feasible = np.ones(self.n_racks, dtype=bool)
        for other, rate, outgoing in builder.partners():
            column = (out_free if outgoing else in_free)[:, other].copy()
            column[other] = np.inf  # same rack: no circuit
            feasible &= column >= rate - 1e-9
            if outgoing:
                out_free[:, other] -= rate
            else:
                in_free[:, other] -= rate
        out_capacity = capacity[self.out_links]
        in_capacity = capacity[self.in_links]
        with np.errstate(divide="ignore", invalid="ignore"):
            out_share = np.where(out_capacity > 0, out_free / out_capacity, np.inf)
            in_share = np.where(in_capacity > 0, in_free / in_capacity, np.inf)
        bottleneck = np.minimum(out_share.min(axis=1), in_share.min(axis=1))
        bottleneck = np.where(np.isfinite(bottleneck), np.clip(bottleneck, 0.0, 1.0), 0.0)
        bandwidth = np.where(feasible & fits, bottleneck, -1.0)
        return it, bandwidth, fits

    def traffic_kept(self) -> np.ndarray:
        """Per rack, the share of the next VM's Gbps to the VMs already
        placed that would stay inside the rack if it went there (0 for a
        job's first VM)."""
        kept = np.zeros(self.n_racks)
        total = 0.0
        for other, rate, _ in self.builder.partners():
            kept[other] += rate
            total += rate
        return kept / total if total > 0 else kept

    def observe(self, builder: JobBuilder, state: State) -> dict[str, np.ndarray]:
        it, bandwidth, fits = self.rack_state()
        n_vms = len(builder.vms)
        nodes = np.empty((self.n_racks, len(RACK_FEATURES)), dtype=np.float32)
        nodes[:, :3] = builder.rack_free / builder.rack_capacity
        nodes[:, 3] = it
        nodes[:, 4] = np.bincount(builder.host_racks, minlength=self.n_racks) / n_vms
        nodes[:, 5] = self.traffic_kept()
        capacity = builder.link_capacity[:-1]
        edges = np.empty((self.network.n_links, len(LINK_FEATURES)), dtype=np.float32)
        edges[:, 0] = np.divide(builder.free_links[:-1], capacity, out=np.zeros_like(capacity), where=capacity > 0)
        edges[:, 1] = capacity / self.full_bundle
        used = 1.0 - state.free_resources.sum(axis=0) / self.total
        return {
            "rack_state": np.concatenate([it, bandwidth]).astype(np.float32),
            "node_features": nodes,
            "edge_features": edges,
            "global_features": np.array([*used, builder.step / n_vms], dtype=np.float32),
            "action_mask": fits.astype(np.int8),
        }


def job_step_rewards(steps: int, blocked_at: int | None, latency_ns: float, reconfigured: bool,
                     alpha: float = 100.0, reconfiguration_cost: float = 25.0, vms: int | None = None) -> list[float]:
    """The OCS paper's Eq. 1 for the ``steps`` decisions taken for one job
    of ``vms`` VMs (K; ``steps`` by default).

    Blocked at step k (0-based, the last decision taken: a job whose next
    VM fits nowhere, or whose traffic cannot be routed, is blocked at the
    decision before): −K for step k, 0.5 for the steps before it. Served:
    1 + α / l for every step, minus Φ_reconf if the job needed a
    reconfiguration; l is the network-wide mean latency in nanoseconds right
    after the job is committed.
    """
    if blocked_at is not None:
        return [0.5] * blocked_at + [-float(vms if vms is not None else steps)]
    reward = 1.0 + (alpha / latency_ns if latency_ns > 0 else 0.0)
    if reconfigured:
        reward -= reconfiguration_cost
    return [reward] * steps


def _shown(value: Any) -> str:
    """A value given where it does not belong, in a few words on one line
    (an array's or a tensor's repr runs to many)."""
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 60 and "\n" not in text else f"a {type(value).__name__}"


def _reward_weight(name: str, value: Any) -> float:
    """A weight of the jobs' reward as a float: a finite number of at least
    0 (nan or a string would poison every served job's reward)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise SpecError(f"{name} must be a finite number, got {_shown(value)}")
    problem = Range(0).violation(value)
    if problem:
        raise SpecError(f"{name} must be {problem}, got {_shown(value)}")
    return float(value)


def _action_index(action: Any, space: gym.spaces.Discrete) -> int:
    """An action as a Python int: an int, a numpy integer or a 0-d integer
    array (what gymnasium's spaces and wrappers pass). Anything else is
    refused rather than truncated (2.7 is not server 2); so is a bool,
    which ``Discrete.contains`` would take for 0 or 1."""
    integral = isinstance(action, (int, np.integer)) and not isinstance(action, bool)
    if integral or (isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer)):
        return int(action)
    raise AllocatorError(f"action {_shown(action)} is not an integer; the action space {space} takes an int, "
                         "a numpy integer or a 0-d integer array")


class AllocationEnv(gym.Env):
    """One server per step for the pool requests of a scenario, or one rack
    per VM for its jobs.

    ``reset(seed=s)`` draws the request sequence exactly as ``dcbench run
    --seed s --requests N`` does. An action is an integer (an int, a numpy
    integer or a 0-d integer array); anything else, a bool or a float
    included, is refused with an `AllocatorError` and changes nothing. An
    integer outside the mask fails the request (``info["invalid_action"]``).
    For jobs, ``alpha`` and ``reconfiguration_cost`` are the α and
    Φ_reconf of the paper's reward, finite numbers of at least 0, and
    ``reconfigure`` (True or False, nothing else: ``'no'`` is refused, not
    taken as true) lets the job builder reconfigure circuits where the
    topology can. Settings of the wrong type or range are a `SpecError`.
    """

    metadata = {"render_modes": []}

    def __init__(self, topology: str = "tiered:32,1x4", workload: str | None = None, requests: int = 32,
                 runner: Runner | None = None, alpha: float = 100.0, reconfiguration_cost: float = 25.0,
                 reconfigure: bool = True):
        for name, value, example in (("topology", topology, "tiered:32,1x4"), ("workload", workload, "uniform")):
            if not isinstance(value, str) and not (name == "workload" and value is None):
                raise SpecError(f"{name} must be a spec such as {example!r}, got {_shown(value)}")
        if isinstance(requests, bool) or not isinstance(requests, (int, np.integer)):
            raise SpecError(f"requests must be a whole number of requests, got {_shown(requests)}")
        self.alpha = _reward_weight("alpha", alpha)
        self.reconfiguration_cost = _reward_weight("reconfiguration_cost", reconfiguration_cost)
        if not isinstance(reconfigure, (bool, np.bool_)):
            raise SpecError(f"reconfigure must be True or False, got {_shown(reconfigure)}")
        runner = runner or Runner()
        plan = runner.resolve("random", topology, workload, requests)
        self.plan = plan
        self.network: Network = plan.network
        self.workload = plan.workload_model
        self.kind = self.workload.kind
        self.requests = plan.requests
        self.spec_text = {"topology": plan.topology, "workload": plan.workload}
        if self.kind == "job":
            self.builder = JobBuilder(self.network, bool(reconfigure))
            self.features = JobFeatures(self.network, self.builder)
            self.action_space = gym.spaces.Discrete(self.network.n_racks)
        else:
            self.features = PoolFeatures(self.network)
            self.action_space = gym.spaces.Discrete(self.network.n_servers)
            self.builder = PoolBuilder(self.network)
        self.observation_space = self.features.space()
        self.simulation: Simulation | None = None
        self._open = False
        self._done = False
        # With no inter-rack traffic a packet would wait for nothing: the latency
        # is then one packet's transmission time on a circuit.
        packet_bits = 8.0 * getattr(self.workload, "packet_bytes", 296)
        self.floor_latency_ns = packet_bits / float(self.network.info.get("port_gbps", 40.0))

    def served_latency_ns(self) -> float:
        """l of Eq. 1 once a job is committed: the network-wide mean packet
        latency, at least one packet's transmission time (the latency when
        no traffic crosses racks, where the engine reports none: NaN)."""
        latency_us = self.simulation.network_qos()[0]
        return self.floor_latency_ns if np.isnan(latency_us) else max(latency_us * 1e3, self.floor_latency_ns)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**62))
        workload_rng, _ = np.random.default_rng(seed).spawn(2)
        sequence = draw_requests(self.plan, self.requests, workload_rng)
        self.simulation = Simulation(self.network, sequence)
        self.accepted = 0
        self.offered = 0
        reward, done = self._advance()
        self._done = done
        return self._observation(), {"reward_before_first_step": reward, "done": done}

    def _observation(self) -> dict[str, np.ndarray]:
        if not self._open or self.simulation.request is None:
            return {k: np.zeros(v.shape, v.dtype) for k, v in self.observation_space.spaces.items()}
        return self.features.observe(self.builder, self.simulation.view)

    def _resolve(self, result) -> float:
        accepted = self.simulation.resolve(result)
        self.offered += 1
        self.accepted += accepted
        return SUCCESS_REWARD if accepted else FAILURE_REWARD

    def _advance(self) -> tuple[float, bool]:
        """Move to the next request that needs a decision; requests with no
        allowed server (rack) are refused on the way, as the allocators do."""
        reward = 0.0
        while (request := self.simulation.next_request()) is not None:
            self.builder.start(request, self.simulation.view)
            if self.kind == "job":
                if self.builder.rack_fits().any():
                    self._open = True
                    return reward, False
                self.builder.fail("no_server")
                self.simulation.resolve(self.builder.result())
                self.offered += 1
                continue  # no decision was taken: no sample, no reward
            if self.builder.allowed().any():
                self._open = True
                return reward, False
            self.builder.fail("no_server")
            reward += self._resolve(self.builder.result())
        self._open = False
        return reward, True

    def _step_job(self, action: int) -> tuple[float, dict[str, Any]]:
        builder = self.builder
        info: dict[str, Any] = {}
        if not (0 <= action < self.network.n_racks and builder.rack_fits()[action]):
            info["invalid_action"] = True
            builder.fail("invalid_action")
        else:
            builder.place(action)
            if builder.is_open and not builder.rack_fits().any():
                builder.fail("no_server")
        if builder.is_open:
            return 0.0, info
        actions = builder.step + bool(info.get("invalid_action"))  # decisions taken for this job
        if builder.status == PLACED:
            builder.route()
        accepted = self.simulation.resolve(builder.result())  # the allocation, or the builder's Reject
        self.offered += 1
        self.accepted += accepted
        latency_ns = self.served_latency_ns() if accepted else 0.0
        rewards = job_step_rewards(actions, None if accepted else actions - 1, latency_ns,
                                   accepted and bool(builder.swaps), self.alpha, self.reconfiguration_cost,
                                   vms=len(builder.vms))
        info.update(step_rewards=rewards, job_accepted=accepted,
                    reconfigurations=len(builder.swaps) if accepted else 0)
        return float(sum(rewards)), info

    def step(self, action):
        if self.simulation is None:
            raise gym.error.ResetNeeded("call reset() before the first step()")
        if self._done:
            raise gym.error.ResetNeeded("the episode is over; call reset() before step()")
        action = _action_index(action, self.action_space)
        if self.kind == "job":
            reward, info = self._step_job(action)
            done = False
            if not self._open or not self.builder.is_open:
                more, done = self._advance()
                reward += more
            result = self._observation(), reward, done, False, self._counts(info, done)
        else:
            result = self._step_pool(action)
        self._done = result[2]
        return result

    def _counts(self, info: dict[str, Any], done: bool) -> dict[str, Any]:
        """``info`` with the episode's counts so far, and its acceptance ratio at the end."""
        info.update(accepted=self.accepted, offered=self.offered)
        if done:
            info["acceptance_ratio"] = self.accepted / max(1, self.offered)
        return info

    def _step_pool(self, action: int):
        builder = self.builder
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
            reward = self._resolve(builder.result())
            more, done = self._advance()
            reward += more
        else:
            done = False
        return self._observation(), reward, done, False, self._counts(info, done)


gym.register("dcbench/Allocation-v0", entry_point="dcbench.envs:AllocationEnv")
