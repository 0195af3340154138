"""benchmarks/side_by_side.py alternates two installations and prints a row per cell (no timing is checked)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "side_by_side.py"


def test_the_side_by_side_benchmark_prints_both_medians_and_their_ratio():
    if not SCRIPT.exists():
        pytest.skip("no benchmarks/ here (an installed wheel)")
    dcbench = str(Path(sys.executable).parent / "dcbench")
    done = subprocess.run([sys.executable, str(SCRIPT), "--a", dcbench, "--b", dcbench, "-t", "tiered:8,1x4",
                           "-a", "random", "-a", "tetris", "-n", "16", "--repeat", "1", "--rounds", "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in done.stdout.splitlines()
            if line.startswith("| tiered")]
    assert [row[:2] for row in rows] == [["tiered:8,1x4", "random"], ["tiered:8,1x4", "tetris"]]
    assert all(float(row[2].replace(",", "")) > 0 and float(row[4]) > 0 for row in rows)
