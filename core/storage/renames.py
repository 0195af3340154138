"""A file's new contents written beside it, then renamed into place; several
files renamed all or none. The two halves of `dcbench.storage.files.write_atomic`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from dcbench.errors import describe


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
