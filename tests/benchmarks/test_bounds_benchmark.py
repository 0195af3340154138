"""benchmarks/bounds.py runs and prints a row per scenario and prefix length (no timing is checked)."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bounds.py"


def test_the_bounds_benchmark_prints_a_row_per_prefix_of_the_scenario():
    result = subprocess.run([sys.executable, str(SCRIPT), "--suite", "nara2022", "--scenario", "8-1x1", "--seeds", "1",
                             "--requests", "16", "32"], capture_output=True, text=True, check=True)
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in result.stdout.splitlines()
            if line.startswith("| 8-1x1 ")]
    assert [row[2] for row in rows] == ["16", "32"]  # the prefix's requests, the scenario's only
    assert all(0 < float(row[1]) <= 1 for row in rows)
    assert int(rows[0][3].replace(",", "")) < int(rows[1][3].replace(",", ""))  # more requests, more held pairs
