"""The trained A2C agent as an allocator: the arg-max of its policy per VM."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from dcbench import JobAllocator, JobBuilder, Network, SpecError
from dcbench.envs import JobFeatures
from dcbench.plugins.allocators._learned.checkpoints import (
    check_config,
    check_weight_shapes,
    checked_checkpoint,
    content_fingerprint,
    load_checkpoint,
    shipped_checkpoints,
)
from dcbench.plugins.allocators.a2c_multistep.model import CONFIG_LIMITS, ActorCritic, NumpyActor, weight_shapes

CHECKPOINTS = "dcbench.plugins.allocators.a2c_multistep"
# How the weights are evaluated is part of a run's identity too: runs of the
# earlier float32 actor, whose decisions depended on the CPU, are not reused.
ACTOR_NUMERICS = b"NumpyActor: float64, logits rounded to float32\n"


def checkpoint_for(network: Network) -> Path:
    """The shipped checkpoint for the topology's number of ToRs (the state
    and the action space are per rack, so the size must match)."""
    wanted = f"ocs-{network.n_racks}"
    available = shipped_checkpoints(CHECKPOINTS)
    if wanted not in available:
        shipped = ", ".join(sorted(available)) or "none"
        raise FileNotFoundError(
            f"no a2c_multistep checkpoint for {network.n_racks} ToRs (shipped: {shipped}); "
            f"train one with `dcbench train --allocator a2c_multistep --topology ocs:{network.n_racks}` "
            "and pass checkpoint=PATH")
    return available[wanted]


def load_model(path: Path) -> tuple[ActorCritic, dict]:
    """The actor-critic saved at ``path`` and its training configuration;
    the model's configuration and the weights' shapes are checked before it is built."""

    def build(saved: dict) -> tuple[ActorCritic, dict]:
        config = json.loads(saved["config"])
        architecture = check_config(path, "a2c_multistep", config["model"], CONFIG_LIMITS, required=("racks",))
        check_weight_shapes(path, "a2c_multistep", saved["model"], weight_shapes(architecture))
        model = ActorCritic(**architecture)
        model.load_state_dict(saved["model"])
        return model.eval(), config

    return load_checkpoint(path, "a2c_multistep", build)


def check_racks(model: ActorCritic, path: Path, network: Network) -> None:
    """A model trained for as many ToRs as ``network`` has (its state and actions are per rack), else a SpecError."""
    if model.racks != network.n_racks:
        raise SpecError(f"checkpoint {path.name} is for {model.racks} ToRs, the topology has {network.n_racks}; "
                        f"give one trained for it (`dcbench train --allocator a2c_multistep --topology "
                        f"ocs:{network.n_racks}`)")


class A2CAllocator(JobAllocator):
    def __init__(self, checkpoint: str | None = None):
        self.checkpoint = checked_checkpoint(checkpoint)

    def _path(self, network: Network) -> Path:
        return Path(self.checkpoint) if self.checkpoint is not None else checkpoint_for(network)

    def fingerprint(self, network: Network) -> str:
        """The checkpoint's content (retrained weights make new runs) and `ACTOR_NUMERICS`."""
        return content_fingerprint(self._path(network), salt=ACTOR_NUMERICS)

    def check(self, network: Network) -> None:
        """Refuse a ``checkpoint=PATH`` trained for another number of ToRs (the
        shipped checkpoint is picked by the number of ToRs)."""
        if self.checkpoint is not None:
            path = Path(self.checkpoint)
            check_racks(load_model(path)[0], path, network)

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        torch.set_num_threads(1)
        path = self._path(network)
        self.model, config = load_model(path)
        check_racks(self.model, path, network)  # (`check` refuses it first, in a run)
        self.masked = bool(config.get("a2c", {}).get("mask", True))
        super().reset(network, rng)  # JobAllocator's builder reconfigures where the topology allows (the paper's)
        self.features = JobFeatures(network, self.job_builder)
        self.actor = NumpyActor(self.model)

    def choose_rack(self, builder: JobBuilder, allowed: np.ndarray) -> int:
        return greedy_rack(self.actor, self.features, allowed if self.masked else None, self.model.features)


def agent_state(features: JobFeatures, values_per_rack: int) -> np.ndarray:
    """The agent's input for the builder's next VM: the paper's two values per
    rack, then (three per rack, ``state=placement``) the traffic kept in the rack."""
    it, bandwidth, _ = features.rack_state()
    parts = [it, bandwidth] if values_per_rack == 2 else [it, bandwidth, features.traffic_kept()]
    return np.concatenate(parts).astype(np.float32)


def greedy_rack(actor: NumpyActor, features: JobFeatures, allowed: np.ndarray | None,
                values_per_rack: int = 2) -> int:
    """The arg-max of the actor's logits for the builder's next VM (lowest rack on ties)."""
    return int(np.argmax(actor(agent_state(features, values_per_rack), allowed)))
