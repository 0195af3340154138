"""Checks on paths before anything is written or read."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from dcbench.errors import ResultsError


def check_writable(out_dir: Path, what: str = "results") -> None:
    """Fail early, before any work, if ``out_dir`` cannot hold ``what``.

    Args:
        out_dir: The folder to write to.
        what: What is written there, as the error says it ("results", "plots").
    Raises:
        ResultsError: A file is in the way of ``out_dir``, or no file can be made in it (no permission, say)."""
    blocker = blocking_path(out_dir)
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


def blocking_path(folder: Path) -> Path | None:
    """The nearest of ``folder`` and its parents that is there, where that is no folder."""
    for part in (folder, *folder.parents):
        if part.is_dir():
            return None
        if part.exists() or part.is_symlink():  # a link to nothing is in the way too
            return part
    return None


def no_folder(part: Path, folder: Path | None = None) -> str:
    """What `blocking_path` found, said ("it" where that is ``folder`` itself)."""
    name = "it" if part == folder else f"'{part}'"
    return f"{name} is {'a file, not a folder' if part.is_file() else 'not a folder'}"


def _cannot_write(what: str, out_dir: Path, exc: OSError) -> ResultsError:
    return ResultsError(f"cannot write {what} to '{out_dir}': {exc.strerror or exc}; choose another folder with --out")


def check_regular_file(path: Path, give: str = "the path of a file to write") -> None:
    """Refuse what is at ``path`` unless it is a regular file (or nothing yet) a folder can hold."""
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file (a device or a pipe)"
        raise ResultsError(f"'{path}' is {kind}; give {give}")
    blocker = blocking_path(path.parent)
    if blocker is not None:
        raise ResultsError(f"cannot write '{path}': {no_folder(blocker)}; give {give}")


def starts_with(path: Path, magic: bytes) -> bool:
    """Whether ``path`` is a regular file that begins with ``magic`` (a pipe is not waited on)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    with open(descriptor, "rb") as file:
        return stat.S_ISREG(os.fstat(descriptor).st_mode) and file.read(len(magic)) == magic


def _umask_mode(mode: int) -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


_FOLDER_MODE = _umask_mode(0o777)
_FILE_MODE = _umask_mode(0o666)
