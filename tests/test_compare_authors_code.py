"""benchmarks/compare_authors_code.py and the authors' code's results it reads: what the committed CSV holds, the
requests it says the authors drew, and the table docs/reproduction-nara2022.md quotes."""

import re
from pathlib import Path

import numpy as np

from tests.conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "compare_authors_code.py"
compare = load_script(SCRIPT)


def test_the_authors_results_cover_every_scenario_and_heuristic_with_five_episodes():
    from dcbench.registry import get_registry

    scenarios = [s.name for s in get_registry().entries("suite")[compare.SUITE].scenarios]
    results = compare.authors_results()
    assert sorted(results) == sorted((s, h) for s in scenarios for h in compare.HEURISTICS)
    assert all(len(episodes) == 5 and all(0 <= a <= 1 for a in episodes) for episodes in results.values())


def test_the_authors_requests_are_their_randint_draws_without_the_constructors():
    episodes = compare.authors_requests(episodes=2, requests=3)
    assert [e.shape for e in episodes] == [(3, 3), (3, 3)]
    assert np.concatenate(episodes).min(axis=0).tolist() >= [1, 1, 1]
    assert compare.authors_requests(episodes=1, requests=6)[0][3:].tolist() == episodes[1].tolist()


def test_the_table_has_a_row_per_scenario_and_the_mae_per_heuristic():
    authors = {("8-1x1", h): [0.5, 0.7] for h in compare.HEURISTICS}
    ours = {("8-1x1", h): [0.65] for h in compare.HEURISTICS}
    lines = compare.table(authors, ours, paired=False)
    assert lines[2] == "| 8-1x1 | " + " | ".join(["0.600 | 0.650"] * 4) + " |"
    assert lines[3] == "| MAE | " + " | ".join(["| 0.050"] * 4) + " |"


def test_the_docs_quote_the_committed_authors_results():
    text = (ROOT / "docs" / "reproduction-nara2022.md").read_text()
    results = compare.authors_results()
    section = text.split("### Against the authors' code")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (\d+-1x\d+) \| (.*) \|$", section, re.M)
    assert len(rows) == 12
    for scenario, cells in rows:
        theirs = [float(c) for c in cells.split(" | ")[0::2]]
        assert theirs == [round(float(np.mean(results[(scenario, h)])), 3) for h in compare.HEURISTICS]
