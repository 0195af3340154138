"""Who and what a leaderboard entry is: its name, authors, links, kind, and what a learned one was trained on (an
allocator's plugin declares them; ``dcbench leaderboard submit --about FILE`` overrides them)."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

KINDS = ("learned", "heuristic", "paper baseline", "dcbench baseline")
FIELDS = ("name", "authors", "paper", "code", "description", "kind", "trained_on", "training_seeds")
MAX_TEXT = 200  # characters of a name, an author, a description or a trained_on
MAX_AUTHORS = 30
MAX_URL = 300
_URL = re.compile(r"https://[^\s<>\"'`]+")
_SEEDS = re.compile(r"(\d{1,18})(\.\.(\d{1,18})?)?")  # "7", "0..99" (both ends included), "1000000.." (no end)

CLEAN, ON_TEST, UNKNOWN = "clean", "trained on test seeds", "unknown"


def url_problem(value: Any, what: str) -> str | None:
    """What makes ``value`` no link: an https:// URL without spaces or quotes, at most `MAX_URL` characters."""
    if not (isinstance(value, str) and len(value) <= MAX_URL and _URL.fullmatch(value)):
        return f"{what} {str(value)[:60]!r} is not an https:// link"
    return None


def seed_ranges(texts: Iterable[str]) -> list[tuple[int, int | None]]:
    """``["0..99", "1000000.."]`` as ``[(0, 99), (1000000, None)]``; ValueError for a text not ``N``, ``A..B`` with
    A ≤ B, or ``A..``."""
    ranges = []
    for text in texts:
        match = _SEEDS.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"training seeds {str(text)[:40]!r} are not N, A..B or A..")
        low = int(match[1])
        high = None if match[2] and match[3] is None else int(match[3] or low)
        if high is not None and high < low:
            raise ValueError(f"training seeds {text!r} end before they start")
        ranges.append((low, high))
    return ranges


def about_problem(about: Any) -> str | None:
    """What is wrong with an entry's description (`FIELDS`, each optional but ``kind``), or None."""
    if not isinstance(about, Mapping):
        return "it is not a table of name, authors, paper, code, description, kind, trained_on, training_seeds"
    strays = sorted(str(key) for key in about if key not in FIELDS)
    if strays:
        return f"it has the unknown key {strays[0][:40]!r}; known: {', '.join(FIELDS)}"
    if about.get("kind") not in KINDS:
        return f"its kind {str(about.get('kind'))[:40]!r} is not one of: {', '.join(KINDS)}"
    for key in ("name", "description", "trained_on"):
        value = about.get(key)
        if value is not None and not _one_line(value):
            return f"its {key} is not one line of text of at most {MAX_TEXT} characters"
    authors = about.get("authors", [])
    if not (isinstance(authors, (list, tuple)) and len(authors) <= MAX_AUTHORS and all(map(_one_line, authors))):
        return f"its authors are not a list of at most {MAX_AUTHORS} names"
    for key in ("paper", "code"):
        if about.get(key) is not None:
            problem = url_problem(about[key], f"its {key}")
            if problem:
                return problem
    seeds = about.get("training_seeds")
    if seeds is not None:
        if about["kind"] != "learned":
            return "it gives training_seeds but its kind is not learned"
        try:
            if not isinstance(seeds, (list, tuple)) or not seed_ranges(seeds):
                return "its training_seeds are not a non-empty list of N, A..B or A.."
        except ValueError as exc:
            return f"its {exc}"
    return None


def _one_line(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_TEXT and value.isprintable() and value.strip() == value


def training_mark(about: Mapping[str, Any], test_seeds: Iterable[int]) -> str | None:
    """Whether a learned entry was trained on the suite's ``test_seeds``: `CLEAN` where its recorded training seeds
    miss them all, `ON_TEST` where they hit one, `UNKNOWN` where it records none; None for an entry not learned."""
    if about.get("kind") != "learned":
        return None
    if not about.get("training_seeds"):
        return UNKNOWN
    ranges = seed_ranges(about["training_seeds"])
    hit = any(low <= seed and (high is None or seed <= high) for seed in test_seeds for low, high in ranges)
    return ON_TEST if hit else CLEAN
