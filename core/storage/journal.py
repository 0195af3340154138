"""Files replaced together or not at all, whatever stops the writer, SIGKILL included: a redo journal.

`write_together` writes each new file as ``.NAME.tmp-TXID`` beside it, commits by renaming into place a journal
(``.dcbench-txn-TXID.journal``) that lists them, renames them into place and removes the journal; `recover`, which the
next write does first, finishes the renames of a committed write and undoes an uncommitted one. A marker
``.dcbench-txn-TXID``, ``flock``ed by the writer in every folder written into, keeps `recover` off a write under way."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable, Collection, Iterable, Sequence

from dcbench.errors import ResultsError, describe
from dcbench.storage.paths import _FILE_MODE, check_regular_file
from dcbench.storage.records import read_json

try:
    import fcntl
except ImportError:  # (Windows) a write under way cannot be told from a killed one: recover under a lock only
    fcntl = None  # type: ignore[assignment]

MARKER = ".dcbench-txn-"
_TRANSACTION_FILE = re.compile(r"\.dcbench-txn-([0-9a-f]{16})(\.new|\.journal|\.journal\.tmp)?")
# What dcbench's writers leave behind when killed: temporary files and folders, copies, `check_writable`'s probe.
_LEFTOVER = re.compile(r"\.(.+)\.(?:tmp|old)-[A-Za-z0-9_]+|\.dcbench-probe-[A-Za-z0-9_]+")

# Called with the name of each step of `write_together` once it is done; tests set it to kill the writer there.
fault_hook: Callable[[str], None] | None = None


def _step(name: str) -> None:
    if fault_hook is not None:
        fault_hook(name)


def write_together(writers: Sequence[tuple[Path, Callable[[Path], None]]]) -> None:
    """Replace each ``path`` with what its ``write`` writes to a temporary file, all or none; one file needs no journal.
    A rename refused after the commit puts back the files already renamed, from copies."""
    targets = [path.resolve() if path.is_symlink() else path for path, _ in writers]  # written through a link
    for target in targets:
        check_regular_file(target)
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
    recover(targets)
    if len(writers) == 1:
        temporary = _write_temporary(targets[0], writers[0][1])
        try:
            _rename_all([(temporary, targets[0])])
        finally:
            temporary.unlink(missing_ok=True)
        return
    txid = secrets.token_hex(8)
    folders = list(dict.fromkeys(_real(target.parent) for target in targets))
    journal = folders[0] / f"{MARKER}{txid}.journal"
    with contextlib.ExitStack() as held:  # the markers' descriptors: closing one ends its lock
        markers: list[Path] = []
        prepared: list[tuple[Path, Path]] = []
        copies: list[Path | None] = []  # of each file as it was (None: not there), for putting it back
        try:
            for folder in folders:
                markers.append(_place_marker(folder, txid, journal, held))
                _step("marker")
            for (_, write), target in zip(writers, targets):
                prepared.append((_write_temporary(target, write, tag=txid), target))
                _step("temporary")
            for target in targets:
                copies.append(_copy_of(target, txid))
            _commit(journal, prepared, markers, copies)
        except BaseException:  # Ctrl-C too: test_ctrl_c_or_a_failure_before_the_commit_leaves_the_files_as_they_were
            for path in [temporary for temporary, _ in prepared] + [c for c in copies if c] + [
                    journal.with_name(journal.name + ".tmp"), journal, *markers]:
                path.unlink(missing_ok=True)
            raise
        try:
            _rename_all(prepared, after_each=lambda: _step("renamed"))
        except OSError:
            _put_back(prepared, copies)
            raise
        finally:
            _remove_transaction(journal, markers, copies, step=_step)


def _copy_of(target: Path, txid: str) -> Path | None:
    if not target.exists():
        return None
    copy = target.with_name(f".{target.name}.old-{txid}")
    shutil.copy2(target, copy)
    return copy


def _put_back(prepared: Sequence[tuple[Path, Path]], copies: Sequence[Path | None]) -> None:
    for (temporary, target), copy in zip(prepared, copies):
        if os.path.lexists(temporary):
            temporary.unlink()  # not renamed
        elif copy is not None:
            os.replace(copy, target)
        else:
            target.unlink(missing_ok=True)


def _write_temporary(path: Path, write: Callable[[Path], None], tag: str | None = None) -> Path:
    """The new contents of ``path`` written beside it by ``write``, with its mode, as ``.NAME.tmp-TAG``."""
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
    except BaseException as exc:  # Ctrl-C too (test_ctrl_c_or_a_failure_before_the_commit_leaves_the_files_...)
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, temporary):  # named by the file it is to replace
            raise OSError(exc.errno, exc.strerror or describe(exc), str(path)) from None
        raise
    return Path(temporary)


def recover(paths: Iterable[Path]) -> None:
    """Finish the killed writes in the folders of ``paths``, or undo those killed before their commit."""
    for folder in dict.fromkeys(_real(Path(path).parent) for path in paths):
        _recover_folder(folder)


def _recover_folder(folder: Path) -> None:
    for txid in _transactions(folder):
        _settle(folder, txid)


def remove_leftovers(folder: Path, names: Collection[str] | None = None) -> list[str]:
    """`recover` ``folder``, then remove and return what killed writers left in it (of the files ``names`` where
    given); to be called under a lock, as a write under way looks like a killed one."""
    _recover_folder(_real(folder))
    under_way = tuple(f".tmp-{txid}" for txid in _transactions(folder))  # another command's, in a file of its own
    removed = []
    for entry in _entries(folder):
        match = _LEFTOVER.fullmatch(entry.name)
        if not match or (names is not None and match[1] not in names) or entry.name.endswith(under_way):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
        removed.append(entry.name)
    return sorted(removed)


def _place_marker(folder: Path, txid: str, journal: Path, held: contextlib.ExitStack) -> Path:
    """Write the marker locked and whole, then rename it into place."""
    marker = folder / f"{MARKER}{txid}"
    making = folder / f"{MARKER}{txid}.new"
    descriptor = os.open(making, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    held.callback(os.close, descriptor)
    if fcntl is not None:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    os.write(descriptor, json.dumps({"journal": os.path.relpath(journal, folder)}).encode())
    os.replace(making, marker)
    return marker


def _commit(journal: Path, prepared: list[tuple[Path, Path]], markers: list[Path], copies: list[Path | None]
            ) -> None:
    home = journal.parent
    record = {"renames": [[_relative(temporary, home), _relative(target, home)] for temporary, target in prepared],
              "markers": [_relative(marker, home) for marker in markers],
              "copies": [_relative(copy, home) for copy in copies if copy is not None]}
    pending = journal.with_name(journal.name + ".tmp")
    pending.write_text(json.dumps(record), encoding="utf-8")
    _step("journal written")
    os.replace(pending, journal)
    _step("committed")


def _rename_all(pairs: Sequence[tuple[Path, Path]], after_each: Callable[[], None] = lambda: None) -> None:
    """Rename each temporary file still there into place; Ctrl-C meanwhile, or the first OSError, is raised after the
    last rename."""
    stopped: KeyboardInterrupt | None = None
    failed: OSError | None = None
    for temporary, target in pairs:
        while True:
            try:
                _rename_if_there(temporary, target)
                break
            except KeyboardInterrupt as exc:  # tried again: the rename may or may not have been done
                stopped = exc
            except OSError as exc:
                failed = failed or OSError(exc.errno, exc.strerror or describe(exc), str(target))
                break
        after_each()
    if stopped is not None:
        raise stopped
    if failed is not None:
        raise failed


def _rename_if_there(temporary: Path, target: Path) -> None:
    try:
        os.replace(temporary, target)
    except FileNotFoundError:
        if os.path.lexists(temporary):  # the target's folder is gone, say: not a rename done before
            raise


def _remove_transaction(journal: Path, markers: Sequence[Path], copies: Sequence[Path | None],
                        step: Callable[[str], None] = _step) -> None:
    """The copies and other markers, then the journal, then the marker beside it."""
    for path in [*(copy for copy in copies if copy is not None), *markers[1:]]:
        path.unlink(missing_ok=True)
    step("markers removed")
    journal.unlink(missing_ok=True)
    step("journal removed")
    if markers:
        markers[0].unlink(missing_ok=True)


def _settle(folder: Path, txid: str) -> None:
    marker = folder / f"{MARKER}{txid}"
    making = folder / f"{MARKER}{txid}.new"
    if _held(marker) or _held(making):
        return  # under way
    journal = _journal_of(marker) or folder / f"{MARKER}{txid}.journal"
    if journal.is_file():
        home = journal.parent
        try:
            record = read_json(journal)
            renames = [(home / temporary, home / target) for temporary, target in record["renames"]]
            markers = [home / marker for marker in record["markers"]]
            copies = [home / copy for copy in record.get("copies", [])]
        except (ValueError, KeyError, TypeError) as exc:
            raise ResultsError(f"'{journal}' is a damaged dcbench journal ({describe(exc)}); remove it and the "
                               f"'.*.tmp-{txid}' files beside the files it names") from None
        _rename_all(renames)
        _remove_transaction(journal, markers, copies, step=lambda name: None)
    else:  # never committed: its new contents and the copies of the old go
        for entry in _entries(folder):
            if entry.name.endswith((f".tmp-{txid}", f".old-{txid}")):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
    for name in (f"{MARKER}{txid}.journal.tmp", making.name, marker.name):
        (folder / name).unlink(missing_ok=True)


def _journal_of(marker: Path) -> Path | None:
    try:
        return Path(os.path.normpath(marker.parent / read_json(marker)["journal"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _held(path: Path) -> bool:
    if fcntl is None:
        return False
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # (and with it the lock, where this took it)
    return False


def _transactions(folder: Path) -> list[str]:
    return sorted({match[1] for entry in _entries(folder) if (match := _TRANSACTION_FILE.fullmatch(entry.name))})


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _real(folder: Path) -> Path:
    return Path(os.path.realpath(folder))


def _relative(path: Path, folder: Path) -> str:
    return os.path.relpath(_real(path.parent) / path.name, folder)
