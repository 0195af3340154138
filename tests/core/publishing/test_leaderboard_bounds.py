"""The leaderboard's bound rows and normalised score (docs/bounds.md)."""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from dcbench.publishing.bounds import bound_lines, bound_summary, normalised


def test_the_floor_scores_0_the_bound_1_and_runs_at_their_bound_are_left_out():
    bounds = {("a", 0): 1.0, ("a", 1): 0.9, ("b", 0): 0.5}
    values = {"random": {("a", 0): 0.5, ("a", 1): 0.5, ("b", 0): 0.5},
              "good": {("a", 0): 1.0, ("a", 1): 0.7, ("b", 0): 0.5}}
    scores = normalised(values, bounds, "random")
    assert scores["random"].mean == 0.0
    assert scores["good"].mean == pytest.approx((1.0 + 0.5) / 2)  # ("b", 0): the floor is at the bound


def test_the_normalised_interval_is_the_scores_stratified_t_interval_computed_directly():
    bounds = {(s, seed): 0.9 for s in ("a", "b") for seed in range(5)}
    floor = {key: 0.5 for key in bounds}
    runs = {("a", 0): 0.80, ("a", 1): 0.70, ("a", 2): 0.85, ("a", 3): 0.60, ("a", 4): 0.75,
            ("b", 0): 0.55, ("b", 1): 0.65, ("b", 2): 0.60, ("b", 3): 0.58}  # b: four seeds
    score = normalised({"random": floor, "good": runs}, bounds, "random")["good"]
    per = {s: np.array([(v - 0.5) / 0.4 for (t, _), v in runs.items() if t == s]) for s in ("a", "b")}
    parts = [per[s].var(ddof=1) / len(per[s]) / 4 for s in ("a", "b")]  # / S² with S = 2 scenarios
    dof = sum(parts) ** 2 / sum(p**2 / (len(per[s]) - 1) for p, s in zip(parts, ("a", "b")))
    assert score.mean == pytest.approx((per["a"].mean() + per["b"].mean()) / 2)
    assert score.half == pytest.approx(stats.t.ppf(0.975, dof) * math.sqrt(sum(parts)))
    assert 0 < score.half < 1


def test_an_entry_on_one_seed_per_scenario_has_no_interval():
    bounds, floor = {("a", 0): 1.0, ("b", 0): 1.0}, {("a", 0): 0.0, ("b", 0): 0.0}
    score = normalised({"random": floor, "good": {("a", 0): 0.5, ("b", 0): 0.7}}, bounds, "random")["good"]
    assert score.mean == pytest.approx(0.6) and math.isnan(score.half)


def write_bounds(root):
    """nara2022's bounds under ``root``: 0.9 on 8-1x1 for seeds 0..4."""
    folder = root / "bounds" / "nara2022"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"scenario": ["8-1x1"] * 5, "seed": list(range(5)), "bound": [0.9] * 5,
                             "metric": ["acceptance_ratio"] * 5}), folder / "bounds.parquet")


def rows(allocator, values):
    return [{"allocator": allocator, "scenario": "8-1x1", "seed": seed, "acceptance_ratio": v}
            for seed, v in enumerate(values)]


def lines(root, suite, metric, higher, submissions, name=str):
    return bound_lines(bound_summary(root, suite, metric, higher, submissions), name)


def test_a_section_shows_the_bound_the_best_entry_its_gap_and_the_normalised_scores(tmp_path):
    write_bounds(tmp_path)
    submission = SimpleNamespace(suite="nara2022", rows=rows("random", [0.4] * 5) + rows("tetris", [0.8] * 5))
    text = "\n".join(lines(tmp_path, "nara2022", "acceptance_ratio", True, [submission]))
    assert "| 8-1x1 | 0.900 | tetris | 0.800 | 0.100 |" in text
    assert "| tetris | 0.800 ± 0.000 |" in text and "| random | 0.000 ± 0.000 |" in text
    assert lines(tmp_path, "odcn2025", "blocking_probability", False, [submission]) == []
    assert lines(tmp_path / "elsewhere", "nara2022", "acceptance_ratio", True, [submission]) == []


def test_a_blocking_suite_shows_one_minus_the_acceptance_bound_and_its_lowest_entry(tmp_path):
    folder = tmp_path / "bounds" / "odcn2025"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"scenario": ["16x32-load54"] * 5, "seed": list(range(5)), "bound": [0.95] * 5,
                             "metric": ["acceptance_ratio"] * 5}), folder / "bounds.parquet")
    runs = [{"allocator": allocator, "scenario": "16x32-load54", "seed": seed, "blocking_probability": value}
            for allocator, value in (("ccf", 0.2), ("jcb", 0.1)) for seed in range(5)]
    summary = bound_summary(tmp_path, "odcn2025", "blocking_probability", False,
                            [SimpleNamespace(suite="odcn2025", rows=runs)])
    assert summary.rows == [("16x32-load54", pytest.approx(0.05), "jcb", 0.1, pytest.approx(0.05))]
    assert summary.floor is None and summary.scores == []  # (odcn2025 declares no floor)
    scores = normalised({"ccf": {("a", 0): 0.2}, "jcb": {("a", 0): 0.1}}, {("a", 0): 0.05}, "ccf")
    # lower is better: (0.1 − 0.2) / (0.05 − 0.2)
    assert scores["ccf"].mean == 0.0 and scores["jcb"].mean == pytest.approx(2 / 3)


def test_a_normalised_cell_shows_the_interval_of_the_seeds_spread(tmp_path):
    write_bounds(tmp_path)
    submission = SimpleNamespace(suite="nara2022", rows=rows("random", [0.4] * 5)
                                 + rows("tetris", [0.8, 0.7, 0.8, 0.9, 0.8]))
    normal = np.array([0.8, 0.6, 0.8, 1.0, 0.8])  # (v − 0.4) / (0.9 − 0.4)
    half = stats.t.ppf(0.975, 4) * normal.std(ddof=1) / math.sqrt(5)
    text = "\n".join(lines(tmp_path, "nara2022", "acceptance_ratio", True, [submission]))
    assert f"| tetris | {normal.mean():.3f} ± {half:.3f} |" in text


def test_the_floor_is_the_suites_spec_itself_where_two_of_its_plugin_ran(tmp_path):
    write_bounds(tmp_path)
    submission = SimpleNamespace(suite="nara2022", rows=rows("random:published=yes", [0.1] * 5)
                                 + rows("random", [0.4] * 5) + rows("tetris", [0.8] * 5))
    text = "\n".join(lines(tmp_path, "nara2022", "acceptance_ratio", True, [submission]))
    assert "| random | 0.000 ± 0.000 |" in text and "| tetris | 0.800 ± 0.000 |" in text


def test_the_html_page_shows_the_same_bound_rows_and_scores_as_the_markdown(tmp_path):
    from dcbench.publishing.pages import _bound_tables

    write_bounds(tmp_path)
    submission = SimpleNamespace(suite="nara2022", rows=rows("random", [0.4] * 5) + rows("tetris", [0.8] * 5))
    section = SimpleNamespace(suite_name="nara2022", name=lambda spec: spec.upper(),
                              bounds=bound_summary(tmp_path, "nara2022", "acceptance_ratio", True, [submission]))
    page = "\n".join(_bound_tables(section))
    assert 'id="bound-nara2022"' in page and 'href="../docs/bounds.md"' in page
    assert ('<tr><td>8-1x1</td><td data-value="0.9">0.900</td><td data-value="TETRIS">TETRIS</td>'
            '<td data-value="0.8">0.800</td>') in page
    assert (page.index('>TETRIS</td><td data-value="0.8') <
            page.index('>RANDOM</td><td data-value="0.0">0.000 ± 0.000'))
    assert "Normalised score: RANDOM = 0" in page and "95% interval" in page
    lower = SimpleNamespace(suite_name="odcn2025", name=str,
                            bounds=bound_summary(tmp_path, "odcn2025", "blocking_probability", False, [submission]))
    assert _bound_tables(lower) == []


def test_openb2023_gets_bound_rows_and_random_as_its_floor_from_the_committed_bounds():
    root = Path(__file__).resolve().parents[3] / "leaderboard"
    runs = [{"allocator": allocator, "scenario": scenario, "seed": seed, "acceptance_ratio": value}
            for allocator, value in (("random", 0.5), ("bestfit", 0.7))
            for scenario in ("tiered-load8", "tiered-load16") for seed in range(5)]
    submission = SimpleNamespace(suite="openb2023", rows=runs)
    summary = bound_summary(root, "openb2023", "acceptance_ratio", True, [submission])
    assert [row[0] for row in summary.rows] == ["tiered-load8", "tiered-load16"]
    assert all(row[2] == "bestfit" and row[4] > 0.2 for row in summary.rows)
    assert summary.floor == "random" and dict(summary.scores)["random"].mean == 0.0
    assert 0 < dict(summary.scores)["bestfit"].mean < 1


def test_a_rebuild_reads_each_suites_bounds_once_for_both_pages(tmp_path, monkeypatch):
    import shutil

    from click.testing import CliRunner

    from dcbench.commands import cli
    from dcbench.publishing import leaderboard

    committed = Path(__file__).resolve().parents[3] / "leaderboard"
    (submission,) = (committed / "submissions").glob("openb2023--*")
    shutil.copytree(submission, tmp_path / "submissions" / submission.name)
    shutil.copytree(committed / "bounds" / "openb2023", tmp_path / "bounds" / "openb2023")
    calls = []
    summary = leaderboard.bound_summary
    monkeypatch.setattr(leaderboard, "bound_summary", lambda *args: calls.append(args[1]) or summary(*args))
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert calls == ["openb2023"]
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| bestfit | ") and " ± " in line)
    assert f">{row.split('|')[2].strip()}</td>" in (tmp_path / "index.html").read_text(encoding="utf-8")
    assert row in (committed / "README.md").read_text(encoding="utf-8")  # the committed page is up to date
