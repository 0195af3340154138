"""benchmarks/env_steps.py runs and prints its table (a few steps; no timing is checked)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "env_steps.py"


def table_rows(output: str, columns: int) -> list[list[str]]:
    """The cells of the Markdown table rows with ``columns`` cells (not the header's separator)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in output.splitlines() if line.startswith("| ")]
    return [row for row in rows if len(row) == columns and row[0] != "mode"]


def test_the_env_steps_benchmark_prints_a_row_per_case_and_loop():
    if not SCRIPT.exists():
        pytest.skip("no benchmarks/ here (an installed wheel)")
    done = subprocess.run([sys.executable, str(SCRIPT), "--steps", "8", "--warmup", "4", "--repeat", "1",
                           "--vector", "2", "--breakdown", "--profile", "--profile-steps", "20", "--top", "3"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout

    main = table_rows(out, 10)
    cases = [("pool", "tiered:32,1x4", "64"), ("pool", "tiered:32,1x4,pods=8,racks=8", "1,024"),
             ("job", "ocs:16", "512")]
    loops = [("single", "1"), ("SyncVectorEnv", "2"), ("AsyncVectorEnv", "2")]
    assert [(r[0], r[1], r[2], r[5], r[6]) for r in main] == [c + loop for c in cases for loop in loops]
    assert "vmjobs:load=54,warmup=270 (odcn2025 16x32-load54)" in main[-1][3]
    for row in main:
        assert row[7] == "8"  # steps timed: a whole number of vectorised steps of 2
        assert float(row[8].replace(",", "")) > 0 and float(row[9]) > 0

    breakdown = table_rows(out, 5)
    assert [(r[0], r[1]) for r in breakdown] == [c[:2] for c in cases for _ in range(4)]
    assert {r[2] for r in breakdown} == {"gymnasium.make, full observation", "bare env (no gymnasium wrappers)",
                                         "bare env, observation = the mask alone", "the policy alone"}

    assert "### cProfile: pool, tiered:32,1x4 (64 servers), 20 steps" in out
    assert "### cProfile: job, ocs:16 (512 servers), 20 steps" in out
    assert out.count("By tottime:") == 2 and out.count("By cumulative:") == 2
