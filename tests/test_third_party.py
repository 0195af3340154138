"""A real third-party distribution, installed with pip, shows up and runs."""

import os
import subprocess
import sys
import textwrap

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

FIRST_FIT = '''
"""First fit: the lowest-numbered allowed server, as a third-party plugin."""
import numpy as np
from dcbench import PoolAllocator, hookimpl


class FirstFit(PoolAllocator):
    def choose(self, builder, allowed):
        return int(np.flatnonzero(allowed)[0])


@hookimpl
def register_allocators(register):
    register("firstfit", FirstFit, description="lowest-numbered allowed server", demands=("pool",))
'''


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
    good = make_distribution(root, "dcbench-firstfit", "0.3.0", "firstfit", "dcbench_firstfit", FIRST_FIT)
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
    assert "dcbench-firstfit 0.3.0" in done.stdout and "(third-party)" in done.stdout
    assert "broken: plugin broken (dcbench-broken 0.1.0)" in done.stdout


def test_strict_mode_makes_the_broken_plugin_an_error(site):
    done = dcbench(site, "list", strict=True)
    assert done.returncode == 2
    assert done.stderr.startswith("Error: plugin broken (dcbench-broken 0.1.0) failed to load")
    assert "Traceback" not in done.stderr
