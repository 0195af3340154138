"""Means and 95% confidence intervals over seeds (Student's t)."""

from __future__ import annotations

import math
from typing import Iterable

# Two-sided 95% quantiles of Student's t by degrees of freedom.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101,
         19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(dof: int) -> float:
    if dof in _T975:
        return _T975[dof]
    larger = [d for d in _T975 if d >= dof]
    return _T975[min(larger)] if larger else 1.960


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
    """Mean, half-width of the 95% confidence interval, and the number of finite values."""
    mean, sd, n = mean_sd(values)
    if n < 2:
        return mean, float("nan"), n
    return mean, t975(n - 1) * sd / math.sqrt(n), n


def format_ci(mean: float, half: float, digits: int = 3) -> str:
    if math.isnan(mean):
        return "–"
    if math.isnan(half):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {half:.{digits}f}"
