"""Markdown tables of a sweep: every metric per scenario and allocator, mean ± 95% CI."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from dcbench.errors import ResultsError, SpecError
from dcbench.results import check_regular_file, write_text_atomic
from dcbench.spec import Spec, bind, resolved_spec
from dcbench.stats import best_mean, format_ci, mean_ci

START = "<!-- dcbench report: start -->"
END = "<!-- dcbench report: end -->"


# What Markdown (GitHub's: tables, emphasis, code, links, HTML, entities, math,
# a heading's closing #s) would read as syntax in a cell or a heading: '_'
# only at a word's edge, as one within a word (fit_last) starts no emphasis.
_MARKDOWN_SYNTAX = re.compile(r"[\\`*\[\]<>|$&~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def cell(text: str) -> str:
    """``text`` for a Markdown table cell or heading, shown as the text it
    is (a third-party suite's scenario label, say): what Markdown would read
    as syntax backslash-escaped ('|' would end the cell, '<' start HTML,
    '$' a formula), a line break or other control character a space."""
    text = "".join(character if character.isprintable() else " " for character in text)
    return _MARKDOWN_SYNTAX.sub(lambda match: "\\" + match[0], text)


def display_name(spec: str, specs: Sequence[str]) -> str:
    """An allocator's plain name, or its full spec where two variants of it compete."""
    base = spec.split(":")[0]
    return base if sum(s.split(":")[0] == base for s in specs) == 1 else spec


def default_specs(registry: Any) -> dict[str, str]:
    """Each allocator plugin's resolved spec with every parameter at its
    default (plugins with a required parameter are left out)."""
    specs = {}
    for name, entry in registry.entries("allocator").items():
        try:
            specs[name] = resolved_spec(name, bind(name, entry.params, Spec(name)))
        except SpecError:
            continue
    return specs


def labels(specs: Sequence[str], defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """How a report names each allocator: the plugin's name and the options
    that tell it apart — where several variants of a plugin compete, the
    options on which they differ; where one does, the options that differ
    from the plugin's defaults (``defaults``: plugin name -> the resolved
    spec of its defaults), so ``tetris:fit_last=yes`` is never shown as
    ``tetris``. `display_name` for a plugin whose defaults are not known."""
    options = {spec: dict(Spec.parse(spec).kwargs) for spec in specs}
    shown = {}
    for spec in specs:
        base = spec.split(":")[0]
        variants = [s for s in specs if s.split(":")[0] == base]
        if len(variants) > 1:
            keys = {k for s in variants for k in options[s] if options[s].get(k) != options[spec].get(k)}
        elif defaults is not None and base in defaults:
            default_options = Spec.parse(defaults[base]).kwargs
            keys = {k for k, v in options[spec].items() if default_options.get(k) != v}
        else:
            shown[spec] = display_name(spec, specs)
            continue
        changed = [f"{k}={v}" for k, v in options[spec].items() if k in keys]
        shown[spec] = base + (":" + ",".join(changed) if changed else "")
    return shown


def metric_table(rows: list[dict[str, Any]], metric: str, higher_is_better: bool = True,
                 defaults: Mapping[str, str] | None = None) -> str:
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    name = labels(allocators, defaults)
    lines = ["| scenario | " + " | ".join(cell(name[a]) for a in allocators) + " |",
             "|---|" + "---:|" * len(allocators)]
    for scenario in scenarios:
        runs = [[r.get(metric) for r in rows if r["scenario"] == scenario and r["allocator"] == a] for a in allocators]
        cells = [mean_ci(values) for values in runs]
        means = [c[0] for c in cells]
        best = best_mean(means, higher_is_better)
        texts = [("**" + format_ci(m, h) + "**") if m == best else format_ci(m, h) for m, h, _ in cells]
        # a run with nothing to measure (every request in the warm-up, say) has no value: say on how many it rests
        texts = [text + (f" ({n} of {len(values)} runs)" if 0 < n < len(values) else "")
                 for text, (_, _, n), values in zip(texts, cells, runs)]
        lines.append(f"| {cell(scenario)} | " + " | ".join(texts) + " |")
    return "\n".join(lines)


def ranking(rows: list[dict[str, Any]], metric: str, higher_is_better: bool = True,
            defaults: Mapping[str, str] | None = None) -> str:
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    name = labels(allocators, defaults)
    wins = {a: 0 for a in allocators}
    lines = ["| scenario | ranking (best first) |", "|---|---|"]
    for scenario in scenarios:
        means = {a: mean_ci(r[metric] for r in rows if r["scenario"] == scenario and r["allocator"] == a)[0]
                 for a in allocators}
        ranked = sorted((a for a in allocators if not math.isnan(means[a])),
                        key=lambda a: -means[a] if higher_is_better else means[a])
        for allocator in ranked:  # an exact tie at the top is a win for each
            if means[allocator] == means[ranked[0]]:
                wins[allocator] += 1
        # an allocator no run of which has a value is not last: it is not ranked at all
        unranked = [cell(name[a]) for a in allocators if math.isnan(means[a])]
        text = " > ".join(cell(name[a]) for a in ranked)
        if unranked:
            text += ("; " if ranked else "") + "no value: " + ", ".join(unranked)
        lines.append(f"| {cell(scenario)} | {text} |")
    lines.append("")
    lines.append("Best on: " + ", ".join(f"{cell(name[a])} {n}" for a, n in wins.items()) + " scenarios.")
    return "\n".join(lines)


# The column that ranks runs of each demand kind where no suite says (a folder of runs, an ad-hoc sweep, a run's
# table), and whether higher is better: the papers' own, acceptance for pools and blocking for jobs.
PRIMARY = {"pool": ("acceptance_ratio", True), "job": ("blocking_probability", False)}
DEMAND_KIND_NAMES = {"pool": "pool requests", "job": "jobs"}


def demand_kind(row: Mapping[str, Any]) -> str:
    """'job' for a run of jobs (the jobs metric gives it reconfigurations), else 'pool'."""
    return "job" if row.get("reconfigurations_per_job") is not None else "pool"


def has_value(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def headline_columns(metrics: Sequence[Any], kind: str, summaries: Sequence[Mapping[str, Any]]
                     ) -> list[tuple[str, str, str | None]]:
    """(column, heading, better) of every headline column the metric
    plugins ``metrics`` (registry entries) declare for runs of ``kind`` that
    one of ``summaries`` has a value in, the kind's `PRIMARY` column first,
    the others in the order the metrics and their columns come."""
    columns = list(dict.fromkeys(column for summary in summaries for column in summary))
    found: dict[str, tuple[str, str | None]] = {}
    for metric in metrics:
        for headline in metric.headline:
            if kind not in headline.demands:
                continue
            for column, heading in headline.matches(columns):
                if column not in found and any(has_value(summary.get(column)) for summary in summaries):
                    found[column] = (heading, headline.better)
    order = sorted(found, key=lambda column: column != PRIMARY[kind][0])  # (a stable sort)
    return [(column, *found[column]) for column in order]


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, so that a small one shows:
    0.937, 0.0629, 14.7, 1,234; below 0.001 in scientific notation (2.41e-05);
    0 as 0, NaN as n/a."""
    if not has_value(value):
        return "n/a"
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    if abs(value) < 1e-3:
        return f"{value:.{digits - 1}e}"
    places = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{value:,.{max(places, 0)}f}"


def mean_and_spread(mean: float, spread: float) -> str:
    """``mean ± spread``, the mean to `significant` digits and the spread to
    as many decimal places (0.467 ± 0.004, 5.68 ± 0.26), or to its own
    significant digits where those would show it as 0 or the mean is in
    scientific notation (8.50e-08 ± 1.20e-08)."""
    shown = significant(mean)
    if not has_value(spread):
        return shown
    places = len(shown.partition(".")[2]) if "." in shown and "e" not in shown else None
    if places is None or (spread and round(spread, places) == 0) or abs(spread) >= 1_000:
        return f"{shown} ± {significant(spread)}"
    return f"{shown} ± {spread:.{places}f}"


# (column, heading, higher is better); a report shows those its rows have.
METRICS = (
    ("acceptance_ratio", "Acceptance ratio", True),
    ("blocking_probability", "Blocking probability (measured requests)", False),
    ("reconfigurations_per_job", "Reconfigurations (circuit swaps) per job", False),
    ("latency_us", "End-to-end latency, µs (M/M/1/K per link)", False),
    ("packet_loss", "Packet loss (M/M/1/K per link)", False),
    ("cpu_util", "CPU utilisation (time-averaged)", True),
    ("mem_util", "Memory utilisation (time-averaged)", True),
    ("disk_util", "Disk utilisation (time-averaged)", True),
    ("link_util_tier1", "Tier-1 link utilisation (server-rack; OCS circuits on ocs)", True),
    ("link_util_tier2", "Tier-2 (rack-aggregation) link utilisation", True),
    ("link_util_tier3", "Tier-3 (aggregation-core) link utilisation", True),
)


def paired_table(rows: list[dict[str, Any]], metric: str, baselines: set[str], higher_is_better: bool = True,
                 defaults: Mapping[str, str] | None = None) -> str:
    """Each non-baseline allocator against the best baseline of every scenario, seed by seed.

    For a metric where lower is better (blocking), the last column is the
    factor by which the challenger is lower (best baseline's mean over its
    mean), the papers' way of stating it."""
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    challengers = [a for a in allocators if a.split(":")[0] not in baselines]
    label = labels(allocators, defaults)
    sign = 1 if higher_is_better else -1
    last = "relative" if higher_is_better else "× lower"
    lines = [f"| scenario | allocator | best baseline | Δ (paired) | {last} |", "|---|---|---|---:|---:|"]
    relative_all: dict[str, list[float]] = {a: [] for a in challengers}
    factors_all: dict[str, list[float]] = {a: [] for a in challengers}
    for scenario in scenarios:
        here = [r for r in rows if r["scenario"] == scenario]
        by = {a: {r["seed"]: r[metric] for r in here if r["allocator"] == a} for a in allocators}
        means = {a: mean_ci(by[a].values())[0] for a in allocators}
        candidates = [a for a in allocators if a.split(":")[0] in baselines and not math.isnan(means[a])]
        if not candidates:
            continue
        best = max(candidates, key=lambda a: sign * means[a])
        baseline_mean = means[best]
        for challenger in challengers:
            if not by[challenger]:
                continue
            seeds = sorted(set(by[challenger]) & set(by[best]))
            mean, half, _ = mean_ci(by[challenger][s] - by[best][s] for s in seeds)
            relative = mean / baseline_mean if baseline_mean else float("nan")
            relative_all[challenger].append(relative)
            factor = baseline_mean / means[challenger] if means[challenger] else float("inf")
            factors_all[challenger].append(factor)
            shown = f"{100 * relative:+.1f}%" if higher_is_better else f"{factor:.2f}×"
            lines.append(f"| {cell(scenario)} | {cell(label[challenger])} | {cell(label[best])} | "
                         f"{format_ci(mean, half, 3) if mean < 0 else '+' + format_ci(mean, half, 3)} | {shown} |")
    lines.append("")
    for challenger, values in relative_all.items():
        if not values:
            continue
        name = cell(label[challenger])
        at_least = sum(sign * v >= 0 for v in values)
        if higher_is_better:
            lines.append(f"{name}: mean relative difference {100 * sum(values) / len(values):+.1f}%, "
                         f"at least the best baseline's mean on {at_least} of {len(values)} scenarios.")
        else:
            factors = factors_all[challenger]
            lines.append(f"{name}: {metric} lower than the best baseline's on {at_least} of {len(values)} scenarios "
                         f"(ties count); best baseline over {name}: {sum(factors) / len(factors):.2f}× on average "
                         f"(from {min(factors):.2f}× to {max(factors):.2f}×).")
    return "\n".join(lines)


def report(rows: list[dict[str, Any]], title: str, primary: str, higher_is_better: bool = True,
           baselines: set[str] | None = None, defaults: Mapping[str, str] | None = None) -> str:
    if not rows:
        raise ResultsError("the summary has no rows; run the sweep first")
    seeds = sorted({r["seed"] for r in rows})
    spread = (f"Mean ± half-width of the 95% confidence interval (Student's t) over seeds {seeds}"
              if len(seeds) > 1 else f"Mean of seed {seeds[0]} alone (one seed: no confidence interval)")
    parts = [f"### {cell(title)}", "", f"{spread}; the best mean of each row in bold.", ""]
    job_rows = "reconfigurations_per_job" in rows[0]
    shown = [(metric, heading, higher) for metric, heading, higher in METRICS
             if metric in rows[0] and not (metric == "acceptance_ratio" and job_rows)]
    if primary not in (metric for metric, _, _ in shown):  # a third-party suite's own metric: its table first
        shown.insert(0, (primary, primary, higher_is_better))
    for metric, heading, higher in shown:
        parts += [f"#### {cell(heading)}", "", metric_table(rows, metric, higher, defaults), ""]
    parts += [f"#### Ranking by {cell(primary)}", "", ranking(rows, primary, higher_is_better, defaults), ""]
    if baselines and any(r["allocator"].split(":")[0] not in baselines for r in rows):
        parts += [f"#### Learned and third-party allocators against the best baseline ({cell(primary)})", "",
                  "Δ: mean over seeds of the seed-by-seed difference (every allocator saw the same requests), "
                  "± half-width of its 95% confidence interval; "
                  + ("relative: Δ over the best baseline's mean." if higher_is_better else
                     "× lower: the best baseline's mean over the allocator's (above 1: the allocator is better)."),
                  "",
                  paired_table(rows, primary, baselines, higher_is_better, defaults), ""]
    return "\n".join(parts)


def write_between_markers(path: Path, text: str, section: str = "") -> None:
    """Replace the generated part of ``path`` (between the markers), keeping
    the prose around it; the file is replaced whole or not at all."""
    start, end = (START, END) if not section else (START.replace(":", f" {section}:"), END.replace(":", f" {section}:"))
    block = f"{start}\n{text}\n{end}"
    check_regular_file(path, "a Markdown file with --out")
    try:
        updated = with_block(page_text(path), start, end, block, path) if path.exists() else block + "\n"
        write_text_atomic(path, updated)  # (it makes the page's folder)
    except OSError as exc:
        raise ResultsError(f"cannot update '{path}': {exc.strerror or exc}; choose another file with --out") from None


def page_text(path: Path) -> str:
    """The text of a page `report` updates; a one-line error if it is not UTF-8."""
    try:
        with open(path, encoding="utf-8", newline="") as file:  # its line endings as they are (CRLF stays CRLF)
            return file.read()
    except UnicodeDecodeError as exc:
        raise ResultsError(f"cannot update '{path}': it is not UTF-8 text (byte {exc.start}); "
                           "give a Markdown file with --out") from None


def with_block(current: str, start: str, end: str, block: str, path: Path) -> str:
    """``current`` with its marked block replaced by ``block``, or with
    ``block`` appended where it has no start marker."""
    if current.count(start) > 1 or current.count(end) > 1:
        raise ResultsError(f"cannot update '{path}': its marker {start!r} or {end!r} is there twice; "
                           "keep one block between them")
    newline = "\r\n" if "\r\n" in current else "\n"  # the page's own line endings
    block = block.replace("\n", newline)
    head, found, rest = current.partition(start)
    if not found:
        if end in current:
            raise ResultsError(f"cannot update '{path}': it has the marker {end!r} but no {start!r} before it; "
                               "put the start marker back, or remove the end marker")
        return current.rstrip() + 2 * newline + block + newline
    if end not in rest:
        raise ResultsError(f"cannot update '{path}': its marker {start!r} has no {end!r} after it; "
                           "put the end marker after the start marker, or remove both")
    return head + block + rest.split(end, 1)[1]
