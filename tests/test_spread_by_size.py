"""docs/studies/spread_by_size.py: the shares it draws are a count of a sweep's accepted, measured requests."""

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from dcbench.commands import cli
from tests.conftest import load_script

study = load_script(Path(__file__).resolve().parent.parent / "docs" / "studies" / "spread_by_size.py")


def test_the_shares_by_size_count_the_accepted_measured_requests_of_every_seed(tmp_path):
    sweep = tmp_path / "sweep"
    result = CliRunner().invoke(cli, ["sweep", "-t", "tiered:8,1x4", "-n", "24",
                                      "--seeds", "2", "-a", "tetris,nalb", "-q", "-j", "1", "--out", str(sweep)])
    assert result.exit_code == 0, result.output
    runs = pq.read_table(sweep / "summary.parquet").to_pylist()
    scenario = runs[0]["scenario"]
    expected, seen = Counter(), set()
    for run in runs:
        if run["allocator"].startswith("tetris"):
            seen.add(run["seed"])
            for r in pq.read_table(sweep / run["run_id"] / "requests.parquet").to_pylist():
                if r["measured"] and r["outcome"] == "accepted":
                    expected[min(r["size"], 8), r["spread"]] += 1
    assert seen == {0, 1}

    found = study.shares(sweep, "tetris", scenario)

    assert sorted(found) == sorted({size for size, _ in expected})
    for size, by_level in found.items():
        total = sum(n for (s, _), n in expected.items() if s == size)
        assert by_level == {level: expected[size, level] / total for level in study.LEVELS}
    assert study.shares(sweep, "gnn_ppo", scenario) == {}
