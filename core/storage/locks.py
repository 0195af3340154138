"""One dcbench command writing to a results folder or a checkpoint at a time: an ``flock``, which the kernel releases
however the process ends; a second command is refused at once."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Iterator

from dcbench.errors import ResultsError
from dcbench.storage.records import parse_json

try:
    import fcntl
except ImportError:  # (Windows) no lock: one writer per folder is the user's to keep
    fcntl = None  # type: ignore[assignment]

FOLDER_LOCK = ".dcbench.lock"


def folder_lock(folder: Path) -> Path:
    """The lock file of a results folder, for `sole_writer`.

    Args:
        folder: The results folder.
    Returns:
        Its ``.dcbench.lock`` path."""
    return folder / FOLDER_LOCK


def file_lock(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def sole_writer(lock: Path, command: str, written: Path, option: str = "--out") -> Iterator[None]:
    """A context manager holding ``lock`` while the block runs (nothing without ``flock``: Windows).

    Args:
        lock: The lock file (`folder_lock`).
        command: The command's name, for the message another one gets ("sweep").
        written: What the command writes, for that message.
        option: The option that gives another place to write, for that message.
    Raises:
        ResultsError: Another process holds the lock, or the lock file cannot be made."""
    if fcntl is None:
        yield
        return
    made = [folder for folder in (lock.parent, *lock.parent.parents) if not folder.exists()]
    try:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            descriptor = _acquire(lock, command, written, option)
        except OSError as exc:
            raise ResultsError(f"cannot lock '{written}' for this command: cannot write '{lock}' "
                               f"({exc.strerror or exc}); make its folder writable, or choose another {option}"
                               ) from None
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)  # before the lock ends: whoever locks the file next checks it is still there
            os.close(descriptor)
    finally:
        for folder in made:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()


def _acquire(lock: Path, command: str, written: Path, option: str) -> int:
    while True:
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            raise ResultsError(f"another dcbench {holder.get('command', 'command')} is writing to '{written}' "
                               f"(pid {holder.get('pid', 'unknown')}); wait for it or choose another {option}"
                               ) from None
        except OSError:
            os.close(descriptor)
            raise
        if _still_there(descriptor, lock):
            break
        os.close(descriptor)  # removed by the holder that ended meanwhile: lock the one that is there now
    os.ftruncate(descriptor, 0)
    os.write(descriptor, json.dumps({"pid": os.getpid(), "command": command}).encode())
    return descriptor


def _holder(descriptor: int) -> dict:
    """Who holds the lock, as it wrote (give it a moment to write)."""
    for _ in range(20):
        try:
            holder = parse_json(os.pread(descriptor, 4096, 0) or b"null")
        except ValueError:  # (half written, or not a lock's: `UnreadableJSON` too)
            holder = None
        if isinstance(holder, dict):
            return holder
        time.sleep(0.01)
    return {}


def _still_there(descriptor: int, lock: Path) -> bool:
    try:
        there = os.stat(lock)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)
