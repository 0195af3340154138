"""Actor and critic of the OCS paper: five dense layers of 128 with ELU each."""

from __future__ import annotations

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
    the state is the paper's 2 · racks vector (see `dcbench.envs.JobFeatures`)."""

    def __init__(self, racks: int, hidden: int = 128, layers: int = 5):
        super().__init__()
        self.racks, self.hidden, self.layers = racks, hidden, layers
        self.actor = dense(2 * racks, racks, hidden, layers)
        self.critic = dense(2 * racks, 1, hidden, layers)

    def config(self) -> dict[str, int]:
        return {"racks": self.racks, "hidden": self.hidden, "layers": self.layers}

    def logits(self, state: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.actor(state)
        if mask is not None:
            logits = torch.where(mask, logits, torch.full_like(logits, MASKED))
        return logits

    def value(self, state: torch.Tensor) -> torch.Tensor:
        return self.critic(state).squeeze(-1)
