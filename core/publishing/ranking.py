"""Rankings no stronger than the data: a score per entry with its stratified t interval, ranks shared by the entries
that Holm-corrected paired tests cannot separate, and scenario wins counted only where significant
(docs/leaderboard.md, How entries are ranked)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Mapping, Sequence

import numpy as np

ALPHA = 0.05  # the family-wise error rate of each family of comparisons
POWER = 0.8  # what `seeds_needed` asks of a test of the leading pair

# values[entry][scenario][seed]: one run's value of the ranking metric.
Values = Mapping[str, Mapping[str, Mapping[int, float]]]


@dataclass(frozen=True)
class Estimate:
    """A mean, the half-width of its 95% interval and the two-sided p-value of its being zero (NaN: none)."""

    mean: float
    half: float
    p: float = math.nan


@dataclass(frozen=True)
class Ranked:
    """One entry's line in a suite's summary."""

    entry: str
    rank: int
    score: Estimate
    delta: Estimate | None  # the paired difference from the suite's reference (None: no reference ran)
    wins: int  # scenarios where it is significantly better than every other entry
    scenarios: int


@dataclass(frozen=True)
class ScenarioRanked:
    """One entry's line in one scenario's table."""

    entry: str
    rank: int
    value: Estimate
    delta: Estimate | None
    win: bool


@dataclass(frozen=True)
class SuiteRanking:
    entries: list[Ranked]  # by rank, then score (best first), then name
    scenarios: dict[str, list[ScenarioRanked]]
    leaders_separated: bool | None  # whether the two best scores differ significantly (None: fewer than two)
    seeds_needed: int | None  # seeds per scenario for `POWER` to separate them, where they are not (None: no estimate)


def stratified(samples: Sequence[np.ndarray]) -> tuple[float, float, float]:
    """The mean of the strata's means, its standard error and its Welch–Satterthwaite degrees of freedom (NaN where a
    stratum has fewer than two values)."""
    strata = len(samples)
    mean = sum(float(np.mean(s)) for s in samples) / strata
    if any(len(s) < 2 for s in samples):
        return mean, math.nan, math.nan
    parts = [float(np.var(s, ddof=1)) / len(s) / strata**2 for s in samples]
    variance = sum(parts)
    if variance == 0:
        return mean, 0.0, math.inf
    dof = variance**2 / sum(part**2 / (len(s) - 1) for part, s in zip(parts, samples))
    return mean, math.sqrt(variance), dof


def estimate(samples: Sequence[np.ndarray]) -> Estimate:
    """`stratified`'s mean as an `Estimate`."""
    from scipy import stats

    mean, error, dof = stratified(samples)
    if math.isnan(error):
        return Estimate(mean, math.nan)
    if error == 0:
        return Estimate(mean, 0.0, 1.0 if mean == 0 else 0.0)
    return Estimate(mean, float(stats.t.ppf(1 - ALPHA / 2, dof)) * error,
                    float(2 * stats.t.sf(abs(mean) / error, dof)))


def holm(p_values: Sequence[float]) -> list[bool]:
    """Which hypotheses Holm's step-down method rejects at family-wise level `ALPHA` (NaN: never rejected)."""
    order = sorted(range(len(p_values)), key=lambda i: (math.isnan(p_values[i]), p_values[i]))
    rejected = [False] * len(p_values)
    for step, i in enumerate(order):
        if not p_values[i] <= ALPHA / (len(p_values) - step):
            break
        rejected[i] = True
    return rejected


def rank_suite(values: Values, scenarios: Sequence[str], higher: bool, reference: str | None) -> SuiteRanking:
    """Rank a suite's entries by their ``values``, every Δ measured against ``reference`` (None: no Δ)."""
    sign = 1.0 if higher else -1.0
    entries = sorted(values)
    ran = {e: [s for s in scenarios if values[e].get(s)] for e in entries}
    scores = {e: estimate([_array(values[e][s].values()) for s in ran[e]]) for e in entries}

    def paired(a: str, b: str, only: Sequence[str] | None = None) -> Estimate:
        samples = differences(values, a, b, only or scenarios)
        return estimate(samples) if samples else Estimate(math.nan, math.nan)

    better = _significantly_better(entries, paired, sign)
    ranks = {e: 1 + sum((a, e) in better for a in entries) for e in entries}
    per_scenario = {s: _rank_scenario(s, [e for e in entries if s in ran[e]], values, paired, sign, reference)
                    for s in scenarios}
    wins = {e: sum(row.win for rows in per_scenario.values() for row in rows if row.entry == e) for e in entries}
    has_reference = reference in values
    summary = [Ranked(e, ranks[e], scores[e], paired(e, reference) if has_reference else None, wins[e], len(ran[e]))
               for e in entries]
    summary.sort(key=lambda r: (r.rank, -sign * _or_worst(r.score.mean), r.entry))
    separated, needed = None, None
    by_score = sorted(entries, key=lambda e: (-sign * _or_worst(scores[e].mean), e))
    if len(by_score) >= 2:
        first, second = by_score[:2]
        separated = (first, second) in better
        if not separated:
            needed = _seeds_needed(values, first, second, scenarios, len(entries))
    return SuiteRanking(summary, per_scenario, separated, needed)


def differences(values: Values, a: str, b: str, scenarios: Sequence[str]) -> list[np.ndarray]:
    """Per scenario both ran, ``a``'s value minus ``b``'s on each seed both ran (the same requests)."""
    samples = []
    for s in scenarios:
        seeds = sorted(set(values[a].get(s, {})) & set(values[b].get(s, {})))
        samples.append(_array(values[a][s][k] - values[b][s][k] for k in seeds))
    return [sample for sample in samples if len(sample)]


def _array(values) -> np.ndarray:
    array = np.fromiter((float(v) for v in values), dtype=float)
    return array[~np.isnan(array)]


def _or_worst(mean: float) -> float:
    return -math.inf if math.isnan(mean) else mean


def _significantly_better(entries: Sequence[str], paired, sign: float) -> set[tuple[str, str]]:
    """The ordered pairs (a, b) where a is significantly better than b, Holm-corrected over all pairs."""
    pairs = list(combinations(entries, 2))
    differences = [paired(a, b) for a, b in pairs]
    rejected = holm([d.p for d in differences])
    return {(a, b) if sign * difference.mean > 0 else (b, a)
            for (a, b), difference, significant in zip(pairs, differences, rejected) if significant}


def _rank_scenario(scenario: str, entries: list[str], values: Values, paired, sign: float, reference: str | None
                   ) -> list[ScenarioRanked]:
    better = _significantly_better(entries, lambda a, b: paired(a, b, [scenario]), sign)
    rows = []
    for e in entries:
        ranked = estimate([_array(values[e][scenario].values())])
        delta = paired(e, reference, [scenario]) if reference in entries else None
        win = len(entries) > 1 and all((e, other) in better for other in entries if other != e)
        rows.append(ScenarioRanked(e, 1 + sum((a, e) in better for a in entries), ranked, delta, win))
    rows.sort(key=lambda r: (r.rank, -sign * _or_worst(r.value.mean), r.entry))
    return rows


def _seeds_needed(values: Values, first: str, second: str, scenarios: Sequence[str], n_entries: int) -> int | None:
    """Seeds per scenario for a Bonferroni-level paired test to separate ``first`` from ``second`` with probability
    `POWER`, were the observed difference real (normal approximation); None where it is zero or its spread unknown."""
    from scipy import stats

    samples = differences(values, first, second, scenarios)
    if not samples or any(len(d) < 2 for d in samples):
        return None
    difference = sum(float(np.mean(d)) for d in samples) / len(samples)
    spread = math.sqrt(sum(float(np.var(d, ddof=1)) for d in samples)) / len(samples)  # one seed per scenario
    if difference == 0 or spread == 0:
        return None
    level = ALPHA / (n_entries * (n_entries - 1) / 2)
    z = stats.norm.ppf(1 - level / 2) + stats.norm.ppf(POWER)
    return max(2, math.ceil((z * spread / abs(difference)) ** 2))
