"""The learned allocators' checkpoints: weights and a JSON configuration
saved with ``torch.save`` and loaded with ``weights_only=True`` (no pickled
code), beside them a provenance record in strict JSON and the training
curve (Parquet and plotted), the four replaced together; and a one-line
error for any file that is not a checkpoint.
Also a trainer's resumable state (``OUT.train/``), saved and restored the
same way."""

from __future__ import annotations

import hashlib
import io
import json
import math
import shlex
import sys
import warnings
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Collection, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from dcbench import ResultsError, curve_columns, describe, write_all_atomic, write_atomic

Loaded = TypeVar("Loaded")


def shipped_checkpoints(package: str) -> dict[str, Path]:
    """The ``.pt`` files in ``package``'s ``checkpoints/`` folder, by name without the suffix."""
    folder = resources.files(package) / "checkpoints"
    return {p.name[: -len(".pt")]: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".pt")}


def checked_checkpoint(checkpoint: str | None) -> str | None:
    """A ``checkpoint=PATH`` allocator parameter, refused (as a spec error) if it names no file."""
    if checkpoint is not None and not Path(checkpoint).is_file():
        raise ValueError(f"checkpoint={checkpoint!r} is not a file")
    return checkpoint


def content_fingerprint(path: Path, salt: bytes = b"") -> str:
    """A learned allocator's `fingerprint`: its checkpoint's bytes (after
    ``salt``, whatever else decides its decisions), so retrained weights make
    new runs, never a stale cache hit."""
    return hashlib.sha256(salt + path.read_bytes()).hexdigest()[:16]


def load_checkpoint(path: Path, allocator: str, build: Callable[[dict[str, Any]], Loaded]) -> Loaded:
    """``build`` applied to the dictionary saved at ``path``; a file that
    torch cannot read safely, or whose contents ``build`` rejects, is a
    `ResultsError` naming the file and the allocator it was meant for."""
    fix = f"pass one written by `dcbench train --allocator {allocator}`"
    try:
        saved = _load(path)
    except Exception as exc:  # torch's own message suggests weights_only=False, which we never do
        raise ResultsError(f"{path} cannot be read by torch.load(weights_only=True) "
                           f"({type(exc).__name__}); {fix}") from exc
    if not isinstance(saved, dict):  # (indexing a tensor with "config" would make torch warn, then fail)
        raise ResultsError(f"{path} is not a checkpoint of {allocator} (it holds a {type(saved).__name__}, "
                           f"not a dictionary); {fix}")
    weights = saved.get("model")
    if isinstance(weights, dict) and not all(torch.isfinite(tensor).all() for tensor in weights.values()
                                             if isinstance(tensor, torch.Tensor) and tensor.is_floating_point()):
        raise ResultsError(f"{path} holds NaN or infinite weights (a training run that diverged); {fix}")
    try:
        return build(saved)
    except Exception as exc:
        raise ResultsError(f"{path} is not a checkpoint of {allocator} ({describe(exc)}); {fix}") from exc


def save_checkpoint(path: Path, contents: dict[str, Any]) -> None:
    """``torch.save`` into a temporary file renamed into place: an interrupted
    export leaves the previous checkpoint whole. It is serialised in memory
    first (checkpoints are small) and written by Python, so that a full disk
    is an OSError naming it, not torch's RuntimeError about a zip position."""
    write_atomic(path, _checkpoint_writer(contents))


def _checkpoint_writer(contents: dict[str, Any]) -> Callable[[Path], None]:
    buffer = io.BytesIO()
    torch.save(contents, buffer)
    return lambda temporary: temporary.write_bytes(buffer.getvalue())


def _curve_writer(curve: list[dict[str, Any]]) -> Callable[[Path], None]:
    table = pa.table(curve_columns(curve))
    return lambda temporary: pq.write_table(table, temporary)


def export_checkpoint(out: Path, contents: dict[str, Any], record: dict[str, Any], curve: list[dict[str, Any]],
                      figure: Any | None) -> None:
    """A trained checkpoint at ``out`` and, beside it, its provenance record
    (``.json``), its training curve (``.curve.parquet``) and the curve
    plotted (``.png``, where ``figure`` is not None): each written to a
    temporary file first, then all renamed into place, or none, so that a
    failure (a full disk, say) leaves the previous four together, never a
    new checkpoint beside an old record."""
    record_text = _record_text(record)
    writers = [(out, _checkpoint_writer(contents)),
               (out.with_suffix(".json"),
                lambda temporary: temporary.write_text(record_text, encoding="utf-8", newline="")),
               (out.with_suffix(".curve.parquet"), _curve_writer(curve))]
    if figure is not None:
        writers.append((out.with_suffix(".png"),
                        lambda temporary: figure.savefig(temporary, dpi=100, format="png")))
    write_all_atomic(writers)


def _load(path: Path) -> Any:
    # A file that is not a weights-only checkpoint makes torch warn before it raises; the error says it all.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(path, weights_only=True, map_location="cpu")


def save_training_state(state_dir: Path, state: dict[str, Any], curve: list[dict[str, Any]],
                        identity: dict[str, Any]) -> None:
    """A trainer's state (weights, optimiser, counters, random generators;
    tensors, numbers and strings only) and its training curve so far,
    replaced together or not at all (a kill between the two would leave a
    curve a row behind the state it resumes with). ``identity`` is what a
    resumed run must share with this one (the resolved topology and
    workload, the seed, ...)."""
    write_all_atomic([
        (state_dir / "state.pt", _checkpoint_writer({**state, "identity": json.dumps(identity, sort_keys=True)})),
        (state_dir / "curve.parquet", _curve_writer(curve))])


def resume_training_state(state_dir: Path, restore: Callable[[dict[str, Any]], None],
                          identity: dict[str, Any], needed_columns: Collection[str]) -> list[dict[str, Any]] | None:
    """``restore`` applied to the state saved in ``state_dir``; the curve
    saved with it, or None when there is no state to resume. A state saved
    with another ``identity`` (another topology, say), or one that cannot be
    read or restored, is a one-line `ResultsError` (``restore``'s own
    `ResultsError`, a mismatched configuration say, passes unchanged), and
    so is a curve that lacks the numeric ``needed_columns`` the trainer
    reads: refused before training, not when exporting hours later.
    States saved before identities were recorded are not checked."""
    path = state_dir / "state.pt"
    if not path.exists():
        return None
    try:
        state = _load(path)
    except Exception as exc:  # (not torch's message: it suggests weights_only=False)
        raise ResultsError(f"cannot resume from {path}: torch.load(weights_only=True) cannot read it "
                           f"({type(exc).__name__}); delete {state_dir} to start over") from exc
    try:
        saved = json.loads(state.pop("identity", "null"))
        if saved is not None:
            check_identity(path, state_dir, saved, identity)
        curve = read_training_curve(state_dir / "curve.parquet", state_dir, needed_columns)
        restore(state)
        return curve
    except ResultsError:
        raise
    except Exception as exc:
        raise ResultsError(f"cannot resume from {path} ({describe(exc)}); delete {state_dir} to start over") from exc


def read_training_curve(path: Path, state_dir: Path, columns: Collection[str]) -> list[dict[str, Any]]:
    """The rows of the curve saved with a training state (none where there
    is no file). A file that is not such a curve (a sweep's summary copied
    over it, a file cut short, text where the ``columns``' numbers belong)
    is a one-line `ResultsError` naming it."""
    if not path.exists():
        return []
    if not path.is_file():
        raise _not_a_curve(path, state_dir, "a folder or a device, not a file")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # a file cut short, say: pyarrow's reason
        raise _not_a_curve(path, state_dir, describe(exc)) from exc
    problem = _curve_problem(table, columns)
    if problem is not None:
        raise _not_a_curve(path, state_dir, problem)
    return table.to_pylist()


def _not_a_curve(path: Path, state_dir: Path, problem: str) -> ResultsError:
    return ResultsError(f"cannot resume from {path}: it is not a training curve ({problem}); "
                        f"delete {state_dir} to start over")


def _curve_problem(table: pa.Table, columns: Collection[str]) -> str | None:
    for column in columns:
        if column not in table.column_names:
            return f"no {column!r} column"
        kind = table.schema.field(column).type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            return f"{column!r} holds {kind}, not numbers"
    return None


def check_identity(path: Path, state_dir: Path, saved: dict[str, Any], wanted: dict[str, Any]) -> None:
    """Refuse to resume the state at ``path`` for a run that differs from the saved one; name the first difference."""
    differing = [key for key in sorted(wanted.keys() | saved.keys()) if saved.get(key) != wanted.get(key)]
    if differing:
        key = differing[0]
        raise ResultsError(f"{path} was saved training with {key} {saved.get(key)!r}, not {wanted.get(key)!r}; "
                           f"give another --out, or remove {state_dir} to start over")


def command_line() -> str:
    """The ``dcbench ...`` command that is running, for a checkpoint's record
    (`dcbench train`, or `dcbench phi-sweep` for the sweep's checkpoints)."""
    return " ".join(shlex.quote(a) for a in ["dcbench", *sys.argv[1:]]) if len(sys.argv) > 1 else ""


def _record_text(record: dict[str, Any]) -> str:
    """The provenance record as strict JSON (a value that was not measured,
    NaN, is written as null, which every JSON reader accepts)."""
    return json.dumps(_finite(record), indent=2, sort_keys=True, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
