"""A suite's upper bounds on its leaderboard section (docs/bounds.md): the bound per scenario beside the best entry,
and each entry's score normalised between the suite's ``floor`` allocator (0) and the bound (1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from dcbench.publishing.ranking import Estimate, estimate
from dcbench.registry import get_registry
from dcbench.running.stats import format_ci

BOUNDS = "bounds"
NORMALISED_HOW = "the mean over scenarios of the mean over seeds, with its 95% interval computed as the Score's."


# A ranking metric that is one minus a bounded one: the bound on this is one minus that one's.
COMPLEMENTS = {"blocking_probability": "acceptance_ratio"}


def read_bounds(root: Path, suite: str, metric: str) -> dict[tuple[str, int], float]:
    """The bound on ``metric`` per (scenario, seed) that `dcbench bound` wrote; empty where none was computed."""
    path = root / BOUNDS / suite / "bounds.parquet"
    if not path.is_file():
        return {}
    import pyarrow.parquet as pq

    bounds = {}
    for row in pq.read_table(path).to_pylist():
        if row.get("metric") == metric:
            bounds[(row["scenario"], int(row["seed"]))] = float(row["bound"])
        elif metric in COMPLEMENTS and row.get("metric") == COMPLEMENTS[metric]:
            bounds[(row["scenario"], int(row["seed"]))] = 1.0 - float(row["bound"])
    return bounds


def normalised(values: dict[str, dict[tuple[str, int], float]], bounds: dict[tuple[str, int], float],
               floor: str) -> dict[str, Estimate]:
    """Each entry's (value − floor's) / (bound − floor's) per (scenario, seed), averaged as the Score is."""
    base = values.get(floor, {})
    scores = {}
    for spec, by_run in values.items():
        by_scenario: dict[str, list[float]] = {}
        for key, value in by_run.items():
            if key in bounds and key in base and abs(bounds[key] - base[key]) > 1e-12:
                by_scenario.setdefault(key[0], []).append((value - base[key]) / (bounds[key] - base[key]))
        if by_scenario:
            scores[spec] = estimate([np.asarray(parts) for parts in by_scenario.values()])
    return scores


@dataclass(frozen=True)
class BoundSummary:
    """A section's bounds as its pages show them."""

    rows: list[tuple[str, float, str, float, float]]  # (scenario, bound, best entry, its mean, gap), over seeds
    floor: str | None  # the entry that scores 0 (None: none ran)
    scores: list[tuple[str, Estimate]]  # each entry's `normalised` score, best first


def bound_summary(root: Path, suite_name: str, metric: str, higher: bool,
                  submissions: Sequence[Any]) -> BoundSummary | None:
    """A section's bounds: None without bounds on ``metric`` for a registered suite."""
    suite = get_registry().entries("suite").get(suite_name)
    bounds = read_bounds(root, suite_name, metric) if suite is not None else {}
    if not bounds:
        return None
    values: dict[str, dict[tuple[str, int], float]] = {}
    for submission in submissions:
        if submission.suite == suite.name:
            for row in submission.rows:
                values.setdefault(row["allocator"], {})[(row["scenario"], int(row["seed"]))] = float(row[metric])
    rows = []
    for scenario in [s.label for s in suite.scenarios]:
        seeds = [seed for (s, seed) in bounds if s == scenario]
        if not seeds:
            continue
        bound = float(np.mean([bounds[(scenario, seed)] for seed in seeds]))
        means = {spec: float(np.mean([v[(scenario, seed)] for seed in seeds])) for spec, v in values.items()
                 if all((scenario, seed) in v for seed in seeds)}
        if means:
            best = max(means, key=lambda spec: (means[spec] if higher else -means[spec], spec))
            rows.append((scenario, bound, best, means[best], abs(bound - means[best])))
    floor = suite.floor if suite.floor in values else next(  # the spec itself, else the first of its plugin's
        (spec for spec in sorted(values) if suite.floor and spec.split(":")[0] == suite.floor), None)
    scores = normalised(values, bounds, floor) if floor is not None else {}
    return BoundSummary(rows=rows, floor=floor, scores=sorted(scores.items(), key=lambda s: -s[1].mean))


def bound_lines(summary: BoundSummary | None, name: Callable[[str], str] = str) -> list[str]:
    """The Markdown of a section's bounds (`bound_summary`): nothing where it is None."""
    if summary is None:
        return []
    lines = ["Bound ([docs/bounds.md](../docs/bounds.md)): the value no allocator can beat on these requests, "
             "though it may be loose; mean over seeds, and the best entry's gap to it.", "",
             "| scenario | bound | best entry | its mean | gap |",
             "|---|---:|---|---:|---:|"]
    lines += [f"| {scenario} | {bound:.3f} | {name(best)} | {mean:.3f} | {gap:.3f} |"
              for scenario, bound, best, mean, gap in summary.rows]
    if summary.scores:
        lines += ["", f"Normalised score: {name(summary.floor)} = 0, the bound = 1; {NORMALISED_HOW}",
                  "", "| entry | normalised score |", "|---|---:|"]
        lines += [f"| {name(spec)} | {format_ci(score.mean, score.half)} |" for spec, score in summary.scores]
    return lines + [""]
