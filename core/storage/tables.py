"""Parquet tables with provenance in their metadata: a run's three in ``DIR/<run_id>/``, written whole or not at all;
a table read is checked from its footer on, so that a damaged or hostile file is refused before it is decompressed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from dcbench.errors import ResultsError, describe
from dcbench.storage.files import remove_staging, staging_folder, swapped_in, write_atomic
from dcbench.storage.paths import _cannot_write
from dcbench.storage.records import UnreadableJSON, parse_json

TABLES = ("requests", "timeline", "summary")
METADATA_KEY = b"dcbench"


def _column(values: Any) -> Any:
    import pyarrow as pa

    array = np.asarray(values)
    if array.dtype == object:
        return pa.array([None if v is None else str(v) for v in array], type=pa.string())
    return pa.array(array)


def to_arrow(columns: Mapping[str, Any], provenance: Mapping[str, Any]) -> Any:
    import pyarrow as pa

    table = pa.table({name: _column(values) for name, values in columns.items()})
    metadata = {METADATA_KEY: json.dumps(provenance, sort_keys=True).encode()}
    return table.replace_schema_metadata(metadata)


def write_run(out_dir: Path, run_id: str, tables: Mapping[str, Mapping[str, Any]],
              provenance: Mapping[str, Any]) -> Path:
    import pyarrow.parquet as pq

    target = out_dir / run_id
    if target.is_symlink() or (target.exists() and not _replaceable_run_folder(target)):
        raise ResultsError(f"'{target}' is there and is no run folder; move it, or give another --out")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        remove_staging(out_dir, [run_id])  # what a killed write of this run left
        staging = staging_folder(target)
    except OSError as exc:
        raise _cannot_write("results", out_dir, exc) from None
    try:
        for name in TABLES:
            pq.write_table(to_arrow(tables[name], provenance), staging / f"{name}.parquet")
        with swapped_in(staging, target):  # a rerun of the same run id replaces the old folder
            pass
    except BaseException as exc:  # Ctrl-C too (test_a_failed_or_stopped_write_leaves_nothing_behind)
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise ResultsError(f"cannot write results to '{target}': {exc.strerror or exc}") from None
        raise
    return target


def _replaceable_run_folder(folder: Path) -> bool:
    return folder.is_dir() and (not any(folder.iterdir())
                                or any((folder / f"{name}.parquet").is_file() for name in TABLES))


def curve_columns(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    """A training curve's rows as columns: every key any row has, NaN where a row lacks it.

    Args:
        rows: The curve's rows, each a mapping of name to value.
    Returns:
        Each key, in the order the rows first have it, with its column; ``{"steps": []}`` where there are no rows."""
    keys = list(dict.fromkeys(key for row in rows for key in row)) if rows else ["steps"]
    return {key: [row.get(key, float("nan")) for row in rows] for key in keys}


def write_table_atomic(path: Path, columns: Any, provenance: Mapping[str, Any] | None = None) -> None:
    """Write one Parquet file atomically (`write_atomic`).

    Args:
        path: The file to write.
        columns: A mapping of column name to values (Python objects written as strings), or a pyarrow Table.
        provenance: For a mapping, written as JSON into the file's metadata under the ``dcbench`` key (None: ``{}``).
    Raises:
        ResultsError: As `write_atomic`.
        OSError: As `write_atomic`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = columns if isinstance(columns, pa.Table) else to_arrow(columns, provenance or {})
    write_atomic(path, lambda temporary: pq.write_table(table, temporary))


# What a results table may be, checked in its footer before its data is read: far beyond any sweep (the largest
# committed summary has 300 rows of 47 columns), far below what takes a machine's memory (a table is read whole).
MAX_TABLE_ROWS = 1_000_000
MAX_TABLE_COLUMNS = 1_000
MAX_TABLE_BYTES = 256 * 2**20  # of the file, and of its data decompressed as the footer declares it


def read_table(path: Path) -> Any:
    """Read one Parquet table (`table_at`), or say in one line why it cannot be read."""
    if not path.exists():
        raise ResultsError(f"missing results file '{path}'; rerun the run that writes it")
    try:
        return table_at(path)
    except UnreadableTable as exc:
        if exc.corrupt:
            raise ResultsError(f"corrupt results file '{path}' ({exc}); delete it and rerun") from None
        raise ResultsError(f"'{path}' {exc}; remove it and rerun") from None


class UnreadableTable(Exception):
    """Why a Parquet file is no table to read, said of the file, or, where ``corrupt``, what Arrow said of it."""

    def __init__(self, problem: str, corrupt: bool = False) -> None:
        super().__init__(problem)
        self.corrupt = corrupt


def table_at(path: Path) -> Any:
    """The table in the Parquet file at ``path``, checked from its footer on before anything is decoded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with _regular_file(path) as file:
        # Read from memory, on this thread: Arrow's thread pools, once a read from a Python file starts them, can
        # abort or hang the interpreter at exit (apache/arrow#34314, #50482).
        contents = file.read()
    try:
        parquet = pq.ParquetFile(pa.BufferReader(contents))  # its footer only
    except Exception as exc:
        raise UnreadableTable(describe(exc), corrupt=True) from None
    with parquet:
        problem = footer_problem(parquet)
        if problem is not None:
            raise UnreadableTable(problem)
        schema = parquet.schema_arrow
    texts = [field.name for field in schema if _is_text(field.type)]
    try:
        with pq.ParquetFile(pa.BufferReader(contents), read_dictionary=texts) as parquet:
            table = parquet.read(use_threads=False)
    except Exception as exc:
        raise UnreadableTable(describe(exc), corrupt=True) from None
    try:
        problem = decoded_problem(table, schema)
        if problem is None:
            return pa.Table.from_arrays([table.column(i).cast(field.type) for i, field in enumerate(schema)],
                                        schema=schema)
    except Exception as exc:  # (an index beyond its dictionary, say)
        raise UnreadableTable(describe(exc), corrupt=True) from None
    raise UnreadableTable(problem)


@contextlib.contextmanager
def _regular_file(path: Path) -> Iterator[Any]:
    """``path`` opened for reading, if it is a regular file of at most `MAX_TABLE_BYTES`."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UnreadableTable(f"cannot be opened ({exc.strerror or describe(exc)})") from None
    status = os.fstat(descriptor)
    problem = ("is not a file but a folder, a device or a pipe" if not stat.S_ISREG(status.st_mode) else
               f"is {status.st_size:,} bytes, more than the {MAX_TABLE_BYTES:,} a results table may be"
               if status.st_size > MAX_TABLE_BYTES else None)
    if problem is not None:
        os.close(descriptor)
        raise UnreadableTable(problem)
    with open(descriptor, "rb") as file:
        yield file


def footer_problem(parquet: Any) -> str | None:
    """What a Parquet file's footer declares beyond what a results table may be, or None."""
    metadata = parquet.metadata
    if metadata.num_rows > MAX_TABLE_ROWS:
        return f"has {metadata.num_rows:,} rows, more than the {MAX_TABLE_ROWS:,} a results table may have"
    if metadata.num_columns > MAX_TABLE_COLUMNS:
        return (f"has {metadata.num_columns:,} columns, more than the {MAX_TABLE_COLUMNS:,} a results table may "
                "have")
    size = sum(metadata.row_group(group).column(column).total_uncompressed_size
               for group in range(metadata.num_row_groups) for column in range(metadata.num_columns))
    if size > MAX_TABLE_BYTES:
        return f"holds {size:,} bytes of data, more than the {MAX_TABLE_BYTES:,} a results table may hold"
    schema = parquet.schema_arrow
    strange = next((field for field in schema if not _is_plain(field.type)), None)
    if strange is not None:
        return (f"has a column {strange.name!r} of type {strange.type}, which no table dcbench writes has (only "
                "numbers, booleans and text)")
    twice = [name for name, count in Counter(schema.names).items() if count > 1]
    if twice:
        return f"has two columns named {twice[0]!r}, which no table dcbench writes has"
    # Every column's fixed part as read, which a small file's runs of repeated values may declare far beyond its data.
    fixed = metadata.num_rows * sum(_fixed_width(field.type) for field in schema)
    if fixed > MAX_TABLE_BYTES:
        return (f"has {metadata.num_rows:,} rows of {metadata.num_columns:,} columns, {fixed:,} bytes once read, "
                f"more than the {MAX_TABLE_BYTES:,} a results table may hold")
    return None


def _is_plain(kind: Any) -> bool:
    """Whether dcbench writes columns of type ``kind``: numbers, booleans, text and null."""
    import pyarrow as pa

    return (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
            or pa.types.is_null(kind) or _is_text(kind))


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind))


def _fixed_width(kind: Any) -> float:
    """Bytes a row of a column of the `_is_plain` type ``kind`` takes, but a text's characters."""
    import pyarrow as pa

    if pa.types.is_null(kind):
        return 0
    if pa.types.is_boolean(kind):
        return 1 / 8
    if _is_text(kind):
        return 8 if pa.types.is_large_string(kind) or pa.types.is_large_binary(kind) else 4  # its offset
    return kind.bit_width // 8


def decoded_problem(table: Any, schema: Any) -> str | None:
    """Where ``table``, its text columns read as dictionaries, would decode to more than `MAX_TABLE_BYTES`."""
    fixed = table.num_rows * sum(_fixed_width(field.type) for field in schema)
    texts = {field.name: _characters(table.column(field.name)) for field in schema if _is_text(field.type)}
    size = fixed + sum(texts.values())
    if size <= MAX_TABLE_BYTES:
        return None
    largest = max(texts, key=texts.__getitem__)
    return (f"decodes to {int(size):,} bytes, more than the {MAX_TABLE_BYTES:,} a results table may hold (its "
            f"column {largest!r} alone to {texts[largest]:,})")


def _characters(column: Any) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for chunk in column.chunks:
        if not pa.types.is_dictionary(chunk.type):  # (read as it is: already decoded)
            total += pc.sum(pc.binary_length(chunk)).as_py() or 0
            continue
        lengths = pc.fill_null(pc.binary_length(chunk.dictionary), 0).to_numpy().astype(np.int64)
        indices = pc.drop_null(chunk.indices).to_numpy().astype(np.int64)
        if indices.size and not 0 <= indices.min() <= indices.max() < len(lengths):
            raise ValueError("a text column's index is beyond its dictionary")
        total += int(np.bincount(indices, minlength=len(lengths)) @ lengths)
    return total


NO_PROVENANCE = "it has no dcbench provenance"


def _read_provenance(table: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The provenance dcbench wrote into ``table``, or None and why not."""
    metadata = table.schema.metadata or {}
    if METADATA_KEY not in metadata:
        return None, NO_PROVENANCE
    try:
        provenance = parse_json(metadata[METADATA_KEY])
    except UnreadableJSON as exc:  # too long or too deep
        return None, f"its dcbench provenance is {exc}"
    except ValueError:  # not UTF-8 or not JSON
        return None, "its dcbench provenance is not JSON"
    if not isinstance(provenance, dict):
        return None, f"its dcbench provenance is a JSON {type(provenance).__name__}, not an object"
    return provenance, None


def provenance_of(table: Any, path: Path | None = None) -> dict[str, Any]:
    """The provenance dcbench wrote into ``table``; a one-line error naming ``path`` where it is missing or damaged."""
    provenance, problem = _read_provenance(table)
    if provenance is None:
        where = f"'{path}'" if path is not None else "results file"
        if problem == NO_PROVENANCE:
            raise ResultsError(f"{where} has no dcbench provenance; was it written by dcbench?")
        raise ResultsError(f"{where} is damaged ({problem}); delete it and rerun")
    return provenance
