"""Markdown tables of a sweep: every metric per scenario and allocator, mean ± 95% CI."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from dcbench.errors import ResultsError
from dcbench.registry import get_registry
from dcbench.registry.columns import Column, demand_kind, ranking_columns
from dcbench.registry.kinds import DEMAND_KINDS
from dcbench.running.labels import natural, scenario_labels
from dcbench.running.stats import best_mean, mean_ci
from dcbench.spec import Spec
from dcbench.storage.files import write_text_atomic
from dcbench.storage.paths import check_regular_file

START = "<!-- dcbench report: start -->"
END = "<!-- dcbench report: end -->"
# What GitHub Markdown would read as syntax in a cell or heading; '_' only at a word's edge (fit_last starts no
# emphasis).
_MARKDOWN_SYNTAX = re.compile(r"[\\`*\[\]<>|$&~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def cell(text: str) -> str:
    """``text`` shown as itself in a Markdown cell or heading: syntax backslash-escaped, control characters spaced."""
    text = "".join(character if character.isprintable() else " " for character in text)
    return _MARKDOWN_SYNTAX.sub(lambda match: "\\" + match[0], text)


def labels(specs: Sequence[str], defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """How a report names each allocator: the plugin's name and the options that tell it apart from competing
    variants, else from ``defaults``.

    Args:
        specs: The allocators' resolved specs.
        defaults: The resolved spec of each plugin's defaults, by plugin name (None: none known).

    Returns:
        Each spec's label, by spec.

    Raises:
        SpecError: A spec, or a default, is malformed.
    """
    options = {spec: dict(Spec.parse(spec).kwargs) for spec in specs}
    shown = {}
    for spec in specs:
        base = spec.split(":")[0]
        variants = [s for s in specs if s.split(":")[0] == base]
        if len(variants) > 1:
            keys = {k for s in variants for k in {*options[s], *options[spec]}
                    if options[s].get(k) != options[spec].get(k)}
        elif defaults is not None and base in defaults:
            default_options = Spec.parse(defaults[base]).kwargs
            keys = {k for k, v in options[spec].items() if default_options.get(k) != v}
        else:  # the one variant, no defaults to tell it from: its plain name
            keys = set()
        changed = [f"{k}={v}" for k, v in options[spec].items() if k in keys]
        shown[spec] = base + (":" + ",".join(changed) if changed else "")
    return shown


def as_scenarios(rows: list[dict[str, Any]], registry: Any) -> list[dict[str, Any]]:
    """A folder's runs as a sweep's rows, each with its ``scenario`` label and every column; two runs of one cell
    and seed are an error."""
    labels_of = scenario_labels([(r["topology"], r["workload"], r["requests"]) for r in rows], registry)
    columns = list(dict.fromkeys(column for row in rows for column in row))
    seen: dict[tuple[str, str, int], dict[str, Any]] = {}
    shaped = []
    for row in rows:
        scenario = labels_of[(row["topology"], row["workload"], row["requests"])]
        earlier = seen.setdefault((scenario, row["allocator"], row["seed"]), row)
        if earlier is not row:
            raise ResultsError(
                f"runs {earlier['run_id']} (dcbench {earlier['dcbench_version']}) and {row['run_id']} (dcbench "
                f"{row['dcbench_version']}) are both {row['allocator']} on {scenario} with seed {row['seed']}, and "
                "would count twice in every mean; move one of them to another folder")
        shaped.append({"run_id": row["run_id"], "scenario": scenario, **{c: row.get(c) for c in columns}})
    order = {label: number for number, label in enumerate(sorted(set(labels_of.values()), key=natural))}
    return sorted(shaped, key=lambda r: (order[r["scenario"]], natural(r["allocator"]), r["seed"]))


def by_demand_kind(rows: list[dict[str, Any]], columns: Sequence[Column] | None = None
                   ) -> dict[str, list[dict[str, Any]]]:
    """``rows`` split by demand kind (`demand_kind`), each part without the columns none of its rows has a value in."""
    columns = declared(columns)
    parts: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        parts.setdefault(demand_kind(row, columns), []).append(row)
    for kind, part in parts.items():
        empty = {column for column in part[0] if all(r.get(column) is None for r in part)}
        parts[kind] = [{k: v for k, v in r.items() if k not in empty} for r in part]
    return {kind: parts[kind] for kind in DEMAND_KINDS if kind in parts}


def scenarios_table(rows: list[dict[str, Any]]) -> str:
    """Each scenario's full specs, for a report whose scenarios are named by `scenario_labels`."""
    lines = ["| scenario | topology | workload | requests | runs |", "|---|---|---|---:|---:|"]
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        here = [r for r in rows if r["scenario"] == scenario]
        first = here[0]
        lines.append(f"| {cell(scenario)} | {cell(first['topology'])} | {cell(first['workload'])} | "
                     f"{first['requests']} | {len(here)} |")
    return "\n".join(lines)


def report_runs(rows: list[dict[str, Any]], title: str, columns: Sequence[Column] | None = None,
                baselines: set[str] | None = None, defaults: Mapping[str, str] | None = None) -> str:
    """The report of runs no suite ranks: per demand kind, the scenarios' specs, then `report`'s tables."""
    columns = declared(columns)
    parts = by_demand_kind(rows, columns)
    ranked_by = ranking_columns(columns)
    texts = []
    for kind, part in parts.items():
        primary, higher = ranked_by[kind]
        heading = f"{title}: {DEMAND_KIND_NAMES[kind]}" if len(parts) > 1 else title
        text = report(part, heading, primary, higher, columns, baselines, defaults)
        head, _, rest = text.partition("\n\n")  # the scenarios' specs under the title
        texts.append(f"{head}\n\nScenarios:\n\n{scenarios_table(part)}\n\n{rest}")
    return "\n".join(texts)


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
        best = best_mean((c[0] for c in cells), higher_is_better)
        texts = [("**" + table_ci(m, h) + "**") if m == best else table_ci(m, h) for m, h, _ in cells]
        # a run with nothing to measure (all in the warm-up, say) has no value: say on how many the mean rests
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
    lines += ["", "Best on: " + ", ".join(f"{cell(name[a])} {n}" for a, n in wins.items()) + " scenarios."]
    return "\n".join(lines)


DEMAND_KIND_NAMES = {"pool": "pool requests", "job": "jobs"}


def declared(columns: Sequence[Column] | None) -> Sequence[Column]:
    """``columns``, or where None the columns the loaded metric plugins declare."""
    return columns if columns is not None else get_registry().columns()


def has_value(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def headline_columns(declared: Sequence[Column], kind: str, summaries: Sequence[Mapping[str, Any]]
                     ) -> list[tuple[str, str, str | None]]:
    """(column, heading, better) of each headline column for ``kind`` some summary has a value in, ranking first."""
    columns = list(dict.fromkeys(column for summary in summaries for column in summary))
    found: dict[str, tuple[str, str | None]] = {}
    for declaration in declared:
        if not declaration.is_headline(kind):
            continue
        for column, heading in declaration.matches(columns):
            if column not in found and any(has_value(summary.get(column)) for summary in summaries):
                found[column] = (heading, declaration.better)
    primary = ranking_columns(declared).get(kind, ("", True))[0]
    order = sorted(found, key=lambda column: column != primary)  # (a stable sort)
    return [(column, *found[column]) for column in order]


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (0.937, 0.0629, 14.7, 1,234; 2.41e-05 below 0.001; 0; n/a)."""
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


def table_ci(mean: float, half: float) -> str:
    """A report cell: `mean_and_spread` (three significant digits: 0.00916 is not 0.009), "–" without a mean."""
    return "–" if math.isnan(mean) else mean_and_spread(mean, half)


def signed_ci(mean: float, half: float) -> str:
    """A difference and its interval as `table_ci` shows them, with its sign: +0.0123 ± 0.0040, -0.00120 ± 0.00310."""
    return ("+" if mean >= 0 else "") + table_ci(mean, half)


def mean_and_spread(mean: float, spread: float) -> str:
    """``mean ± spread``: the spread to the mean's decimal places (5.68 ± 0.26), or to its own significant digits
    where that would show 0 or the mean is scientific (8.50e-08 ± 1.20e-08)."""
    shown = significant(mean)
    if not has_value(spread):
        return shown
    places = len(shown.partition(".")[2]) if "." in shown and "e" not in shown else None
    if places is None or (spread and round(spread, places) == 0) or abs(spread) >= 1_000:
        return f"{shown} ± {significant(spread)}"
    return f"{shown} ± {spread:.{places}f}"


def report_columns(declared: Sequence[Column], kind: str, row: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(column, description, higher is better) of each declared column a report of ``kind`` shows and ``row`` has:
    ranking ones first, then those for ``kind`` alone, then the rest."""
    shown: dict[str, tuple[str, bool, int]] = {}
    for declaration in declared:
        if declaration.description is None or kind not in declaration.demands:
            continue
        if isinstance(declaration.headline, tuple) and not declaration.is_headline(kind) and not (
                declaration.ranks_kind(kind)):  # a headline of other kinds only: pools' blocking is 1 - acceptance
            continue
        group = 0 if declaration.ranks else 1 if declaration.demands == (kind,) else 2
        for column, _ in declaration.matches(row):
            if column not in shown:
                shown[column] = (declaration.description, declaration.better != "lower", group)
    order = sorted(shown, key=lambda column: shown[column][2])  # (a stable sort)
    return [(column, shown[column][0], shown[column][1]) for column in order]


def baselines(registry: Any) -> set[str]:
    """The built-in heuristics: what a learned or third-party allocator is measured against."""
    return {name for name, entry in registry.entries("allocator").items() if entry.builtin and not entry.learned}


def paired_table(rows: list[dict[str, Any]], metric: str, baselines: set[str], higher_is_better: bool = True,
                 defaults: Mapping[str, str] | None = None) -> str:
    """Each non-baseline allocator against the best baseline of every scenario, seed by seed (where lower is better,
    the last column is the factor by which it is lower, as the papers state it)."""
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
                         f"{signed_ci(mean, half)} | {shown} |")
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
           columns: Sequence[Column] | None = None, baselines: set[str] | None = None,
           defaults: Mapping[str, str] | None = None) -> str:
    """A sweep's report in Markdown: a table (mean ± 95% CI) per declared column it has (``columns``; default: the
    loaded plugins'), a ranking by ``primary``, and the non-baseline allocators against the best of ``baselines``."""
    if not rows:
        raise ResultsError("the summary has no rows; run the sweep first")
    seeds = sorted({r["seed"] for r in rows})
    spread = (f"Mean ± half-width of the 95% confidence interval (Student's t) over seeds {seeds}"
              if len(seeds) > 1 else f"Mean of seed {seeds[0]} alone (one seed: no confidence interval)")
    parts = [f"### {cell(title)}", "", f"{spread}; the best mean of each row in bold.", ""]
    columns = declared(columns)
    shown = report_columns(columns, demand_kind(rows[0], columns), rows[0])
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
    """Replace the part of ``path`` between the markers, keeping the prose around it; atomically."""
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
    """``current`` with its marked block replaced by ``block``, or ``block`` appended where there is none."""
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
