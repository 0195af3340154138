"""The trained GNN policy as an allocator: the arg-max of its masked
logits, computed so that every CPU decides alike (`GreedyPolicy`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from dcbench import Network, PoolAllocator, PoolBuilder, Request, State
from dcbench.envs import PoolFeatures
from dcbench.plugins.allocators._learned.checkpoints import (
    check_config,
    check_weight_shapes,
    checked_checkpoint,
    content_fingerprint,
    load_checkpoint,
    shipped_checkpoints,
)
from dcbench.plugins.allocators.gnn_ppo.model import (
    CONFIG_LIMITS,
    GraphPolicy,
    GreedyPolicy,
    hint_features,
    weight_shapes,
    with_self_loops,
)

CHECKPOINTS = "dcbench.plugins.allocators.gnn_ppo"


def checkpoint_for(network: Network) -> tuple[Path, str]:
    """The shipped checkpoint that matches the topology's channels and
    oversubscription, or the nearest one (with a note saying so)."""
    available = shipped_checkpoints(CHECKPOINTS)
    if not available:
        raise FileNotFoundError("no gnn_ppo checkpoint is shipped with this installation; "
                                "train one with `dcbench train --allocator gnn_ppo` and pass checkpoint=PATH")
    channels, ratio = network.info.get("sr"), network.info.get("ratio")
    wanted = f"tiered-{channels}-{ratio}"
    if wanted in available:
        return available[wanted], ""
    same_ratio = [name for name in available if name.endswith(f"-{ratio}")]
    candidates = same_ratio or list(available)

    def distance(name: str) -> float:
        try:
            return abs(np.log2(int(name.split("-")[1]) / float(channels or 32)))
        except (ValueError, IndexError):
            return float("inf")

    chosen = min(sorted(candidates), key=distance)
    return available[chosen], f"gnn_ppo: no checkpoint for {wanted}; using {chosen}"


def load_policy(path: Path) -> GraphPolicy:
    """The policy saved at ``path`` (weights and configuration, no pickled
    code); its configuration and the weights' shapes are checked before it is built."""

    def build(saved: dict) -> GraphPolicy:
        config = check_config(path, "gnn_ppo", json.loads(saved["config"]), CONFIG_LIMITS)
        check_weight_shapes(path, "gnn_ppo", saved["model"], weight_shapes(config))
        model = GraphPolicy(**config)
        model.load_state_dict(saved["model"])
        return model.eval()

    return load_checkpoint(path, "gnn_ppo", build)


class GnnPpoAllocator(PoolAllocator):
    def __init__(self, checkpoint: str | None = None):
        self.checkpoint = checked_checkpoint(checkpoint)

    def fingerprint(self, network: Network) -> str:
        """The checkpoint this allocator would use on ``network``, by content."""
        return content_fingerprint(Path(self.checkpoint) if self.checkpoint is not None
                                   else checkpoint_for(network)[0])

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        super().reset(network, rng)
        # One decision is a forward pass over a few hundred nodes: more threads
        # only add synchronisation, and oversubscribe the cores of a sweep's pool.
        torch.set_num_threads(1)
        if self.checkpoint is not None:
            path, note = Path(self.checkpoint), ""
        else:
            path, note = checkpoint_for(network)
        self.notes = [note] if note else []
        self.model = load_policy(path)
        self.greedy = GreedyPolicy(self.model)
        # The checkpoint's hint features come with the observation, as "hint_features" (dcbench.envs.PoolHints).
        self.features = PoolFeatures(network, hint_features(self.model.extra_features, self.model.sixth_hint))
        self.edge_index = with_self_loops(self.features.edge_index, self.features.n_nodes)
        self._state: State | None = None

    def allocate(self, request: Request, state: State):
        self._state = state
        return super().allocate(request, state)

    def choose(self, builder: PoolBuilder, allowed: np.ndarray) -> int:
        observation = self.features.observe(builder, self._state)
        return self.greedy.action({k: v[None] for k, v in observation.items()}, self.edge_index)
