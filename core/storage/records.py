"""JSON that dcbench reads back, parsed in bounded time and memory."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

# The most JSON dcbench parses at once: a sweep's provenance of 400,000 runs; the worst case parsed takes some 200 MB.
MAX_JSON_BYTES = 8 * 2**20


class UnreadableJSON(ValueError):
    """JSON that is too long or nested too deeply to be parsed; its message says which."""


def parse_json(text: str | bytes) -> Any:
    """``text`` (UTF-8 where bytes) parsed as JSON; a `ValueError` where it is not JSON, an `UnreadableJSON` where it is
    too long or too deep."""
    if len(text) > MAX_JSON_BYTES:
        raise UnreadableJSON(f"JSON of more than the {MAX_JSON_BYTES:,} bytes dcbench reads")
    try:
        return json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except RecursionError:
        raise UnreadableJSON("JSON nested more deeply than it can be parsed") from None


def read_json(path: Path) -> Any:
    """The JSON file at ``path``, parsed by `parse_json`; an `OSError` where it is no regular file to read."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(errno.EINVAL, "not a file but a folder, a device or a pipe", str(path))
    with open(descriptor, "rb") as file:
        return parse_json(file.read(MAX_JSON_BYTES + 1))
