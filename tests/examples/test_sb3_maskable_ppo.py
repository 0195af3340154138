"""The SB3 example runs as a user runs it: MaskablePPO trained a few hundred
steps on a registered scenario with no wrapper, compared with the heuristics
by `dcbench.envs.evaluate`, stored, swept over its suite and submitted to a
copy of the leaderboard."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib", reason="the rl extra: pip install -e '.[rl]' (in dev too)")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sb3-maskable-ppo" / "train_and_submit.py"


@pytest.mark.slow  # trains MaskablePPO
def test_maskable_ppo_trains_is_compared_with_the_heuristics_and_reaches_the_leaderboard(tmp_path):
    board = tmp_path / "leaderboard"
    shutil.copytree(ROOT / "leaderboard", board)
    env = dict(os.environ, DCBENCH_POLICIES=str(tmp_path / "policies"), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "300", "--out", str(tmp_path / "out"),
                           "--leaderboard", str(board)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "nara2022/8-1x16, test seeds: mean acceptance ratio"
    names = [line.split()[0] for line in lines[1:5]]
    assert names == ["maskable-ppo", "tetris", "nalb", "random"]
    assert all(0 <= float(line.split()[1]) <= 1 for line in lines[1:5])
    assert lines[5].startswith("accepted: ") and "policy" in lines[5]
    spec = lines[-1].split(" as ")[-1]
    assert spec.startswith("policy:sha256=")
    page = (board / "README.md").read_text()
    assert f"`{spec}`" in page or spec in page  # ranked beside the papers' heuristics
    assert "`tetris:fit_last=no`" in page  # the papers' Tetris, as the leaderboard labels it
