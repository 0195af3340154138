"""A sweep summary's numbers, checked: each value in its column's range (`values_problem`), each run's counts
consistent (`counts_problem`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from dcbench.spec import LARGEST_INTEGER

# How far a share may stray past 0 and 1 by rounding (a committed link utilisation, a mean of 25, is -7.6e-18).
ROUNDING = 1e-9


@dataclass(frozen=True)
class ValueRange:
    """What a summary column's values may be: ``low`` to ``high``, NaN (a metric with nothing to measure) or not,
    whole or not, with ``slack`` for rounding; never ±inf."""

    what: str
    low: float = -math.inf
    high: float = math.inf
    nan: bool = True
    whole: bool = False
    slack: float = 0.0

    def allowed(self, values: Any) -> Any:
        import numpy as np

        with np.errstate(invalid="ignore"):
            nan = np.isnan(values)
            within = np.isfinite(values) & (values >= self.low - self.slack) & (values <= self.high + self.slack)
            if self.whole:
                within &= np.floor(values) == values
        return within | nan if self.nan else within


SHARE = ValueRange("a share from 0 to 1, or NaN", 0, 1, slack=ROUNDING)
UTILISATION = ValueRange("a utilisation from 0 to 1, or NaN", 0, 1, slack=ROUNDING)
COUNT = ValueRange(f"a whole number from 0 to {LARGEST_INTEGER:,}", 0, LARGEST_INTEGER, nan=False, whole=True)
AMOUNT = ValueRange("a finite number of at least 0, or NaN", 0)
FINITE = ValueRange("a finite number, or NaN")
# A summary column's range by its name (first full match): the core's and built-in metrics' columns, and the
# conventions third-party metrics follow. Any other column is a finite number, or NaN.
VALUE_RANGES: tuple[tuple[re.Pattern[str], ValueRange], ...] = tuple(
    (re.compile(pattern), value_range) for pattern, value_range in (
        (r"seed|requests|offered|accepted|invalid_allocations|accepted_size_\d+|\w+_count", COUNT),
        (r"acceptance_size_\d+|blocking_probability|packet_loss|spread_\w+|\w+_(ratio|probability|share)", SHARE),
        (r"(\w+_util|(paper_)?link_util_tier\d+)(_last\d+)?", UTILISATION),
        (r"reconfigurations_per_job|inter_rack_gbps_per_job|latency_us|servers_per_request", AMOUNT),
    ))


def value_range(column: str) -> ValueRange:
    return next((value_range for pattern, value_range in VALUE_RANGES if pattern.fullmatch(column)), FINITE)


def values_problem(table: Any) -> str | None:
    """The first number of ``table`` outside its column's `value_range`, said with its run and column, or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for field in table.schema:
        if not (pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
                or pa.types.is_boolean(field.type)):
            continue
        allowed = value_range(field.name)
        column = table.column(field.name)
        good = allowed.allowed(pc.fill_null(column.cast(pa.float64()), 0.0).to_numpy())
        good |= column.is_null().to_numpy(zero_copy_only=False)
        if not good.all():
            row = int((~good).nonzero()[0][0])
            return (f"run {table.column('run_id')[row].as_py()}: {field.name}={column[row].as_py()!r} is not "
                    f"{allowed.what}")
    return None


SIZE_BRACKETS = range(1, 9)  # acceptance_size_k and accepted_size_k (`dcbench.plugins.metrics.acceptance`)
BRACKETS = "accepted_size_1..8"


def counts_problem(table: Any) -> str | None:
    """The first row of ``table`` whose counts disagree, said with its run and columns, or None: ``accepted`` <=
    ``offered`` <= ``requests``, and the ratios over the M measured requests (``acceptance_ratio`` is A / M, A the sum
    of ``accepted_size_1..8``) give back whole numbers of requests, at most the core's counts."""
    import numpy as np

    run_ids = table.column("run_id").to_pylist() if "run_id" in table.column_names else None
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for bad, said in _count_rules(_Cells(table)):
            rows = np.flatnonzero(bad)
            if rows.size:
                row = int(rows[0])
                return f"run {run_ids[row] if run_ids else row}: {said(row)}"
    return None


class _Cells:
    def __init__(self, table: Any) -> None:
        self.table = table

    def has(self, *columns: str) -> bool:
        return all(column in self.table.column_names for column in columns)

    def __getitem__(self, column: str) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        return pc.fill_null(self.table.column(column).cast(pa.float64()), math.nan).to_numpy()

    def present(self, *columns: str) -> Any:
        import numpy as np

        present = np.ones(self.table.num_rows, dtype=bool)
        for column in columns:
            present &= ~self.table.column(column).is_null().to_numpy(zero_copy_only=False)
        return present


def _count_rules(cells: _Cells) -> Iterator[tuple[Any, Callable[[int], str]]]:
    """Each rule as (rows breaking it, what to say of such a row), in turn: later rules rely on earlier ones."""
    yield from _whole_run_rules(cells)
    shares = [f"acceptance_size_{k}" for k in SIZE_BRACKETS]
    counts = [f"accepted_size_{k}" for k in SIZE_BRACKETS]
    if cells.has("acceptance_ratio", "offered", "accepted", *counts, *shares):
        yield from _measured_rules(cells, cells.present("acceptance_ratio", "offered", "accepted", *counts, *shares),
                                   counts, shares)


def _whole_run_rules(cells: _Cells) -> Iterator[tuple[Any, Callable[[int], str]]]:
    for low, high in (("accepted", "offered"), ("offered", "requests")):
        if cells.has(low, high):
            below, above = cells[low], cells[high]
            yield (cells.present(low, high) & (below > above),
                   lambda r, low=low, high=high, below=below, above=above:
                   f"{low}={_n(below[r])} is more than {high}={_n(above[r])}")
    if cells.has("offered", "accepted", "invalid_allocations"):
        refused, invalid = cells["offered"] - cells["accepted"], cells["invalid_allocations"]
        yield (cells.present("offered", "accepted", "invalid_allocations") & (invalid > refused),
               lambda r: f"invalid_allocations={_n(invalid[r])} is more than the {_n(refused[r])} requests refused "
                         "(offered - accepted)")


def _measured_rules(cells: _Cells, present: Any, counts: list[str], shares: list[str]
                    ) -> Iterator[tuple[Any, Callable[[int], str]]]:
    """The measured requests: M offered, A accepted, as the ratios give them back."""
    import numpy as np

    ratio, offered, accepted = cells["acceptance_ratio"], cells["offered"], cells["accepted"]
    accepted_k = np.stack([cells[column] for column in counts])
    total = accepted_k.sum(axis=0)  # A
    yield (present & (total > accepted),
           lambda r: f"{BRACKETS} add up to {_n(total[r])}, more than accepted={_n(accepted[r])}")
    # M: 0 where nothing was measured (the ratio is NaN), unknown (NaN) where none was accepted (the ratio is 0).
    positive = ratio > 0
    m = np.where(positive, np.rint(total / ratio), np.where(np.isnan(ratio), 0.0, np.nan))
    exact = np.where(positive, (total / m == ratio) & (m >= total) & (m <= offered), total == 0)
    yield (present & ~exact,
           lambda r: f"acceptance_ratio={float(ratio[r])!r} is not the {_n(total[r])} accepted ({BRACKETS}) over "
                     f"a whole number of measured requests of at most offered={_n(offered[r])}")
    known = ~np.isnan(m)
    yield (present & known & (m - total > offered - accepted),
           lambda r: f"acceptance_ratio={float(ratio[r])!r} leaves {_n(m[r] - total[r])} measured requests "
                     f"refused, more than offered - accepted={_n(offered[r] - accepted[r])}")
    if cells.has("blocking_probability"):
        blocking = cells["blocking_probability"]
        expected = np.where(known, (m - total) / m, 1.0)  # (M - 0) / M where none was accepted
        agrees = (blocking == expected) | (np.isnan(blocking) & np.isnan(expected))
        yield (present & cells.present("blocking_probability") & ~agrees,
               lambda r: f"blocking_probability={float(blocking[r])!r} is not {float(expected[r])!r}, the share "
                         f"refused of the measured requests that acceptance_ratio={float(ratio[r])!r} gives")
    yield from _bracket_rules(present, accepted_k, np.stack([cells[column] for column in shares]), m, offered)


def _bracket_rules(present: Any, accepted_k: Any, share_k: Any, m: Any, offered: Any
                   ) -> Iterator[tuple[Any, Callable[[int], str]]]:
    """Each bracket's share is its accepted count over a whole number of requests; those add up to M."""
    import numpy as np

    # A bracket's requests: 0 where its share is NaN, unknown (1 or more) where it is 0.
    offered_k = np.where(share_k > 0, np.rint(accepted_k / share_k), np.where(np.isnan(share_k), 0.0, np.nan))
    exact_k = np.where(share_k > 0, (accepted_k / offered_k == share_k) & (offered_k >= accepted_k), accepted_k == 0)
    broken = ~exact_k & present
    first = broken.argmax(axis=0)  # the first broken bracket of each row
    yield (broken.any(axis=0),
           lambda r: f"acceptance_size_{first[r] + 1}={float(share_k[first[r], r])!r} is not "
                     f"accepted_size_{first[r] + 1}={_n(accepted_k[first[r], r])} over a whole number of requests")
    unknown = np.isnan(offered_k).sum(axis=0)
    listed = np.nansum(offered_k, axis=0)
    known = ~np.isnan(m)
    fewest, most = np.where(known, m, 1.0), np.where(known, m, offered)
    adds_up = np.where(unknown > 0, listed + unknown <= most, (listed >= fewest) & (listed <= most))
    yield (present & ~adds_up,
           lambda r: f"the requests of acceptance_size_1..8 come to {_n(listed[r])}"
                     + (f" and {unknown[r]} bracket(s) of 1 or more" if unknown[r] else "") + ", not "
                     + (f"the {_n(m[r])} measured requests of acceptance_ratio" if known[r] else
                        f"1 to offered={_n(offered[r])} measured requests, as acceptance_ratio=0.0 says"))


def _n(value: float) -> str:
    return f"{int(value):,}" if math.isfinite(value) and value == int(value) else repr(float(value))
