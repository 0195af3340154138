"""Files and folders written whole or not at all: a folder is built beside its target and swapped in."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from dcbench.errors import describe
from dcbench.storage.journal import write_together
from dcbench.storage.paths import _FOLDER_MODE


def remove_staging(out_dir: Path, run_ids: Iterable[str]) -> None:
    """Remove the half-written folders that a killed write of one of ``run_ids`` left in ``out_dir``."""
    wanted = set(run_ids)
    for path in out_dir.glob(".*"):
        match = re.fullmatch(r"\.([0-9a-f]{16})\.(tmp|old)-.*", path.name)
        if match and match[1] in wanted and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def staging_folder(target: Path) -> Path:
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    staging.chmod(_FOLDER_MODE)  # mkdtemp makes it private; results are for sharing
    return staging


@contextlib.contextmanager
def swapped_in(staging: Path, target: Path) -> Iterator[None]:
    """Put ``staging`` at ``target``; where that or the block fails, the previous folder (or none) is put back."""
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
    except BaseException:  # Ctrl-C too: the block's files and the folder change together or not at all
        if swapped:
            os.replace(target, aside / "new")
            if old.exists():
                os.replace(old, target)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)  # (gone already where it was swapped in)


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file beside ``path``, then rename it into place: readers see the old file or the new one.

    Args:
        path: The file to write; its folder is made where it is missing.
        write: Writes the new contents to the temporary path it is given.
    Raises:
        ResultsError: ``path`` is no regular file, lies below a file, or its folder holds a damaged journal.
        OSError: The file system failed (a full disk), named by ``path``; the old file is left whole."""
    write_together([(path, write)])


def write_all_atomic(writers: Sequence[tuple[Path, Callable[[Path], None]]]) -> None:
    """`write_atomic` for files that belong together: all are replaced or none, whatever stops the write.

    Args:
        writers: ``(path, write)`` for each file: ``write`` writes the new contents to the temporary path it is given.
    Raises:
        ResultsError: As `write_atomic`, for any of the paths.
        OSError: The file system failed, named by the file concerned."""
    write_together(writers)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a text file atomically (`write_atomic`).

    Args:
        path: The file to write.
        text: Its contents, written as UTF-8 with line endings as they are.
    Raises:
        ResultsError: As `write_atomic`.
        OSError: As `write_atomic`."""
    write_atomic(path, lambda temporary: temporary.write_text(text, encoding="utf-8", newline=""))
