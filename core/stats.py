"""Means and 95% confidence intervals over seeds (Student's t)."""

from __future__ import annotations

import math
from typing import Iterable

# Two-sided 95% quantiles of Student's t by degrees of freedom, 1 to 30.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
_Z975 = 1.959963984540054


def t975(dof: int) -> float:
    """The 97.5% quantile of Student's t: tabulated up to 30 degrees of
    freedom, past that the Cornish-Fisher expansion about the normal
    quantile (within 2e-5 of the exact value from 31 on)."""
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
