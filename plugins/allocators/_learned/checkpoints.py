"""The learned allocators' checkpoints: weights and a JSON configuration
saved with ``torch.save`` and loaded with ``weights_only=True`` (no pickled
code), beside them a provenance record in strict JSON and the training
curve (Parquet and plotted), the four replaced together; and a one-line
error for any file that is not a checkpoint.

A checkpoint is bounded before anything in it is built: the file is a zip
archive of uncompressed entries (as ``torch.save`` writes) within
`MAX_CHECKPOINT_BYTES`, and `check_config` and `check_weight_shapes` let
an allocator refuse a configuration beyond its limits, or weights that are
not the configuration's, before any module or tensor is made from them.

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
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from dcbench import Range, ResultsError, describe
from dcbench.harness import curve_columns, write_all_atomic, write_atomic

Loaded = TypeVar("Loaded")

# The largest checkpoint file, and what its entries may hold in all: the largest network either allocator's
# limits allow is about 190 MB of weights (a2c_multistep, 2,048 ToRs, 16 layers of 1,024); the shipped ones
# are at most 0.7 MB. A training state also holds the optimiser's two moments per weight: three times as much.
MAX_CHECKPOINT_BYTES = 256 * 2**20
MAX_TRAINING_STATE_BYTES = 3 * MAX_CHECKPOINT_BYTES
# A configuration value's limits: the integers of a `Range`, or one of a tuple of choices.
ConfigLimits = Mapping[str, "Range | tuple[Any, ...]"]


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
        saved = _load(path, MAX_CHECKPOINT_BYTES)
    except Exception as exc:  # torch's own message suggests weights_only=False, which we never do
        reason = str(exc) if isinstance(exc, NoArchive) else type(exc).__name__
        raise ResultsError(f"{path} cannot be read by torch.load(weights_only=True) ({reason}); {fix}") from exc
    if not isinstance(saved, dict):  # (indexing a tensor with "config" would make torch warn, then fail)
        raise ResultsError(f"{path} is not a checkpoint of {allocator} (it holds a {type(saved).__name__}, "
                           f"not a dictionary); {fix}")
    weights = saved.get("model")
    if isinstance(weights, dict) and not all(torch.isfinite(tensor).all() for tensor in weights.values()
                                             if isinstance(tensor, torch.Tensor) and tensor.is_floating_point()):
        raise ResultsError(f"{path} holds NaN or infinite weights (a training run that diverged); {fix}")
    try:
        return build(saved)
    except ResultsError:  # `check_config`'s and `check_weight_shapes`' own words
        raise
    except Exception as exc:
        raise ResultsError(f"{path} is not a checkpoint of {allocator} ({describe(exc)}); {fix}") from exc


def check_config(path: Path, allocator: str, config: Any, limits: ConfigLimits,
                 required: Collection[str] = ()) -> dict[str, Any]:
    """A checkpoint's model configuration, refused in one line naming the
    file, the value and its limit unless it is a dictionary of the keys of
    ``limits`` (``required`` ones at least), each an integer within its
    `Range` or one of its tuple of choices: checked before anything is
    built from it (``hidden: 12000`` would take gigabytes, ``layers:
    10000000`` minutes, before the weights were found not to fit)."""
    fix = f"pass one written by `dcbench train --allocator {allocator}`"
    if not isinstance(config, dict):
        raise ResultsError(f"{path}: its configuration is a {type(config).__name__}, not a dictionary; {fix}")
    for key in [*config, *required]:
        if key not in limits:
            raise ResultsError(f"{path}: its configuration has {key!r}, which no {allocator} checkpoint has; {fix}")
        if key not in config:
            raise ResultsError(f"{path}: its configuration has no {key!r}, which every {allocator} checkpoint "
                               f"has; {fix}")
        limit, value = limits[key], config[key]
        if isinstance(limit, Range):
            problem = "an integer" if type(value) is not int else limit.violation(value)
        else:
            problem = None if value in limit and type(value) is type(limit[0]) else \
                f"one of {', '.join(repr(choice) for choice in limit)}"
        if problem:
            raise ResultsError(f"{path}: its configuration says {key}={value!r}, which must be {problem} in a "
                               f"checkpoint of {allocator}; {fix}")
    return config


def check_weight_shapes(path: Path, allocator: str, weights: Any, shapes: Mapping[str, tuple[int, ...]]) -> None:
    """Refuse, before a module is built, weights that are not exactly the
    ``shapes`` their configuration makes (a name missing, one more, another
    shape), in one line naming the file and the first difference: the model
    built is then no larger than the weights already read."""
    fix = f"pass one written by `dcbench train --allocator {allocator}`"
    if not isinstance(weights, dict) or not all(isinstance(tensor, torch.Tensor) for tensor in weights.values()):
        raise ResultsError(f"{path}: its weights are no dictionary of tensors; {fix}")
    for name, shape in shapes.items():
        if name not in weights:
            raise ResultsError(f"{path}: its weights lack {name}, which its configuration makes; {fix}")
        if tuple(weights[name].shape) != shape:
            raise ResultsError(f"{path}: its weight {name} is {_shape(weights[name].shape)}, its configuration "
                               f"makes it {_shape(shape)}; {fix}")
    extra = [name for name in weights if name not in shapes]
    if extra:
        raise ResultsError(f"{path}: its weights hold {extra[0]}, which its configuration does not make; {fix}")


def _shape(shape: Collection[int]) -> str:
    return "×".join(str(size) for size in shape) or "a scalar"


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


class NoArchive(ValueError):
    """A file that is not what ``torch.save`` writes, said before torch reads it."""


def _load(path: Path, limit: int) -> Any:
    """What ``torch.save`` wrote at ``path``, once `archive_problem` finds none."""
    problem = archive_problem(path, limit)
    if problem is not None:
        raise NoArchive(problem)
    # A file that is not a weights-only checkpoint makes torch warn before it raises; the error says it all.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(path, weights_only=True, map_location="cpu")


def archive_problem(path: Path, limit: int) -> str | None:
    """Why ``path`` is no archive torch may read without reading more than
    ``limit`` bytes: ``torch.save`` writes a zip archive of uncompressed
    entries, whose sizes its directory says before any is read (a compressed
    entry could expand a thousandfold; the older format, which no torch
    since 1.6 writes, says no sizes first)."""
    size = path.stat().st_size
    if size > limit:
        return f"it is {size:,} bytes, more than the {limit:,} it may be"
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError):
        return "it is not the zip archive torch.save writes"
    if any(entry.compress_type != zipfile.ZIP_STORED for entry in entries):
        return "its entries are compressed, which torch.save's never are"
    held = sum(entry.file_size for entry in entries)
    if held > limit:
        return f"its entries hold {held:,} bytes, more than the {limit:,} it may"
    return None


def save_training_state(state_dir: Path, state: dict[str, Any], curve: list[dict[str, Any]],
                        identity: dict[str, Any]) -> None:
    """A trainer's state (weights, optimiser, counters, random generators;
    tensors, numbers and strings only) and its training curve so far,
    replaced together or not at all (a kill between the two would leave a
    curve a row behind the state it resumes with). ``identity`` is what a
    resumed run must share with this one (the resolved topology and
    workload, the seed, ...)."""
    # The state last: a kill between the two renames leaves a state behind its curve, never ahead of it
    # (where a row would be lost), and `resume_training_state` reads the curve up to the state's rows.
    contents = {**state, "identity": json.dumps(identity, sort_keys=True), "curve_rows": len(curve)}
    write_all_atomic([(state_dir / "curve.parquet", _curve_writer(curve)),
                      (state_dir / "state.pt", _checkpoint_writer(contents))])


def resume_training_state(state_dir: Path, restore: Callable[[dict[str, Any]], None],
                          identity: dict[str, Any], needed_columns: Collection[str]) -> list[dict[str, Any]] | None:
    """``restore`` applied to the state saved in ``state_dir``; the curve
    saved with it, or None when there is no state to resume. A state saved
    with another ``identity`` (another topology, say), or one that cannot be
    read or restored, is a one-line `ResultsError` (``restore``'s own
    `ResultsError`, a mismatched configuration say, passes unchanged), and
    so is a curve that lacks the numeric ``needed_columns`` the trainer
    reads: refused before training, not when exporting hours later.
    States saved before identities were recorded are not checked.

    A curve ahead of its state (a write killed between the two renames,
    which `dcbench train` finishes before it resumes) is read up to the
    state's rows: the rows after them are made again as the run goes on."""
    path = state_dir / "state.pt"
    if not path.exists():
        return None
    try:
        state = _load(path, MAX_TRAINING_STATE_BYTES)
    except Exception as exc:  # (not torch's message: it suggests weights_only=False)
        reason = str(exc) if isinstance(exc, NoArchive) else type(exc).__name__
        raise ResultsError(f"cannot resume from {path}: torch.load(weights_only=True) cannot read it "
                           f"({reason}); delete {state_dir} to start over") from exc
    try:
        saved = json.loads(state.pop("identity", "null"))
        if saved is not None:
            check_identity(path, state_dir, saved, identity)
        curve = read_training_curve(state_dir / "curve.parquet", state_dir, needed_columns)
        rows = state.pop("curve_rows", None)  # (states saved before it was recorded: the curve as it is)
        if rows is not None:
            curve = _curve_of_state(curve, rows, state_dir)
        restore(state)
        return curve
    except ResultsError:
        raise
    except Exception as exc:
        raise ResultsError(f"cannot resume from {path} ({describe(exc)}); delete {state_dir} to start over") from exc


def _curve_of_state(curve: list[dict[str, Any]], rows: int, state_dir: Path) -> list[dict[str, Any]]:
    if len(curve) < rows:
        raise _not_a_curve(state_dir / "curve.parquet", state_dir,
                           f"{len(curve)} row(s) where its state has {rows}")
    return curve[:rows]


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
        # From memory, on this thread: no Arrow thread pool to stop at exit (apache/arrow#34314).
        table = pq.ParquetFile(pa.BufferReader(path.read_bytes())).read(use_threads=False)
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
        if key == "quick":  # (states of trainings without it record no such key)
            raise ResultsError(f"{path} was saved by a training {'with' if saved.get(key) else 'without'} --quick; "
                               f"train {'with' if saved.get(key) else 'without'} it as that one did, give another "
                               f"--out, or remove {state_dir} to start over")
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
