"""Means and 95% confidence intervals over seeds (Student's t)."""

from __future__ import annotations

import math
from typing import Iterable

# Two-sided 95% quantiles of Student's t for 1 to 30 degrees of freedom, to nine decimals (scipy.stats.t.ppf).
_T975 = (12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252,
         2.306004135, 2.262157163, 2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688,
         2.131449546, 2.119905299, 2.109815578, 2.100922040, 2.093024054, 2.085963447, 2.079613845,
         2.073873068, 2.068657610, 2.063898562, 2.059538553, 2.055529439, 2.051830516, 2.048407142,
         2.045229642, 2.042272456)
_Z975 = 1.959963984540054


def t975(dof: int) -> float:
    """The 97.5% quantile of Student's t: tabulated to 30 degrees of freedom, past that the Cornish-Fisher expansion."""
    if dof <= len(_T975):
        return _T975[dof - 1]
    z = _Z975
    return (z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * dof**3)
            + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * dof**4))


def mean_sd(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, sample standard deviation, and the number of finite values (NaN and None skipped)."""
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(finite)
    if n == 0:
        return float("nan"), float("nan"), 0
    mean = sum(finite) / n
    if n == 1:
        return mean, float("nan"), 1
    try:
        variance = sum((v - mean) ** 2 for v in finite) / (n - 1)
    except OverflowError:  # values near the largest float: a spread past it
        variance = math.inf
    return mean, math.sqrt(variance), n


def mean_ci(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, half-width of the 95% confidence interval, and the number of finite values.

    Args:
        values: The values, one per seed say; NaN and None are left out.
    Returns:
        ``(mean, half-width, n)``: the half-width is Student's t for n − 1 degrees of freedom times the standard
        error, NaN with fewer than two values; the mean is NaN with none."""
    mean, sd, n = mean_sd(values)
    if n < 2:
        return mean, float("nan"), n
    return mean, t975(n - 1) * sd / math.sqrt(n), n


def best_mean(means: Iterable[float], higher_is_better: bool) -> float:
    """The best of ``means``, those without a value (NaN: no run had one) left out; NaN if none has one."""
    finite = [m for m in means if not math.isnan(m)]
    if not finite:
        return float("nan")
    return max(finite) if higher_is_better else min(finite)


def format_ci(mean: float, half: float, digits: int = 3) -> str:
    """A mean and its confidence interval's half-width as a table shows them.

    Args:
        mean: The mean (NaN: no value).
        half: The half-width (NaN: no interval, one seed).
        digits: Decimal places of both.
    Returns:
        "0.937 ± 0.004"; "0.937" without an interval; "–" without a mean."""
    if math.isnan(mean):
        return "–"
    if math.isnan(half):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {half:.{digits}f}"
