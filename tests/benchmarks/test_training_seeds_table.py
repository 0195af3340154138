"""benchmarks/training_seeds.py: the training-seed tables of docs/learned/ say what the candidates' records say, and
validation selects the shipped checkpoint."""

from pathlib import Path

import pytest

from tests.conftest import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "training_seeds.py"
training_seeds = load_script(SCRIPT)

CASES = [  # page, shipped checkpoint, candidates' pattern, higher is better
    ("a2c_multistep.md", "plugins/allocators/a2c_multistep/checkpoints/ocs-64.pt", "ocs-64-seed*.pt", False),
    ("gnn_ppo.md", "plugins/allocators/gnn_ppo/checkpoints/tiered-8-1x1.pt", "tiered-8-1x1-seed*.pt", True),
]


@pytest.mark.parametrize("page, shipped, pattern, higher", CASES)
def test_the_table_quotes_the_records_and_validation_selects_the_shipped_one(page, shipped, pattern, higher):
    paths = [ROOT / shipped] + sorted((ROOT / "benchmarks" / "training-seeds").glob(pattern))
    candidates = training_seeds.read_candidates(paths, higher)
    assert training_seeds.selected(candidates, higher)[1] == ROOT / shipped
    text = (ROOT / "docs" / "learned" / page).read_text()
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and line.count("|") == 7 and line.split("|")[1].strip().isdigit()]
    assert [(int(r[0]), r[1].strip("`"), r[2], r[5]) for r in rows] == [
        (seed, path.name, f"{validation:.4f}", "selected" if path == ROOT / shipped else "")
        for seed, path, validation, _ in candidates]


def test_validation_alone_selects():
    candidates = [(0, Path("a.pt"), 0.12, "a"), (1, Path("b.pt"), 0.11, "b"), (2, Path("c.pt"), 0.11, "c")]
    assert training_seeds.selected(candidates, higher=False)[1] == Path("b.pt")
    assert training_seeds.selected(candidates, higher=True)[1] == Path("a.pt")
