"""What every converter shares: the kept rows and the count of each filter's drops (`Kept`), the source's checks and
streamed reading, and the canonical CSV written byte for byte the same wherever it is converted."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from dcbench.plugins.workloads.traces.reading import cell_numbers, file_sha256, regular_file
from dcbench.plugins.workloads.traces.schema import MAX_TRACE_ROWS, TraceError

MAX_SOURCE_BYTES = 64 * 2**30  # a source is streamed: this refuses a wrong path, not a large trace
WRITTEN_ROWS = 50_000  # rows formatted at a time while writing


@dataclass(frozen=True)
class Machine:
    """The machine a trace's fractions of a machine are of (the Azure trace's units, the 2018 trace's memory).

    Attributes:
        cores: Its cores.
        mem: Its memory (GiB).
        disk: Its disk (GB)."""

    cores: float = 32.0
    mem: float = 256.0
    disk: float = 3584.0


@dataclass
class Kept:
    """The rows a conversion keeps, batch by batch, and why it dropped the others.

    Attributes:
        source: What errors call the source ("'batch_task.csv'").
        since: Rows arriving before it (seconds of the source's clock) are dropped (None: none).
        until: Rows arriving at or after it are dropped (None: none).
        read: Rows read.
        dropped: Rows dropped, by reason.
        columns: The kept rows' canonical columns, batch by batch.
        names: The kept rows' names, batch by batch."""

    source: str
    since: float | None = None
    until: float | None = None
    read: int = 0
    dropped: Counter = field(default_factory=Counter)
    columns: dict[str, list[np.ndarray]] = field(default_factory=dict)
    names: list[np.ndarray] = field(default_factory=list)

    def drop(self, reason: str, bad: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Drop the rows still kept where ``bad``, counted under ``reason``.

        Args:
            reason: Why, as the summary says it ("never scheduled").
            bad: Booleans, a row each.
            keep: The rows kept so far.
        Returns:
            The rows kept now."""
        dropped = keep & bad
        if dropped.any():
            self.dropped[reason] += int(dropped.sum())
        return keep & ~bad

    def add(self, columns: dict[str, np.ndarray], names: np.ndarray, keep: np.ndarray) -> None:
        """Keep a batch's rows where ``keep`` and inside the window.

        Args:
            columns: The batch's canonical columns (``arrival``, ``duration``, ``cpu``, ``mem``, ...).
            names: Each row's name.
            keep: The rows its filters kept.
        Raises:
            TraceError: More than `MAX_TRACE_ROWS` rows would be kept."""
        self.read += len(keep)
        arrival = columns["arrival"]
        if self.since is not None:
            keep = self.drop("before --from", arrival < self.since, keep)
        if self.until is not None:
            keep = self.drop("from --to on", arrival >= self.until, keep)
        if self.rows + int(keep.sum()) > MAX_TRACE_ROWS:
            raise TraceError(f"{self.source} keeps more than {MAX_TRACE_ROWS:,} requests, the most a trace may have; "
                             "convert a window of it with --from and --to (seconds)")
        for name, values in columns.items():
            self.columns.setdefault(name, []).append(values[keep])
        self.names.append(np.asarray(names, dtype=object)[keep])

    @property
    def rows(self) -> int:
        """Rows kept so far."""
        return sum(len(part) for part in self.columns.get("arrival", []))

    def table(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The kept rows in order of arrival (rows arriving together in the source's order).

        Returns:
            ``(columns, names)``.
        Raises:
            TraceError: No row is kept."""
        if not self.rows:
            reasons = ", ".join(f"{count:,} {reason}" for reason, count in self.dropped.items())
            raise TraceError(f"{self.source} keeps no request (read {self.read:,} rows"
                             + (f"; dropped {reasons}" if reasons else "") + ")")
        columns = {name: np.concatenate(parts) for name, parts in self.columns.items()}
        order = np.argsort(columns["arrival"], kind="stable")
        return {name: values[order] for name, values in columns.items()}, np.concatenate(self.names)[order]


def source_file(path: Path, what: str) -> None:
    """Refuse a source that is missing, no regular file, empty, or beyond `MAX_SOURCE_BYTES`.

    Args:
        path: The source.
        what: What it should be, for the errors ("the openb pod list CSV").
    Raises:
        TraceError: It is not a file to read."""
    regular_file(path, "source", f"give {what}", MAX_SOURCE_BYTES, f"give {what}")


def csv_batches(path: Path, names: list[str] | None, numeric: tuple[str, ...], text: tuple[str, ...] = ()
                ) -> Iterator[tuple[dict[str, Any], int]]:
    """A source CSV's columns, streamed a block at a time.

    Args:
        path: The source.
        names: Its columns where it has no header (None: its first line is the header).
        numeric: Columns read as numbers (an empty cell is NaN).
        text: Columns read as text.
    Yields:
        ``(columns, before)``: the block's columns (numbers as float64 arrays, text as lists), and the rows before it.
    Raises:
        TraceError: A column is missing, a row has another number of cells, or a numeric cell is no number."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    where = f"source '{path}'"
    if names is None:
        with open(path, "rb") as file:
            header = file.readline(1 << 16).decode("utf-8-sig", errors="replace").rstrip("\r\n")
        found = [name.strip() for name in next(csv.reader([header]), [])]
        missing = [name for name in (*numeric, *text) if name not in found]
        if missing:
            raise TraceError(f"{where} has no column {', '.join(missing)} (its header: {header[:120]!r})")
    else:
        found = names
    wanted = [*numeric, *text]
    options = pacsv.ConvertOptions(include_columns=wanted, column_types={name: pa.string() for name in wanted},
                                   strings_can_be_null=True)
    reading = pacsv.ReadOptions(use_threads=False, block_size=1 << 22, column_names=found,
                                skip_rows=1 if names is None else 0)
    before = 0
    try:
        with pacsv.open_csv(path, read_options=reading, convert_options=options) as reader:
            for batch in reader:
                columns: dict[str, Any] = {name: cell_numbers(batch.column(name), name, before, where, empty=True)
                                           for name in numeric}
                columns.update({name: batch.column(name).to_pylist() for name in text})
                yield columns, before
                before += batch.num_rows
    except pa.ArrowInvalid as exc:
        raise TraceError(f"{where} after row {before:,}: {str(exc).splitlines()[0]}") from None


def write_canonical(path: Path, columns: dict[str, np.ndarray], names: np.ndarray) -> str:
    """Write the canonical CSV (`schema`): the columns in schema order, then ``name``; each number as
    `format_number` writes it, so that the same rows are the same bytes, and the same sha256, wherever converted.

    Args:
        path: The .csv file to write, atomically.
        columns: The canonical columns.
        names: Each row's name.
    Returns:
        The file's sha256.
    Raises:
        TraceError: ``path`` is not a .csv file."""
    from dcbench.harness import write_atomic

    if path.suffix.lower() != ".csv":
        raise TraceError(f"'{path}' is not a .csv file; `dcbench data convert` writes the canonical trace as CSV")
    header = [*columns, "name"]

    def write(temporary: Path) -> None:
        with open(temporary, "w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file, lineterminator="\n")
            writer.writerow(header)
            for start in range(0, len(names), WRITTEN_ROWS):
                part = slice(start, start + WRITTEN_ROWS)
                cells = [[format_number(v) for v in values[part].tolist()] for values in columns.values()]
                writer.writerows(zip(*cells, (str(name) for name in names[part])))

    write_atomic(path, write)
    return file_sha256(path)


def format_number(value: float) -> str:
    """A number as the canonical CSV writes it: an integer without a point, else the shortest text that reads back the
    same (Python's repr), which no library's version changes.

    Args:
        value: A finite number.
    Returns:
        Its text."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


def summary(columns: dict[str, np.ndarray], kept: Kept, path: Path, digest: str) -> str:
    """The line a conversion prints: what it wrote, what it dropped and why, and the load the trace offers.

    Args:
        columns: The canonical columns written.
        kept: The conversion's counts.
        path: The file written.
        digest: Its sha256.
    Returns:
        One line."""
    rows = len(columns["arrival"])
    span = float(columns["arrival"][-1] - columns["arrival"][0])
    dropped = "; dropped " + ", ".join(f"{count:,} {reason}" for reason, count in kept.dropped.items()) \
        if kept.dropped else ""
    load = ""
    if span > 0:
        busy = {name: float((columns[name] * columns["duration"]).sum()) / span for name in ("cpu", "mem")}
        load = (f"; over its {span / 86400:,.1f} days it offers {busy['cpu']:,.1f} cores and {busy['mem']:,.1f} "
                "GiB busy on average")
    return f"wrote {rows:,} requests to {path} (sha256 {digest}); read {kept.read:,} rows{dropped}{load}"


def positive(values: np.ndarray) -> np.ndarray:
    """Where ``values`` is a number above 0 (NaN is not)."""
    with np.errstate(invalid="ignore"):
        return values > 0
