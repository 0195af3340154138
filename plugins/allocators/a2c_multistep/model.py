"""Actor and critic of the OCS paper: five dense layers of 128 with ELU each."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from dcbench import Range
from dcbench.plugins.allocators.a2c_multistep.config import ACTORS, MAX_HIDDEN, MAX_LAYERS

MASKED = -1e9
# The largest network loaded (the largest `A2CConfig` trains), checked before one is built from a checkpoint.
CONFIG_LIMITS = {"racks": Range(2, 2048), "hidden": Range(1, MAX_HIDDEN), "layers": Range(1, MAX_LAYERS),
                 "features": (2, 3), "actor": ACTORS}


def dense(inputs: int, outputs: int, hidden: int, layers: int) -> nn.Sequential:
    parts: list[nn.Module] = []
    width = inputs
    for _ in range(layers):
        parts += [nn.Linear(width, hidden), nn.ELU()]
        width = hidden
    parts.append(nn.Linear(width, outputs))
    return nn.Sequential(*parts)


class SharedRackActor(nn.Module):
    """Ours (``actor=shared``): one network scores every rack from the rack's
    own values and their mean over the racks, so a rule that is the same for
    every rack is learnt once rather than once per rack."""

    def __init__(self, racks: int, features: int, hidden: int, layers: int):
        super().__init__()
        self.racks, self.features = racks, features
        self.net = dense(2 * features, 1, hidden, layers)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        per_rack = state.reshape(*state.shape[:-1], self.features, self.racks).transpose(-1, -2)
        context = per_rack.mean(dim=-2, keepdim=True).expand_as(per_rack)
        return self.net(torch.cat([per_rack, context], dim=-1)).squeeze(-1)


class ActorCritic(nn.Module):
    """``actor(state)`` gives a logit per rack, ``critic(state)`` a value;
    the state is ``features`` values per rack: the paper's two (see
    `dcbench.envs.JobFeatures`), or three with the traffic kept in the rack
    (``state=placement``, ours). The actor is the paper's dense network
    over the whole state, or (``actor="shared"``, ours) `SharedRackActor`."""

    def __init__(self, racks: int, hidden: int = 128, layers: int = 5, features: int = 2, actor: str = "dense"):
        super().__init__()
        if actor not in ACTORS:
            raise ValueError(f"actor={actor!r} is not one of {', '.join(ACTORS)}")
        self.racks, self.hidden, self.layers, self.features, self.actor_kind = racks, hidden, layers, features, actor
        if actor == "shared":
            self.actor = SharedRackActor(racks, features, hidden, layers)
        else:
            self.actor = dense(features * racks, racks, hidden, layers)
        self.critic = dense(features * racks, 1, hidden, layers)

    def config(self) -> dict[str, int | str]:
        config: dict[str, int | str] = {"racks": self.racks, "hidden": self.hidden, "layers": self.layers,
                                        "features": self.features}
        if self.actor_kind != "dense":  # absent from the paper-architecture checkpoints
            config["actor"] = self.actor_kind
        return config

    def logits(self, state: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.actor(state)
        if mask is not None:
            logits = torch.where(mask, logits, torch.full_like(logits, MASKED))
        return logits

    def value(self, state: torch.Tensor) -> torch.Tensor:
        return self.critic(state).squeeze(-1)


def weight_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """The name and shape of every weight of the ActorCritic that ``config``
    (within `CONFIG_LIMITS`) makes, without building it."""
    racks, features = config["racks"], config.get("features", 2)
    hidden, layers = config.get("hidden", 128), config.get("layers", 5)
    shapes: dict[str, tuple[int, ...]] = {}

    def dense_shapes(prefix: str, inputs: int, outputs: int) -> None:  # as `dense` builds
        for index, (width, out) in enumerate(zip([inputs] + [hidden] * layers, [hidden] * layers + [outputs])):
            shapes[f"{prefix}{2 * index}.weight"], shapes[f"{prefix}{2 * index}.bias"] = (out, width), (out,)

    if config.get("actor", "dense") == "shared":
        dense_shapes("actor.net.", 2 * features, 1)
    else:
        dense_shapes("actor.", features * racks, racks)
    dense_shapes("critic.", features * racks, 1)
    return shapes


class NumpyActor:
    """The actor's forward pass in numpy, for one state at a time: a decision
    is six small matrix products, which torch's per-call overhead would
    dominate (about 20 times slower). Rebuild it after the weights change.

    It computes in float64 and rounds the logits to float32. In float32 the
    last bits of a matrix product depend on the BLAS kernel the CPU selects
    (OpenBLAS picks one per CPU family), and near-equal logits then make
    other arg-max decisions on another machine: the same seed gave other
    tables. The float64 differences between kernels are far below float32's
    resolution, so the rounded logits, and the decisions, are the same."""

    def __init__(self, model: ActorCritic):
        self.shared = model.actor_kind == "shared"
        self.racks, self.features = model.racks, model.features
        network = model.actor.net if self.shared else model.actor
        layers = [m for m in network if isinstance(m, nn.Linear)]
        self.weights = [layer.weight.detach().double().numpy().T.copy() for layer in layers]
        self.biases = [layer.bias.detach().double().numpy().copy() for layer in layers]

    def __call__(self, state: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        x = np.asarray(state, dtype=np.float32).astype(np.float64)
        rows = None  # the shared actor scores one state's allowed racks only: the others' logits are masked anyway
        if self.shared:  # as SharedRackActor.forward
            per_rack = np.swapaxes(x.reshape(*x.shape[:-1], self.features, self.racks), -1, -2)
            context = np.broadcast_to(per_rack.mean(axis=-2, keepdims=True), per_rack.shape)
            x = np.concatenate([per_rack, context], axis=-1)
            if mask is not None and x.ndim == 2:
                rows = np.flatnonzero(mask)
                x = x[rows]
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = x @ weight
            x += bias
            if index < last:
                elu(x)
        if self.shared:
            x = x[..., 0]
        x = x.astype(np.float32)
        if rows is not None:
            logits = np.full(self.racks, MASKED, dtype=np.float32)
            logits[rows] = x
            return logits
        if mask is not None:
            x = np.where(mask, x, np.float32(MASKED))
        return x


def elu(x: np.ndarray) -> None:
    """ELU in place, bit for bit torch's: x where x > 0, else exp(x) - 1."""
    negative = np.minimum(x, 0.0)
    np.expm1(negative, out=negative)
    np.maximum(x, 0.0, out=x)
    x += negative
