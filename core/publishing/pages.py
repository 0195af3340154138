"""The leaderboard's pages, ``README.md`` and ``index.html``, and its downloadable tables, from ranked sections."""

from __future__ import annotations

import csv
import html
import io
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from dcbench.model.about import CLEAN, KINDS, ON_TEST
from dcbench.publishing.bounds import NORMALISED_HOW, BoundSummary, bound_lines
from dcbench.publishing.ranking import Estimate, SuiteRanking
from dcbench.publishing.report import cell
from dcbench.running.stats import format_ci

SUBMISSIONS = "submissions"  # the leaderboard's folder of submissions
DOCS = "../docs/leaderboard.md#how-entries-are-ranked"  # the page's link to how it ranks, from leaderboard/
BOUND_DOCS = "../docs/bounds.md"  # its link to how the bound is computed
BETTER = {"higher": "↑", "lower": "↓", None: ""}
NO_DELTA = Estimate(math.nan, math.nan)  # what the tables show where an entry has no Δ
PAPERS = (  # the papers whose scenarios the built-in suites run (README.md, The papers)
    ("Z. Shabka and G. Zervas", "Network-aware compute and memory allocation in optically composable data centers "
     "with deep reinforcement learning and graph neural networks", "Journal of Optical Communications and "
     "Networking 15(2), 133, 2023", "https://doi.org/10.1364/JOCN.478944"),
    ("Z. Shabka and G. Zervas", "Resource Allocation in Disaggregated Data Centre Systems with Reinforcement "
     "Learning", "NeurIPS 2021 Workshop on ML for Systems", "https://arxiv.org/abs/2106.02412"),
    ("C.-Y. Liu, X. Chen, R. Proietti, Z. Zhu and S. J. B. Yoo", "Deep reinforcement learning-aided multi-step job "
     "scheduling in optical data center networks", "Journal of Optical Communications and Networking 17(9), 2025",
     "https://doi.org/10.1364/JOCN.562531"),
)


@dataclass
class About:
    """An entry as the pages show it: its spec, description (`dcbench.model.about`) and marks."""

    spec: str
    about: dict[str, Any]
    version: str
    date: str  # the day it was submitted ("" where not recorded)
    replayed: list[tuple[int, str, str]]  # (its runs `submit` made again, version, date), per submission
    verified: list[tuple[int, int, str, str]]  # (runs `verify` found the same, otherwise, version, date)
    training: str | None  # `dcbench.model.about.training_mark`

    @property
    def verified_mark(self) -> str:
        if any(otherwise for _, otherwise, _, _ in self.verified):
            return "✗"
        return "✓" if self.replayed or self.verified else "–"

    @property
    def verified_text(self) -> str:
        parts = [f"{n} run{'s' * (n != 1)} replayed at submission (dcbench {version}, {date})"
                 for n, version, date in self.replayed]
        parts += [f"{same + otherwise} re-run by verify (dcbench {version}, {date}): "
                  + (f"{otherwise} came out otherwise" if otherwise else "the same, bit for bit")
                  for same, otherwise, version, date in self.verified]
        return "; ".join(parts) or "not run again"


@dataclass
class Section:
    """One suite's part of the pages."""

    suite_name: str
    description: str
    metric: str
    higher: bool
    scenarios: list[str]
    ranking: SuiteRanking
    columns: list[tuple[str, str, str | None, bool]]  # beside the metric: (column, heading, better, headline)
    measured: dict[tuple[str, str], dict[str, tuple[float, float, int]]]  # (scenario, spec) -> column -> mean_ci
    reference: str | None  # the spec every Δ is measured against
    entries: dict[str, About]
    label: dict[str, str]  # spec -> its short name on the pages
    plot: Path
    seeds: int  # per scenario
    bounds: BoundSummary | None = None  # its upper bounds and normalised scores (None: no bounds)

    def name(self, spec: str) -> str:
        return self.entries[spec].about.get("name") or self.label[spec]


def decimals(values: Iterable[float]) -> int:
    """Decimal places that show three significant digits of the median of ``values`` (zeros left out)."""
    sizes = sorted(abs(v) for v in values if math.isfinite(v) and v != 0)
    return 3 if not sizes else min(6, max(0, 2 - math.floor(math.log10(sizes[len(sizes) // 2]))))


def shown(estimate: Estimate | tuple[float, float, int] | None, places: int, signed: bool = False) -> str:
    """``0.871 ± 0.008`` at ``places`` decimals; "–" without a mean."""
    if estimate is None:
        return "–"
    mean, half = (estimate.mean, estimate.half) if isinstance(estimate, Estimate) else estimate[:2]
    if math.isnan(mean):
        return "–"
    text = f"{mean:+.{places}f}" if signed else f"{mean:.{places}f}"
    return text if math.isnan(half) else f"{text} ± {half:.{places}f}"


def _places(section: Section, column: str) -> int:
    return decimals(m[column][0] for m in section.measured.values() if column in m)


def _score_places(section: Section) -> int:
    return decimals(e.score.mean for e in section.ranking.entries)


def _delta(section: Section, spec: str, delta: Estimate | None, places: int) -> str:
    return "reference" if spec == section.reference else shown(delta, places, signed=True)


def _metric_heading(section: Section) -> str:
    return _heading(section.metric.replace("_", " "), "higher" if section.higher else "lower")


def _heading(name: str, better: str | None) -> str:
    return f"{name} {BETTER[better]}".strip()


def verdict(section: Section) -> str:
    """Whether the data separates the two leading entries (if not, how many seeds would), and the scenario wins."""
    ranking = section.ranking
    if ranking.leaders_separated is None:
        return ""
    sign = 1.0 if section.higher else -1.0
    first, second = sorted(ranking.entries, key=lambda e: (e.rank, -sign * e.score.mean))[:2]
    names = f"{section.name(first.entry)} and {section.name(second.entry)}"
    won = sum(any(row.win for row in rows) for rows in ranking.scenarios.values())
    scenarios = (f" In {won} of {len(ranking.scenarios)} scenarios one entry is significantly better than every "
                 f"other; in the rest, {section.seeds} seeds leave the leaders of the scenario tied.")
    if ranking.leaders_separated:
        return f"Over all scenarios, the data separates the leading entries, {names}." + scenarios
    text = (f"{section.seeds} seeds per scenario cannot separate the leading entries, {names}: they share a rank.")
    if ranking.seeds_needed is not None:
        text += (f" Were their observed difference real, about {ranking.seeds_needed} seeds per scenario would "
                 "separate them with 80% power; a suite with more seeds is a new suite, not an edit of this one.")
    return text + scenarios


def how_ranked(section: Section) -> str:
    reference = section.label[section.reference] if section.reference else None
    return (f"Ranked by {section.metric.replace('_', ' ')} ({'higher' if section.higher else 'lower'} is better). "
            f"Score: the mean over {len(section.scenarios)} scenarios of the mean over {section.seeds} seeds, with "
            "its 95% interval. Entries that paired tests over the same seeds cannot separate (Holm-corrected) share "
            "a rank; wins count only scenarios where an entry is significantly better than every other. "
            + (f"Δ: the paired difference from {reference}, the suite's reference." if reference
               else "The suite names no reference with runs here, so there is no Δ."))


def summary_rows(section: Section) -> list[dict[str, Any]]:
    rows = []
    for ranked in section.ranking.entries:
        entry = section.entries[ranked.entry]
        about = entry.about
        delta = ranked.delta or NO_DELTA
        rows.append({
            "rank": ranked.rank, "name": section.name(ranked.entry), "allocator": ranked.entry,
            "kind": about["kind"], "authors": "; ".join(about.get("authors", [])), "paper": about.get("paper", ""),
            "code": about.get("code", ""), "score": ranked.score.mean, "score_ci95": ranked.score.half,
            "delta": delta.mean, "delta_ci95": delta.half, "significant_wins": ranked.wins,
            "scenarios": ranked.scenarios, "verified": entry.verified_text, "trained_on_test": entry.training or "",
            "dcbench_version": entry.version, "date": entry.date})
    return rows


def scenario_rows(section: Section) -> list[dict[str, Any]]:
    rows = []
    for scenario in section.scenarios:
        for ranked in section.ranking.scenarios[scenario]:
            measured = section.measured[(scenario, ranked.entry)]
            delta = ranked.delta or NO_DELTA
            row = {"scenario": scenario, "rank": ranked.rank, "name": section.name(ranked.entry),
                   "allocator": ranked.entry, section.metric: ranked.value.mean,
                   f"{section.metric}_ci95": ranked.value.half, "delta": delta.mean, "delta_ci95": delta.half,
                   "significant_win": ranked.win}
            for column, *_ in section.columns:
                row[column], row[f"{column}_ci95"] = measured[column][:2]
            rows.append(row)
    return rows


def write_tables(section: Section, folder: Path) -> list[Path]:
    """The section's summary and per-scenario tables as CSV and Parquet in ``folder``; the files written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    written = []
    for name, rows in (("summary", summary_rows(section)), ("scenarios", scenario_rows(section))):
        as_csv, as_parquet = (folder / f"{section.suite_name}-{name}.{suffix}" for suffix in ("csv", "parquet"))
        buffer = io.StringIO()  # (a suite's qualified name has a dot: no Path.with_suffix)
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        as_csv.write_text(buffer.getvalue(), encoding="utf-8")
        pq.write_table(pa.Table.from_pylist(rows), as_parquet)
        written += [as_csv, as_parquet]
    return written


def table_files(section: Section, name: str) -> list[tuple[str, str]]:
    return [(kind, f"tables/{section.suite_name}-{name}.{kind.lower()}") for kind in ("CSV", "Parquet")]


def _md_name(section: Section, spec: str) -> str:
    name = section.name(spec)
    return cell(name) + (f" (`{section.label[spec]}`)" if section.label[spec] != name else "")


def markdown(sections: Iterable[Section], submissions: list[Any], version: str, root: Path) -> str:
    lines = ["# dcbench leaderboard", "",
             f"Generated by `dcbench leaderboard` (dcbench {version}) from the {len(submissions)} submission(s) in "
             f"`{SUBMISSIONS}/`; `index.html` is the same leaderboard as a page that sorts and filters. How entries "
             f"are ranked: [docs/leaderboard.md]({DOCS}).", "", "The papers whose scenarios it runs:", ""]
    lines += [f"- {authors}, *{title}*, {venue}, <{link}>" for authors, title, venue, link in PAPERS] + [""]
    for section in sections:
        suite = cell(section.suite_name)
        places = _score_places(section)
        lines += [f"## {suite}", "", cell(section.description), "", how_ranked(section), ""]
        if verdict(section):
            lines += [verdict(section), ""]
        lines += ["| rank | entry | kind | score | Δ | wins | verified | training |",
                  "|---:|---|---|---:|---:|---:|:-:|---|"]
        for ranked in section.ranking.entries:
            entry = section.entries[ranked.entry]
            lines.append(f"| {ranked.rank} | {_md_name(section, ranked.entry)} | {entry.about['kind']} | "
                         f"{shown(ranked.score, places)} | {_delta(section, ranked.entry, ranked.delta, places)} | "
                         f"{ranked.wins}/{ranked.scenarios} | {entry.verified_mark} | {entry.training or ''} |")
        lines += [""] + bound_lines(section.bounds, lambda spec, section=section: _md_name(section, spec))
        downloads = " · ".join(f"[{name} {kind}]({path})" for name in ("summary", "scenarios")
                               for kind, path in table_files(section, name))
        lines += [f"Tables: {downloads}", "", f"![{suite}]({section.plot.relative_to(root).as_posix()})", ""]
        value_places = _places(section, section.metric)
        for scenario in section.scenarios:
            lines += [f"### {suite} / {cell(scenario)}", "",
                      f"| rank | entry | {_metric_heading(section)} "
                      "| Δ | significant win |", "|---:|---|---:|---:|:-:|"]
            for ranked in section.ranking.scenarios[scenario]:
                lines.append(f"| {ranked.rank} | {_md_name(section, ranked.entry)} | "
                             f"{shown(ranked.value, value_places)} | "
                             f"{_delta(section, ranked.entry, ranked.delta, value_places)} | "
                             f"{'✓' if ranked.win else ''} |")
            lines.append("")
    lines += ["## Submissions", ""] + [f"- `{s.name}`: {cell(s.suite)}, {len(s.rows)} runs" for s in submissions]
    return "\n".join(lines) + "\n"


def _static(name: str) -> str:
    return (resources.files("dcbench.publishing") / "static" / name).read_text(encoding="utf-8")


def _e(text: Any) -> str:
    return html.escape(str(text))


def _td(text: str, value: Any = None, css: str = "") -> str:
    attributes = (f' data-value="{_e(value)}"' if value is not None else "") + (f' class="{css}"' if css else "")
    return f"<td{attributes}>{text}</td>"


def _th(text: str, kind: str = "number", css: str = "", title: str = "") -> str:
    attributes = f' data-type="{kind}"' + (f' class="{css}"' if css else "")
    attributes += f' title="{_e(title)}"' if title else ""
    return f"<th{attributes}>{_e(text)}</th>"


def _table(css: str, table_id: str, head: str, rows: list[str]) -> list[str]:
    return [f'<div class="table-wrap"><table class="{css} sortable" id="{_e(table_id)}"><thead><tr>{head}</tr>'
            "</thead><tbody>", *rows, "</tbody></table></div>"]


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else repr(value)


def _entry_cell(section: Section, spec: str) -> str:
    about = section.entries[spec].about
    name = _e(section.name(spec))
    link = about.get("code") or about.get("paper")
    title = f' title="{_e(about["description"])}"' if about.get("description") else ""
    text = f'<a href="{_e(link)}"{title}>{name}</a>' if link else f"<span{title}>{name}</span>"
    links = [f'<a href="{_e(about[key])}">{key}</a>' for key in ("paper", "code") if about.get(key)]
    if section.label[spec] != section.name(spec):
        text += f'<br><code class="spec">{_e(section.label[spec])}</code>'
    return text + (f' <span class="links">{" · ".join(links)}</span>' if links else "")


def _training_cell(entry: About) -> str:
    if entry.training is None:
        return _td("", "")
    css = {CLEAN: "clean", ON_TEST: "trained-on-test"}.get(entry.training, "unknown")
    seeds = ", ".join(entry.about.get("training_seeds", [])) or "not recorded"
    return _td(f'<span class="mark {css}" title="training seeds: {_e(seeds)}">{_e(entry.training)}</span>',
               entry.training)


def _summary_table(section: Section) -> list[str]:
    table = f"summary-{section.suite_name}"
    places = _score_places(section)
    better = "higher" if section.higher else "lower"
    out = [f'<div class="filters" data-table="{_e(table)}">'
           '<input type="search" class="text-filter" placeholder="Filter entries" aria-label="Filter entries">'
           '<select class="kind-filter" aria-label="Kind"><option value="">every kind</option>'
           + "".join(f'<option value="{k}">{k}</option>' for k in KINDS)
           + '</select> <span class="shown-count"></span></div>']
    head = (_th("Rank", css="rank-group", title="one more than the number of entries significantly better")
            + _th("Entry", "text") + _th("Kind", "text") + _th("Authors", "text")
            + _th(_heading("Score", better), title="mean over scenarios, 95% interval")
            + _th("Δ", title=f"paired difference from {section.label.get(section.reference, 'no reference')}")
            + _th("Wins", title="scenarios where it is significantly better than every other entry")
            + _th("Verified", "text", title="runs made again bit for bit")
            + _th("Training", "text", title="a learned entry's training seeds against the suite's test seeds")
            + _th("Version", "text") + _th("Date", "text", title="the day it was submitted"))
    rows = []
    for ranked in section.ranking.entries:
        entry = section.entries[ranked.entry]
        about = entry.about
        rows.append(
            f'<tr data-kind="{_e(about["kind"])}">' + _td(str(ranked.rank), ranked.rank, "rank-group")
            + _td(_entry_cell(section, ranked.entry), section.name(ranked.entry)) + _td(_e(about["kind"]))
            + _td(_e(", ".join(about.get("authors", []))), css="wrap")
            + _td(shown(ranked.score, places), _number(ranked.score.mean))
            + _td(_delta(section, ranked.entry, ranked.delta, places), _number((ranked.delta or NO_DELTA).mean))
            + _td(f"{ranked.wins}/{ranked.scenarios}", ranked.wins)
            + _td(f'<span class="mark verified" title="{_e(entry.verified_text)}">{entry.verified_mark}</span>',
                  entry.verified_mark)
            + _training_cell(entry) + _td(_e(entry.version)) + _td(_e(entry.date)) + "</tr>")
    return out + _table("summary", table, head, rows)


def _scenario_table(section: Section, index: int, scenario: str) -> list[str]:
    table = f"scenario-{section.suite_name}-{index}"
    places = {column: _places(section, column) for column in [section.metric, *(c[0] for c in section.columns)]}
    head = (_th("Rank", css="rank-group") + _th("Entry", "text") + _th(_metric_heading(section)) + _th("Δ")
            + _th("Win", "text")
            + "".join(_th(_heading(heading, better), css="" if headline else "extra", title=column)
                      for column, heading, better, headline in section.columns))
    out = [f'<h4>{_e(scenario)}</h4><div class="table-tools">'
           f'<button type="button" class="toggle-columns" data-table="{_e(table)}">Show all metrics</button>'
           '</div>' if any(not c[3] for c in section.columns) else f"<h4>{_e(scenario)}</h4>"]
    rows = []
    for ranked in section.ranking.scenarios[scenario]:
        measured = section.measured[(scenario, ranked.entry)]
        delta = ranked.delta or NO_DELTA
        cells = [_td(str(ranked.rank), ranked.rank, "rank-group"), _td(_e(section.name(ranked.entry)),
                                                                   section.name(ranked.entry)),
                 _td(shown(ranked.value, places[section.metric]), _number(ranked.value.mean)),
                 _td(_delta(section, ranked.entry, ranked.delta, places[section.metric]), _number(delta.mean)),
                 _td("✓" if ranked.win else "", "✓" if ranked.win else "")]
        cells += [_td(shown(measured[column], places[column]), _number(measured[column][0]),
                      "" if headline else "extra") for column, _, _, headline in section.columns]
        rows.append(f'<tr data-kind="{_e(section.entries[ranked.entry].about["kind"])}">' + "".join(cells) + "</tr>")
    return out + _table("scenario", table, head, rows)


def _bound_tables(section: Section) -> list[str]:
    """The section's bound per scenario beside the best entry, and the normalised scores, as the Markdown has them."""
    summary = section.bounds
    if summary is None:
        return []
    out = [f'<h3>Bound</h3><p class="how">The value no allocator can beat on these requests, though it may be '
           f'loose (<a href="{_e(BOUND_DOCS)}">how it is computed</a>), mean over seeds, and the best entry\'s gap '
           "to it.</p>"]
    out += _table("bounds", f"bound-{section.suite_name}",
                  _th("Scenario", "text") + _th("Bound") + _th("Best entry", "text") + _th("Its mean") + _th("Gap"),
                  ["<tr>" + _td(_e(scenario)) + _td(f"{bound:.3f}", _number(bound))
                   + _td(_e(section.name(best)), section.name(best)) + _td(f"{mean:.3f}", _number(mean))
                   + _td(f"{gap:.3f}", _number(gap)) + "</tr>" for scenario, bound, best, mean, gap in summary.rows])
    if summary.scores:
        out.append(f'<p class="how">Normalised score: {_e(section.name(summary.floor))} = 0, the bound = 1; '
                   f"{_e(NORMALISED_HOW)}</p>")
        out += _table("normalised", f"normalised-{section.suite_name}", _th("Entry", "text") + _th("Normalised score"),
                      ["<tr>" + _td(_e(section.name(spec)), section.name(spec))
                       + _td(format_ci(score.mean, score.half), _number(score.mean)) + "</tr>"
                       for spec, score in summary.scores])
    return out


def html_page(sections: Sequence[Section], submissions: list[Any], version: str, root: Path) -> str:
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>dcbench leaderboard</title>", f"<style>{_static('leaderboard.css')}</style></head><body>",
           "<header><h1>dcbench leaderboard</h1>",
           f"<p>dcbench {_e(version)}, from {len(submissions)} submission(s). Each suite ranks entries by a score with "
           f'its 95% interval; entries the data cannot separate share a rank (<a href="{_e(DOCS)}">how entries are '
           "ranked</a>). ✓: runs made again bit for bit, at submission and by <code>dcbench leaderboard verify</code>."
           "</p><details><summary>The papers whose scenarios the suites run</summary><ul>"
           + "".join(f'<li>{_e(authors)}, <a href="{_e(link)}"><cite>{_e(title)}</cite></a>, {_e(venue)}</li>'
                     for authors, title, venue, link in PAPERS) + "</ul></details></header>",
           '<nav class="tabs">' + "".join(f'<button type="button" data-tab="{_e(s.suite_name)}">{_e(s.suite_name)}'
                                          "</button>" for s in sections) + "</nav>"]
    for section in sections:
        out.append(f'<section class="suite" id="suite-{_e(section.suite_name)}" data-suite="{_e(section.suite_name)}">'
                   f"<h2>{_e(section.suite_name)}</h2><p>{_e(section.description)}</p>"
                   f'<p class="how">{_e(how_ranked(section))}</p>')
        if verdict(section):
            out.append(f'<p class="verdict">{_e(verdict(section))}</p>')
        out += _summary_table(section) + _bound_tables(section)
        links = " · ".join(f'<a href="{_e(path)}" download>{name} ({kind})</a>' for name in ("summary", "scenarios")
                           for kind, path in table_files(section, name))
        out += [f'<p class="downloads">Download: {links}</p>',
                f'<figure><img src="{_e(section.plot.relative_to(root).as_posix())}" '
                f'alt="{_e(section.suite_name)}: {_e(section.metric)} per scenario and entry"></figure>',
                "<h3>Per scenario</h3>"]
        for index, scenario in enumerate(section.scenarios):
            out += _scenario_table(section, index, scenario)
        out.append("</section>")
    out.append("<footer><h2>Submissions</h2><ul>" + "".join(
        f"<li><code>{_e(s.name)}</code>: {_e(s.suite)}, {len(s.rows)} runs</li>" for s in submissions)
        + "</ul></footer>")
    out.append(f"<script>{_static('leaderboard.js')}</script></body></html>")
    return "\n".join(out) + "\n"
