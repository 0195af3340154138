"""A real third-party distribution (the example in examples/), installed with
pip, shows up, runs, and reaches the leaderboard; a broken one is reported."""

import os
import signal
import subprocess
import sys
import textwrap
import time
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


def dcbench(site, *args, strict=False, disable=None):
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("DCBENCH_STRICT_PLUGINS", None)
    env.pop("DCBENCH_DISABLE_PLUGINS", None)
    if strict:
        env["DCBENCH_STRICT_PLUGINS"] = "1"
    if disable is not None:
        env["DCBENCH_DISABLE_PLUGINS"] = disable
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


def test_the_installed_allocator_is_known_by_its_qualified_name_too(site):
    done = dcbench(site, "list", "dcbench-firstfit.firstfit")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("allocator dcbench-firstfit.firstfit\n")
    assert dcbench(site, "list", "firstfit").stdout == done.stdout  # the bare name, while no other plugin has it


def test_a_plugin_turned_off_is_not_loaded_and_is_listed_as_disabled(site, tmp_path):
    done = dcbench(site, "plugins", disable="dcbench-firstfit,broken")
    assert done.returncode == 0 and done.stderr == "", done.stderr  # the broken one is not even imported
    assert "dcbench-firstfit 0.1.0  (disabled by DCBENCH_DISABLE_PLUGINS)" in done.stdout
    assert "dcbench-broken 0.1.0  (disabled by DCBENCH_DISABLE_PLUGINS)" in done.stdout
    assert "(third-party)" not in done.stdout and "broken:" not in done.stdout
    done = dcbench(site, "run", "-a", "firstfit", "-t", "tiered:8,1x4", "-n", "8", "--out", str(tmp_path),
                   disable="dcbench_FirstFit")
    assert done.returncode == 2 and done.stderr.splitlines()[-1].startswith("Error: unknown allocator 'firstfit'")
    done = dcbench(site, "list", "allocators", disable="firstfitt")
    assert "dcbench-firstfit.firstfit" in done.stdout
    assert ("Warning: DCBENCH_DISABLE_PLUGINS turns nothing off: unknown third-party plugin 'firstfitt'; did you "
            "mean 'firstfit'? Known third-party plugins: broken, dcbench-broken, dcbench-firstfit, firstfit (set "
            "DCBENCH_STRICT_PLUGINS=1 to make this an error)") in done.stderr.splitlines()


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
    ranking = page.split("| rank | entry | kind |")[1].split("\n\n")[0]
    assert "| dcbench-firstfit.firstfit | heuristic |" in ranking and "| tetris | paper baseline |" in ranking


OTHER_LOCALITY = """
from dcbench import Column, hookimpl


def locality(tables, network):
    requests = tables.requests
    accepted = requests["measured"] & (requests["outcome"] == "accepted")
    spread = requests["spread"][accepted]
    return {"rack_local_share": float((spread == "server").sum() / accepted.sum()) if accepted.sum() else float("nan")}


@hookimpl
def register_metrics(register):
    register("locality", locality, description="rack_local_share: accepted requests on one server",
             columns=[Column("rack_local_share", "on one server", "higher", demands=("pool",))])
"""


@pytest.fixture(scope="module")
def crowded_site(tmp_path_factory):
    """The example beside another well-behaved distribution that registers a metric ``locality`` too, writing
    ``rack_local_share`` with another meaning."""
    root = tmp_path_factory.mktemp("crowded")
    target = root / "site"
    other = make_distribution(root, "dcbench-locality", "0.1.0", "locality", "dcbench_locality", OTHER_LOCALITY)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(EXAMPLE), str(other)], check=True)
    return target


def test_the_examples_suite_sweeps_beside_another_locality_and_the_bare_name_lists_both(crowded_site, tmp_path):
    done = dcbench(crowded_site, "sweep", "-s", "firstfit-small", "-a", "firstfit", "--out", str(tmp_path), "-q",
                   strict=True)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr
    import pyarrow.parquet as pq

    summary = pq.read_table(tmp_path / "summary.parquet").to_pylist()
    assert len(summary) == 9 and all(0 <= row["rack_local_share"] <= 1 for row in summary)
    done = dcbench(crowded_site, "list", "locality")
    assert done.returncode == 2 and done.stderr == (
        "Error: metric 'locality' is registered by more than one plugin; give 'dcbench-firstfit.locality' or "
        "'dcbench-locality.locality'\n")
    done = dcbench(crowded_site, "run", "-a", "firstfit", "-t", "tiered:8,1x4", "-n", "8", "--out", str(tmp_path),
                   "-m", "dcbench-firstfit.locality", "-m", "dcbench-locality.locality")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "Error: metrics 'dcbench-firstfit.locality' (plugin firstfit, dcbench-firstfit 0.1.0) and "
        "'dcbench-locality.locality' (plugin locality, dcbench-locality 0.1.0) both write the column "
        "'rack_local_share'; compute one of them (a run, sweep or submission holds one meaning per column)"]


def test_the_examples_own_tests_pass_beside_another_locality(crowded_site):
    env = dict(os.environ, PYTHONPATH=str(crowded_site), DCBENCH_STRICT_PLUGINS="dcbench-firstfit")
    env.pop("DCBENCH_DISABLE_PLUGINS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=EXAMPLE,
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


PROBE = """
import os
import time

from dcbench import PoolAllocator, Scenario, Suite, hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator

if os.environ.get("PROBE_INTERRUPT"):  # Ctrl-C while the plugin imports (a slow torch import, say)
    raise KeyboardInterrupt


def explode():
    raise RuntimeError("boom in init")


class NotAnException(BaseException):
    '''What a plugin may raise that is no Exception.'''


def explode_oddly():
    raise NotAnException("boom in init")


class RaisesItsOwn(PoolAllocator):
    def allocate(self, request, state):
        raise NotAnException("no Exception")


class RaisesGeneratorExit(PoolAllocator):
    def allocate(self, request, state):
        raise GeneratorExit


def train_without_a_gpu(**settings):
    raise ValueError("no GPU found")


def train_nothing(**settings):
    return None


class Sleeps(PoolAllocator):
    '''Says it started (a file PROBE_MARKER.<pid>), then sleeps for an hour.'''

    def allocate(self, request, state):
        open(f"{os.environ['PROBE_MARKER']}.{os.getpid()}", "w").close()
        time.sleep(3600)


@hookimpl
def register_allocators(register):
    register("probe_explodes", explode)
    register("probe_explodes_oddly", explode_oddly)
    register("probe_raises_its_own", RaisesItsOwn)
    register("probe_raises_generator_exit", RaisesGeneratorExit)
    register("probe_sleeps", Sleeps)
    register("probe_stray", TetrisAllocator, params=["penalty"])
    register("probe_learned", TetrisAllocator, learned=True, trainer="dcbench_probe:train_without_a_gpu")
    register("probe_lazy", TetrisAllocator, learned=True, trainer="dcbench_probe:train_nothing")
    register("probe_no_trainer", TetrisAllocator, learned=True, trainer=42)


@hookimpl
def register_workloads(register):
    raise RuntimeError("register boom")


@hookimpl
def register_metrics(register):
    raise NotAnException("register boom, oddly")


@hookimpl
def register_suites(register):
    register(Suite("probe", (Scenario("tiered:8,1x4", requests=8, seeds=(0, 1, 2, 3)),)))
    # No requests=: each run takes the workload's own default (its warm-up and 5,000 jobs).
    register(Suite("probe-jobs", (Scenario("ocs:4,servers=4", "vmjobs:load=12,warmup=5", seeds=(0,)),)))


@hookimpl
def register_commands(cli):
    @cli.command(name="run")
    def run():
        '''A run that takes no -a.'''

    @cli.command(name="probe-crash")
    def crash():
        '''A command with a bug.'''
        {}["missing"]
"""

PROBE_WARNINGS = [  # registration goes kind by kind: topologies, workloads, allocators, ...
    "Warning: plugin 'probeplug' (dcbench-probe 0.1.0) failed in register_workloads: RuntimeError: register boom "
    "(set DCBENCH_STRICT_PLUGINS=1 to make this an error)",
    "Warning: plugin 'probeplug' (dcbench-probe 0.1.0) registers allocator 'probe_stray': params holds 'penalty', "
    "not a dcbench.Param; ignored (set DCBENCH_STRICT_PLUGINS=1 to make this an error)",
    "Warning: plugin 'probeplug' (dcbench-probe 0.1.0) failed in register_metrics: NotAnException: register boom, "
    "oddly (set DCBENCH_STRICT_PLUGINS=1 to make this an error)",
]


def probe_warnings(stderr):
    return [line for line in stderr.splitlines() if "probe_stray" in line or "register boom" in line]


@pytest.fixture(scope="module")
def probe_site(tmp_path_factory):
    """A misbehaving distribution as pip would install it (its metadata and its module), written directly: fast."""
    site = tmp_path_factory.mktemp("probe_site")
    info = site / "dcbench_probe-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dcbench-probe\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[dcbench]\nprobeplug = dcbench_probe\n")
    (site / "dcbench_probe.py").write_text(PROBE)
    return site


INTERRUPTED = ("Interrupted: what was finished is kept and nothing is left half-written; run the same command again "
               "to go on")
TERMINATED = INTERRUPTED.replace("Interrupted", "Terminated")


def test_ctrl_c_while_a_plugin_imports_is_one_line_not_a_traceback(probe_site):
    env = dict(os.environ, PYTHONPATH=str(probe_site), PROBE_INTERRUPT="1")
    done = subprocess.run([sys.executable, "-m", "dcbench", "list"], capture_output=True, text=True, env=env)
    assert done.returncode == 130 and done.stderr.splitlines() == [INTERRUPTED]
    assert done.stdout == ""


@pytest.mark.parametrize("command", [["run", "-t", "tiered:8,1x4", "-n", "8"], ["sweep", "-s", "probe"]])
def test_a_broken_plugin_is_one_line_of_error_and_one_of_warning(probe_site, tmp_path, command):
    done = dcbench(probe_site, *command, "-a", "probe_explodes", "--out", str(tmp_path), "-q")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1] == ("Error: allocator 'dcbench-probe.probe_explodes' (plugin probeplug, dcbench-probe 0.1.0) "
                         "failed when built: RuntimeError: boom in init; report it to the plugin's authors")
    assert probe_warnings(done.stderr) == PROBE_WARNINGS


@pytest.mark.parametrize(("allocator", "failure"), [
    ("probe_explodes_oddly", "failed when built: NotAnException: boom in init"),
    ("probe_raises_its_own", "raised NotAnException: no Exception (request 0)"),
    ("probe_raises_generator_exit", "raised GeneratorExit (request 0)"),
])
def test_a_plugin_that_raises_what_is_no_exception_is_one_line_all_the_same(probe_site, tmp_path, allocator,
                                                                           failure):
    done = dcbench(probe_site, "run", "-t", "tiered:8,1x4", "-n", "8", "-a", allocator, "--out", str(tmp_path), "-q")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (f"Error: allocator 'dcbench-probe.{allocator}' (plugin probeplug, "
                                            "dcbench-probe 0.1.0) "
                                            f"{failure}; report it to the plugin's authors")
    assert probe_warnings(done.stderr) == PROBE_WARNINGS  # a hook that raises no Exception: a warning all the same
    assert list(tmp_path.iterdir()) == []


def test_a_plugin_cannot_replace_a_builtin_command(probe_site, tmp_path):
    done = dcbench(probe_site, "run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "8", "--out", str(tmp_path), "-q")
    assert done.returncode == 0, done.stderr
    assert ("Warning: plugin 'probeplug' (dcbench-probe 0.1.0) registers command 'run', already registered by "
            "'dcbench'; ignored (set DCBENCH_STRICT_PLUGINS=1 to make this an error)\n") in done.stderr
    assert "registry.py" not in done.stderr  # one line, not Python's warning with its source line


def test_a_sweep_warns_once_not_once_per_worker(probe_site, tmp_path):
    done = dcbench(probe_site, "sweep", "-s", "probe", "-a", "tetris", "-j", "2", "--out", str(tmp_path), "-q")
    assert done.returncode == 0, done.stderr
    assert probe_warnings(done.stderr) == PROBE_WARNINGS


def test_a_suite_that_leaves_the_episode_length_to_its_workload_can_be_submitted(probe_site, tmp_path):
    done = dcbench(probe_site, "sweep", "-s", "probe-jobs", "-a", "jcb", "--out", str(tmp_path / "r"), "-q")
    assert done.returncode == 0, done.stderr
    done = dcbench(probe_site, "leaderboard", "--root", str(tmp_path / "board"), "submit", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr  # it was refused: the check assumed 2 requests per server
    (folder,) = (tmp_path / "board" / "submissions").iterdir()
    assert folder.stat().st_mode & 0o055 == 0o055  # readable by all, like every folder of results


def test_a_third_party_trainer_that_raises_is_one_line(probe_site, tmp_path):
    done = dcbench(probe_site, "train", "-a", "probe_learned", "-t", "tiered:8,1x4", "--out", str(tmp_path / "x.pt"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("Error: allocator 'dcbench-probe.probe_learned' (plugin probeplug, "
                                            "dcbench-probe 0.1.0) "
                                            "failed in its trainer: ValueError: no GPU found; report it to the "
                                            "plugin's authors")


def test_a_third_party_command_that_raises_is_one_line(probe_site):
    done = dcbench(probe_site, "probe-crash")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("Error: command 'probe-crash' of plugin 'probeplug' (dcbench-probe 0.1.0) "
                                            "failed: KeyError: 'missing'; report it to the plugin's authors")


def test_a_trainer_that_writes_no_checkpoint_is_one_line_and_a_trainer_that_is_none_is_not_registered(probe_site,
                                                                                                     tmp_path):
    done = dcbench(probe_site, "train", "-a", "probe_lazy", "-t", "tiered:8,1x4", "--out", str(tmp_path / "x.pt"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("Error: allocator 'dcbench-probe.probe_lazy' (plugin probeplug, "
                                            "dcbench-probe 0.1.0) "
                                            "trainer returned None, not the path of the checkpoint it wrote; "
                                            "report it to the plugin's authors")
    assert ("Warning: plugin 'probeplug' (dcbench-probe 0.1.0) registers allocator 'probe_no_trainer': its trainer "
            "42 is neither a callable nor a 'module:attr'; ignored (set DCBENCH_STRICT_PLUGINS=1 to make this an "
            "error)") in done.stderr.splitlines()


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_stops_a_parallel_sweep_at_once_and_leaves_nothing_behind(probe_site, tmp_path, stop):
    # (PYTHONFAULTHANDLER: a sweep that does not stop prints its threads' stacks on SIGABRT, for the failure)
    env = dict(os.environ, PYTHONPATH=str(probe_site), PROBE_MARKER=str(tmp_path / "started"), PYTHONFAULTHANDLER="1")
    env.pop("DCBENCH_STRICT_PLUGINS", None)
    out = tmp_path / "out"
    # A command run in a terminal takes Ctrl-C; pytest may run where SIGINT is ignored (a shell's background
    # job), and a child inherits that: the sweep gets SIGINT's default back, as in a terminal.
    sweep = subprocess.Popen([sys.executable, "-m", "dcbench", "sweep", "-s", "probe", "-a", "probe_sleeps",
                              "-j", "2", "--out", str(out), "-q"],
                             env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 120
        while len(list(tmp_path.glob("started.*"))) < 2 and time.time() < deadline:
            time.sleep(0.1)
        workers = [int(path.suffix[1:]) for path in tmp_path.glob("started.*")]
        assert len(workers) == 2, "both workers should be in a run"
        if stop == "ctrl-c":
            os.killpg(sweep.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: to the command and its workers
        else:
            sweep.send_signal(signal.SIGTERM)  # what `kill` or `timeout` does: to the command alone
        try:
            _, stderr = sweep.communicate(timeout=60)  # not the hour the runs would take
        except subprocess.TimeoutExpired:
            sweep.send_signal(signal.SIGABRT)
            pytest.fail(f"the sweep still runs 60 s after {stop}; its stacks:\n{sweep.communicate(timeout=30)[1]}")
    finally:
        if sweep.poll() is None:  # the test failed: leave no sleeping workers behind
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait()
    if stop == "ctrl-c":
        assert sweep.returncode == 130 and stderr.splitlines()[-1] == INTERRUPTED
    else:  # as a shell reports a command that SIGTERM stopped: 128 + 15
        assert sweep.returncode == 143 and stderr.splitlines()[-1] == TERMINATED
    assert "Traceback" not in stderr and "leaked" not in stderr
    assert not out.exists() or list(out.iterdir()) == []  # no run finished, and no half-written one left
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_sigterm_stops_a_run_with_one_line_and_leaves_nothing_behind(probe_site, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(probe_site), PROBE_MARKER=str(tmp_path / "started"))
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, "-m", "dcbench", "run", "-a", "probe_sleeps", "-t", "tiered:8,1x4",
                            "-n", "8", "--out", str(out), "-q"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not list(tmp_path.glob("started.*")) and time.time() < deadline:
            time.sleep(0.1)
        assert list(tmp_path.glob("started.*")), "the run should be under way"
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 143 and stderr.splitlines()[-1] == TERMINATED, stderr
    assert "Traceback" not in stderr
    assert not out.exists() or list(out.iterdir()) == []
