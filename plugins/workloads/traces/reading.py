"""Reading a canonical trace file (`schema`): its size and header checked before its rows, its rows streamed, every
cell checked, the first bad one named by row; and its digest."""

from __future__ import annotations

import csv
import hashlib
import os
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from dcbench.plugins.workloads.traces.schema import (
    COLUMNS,
    MAX_HEADER_BYTES,
    MAX_TRACE_BYTES,
    MAX_TRACE_ROWS,
    MAX_VMS,
    OPTIONAL_RESOURCES,
    REQUIRED,
    MissingTrace,
    TraceError,
)

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
CSV_BLOCK_BYTES = 1 << 20  # what one streamed CSV batch parses: the memory a read needs beyond its numbers


@dataclass(frozen=True)
class Trace:
    """A trace's requests, checked, as float64 arrays of its rows.

    Attributes:
        arrival: Seconds, non-decreasing.
        duration: Seconds, positive.
        resources: ``cpu``, ``mem`` and those of disk and gpu the file has, non-negative, not all zero in a row.
        vms: Each request's VM count, where the file has the column (None: not given).
        gbps: Each request's rate per communicating VM pair, where the file has the column (None: not given)."""

    arrival: np.ndarray
    duration: np.ndarray
    resources: dict[str, np.ndarray]
    vms: np.ndarray | None = None
    gbps: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.arrival)


def trace_file(path: Path) -> os.stat_result:
    """The status of the trace file at ``path``, once it is known to be a regular file of a known format, not empty
    and within `MAX_TRACE_BYTES`; a `TraceError` otherwise (`MissingTrace` where there is none)."""
    if path.suffix.lower() not in FORMATS:
        raise TraceError(f"trace '{path}' is neither .csv nor .parquet; write the trace as one of them "
                         "(`dcbench data convert` writes .csv)")
    return regular_file(path, "trace", "give a trace with a header and a row per request", MAX_TRACE_BYTES,
                        "convert a window of it (`dcbench data convert --from --to`)")


def regular_file(path: Path, kind: str, fix: str, limit: int, smaller: str) -> os.stat_result:
    """The status of ``path``, a regular file that is not empty and at most ``limit`` bytes.

    Args:
        path: The file.
        kind: What the errors call it ("trace", "source").
        fix: What the errors of a missing, empty or irregular file say to do.
        limit: Its most bytes.
        smaller: What the error of a larger file says to do.
    Returns:
        Its status.
    Raises:
        TraceError: It is none of those (`MissingTrace` where there is nothing)."""
    try:
        status = path.stat()
    except FileNotFoundError:
        raise MissingTrace(f"no {kind} file '{path}'; {fix}") from None
    except OSError as exc:
        raise TraceError(f"{kind} '{path}' cannot be read ({exc.strerror or exc}); {fix}") from None
    if not stat.S_ISREG(status.st_mode):
        raise TraceError(f"{kind} '{path}' is not a file but a folder, a device or a pipe; {fix}")
    if status.st_size == 0:
        raise TraceError(f"{kind} '{path}' is empty; {fix}")
    if status.st_size > limit:
        raise TraceError(f"{kind} '{path}' is {status.st_size:,} bytes, more than the {limit:,} a {kind} may be; "
                         f"{smaller}")
    return status


def file_sha256(path: Path) -> str:
    """The sha256 of the trace file at ``path`` (checked as `trace_file` checks it), computed once per version of it.

    Args:
        path: The trace file.
    Returns:
        64 hex digits.
    Raises:
        TraceError: As `trace_file`."""
    status = trace_file(path)
    return _sha256(str(path.resolve()), status.st_size, status.st_mtime_ns, status.st_ino)


@lru_cache(maxsize=16)
def _sha256(path: str, size: int, mtime_ns: int, inode: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_trace(path: Path) -> Trace:
    """The requests of the trace file at ``path``, read once per version of it.

    Args:
        path: A .csv or .parquet file with the canonical columns (`schema`).
    Returns:
        Its requests, checked.
    Raises:
        TraceError: The file is missing, too large, of another format, or a row breaks the schema: one line naming the
            row and the problem."""
    status = trace_file(path)
    return _read(str(path), status.st_size, status.st_mtime_ns, status.st_ino)


@lru_cache(maxsize=4)
def _read(path: str, size: int, mtime_ns: int, inode: int) -> Trace:
    file = Path(path)
    columns = _read_csv(file) if FORMATS[file.suffix.lower()] == "csv" else _read_parquet(file)
    return checked_trace(columns, f"trace '{path}'")


def _present(names: list[str], where: str) -> list[str]:
    """The canonical columns among ``names``, once the required ones are known to be there."""
    twice = sorted({name for name in names if names.count(name) > 1 and name in COLUMNS})
    if twice:
        raise TraceError(f"{where} has two columns named {twice[0]!r}")
    missing = [name for name in REQUIRED if name not in names]
    if "duration" not in names and "departure" not in names:
        missing.append("duration (or departure)")
    if missing:
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise TraceError(f"{where} has no column {', '.join(missing)} (its columns: {shown or 'none'}); "
                         f"a trace's columns are {', '.join(COLUMNS)}")
    return [name for name in COLUMNS if name in names]


def _read_csv(path: Path) -> dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    where = f"trace '{path}'"
    with open(path, "rb") as file:
        start = file.read(MAX_HEADER_BYTES)
    header, newline, rest = start.partition(b"\n")
    if not newline and len(start) == MAX_HEADER_BYTES:
        raise TraceError(f"{where} has a header line longer than {MAX_HEADER_BYTES:,} bytes; is it a CSV file?")
    try:
        names = next(csv.reader([header.decode("utf-8-sig").rstrip("\r")]), [])
    except (UnicodeDecodeError, csv.Error):
        raise TraceError(f"{where} has a header that is not a line of UTF-8 CSV; is it a CSV file?") from None
    names = [name.strip() for name in names]
    present = _present(names, where)
    if not rest.strip():
        raise TraceError(f"{where} has a header but no rows")
    bad_rows: list[Any] = []

    def refuse(row: Any) -> str:
        bad_rows.append(row)
        return "error"

    reader_options = pacsv.ReadOptions(use_threads=False, block_size=CSV_BLOCK_BYTES, column_names=names,
                                       skip_rows=1)
    convert = pacsv.ConvertOptions(include_columns=present, column_types={name: pa.string() for name in present},
                                   strings_can_be_null=True, null_values=[""])
    parts: dict[str, list[np.ndarray]] = {name: [] for name in present}
    done = 0
    try:
        with pacsv.open_csv(path, read_options=reader_options, convert_options=convert,
                            parse_options=pacsv.ParseOptions(invalid_row_handler=refuse)) as reader:
            for batch in reader:
                if done + batch.num_rows > MAX_TRACE_ROWS:
                    raise TraceError(f"{where} has more than {MAX_TRACE_ROWS:,} rows, the most a trace may have; "
                                     "convert a window of it (`dcbench data convert --from --to`)")
                for name in present:
                    parts[name].append(cell_numbers(batch.column(name), name, done, where))
                done += batch.num_rows
    except pa.ArrowInvalid as exc:
        if bad_rows:
            row = bad_rows[0]
            raise TraceError(f"{where} row {_row_of_line(path, row.text)}: {row.actual_columns} cells where the "
                             f"header has {row.expected_columns}") from None
        raise TraceError(f"{where} is not CSV that can be read ({str(exc).splitlines()[0]})") from None
    except UnicodeDecodeError:
        raise TraceError(f"{where} is not UTF-8 text") from None
    return {name: np.concatenate(chunks) if chunks else np.zeros(0) for name, chunks in parts.items()}


def _row_of_line(path: Path, text: str) -> str:
    """The row number of the first line of ``path`` that reads ``text`` (found again: the CSV reader does not say)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as file:
        next(file, None)
        for row, line in enumerate(file, start=1):
            if line.rstrip("\r\n") == text:
                return f"{row:,}"
    return "?"


def cell_numbers(column: Any, name: str, before: int, where: str, empty: bool = False) -> np.ndarray:
    """A pyarrow column of cells (text or numbers) as float64.

    Args:
        column: The cells.
        name: The column's name, for the error.
        before: The rows before these, for the error's row number.
        where: What the error calls the file ("trace 'x.csv'").
        empty: Whether an empty cell is NaN (else an error).
    Returns:
        The numbers.
    Raises:
        TraceError: The first empty cell (unless ``empty``) or non-numeric one, named by its row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if empty:
        column = pc.if_else(pc.is_null(column), pa.scalar("nan"), column) if _is_text(column) else column
    elif column.null_count:
        row = before + int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0]) + 1
        raise TraceError(f"{where} row {row:,}: its {name} is empty")
    if _is_text(column):
        trimmed = pc.utf8_trim_whitespace(column)
        try:
            column = pc.cast(trimmed, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            for index, cell in enumerate(trimmed.to_pylist()):
                try:
                    float(cell)
                except ValueError:
                    raise TraceError(f"{where} row {before + index + 1:,}: its {name} is {cell[:40]!r}, not a "
                                     "number") from None
            raise TraceError(f"{where}: its column {name} holds something that is not a number") from None
    return column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def _is_text(column: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(column.type) or pa.types.is_large_string(column.type)


def _read_parquet(path: Path) -> dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = f"trace '{path}'"
    try:
        parquet = pq.ParquetFile(str(path))
    except Exception as exc:  # not Parquet, or a damaged footer
        raise TraceError(f"{where} is not a Parquet file that can be read ({str(exc).splitlines()[0]})") from None
    with parquet:
        metadata = parquet.metadata
        present = _present(parquet.schema_arrow.names, where)
        if metadata.num_rows == 0:
            raise TraceError(f"{where} has no rows")
        if metadata.num_rows > MAX_TRACE_ROWS:
            raise TraceError(f"{where} has {metadata.num_rows:,} rows, more than the {MAX_TRACE_ROWS:,} a trace may "
                             "have; convert a window of it (`dcbench data convert --from --to`)")
        schema = parquet.schema_arrow
        for name in present:
            kind = schema.field(name).type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
                raise TraceError(f"{where} has a column {name!r} of type {kind}; a trace's columns are numbers")
        wanted = {schema.get_field_index(name) for name in present}
        stored = sum(metadata.row_group(group).column(column).total_uncompressed_size
                     for group in range(metadata.num_row_groups) for column in range(metadata.num_columns)
                     if column in wanted)
        if stored > MAX_TRACE_BYTES:
            raise TraceError(f"{where} holds {stored:,} bytes of data, more than the {MAX_TRACE_BYTES:,} a trace "
                             "may hold")
        try:
            table = parquet.read(columns=present, use_threads=False)
        except Exception as exc:
            raise TraceError(f"{where} is damaged ({str(exc).splitlines()[0]})") from None
    return {name: cell_numbers(table.column(name).combine_chunks(), name, 0, where) for name in present}


def checked_trace(columns: dict[str, np.ndarray], where: str) -> Trace:
    """``columns`` (canonical names to float64 arrays of equal length) checked against the schema.

    Args:
        columns: The columns read; ``duration`` is taken where there are both it and ``departure``.
        where: What the errors call the file ("trace 'x.csv'").
    Returns:
        The trace.
    Raises:
        TraceError: The first row that breaks the schema, named with its problem."""
    arrival = columns["arrival"]
    _finite(arrival, "arrival", where)
    late = np.flatnonzero(arrival[1:] < arrival[:-1])
    if len(late):
        row = int(late[0]) + 2
        raise TraceError(f"{where} row {row:,}: its arrival {arrival[row - 1]:g} is before row {row - 1:,}'s "
                         f"{arrival[row - 2]:g}; sort the rows by arrival")
    if "duration" in columns:
        duration = columns["duration"]
        _finite(duration, "duration", where)
        _first(duration <= 0, where, lambda row: f"its duration {duration[row]:g} is not positive")
    else:
        departure = columns["departure"]
        _finite(departure, "departure", where)
        duration = departure - arrival
        _first(duration <= 0, where,
               lambda row: f"its departure {departure[row]:g} is not after its arrival {arrival[row]:g}")
    resources = {name: columns[name] for name in ("cpu", "mem", *OPTIONAL_RESOURCES) if name in columns}
    for name, values in resources.items():
        _finite(values, name, where)
        _first(values < 0, where, lambda row: f"its {name} is {values[row]:g}; a demand is not negative")
    _first(sum(resources.values()) == 0, where, lambda row: "it asks for no CPU, memory, disk or GPU")
    vms = columns.get("vms")
    if vms is not None:
        _finite(vms, "vms", where)
        _first((vms < 1) | (vms > MAX_VMS) | (vms != np.floor(vms)), where,
               lambda row: f"its vms is {vms[row]:g}, not a whole number from 1 to {MAX_VMS:,}")
    gbps = columns.get("gbps")
    if gbps is not None:
        _finite(gbps, "gbps", where)
        _first(gbps < 0, where, lambda row: f"its gbps is {gbps[row]:g}; a rate is not negative")
    return Trace(arrival, duration, resources, vms, gbps)


def _finite(values: np.ndarray, name: str, where: str) -> None:
    _first(~np.isfinite(values), where, lambda row: f"its {name} is {values[row]}, not a finite number")


def _first(bad: np.ndarray, where: str, problem: Any) -> None:
    """A `TraceError` for the first row where ``bad``, said by ``problem(index)``."""
    rows = np.flatnonzero(bad)
    if len(rows):
        raise TraceError(f"{where} row {int(rows[0]) + 1:,}: {problem(int(rows[0]))}")
