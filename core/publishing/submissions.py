"""What a leaderboard submission may hold, checked alike by `submit` and every rebuild: plain specs of a small
alphabet (no path, Markdown or HTML) and a folder named from validated names and a digest."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

from dcbench.errors import SpecError, cut
from dcbench.spec import Spec, bind, resolved_spec

# What a submitted spec may hold: plugin names, keywords and resolved values (1e-05, 1x4, yes), ':', ',' and '=';
# no path, space, quote, control character, Markdown or HTML.
SPEC_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_.-+:,=")
MAX_SPEC_LENGTH = 512  # the longest committed spec (a trace workload, with its file and digest) has 287
MAX_LABEL_LENGTH = 200  # a scenario's label
# A column's name, as the runner requires of a metric's (`dcbench.running.runner.COLUMN_NAME`).
COLUMN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# A submission's folder: `submission_name`'s names, and every one committed.
SUBMISSION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+\-]*")
MAX_NAME_LENGTH = 120  # of a submission's folder; a file system allows 255 bytes
SPECS = ("allocator", "topology", "workload")


def shown(text: Any, limit: int = 80) -> str:
    """``text`` for a one-line message: its repr (a newline shows as \\n), cut at ``limit`` characters."""
    return cut(repr(text), limit)


def spec_problem(kind: str, text: Any) -> str | None:
    """Why ``text`` cannot be a submitted ``kind`` spec, or None."""
    if not isinstance(text, str):
        return f"{kind} {shown(text)} is not a spec"
    if len(text) > MAX_SPEC_LENGTH:
        return f"{kind} {shown(text)} has {len(text):,} characters, more than the {MAX_SPEC_LENGTH} a spec may have"
    if kind == "allocator" and _names_checkpoint(text):  # first: its path's '/' would be refused with no advice
        return (f"allocator {shown(text)} names a checkpoint file, which no one else has to run it again; "
                "ship the checkpoint in a plugin (what its allocator loads without checkpoint=) and submit runs "
                "made with that")
    # a trace workload names its file, relative to where runs are replayed: '/' there, never at a path's start
    allowed = SPEC_CHARACTERS | {"/"} if kind == "workload" else SPEC_CHARACTERS
    stray = next((character for character in text if character not in allowed), None)
    if stray is None and ("=/" in text or "//" in text or text.startswith("/")):
        return f"{kind} {shown(text)} names an absolute path; a submitted spec names files relative to its folder"
    if stray is not None:
        return (f"{kind} {shown(text)} holds {stray!r}; a submitted spec holds only letters, digits and "
                "_ . - + : , =")
    if ".." in text:
        return f"{kind} {shown(text)} holds '..'; a submitted spec names no path"
    try:
        Spec.parse(text)
    except SpecError as exc:
        return f"{kind} {shown(text)} is no spec ({exc})"
    return None


def _names_checkpoint(text: str) -> bool:
    try:
        return "checkpoint" in Spec.parse(text).kwargs
    except SpecError:
        return False


def name_problem(kind: str, text: Any) -> str | None:
    """Why ``text`` cannot be a ``kind``'s bare name (a suite's), or None."""
    problem = spec_problem(kind, text)
    if problem is None and Spec.parse(text) != Spec(text):
        return f"{kind} {shown(text)} is no plain name"
    return problem


def label_problem(text: Any) -> str | None:
    """Why ``text`` cannot be a scenario's label, or None: one printable line of at most `MAX_LABEL_LENGTH`."""
    if not isinstance(text, str) or not text.isprintable() or not text:
        return f"scenario {shown(text)} is no printable label"
    if len(text) > MAX_LABEL_LENGTH:
        return f"scenario {shown(text)} is longer than the {MAX_LABEL_LENGTH} characters a label may have"
    return None


def names_problem(suite: Any, columns: list[str], rows: list[dict[str, Any]]) -> str | None:
    """What is wrong with a submission's names (suite, columns, each row's specs and label), or None."""
    problem = name_problem("suite", suite)
    if problem is not None:
        return problem
    strange = next((column for column in columns if not COLUMN_NAME.fullmatch(column)), None)
    if strange is not None:
        return (f"column {shown(strange)} is no column name (letters, digits and '_', starting with a letter, as "
                "a metric's)")
    checked: set[tuple[str, str]] = set()
    for row in rows:
        for kind in (*SPECS, "scenario"):
            if (kind, row[kind]) not in checked:
                problem = label_problem(row[kind]) if kind == "scenario" else spec_problem(kind, row[kind])
                if problem is not None:
                    return f"run {row['run_id']}: {problem}"
                checked.add((kind, row[kind]))
    return None


def registered_problem(allocator: str, registry: Any) -> str | None:
    """Why ``allocator`` is no installed plugin's, written as its runs write it (qualified if third-party), or None."""
    spec = Spec.parse(allocator)
    entry = registry.entries("allocator").get(spec.name)
    if entry is None:
        return (f"allocator {spec.name!r} is no plugin installed here, so its runs could never be verified; "
                "install the plugin that registers it (`dcbench list allocators` lists those installed)")
    try:
        resolved = resolved_spec(entry.name, bind(entry.name, entry.params, spec))
    except SpecError as exc:
        return f"allocator {allocator!r} does not bind to its plugin's parameters ({exc})"
    if resolved != allocator:
        return f"allocator {allocator!r} is not written as its runs write it ({resolved!r})"
    return None


def submission_name(suite: str, allocators: list[str], run_ids: list[str], version: str) -> str:
    """A new submission's folder name: suite and allocator plugins, cut to `MAX_NAME_LENGTH`, then a digest of its
    runs, which keeps it unique."""
    from dcbench.running.runner import run_hash

    plugins = "-".join(sorted({Spec.parse(allocator).name for allocator in allocators}))
    digest = run_hash(suite, plugins, json.dumps(sorted(run_ids)), 0, 0, version)[:8]
    readable = f"{suite}--{plugins}"[: MAX_NAME_LENGTH - len(digest) - 2].rstrip("-.")
    return f"{readable}--{digest}"


def folder_problem(folder: Path, submissions: Path) -> str | None:
    """Why ``folder`` cannot be a submission's folder right below ``submissions``, or None."""
    name = folder.name
    if not SUBMISSION_NAME.fullmatch(name) or ".." in name or len(name) > MAX_NAME_LENGTH:
        return f"its name {shown(name)} is none that `dcbench leaderboard submit` gives"
    if folder.is_symlink() or (folder / "summary.parquet").is_symlink():
        return "it or its summary.parquet is a link; a submission is a folder of its own"
    if folder.resolve().parent != submissions.resolve():
        return f"it lies outside '{submissions}'"
    return None
