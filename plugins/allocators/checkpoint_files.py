"""The learned allocators' checkpoints: weights and a JSON configuration
saved with ``torch.save`` and loaded with ``weights_only=True`` (no pickled
code), a provenance record beside them in strict JSON, both written
atomically; and a one-line error for any file that is not a checkpoint."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, TypeVar

import torch

from dcbench import ResultsError, describe, write_text_atomic

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


def save_checkpoint(path: Path, contents: dict[str, Any]) -> None:
    """``torch.save`` into a temporary file renamed into place: an interrupted
    export leaves the previous checkpoint whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    torch.save(contents, temporary)
    temporary.replace(path)


def write_record(path: Path, record: dict[str, Any]) -> None:
    """The provenance record as strict JSON (a value that was not measured,
    NaN, is written as null, which every JSON reader accepts), atomically."""
    write_text_atomic(path, json.dumps(_finite(record), indent=2, sort_keys=True, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
