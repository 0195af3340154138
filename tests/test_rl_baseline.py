"""benchmarks/rl_baseline.py: the Student t interval and the table docs/rl.md quotes, and a tiny run end to end."""

import math
from pathlib import Path

import pytest

from tests.conftest import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "rl_baseline.py"
rl_baseline = load_script(SCRIPT)


def test_the_interval_is_students_t_over_the_training_seeds():
    mean, half = rl_baseline.interval([0.1, 0.2, 0.3])
    assert mean == pytest.approx(0.2)
    assert half == pytest.approx(4.302653 * 0.1 / math.sqrt(3), rel=1e-6)  # t(0.975, 2) · s / √n
    assert math.isnan(rl_baseline.interval([0.4])[1])


def test_the_table_has_a_row_per_recipe_then_the_heuristics():
    results = [("hints", 1_000_000, 0.30, 10.0), ("hints", 1_000_001, 0.40, 12.0), ("example", 1_000_000, 0.1, 5.0)]
    lines = rl_baseline.table(500, [1_000_000, 1_000_001], results, {"random": 0.2, "tetris": 0.6}).splitlines()
    assert lines[0] == "| recipe | steps | training seeds | acceptance, test seeds |"
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    assert [row[0] for row in rows] == ["hints", "example", "`random`", "`tetris`"]
    assert rows[0][1:] == ["500", "1000000, 1000001", f"0.350 ± {12.706205 * 0.05:.3f}"]  # t(0.975, 1) · s / √2
    assert rows[1][3] == "0.100"  # one seed: no interval
    assert rows[2] == ["`random`", "", "", "0.200"]
    assert rl_baseline.seed_list([7, 8, 9]) == "7..9" and rl_baseline.seed_list([7, 9, 8]) == "7, 9, 8"


@pytest.mark.slow  # trains MaskablePPO twice, a few hundred steps
def test_a_tiny_run_prints_the_table(capsys):
    pytest.importorskip("sb3_contrib")
    text = rl_baseline.main(["--steps", "300", "--seeds", "1000000", "1000001", "--recipes", "hints-only"])
    assert capsys.readouterr().out.strip() == text
    row = next(line for line in text.splitlines() if line.startswith("| hints-only"))
    mean = float(row.split("|")[4].split(" ± ")[0])
    assert 0 <= mean <= 1 and "| `tetris` | | | 0.616 |" in text


def test_a_test_seed_is_refused_for_training():
    pytest.importorskip("sb3_contrib")
    with pytest.raises(AssertionError, match="not a training seed"):
        rl_baseline.train_and_evaluate(("hints-only", rl_baseline.ENV_ID, 10, 0))
