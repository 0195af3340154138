"""Early stopping for the learned allocators' trainers: the weights that
scored best on held-out episodes, kept beside the training state so that a
resumed run keeps them too."""

from __future__ import annotations

import json
from typing import Any

import torch


class BestWeights:
    """The best validation score so far, where it was reached, and a copy of
    the weights that reached it."""

    def __init__(self, higher_is_better: bool, score_name: str):
        self.higher_is_better = higher_is_better
        self.score_name = score_name
        self.record: dict[str, Any] | None = None  # {score_name: score, plus where it was reached}
        self.weights: dict[str, torch.Tensor] = {}

    def offer(self, score: float, model: torch.nn.Module, **where: Any) -> float:
        """Keep ``model``'s weights if ``score`` beats the best so far; returns ``score``."""
        best = None if self.record is None else self.record[self.score_name]
        if best is None or (score > best if self.higher_is_better else score < best):
            self.record = {self.score_name: score, **where}
            self.weights = {key: value.clone() for key, value in model.state_dict().items()}
        return score

    def export(self, model: torch.nn.Module) -> dict[str, torch.Tensor]:
        """The weights to ship: the best validated ones, else the model's own."""
        return self.weights if self.weights else model.state_dict()

    def state(self) -> dict[str, Any]:
        return {"best": json.dumps(self.record), "best_model": self.weights}

    def load(self, state: dict[str, Any]) -> None:
        self.record = json.loads(state.get("best", "null"))  # states saved before early stopping have none
        self.weights = state.get("best_model", {})
