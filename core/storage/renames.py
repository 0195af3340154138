"""A file's new contents written beside it, then renamed into place; several
files renamed all or none. The two halves of `dcbench.storage.files.write_atomic`.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable

from dcbench.errors import describe
from dcbench.storage.paths import _FILE_MODE, check_regular_file


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
