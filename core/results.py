"""Parquet tables of a run, written atomically, with provenance in the metadata.

A run is written to ``DIR/<run_id>/`` as ``requests.parquet``,
``timeline.parquet`` and ``summary.parquet``. The files are first written to
a temporary folder beside it, which is then renamed into place, so a run
folder either is complete or does not exist.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import stat
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from dcbench.errors import ResultsError, describe

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


def check_writable(out_dir: Path, what: str = "results") -> None:
    """Fail early, before any work, if ``out_dir`` cannot hold ``what``.

    The folders made to find out are removed again (the writers make them
    when they write), so a command that fails later, or is killed, leaves
    no empty folders behind."""
    blocker = in_the_way(out_dir)
    if blocker is not None:
        raise ResultsError(f"cannot write {what} to '{out_dir}': {no_folder(blocker, out_dir)}; "
                           "choose another folder with --out")
    made = [folder for folder in (out_dir, *out_dir.parents) if not folder.exists()]  # deepest first
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".dcbench-probe-"):
            pass
    except OSError as exc:
        raise _cannot_write(what, out_dir, exc) from None
    finally:
        for folder in made:
            with contextlib.suppress(OSError):  # not empty: another process wrote there meanwhile
                folder.rmdir()


def in_the_way(folder: Path) -> Path | None:
    """The nearest of ``folder`` and its parents that is there, where that
    is no folder (a file, say): ``folder`` can then be neither used nor
    made, as mkdir would fail with "File exists" or "Not a directory"; None
    where it can."""
    for part in (folder, *folder.parents):
        if part.is_dir():
            return None
        if part.exists() or part.is_symlink():  # a link to nothing is in the way too
            return part
    return None


def no_folder(part: Path, folder: Path | None = None) -> str:
    """What `in_the_way` found, said ("it" where that is ``folder`` itself)."""
    name = "it" if part == folder else f"'{part}'"
    return f"{name} is {'a file, not a folder' if part.is_file() else 'not a folder'}"


def _cannot_write(what: str, out_dir: Path, exc: OSError) -> ResultsError:
    return ResultsError(f"cannot write {what} to '{out_dir}': {exc.strerror or exc}; choose another folder with --out")


def write_run(out_dir: Path, run_id: str, tables: Mapping[str, Mapping[str, Any]],
              provenance: Mapping[str, Any]) -> Path:
    """Write the three tables of one run into ``out_dir/run_id`` atomically."""
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
        swap_in(staging, target)  # a rerun of the same run id replaces the old folder
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise ResultsError(f"cannot write results to '{target}': {exc.strerror or exc}") from None
        raise
    return target


def _replaceable_run_folder(folder: Path) -> bool:
    """Whether a rerun may replace ``folder`` whole: an empty folder, or one
    holding a run's table (a folder with none is someone else's files)."""
    return folder.is_dir() and (not any(folder.iterdir())
                                or any((folder / f"{name}.parquet").is_file() for name in TABLES))


def remove_staging(out_dir: Path, run_ids: Iterable[str]) -> None:
    """Remove the half-written folders (`staging_folder`'s ``.<run_id>.tmp-*``,
    `swap_in`'s ``.<run_id>.old-*``) that a killed write of one of
    ``run_ids`` left in ``out_dir``. Run folders only appear by an atomic
    rename, so these are never results; another command's runs into the same
    folder are left alone (two commands must not write the same run into the
    same folder at the same time)."""
    wanted = set(run_ids)
    for path in out_dir.glob(".*"):
        match = re.fullmatch(r"\.([0-9a-f]{16})\.(tmp|old)-.*", path.name)
        if match and match[1] in wanted and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def staging_folder(target: Path) -> Path:
    """An empty folder beside ``target`` to build its new contents in."""
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    staging.chmod(_FOLDER_MODE)  # mkdtemp makes it private; results are for sharing
    return staging


def swap_in(staging: Path, target: Path) -> None:
    """Put the complete folder ``staging`` at ``target``, replacing what is
    there: a complete folder is in place at every moment but one rename,
    and where the second rename fails the previous one is put back."""
    with swapped_in(staging, target):
        pass


@contextlib.contextmanager
def swapped_in(staging: Path, target: Path) -> Iterator[None]:
    """`swap_in`, undone if the block raises: the previous folder (or none)
    is put back, so that files replaced in the block and the folder change
    together or not at all."""
    aside = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
    old = aside / target.name
    swapped = False
    try:
        try:
            if target.exists():
                os.replace(target, old)
            os.replace(staging, target)
        except OSError as exc:  # named by the folder it would replace, not by a temporary one
            if old.exists():
                os.replace(old, target)
            raise OSError(exc.errno, exc.strerror or describe(exc), str(target)) from None
        swapped = True
        yield
    except BaseException:
        if swapped:
            os.replace(target, aside / "new")
            if old.exists():
                os.replace(old, target)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)  # (gone already where it was swapped in)


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file beside ``path``, then rename it into place:
    readers see the old file or the new one, never part of either. A link
    is written through (the file it names is replaced, the link stays) and
    a file replaced keeps its permissions. What a killed `write_all_atomic`
    of ``path`` left is settled first (`dcbench.atomic.recover`), so that
    it cannot later be finished over this file."""
    from dcbench.atomic import recover

    recover([path.resolve() if path.is_symlink() else path])
    replace_all([prepare_atomic(path, write)])


def write_all_atomic(writers: Sequence[tuple[Path, Callable[[Path], None]]]) -> None:
    """`write_atomic` for files that belong together (a checkpoint and its
    record, say): each ``(path, write)`` writes a temporary file first, then
    all are renamed into place, or none, whatever stops the write: a full
    disk, Ctrl-C, or SIGKILL at any point, after which the next write of
    any of them (or `dcbench.atomic.recover`) finishes the renames or
    removes the temporary files (`dcbench.atomic.write_together`)."""
    from dcbench.atomic import write_together

    write_together(writers)


def prepare_atomic(path: Path, write: Callable[[Path], None], tag: str | None = None) -> tuple[Path, Path]:
    """The first half of `write_atomic`: (the temporary file written, the
    path it is to replace), for `replace_all` to rename. The temporary is
    ``.NAME.tmp-TAG`` where a ``tag`` is given, else ``.NAME.tmp-`` and a
    random ending."""
    if path.is_symlink():
        path = path.resolve()
    check_regular_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = _FILE_MODE
    if tag is None:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    else:
        temporary = str(path.parent / f".{path.name}.tmp-{tag}")
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(handle)
    try:
        os.chmod(temporary, mode)  # mkstemp makes it private, unlike any other file written
        write(Path(temporary))
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, temporary):  # named by the file it is to replace
            raise OSError(exc.errno, exc.strerror or describe(exc), str(path)) from None
        raise
    return Path(temporary), path


def replace_all(prepared: list[tuple[Path, Path]]) -> None:
    """Rename each prepared temporary file into place (`prepare_atomic`), all
    or none: where one cannot be replaced (the OSError names it), those
    already replaced are put back as they were."""
    copies: list[Path] = []  # of the files as they were, for putting them back
    replaced: list[tuple[Path | None, Path]] = []  # (its copy, if it was there before; a file replaced)
    try:
        for temporary, path in prepared:
            try:
                copy = None
                if len(prepared) > 1 and path.exists():
                    copy = path.with_name(f".{path.name}.old-{os.getpid()}")
                    copies.append(copy)
                    shutil.copy2(path, copy)
                os.replace(temporary, path)
            except OSError as exc:
                for earlier_copy, earlier in replaced:
                    if earlier_copy is not None:
                        os.replace(earlier_copy, earlier)
                    else:  # it was not there before
                        earlier.unlink(missing_ok=True)
                # named by the file it would replace, not by its temporary
                raise OSError(exc.errno, exc.strerror or describe(exc), str(path)) from None
            replaced.append((copy, path))
    finally:
        for path in [temporary for temporary, _ in prepared] + copies:
            path.unlink(missing_ok=True)


def check_regular_file(path: Path, give: str = "the path of a file to write") -> None:
    """Refuse to read or replace what is at ``path`` unless it is a regular
    file (or nothing yet): a folder, a device such as /dev/null, a FIFO; and
    a path below a file (``afile/page.md``), where no folder can be made."""
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file (a device or a pipe)"
        raise ResultsError(f"'{path}' is {kind}; give {give}")
    blocker = in_the_way(path.parent)
    if blocker is not None:
        raise ResultsError(f"cannot write '{path}': {no_folder(blocker)}; give {give}")


def starts_with(path: Path, magic: bytes) -> bool:
    """Whether ``path`` is a regular file that begins with ``magic`` (a
    format's first bytes); a pipe or a device is not waited on."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    with open(descriptor, "rb") as file:
        return stat.S_ISREG(os.fstat(descriptor).st_mode) and file.read(len(magic)) == magic


def write_text_atomic(path: Path, text: str) -> None:
    """Write a text file atomically (temporary file, then rename)."""
    write_atomic(path, lambda temporary: temporary.write_text(text, encoding="utf-8", newline=""))


def _umask_mode(mode: int) -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


_FOLDER_MODE = _umask_mode(0o777)
_FILE_MODE = _umask_mode(0o666)


def curve_columns(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    """A training curve's rows as columns: every key any row has, NaN where a
    row lacks it (validation scores come every few rows; older rows lack new keys)."""
    keys = list(dict.fromkeys(key for row in rows for key in row)) if rows else ["steps"]
    return {key: [row.get(key, float("nan")) for row in rows] for key in keys}


def write_table_atomic(path: Path, columns: Any, provenance: Mapping[str, Any] | None = None) -> None:
    """Write one Parquet file atomically (temporary file, then rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = columns if isinstance(columns, pa.Table) else to_arrow(columns, provenance or {})
    write_atomic(path, lambda temporary: pq.write_table(table, temporary))


# What a results table `read_table` reads (a run's or a sweep's summary) may be, checked in its footer before
# any of its data is read, so that a small file that decompresses to gigabytes is refused at once: far beyond
# any sweep (the largest committed summary has 300 rows of 47 columns, 42 KB of data), far below what takes
# a machine's memory (a table is read whole, and copied as rows).
MAX_TABLE_ROWS = 1_000_000
MAX_TABLE_COLUMNS = 1_000
MAX_TABLE_BYTES = 256 * 2**20  # of the file, and of its data decompressed as the footer declares it


def read_table(path: Path) -> Any:
    """Read one Parquet table, or explain in one line why it cannot be read:
    it must be a regular file (a pipe would hang the read, a folder be read as
    a dataset), within `MAX_TABLE_ROWS`, `MAX_TABLE_COLUMNS` and
    `MAX_TABLE_BYTES`, with no two columns of one name."""
    if not path.exists():
        raise ResultsError(f"missing results file '{path}'; rerun the run that writes it")
    try:
        return table_at(path)
    except UnreadableTable as exc:
        if exc.corrupt:
            raise ResultsError(f"corrupt results file '{path}' ({exc}); delete it and rerun") from None
        raise ResultsError(f"'{path}' {exc}; remove it and rerun") from None


class UnreadableTable(Exception):
    """Why a Parquet file is no table to read, said of the file ("is not a
    regular file ..."), or, where ``corrupt``, what Arrow said of it."""

    def __init__(self, problem: str, corrupt: bool = False) -> None:
        super().__init__(problem)
        self.corrupt = corrupt


def table_at(path: Path) -> Any:
    """The table in the Parquet file at ``path``, checked as `read_table`
    says; `UnreadableTable` where it is none."""
    import pyarrow.parquet as pq

    with _regular_file(path) as file:
        try:
            parquet = pq.ParquetFile(file)  # its footer only
        except Exception as exc:
            raise UnreadableTable(describe(exc), corrupt=True) from None
        with parquet:
            problem = footer_problem(parquet)
            if problem is not None:
                raise UnreadableTable(problem)
            try:
                return parquet.read()
            except Exception as exc:
                raise UnreadableTable(describe(exc), corrupt=True) from None


@contextlib.contextmanager
def _regular_file(path: Path) -> Iterator[Any]:
    """``path`` opened for reading, if it is a regular file of at most
    `MAX_TABLE_BYTES`. It is opened without blocking and checked as opened,
    so that a pipe (or one put in its place meanwhile) is refused, not
    waited on for ever."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UnreadableTable(f"cannot be opened ({exc.strerror or describe(exc)})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise UnreadableTable("is not a file but a folder, a device or a pipe")
        if status.st_size > MAX_TABLE_BYTES:
            raise UnreadableTable(f"is {status.st_size:,} bytes, more than the {MAX_TABLE_BYTES:,} a results "
                                  "table may be")
    except BaseException:
        os.close(descriptor)
        raise
    with open(descriptor, "rb") as file:
        yield file


def footer_problem(parquet: Any) -> str | None:
    """What a Parquet file's footer declares beyond what a results table may
    be (`MAX_TABLE_ROWS`, `MAX_TABLE_COLUMNS`, `MAX_TABLE_BYTES` of data),
    or two columns of one name, which no table dcbench writes has; None
    where it may be read."""
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
    twice = [name for name, count in Counter(parquet.schema_arrow.names).items() if count > 1]
    if twice:
        return f"has two columns named {twice[0]!r}, which no table dcbench writes has"
    return None


# The columns of a sweep's combined summary other than its metrics, with their
# Arrow types; every other column is a metric, and the runner writes metrics as numbers.
SUMMARY_COLUMNS = {"run_id": "string", "scenario": "string", "allocator": "string", "topology": "string",
                   "workload": "string", "seed": "int64", "requests": "int64", "dcbench_version": "string",
                   "allocator_fingerprint": "string"}
SWEEP_COLUMNS = {"scenario"}  # what a sweep's combined summary adds to its runs' own
RUN_SUMMARY_COLUMNS = {k: v for k, v in SUMMARY_COLUMNS.items() if k not in SWEEP_COLUMNS}
REBUILD_SUMMARY = "remove it and run the sweep again to rebuild it"


def read_sweep_summary(results: Path, registry: Any = None, runs_needed: bool = False) -> Any:
    """The combined ``summary.parquet`` of a sweep's folder, a suite's or an
    ad-hoc one's (what `plot`, `report` and the leaderboard read; the
    leaderboard refuses an ad-hoc one first), checked by `sweep_summary_problem`
    and against its run folders (`check_run_folders`; every run's folder
    must be there only where ``runs_needed``); a folder of single runs, or
    one run, is a one-line error that says what to give instead."""
    hint = "give the folder a `dcbench sweep` wrote (its --out, results/<suite> by default)"
    if not results.exists():
        raise ResultsError(f"no results folder '{results}'; {hint}")
    if not results.is_dir():
        raise ResultsError(f"'{results}' is a file, not a results folder; {hint}")
    path = results / "summary.parquet"
    if not path.exists():
        if any((child / "summary.parquet").exists() for child in results.iterdir()):
            raise ResultsError(f"'{results}' holds single runs, not a sweep; {hint}")
        raise ResultsError(f"'{results}' holds no dcbench results (no summary.parquet); {hint}")
    table = read_table(path)
    if METADATA_KEY not in (table.schema.metadata or {}):
        raise ResultsError(f"'{path}' is not a dcbench sweep's summary (it has no dcbench provenance); {hint}")
    if "scenario" not in table.column_names:
        raise ResultsError(f"'{results}' is a single run, not a sweep; {hint}")
    problem = sweep_summary_problem(table, registry, adhoc=True)
    if problem is not None:
        raise ResultsError(f"'{path}' is damaged ({problem}); {REBUILD_SUMMARY}")
    check_run_folders(results, table.to_pylist(), runs_needed)
    return table


RUN_FOLDER_NAME = re.compile(r"[0-9a-f]{16}")  # a run id: what `write_run` names a run's folder


def run_folders(folder: Path) -> list[Path]:
    """The folders right below ``folder`` named as runs are (their run ids),
    in the order of their names; the rest (a sweep's folder, plots/, a
    half-written run's hidden folder, files) are not runs."""
    try:
        children = sorted(folder.iterdir())
    except OSError as exc:
        raise ResultsError(f"cannot read the folder '{folder}': {exc.strerror or describe(exc)}; check the path "
                           "and its permissions") from None
    return [child for child in children if RUN_FOLDER_NAME.fullmatch(child.name) and child.is_dir()]


def holds_runs(folder: Path) -> bool:
    """Whether ``folder`` is a folder with a run folder in it (what `dcbench run` writes to)."""
    return folder.is_dir() and not folder.is_symlink() and bool(run_folders(folder))


def run_summary_problem(run_dir: Path) -> str | None:
    """Why ``run_dir`` holds no finished run whose one-row summary reads
    (`run_problem`, `read_table`) and whose id is the hash of its specs, or
    None."""
    from dcbench.runner import run_hash

    problem = run_problem(run_dir)
    if problem is not None:
        return problem
    try:
        (row,) = read_table(run_dir / "summary.parquet").to_pylist()
    except ResultsError as exc:
        return f"has an unreadable summary.parquet ({exc})"
    if any(row[column] is None for column in RUN_IDENTITY):
        return "has a damaged summary.parquet (an empty cell where its specs belong)"
    if run_hash(*(row[column] for column in RUN_IDENTITY[1:])) != row["run_id"]:
        return "has a damaged summary.parquet (the run id is not the hash of its specs)"
    return None


def read_runs(folder: Path) -> tuple[list[dict[str, Any]], list[tuple[Path, str]]]:
    """The one-row summaries of the run folders right below ``folder``
    (`run_folders`), each checked by `run_summary_problem`, in the order of
    their names, and the run folders that failed a check with why. Each row
    has its run's own columns: a metric installed after a run was made is
    not in its row."""
    rows, damaged = [], []
    for run_dir in run_folders(folder):
        problem = run_summary_problem(run_dir)
        if problem is not None:
            damaged.append((run_dir, problem))
            continue
        rows.append(read_table(run_dir / "summary.parquet").to_pylist()[0])
    return rows, damaged


def read_run_folder(folder: Path) -> list[dict[str, Any]]:
    """`read_runs`, for `report` and `plot`: a folder with no run, or with a
    run folder that fails a check, is a one-line error with the fix."""
    rows, damaged = read_runs(folder)
    if damaged:
        run_dir, problem = damaged[0]
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        raise ResultsError(f"run folder {run_dir} {problem}{more}; run it again with `dcbench run`, or remove it")
    if not rows:
        raise ResultsError(f"'{folder}' holds no dcbench runs; give the --out folder of `dcbench run` or "
                           "`dcbench sweep`")
    return rows


def check_run_folders(results: Path, rows: list[dict[str, Any]], runs_needed: bool = True) -> None:
    """Each row of a sweep's summary must say what its run folder's own
    summary says (`row_problem`), the folder finished (`run_problem`): a
    one-line error with the fix where a run was damaged since, or the summary
    edited. A folder that is gone is such an error only where ``runs_needed``
    (a submission, whose numbers must be the runs'): the summary holds all
    that a report or a plot reads, so removing the run folders, which hold
    each request's row, to save space is fine."""
    for row in rows:
        run_dir = results / row["run_id"]
        if not runs_needed and not run_dir.exists():
            continue
        problem = run_problem(run_dir)
        if problem is not None:
            raise ResultsError(f"run folder {run_dir} {problem}; run the sweep again to redo it")
        problem = row_problem(row, run_dir)
        if problem is not None:
            raise ResultsError(f"'{results / 'summary.parquet'}' is damaged ({problem}); {REBUILD_SUMMARY}")


def row_problem(row: Mapping[str, Any], run_dir: Path) -> str | None:
    """Where a row of a sweep's summary is not what its run folder's own
    summary says, or None. An empty cell for a column the run lacks is what
    a sweep writes where a metric was installed after that run was made."""
    (own,) = read_table(run_dir / "summary.parquet").to_pylist()  # one row: `run_problem` checked it
    for column, value in own.items():
        given = row.get(column)
        if not same_value(given, value):
            return f"run folder {run_dir} says {column}={value!r}, the summary {given!r}"
    extra = sorted(column for column in set(row) - set(own) - SWEEP_COLUMNS if row[column] is not None)
    if extra:
        return f"run folder {run_dir} has no column {extra[0]!r}, which the summary gives"
    return None


def same_value(a: Any, b: Any) -> bool:
    """Whether two cells say the same: equal, or both NaN (which equals nothing)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def ranking_of(suite: Any) -> tuple[str, bool]:
    """The column a suite is ranked by and whether higher is better;
    acceptance_ratio, which every run has, for None (a suite that is not
    registered, or no longer)."""
    return (suite.primary_metric, suite.higher_is_better) if suite is not None else ("acceptance_ratio", True)


NO_PROVENANCE = "it has no dcbench provenance"


def _read_provenance(table: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The provenance dcbench wrote into ``table``, parsed once, or None and
    why it is not usable (absent, not JSON, not a JSON object)."""
    metadata = table.schema.metadata or {}
    if METADATA_KEY not in metadata:
        return None, NO_PROVENANCE
    try:
        provenance = json.loads(metadata[METADATA_KEY])
    except ValueError:  # not UTF-8 or not JSON
        return None, "its dcbench provenance is not JSON"
    if not isinstance(provenance, dict):
        return None, f"its dcbench provenance is a JSON {type(provenance).__name__}, not an object"
    return provenance, None


def provenance_of(table: Any, path: Path | None = None) -> dict[str, Any]:
    """The provenance dcbench wrote into ``table``; a one-line error, naming
    ``path`` where given, if it has none or it is damaged."""
    provenance, problem = _read_provenance(table)
    if provenance is None:
        where = f"'{path}'" if path is not None else "results file"
        if problem == NO_PROVENANCE:
            raise ResultsError(f"{where} has no dcbench provenance; was it written by dcbench?")
        raise ResultsError(f"{where} is damaged ({problem}); delete it and rerun")
    return provenance


def is_adhoc(provenance: Mapping[str, Any]) -> bool:
    """Whether a sweep's provenance is an ad-hoc sweep's (``dcbench sweep -t
    ...``: it lists its scenarios where a suite's names the suite)."""
    return "suite" not in provenance and "scenarios" in provenance


ADHOC_REFUSED = ("it is an ad-hoc sweep's (of -t/-w specs), and the leaderboard ranks registered suites only; "
                 "sweep a suite with -s SUITE (see `dcbench list suites`)")


def is_adhoc_sweep(results: Path) -> bool:
    """Whether ``results`` holds an ad-hoc sweep's summary (False where it
    holds none, or one that does not read: the checks that follow say why)."""
    try:
        provenance, _ = _read_provenance(table_at(results / "summary.parquet"))
    except (UnreadableTable, OSError):
        return False
    return provenance is not None and is_adhoc(provenance)


def sweep_problem(table: Any, adhoc: bool = True) -> str | None:
    """Why ``table`` is not the combined summary of a dcbench sweep (its
    provenance names the suite, or where ``adhoc`` lists the scenarios of an
    ad-hoc sweep, and it has a scenario column), or None."""
    provenance, problem = _read_provenance(table)
    if provenance is None:
        return problem
    if "scenario" not in table.column_names:
        return "it is a single run's"
    if is_adhoc(provenance):
        if not adhoc:
            return ADHOC_REFUSED
        scenarios = provenance["scenarios"]
        if not isinstance(scenarios, list) or not all(isinstance(s, dict) for s in scenarios):
            return "its dcbench provenance's scenarios are not a list of scenarios"
    elif not isinstance(provenance.get("suite"), str):
        return "its dcbench provenance names no suite"
    allocators = provenance.get("allocators", [])
    if not isinstance(allocators, list) or not all(isinstance(a, str) for a in allocators):
        return "its dcbench provenance's allocators are not a list of specs"
    return None


def sweep_summary_problem(table: Any, registry: Any = None, adhoc: bool = False) -> str | None:
    """What is wrong with ``table`` as a sweep's combined summary
    (`sweep_problem`, `summary_problem`, then `runs_problem`), or None. An
    ad-hoc sweep's is one only where ``adhoc`` (`report` and `plot` read it,
    the leaderboard does not). It must have its suite's primary metric; an
    ad-hoc sweep's, the acceptance ratio that every run has."""
    problem = sweep_problem(table, adhoc)
    if problem is not None:
        return problem
    if registry is None:
        from dcbench.registry import get_registry

        registry = get_registry()
    suite = registry.entries("suite").get(provenance_of(table).get("suite"))
    return summary_problem(table, ranking_of(suite)[0]) or runs_problem(table)


# A run's id and, in `run_hash`'s order, the columns it is the hash of.
RUN_IDENTITY = ("run_id", "topology", "workload", "allocator", "requests", "seed", "dcbench_version",
                "allocator_fingerprint")


def runs_problem(table: Any) -> str | None:
    """Why the rows of a sweep's combined summary (checked by
    `summary_problem`) are not the runs the sweep made, or None: they must be
    the runs its provenance lists, each named by the hash of its specs (an
    edited allocator, topology, workload, requests or seed breaks it)."""
    from dcbench.runner import run_hash

    held = table.column("run_id").to_pylist()
    listed = provenance_of(table).get("runs", held)  # (a provenance without the list is not checked against it)
    if not isinstance(listed, list) or not all(isinstance(run, str) for run in listed):
        return "its dcbench provenance's runs are not a list of run ids"
    held_ones, listed_ones = set(held), set(listed)
    missing = [run for run in listed if run not in held_ones]
    if missing:
        return (f"it holds {len(held_ones & listed_ones)} of the {len(listed)} runs its provenance lists: "
                f"run {missing[0]} is missing")
    unlisted = [run for run in held if run not in listed_ones]
    if unlisted:
        return f"run {unlisted[0]} is not one of the runs its provenance lists"
    for row in table.select(list(RUN_IDENTITY)).to_pylist():
        if run_hash(*(row[column] for column in RUN_IDENTITY[1:])) != row["run_id"]:
            return f"run {row['run_id']}: the hash does not match its specs"
    return None


def summary_problem(table: Any, primary: str) -> str | None:
    """What is wrong with the contents of a sweep's combined summary, or
    None: it has rows, `SUMMARY_COLUMNS` with their types, the suite's
    ``primary`` metric, and numbers in every metric column."""

    if table.num_rows == 0:
        return "it is empty, with no runs"
    if "run_id" in table.column_names:  # a row copied would count twice in every mean and interval
        twice = [run_id for run_id, count in Counter(table.column("run_id").to_pylist()).items() if count > 1]
        if twice:
            return f"run {twice[0]} appears twice"
    problem = columns_problem(table.schema, SUMMARY_COLUMNS)
    if problem is not None:
        return problem
    for column in SUMMARY_COLUMNS:
        if table.column(column).null_count:
            return f"column {column!r} has empty values"
    if primary not in table.column_names:
        return f"column {primary!r}, the suite's primary metric, is missing"
    return None


def columns_problem(schema: Any, required: Mapping[str, str]) -> str | None:
    """What is wrong with a summary's columns, or None: the ``required``
    ones with their types, and numbers in every other (metric) column."""
    import pyarrow as pa

    types = {field.name: field.type for field in schema}
    for column, kind in required.items():
        if column not in types:
            return f"column {column!r} is missing"
        if str(types[column]) != kind:
            return f"column {column!r} is {types[column]}, expected {kind}"
    for column, kind in types.items():
        if column not in required and not (pa.types.is_floating(kind) or pa.types.is_integer(kind)
                                           or pa.types.is_boolean(kind)):
            return f"metric column {column!r} is {kind}, expected numbers"
    return None


def run_problem(run_dir: Path) -> str | None:
    """Why ``run_dir`` does not hold a finished run, or None: each of its
    three tables must read (its footer: a cheap check that catches a
    truncated file), and its summary must be one row, with the summary's
    columns, that names the run the folder is named after."""
    import pyarrow.parquet as pq

    if not all((run_dir / f"{name}.parquet").is_file() for name in TABLES):
        return "is missing or incomplete"
    footers = {}
    for name in TABLES:
        try:
            footers[name] = pq.read_metadata(run_dir / f"{name}.parquet")
        except Exception as exc:
            return f"has a damaged {name}.parquet ({describe(exc)})"
    summary = footers["summary"].schema.to_arrow_schema()
    provenance, _ = _read_provenance(summary.empty_table())  # it reads a table's schema
    if provenance is None or provenance.get("run_id") != run_dir.name:
        return "holds another run"
    if footers["summary"].num_rows != 1:
        return f"has a summary.parquet of {footers['summary'].num_rows} rows, not one"
    problem = columns_problem(summary, RUN_SUMMARY_COLUMNS)
    if problem is not None:
        return f"has a damaged summary.parquet ({problem})"
    return None


def is_complete(run_dir: Path) -> bool:
    return run_problem(run_dir) is None
