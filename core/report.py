"""Markdown tables of a sweep: every metric per scenario and allocator, mean ± 95% CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from dcbench.errors import ResultsError
from dcbench.stats import format_ci, mean_ci

START = "<!-- dcbench report: start -->"
END = "<!-- dcbench report: end -->"


def _short(spec: str, specs: Sequence[str]) -> str:
    base = spec.split(":")[0]
    return base if sum(s.split(":")[0] == base for s in specs) == 1 else spec


def metric_table(rows: list[dict[str, Any]], metric: str, higher_is_better: bool = True) -> str:
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    lines = ["| scenario | " + " | ".join(_short(a, allocators) for a in allocators) + " |",
             "|---|" + "---:|" * len(allocators)]
    for scenario in scenarios:
        cells = [mean_ci(r[metric] for r in rows if r["scenario"] == scenario and r["allocator"] == a)
                 for a in allocators]
        means = [c[0] for c in cells]
        best = max(means) if higher_is_better else min(means)
        texts = [("**" + format_ci(m, h) + "**") if m == best else format_ci(m, h) for m, h, _ in cells]
        lines.append(f"| {scenario} | " + " | ".join(texts) + " |")
    return "\n".join(lines)


def ranking(rows: list[dict[str, Any]], metric: str, higher_is_better: bool = True) -> str:
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    wins = {a: 0 for a in allocators}
    lines = ["| scenario | ranking (best first) |", "|---|---|"]
    for scenario in scenarios:
        means = {a: mean_ci(r[metric] for r in rows if r["scenario"] == scenario and r["allocator"] == a)[0]
                 for a in allocators}
        order = sorted(allocators, key=lambda a: -means[a] if higher_is_better else means[a])
        wins[order[0]] += 1
        lines.append(f"| {scenario} | " + " > ".join(_short(a, allocators) for a in order) + " |")
    lines.append("")
    lines.append("Best on: " + ", ".join(f"{_short(a, allocators)} {n}" for a, n in wins.items()) + " scenarios.")
    return "\n".join(lines)


METRICS = (
    ("acceptance_ratio", "Acceptance ratio"),
    ("cpu_util", "CPU utilisation (time-averaged)"),
    ("mem_util", "Memory utilisation (time-averaged)"),
    ("link_util_tier1", "Tier-1 (server-rack) link utilisation"),
    ("link_util_tier2", "Tier-2 (rack-aggregation) link utilisation"),
    ("link_util_tier3", "Tier-3 (aggregation-core) link utilisation"),
)


def report(rows: list[dict[str, Any]], title: str, primary: str, higher_is_better: bool = True) -> str:
    if not rows:
        raise ResultsError("the summary has no rows; run the sweep first")
    seeds = sorted({r["seed"] for r in rows})
    parts = [f"### {title}", "",
             f"Mean ± half-width of the 95% confidence interval (Student's t) over seeds {seeds}; "
             "the best mean of each row in bold.", ""]
    for metric, heading in METRICS:
        if metric in rows[0]:
            parts += [f"#### {heading}", "", metric_table(rows, metric, metric != "blocking_probability"), ""]
    parts += [f"#### Ranking by {primary}", "", ranking(rows, primary, higher_is_better), ""]
    return "\n".join(parts)


def write_between_markers(path: Path, text: str, section: str = "") -> None:
    """Replace the generated part of ``path`` (between the markers), keeping the prose around it."""
    start, end = (START, END) if not section else (START.replace(":", f" {section}:"), END.replace(":", f" {section}:"))
    block = f"{start}\n{text}\n{end}"
    if path.exists():
        current = path.read_text()
        if start in current and end in current:
            head, rest = current.split(start, 1)
            tail = rest.split(end, 1)[1]
            path.write_text(head + block + tail)
            return
        path.write_text(current.rstrip() + "\n\n" + block + "\n")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block + "\n")
