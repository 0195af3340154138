"""``azure-packing-2020``: the VM requests of the Azure trace for packing 2020 (one SQLite file).

A VM arrives at its ``starttime`` and leaves at its ``endtime`` (fractional days, made seconds); its type's
``core``, ``memory`` and ``ssd``, fractions of a machine, times the `Machine`'s cores, GiB and GB. A type has a
row per machine generation: the conversion uses one generation's (``machine_id``; default: the one whose types
cover the most requests). Dropped: VMs alive before the trace began (negative ``starttime``: arrival unknown),
with no ``endtime`` (alive past the trace's 90-day cap), whose type that generation lacks, or whose end is not
after their start.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from dcbench.plugins.workloads.traces.convert import Kept, Machine, source_file
from dcbench.plugins.workloads.traces.schema import TraceError

WHAT = "the SQLite file of the Azure trace for packing 2020"
TABLES = {"vm": ("vmId", "vmTypeId", "starttime", "endtime"), "vmType": ("vmTypeId", "machineId", "core", "memory",
                                                                          "ssd")}
DAY = 86_400.0
FETCHED = 100_000  # rows read at a time
NUMBERS = ("starttime", "endtime", "core", "memory", "ssd")


def convert(source: Path, kept: Kept, machine: Machine = Machine(), machine_id: int | None = None) -> None:
    """Read the VM requests of ``source`` into ``kept``.

    Args:
        source: The trace's ``.sqlite`` file.
        kept: Where the rows go.
        machine: What a whole machine is.
        machine_id: The machine generation whose type sizes to use (None: the one covering the most requests).
    Raises:
        TraceError: The source is no SQLite file, lacks a table or a column, or holds a value that is no number."""
    source_file(source, WHAT)
    with open(source, "rb") as file:
        if file.read(16) != b"SQLite format 3\x00":
            raise TraceError(f"source '{source}' is not a SQLite file; give {WHAT}")
    connection = sqlite3.connect(f"file:{source.resolve()}?mode=ro", uri=True)
    try:
        _check_tables(connection, source)
        if machine_id is None:
            machine_id = _busiest_machine(connection, source)
        cursor = connection.execute(
            "SELECT v.vmId, v.starttime, v.endtime, t.core, t.memory, t.ssd FROM vm v LEFT JOIN vmType t "
            "ON v.vmTypeId = t.vmTypeId AND t.machineId = ? ORDER BY v.starttime, v.vmId", (machine_id,))
        before = 0
        while rows := cursor.fetchmany(FETCHED):
            names, values = _numbers(rows, before, source)
            start, end = values["starttime"] * DAY, values["endtime"] * DAY
            keep = np.ones(len(rows), dtype=bool)
            keep = kept.drop("alive before the trace began", start < 0, keep)
            keep = kept.drop("without an end (alive past the cap)", np.isnan(end), keep)
            keep = kept.drop(f"of a type machine {machine_id} lacks", np.isnan(values["core"]), keep)
            keep = kept.drop("without an end after their start", ~(end > start), keep)
            kept.add({"arrival": np.round(start, 3), "duration": np.round(end - start, 3),
                      "cpu": values["core"] * machine.cores, "mem": values["memory"] * machine.mem,
                      "disk": np.nan_to_num(values["ssd"]) * machine.disk}, names, keep)
            before += len(rows)
    except sqlite3.DatabaseError as exc:
        raise TraceError(f"source '{source}' cannot be read as {WHAT} ({exc})") from None
    finally:
        connection.close()


def _check_tables(connection: sqlite3.Connection, source: Path) -> None:
    for table, columns in TABLES.items():
        found = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        missing = [column for column in columns if column not in found]
        if missing:
            what = f"a table {table}" if not found else f"column {', '.join(missing)} in its table {table}"
            raise TraceError(f"source '{source}' has no {what}; give {WHAT}")


def _busiest_machine(connection: sqlite3.Connection, source: Path) -> int:
    row = connection.execute(
        "SELECT t.machineId FROM vm v JOIN vmType t ON v.vmTypeId = t.vmTypeId GROUP BY t.machineId "
        "ORDER BY COUNT(*) DESC, t.machineId LIMIT 1").fetchone()
    if row is None:
        raise TraceError(f"source '{source}' has no VM of a type in its vmType table; give {WHAT}")
    return row[0]


def _numbers(rows: list[tuple[Any, ...]], before: int, source: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The rows' names and numeric columns (None is NaN); a value that is no number is an error naming its row."""
    names = np.array([str(row[0]) for row in rows], dtype=object)
    columns = {}
    for index, name in enumerate(NUMBERS, start=1):
        cells = [row[index] for row in rows]
        try:
            columns[name] = np.array([np.nan if cell is None else cell for cell in cells], dtype=np.float64)
        except (TypeError, ValueError):
            at = next(i for i, cell in enumerate(cells) if cell is not None and not _is_number(cell))
            raise TraceError(f"source '{source}' row {before + at + 1:,} (vmId {names[at]}): its {name} is "
                             f"{str(cells[at])[:40]!r}, not a number") from None
    return names, columns


def _is_number(cell: Any) -> bool:
    try:
        float(cell)
    except (TypeError, ValueError):
        return False
    return True
