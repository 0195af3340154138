"""What a policy sees of a step: `PoolFeatures`, `JobFeatures` and the `StaticGraph` both observe."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from dcbench.engine.jobs import JobBuilder
from dcbench.engine.pool import PoolBuilder
from dcbench.envs.hints import PoolHints
from dcbench.model.allocation import State
from dcbench.model.network import Network, share_divisor

NODE_KINDS = ("server", "switch", "rack")


@dataclass(frozen=True, eq=False)
class StaticGraph:
    """The graph the observations describe: nodes in the row order of "node_features", edges in that of
    "edge_features" (docs/envs.md).

    Attributes:
        edge_index: The ends of every edge (2 × edges, int64), PyTorch Geometric's layout.
        node_kind: Each node's kind (nodes,), an index into `NODE_KINDS`.
        network_node: Each node's index among the network's nodes (for a rack, its switch's).
        edge_link: The network link of each edge (edges,).
        directed: Whether links carry traffic one way only (jobs on a directed network); False for pools.
    """

    edge_index: np.ndarray
    node_kind: np.ndarray
    network_node: np.ndarray
    edge_link: np.ndarray
    directed: bool

    @property
    def n_nodes(self) -> int:
        """The number of nodes."""
        return len(self.node_kind)

    @property
    def n_edges(self) -> int:
        """The number of edges."""
        return self.edge_index.shape[1]


NODE_FEATURES = ("free_over_needed_cpu", "free_over_needed_mem", "chosen", "free_share_cpu", "free_share_mem")
EDGE_FEATURES = ("free_over_demand", "free_share")


def _squash(x: np.ndarray) -> np.ndarray:
    # sigmoid(x − 1): 1 free share per share needed maps to 0.5
    return 1.0 / (1.0 + np.exp(1.0 - x))


class PoolFeatures:
    """The observation of a pool step, as in the reference model (columns: docs/learned/gnn_ppo.md).

    Args:
        network: The network observed; its resources must be (cpu, mem).
        hints: The `PoolHints` features to add, by name (none by default).

    Raises:
        ValueError: The network's resources are not (cpu, mem).
        SpecError: A hint that is no `PoolHints` feature.
    """

    def __init__(self, network: Network, hints: Sequence[str] = ()):
        if network.resources != ("cpu", "mem"):
            raise ValueError(f"pool features need resources (cpu, mem), got {network.resources}")
        self.network = network
        ends = network.link_ends
        self.edge_index = np.concatenate([ends.T, ends[:, ::-1].T], axis=1).astype(np.int64)
        self.edge_link = np.concatenate([np.arange(network.n_links), np.arange(network.n_links)])
        self.total = network.server_capacity.sum(axis=0)
        self.inverse_capacity = 1.0 / share_divisor(network.server_capacity)
        self.inverse_link_capacity = 1.0 / share_divisor(network.link_capacity[self.edge_link])
        self.holding_scale = 30.0 * network.n_servers / 64.0
        self.n_nodes = network.n_nodes
        self.n_servers = network.n_servers
        self._switch_value = float(_squash(np.zeros(1))[0])
        self.hints = PoolHints(network, hints) if len(hints) else None

    def space(self) -> gym.spaces.Dict:
        """The observation space.

        Returns:
            A Dict of float32 boxes, and "action_mask" (servers,), int8.
        """
        spaces = {
            "node_features": gym.spaces.Box(0.0, 1.0, (self.n_nodes, len(NODE_FEATURES)), np.float32),
            "edge_features": gym.spaces.Box(0.0, 1.0, (len(self.edge_link), len(EDGE_FEATURES)), np.float32),
            "global_features": gym.spaces.Box(0.0, np.array([1.0, 1.0, 1e3], np.float32), (3,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (self.n_servers,), np.int8),
        }
        if self.hints is not None:
            shape = (self.n_nodes, len(self.hints.names))
            spaces["hint_features"] = gym.spaces.Box(np.zeros(shape, np.float32),
                                                     np.broadcast_to(self.hints.high(), shape), shape, np.float32)
        return gym.spaces.Dict(spaces)

    def graph(self) -> StaticGraph:
        """The static graph: the network's nodes, each link as two edges.

        Returns:
            The graph.
        """
        kind = np.full(self.n_nodes, NODE_KINDS.index("switch"), dtype=np.int8)
        kind[: self.n_servers] = NODE_KINDS.index("server")
        return StaticGraph(self.edge_index.copy(), kind, np.arange(self.n_nodes, dtype=np.int64),
                           self.edge_link.astype(np.int64), directed=False)

    def observe(self, builder: PoolBuilder, state: State) -> dict[str, np.ndarray]:
        """The observation of the builder's next step.

        Args:
            builder: The pool builder, started on the request.
            state: The engine's state: the committed free capacities.

        Returns:
            Arrays by the keys of `space`.
        """
        batch = {"node_features": np.empty((1, self.n_nodes, len(NODE_FEATURES)), np.float32),
                 "edge_features": np.empty((1, len(self.edge_link), len(EDGE_FEATURES)), np.float32),
                 "global_features": np.empty((1, 3), np.float32),
                 "action_mask": np.empty((1, self.n_servers), np.int8)}
        remaining, free = builder.remaining, builder.free_resources
        inverse = np.divide(1.0, remaining, out=np.zeros_like(remaining), where=remaining > 0)
        free_links = builder.free_links[self.edge_link]
        used = 1.0 - state.free_resources.sum(axis=0) / self.total
        holding = np.array([builder.request.holding / self.holding_scale])
        write_pool_observation(batch, self, free[None], builder.chosen_mask[None], builder.allowed()[None],
                               free_links[None], used[None], holding, _squash(free * inverse)[None],
                               _squash(free_links)[None])
        observation = {key: array[0] for key, array in batch.items()}
        if self.hints is not None:
            observation["hint_features"] = self.hints.compute(builder)
        return observation


def write_pool_observation(obs: dict[str, np.ndarray], features: "PoolFeatures", free: np.ndarray, chosen: np.ndarray,
                           allowed: np.ndarray, free_links: np.ndarray, used: np.ndarray, holding: np.ndarray,
                           squashed_free: np.ndarray, squashed_links: np.ndarray) -> None:
    """Every row's pool observation from the builders' (N, …) arrays, with `PoolFeatures.observe`'s arithmetic."""
    servers = features.n_servers
    nodes = obs["node_features"]
    nodes[:, :servers, :2] = squashed_free
    nodes[:, servers:, :2] = features._switch_value
    nodes[:, :, 2] = 0.0
    nodes[:, :servers, 2] = chosen
    nodes[:, servers:, 3:5] = 0.0
    nodes[:, :servers, 3:5] = free * features.inverse_capacity
    obs["edge_features"][..., 0] = squashed_links
    obs["edge_features"][..., 1] = free_links * features.inverse_link_capacity
    obs["global_features"][:, :2] = used[:, :2]
    obs["global_features"][:, 2] = holding
    obs["action_mask"][:] = allowed


RACK_FEATURES = ("free_share_cpu", "free_share_mem", "free_share_disk", "it_if_placed", "job_vms_here",
                 "traffic_kept_here")
LINK_FEATURES = ("free_share", "capacity_share")


class JobFeatures:
    """The observation of a job step, a rack for the current VM (columns: docs/learned/a2c_multistep.md).

    Args:
        network: The network observed: rack switches, and resources (cpu, mem, disk).
        builder: The job builder whose steps it observes.

    Raises:
        ValueError: The network's resources are not (cpu, mem, disk).
    """

    def __init__(self, network: Network, builder: JobBuilder):
        if network.resources != ("cpu", "mem", "disk"):
            raise ValueError(f"job features need resources (cpu, mem, disk), got {network.resources}")
        self.network = network
        self.builder = builder
        self.n_racks = network.n_racks
        self.total = network.server_capacity.sum(axis=0)
        circuits = network.circuits
        self.full_bundle = float(circuits.ports) * float(circuits.port_gbps) if circuits is not None else 1.0

    def space(self) -> gym.spaces.Dict:
        """The observation space.

        Returns:
            A Dict of float32 boxes, and "action_mask" (racks,), int8.
        """
        racks, links = self.n_racks, self.network.n_links
        return gym.spaces.Dict({
            "rack_state": gym.spaces.Box(-1.0, 1.0, (2 * racks,), np.float32),
            "node_features": gym.spaces.Box(-1.0, 1.0, (racks, len(RACK_FEATURES)), np.float32),
            "edge_features": gym.spaces.Box(0.0, 1.0, (links, len(LINK_FEATURES)), np.float32),
            "global_features": gym.spaces.Box(0.0, 1.0, (4,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (racks,), np.int8),
        })

    def graph(self) -> StaticGraph:
        """The static graph: the racks, each link between rack switches one way.

        Returns:
            The graph.
        """
        rack_of_node = np.full(self.network.n_nodes, -1, dtype=np.int64)
        rack_of_node[self.network.rack_node] = np.arange(self.n_racks)
        return StaticGraph(rack_of_node[self.network.link_ends].T.copy(),
                           np.full(self.n_racks, NODE_KINDS.index("rack"), dtype=np.int8),
                           np.asarray(self.network.rack_node, dtype=np.int64).copy(),
                           np.arange(self.network.n_links, dtype=np.int64), directed=self.network.directed)

    def rack_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The OCS paper's two values per rack and the mask.

        Returns:
            ``(it, bandwidth, fits)``: per rack, the residual shares if the next VM went there (−1 where it cannot),
            and the racks with room for it.
        """
        builder = self.builder
        fits = builder.rack_fits()
        it = builder.share_left()
        it = np.where(fits, np.clip(it, 0.0, 1.0), -1.0)
        bundle_free = builder.bundle_free()
        # Free bandwidth of every rack's bundles, out (u -> v) and in (v -> u), after this job's placed traffic.
        out_free = bundle_free - builder.pending
        in_free = bundle_free.T - builder.pending.T
        feasible = np.ones(self.n_racks, dtype=bool)
        for other, rate, outgoing in builder.partners():
            column = (out_free if outgoing else in_free)[:, other].copy()
            column[other] = np.inf  # same rack: no circuit
            feasible &= column >= rate - 1e-9
            if outgoing:
                out_free[:, other] -= rate
            else:
                in_free[:, other] -= rate
        out_capacity = builder.bundle_capacity()
        in_capacity = out_capacity.T
        with np.errstate(divide="ignore", invalid="ignore"):
            out_share = np.where(out_capacity > 0, out_free / out_capacity, np.inf)
            in_share = np.where(in_capacity > 0, in_free / in_capacity, np.inf)
        bottleneck = np.minimum(out_share.min(axis=1), in_share.min(axis=1))
        bottleneck = np.where(np.isfinite(bottleneck), np.clip(bottleneck, 0.0, 1.0), 0.0)
        bandwidth = np.where(feasible & fits, bottleneck, -1.0)
        return it, bandwidth, fits

    def traffic_kept(self) -> np.ndarray:
        """Per rack, the share of the next VM's Gbps to placed VMs that would stay inside it (0 for a first VM).

        Returns:
            The shares (racks,).
        """
        kept = np.zeros(self.n_racks)
        total = 0.0
        for other, rate, _ in self.builder.partners():
            kept[other] += rate
            total += rate
        return kept / total if total > 0 else kept

    def observe(self, builder: JobBuilder, state: State) -> dict[str, np.ndarray]:
        """The observation of the builder's next step.

        Args:
            builder: The job builder, started on the job: the one these features were made with.
            state: The engine's state: the committed free capacities.

        Returns:
            Arrays by the keys of `space`.
        """
        it, bandwidth, fits = self.rack_state()
        n_vms = len(builder.vms)
        nodes = np.empty((self.n_racks, len(RACK_FEATURES)), dtype=np.float32)
        nodes[:, :3] = builder.rack_free / share_divisor(builder.rack_capacity)
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
