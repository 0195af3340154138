"""The tiered papers' headline claims about the learned agent, measured on leaderboard submissions.

Each claim of the journal paper (J: Shabka & Zervas, JOCN 2023) and the workshop paper (W: NeurIPS 2021
ML for Systems) about `gnn_ppo` against the best of its baselines (Tetris, NALB, NULB, random, each
topology's best by mean) gets the paper's number, dcbench's with a 95 % interval over the test seeds,
and a verdict no stronger than the interval (see docs/reproduction-nara2022.md#the-papers-claims).
Reads the submissions of `nara2022` and `nara2022-large` under a leaderboard folder:

    python docs/studies/paper_claims.py [--leaderboard leaderboard]

Intervals: relative differences between two allocators on one topology are paired by seed (the same
request sequence), a Student t interval of the per-seed ratios; between the 64- and 1,024-server
suites (different sequences) a delta-method interval of the ratio of means.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from scipy import stats

AGENT = "gnn_ppo"
BASELINES = ("tetris:penalty=0.9,scale=10,fit_last=no", "nalb:candidates=16", "nulb:candidates=16", "random")
JOURNAL_TOPOLOGIES = tuple(f"{n}-1x{r}" for n in (8, 16, 32) for r in (4, 8, 16))  # the journal drops 1:1
WORKSHOP_TOPOLOGIES = tuple(f"{n}-1x{r}" for n in (8, 16, 32) for r in (1, 4, 8, 16))
METRICS = {"acceptance": "acceptance_ratio", "CPU": "cpu_util", "memory": "mem_util"}


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def percent(self) -> str:
        return f"{100 * self.mean:+.1f} % [{100 * self.low:+.1f}, {100 * self.high:+.1f}]"


def read_suite(leaderboard: Path, suite: str) -> dict[tuple[str, str], dict[int, dict]]:
    """Rows of a suite's submissions by (allocator, scenario), then seed; a run in two submissions once."""
    rows: dict[tuple[str, str], dict[int, dict]] = {}
    for folder in sorted((leaderboard / "submissions").iterdir()):
        if json.loads((folder / "submission.json").read_text())["suite"] != suite:
            continue
        for row in pq.read_table(folder / "summary.parquet").to_pylist():
            rows.setdefault((row["allocator"], row["scenario"]), {})[row["seed"]] = row
    return rows


def values(rows, allocator: str, scenario: str, column: str) -> np.ndarray:
    by_seed = rows[(allocator, scenario)]
    return np.array([by_seed[seed][column] for seed in sorted(by_seed)], dtype=float)


def best_baseline(rows, scenario: str, column: str) -> str:
    return max(BASELINES, key=lambda allocator: values(rows, allocator, scenario, column).mean())


def t_half(sample: np.ndarray) -> float:
    """Half the width of the 95 % t interval of a sample's mean."""
    return stats.t.ppf(0.975, len(sample) - 1) * sample.std(ddof=1) / math.sqrt(len(sample))


def paired_ratio(ours: np.ndarray, theirs: np.ndarray) -> Interval:
    """ours / theirs - 1, per seed, with a t interval."""
    ratio = ours / theirs - 1
    return Interval(ratio.mean(), ratio.mean() - t_half(ratio), ratio.mean() + t_half(ratio))


def ratio_of_means(ours: np.ndarray, theirs: np.ndarray) -> Interval:
    """mean(ours) / mean(theirs) - 1 for independent samples: delta method, t with 2n - 2 df."""
    a, b = ours.mean(), theirs.mean()
    se = math.sqrt(ours.var(ddof=1) / len(ours) / b**2 + a**2 * theirs.var(ddof=1) / len(theirs) / b**4)
    half = stats.t.ppf(0.975, len(ours) + len(theirs) - 2) * se
    return Interval(a / b - 1, a / b - 1 - half, a / b - 1 + half)


def against_best(rows, scenario: str, column: str, baseline_scenario: str | None = None) -> Interval:
    """The agent on ``scenario`` against the best baseline on ``baseline_scenario`` (the same by default)."""
    where = baseline_scenario or scenario
    return paired_ratio(values(rows, AGENT, scenario, column),
                        values(rows, best_baseline(rows, where, column), where, column))


def up_to(claimed: float, found: Interval) -> str:
    """A claim of an improvement of up to ``claimed``: the best topology's interval against it."""
    if found.low <= 0:
        return "does not hold"
    return "holds" if found.high >= claimed else "partly: a smaller gain"


def near(claimed: float, found: Interval) -> str:
    """A claim of a number: the interval holds it, or is on one side."""
    if found.low <= claimed <= found.high:
        return "holds"
    if found.low > claimed:
        return "holds, and larger" if claimed >= 0 else "does not hold: larger"
    return "partly: same sign, smaller" if found.low > 0 else "does not hold"


def within(worst: float, found: list[Interval]) -> str:
    """A claim that the agent loses at most ``worst`` (a negative share) wherever it is compared."""
    kept = sum(interval.high >= worst for interval in found)
    if kept == len(found):
        return "holds"
    return f"partly: {kept} of {len(found)}" if kept else "does not hold"


def papers_tier3(rows, scenario: str) -> np.ndarray:
    """The agent's tier-3 link utilisation as the papers count it (free share), from runs older than its column too."""
    if "paper_link_util_tier3" in next(iter(rows[(AGENT, scenario)].values())):
        return values(rows, AGENT, scenario, "paper_link_util_tier3")
    return 1 - values(rows, AGENT, scenario, "link_util_tier3_last25")


def rises(start: np.ndarray, end: np.ndarray) -> str:
    """The tier-3 claim: from about 0.2 to about 0.8 (within 0.1 of each counts as about)."""
    if abs(start.mean() - 0.2) <= 0.1 and abs(end.mean() - 0.8) <= 0.1:
        return "holds"
    rising = stats.ttest_ind(end, start, equal_var=False, alternative="greater").pvalue < 0.05
    return f"partly: rises, from {start.mean():.2f}" if rising else "does not hold"


def claims(leaderboard: Path) -> list[tuple[str, str, str, str, str]]:
    """(paper, claim, paper's number, dcbench's, verdict) per claim."""
    small, large = read_suite(leaderboard, "nara2022"), read_suite(leaderboard, "nara2022-large")
    found = []
    for paper, topologies, claimed in (("J", JOURNAL_TOPOLOGIES, (0.190, 0.244, 0.217)),
                                       ("W", WORKSHOP_TOPOLOGIES, (0.220, 0.426, 0.226))):
        for (name, column), number in zip(METRICS.items(), claimed):
            gains = {t: against_best(small, t, column) for t in topologies}
            best = max(gains, key=lambda t: gains[t].mean)
            found.append((paper, f"{name}: up to {100 * number:.1f} % above the best baseline ({len(topologies)} "
                                 f"topologies)", f"+{100 * number:.1f} %",
                          f"{gains[best].percent()} at {best}", up_to(number, gains[best])))
        wins = [against_best(small, t, "acceptance_ratio") for t in topologies]
        above = sum(w.mean > 0 for w in wins)
        significant = sum(w.low > 0 for w in wins)
        verdict = ("holds" if significant == len(wins) else
                   f"partly: significantly better on {significant}" if significant else "does not hold")
        found.append((paper, "acceptance: better than every baseline on every topology", f"{len(wins)} of "
                      f"{len(wins)}", f"above on {above}, significantly on {significant}", verdict))
    three = against_best(small, "8-1x16", "acceptance_ratio", "32-1x16")
    found.append(("J", "the agent on 8 channels 1:16 against the best baseline on 32 channels 1:16 (3× less "
                       "network)", "-1 %", three.percent(), within(-0.01, [three])))
    five = [against_best(small, f"{n}-1x16", "acceptance_ratio", f"{n}-1x1") for n in (8, 16, 32)]
    found.append(("W", "the agent at 1:16 against the best baseline at 1:1, same server links (5.3× less "
                       "upper-tier network)", "-6 % to +10 %",
                  ", ".join(f"{n}: {i.percent()}" for n, i in zip((8, 16, 32), five)), within(-0.06, five)))
    for (name, column), number in zip(METRICS.items(), (0.056, 0.034, 0.065)):  # the journal's Table 3
        deltas = [ratio_of_means(values(large, AGENT, t, column), values(small, AGENT, t, column))
                  for t in JOURNAL_TOPOLOGIES]
        mean = np.mean([d.mean for d in deltas])
        half = math.sqrt(sum(((d.high - d.low) / 2) ** 2 for d in deltas)) / len(deltas)
        average = Interval(mean, mean - half, mean + half)
        found.append(("J", f"{name}: the agent on 1,024 servers against itself on 64, averaged over "
                           f"{len(deltas)} topologies", f"{100 * number:+.1f} %", average.percent(),
                      near(number, average)))
    deltas = {t: ratio_of_means(values(large, AGENT, t, "acceptance_ratio"), values(small, AGENT, t,
                                                                                      "acceptance_ratio"))
              for t in WORKSHOP_TOPOLOGIES}
    best, worst = max(deltas, key=lambda t: deltas[t].mean), min(deltas, key=lambda t: deltas[t].mean)
    found.append(("W", "acceptance on 1,024 servers against 64: best and worst case", "+16 %, -3 %",
                  f"{deltas[best].percent()} at {best}, {deltas[worst].percent()} at {worst}",
                  within(-0.03, [deltas[worst]])))
    tier3 = {t: papers_tier3(small, t) for t in ("8-1x16", "32-1x4")}
    found.append(("J", "the agent's tier-3 link utilisation (the papers' statistic) from the most to the least "
                       "network-constrained topology", "≈ 0.2 → ≈ 0.8",
                  " → ".join(f"{v.mean():.2f} ± {t_half(v):.2f}" for v in tier3.values()) + " (8-1x16 → 32-1x4)",
                  rises(tier3["8-1x16"], tier3["32-1x4"])))
    local = [values(small, AGENT, t, "spread_server") + values(small, AGENT, t, "spread_rack")
             for t in JOURNAL_TOPOLOGIES]
    share = min(v.mean() for v in local)
    found.append(("J", "most accepted requests are rack-local on every topology", "a majority",
                  f"at least {share:.2f} of accepted requests on one rack", "holds" if share > 0.5 else
                  "does not hold"))
    return found


def table(leaderboard: Path) -> str:
    lines = ["| paper | claim | paper's | dcbench (95 % interval) | verdict |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in claims(leaderboard)]
    return "\n".join(lines) + "\n"


def scale_up(leaderboard: Path) -> str:
    """The journal paper's Table 3 side by side: the agent on 64 and 1,024 servers per topology, and the change."""
    small, large = read_suite(leaderboard, "nara2022"), read_suite(leaderboard, "nara2022-large")
    lines = ["| topology | " + " | ".join(f"{name} 64 → 1,024 (change, 95 % interval)" for name in METRICS) + " |",
             "|---|" + "---|" * len(METRICS)]
    for topology in WORKSHOP_TOPOLOGIES:
        cells = []
        for column in METRICS.values():
            ours, theirs = values(large, AGENT, topology, column), values(small, AGENT, topology, column)
            cells.append(f"{theirs.mean():.3f} → {ours.mean():.3f} ({ratio_of_means(ours, theirs).percent()})")
        lines.append(f"| {topology} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaderboard", type=Path, default=Path("leaderboard"))
    parser.add_argument("--scale-up", action="store_true", help="print the 64- against 1,024-server table instead")
    args = parser.parse_args()
    print((scale_up if args.scale_up else table)(args.leaderboard), end="")


if __name__ == "__main__":
    main()
