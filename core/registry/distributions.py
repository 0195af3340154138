"""A third-party plugin's distribution name, source digest (hashed into run ids), and whether it is turned off."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Collection, Iterable, Mapping

from dcbench.registry.kinds import BUILTIN_PLUGINS
from dcbench.spec import unknown

DISABLE_VARIABLE = "DCBENCH_DISABLE_PLUGINS"
SOURCE_DIGITS = 12  # of the SHA-256 of a plugin's source: a run id, not a signature


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it: lowercase, each run of '-', '_' and '.' one '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def disabled_names(environ: Mapping[str, str] | None = None) -> list[str]:
    """The names ``DCBENCH_DISABLE_PLUGINS`` lists (comma-separated), each once, as written."""
    text = (os.environ if environ is None else environ).get(DISABLE_VARIABLE, "")
    return list(dict.fromkeys(item.strip() for item in text.split(",") if item.strip()))


def is_disabled(entry_point: str, distribution: str, disabled: Collection[str]) -> bool:
    """Whether a plugin's entry-point or distribution name is among ``disabled`` (normalized names)."""
    return normalized(entry_point) in disabled or normalized(distribution) in disabled


def disable_problems(requested: Iterable[str], third_party: Iterable[tuple[str, str]]) -> list[str]:
    """A warning for each name of ``DCBENCH_DISABLE_PLUGINS`` that turns nothing off, so a typo is not silent."""
    installed = sorted({name for pair in third_party for name in pair if name != "?"})
    known = {normalized(name) for name in installed}
    builtin = {"dcbench"} | {normalized(name) for module in BUILTIN_PLUGINS  # each module, and its last part
                             for name in (module, module.rpartition(".")[2])}
    problems = []
    for name in requested:
        if normalized(name) in known:
            continue
        if normalized(name) in builtin:
            problems.append(f"{DISABLE_VARIABLE} names {name!r}, which is part of dcbench and cannot be turned "
                            "off; take it off the list")
        else:
            problems.append(f"{DISABLE_VARIABLE} turns nothing off: "
                            f"{unknown('third-party plugin', name, installed)}")
    return problems


def source_digest(module_name: str) -> str:
    """A SHA-256 of every file the module's top-level package ships (not ``__pycache__``), or of a plain module's
    file; "" where unreadable."""
    files = _source_files(module_name)
    if not files:
        return ""
    digest = hashlib.sha256()
    try:
        for relative, path in files:
            data = path.read_bytes()
            digest.update(f"{relative}\0{len(data)}\0".encode())  # lengths: no two layouts hash alike
            digest.update(data)
    except OSError:
        return ""
    return digest.hexdigest()[:SOURCE_DIGITS]


def _source_files(module_name: str) -> list[tuple[str, Path]]:
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:depth]))
        file = getattr(module, "__file__", None)
        if module is None or isinstance(file, str):
            break
    if module is None or not isinstance(file, str):  # nothing imported, or namespaces down to a built-in module
        return []
    path = Path(file)
    if not hasattr(module, "__path__"):
        return [(path.name, path)]
    root = path.parent
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]  # compiled, not shipped
        files += [Path(folder) / name for name in names if not name.endswith(".pyc")]
    return sorted((file.relative_to(root).as_posix(), file) for file in files)
