"""benchmarks/vector_env_steps.py runs and prints its table (a few steps; no timing is checked)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "vector_env_steps.py"


def test_the_vector_env_benchmark_prints_a_row_per_case_and_size():
    if not SCRIPT.exists():
        pytest.skip("no benchmarks/ here (an installed wheel)")
    done = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "1,8", "--steps", "16", "--repeat", "1",
                           "--requests", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in done.stdout.splitlines() if line.startswith("| ") and not line.startswith("| mode")]
    assert [(row[0], row[2]) for row in rows] == [("pool", "1"), ("pool", "8"), ("job", "1"), ("job", "8")]
    for row in rows:
        sync, native, ratio = (float(cell.strip("×").replace(",", "")) for cell in row[3:6])
        assert sync > 0 and native > 0 and ratio == pytest.approx(native / sync, abs=0.06)
    assert [row[6] for row in rows] == ["one by one", "batch", "one by one", "one by one"]
