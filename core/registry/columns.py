"""The summary columns a metric plugin declares (``columns=[Column(...)]``), all the tools read about a column."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from dcbench.errors import short_repr
from dcbench.registry.kinds import BETTER, DEMAND_KINDS, DEMAND_KINDS_TEXT

COLUMN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
HEADING_LENGTH = 40
DESCRIPTION_LENGTH = 100


@dataclass(frozen=True)
class Column:
    """A summary column a metric plugin writes.

    Attributes:
        name: The column's name; one ``*`` may stand for letters and digits varying by topology (``link_util_tier*``).
        heading: Its name in a run's table, at most 40 characters; ``{}`` repeats what ``*`` stood for.
        better: "higher", "lower", or None for a column that only describes a run.
        demands: The demand kinds ("pool", "job") whose runs it belongs to.
        headline: Whether ``dcbench run``'s table shows it: True, or the kinds.
        ranks: Whether it ranks runs where no suite says: True, or the kinds.
        description: Its table's heading in ``dcbench report`` (at most 100 characters); None: not in reports."""

    name: str
    heading: str
    better: str | None = None
    demands: tuple[str, ...] = DEMAND_KINDS
    headline: bool | tuple[str, ...] = False
    ranks: bool | tuple[str, ...] = False
    description: str | None = None

    def is_headline(self, kind: str) -> bool:
        """Whether a run's table shows it for runs of ``kind``.

        Args:
            kind: A demand kind: "pool" or "job".
        Returns:
            True where it belongs to ``kind`` and is a headline for it."""
        return kind in self.demands and (self.headline is True or self.headline is not False and kind in self.headline)

    def ranks_kind(self, kind: str) -> bool:
        """Whether it ranks runs of ``kind``.

        Args:
            kind: A demand kind: "pool" or "job".
        Returns:
            True where it belongs to ``kind`` and ranks it."""
        return kind in self.demands and (self.ranks is True or self.ranks is not False and kind in self.ranks)

    def matches(self, columns: Iterable[str]) -> list[tuple[str, str]]:
        """(column, heading) of each of ``columns`` this declares, in their order.

        Args:
            columns: Summary column names (a run's, say).
        Returns:
            Each one this declares, with its heading's ``{}`` filled in."""
        if "*" not in self.name:
            return [(self.name, self.heading)] if self.name in columns else []
        start, end = (re.escape(part) for part in self.name.split("*"))
        pattern = re.compile(f"{start}([A-Za-z0-9]+){end}")
        return [(column, self.heading.replace("{}", found[1]))
                for column in columns if (found := pattern.fullmatch(column))]


def columns_problem(columns: Any) -> str | None:
    if not isinstance(columns, (list, tuple)):
        return f"columns={short_repr(columns)} is not a list of dcbench.Column"
    for column in columns:
        if not isinstance(column, Column):
            return f"columns holds {short_repr(column)}, not a dcbench.Column"
        problem = _column_problem(column)
        if problem is not None:
            return f"column {short_repr(column.name)} {problem}"
    return None


def _column_problem(column: Column) -> str | None:
    if (not isinstance(column.name, str) or column.name.count("*") > 1
            or not COLUMN_NAME.fullmatch(column.name.replace("*", "x"))):
        return "is no summary column's name (letters, digits and '_', starting with a letter; one '*' where it varies)"
    if not _one_line(column.heading, HEADING_LENGTH):
        return f"has heading {short_repr(column.heading)}, not one line of 1 to {HEADING_LENGTH} characters"
    if column.better not in BETTER:
        return f"has better={short_repr(column.better)}; give 'higher', 'lower' or None"
    if not _kinds(column.demands) or isinstance(column.demands, str):
        return f"has demands={short_repr(column.demands)}, not a tuple of {DEMAND_KINDS_TEXT}"
    for flag in ("headline", "ranks"):
        value = getattr(column, flag)
        if not isinstance(value, bool) and not _kinds(value):
            return f"has {flag}={short_repr(value)}; give True, False or a tuple of {DEMAND_KINDS_TEXT}"
    if column.description is not None and not _one_line(column.description, DESCRIPTION_LENGTH):
        return (f"has description {short_repr(column.description)}, not one line of 1 to {DESCRIPTION_LENGTH} "
                "characters (or None)")
    return None


def _one_line(text: Any, limit: int) -> bool:
    return isinstance(text, str) and bool(text.strip()) and text.isprintable() and len(text) <= limit


def _kinds(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(kind in DEMAND_KINDS for kind in value)


def ranking_columns(declared: Iterable[Column]) -> dict[str, tuple[str, bool]]:
    """By demand kind, the first declared column that ranks it, and whether higher is better."""
    ranking: dict[str, tuple[str, bool]] = {}
    for column in declared:
        for kind in DEMAND_KINDS:
            if kind not in ranking and column.ranks_kind(kind) and "*" not in column.name:
                ranking[kind] = (column.name, column.better != "lower")
    return ranking


def demand_kind(row: Any, columns: Sequence[Column]) -> str:
    """A run's demand kind: the first but "pool" with a column of its own in the ``row`` (even NaN), else "pool"."""
    for kind in DEMAND_KINDS[1:]:
        if any(column.demands == (kind,) and "*" not in column.name and row.get(column.name) is not None
               for column in columns):
            return kind
    return DEMAND_KINDS[0]
