from __future__ import annotations

import json
import os
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from dcbench import Network, PoolBuilder, Reject
from dcbench.harness import Runner, get_registry
from dcbench.registry import reset_registry


@pytest.fixture(scope="session")
def registry():
    return get_registry()


@pytest.fixture
def runner(registry):
    return Runner(registry)


@pytest.fixture(scope="session")
def random_sweep(tmp_path_factory):
    """A whole `nara2022` sweep of the random allocator (a few seconds); copy it before changing it."""
    from click.testing import CliRunner

    from dcbench.commands import cli

    out = tmp_path_factory.mktemp("sweep") / "nara2022"
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(out), "-j", "1", "-q"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def random_board(random_sweep, tmp_path_factory):
    """A leaderboard with `random_sweep` submitted and no pages yet; tests change a copy (`board_copy`)."""
    return board_of(random_sweep, tmp_path_factory.mktemp("random_board"))


def board_of(results: Path, folder: Path) -> Path:
    """A new leaderboard at ``folder``/leaderboard with the sweep ``results`` submitted."""
    from click.testing import CliRunner

    from dcbench.commands import cli

    root = folder / "leaderboard"
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(results)])
    assert result.exit_code == 0, result.output
    return root


def board_copy(board: Path, tmp_path: Path) -> Path:
    """A copy of the leaderboard ``board`` at ``tmp_path``/leaderboard (nothing in one names its own folder)."""
    root = tmp_path / "leaderboard"
    shutil.copytree(board, root, dirs_exist_ok=True)
    return root


@pytest.fixture
def fresh_registry():
    """A registry rebuilt for this test (and forgotten after it)."""
    reset_registry()
    yield
    reset_registry()


def load_script(path: Path):
    """A script of benchmarks/ as a module (skipping the test module where an installed wheel has no benchmarks/)."""
    import importlib.util
    import sys

    if not path.exists():
        pytest.skip("no benchmarks/ here (an installed wheel)", allow_module_level=True)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def tiered(spec: str = "tiered:8,1x4") -> Network:
    return Network.compile(get_registry().build("topology", spec).obj)


class Scripted:
    """A pool allocator that accepts request i only where ``mask[i]``, on the first (or last) servers a builder allows
    (the bounds' tests: no such policy beats a bound)."""

    def __init__(self, mask, last=False):
        self.mask, self.last = mask, last

    def reset(self, network, rng):
        self.builder = PoolBuilder(network)

    def allocate(self, request, state):
        if not self.mask[request.id]:
            return Reject("scripted")
        builder = self.builder
        builder.start(request, state)
        while builder.is_open:
            allowed = np.flatnonzero(builder.allowed())
            if not len(allowed):
                return Reject("no_server")
            builder.add(self.pick(builder, allowed))
        return builder.result()

    def pick(self, builder, allowed):
        return allowed[-1] if self.last else allowed[0]


@pytest.fixture
def small_network() -> Network:
    return tiered("tiered:8,1x4")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def strict_json(path):
    """A provenance record, parsed as every JSON reader would: NaN is refused."""
    def refuse(constant):
        raise AssertionError(f"{path.name} holds {constant}, which is not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


def random_allocator_module(tmp_path, monkeypatch, module: str, name: str) -> None:
    """An importable plugin module ``module`` that registers the built-in
    random allocator as ``name`` (a stand-in for a third party's)."""
    import sys

    (tmp_path / f"{module}.py").write_text(
        "from dcbench import hookimpl\n"
        "from dcbench.plugins.allocators.random_server import RandomAllocator\n\n"
        "@hookimpl\n"
        "def register_allocators(register):\n"
        f"    register({name!r}, RandomAllocator, description='the random allocator, as a third party')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)


def failed_export_keeps_the_previous_files(folder, monkeypatch, train_again) -> None:
    """A trainer exported ``folder/e.pt`` once; ``train_again`` trains on and
    exports again while saving the plot (the last file exported) fails as on
    a full disk: the checkpoint, record, curve and plot stay as they were,
    together, and no temporary file is left."""
    import errno

    from matplotlib.figure import Figure

    exported = ("e.pt", "e.json", "e.curve.parquet", "e.png")
    before = {name: (folder / name).read_bytes() for name in exported}

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full_disk)
    with pytest.raises(OSError):
        train_again()
    assert {name: (folder / name).read_bytes() for name in exported} == before
    assert sorted(path.name for path in folder.iterdir()) == sorted([*exported, "e.pt.train"])


def numpy_dispatch_settings() -> list[dict[str, str]]:
    """Environments that make numpy use each SIMD level this CPU has above its build's baseline, highest first
    (``NPY_DISABLE_CPU_FEATURES`` turns off a level and those above it): they stand in for older CPUs, whose
    vectorised math functions may round differently."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    present = [target for target in __cpu_dispatch__ if __cpu_features__.get(target)]
    return [{}] + [{"NPY_DISABLE_CPU_FEATURES": " ".join(present[i:])} for i in reversed(range(len(present)))]


def run_tables_digest(runs: list[tuple[str, str, str, int, int]], env: dict[str, str]) -> str:
    """A digest of the tables of `runs` (allocator, topology, workload, requests,
    seed), made in a fresh interpreter under the environment variables `env`
    (which pick the CPU kernels BLAS, MKL or torch use)."""
    import os
    import subprocess
    import sys

    script = f"""
import hashlib
import numpy as np
from dcbench.harness import Runner

digest = hashlib.sha256()
for run in {runs!r}:
    result = Runner().run(*run)
    for name, column in sorted({{**result.tables.requests, **result.tables.timeline}}.items()):
        values = repr(column.tolist()).encode() if column.dtype == object else np.ascontiguousarray(column).tobytes()
        digest.update(name.encode() + values)
    digest.update(repr(sorted(result.summary.items())).encode())
print(digest.hexdigest())
"""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env=dict(os.environ, **env)).stdout


def installed_plugin(folder, monkeypatch, name: str, source: str) -> str:
    """The plugin module ``tp_<name>`` (its ``source``) installed in ``folder``
    as the distribution ``tp-<name>``, with an entry point ``name``, and the
    process's registry loaded again with it; found by a spawned process too
    (a submission's replay), which starts from this process's sys.path. The
    distribution's name, which qualifies what it registers."""
    import importlib
    import sys

    import dcbench.registry

    module = f"tp_{name}"
    info = folder / f"{module}-1.0.dist-info"
    info.mkdir(parents=True)
    (folder / f"{module}.py").write_text(source)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tp-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[dcbench]\n{name} = {module}\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, module, raising=False)  # another test's module of that name
    importlib.invalidate_caches()
    monkeypatch.setattr(dcbench.registry.manager, "_REGISTRY", None)
    return f"tp-{name}"


# The leaderboard page in a real browser: Debian's chromium driven by Playwright (no browser download; no network).
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def static_text(name: str) -> str:
    """The text of ``dcbench/publishing/static/<name>`` (leaderboard.js, leaderboard.css), as the package ships it."""
    return (resources.files("dcbench.publishing") / "static" / name).read_text(encoding="utf-8")


def inline_static(page: str) -> str:
    """``page`` with its placeholders ``/*STYLE*/`` and ``/*SCRIPT*/`` replaced by the text of leaderboard.css
    and leaderboard.js, as the page's generator inlines them in its ``<style>`` and ``<script>``."""
    assert "/*STYLE*/" in page and "/*SCRIPT*/" in page
    page = page.replace("/*STYLE*/", static_text("leaderboard.css"))
    return page.replace("/*SCRIPT*/", static_text("leaderboard.js"))


@pytest.fixture(scope="module")
def chromium_browser():
    """A headless Chromium (Debian's, through Playwright) for this test module. Skips where chromium or
    playwright is missing, but fails under CI (the env var CI set), whose .ci/run installs both."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs Debian's chromium")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("playwright is not installed; .ci/run installs it with the dev extra")
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(browser, path: Path, fragment: str = "", width: int = 1400, height: int = 900, javascript: bool = True):
    """A new Playwright page (in its own context) showing the file ``path`` from its ``file://`` URL, with
    ``#fragment`` if given, in a ``width`` x ``height`` viewport; once its script has wired it up
    (``body[data-ready]``). Its ``js_errors`` list collects the page's uncaught errors and console errors."""
    context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=javascript)
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda error: page.js_errors.append(str(error)))
    page.on("console", lambda message: page.js_errors.append(message.text) if message.type == "error" else None)
    page.goto(Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else ""), wait_until="load")
    if javascript:
        page.wait_for_function("document.body.dataset.ready === 'true'", timeout=10_000)
    return page
