"""The static leaderboard page, opened from disk in a real headless Chromium."""

import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from dcbench.commands import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=5000"]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs Debian's chromium")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    root = tmp_path_factory.mktemp("board")
    results = root / "results"
    runner = CliRunner()
    swept = runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", "random,tetris", "--out", str(results), "-q"])
    assert swept.exit_code == 0
    assert runner.invoke(cli, ["leaderboard", "--root", str(root / "lb"), "submit", str(results)]).exit_code == 0
    assert runner.invoke(cli, ["leaderboard", "--root", str(root / "lb")]).exit_code == 0
    return root / "lb" / "index.html"


def chromium(*args, cwd):
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={cwd / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def test_rankings_and_plots_render(page, tmp_path):
    dom = chromium("--dump-dom", page.as_uri(), cwd=tmp_path).stdout
    assert 'data-images-loaded="true"' in dom, dom[-2000:]
    assert 'class="ranking" data-suite="nara2022"' in dom
    assert dom.count("<details>") == 12 and "tetris" in dom and "random" in dom


def test_screenshot(page, tmp_path):
    shot = tmp_path / "leaderboard.png"
    chromium(f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri(), cwd=tmp_path)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
