"""A real third-party distribution (the example in examples/), installed with
pip, shows up, runs, and reaches the leaderboard; a broken one is reported."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"

[project.entry-points.dcbench]
{entry} = "{module}"
"""

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "dcbench-firstfit"


def make_distribution(root, name, version, entry, module, source):
    project = root / name
    project.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT.format(name=name, version=version, entry=entry, module=module))
    (project / f"{module}.py").write_text(textwrap.dedent(source))
    return project


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An isolated folder the two distributions are pip-installed into."""
    root = tmp_path_factory.mktemp("third_party")
    target = root / "site"
    good = EXAMPLE
    broken = make_distribution(root, "dcbench-broken", "0.1.0", "broken", "dcbench_broken",
                               "raise ImportError('needs a library that is not installed')\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(good), str(broken)], check=True)
    return target


def dcbench(site, *args, strict=False):
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("DCBENCH_STRICT_PLUGINS", None)
    if strict:
        env["DCBENCH_STRICT_PLUGINS"] = "1"
    return subprocess.run([sys.executable, "-m", "dcbench", *args], capture_output=True, text=True, env=env)


def test_the_installed_allocator_is_listed(site):
    done = dcbench(site, "list", "allocators")
    assert done.returncode == 0, done.stderr
    assert "firstfit" in done.stdout and "from: firstfit" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1 and "broken (dcbench-broken 0.1.0) failed to load: ImportError" in warnings[0]


def test_the_installed_allocator_runs(site, tmp_path):
    done = dcbench(site, "run", "-a", "firstfit", "-t", "tiered:8,1x4", "-n", "30", "--out", str(tmp_path), "-q")
    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.iterdir())) == 1


def test_plugins_shows_the_distribution_and_version(site):
    done = dcbench(site, "plugins")
    assert "dcbench-firstfit 0.1.0" in done.stdout and "(third-party)" in done.stdout
    assert "broken: plugin broken (dcbench-broken 0.1.0)" in done.stdout


def test_strict_mode_makes_the_broken_plugin_an_error(site):
    done = dcbench(site, "list", strict=True)
    assert done.returncode == 2
    assert done.stderr.startswith("Error: plugin broken (dcbench-broken 0.1.0) failed to load")
    assert "Traceback" not in done.stderr


def test_the_example_runs_a_suite_and_enters_the_leaderboard(site, tmp_path):
    results, board = tmp_path / "results", tmp_path / "leaderboard"
    done = dcbench(site, "sweep", "-s", "nara2022", "-a", "firstfit,tetris", "--out", str(results), "-q")
    assert done.returncode == 0, done.stderr
    done = dcbench(site, "leaderboard", "--root", str(board), "submit", str(results))
    assert done.returncode == 0 and "accepted" in done.stdout, done.stderr
    done = dcbench(site, "leaderboard", "--root", str(board))
    assert done.returncode == 0, done.stderr
    page = (board / "README.md").read_text()
    ranking = page.split("| rank | allocator | mean over scenarios |")[1].split("\n\n")[0]
    assert "`firstfit`" in ranking and "`tetris`" in ranking
