"""Actor and critic of the OCS paper: five dense layers of 128 with ELU each."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

MASKED = -1e9


def dense(inputs: int, outputs: int, hidden: int, layers: int) -> nn.Sequential:
    parts: list[nn.Module] = []
    width = inputs
    for _ in range(layers):
        parts += [nn.Linear(width, hidden), nn.ELU()]
        width = hidden
    parts.append(nn.Linear(width, outputs))
    return nn.Sequential(*parts)


class ActorCritic(nn.Module):
    """``actor(state)`` gives a logit per rack, ``critic(state)`` a value;
    the state is ``features`` values per rack: the paper's two (see
    `dcbench.envs.JobFeatures`), or three with the traffic kept in the rack
    (``state=placement``, ours)."""

    def __init__(self, racks: int, hidden: int = 128, layers: int = 5, features: int = 2):
        super().__init__()
        self.racks, self.hidden, self.layers, self.features = racks, hidden, layers, features
        self.actor = dense(features * racks, racks, hidden, layers)
        self.critic = dense(features * racks, 1, hidden, layers)

    def config(self) -> dict[str, int]:
        return {"racks": self.racks, "hidden": self.hidden, "layers": self.layers, "features": self.features}

    def logits(self, state: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.actor(state)
        if mask is not None:
            logits = torch.where(mask, logits, torch.full_like(logits, MASKED))
        return logits

    def value(self, state: torch.Tensor) -> torch.Tensor:
        return self.critic(state).squeeze(-1)


class NumpyActor:
    """The actor's forward pass in numpy, for one state at a time: a decision
    is six small matrix products, which torch's per-call overhead would
    dominate (about 20 times slower). Rebuild it after the weights change."""

    def __init__(self, model: ActorCritic):
        layers = [m for m in model.actor if isinstance(m, nn.Linear)]
        self.weights = [layer.weight.detach().numpy().T.copy() for layer in layers]
        self.biases = [layer.bias.detach().numpy().copy() for layer in layers]

    def __call__(self, state: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        x = np.asarray(state, dtype=np.float32)
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = x @ weight + bias
            if index < last:
                x = np.where(x > 0, x, np.expm1(np.minimum(x, 0)))  # ELU
        if mask is not None:
            x = np.where(mask, x, np.float32(MASKED))
        return x
