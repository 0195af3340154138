"""Reading the learned allocators' checkpoints: weights and a JSON
configuration saved with ``torch.save``, loaded with ``weights_only=True``
(no pickled code), and a one-line error for any file that is not one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypeVar

import torch

from dcbench.errors import ResultsError, describe

Loaded = TypeVar("Loaded")


def load_checkpoint(path: Path, allocator: str, build: Callable[[dict[str, Any]], Loaded]) -> Loaded:
    """``build`` applied to the dictionary saved at ``path``; a file that
    torch cannot read safely, or whose contents ``build`` rejects, is a
    `ResultsError` naming the file and the allocator it was meant for."""
    fix = f"pass one written by `dcbench train --allocator {allocator}`"
    try:
        saved = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # torch's own message suggests weights_only=False, which we never do
        raise ResultsError(f"{path} cannot be read by torch.load(weights_only=True) "
                           f"({type(exc).__name__}); {fix}") from exc
    try:
        return build(saved)
    except Exception as exc:
        raise ResultsError(f"{path} is not a checkpoint of {allocator} ({describe(exc)}); {fix}") from exc
