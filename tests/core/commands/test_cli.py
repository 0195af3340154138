import re
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench.commands import cli


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_run_writes_one_folder_per_seed_and_prints_a_summary(tmp_path):
    result = invoke("run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "40", "--seeds", "2", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    folders = sorted(p for p in tmp_path.iterdir())
    assert len(folders) == 2
    seeds = sorted(pq.read_table(f / "summary.parquet").column("seed")[0].as_py() for f in folders)
    assert seeds == [0, 1]
    assert "acceptance_ratio" in result.output and "± " in result.output
    lines = result.output.splitlines()  # the resolved specs, each whole on its own line, ready to copy
    assert "topology   tiered:channels=8,ratio=1x4,pods=2,racks=2,servers=16,cpu=16,mem=16" in lines
    assert "workload   uniform:max_cpu=128,max_mem=128,min_cpu=1,min_mem=1,wait=yes,pairs=reference" in lines
    assert "requests   40 per seed" in lines


def test_run_with_one_seed(tmp_path):
    result = invoke("run", "-a", "random", "-t", "tiered:8,1x4", "-n", "10", "--seed", "5", "--out", str(tmp_path),
                    "-q")
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    assert pq.read_table(folder / "summary.parquet").column("seed")[0].as_py() == 5


@pytest.mark.parametrize("args, fragment", [
    (["-a", "tetriss"], "unknown allocator 'tetriss'; did you mean 'tetris'?"),
    (["-a", "tetris", "-t", "tiered:8,1x5"], "tiered: ratio='1x5' is not one of 1x1, 1x4, 1x8, 1x16"),
    (["-a", "tetris", "-t", "tiered:8,,1x4"], "malformed spec"),
    (["-a", "tetris:penalty=2"], "penalty=2 must be between 0 and 1"),
    (["-a", "tetris", "-w", "uniform:hold=-3"], "must be at least 1"),
    (["-a", "tetris", "--seed", "1", "--seeds", "2"], "not both"),
    (["-a", "tetris", "-n", "0"], "at least 1"),
    (["-a", "tetris", "--seed", "-5"], "--seed must be at least 0, got -5"),
    (["-a", "tetris", "--seeds", "0"], "--seeds must be at least 1, got 0"),
    (["-a", "tetris", "-n", "9999999999"], "--requests must be at most 1,000,000, got 9,999,999,999"),
    (["-a", "tetris", "-n", "100000000"], "--requests must be at most 1,000,000, got 100,000,000"),  # 10 GB in 60 s
    (["-a", "tetris", "--seeds", "99999999999"], "--seeds must be at most 10,000"),
    (["-a", "tetris", "--seeds", "10001"], "--seeds must be at most 10,000, got 10,001"),
    (["-a", "tetris", "--seed", str(10**23)], "--seed must be at most 9,007,199,254,740,992"),
    (["-a", "tetris", "-w", "uniform:max_cpu=nan"], "max_cpu='nan' is not an integer"),
    (["-a", "tetris:scale=inf"], "tetris: scale='inf' is not a finite number"),
    (["-a", "jcb", "-t", "ocs:4", "-w", "vmjobs:min_gbps=0"], "min_gbps='0' must be greater than 0 and at most"),
    (["-a", "jcb", "-t", "ocs:4,port_gbps=1e308"], "port_gbps='1e308' must be at most 1000000"),
    (["-a", "jcb", "-t", "ocs:4,disk=1e308"], "ocs: disk='1e308' must be at most 1000000000000000"),  # sums overflowed
    # click's own usage errors, one line too, with where to look
    (["-a", "tetris", "-n", "abc"], "Invalid value for '--requests' / '-n': 'abc' is not a valid integer; "
                                    "see `cli run --help`"),
    (["-a", "tetris", "--bogus"], "No such option '--bogus'"),
    ([], "Missing option '--allocator' / '-a'; see `cli run --help`"),
    (["-a", "gnn_ppo", "--checkpoint", "my,weights.pt"], "a checkpoint's path may not contain ','"),
])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, args, fragment):
    result = invoke("run", *args, "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("args, line", [
    (["--bogus"], "Error: No such option '--bogus'; see `cli --help`"),
    (["run", "-a"], "Error: Option '-a' requires an argument; see `cli run --help`"),
    (["leaderboard", "--root"], "Error: Option '--root' requires an argument; see `cli leaderboard --help`"),
    (["leaderboard", "submit"], "Error: Missing argument 'RESULTS'; see `cli leaderboard submit --help`"),
])
def test_a_usage_error_at_any_level_is_one_line_that_names_the_help_to_read(args, line):
    result = invoke(*args)
    assert result.exit_code == 2 and result.output == line + "\n"


def test_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    result = invoke("run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "8", "--out", str(blocker / "results"))
    assert result.exit_code == 2
    assert "cannot write results to" in result.output and "--out" in result.output
    assert blocker.read_text() == "a file, not a folder"


def test_list_shows_every_kind_with_parameters():
    result = invoke("list")
    assert result.exit_code == 0
    for text in ("topologies", "tiered", "uniform", "random", "tetris", "penalty=0.9", "acceptance", "suites",
                 "serves: pool"):
        assert text in result.output
    only = invoke("list", "allocators")
    assert "tetris" in only.output and "tiered" not in only.output
    bad = invoke("list", "widgets")
    assert bad.exit_code == 2 and "unknown kind or plugin 'widgets'." in bad.output
    misspelt = invoke("list", "topologys")
    assert misspelt.exit_code == 2 and "did you mean 'topologies'?" in misspelt.output
    assert "topologys" not in misspelt.output.split("Known kinds and plugins:")[1]
    assert "tiered" in invoke("list", "topology").output
    assert "did you mean 'tiered'?" in invoke("list", "tireed").output


def test_list_of_one_plugin_explains_every_parameter():
    ocs = invoke("list", "ocs")
    assert ocs.exit_code == 0 and ocs.output.startswith("topology ocs\n")
    assert "    tors             integer from 2 to 2048; default 16, positional — ToR switches (racks)\n" in ocs.output
    assert "    max_hops         one of 1, 2; default 1 — " in ocs.output
    tetris = invoke("list", "tetris").output
    assert "serves: pool, job demands\n" in tetris and "fit_last         yes or no; default no" in tetris
    assert "    scale            number > 0; default 10 — " in tetris
    assert "trained with `dcbench train`" in invoke("list", "gnn_ppo").output
    suite = invoke("list", "nara2022").output
    assert "ranked by acceptance_ratio (higher is better)" in suite
    assert "  16-1x4           tiered:16,1x4  uniform:pairs=reference  128 requests  seeds 0,1,2,3,4\n" in suite
    assert "no parameters" in invoke("list", "acceptance").output


def test_plugins_lists_modules_with_versions():
    from dcbench._version import __version__

    result = invoke("plugins")
    assert result.exit_code == 0
    assert "dcbench.plugins.allocators.tetris" in result.output and f"dcbench {__version__}" in result.output


def test_the_installed_version_is_the_one_run_ids_hash():
    # 0.3.2 shipped with the package saying 0.3.2 and its run ids (and the leaderboard) saying 0.3.1
    import importlib.metadata

    from dcbench._version import __version__

    assert importlib.metadata.version("dcbench") == __version__, "reinstall: pip install -e ."
    assert invoke("--version").output.endswith(f", version {__version__}\n")  # (the runner calls it "cli")


def test_the_console_script_exits_2_without_a_traceback(tmp_path):
    script = [sys.executable, "-c", "from dcbench.commands import main; main()"]
    done = subprocess.run(script + ["run", "-a", "nalb-typo", "--out", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and done.stderr.startswith("Error: unknown allocator")


def test_bench_prints_a_table():
    result = invoke("bench", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "50", "--repeat", "1")
    assert result.exit_code == 0, result.output
    assert "| tiered:8,1x4 | 64 | tetris | 50 |" in result.output


def test_bench_takes_allocators_listed_with_commas_as_sweep_does():
    result = invoke("bench", "-a", "random,nalb:route=reference,queue=lifo", "-t", "tiered:8,1x4", "-n", "20",
                    "--repeat", "1")
    assert result.exit_code == 0, result.output
    assert [line.split(" | ")[2] for line in result.output.splitlines() if line.startswith("| tiered")] == [
        "random", "nalb:route=reference,queue=lifo"]


@pytest.mark.parametrize("args, fragment", [
    (["-a", "tetris", "-a", "tetriss"], "unknown allocator 'tetriss'; did you mean 'tetris'?"),
    (["-a", "tetris", "-t", "tiered:8,1x3"], "ratio='1x3' is not one of"),
    (["-a", "tetris", "-w", "uniform:max_cpu=0"], "max_cpu='0' must be at least 1"),
    (["-a", "tetris", "--repeat", "0"], "--repeat must be at least 1, got 0"),
    (["-a", "tetris", "--repeat", "3000"], "--repeat must be at most 100, got 3,000"),
    (["-a", "tetris", "-t", "tiered:8,1x4", "-w", "vmjobs"], "topology 'tiered' serves pool demands but workload "
                                                            "'vmjobs' makes job demands"),
    (["-a", "gnn_ppo:checkpoint=/nonexistent/x.pt", "-t", "tiered:8,1x4"], "/nonexistent/x.pt"),
    (["-a", "random,random"], "allocator 'random' is given twice (also as 'random'); give each once"),
    (["-a", "tetris", "-a", "tetris:penalty=0.9"], "allocator 'tetris:penalty=0.9' is given twice (also as 'tetris')"),
    (["-a", "tetris", "-n", "0"], "--requests must be at least 1, got 0"),
    (["-a", "tetris", "-n", "1000001"], "--requests must be at most 1,000,000, got 1,000,001"),
    (["-a", "ccf", "-t", "tiered:8,1x4"], "allocator 'ccf' serves job demands and none of the topologies "
                                          "tiered:8,1x4 does; give a topology for it with -t"),
])
def test_bench_checks_every_spec_before_its_table_starts(args, fragment):
    result = invoke("bench", "-n", "10", "--repeat", "1", *args)
    assert result.exit_code == 2 and fragment in result.output
    assert result.output.startswith("Error:")  # no half table above the error


def test_a_file_system_error_no_command_foresaw_is_still_one_line(tmp_path, monkeypatch):
    import dcbench.commands.run

    def fails(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "x"))

    monkeypatch.setattr(dcbench.commands.run, "_seeds", fails)
    result = invoke("run", "-a", "tetris", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.output == f"Error: cannot use '{tmp_path / 'x'}': Permission denied; check the path and its " \
                            "permissions\n"


def test_a_full_disk_is_named_as_such_not_as_a_permission_problem(tmp_path, monkeypatch):
    import errno

    import dcbench.commands.run

    def fails(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")  # as pyarrow and matplotlib raise it: no file

    monkeypatch.setattr(dcbench.commands.run, "_seeds", fails)
    result = invoke("run", "-a", "tetris", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.output == ("Error: no space left to write the output: No space left on device; free some space "
                             "(or give another --out / --root) and run it again; what was there is kept\n")


def test_an_error_of_several_lines_from_a_plugin_is_printed_on_one(tmp_path, monkeypatch):
    import dcbench.commands.run
    from dcbench import SpecError

    def fails(*args, **kwargs):
        raise SpecError("malformed spec 'x': something\n  and more\n")

    monkeypatch.setattr(dcbench.commands.run, "_seeds", fails)
    result = invoke("run", "-a", "tetris", "--out", str(tmp_path))
    assert result.exit_code == 2 and result.output == "Error: malformed spec 'x': something and more\n"


def test_a_library_warning_is_one_line_and_said_once(tmp_path, monkeypatch):
    import warnings

    import dcbench.commands.run

    seeds = dcbench.commands.run._seeds

    def warns(*args, **kwargs):
        for _ in range(3):
            warnings.warn("overflow encountered in multiply\n  x = y * z", RuntimeWarning)
        return seeds(*args, **kwargs)

    monkeypatch.setattr(dcbench.commands.run, "_seeds", warns)
    result = invoke("run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "8", "--out", str(tmp_path), "-q")
    assert result.exit_code == 0
    assert result.stderr == "Warning: overflow encountered in multiply x = y * z\n"


def test_an_unknown_command_is_one_line():
    result = invoke("xyzzy")
    assert result.exit_code == 2 and result.output == "Error: No such command 'xyzzy'; see `cli --help`\n"


def test_running_out_of_memory_is_one_line(tmp_path, monkeypatch):
    import dcbench.commands.run

    def too_big(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(dcbench.commands.run, "_seeds", too_big)
    result = invoke("run", "-a", "tetris", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.output == "Error: ran out of memory; ask for fewer requests or seeds, or a smaller topology\n"


def test_a_closed_pipe_is_not_an_error_message():
    # `dcbench list | head -1`: the rest of the output has nowhere to go, which is no problem of the user's.
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # every write fails with EPIPE, as once `head` has exited
    script = [sys.executable, "-c", "from dcbench.commands import main; main()", "list"]
    done = subprocess.run(script, stdout=write_end, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    assert done.returncode == 1  # click's exit for a closed pipe
    assert done.stderr == "", done.stderr


def test_a_terminal_that_cannot_show_every_character_gets_the_summary_anyway(tmp_path):
    import os

    script = [sys.executable, "-c", "from dcbench.commands import main; main()"]
    done = subprocess.run(script + ["run", "-a", "random", "-t", "tiered:8,1x4", "-n", "16", "--seeds", "2", "--out",
                                    str(tmp_path)], capture_output=True, env=dict(os.environ, PYTHONIOENCODING="ascii"))
    assert done.returncode == 0, done.stderr
    assert b"acceptance_ratio" in done.stdout and b"\\xb1" in done.stdout  # "mean \xb1 sd": the escape of "±"
    assert b"acceptance ratio \\u2191" in done.stdout  # and of the arrow that says which way is better



@pytest.mark.parametrize("args", [["run", "-a", "tetris", "--out", ""], ["sweep", "-s", "nara2022", "-a", "random",
                                  "--out", ""], ["report", ""], ["leaderboard", "--root", " "],
                                  ["train", "-a", "gnn_ppo", "-t", "tiered:8,1x4", "--out", ""]])
def test_an_empty_path_is_refused_not_taken_for_the_current_folder(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2 and "is empty (an unset shell variable?); give a path" in result.output
    assert list(tmp_path.iterdir()) == []


CHATTY = '''
from dcbench import hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator

print("chatty: imported")


class Chatty(TetrisAllocator):
    def allocate(self, request, state):
        print("chatty: allocating")
        return super().allocate(request, state)


def talk(tables, network):
    print("chatty: measuring")
    return {"chatty_words": 1.0}


@hookimpl
def register_allocators(register):
    print("chatty: registering")
    register("chatty", Chatty, demands=("pool", "job"), description="Tetris that prints")


@hookimpl
def register_metrics(register):
    register("chatty_metric", talk, description="a metric that prints")
'''


@pytest.mark.parametrize("command", [
    ["run", "-a", "chatty", "-t", "tiered:8,1x4", "-n", "6", "-q", "-m", "chatty_metric"],
    ["sweep", "-s", "nara2022", "-a", "chatty", "-j", "1", "-q", "-m", "chatty_metric"],
    ["bench", "-a", "chatty", "-t", "tiered:8,1x4", "-n", "6", "--repeat", "1"],
])
def test_what_a_plugin_prints_goes_to_stderr_not_into_the_results(tmp_path, monkeypatch, fresh_registry, command,
                                                                   capfd):
    import importlib.metadata

    (tmp_path / "tp_chatty.py").write_text(CHATTY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tp_chatty", raising=False)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [importlib.metadata.EntryPoint("chatty", "tp_chatty", group)])
    out = [] if command[0] == "bench" else ["--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*command, *out])
    assert result.exit_code == 0, result.output
    assert "chatty:" not in result.stdout  # stdout: the results only
    assert result.stdout.strip()  # ... which are there
    stderr = result.stderr + capfd.readouterr().err  # (a sweep's workers write to the process's own stderr)
    for said in ("imported", "registering", "allocating", "measuring"):
        if command[0] != "bench" or said != "measuring":  # (bench computes no metrics)
            assert f"chatty: {said}" in stderr


BROKEN = '''
from dcbench import hookimpl
from dcbench.plugins.allocators.tetris import TetrisAllocator


class Broken(TetrisAllocator):
    def allocate(self, request, state):
        raise RuntimeError("oops")


@hookimpl
def register_allocators(register):
    register("broken", Broken, description="Tetris that raises")
'''


def test_bench_leaves_a_broken_third_party_allocator_out_of_its_default_set_with_one_line(
        tmp_path, monkeypatch, fresh_registry):
    import importlib.metadata

    (tmp_path / "tp_broken.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tp_broken", raising=False)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [importlib.metadata.EntryPoint("broken", "tp_broken", group)])
    result = CliRunner().invoke(cli, ["bench", "-t", "tiered:8,1x4", "-n", "6", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    assert "| tetris |" in result.stdout and "broken" not in result.stdout
    (line,) = [line for line in result.stderr.splitlines() if "broken" in line]
    assert "bench leaves out allocator" in line and "RuntimeError: oops" in line and "name it with -a" in line
    named = CliRunner().invoke(cli, ["bench", "-a", "broken", "-t", "tiered:8,1x4", "-n", "6", "--repeat", "1"])
    assert named.exit_code == 2 and "RuntimeError: oops" in named.output


def table_rows(output):
    """The rows of `run`'s table: {column: (heading, value)}."""
    rows = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 3:
            rows[cells[1]] = (cells[0], cells[2])
    return rows


def test_the_run_table_of_jobs_shows_blocking_reconfigurations_latency_and_loss_and_small_numbers_show(tmp_path):
    result = invoke("run", "-a", "jcb", "-t", "ocs:16", "-w", "vmjobs:load=66,warmup=50", "-n", "350", "--out",
                    str(tmp_path))
    assert result.exit_code == 0, result.output
    rows = table_rows(result.output)
    assert list(rows) == ["blocking_probability", "cpu_util", "mem_util", "disk_util", "reconfigurations_per_job",
                          "latency_us", "packet_loss"]  # no spread (nothing crosses pods on OCS), no acceptance
    assert rows["blocking_probability"] == ("blocking probability ↓", "0.0886")
    assert rows["packet_loss"] == ("packet loss (M/M/1/K) ↓", "7.01e-09")  # it was 0.000 ± 0.000
    assert rows["latency_us"][1] == "0.0729" and rows["cpu_util"] == ("cpu utilisation ↑", "0.750")
    assert "↑ higher is better, ↓ lower is better" in result.output
    assert re.search(r"┃ +seed 0 ┃", result.output)  # one seed: its value, no spread


def test_the_run_table_of_pools_shows_acceptance_utilisation_link_tiers_and_spread(tmp_path):
    result = invoke("run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "40", "--seeds", "2", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    rows = table_rows(result.output)
    assert list(rows) == ["acceptance_ratio", "cpu_util", "mem_util", "link_util_tier1", "link_util_tier2",
                          "link_util_tier3", "spread_server", "spread_rack", "spread_pod", "spread_cross_pod",
                          "servers_per_request"]
    assert rows["link_util_tier2"][0] == "tier-2 link utilisation ↑" and rows["spread_rack"][0] == "on one rack"
    assert all(re.fullmatch(r"[0-9.]+ ± [0-9.e-]+", value) for _, value in rows.values()), rows
    assert "mean ± sd, 2 seeds" in result.output


def test_run_n_counts_measured_requests_after_the_warmup_as_gym_make_and_evaluate(tmp_path):
    result = invoke("run", "-a", "jcb", "-t", "ocs:16,servers=2", "-w", "vmjobs:load=8,warmup=100", "-n", "30",
                    "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "requests   30 per seed, after a warm-up of 100\n" in result.stdout
    assert "accepted" in result.stdout and "Note:" not in result.stderr
    [summary] = [pq.read_table(path).to_pylist()[0] for path in tmp_path.glob("*/summary.parquet")]
    assert summary["requests"] == 130 and 0 <= summary["blocking_probability"] <= 1


@pytest.mark.parametrize("value, shown", [(0.9371, "0.937"), (0.06285, "0.0629"), (14.7378, "14.7"), (0.0, "0"),
                                          (8.5e-08, "8.50e-08"), (0.00123, "0.00123"), (1234.5, "1,234"),
                                          (float("nan"), "n/a"), (-0.5, "-0.500")])
def test_numbers_are_shown_to_three_significant_digits_and_small_ones_in_scientific_notation(value, shown):
    from dcbench.publishing.report import significant

    assert significant(value) == shown


@pytest.mark.parametrize("mean, sd, shown", [(0.467, 0.00355, "0.467 ± 0.004"), (5.6759, 0.2563, "5.68 ± 0.26"),
                                             (0.298, 0.000884, "0.298 ± 0.001"),
                                             (0.298, 0.0003, "0.298 ± 3.00e-04"), (3.3e-08, 4.5e-08,
                                                                                     "3.30e-08 ± 4.50e-08"),
                                             (0.5, float("nan"), "0.500"), (0.0, 0.0, "0 ± 0")])
def test_a_mean_and_its_spread_are_shown_to_the_same_places(mean, sd, shown):
    from dcbench.publishing.report import mean_and_spread

    assert mean_and_spread(mean, sd) == shown


HEADLINED = '''
from dcbench import Column, hookimpl


def paths(tables, network):
    return {"path_share": 0.25, "unmeasured": float("nan"), "quiet": 1.0}


@hookimpl
def register_metrics(register):
    register("paths", paths, description="a third party's",
             columns=[Column("path_share", "share of paths", "lower", headline=True),
                      Column("unmeasured", "never measured", None, headline=True)])
'''


def test_a_third_party_metric_is_in_the_run_table_by_its_column_declaration(tmp_path, monkeypatch,
                                                                              fresh_registry):
    import importlib.metadata

    (tmp_path / "tp_paths.py").write_text(HEADLINED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tp_paths", raising=False)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [importlib.metadata.EntryPoint("paths", "tp_paths", group)])
    run = ("run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "16", "--out", str(tmp_path / "out"))
    assert "path_share" not in table_rows(invoke(*run).output)  # not asked for: not computed
    result = invoke(*run, "-m", "paths")
    assert result.exit_code == 0, result.output
    rows = table_rows(result.output)
    assert rows["path_share"] == ("share of paths ↓", "0.250")  # after the built-in metrics', as registered
    assert "unmeasured" not in rows and "quiet" not in rows  # NaN in every seed; not declared
    assert list(rows)[0] == "acceptance_ratio" and list(rows)[-1] == "path_share"


def test_runs_indexes_a_folder_in_80_columns_and_as_csv(tmp_path, monkeypatch):
    import csv
    import io

    monkeypatch.setenv("COLUMNS", "80")
    out = str(tmp_path / "results")
    for args in (["-a", "tetris", "-t", "tiered:8,1x4", "-n", "20", "--seeds", "2"],
                 ["-a", "nalb", "-t", "tiered:16,1x8", "-n", "20"],
                 ["-a", "jcb", "-t", "ocs:16,servers=2", "-w", "vmjobs:load=8,warmup=10", "-n", "30"]):
        assert invoke("run", *args, "--out", out, "-q").exit_code == 0
    result = invoke("runs", out)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split() == ["run", "id", "allocator", "topology", "workload", "n", "seed", "acceptance"]
    assert lines[1].split()[1:-1] == ["tetris", "tiered:8,1x4", "uniform", "20", "0"]  # pools first, by scenario
    assert lines[3].split()[1:-1] == ["nalb", "tiered:16,1x8", "uniform", "20", "0"]
    assert lines[4] == "" and lines[5].split()[-1] == "blocking"  # then jobs, ranked by blocking
    # "vmjobs:load=8,warmup=10" does not fit beside the rest: cut short (the CSV has it whole)
    assert lines[6].split()[1:-1] == ["jcb", "ocs:servers=2", "vmjobs:load=8,w…", "40", "0"]  # 10 + 30 requests
    table = list(csv.DictReader(io.StringIO(invoke("runs", out, "--csv").stdout)))
    assert [row["run_id"] for row in table] == [line.split()[0] for line in lines[1:4] + lines[6:]]
    folders = {p.name for p in (tmp_path / "results").iterdir()}
    assert {row["run_id"] for row in table} == folders
    jcb = table[-1]
    assert jcb["topology"].startswith("ocs:tors=16,servers=2,") and jcb["allocator"] == "jcb:reconfigure=yes"
    assert float(jcb["blocking_probability"]) == pytest.approx(1 - float(jcb["acceptance_ratio"]))
    assert jcb["scenario"] == "ocs:servers=2 vmjobs:load=8,warmup=10" and jcb["seed"] == "0"


def test_runs_says_what_it_leaves_out_and_refuses_what_is_no_folder_of_runs(tmp_path):
    out = tmp_path / "results"
    assert invoke("run", "-a", "random", "-t", "tiered:8,1x4", "-n", "10", "--seeds", "2", "--out", str(out),
                  "-q").exit_code == 0
    damaged, kept = sorted(out.iterdir())
    (damaged / "requests.parquet").write_bytes(b"PAR1 truncated")
    (out / "mine").mkdir()
    (out / "mine" / "summary.parquet").write_bytes(b"a sweep's, say")
    result = invoke("runs", str(out))
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == [kept.name]
    assert f"Note: left out {damaged}, which has a damaged requests.parquet" in result.stderr
    assert f"Note: {out / 'mine'} holds a sweep; `dcbench runs {out / 'mine'}` lists its runs" in result.stderr
    for folder, said in ((tmp_path / "none", f"no results folder '{tmp_path / 'none'}'"),
                         (kept, f"'{kept}' is a single run's folder; give the folder that holds it ({out})")):
        result = invoke("runs", str(folder))
        assert result.exit_code == 2 and result.output.startswith(f"Error: {said}")
        assert len(result.output.splitlines()) == 1
    result = invoke("runs", str(tmp_path / "results" / "mine"))
    assert result.exit_code == 0 and result.stdout == "" and "no runs in" in result.stderr


def test_bench_times_the_data_centre_and_128_tor_fabrics_by_default(monkeypatch):
    # #34: the default table has a row at 65,536 servers and one on an optical fabric of 128 ToRs.
    import dcbench.running.bench as bench

    asked = []
    monkeypatch.setattr(bench, "run_bench", lambda registry, allocators, topologies, *rest, **options:
                        asked.append((allocators, topologies)))
    result = CliRunner().invoke(cli, ["bench"])
    assert result.exit_code == 0, result.output
    (allocators, topologies), = asked
    assert "tiered:32,1x4,pods=64,racks=64" in topologies and "ocs:128,servers=64" in topologies
    assert {"tetris", "nalb", "jcb"} <= set(allocators)
