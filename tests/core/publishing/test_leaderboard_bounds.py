"""The leaderboard's bound rows and normalised score (docs/bounds.md)."""

from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dcbench.publishing.bounds import bound_lines, normalised


def test_the_floor_scores_0_the_bound_1_and_runs_at_their_bound_are_left_out():
    bounds = {("a", 0): 1.0, ("a", 1): 0.9, ("b", 0): 0.5}
    values = {"random": {("a", 0): 0.5, ("a", 1): 0.5, ("b", 0): 0.5},
              "good": {("a", 0): 1.0, ("a", 1): 0.7, ("b", 0): 0.5}}
    scores = normalised(values, bounds, "random")
    assert scores["random"] == 0.0
    assert scores["good"] == pytest.approx((1.0 + 0.5) / 2)  # ("b", 0): the floor is at the bound


def write_bounds(root):
    """nara2022's bounds under ``root``: 0.9 on 8-1x1 for seeds 0..4."""
    folder = root / "bounds" / "nara2022"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"scenario": ["8-1x1"] * 5, "seed": list(range(5)), "bound": [0.9] * 5,
                             "metric": ["acceptance_ratio"] * 5}), folder / "bounds.parquet")


def rows(allocator, values):
    return [{"allocator": allocator, "scenario": "8-1x1", "seed": seed, "acceptance_ratio": v}
            for seed, v in enumerate(values)]


def test_a_section_shows_the_bound_the_best_entry_its_gap_and_the_normalised_scores(tmp_path):
    write_bounds(tmp_path)
    submission = SimpleNamespace(suite="nara2022", rows=rows("random", [0.4] * 5) + rows("tetris", [0.8] * 5))
    text = "\n".join(bound_lines(tmp_path, "nara2022", "acceptance_ratio", True, [submission]))
    assert "| 8-1x1 | 0.900 | tetris | 0.800 | 0.100 |" in text
    assert "| tetris | 0.800 |" in text and "| random | 0.000 |" in text
    assert bound_lines(tmp_path, "odcn2025", "blocking_probability", False, [submission]) == []
    assert bound_lines(tmp_path / "elsewhere", "nara2022", "acceptance_ratio", True, [submission]) == []


def test_the_floor_is_the_suites_spec_itself_where_two_of_its_plugin_ran(tmp_path):
    write_bounds(tmp_path)
    submission = SimpleNamespace(suite="nara2022", rows=rows("random:published=yes", [0.1] * 5)
                                 + rows("random", [0.4] * 5) + rows("tetris", [0.8] * 5))
    text = "\n".join(bound_lines(tmp_path, "nara2022", "acceptance_ratio", True, [submission]))
    assert "| random | 0.000 |" in text and "| tetris | 0.800 |" in text


def test_the_html_page_shows_the_same_bound_rows_and_scores_as_the_markdown(tmp_path):
    from dcbench.publishing.pages import _bound_tables

    write_bounds(tmp_path)
    submission = SimpleNamespace(suite="nara2022", rows=rows("random", [0.4] * 5) + rows("tetris", [0.8] * 5))
    section = SimpleNamespace(suite_name="nara2022", metric="acceptance_ratio", higher=True,
                              name=lambda spec: spec.upper())
    page = "\n".join(_bound_tables(section, [submission], tmp_path))
    assert 'id="bound-nara2022"' in page and 'href="../docs/bounds.md"' in page
    assert ('<tr><td>8-1x1</td><td data-value="0.9">0.900</td><td data-value="TETRIS">TETRIS</td>'
            '<td data-value="0.8">0.800</td>') in page
    assert page.index(">TETRIS</td><td data-value=\"0.8") < page.index(">RANDOM</td><td data-value=\"0.0\">0.000")
    assert "Normalised score: RANDOM = 0" in page
    lower = SimpleNamespace(suite_name="odcn2025", metric="blocking_probability", higher=False, name=str)
    assert _bound_tables(lower, [submission], tmp_path) == []
    assert _bound_tables(section, [submission], tmp_path / "elsewhere") == []


def test_openb2023_gets_bound_rows_and_random_as_its_floor_from_the_committed_bounds():
    from pathlib import Path

    from dcbench.publishing.bounds import bound_summary

    root = Path(__file__).resolve().parents[3] / "leaderboard"
    runs = [{"allocator": allocator, "scenario": scenario, "seed": seed, "acceptance_ratio": value}
            for allocator, value in (("random", 0.5), ("bestfit", 0.7))
            for scenario in ("tiered-load8", "tiered-load16") for seed in range(5)]
    submission = SimpleNamespace(suite="openb2023", rows=runs)
    summary = bound_summary(root, "openb2023", "acceptance_ratio", True, [submission])
    assert [row[0] for row in summary.rows] == ["tiered-load8", "tiered-load16"]
    assert all(row[2] == "bestfit" and row[4] > 0.2 for row in summary.rows)
    assert summary.floor == "random" and dict(summary.scores)["random"] == 0.0
    assert 0 < dict(summary.scores)["bestfit"] < 1
