"""The OCS paper's headline claims, measured on the leaderboard's `odcn2025` submission.

Each number or ordering of section 5, the abstract and the conclusion of Liu et al. (JOCN 2025) gets the
paper's number, dcbench's with a 95 % interval over the test seeds, and a verdict no stronger than the
interval (see docs/reproduction-odcn2025.md#the-papers-claims):

    python docs/studies/ocs_claims.py [--leaderboard leaderboard] [--figure PATH]

`--figure` also draws the 16-ToR agent's training curve against the baselines' test blocking at load 66
(the paper's Fig. 4).

Intervals. "k× lower" is the ratio of two allocators' means on one scenario, paired by seed (the same
jobs): a delta-method t interval of its logarithm over the seeds, exponentiated. Over the five 16-ToR
loads ("pooled") a seed's values are first averaged over the loads, so the ratio is one of means, not a
mean of per-load ratios (which the load where the agent blocks a few jobs in 10,000 would dominate).
A utilisation gain is the same ratio minus one; a level, a mean with its t interval; a rise with load,
one-sided Welch's t between two loads' independent seeds (p < 0.05).

Reading the claims. "The three" are ALL2ALL-CCF, ODCN-CCF, ODCN-JCB, in that order; utilisation is CPU,
memory, disk. The agent is compared with the best baseline (by mean, per load where "by load"), unless
a baseline is named; "ALL2ALL-CCF ... most" with the next highest of the other three allocators; "at
least" (abstract) with the least of its ratios over the baselines and network sizes.

Verdicts. A claimed factor or gain: "holds" where the interval holds it (for "at least", reaches it;
"holds, and larger" above it), "partly: smaller" where it is clear of no difference but short of the
claim, "does not hold" where it includes no difference ("inside the noise") or is beyond it
("reversed"). An ordering ("lower", "highest", "the worst"): "holds" where every interval is clear of
no difference on the claimed side, "does not hold" where one is on the other side or none is clear,
"partly" otherwise, naming where it is tied or inside the noise. A claim of several parts gets its
weakest part's verdict. The training claim (Fig. 4) compares each training episode's blocking (with
exploration, on training seeds, from an empty data centre) with the best baseline's mean test blocking
at load 66: "holds" where it stays below from an episode within the paper's 10 epochs of jobs, "partly"
where the agent started from a clone of JCB (not from scratch, as the paper's), "does not hold" where
the last episode is not below. "cannot be measured" where the submission has no such run.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_claims import Interval, read_suite, t_half  # noqa: E402  (the tiered study's)

AGENT = "a2c_multistep"
NAMES = {"ccf:reconfigure=no": "ALL2ALL-CCF", "ccf:reconfigure=yes": "ODCN-CCF", "jcb": "ODCN-JCB"}
CHECKPOINT = Path("plugins/allocators/a2c_multistep/checkpoints/ocs-16")
PAPER_JOBS = 10 * 200_000  # "beats the baselines after training of 10 epochs" of 200,000 jobs
STRENGTH = ("does not hold", "partly", "holds")  # weakest first
RESOURCES = {"CPU": "cpu_util", "memory": "mem_util", "disk": "disk_util"}  # the paper's Tables 2-4
BLOCKING = "blocking_probability"


def ratio_text(i: Interval) -> str:
    return "0×" if i.low == i.high == 0 else f"{i.mean:#.3g}× [{i.low:#.3g}–{i.high:#.3g}]"


def percent_text(i: Interval, sign: str = "+") -> str:
    return f"{100 * i.mean:{sign}.1f}% [{100 * i.low:.1f}, {100 * i.high:.1f}]"


class Suite:
    """The submission's runs, by network size (ToRs), load, allocator and seed."""

    def __init__(self, leaderboard: Path):
        rows = read_suite(leaderboard, "odcn2025")
        self.runs: dict[tuple[int, int, str], dict[int, dict]] = {}
        self.scenarios: dict[tuple[int, int], str] = {}  # (ToRs, load) -> its name
        for (allocator, scenario), by_seed in rows.items():
            tors, _, load = map(int, re.fullmatch(r"(\d+)x(\d+)-load(\d+)", scenario).groups())
            spec = allocator.split(",")[0]
            name = next((label for n, label in NAMES.items() if n in (spec, spec.split(":")[0])), allocator)
            self.runs[(tors, load, name)] = by_seed
            self.scenarios[(tors, load)] = scenario
        self.sizes = sorted({tors for tors, _, _ in self.runs})

    def loads(self, tors: int) -> list[int]:
        return sorted({load for t, load, _ in self.runs if t == tors})

    def values(self, tors: int, allocator: str, column: str, load: int | None = None) -> np.ndarray:
        """Per seed, on one load or averaged over the size's loads."""
        loads = [load] if load is not None else self.loads(tors)
        seeds = sorted(self.runs[(tors, loads[0], allocator)])
        return np.array([np.mean([self.runs[(tors, at, allocator)][seed][column] for at in loads])
                         for seed in seeds], dtype=float)


def mean_interval(sample: np.ndarray) -> Interval:
    half = t_half(sample)
    return Interval(sample.mean(), sample.mean() - half, sample.mean() + half)


def ratio(top: np.ndarray, bottom: np.ndarray) -> Interval:
    """mean(top) / mean(bottom), paired by seed: a delta-method t interval of its log."""
    a, b = top.mean(), bottom.mean()
    if a == 0 or b == 0:
        value = 1.0 if a == b else 0.0 if a == 0 else math.inf
        return Interval(value, value, value)
    half = t_half(top / a - bottom / b)  # the log ratio's linearisation, per seed
    return Interval(a / b, a / b * math.exp(-half), a / b * math.exp(half))


def gain(ours: np.ndarray, theirs: np.ndarray) -> Interval:
    found = ratio(ours, theirs)
    return Interval(found.mean - 1, found.low - 1, found.high - 1)


def factor(claimed: float, found: Interval, at_least: bool = False, neutral: float = 1.0) -> str:
    """A claimed factor (or gain, ``neutral`` 0): in, above or short of the interval."""
    if found.low <= claimed <= found.high or (at_least and found.high >= claimed):
        return "holds"
    if found.low > claimed:
        return "holds, and larger"
    if found.low > neutral:
        return "partly: smaller"
    return "does not hold: inside the noise" if found.high >= neutral else "does not hold: reversed"


def ordering(found: dict[str, Interval], neutral: float = 1.0) -> str:
    """A claimed ordering, one interval per part, each ``ours / theirs`` above ``neutral`` if it holds."""
    clear = [part for part, i in found.items() if i.low > neutral]
    against = [part for part, i in found.items() if i.high < neutral]
    if against:
        return "does not hold: reversed at " + ", ".join(map(str, against))
    if len(clear) == len(found):
        return "holds"
    tied = [part for part, i in found.items() if i.low == i.high == neutral]
    noise = [part for part in found if part not in clear + tied]
    why = "; ".join(f"{kind} at {', '.join(parts)}" for kind, parts in (("tied", tied), ("inside the noise", noise))
                    if parts)
    return f"partly: {why}" if clear else f"does not hold: {why}"


def weakest(verdicts: list[str]) -> str:
    return min(verdicts, key=lambda v: next(i for i, kind in enumerate(STRENGTH) if v.startswith(kind)))


def best_baseline(suite: Suite, tors: int, column: str, load: int | None = None) -> str:
    return min(NAMES.values(), key=lambda b: suite.values(tors, b, column, load).mean())


def lower(suite: Suite, tors: int, baseline: str, column: str, load: int | None = None) -> Interval:
    """How many times lower the agent's ``column`` is than ``baseline``'s."""
    return ratio(suite.values(tors, baseline, column, load), suite.values(tors, AGENT, column, load))


def against_next(suite: Suite, tors: int, column: str) -> Interval:
    """ALL2ALL-CCF's ``column`` over the highest of the other three's."""
    a2a = NAMES["ccf:reconfigure=no"]
    runner = max((n for n in (*NAMES.values(), AGENT) if n != a2a), key=lambda n: suite.values(tors, n, column).mean())
    return ratio(suite.values(tors, a2a, column), suite.values(tors, runner, column))


def several(claimed: tuple[float, ...], found: list[Interval], **how) -> str:
    return weakest([factor(c, f, **how) for c, f in zip(claimed, found)])


def times(values: tuple[float, ...]) -> str:
    return ", ".join(f"{v:g}×" for v in values)


def joined(found, how=ratio_text) -> str:
    """Intervals in order, or ``label: interval`` for a mapping."""
    if isinstance(found, dict):
        return ", ".join(f"{part}: {how(i)}" for part, i in found.items())
    return ", ".join(how(i) for i in found)


def blocking_rows(suite: Suite) -> list[tuple[str, ...]]:
    small, mid, large = suite.sizes
    lows = {t: {b: lower(suite, t, b, BLOCKING) for b in NAMES.values()} for t in suite.sizes}
    tors, least = min(((t, b) for t in suite.sizes for b in NAMES.values()), key=lambda p: lows[p[0]][p[1]].mean)
    scenarios = {suite.scenarios[(t, load)]: lower(suite, t, best_baseline(suite, t, BLOCKING, load), BLOCKING, load)
                 for t in suite.sizes for load in suite.loads(t)}
    clear = sum(i.low > 1 for i in scenarios.values())
    pooled = list(lows[small].values())
    per_load = {load: scenarios[suite.scenarios[(small, load)]] for load in suite.loads(small)}
    worst = {str(t): against_next(suite, t, BLOCKING) for t in suite.sizes}
    return [
        ("abstract: blocking lower than each heuristic by at least", "7.35×",
         f"least: {ratio_text(lows[tors][least])}, {least}, {tors} ToRs",
         factor(7.35, lows[tors][least], at_least=True)),
        ("Figs. 5–7(a), conclusion: blocking below the baselines everywhere", f"{len(scenarios)} of "
         f"{len(scenarios)}", f"significantly below the best at {clear}", ordering(scenarios)),
        (f"Fig. 5(a): {small} ToRs, blocking lower than the three, on average", times((7.35, 5.24, 4.59)),
         f"pooled: {joined(pooled)}; by load: {joined(per_load)}", several((7.35, 5.24, 4.59), pooled)),
        ("Figs. 5–7(a): ALL2ALL-CCF blocks most (by ToRs)", "the worst", joined(worst), ordering(worst)),
        (f"Fig. 6(a): {mid} ToRs, blocking lower than the three by at least", "7.46×", joined(lows[mid].values()),
         several((7.46,) * 3, list(lows[mid].values()), at_least=True)),
        (f"Fig. 7(a): {large} ToRs, blocking lower than ALL2ALL-CCF by up to", "20.75×",
         ratio_text(lows[large]["ALL2ALL-CCF"]), factor(20.75, lows[large]["ALL2ALL-CCF"], at_least=True)),
    ]


def training_rows(suite: Suite, checkpoint: Path) -> list[tuple[str, ...]]:
    """The paper's Fig. 4: the 16-ToR agent at load 66, in training and on the test seeds."""
    small = suite.sizes[0]
    found = [lower(suite, small, b, BLOCKING, 66) for b in NAMES.values()]
    curve = pq.read_table(checkpoint.with_suffix(".curve.parquet")).to_pylist()
    config = json.loads(checkpoint.with_suffix(".json").read_text())["config"]
    best = min(suite.values(small, b, BLOCKING, 66).mean() for b in NAMES.values())
    below = [row["blocking"] < best for row in curve]
    since = next((k for k in range(len(below)) if all(below[k:])), None)
    jobs, clone = config["episode_jobs"], config.get("imitation_jobs", 0)
    trained = f"trained on {len(curve) * jobs:,} jobs" + (f" after a {clone:,}-job JCB clone" if clone else "")
    if since is None:
        verdict, when = "does not hold", "not below at the end"
    else:
        when = f"below from episode {since + 1} of {len(curve)}"
        verdict = ("partly: from a clone of JCB" if clone else
                   "holds" if (since + 1) * jobs <= PAPER_JOBS else "partly: later")
    return [
        (f"Fig. 4: {small} ToRs, load 66, blocking lower than the three, asymptotically", times((10.33, 5.9, 5.25)),
         joined(found), several((10.33, 5.9, 5.25), found)),
        ("Fig. 4: training blocking (exploring, training seeds) below the best baseline's within",
         f"10 epochs ({PAPER_JOBS:,} jobs)", f"{when}; {trained}", verdict),
    ]


def network_rows(suite: Suite) -> list[tuple[str, ...]]:
    small, mid, _ = suite.sizes
    rows = []
    columns = {"latency": "latency_us", "loss": "packet_loss"}
    for where, tors, claimed, at_least in (("Fig. 5(b, c)", small, (1.32, 1.44), False),
                                           ("Fig. 6(b, c)", mid, (1.39, 2.08), True)):
        found = {name: lower(suite, tors, best_baseline(suite, tors, column), column)
                 for name, column in columns.items()}
        rows.append((f"{where}: {tors} ToRs, latency, loss lower than the best baseline's" + (", by at least" if
                     at_least else ""), times(claimed), joined(found),
                     several(claimed, list(found.values()), at_least=at_least)))
    apart = {name: {str(t): against_next(suite, t, column) for t in suite.sizes} for name, column in columns.items()}
    rows.append(("Figs. 5–7(b, c): ALL2ALL-CCF's latency, loss far above the rest",
                 "a large margin", "; ".join(f"{name} {joined(found)}" for name, found in apart.items()),
                 ordering({f"{name} {t}": i for name, found in apart.items() for t, i in found.items()})))
    return rows


def reconfiguration_rows(suite: Suite) -> list[tuple[str, ...]]:
    small, mid, large = suite.sizes
    column, odcn = "reconfigurations_per_job", ("ODCN-CCF", "ODCN-JCB")
    found = {(t, b): lower(suite, t, b, column) for t in suite.sizes for b in odcn}
    least = min(found, key=lambda key: found[key].mean)
    rows = [("abstract: reconfigurations fewer than ODCN-CCF, ODCN-JCB by at least", "4.59×",
             f"least: {ratio_text(found[least])}, {least[1]}, {least[0]} ToRs",
             factor(4.59, found[least], at_least=True))]
    for where, tors, claimed in (("Fig. 5(d)", small, (16.22, 9.38)), ("Fig. 6(d)", mid, (17.33, 5.44)),
                                 ("Fig. 7(d)", large, (14.5,))):
        against = odcn[:len(claimed)]
        agent = mean_interval(suite.values(tors, AGENT, column))
        none = [b for b in against if suite.values(tors, b, column).max() == 0]
        rows.append((f"{where}: {tors} ToRs, reconfigurations fewer than {', '.join(against)}", times(claimed),
                     joined(found[(tors, b)] for b in against)
                     + (f" (agent {agent.mean:.3g} [{agent.low:.3g}–{agent.high:.3g}] a job, they 0)"
                        if none else ""),
                     several(claimed, [found[(tors, b)] for b in against])))
    return rows


def utilisation_rows(suite: Suite) -> list[tuple[str, ...]]:
    small, mid, large = suite.sizes
    loads = suite.loads(small)
    steps = [stats.ttest_ind(suite.values(small, allocator, column, after), suite.values(small, allocator, column,
                                                                                            before),
                             equal_var=False, alternative="greater").pvalue < 0.05
             for column in RESOURCES.values() for allocator in (*NAMES.values(), AGENT)
             for before, after in zip(loads, loads[1:])]
    rows = [(f"Table 2: {small} ToRs, every policy's utilisation rises with load", "rises",
             f"significantly at {sum(steps)} of {len(steps)} steps",
             "holds" if all(steps) else "partly: not every step" if any(steps) else "does not hold")]
    highest = {}
    for tors in suite.sizes:
        highest[tors] = {name: gain(suite.values(tors, AGENT, column),
                                    suite.values(tors, max(NAMES.values(),
                                                           key=lambda b: suite.values(tors, b, column).mean()), column))
                         for name, column in RESOURCES.items()}
    a2a = [gain(suite.values(small, AGENT, column), suite.values(small, "ALL2ALL-CCF", column))
           for column in RESOURCES.values()]
    levels = [mean_interval(suite.values(large, AGENT, column)) for column in RESOURCES.values()]
    claimed = (0.963, 0.672, 0.646)
    at_levels = weakest(["holds" if i.low <= c <= i.high else "does not hold: " + ("higher" if i.low > c else "lower")
                         for c, i in zip(claimed, levels)])
    return rows + [
        (f"Table 2: {small} ToRs, utilisation highest", "highest",
         joined(highest[small].values(), percent_text), ordering(highest[small], neutral=0.0)),
        (f"Table 2: {small} ToRs, utilisation above ALL2ALL-CCF's by", "+7, +8, +7 %", joined(a2a, percent_text),
         several((0.07, 0.08, 0.07), a2a, neutral=0.0)),
        (f"Table 3: {mid} ToRs, utilisation highest, by", "+3 % each",
         joined(highest[mid].values(), percent_text),
         weakest([ordering(highest[mid], neutral=0.0),
                  several((0.03,) * 3, list(highest[mid].values()), neutral=0.0)])),
        (f"Table 4: {large} ToRs, utilisation highest", "highest",
         joined(highest[large].values(), percent_text), ordering(highest[large], neutral=0.0)),
        (f"Table 4: {large} ToRs, the agent's utilisation", "96.3, 67.2, 64.6 %",
         joined(levels, lambda i: percent_text(i, sign="")), at_levels),
    ]


def claims(leaderboard: Path, checkpoint: Path = CHECKPOINT) -> list[tuple[str, ...]]:
    """(the paper's claim and where it is, its number, dcbench's, verdict) per claim."""
    suite = Suite(leaderboard)
    return (blocking_rows(suite) + training_rows(suite, checkpoint) + network_rows(suite)
            + reconfiguration_rows(suite) + utilisation_rows(suite)
            + [("Fig. 3: reconfigurations fall as Φ_reconf grows, blocking rises faster past 25", "a trade-off", "—",
                "cannot be measured: the suite has Φ_reconf = 25 only")])


def table(leaderboard: Path, checkpoint: Path | None = None) -> str:
    checkpoint = checkpoint or leaderboard.parent / CHECKPOINT
    lines = ["| claim | paper's | dcbench (95 % interval) | verdict |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in claims(leaderboard, checkpoint)]
    return "\n".join(lines) + "\n"


def figure(leaderboard: Path, out: Path, checkpoint: Path | None = None) -> None:
    """The paper's Fig. 4 as dcbench has it: the training curve and the baselines' test blocking at load 66."""
    from matplotlib.figure import Figure

    checkpoint = checkpoint or leaderboard.parent / CHECKPOINT
    suite = Suite(leaderboard)
    curve = pq.read_table(checkpoint.with_suffix(".curve.parquet")).to_pylist()
    jobs = json.loads(checkpoint.with_suffix(".json").read_text())["config"]["episode_jobs"]
    episodes = [row["episode"] * jobs for row in curve]
    axis = (fig := Figure(figsize=(8.4, 3.4))).subplots()
    axis.plot(episodes, [row["blocking"] for row in curve], marker="o", markersize=3, color="black",
              label="agent, training episodes (with exploration)")
    if "validation_blocking" in curve[0]:
        axis.plot(episodes, [row["validation_blocking"] for row in curve], marker="s", markersize=3,
                  color="grey", linestyle="--", label="agent, held-out episodes (greedy)")
    small = suite.sizes[0]
    # ALL2ALL-CCF and ODCN-CCF coincide at 16 ToRs: a dotted line over a solid one shows both
    for name, colour, style in zip((*NAMES.values(), AGENT), ("C3", "C1", "C2", "C0"), ("-", ":", "-.", "-")):
        test = mean_interval(suite.values(small, name, BLOCKING, 66))
        axis.axhspan(test.low, test.high, color=colour, alpha=0.2)
        axis.axhline(test.mean, color=colour, linestyle=style,
                     label=f"{'agent' if name == AGENT else name}, test seeds (95 % interval)")
    axis.set_xlabel("jobs trained (after the warm start)")
    axis.set_ylabel("blocking probability")
    axis.set_ylim(bottom=0)
    axis.set_title(f"{small} ToRs, load 66: training episodes start empty, test after a warm-up", fontsize=9)
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaderboard", type=Path, default=Path("leaderboard"))
    parser.add_argument("--figure", type=Path, help="also draw the training curve (the paper's Fig. 4) here")
    args = parser.parse_args()
    print(table(args.leaderboard), end="")
    if args.figure:
        figure(args.leaderboard, args.figure)


if __name__ == "__main__":
    main()
