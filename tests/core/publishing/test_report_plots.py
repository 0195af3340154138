import math
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench import ResultsError
from dcbench.commands import cli
from dcbench.publishing.report import metric_table, ranking, write_between_markers
from dcbench.running.stats import mean_ci, t975


def test_mean_ci_uses_students_t():
    mean, half, n = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (mean, n) == (3.0, 5)
    assert half == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert math.isnan(mean_ci([7.0])[1]) and mean_ci([float("nan"), 1.0])[2] == 1
    # exact quantiles (scipy.stats.t.ppf(0.975, dof)): tabulated to 30, and beyond
    exact = {1: 12.706205, 3: 3.182446, 4: 2.776445, 21: 2.079614, 26: 2.055529, 31: 2.039513, 35: 2.030108,
             60: 2.000298, 130: 1.978380, 1000: 1.962339}
    assert all(abs(t975(dof) - quantile) < 2e-5 for dof, quantile in exact.items())


ROWS = [
    {"scenario": s, "allocator": a, "seed": seed, "acceptance_ratio": v + 0.01 * seed}
    for s, values in {"s1": {"x": 0.5, "y": 0.7}, "s2": {"x": 0.9, "y": 0.6}}.items()
    for a, v in values.items() for seed in range(3)
]


def test_tables_mark_the_best_and_rank():
    table = metric_table(ROWS, "acceptance_ratio")
    assert "| s1 | 0.510 ± 0.025 | **0.710 ± 0.025** |" in table
    text = ranking(ROWS, "acceptance_ratio")
    assert "| s1 | y > x |" in text and "| s2 | x > y |" in text and "Best on: x 1, y 1" in text
    assert "| s1 | x > y |" in ranking(ROWS, "acceptance_ratio", higher_is_better=False)


def test_a_cell_says_on_how_many_runs_it_rests_when_some_have_no_value():
    rows = [dict(r) for r in ROWS]
    rows[0]["acceptance_ratio"] = None  # s1, x, seed 0: nothing measured (a null in the combined summary)
    del rows[1]["acceptance_ratio"]  # s1, x, seed 1: a metric that left its column out
    rows[3]["acceptance_ratio"] = float("nan")  # s1, y, seed 0
    table = metric_table(rows, "acceptance_ratio")
    assert "| s1 | 0.520 (1 of 3 runs) | **0.715 ± 0.064** (2 of 3 runs) |" in table
    assert "| s2 | **0.910 ± 0.025** | 0.610 ± 0.025 |" in table


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_an_allocator_with_no_value_in_a_scenario_takes_neither_the_bold_nor_the_lead(higher_is_better):
    rows = [{**r, "acceptance_ratio": float("nan")} if r["allocator"] == "x" and r["scenario"] == "s1" else r
            for r in ROWS]  # x: every run without a value (as ccf:reconfigure=no's latency on 64 ToRs)
    table = metric_table(rows, "acceptance_ratio", higher_is_better)
    assert "| s1 | – | **0.710 ± 0.025** |" in table
    text = ranking(rows, "acceptance_ratio", higher_is_better)
    assert "| s1 | y; no value: x |" in text  # not ranked last: not ranked at all
    assert text.endswith(f"Best on: x {1 if higher_is_better else 0}, y {1 if higher_is_better else 2} scenarios.")


def test_a_metric_no_run_has_a_value_of_ranks_no_one_and_the_summary_after_a_sweep_says_so(capsys):
    from dcbench.commands.sweep import print_ranking
    from dcbench.registry import get_registry

    rows = [{**r, "acceptance_ratio": float("nan")} if r["scenario"] == "s1" else r for r in ROWS]
    text = ranking(rows, "acceptance_ratio")
    assert "| s1 | no value: x, y |" in text and text.endswith("Best on: x 1, y 0 scenarios.")
    print_ranking(rows, "acceptance_ratio", True, get_registry())
    printed = capsys.readouterr().out
    assert "nan" not in printed
    assert [[text.strip() for text in line.split("│")[2:4]] for line in printed.splitlines()
            if line.startswith("│ s")] == [["–", "–"], ["0.910", "0.610"]]


def test_a_report_shows_a_third_party_primary_metric_and_says_when_one_seed_gives_no_interval():
    from dcbench.publishing.report import report

    rows = [{**r, "jitter": r["acceptance_ratio"] / 10} for r in ROWS if r["seed"] == 0]
    text = report(rows, "Suite mine", "jitter", higher_is_better=False)
    assert "Mean of seed 0 alone (one seed: no confidence interval); the best mean of each row in bold." in text
    # three significant digits, so that a small mean is not rounded to a few
    assert "#### jitter\n\n| scenario | x | y |\n|---|---:|---:|\n| s1 | **0.0500** | 0.0700 |" in text
    assert text.index("#### jitter") < text.index("#### Acceptance ratio") < text.index("#### Ranking by jitter")
    assert text.count("#### Acceptance ratio") == 1
    many = report(ROWS, "Suite mine", "acceptance_ratio")
    assert "over seeds [0, 1, 2];" in many and many.count("#### Acceptance ratio") == 1


def test_a_report_leaves_out_what_is_a_headline_of_the_other_demand_kind_alone():
    from dcbench.publishing.report import report

    pools = [{**r, "blocking_probability": 1 - r["acceptance_ratio"], "link_util_tier1": 0.5} for r in ROWS]
    text = report(pools, "Suite pools", "acceptance_ratio")  # blocking is one minus acceptance for pools
    assert "#### Tier-1 link utilisation" in text and "Blocking probability" not in text
    jobs = [{"scenario": r["scenario"], "allocator": r["allocator"], "seed": r["seed"], "reconfigurations_per_job": 0.0,
             "blocking_probability": r["acceptance_ratio"], "link_util_tier1": 0.5} for r in ROWS]
    text = report(jobs, "Suite jobs", "blocking_probability", higher_is_better=False)
    assert "#### Blocking probability" in text and "Tier-1 link utilisation" not in text


def test_a_pipe_in_a_name_does_not_split_a_table_cell():
    rows = [{**r, "scenario": r["scenario"] + "|x"} for r in ROWS]  # a third-party suite's label, say
    for table in (metric_table(rows, "acceptance_ratio"), ranking(rows, "acceptance_ratio")):
        row = next(line for line in table.splitlines() if line.startswith("| s1"))
        assert row.startswith("| s1\\|x |")
        assert row.replace("\\|", "").count("|") == table.splitlines()[0].count("|")  # as many cells as the header


def test_allocators_are_named_by_the_options_that_tell_them_apart():
    from dcbench.publishing.report import labels
    from dcbench.registry import get_registry
    from dcbench.running.labels import default_specs

    defaults = default_specs(get_registry())
    assert defaults["tetris"] == "tetris:penalty=0.9,scale=10,fit_last=no"
    specs = ["tetris:penalty=0.9,scale=10,fit_last=yes", "nalb:route=reference,queue=lifo,hops=3",
             "bestfit:local=no", "bestfit:local=yes", "random", "mine:a=1"]
    defaults["nalb"] = "nalb:route=shortest,queue=fifo,hops=3"  # whatever the built-in's, for this test
    assert labels(specs, defaults) == {
        "tetris:penalty=0.9,scale=10,fit_last=yes": "tetris:fit_last=yes",  # not "tetris": not its defaults
        "nalb:route=reference,queue=lifo,hops=3": "nalb:route=reference,queue=lifo",
        "bestfit:local=no": "bestfit:local=no", "bestfit:local=yes": "bestfit:local=yes",
        "random": "random", "mine:a=1": "mine",  # a plugin that is not installed: its plain name
    }
    rows = [{**r, "allocator": "tetris:penalty=0.9,scale=10,fit_last=yes" if r["allocator"] == "x" else "y"}
            for r in ROWS]
    assert "| scenario | tetris:fit_last=yes | y |" in metric_table(rows, "acceptance_ratio", defaults=defaults)
    assert "| scenario | tetris | y |" in metric_table(rows, "acceptance_ratio")  # without defaults, as before


def test_a_second_variant_with_the_same_colour_is_drawn_apart():
    colours = paper_colours()
    specs = ["tetris:fit_last=no", "tetris:fit_last=yes", "nalb", "ccf:reconfigure=no", "ccf:reconfigure=yes"]
    assert [colours.shares(s, specs) for s in specs] == [False, True, False, False, False]


def test_allocators_are_drawn_in_the_colours_their_plugins_declare():
    from dcbench.publishing.figures import Colours

    colours = paper_colours()  # the papers': agent blue, Tetris orange, NALB green, NULB red, random purple, ...
    specs = ["gnn_ppo:checkpoint=x.pt", "tetris:penalty=0.9", "nalb:route=balance", "nulb", "random",
             "a2c_multistep", "ccf:reconfigure=yes", "ccf:reconfigure=no", "jcb:reconfigure=yes", "bestfit", "mine"]
    assert [colours.of(spec, index) for index, spec in enumerate(specs)] == [
        "C0", "C1", "C2", "C3", "C4", "C0", "C5", "C7", "C6", "C9", "C8"]  # undeclared: C8 or C9 by place
    options = Colours({"m": {"a=1": "red", "b=2": "blue"}})  # the first option a spec has; no "": undeclared
    assert [options.of(spec, 0) for spec in ("m:b=2,a=1", "m:b=2", "m:b=22", "m")] == ["red", "blue", "C8", "C8"]


def test_paired_difference_against_the_best_baseline():
    from dcbench.publishing.report import paired_table

    rows = [dict(r) for r in ROWS] + [
        {"scenario": s, "allocator": "learned", "seed": seed, "acceptance_ratio": v}
        for s, v in (("s1", 0.75), ("s2", 0.85)) for seed in range(3)]
    text = paired_table(rows, "acceptance_ratio", {"x", "y"})
    # s1: best baseline y (0.71 mean), learned 0.75 constant -> paired Δ varies with the seed
    assert "| s1 | learned | y | +0.0400 ± 0.0248 |" in text
    assert "| s2 | learned | x | -0.0600 ± 0.0248 |" in text
    assert "at least the best baseline's mean on 1 of 2 scenarios" in text


def test_a_paired_difference_is_shown_to_three_significant_digits_with_its_sign():
    from dcbench.publishing.report import signed_ci

    # the 64-ToR agent against jcb: three decimals would show -0.001 ± 0.003
    assert signed_ci(-0.00122, 0.00314) == "-0.00122 ± 0.00314"
    assert signed_ci(0.2, 0.0) == "+0.200 ± 0.000"
    assert signed_ci(0.0, 0.0) == "+0 ± 0"
    assert signed_ci(0.0123, float("nan")) == "+0.0123"


def test_write_between_markers_keeps_the_prose(tmp_path):
    page = tmp_path / "report.md"
    page.write_text("# Title\n\nprose before\n")
    write_between_markers(page, "TABLE 1", "s")
    write_between_markers(page, "TABLE 2", "s")
    text = page.read_text()
    assert text.startswith("# Title\n\nprose before\n") and "TABLE 2" in text and "TABLE 1" not in text
    page.write_text(text + "\nprose after\n")
    write_between_markers(page, "TABLE 3", "s")
    assert page.read_text().endswith("prose after\n") and "TABLE 3" in page.read_text()


def test_a_report_that_cannot_be_written_leaves_the_page_as_it_was(tmp_path, monkeypatch):
    import os

    page = tmp_path / "report.md"
    write_between_markers(page, "TABLE 1", "s")
    before = page.read_text()

    def interrupted(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(ResultsError, match=r"cannot update '.*report.md': No space left on device; choose another"):
        write_between_markers(page, "TABLE 2", "s")
    assert page.read_text() == before and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def make_fifo(path):
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command, make_target, fragment", [
    ("report", lambda tmp: tmp, "is a folder; give a Markdown file with --out"),  # a folder where the page should be
    ("report", lambda tmp: make_fifo(tmp / "pipe"), "is not a regular file (a device or a pipe)"),  # would hang
    ("plot", lambda tmp: tmp / "results" / "summary.parquet", "cannot write plots to"),  # a file where a folder
    ("plot", lambda tmp: folder_where_a_figure_goes(tmp / "figures"),
     "fig3_link_utilisation.png' is a folder; give another --out, or move it"),  # found before fig2 is replaced
    ("report", lambda tmp: a_file(tmp / "afile") / "x.md", "afile' is a file, not a folder; give a Markdown file"),
    ("plot", lambda tmp: a_file(tmp / "afile") / "plots", "afile' is a file, not a folder; choose another folder"),
])
def test_report_and_plot_outputs_that_cannot_be_written_are_one_line(random_sweep, tmp_path, command, make_target,
                                                                      fragment):
    runner = CliRunner()
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    result = runner.invoke(cli, [command, str(results), "--out", str(make_target(tmp_path))])
    assert result.exit_code == 2 and result.output.startswith("Error: ") and fragment in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert [p for p in tmp_path.rglob("*.png") if p.is_file()] == []  # no figure of the set was written


def a_file(path):
    path.write_text("mine")
    return path


def folder_where_a_figure_goes(out):
    (out / "fig3_link_utilisation.png").mkdir(parents=True)
    return out


@pytest.mark.parametrize("command", [["report"], ["plot"], ["leaderboard", "submit"]])
def test_a_single_runs_folder_is_refused_and_a_folder_of_runs_only_by_submit(tmp_path, command):
    runner = CliRunner()
    results = tmp_path / "results"
    assert runner.invoke(cli, ["run", "-a", "tetris", "-t", "tiered:8,1x4", "-n", "8", "--out", str(results),
                               "-q"]).exit_code == 0
    (run,) = results.iterdir()
    if command[0] == "leaderboard":
        command = ["leaderboard", "--root", str(tmp_path / "board"), "submit"]
        said = {results: "holds single runs, not a sweep", run: "is a single run, not a sweep"}
    else:
        said = {run: f"is a single run's folder; give the folder that holds it ({results}) to compare its runs"}
    for folder, what in said.items():
        result = runner.invoke(cli, [*command, str(folder)])
        assert result.exit_code == 2 and what in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        if command[0] == "leaderboard":
            assert "dcbench sweep" in result.output
    if command[0] != "leaderboard":  # a folder of runs is read as a sweep's (the tests below)
        assert runner.invoke(cli, [*command, str(results)]).exit_code == 0


def test_plot_and_report_from_a_sweep(tmp_path):
    runner = CliRunner()
    assert runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", "tetris,random", "--out", str(tmp_path),
                               "-j", "1", "-q"]).exit_code == 0
    result = runner.invoke(cli, ["plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    pngs = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert pngs == ["fig2_acceptance_cpu_memory.png", "fig3_link_utilisation.png", "fig5_spread.png",
                    "fig8_size_brackets.png"]
    for name in pngs:
        assert (tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = tmp_path / "report.md"
    result = runner.invoke(cli, ["report", str(tmp_path), "--out", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "#### Acceptance ratio" in text and "| 8-1x16 |" in text and "Ranking by acceptance_ratio" in text
    # A second sweep of the same suite goes to its own section; the first block stays.
    result = runner.invoke(cli, ["report", str(tmp_path), "--out", str(page), "--section", "nara2022-other"])
    assert result.exit_code == 0, result.output
    again = page.read_text()
    assert again.startswith(text.rstrip("\n")) and "### Suite nara2022 (nara2022-other)" in again
    assert again.count("<!-- dcbench report nara2022-other: start -->") == 1


def test_results_of_another_version_are_reported_with_a_note(random_sweep, tmp_path, monkeypatch):
    import dcbench

    runner = CliRunner()
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    same = runner.invoke(cli, ["report", str(results)])
    assert same.exit_code == 0 and "Note:" not in same.output
    made = dcbench.__version__
    monkeypatch.setattr("dcbench._version.__version__", "9.0.0")  # an upgrade since the sweep
    for command in (["report", str(results)], ["plot", str(results)]):
        result = runner.invoke(cli, command)
        assert result.exit_code == 0, result.output
        assert (f"Note: '{results}' was made by dcbench {made}, this is 9.0.0: how metrics are counted "
                "may have changed since (see the CHANGELOG); run the sweep again to compare like with like"
                ) in result.stderr


def test_report_on_a_folder_without_results(tmp_path):
    hint = "give the --out folder of `dcbench run` (results by default) or of `dcbench sweep`"
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "nara2022")])
    assert result.exit_code == 2 and f"no results folder '{tmp_path / 'nara2022'}'; {hint}" in result.output
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert f"'{tmp_path}' holds no dcbench results (no run folders, no summary.parquet); {hint}" in result.output
    (tmp_path / "notes.txt").write_text("not results")
    result = CliRunner().invoke(cli, ["plot", str(tmp_path / "notes.txt")])
    assert result.exit_code == 2 and f"is a file, not a results folder; {hint}" in result.output
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "summary.parquet").write_bytes(b"garbage")  # a sweep's folder in it
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert f"'{tmp_path}' holds no runs of its own; give one of the folders in it: {tmp_path / 'sweep'}" \
        in result.output
    (tmp_path / "summary.parquet").write_bytes(b"garbage")
    result = CliRunner().invoke(cli, ["plot", str(tmp_path)])
    assert result.exit_code == 2 and "corrupt results file" in result.output


def test_paired_table_for_a_metric_where_lower_is_better():
    from dcbench.publishing.report import paired_table

    rows = [{"scenario": s, "allocator": a, "seed": seed, "blocking_probability": value}
            for s, values in (("s1", {"ccf": 0.4, "jcb": 0.1, "agent": 0.05}),
                              ("s2", {"ccf": 0.4, "jcb": 0.2, "agent": 0.4}))
            for a, value in values.items() for seed in (0, 1)]
    table = paired_table(rows, "blocking_probability", {"ccf", "jcb"}, higher_is_better=False)
    assert "| s1 | agent | jcb | -0.0500 ± 0.0000 | 2.00× |" in table
    assert "| s2 | agent | jcb | +0.200 ± 0.000 | 0.50× |" in table
    assert "lower than the best baseline's on 1 of 2 scenarios" in table
    assert "1.25× on average (from 0.50× to 2.00×)" in table


def test_job_sweeps_get_the_ocs_figures(tmp_path):
    rows = [{"scenario": f"16x32-load{load}", "allocator": a, "seed": seed, "topology": "ocs:tors=16,servers=32",
             "workload": f"vmjobs:load={load}", "blocking_probability": 0.1, "latency_us": 0.1,
             "packet_loss": 0.01, "reconfigurations_per_job": 0.5}
            for load in (54, 66) for a in ("ccf:reconfigure=no", "jcb:reconfigure=yes") for seed in (0, 1)]
    paths = draw_sweep(rows, tmp_path, "odcn2025", "odcn2025")
    assert [p.name for p in paths] == ["jobs_16x32.png"] and paths[0].stat().st_size > 10_000


def test_a_job_figure_draws_the_loads_of_its_network_size_only_and_says_over_which_seeds(tmp_path, monkeypatch):
    rows = [{"scenario": f"{tors}-load{load}", "allocator": a, "seed": seed, "topology": f"ocs:tors={tors},servers=32",
             "workload": f"vmjobs:load={load}", "blocking_probability": tors / 100, "latency_us": 0.1,
             "packet_loss": 0.01, "reconfigurations_per_job": 0.5}
            for tors, loads in ((16, (54, 66, 78)), (32, (300,))) for load in loads for a in ("ccf", "jcb")
            for seed in (0, 1, 2)]
    figures = drawn_figures(monkeypatch)
    draw_sweep(rows, tmp_path, "odcn2025", "odcn2025")
    assert list(figures) == ["jobs_16x32.png", "jobs_32x32.png"]
    for (name, figure), (tors, loads) in zip(figures.items(), ((16, 3), (32, 1))):
        assert figure._suptitle.get_text() == f"odcn2025: {tors} ToRs × 32 servers, mean over seeds 0–2 with 95% CI"
        lines = data_lines(figure.axes[0])
        assert len(lines) == 2 and all(list(line.get_ydata()) == [tors / 100] * loads for line in lines)
        assert all(line.get_linestyle() == "None" for line in lines)  # points, no line from load to load


def test_two_fabrics_of_one_size_get_a_job_figure_each_not_one_over_the_other(tmp_path, monkeypatch):
    fixed = "ocs:tors=16,servers=32,reconfigurable=no"
    rows = [{"scenario": topology, "allocator": "jcb", "seed": seed, "topology": topology, "workload": "vmjobs:load=66",
             "blocking_probability": 0.1, "latency_us": 0.1, "packet_loss": 0.01, "reconfigurations_per_job": 0.5}
            for topology in ("ocs:tors=16,servers=32,reconfigurable=yes", fixed) for seed in (0, 1)]
    figures = drawn_figures(monkeypatch)
    draw_sweep(rows, tmp_path, "mine", "odcn2025")
    assert list(figures) == ["jobs_0.png", "jobs_1.png"]
    assert figures["jobs_1.png"]._suptitle.get_text() == f"mine: {fixed}, mean over seeds 0, 1 with 95% CI"


def test_every_figure_says_over_which_seeds_its_points_and_bars_are_taken(tmp_path, monkeypatch):
    figures = drawn_figures(monkeypatch)
    draw_sweep(tiered_rows(seeds=(0, 2, 7)), tmp_path, "mine")
    titles = {name: figure._suptitle.get_text() for name, figure in figures.items()}
    assert titles["fig2_acceptance_cpu_memory.png"] == "mine: acceptance and utilisation, mean over seeds 0, 2, 7 " \
                                                       "with 95% CI"
    assert titles["fig3_link_utilisation.png"] == "mine: link utilisation per tier, mean over seeds 0, 2, 7 with 95% CI"
    assert titles["fig5_spread.png"].endswith("the 9 runs' shares at one oversubscription (8, 16, 32 channels per "
                                              "server link × seeds 0, 2, 7)")
    assert titles["fig8_size_brackets.png"] == "mine: acceptance by request size, mean over seeds 0, 2, 7 with 95% " \
                                               "CI\nabove each size: the requests offered in it, seeds 0, 2, 7 together"
    figures.clear()
    rows = tiered_rows(seeds=(0, 2, 7))
    for row in rows[:3]:  # tetris on 8-1x1, every seed: nothing accepted, so no share of anything
        row.update({column: float("nan") for column in ("spread_server", "spread_rack", "spread_pod",
                                                         "spread_cross_pod")})
    draw_sweep(rows, tmp_path, "mine")
    assert "each bar: the mean of the 6 to 9 runs' shares at one" in figures["fig5_spread.png"]._suptitle.get_text()
    figures.clear()
    draw_sweep(tiered_rows(seeds=(3,)), tmp_path, "mine")
    assert figures["fig2_acceptance_cpu_memory.png"]._suptitle.get_text() == \
        "mine: acceptance and utilisation, seed 3 alone (no CI)"


def drawn_figures(monkeypatch):
    """The figures plot_sweep draws, by file name, kept instead of written (their artists stay readable)."""
    import dcbench.plugins.topologies.tiered_figures as tiered
    import dcbench.publishing.figures as plots

    figures = {}
    for module in (plots, tiered):
        monkeypatch.setattr(module, "save_figure", lambda figure, path, dpi: figures.setdefault(path.name, figure))
    return figures


def paper_colours():
    """The colours the built-in allocators declare."""
    from dcbench.publishing.figures import allocator_colours
    from dcbench.registry import get_registry

    return allocator_colours(get_registry())


def draw_sweep(rows, out_dir, name, suite="nara2022"):
    """`plot_sweep` of ``rows`` with the built-in ``suite``'s declared figures."""
    from dcbench.publishing.figures import plot_sweep, suite_figures
    from dcbench.registry import get_registry

    figures = suite_figures(get_registry().entries("suite")[suite])
    return plot_sweep(rows, out_dir, name, figures, paper_colours())


SUITE_ORDER = [(channels, ratio) for channels in (8, 16, 32) for ratio in (1, 4, 8, 16)]
INTERLEAVED = [(channels, ratio) for ratio in (1, 4, 8, 16) for channels in (32, 8, 16)]


def tiered_rows(order=SUITE_ORDER, allocators=("tetris", "random"), seeds=range(5), pods=2):
    """A tiered sweep's summary in which every fig2 / fig3 metric of a topology is
    channels / 100 + ratio / 10,000 (its channels can be read back from a point's
    height) and the spread shares depend on channels and seed."""
    rows = []
    for channels, ratio in order:
        for allocator in allocators:
            for seed in seeds:
                row = {"scenario": f"{channels}-1x{ratio}-{pods}", "allocator": allocator, "seed": seed,
                       "topology": f"tiered:channels={channels},ratio=1x{ratio},pods={pods},racks=2",
                       "workload": "uniform:pairs=reference", "spread_server": 0.01 * seed,
                       "spread_rack": 0.3 + channels / 100 + 0.01 * seed + (0.1 if allocator == "random" else 0),
                       "spread_pod": 0.2, "spread_cross_pod": ratio / 100,
                       **{f"accepted_size_{k}": k for k in range(1, 9)},
                       **{f"acceptance_size_{k}": 0.5 for k in range(1, 9)}}  # 2k offered
                for metric in ("acceptance_ratio", "cpu_util", "mem_util", "link_util_tier1", "link_util_tier2",
                               "link_util_tier3"):
                    row[metric] = channels / 100 + ratio / 10_000
                rows.append(row)
    return rows


def data_lines(axis):
    """An axis's series of points, one per allocator (filled dots, or open squares for a shared colour)."""
    return [line for line in axis.lines if line.get_marker() in ("o", "s")]


def separators(axis):
    return sorted(line.get_xdata()[0] for line in axis.lines
                  if line.get_marker() in ("None", None, "") and len(set(line.get_xdata())) == 1)


@pytest.mark.parametrize("order", [SUITE_ORDER, INTERLEAVED], ids=["suite-order", "interleaved"])
def test_fig2_and_fig3_draw_points_in_channel_groups_and_join_none(tmp_path, monkeypatch, order):
    figures = drawn_figures(monkeypatch)
    draw_sweep(tiered_rows(order), tmp_path, "nara2022")
    for name in ("fig2_acceptance_cpu_memory.png", "fig3_link_utilisation.png"):
        axes = [axis for axis in figures[name].axes if data_lines(axis)]
        assert len(axes) == 3
        for axis in axes:
            bounds = [-math.inf, *separators(axis), math.inf]
            assert len(bounds) == 4  # a line between 8 and 16 channels, one between 16 and 32
            drawn = {}
            for line in data_lines(axis):
                assert line.get_linestyle() == "None"  # markers only: no line joins two topologies
                for x, y in zip(line.get_xdata(), line.get_ydata()):
                    channels, ratio = round(y * 100 - 0.5), round(y * 10_000) % 100
                    group = next(index for index, (low, high) in enumerate(zip(bounds, bounds[1:])) if low < x < high)
                    drawn.setdefault(line.get_color(), {}).setdefault(group, []).append((x, channels, ratio))
            assert len(drawn) == 2
            for groups in drawn.values():  # each allocator: a group per channel count, its ratios in order
                assert sorted((c, r) for points in groups.values() for _, c, r in points) == sorted(order)
                for points in groups.values():
                    assert len({c for _, c, _ in points}) == 1
                    assert [r for _, _, r in sorted(points)] == [1, 4, 8, 16]
        bottom = axes[-1]
        assert [label.get_text() for label in bottom.get_xticklabels()] == ["1:1", "1:4", "1:8", "1:16"] * 3
        names = [label.get_text() for child in bottom.child_axes for label in child.get_xticklabels()]
        assert names == [f"{channels} channels per server link" for channels in dict.fromkeys(c for c, _ in order)]
        assert "mean over seeds 0–4 with 95% CI" in figures[name]._suptitle.get_text()


def test_fabrics_of_one_channel_count_but_other_sizes_are_groups_of_their_own(tmp_path, monkeypatch):
    figures = drawn_figures(monkeypatch)
    order = [(8, 1), (8, 4)]
    draw_sweep(tiered_rows(order, pods=2) + tiered_rows(order, pods=8), tmp_path, "mine")  # an ad-hoc sweep, say
    axis = figures["fig2_acceptance_cpu_memory.png"].axes[0]
    assert len(separators(axis)) == 1 and [len(line.get_xdata()) for line in data_lines(axis)] == [4] * 2
    bottom = figures["fig2_acceptance_cpu_memory.png"].axes[2]
    assert [label.get_text() for child in bottom.child_axes for label in child.get_xticklabels()] == [
        "pods=2", "pods=8"]


def test_panels_without_groups_draw_one_series_of_points_per_allocator(tmp_path, monkeypatch):
    from dcbench.publishing.figures import metric_panels

    figures = drawn_figures(monkeypatch)
    metric_panels(tiered_rows(), [("acceptance_ratio", "acceptance")], tmp_path / "board.png", "board",
                  paper_colours())
    (axis,) = figures["board.png"].axes  # the leaderboard's plot: its caller groups nothing
    assert [len(line.get_xdata()) for line in data_lines(axis)] == [12, 12] and separators(axis) == []


def test_fig5_draws_the_ratios_in_greys_no_allocator_is_drawn_in_and_says_what_a_bar_averages(tmp_path,
                                                                                            monkeypatch):
    from matplotlib.colors import to_rgb


    figures = drawn_figures(monkeypatch)
    rows = tiered_rows(allocators=("tetris", "nalb", "random", "gnn_ppo", "mine"))
    draw_sweep(rows, tmp_path, "nara2022")
    figure = figures["fig5_spread.png"]
    declared = [[each] if isinstance(each, str) else list(each.values()) for each in paper_colours().declared.values()]
    allocator_colours = {to_rgb(colour) for colour in ["C8", "C9", *(colour for each in declared for colour in each)]}
    assert len(figure.axes) == 5
    by_ratio = {}
    for axis in figure.axes:
        assert sum(len(bars) for bars in axis.containers) == len(axis.patches) == 16  # 4 ratios × 4 levels
        for bars in axis.containers:
            for bar in bars:
                rgb = to_rgb(bar.get_facecolor())
                assert rgb not in allocator_colours and rgb[0] == rgb[1] == rgb[2], rgb  # a grey, no allocator's
                by_ratio.setdefault(bars.get_label(), set()).add(rgb)
    assert list(by_ratio) == ["1:1", "1:4", "1:8", "1:16"] and all(len(grey) == 1 for grey in by_ratio.values())
    levels = [next(iter(grey))[0] for grey in by_ratio.values()]
    assert levels == sorted(set(levels), reverse=True)  # light to dark as oversubscription grows
    title = figure._suptitle.get_text()
    assert "each bar: the mean of the 15 runs' shares at one oversubscription " \
           "(8, 16, 32 channels per server link × seeds 0–4)" in title
    # ... which it is: tetris's rack share at 1:4, the second bar of its 1:4 bars
    tetris = next(axis for axis in figure.axes if axis.get_title() == "tetris")
    rack_at_1x4 = next(bars for bars in tetris.containers if bars.get_label() == "1:4")[1]
    chosen = [r["spread_rack"] for r in rows if r["allocator"] == "tetris" and "-1x4-" in r["scenario"]]
    assert len(chosen) == 15 and rack_at_1x4.get_height() == pytest.approx(sum(chosen) / 15)


def rewritten(change):
    def rewrite(path):
        table = pq.read_table(path)
        changed = change(table)
        pq.write_table(changed if changed.schema.metadata else changed.replace_schema_metadata(table.schema.metadata),
                       path)
    return rewrite


@pytest.mark.parametrize("command", ["report", "plot"])
@pytest.mark.parametrize("damage, problem", [
    (rewritten(lambda t: t.drop_columns(["acceptance_ratio"])),
     "column 'acceptance_ratio', the suite's primary metric, is missing"),
    (rewritten(lambda t: t.replace_schema_metadata({b"dcbench": b"{not json"})), "its dcbench provenance is not JSON"),
    (rewritten(lambda t: t.replace_schema_metadata({b"dcbench": b"[1, 2]"})),
     "its dcbench provenance is a JSON list, not an object"),
    (rewritten(lambda t: t.set_column(t.schema.get_field_index("cpu_util"), "cpu_util",
                                      pa.array(["high"] * t.num_rows))),
     "metric column 'cpu_util' is string, expected numbers"),
    (rewritten(lambda t: t.slice(0, 0)), "it is empty, with no runs"),
])
def test_a_summary_with_bad_contents_is_one_line_and_nothing_is_written(random_sweep, tmp_path, command, damage,
                                                                        problem):
    results = tmp_path / "nara2022"
    shutil.copytree(random_sweep, results)
    damage(results / "summary.parquet")
    page = tmp_path / "report.md"
    page.write_text("# prose\n")
    out = page if command == "report" else tmp_path / "figures" / "nara2022"
    result = CliRunner().invoke(cli, [command, str(results), "--out", str(out)])
    assert result.exit_code == 2
    assert result.output == (f"Error: '{results / 'summary.parquet'}' is damaged ({problem}); remove it and run the "
                             "sweep again to rebuild it\n")
    assert page.read_text() == "# prose\n" and not (tmp_path / "figures").exists()


@pytest.mark.parametrize("page, problem", [
    (b"<!-- dcbench report s: end -->\nprose\n<!-- dcbench report s: start -->\nold\n",
     "its marker '<!-- dcbench report s: start -->' has no '<!-- dcbench report s: end -->' after it; put the end "
     "marker after the start marker, or remove both"),
    ("# Überblick\n".encode("latin-1"), "it is not UTF-8 text (byte 2); give a Markdown file with --out"),
    (b"<!-- dcbench report s: start -->\na\n<!-- dcbench report s: end -->\n<!-- dcbench report s: start -->\nb\n"
     b"<!-- dcbench report s: end -->\n", "its marker '<!-- dcbench report s: start -->' or '<!-- dcbench report s: "
                                        "end -->' is there twice; keep one block between them"),
    (b"prose\n<!-- dcbench report s: end -->\n", "it has the marker '<!-- dcbench report s: end -->' but no "
                                                 "'<!-- dcbench report s: start -->' before it; put the start marker "
                                                 "back, or remove the end marker"),
])
def test_a_page_whose_markers_or_encoding_are_wrong_is_left_as_it_was(tmp_path, page, problem):
    path = tmp_path / "report.md"
    path.write_bytes(page)
    with pytest.raises(ResultsError) as caught:
        write_between_markers(path, "TABLE", "s")
    assert str(caught.value) == f"cannot update '{path}': {problem}"
    assert path.read_bytes() == page and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_plot_checks_its_rows_before_it_makes_a_folder_and_removes_one_it_made_if_drawing_fails(tmp_path,
                                                                                               monkeypatch):
    import dcbench.publishing.figures as plots

    out = tmp_path / "figures" / "nara2022"
    with pytest.raises(ResultsError, match="the summary has no rows; run the sweep first"):
        draw_sweep([], out, "nara2022")
    rows = [{"scenario": "8-1x4", "allocator": "random", "seed": 0, "topology": "tiered:8,1x4",
             "acceptance_ratio": 0.5}]
    with pytest.raises(ResultsError, match="the summary has no column 'cpu_util', which the figures need; run the"):
        draw_sweep(rows, out, "nara2022")
    assert list(tmp_path.iterdir()) == []

    def full_disk(figure, path, dpi):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plots, "save_figure", full_disk)
    job_rows = [{"scenario": "16x32-load54", "allocator": "jcb", "seed": 0, "topology": "ocs:tors=16,servers=32",
                 "workload": "vmjobs:load=54", "blocking_probability": 0.1, "latency_us": 0.1, "packet_loss": 0.01,
                 "reconfigurations_per_job": 0.5}]
    with pytest.raises(OSError):
        draw_sweep(job_rows, out, "odcn2025", "odcn2025")
    assert list(tmp_path.iterdir()) == []  # figures/ as well as figures/nara2022: both were made for the plot
    (tmp_path / "mine").mkdir()
    with pytest.raises(OSError):
        draw_sweep(job_rows, tmp_path / "mine", "odcn2025", "odcn2025")
    assert (tmp_path / "mine").is_dir()  # a folder that was there stays


def test_a_summary_with_a_run_twice_is_refused_not_counted_twice(random_sweep, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    table = pq.read_table(results / "summary.parquet")
    pq.write_table(pa.concat_tables([table, table.slice(3, 1)]), results / "summary.parquet")
    for command in ("report", "plot"):
        result = CliRunner().invoke(cli, [command, str(results), "--out", str(tmp_path / "out")])
        assert result.exit_code == 2
        assert f"is damaged (run {table.column('run_id')[3]} appears twice)" in result.output


def test_the_interval_of_values_near_the_largest_float_is_infinite_not_an_error():
    mean, half, n = mean_ci([1e308, -1e308, 1e308])
    assert n == 3 and math.isfinite(mean) and half == math.inf


def test_a_page_with_windows_line_endings_keeps_them(tmp_path):
    page = tmp_path / "report.md"
    page.write_bytes(b"# prose\r\n\r\n<!-- dcbench report s: start -->\r\nold\r\n"
                     b"<!-- dcbench report s: end -->\r\nmore\r\n")
    write_between_markers(page, "line 1\nline 2", "s")
    assert page.read_bytes() == (b"# prose\r\n\r\n<!-- dcbench report s: start -->\r\nline 1\r\nline 2\r\n"
                                 b"<!-- dcbench report s: end -->\r\nmore\r\n")


def first_row(column, value):
    """A rewrite of the summary that gives its first row's ``column`` ``value``."""
    def change(table):
        index = table.schema.get_field_index(column)
        values = [value, *table.column(column).to_pylist()[1:]]
        return table.set_column(index, column, pa.array(values, type=table.schema.field(index).type))
    return rewritten(change)


@pytest.mark.parametrize("command", [["report"], ["plot"], ["leaderboard", "submit"]])
@pytest.mark.parametrize("damage, problem", [
    pytest.param(rewritten(lambda t: t.slice(0, 30)),
                 "it holds 30 of the 60 runs its provenance lists: run {runs[30]} is missing", id="fewer-rows"),
    pytest.param(first_row("acceptance_ratio", math.inf),
                 "run folder {folder} says acceptance_ratio={own!r}, the summary inf", id="infinite-acceptance"),
    pytest.param(first_row("acceptance_ratio", -0.5),
                 "run folder {folder} says acceptance_ratio={own!r}, the summary -0.5", id="negative-acceptance"),
    pytest.param(first_row("allocator", "tetris:::"), "run {runs[0]}: the hash does not match its specs",
                 id="allocator-no-spec"),
    pytest.param(first_row("allocator", ""), "run {runs[0]}: the hash does not match its specs", id="allocator-empty"),
])
def test_report_and_plot_refuse_a_summary_that_is_not_what_its_runs_say_as_submit_does(random_sweep, tmp_path, command,
                                                                                      damage, problem):
    results = tmp_path / "nara2022"
    shutil.copytree(random_sweep, results)
    runs = pq.read_table(results / "summary.parquet").column("run_id").to_pylist()
    own = pq.read_table(results / runs[0] / "summary.parquet").column("acceptance_ratio")[0].as_py()
    damage(results / "summary.parquet")
    page = tmp_path / "report.md"
    page.write_text("# prose\n")
    if command == ["leaderboard", "submit"]:
        args = ["leaderboard", "--root", str(tmp_path / "board"), "submit", str(results)]
    else:
        args = [*command, str(results), "--out", str(page if command == ["report"] else tmp_path / "figures")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert result.output == (f"Error: '{results / 'summary.parquet'}' is damaged "
                             f"({problem.format(runs=runs, folder=results / runs[0], own=own)}); remove it and run "
                             "the sweep again to rebuild it\n")
    assert page.read_text() == "# prose\n" and not (tmp_path / "figures").exists()
    assert not (tmp_path / "board").exists()


@pytest.mark.parametrize("command", ["report", "plot"])
def test_report_and_plot_read_a_summary_whose_run_folders_are_gone_but_submit_refuses_it(random_sweep, tmp_path,
                                                                                          command):
    results = tmp_path / "nara2022"
    shutil.copytree(random_sweep, results)
    run_ids = pq.read_table(results / "summary.parquet").column("run_id").to_pylist()
    shutil.rmtree(results / run_ids[5])
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(tmp_path / "board"), "submit", str(results)])
    assert result.exit_code == 2
    assert result.output == (f"Error: run folder {results / run_ids[5]} is missing or incomplete; run the sweep "
                             "again to redo it\n")
    for run_id in run_ids:  # removed to save space: the summary holds what a report or a plot reads
        shutil.rmtree(results / run_id, ignore_errors=True)
    result = CliRunner().invoke(cli, [command, str(results), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out").exists()


def test_a_metric_that_runs_of_a_resumed_sweep_made_before_it_was_installed_lack_is_no_damage(random_sweep,
                                                                                              tmp_path, monkeypatch):
    results = tmp_path / "nara2022"
    shutil.copytree(random_sweep, results)
    first = pq.read_table(results / "summary.parquet").column("run_id")[0].as_py()
    # the first run made with a metric plugin installed since the others ran: the others' cells are empty
    rewritten(lambda t: t.append_column("counted", pa.array([128.0])))(results / first / "summary.parquet")
    rewritten(lambda t: t.append_column("counted", pa.array([128.0] + [None] * (t.num_rows - 1), pa.float64())))(
        results / "summary.parquet")
    # The replay on submit draws the runs that lack it: the one that has it was made by no plugin installed here.
    import dcbench.publishing.replay as replay

    monkeypatch.setattr(replay, "replay_rows", lambda rows, rng: [row for row in rows if row["seed"] == 4])
    for command in (["report", str(results)], ["leaderboard", "--root", str(tmp_path / "board"), "submit",
                                               str(results)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 0, result.output


HOSTILE_ALLOCATORS = ["mine:x=$\\frac{$", "mine:x=a$\\bad$b", "_hidden", "pipe:x=<b>"]


def test_dollars_and_markdown_in_names_are_drawn_and_tabled_as_the_text_they_are(random_sweep, tmp_path, monkeypatch):
    import dcbench.publishing.figures as plots

    rows = pq.read_table(random_sweep / "summary.parquet").to_pylist()
    hostile = [{**row, "allocator": HOSTILE_ALLOCATORS[row["seed"] % 4],
                "scenario": row["scenario"] + " <b>|`x`*y*</b> $x_{$"} for row in rows]
    drawn = {}
    save = plots.save_figure

    def keep_legend(figure, path, dpi):  # what the first panel's legend says, as matplotlib is given it
        legend = figure.axes[0].get_legend() or figure.legends[0]
        drawn[path.name] = [text.get_text() for text in legend.get_texts()]
        save(figure, path, dpi)

    monkeypatch.setattr(plots, "save_figure", keep_legend)
    paths = draw_sweep(hostile, tmp_path / "figures", "a $\\frac{$ suite")  # mathtext failed on these
    assert all(path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for path in paths)
    assert drawn["fig2_acceptance_cpu_memory.png"] == [  # '\$' is shown as '$'; ' _hidden' is not left out
        "mine:x=\\$\\frac{\\$", "mine:x=a\\$\\bad\\$b", " _hidden", "pipe"]
    text = metric_table(hostile, "acceptance_ratio") + ranking(hostile, "acceptance_ratio")
    assert "| scenario | mine:x=\\$\\\\frac{\\$ | mine:x=a\\$\\\\bad\\$b | \\_hidden | pipe |" in text
    assert "| 8-1x1 \\<b\\>\\|\\`x\\`\\*y\\*\\</b\\> \\$x\\_{\\$ |" in text


def test_a_cell_escapes_what_markdown_would_read_and_leaves_plain_names_as_they_are():
    from dcbench.publishing.report import cell

    plain = ["16-1x1", "16x32-load54", "tetris:fit_last=yes", "link_util_tier1_last25", "a2c_multistep",
             "nalb:route=balance,queue=fifo,candidates=16", "End-to-end latency, µs (M/M/1/K per link)"]
    assert [cell(text) for text in plain] == plain  # the committed pages and reports stay byte for byte
    assert cell("a|b\nc\td") == "a\\|b c d"
    assert cell("_x_ [y](z) <i> &amp; ~~s~~ #") == "\\_x\\_ \\[y\\](z) \\<i\\> \\&amp; \\~\\~s\\~\\~ \\#"


@pytest.fixture(scope="module")
def folder_of_runs(tmp_path_factory):
    """What a few `dcbench run`s leave in results/: two allocators on one fabric, one on another, jobs on OCS."""
    out = tmp_path_factory.mktemp("runs") / "results"
    for args in (["-a", "tetris", "-t", "tiered:8,1x4"], ["-a", "random", "-t", "tiered:8,1x4"],
                 ["-a", "tetris", "-t", "tiered:16,1x8"],
                 ["-a", "jcb", "-t", "ocs:16,servers=2", "-w", "vmjobs:load=8,warmup=10"]):
        result = CliRunner().invoke(cli, ["run", *args, "-n", "30", "--seeds", "3", "--out", str(out), "-q"])
        assert result.exit_code == 0, result.output
    return out


def test_report_compares_the_runs_of_a_folder_by_scenario_and_allocator(folder_of_runs):
    result = CliRunner().invoke(cli, ["report", str(folder_of_runs)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    pools, jobs = text.split("### Runs in results: jobs")
    assert pools.startswith("### Runs in results: pool requests\n")
    assert "| tiered:8,1x4 | tiered:channels=8,ratio=1x4,pods=2,racks=2,servers=16,cpu=16,mem=16 | " \
           "uniform:max_cpu=128,max_mem=128,min_cpu=1,min_mem=1,wait=yes,pairs=reference | 30 | 6 |" in pools
    summaries = [pq.read_table(p / "summary.parquet").to_pylist()[0] for p in folder_of_runs.iterdir()]
    cells = []
    for allocator in ("random", "tetris"):  # allocators in the order of their names
        mean, half, _ = mean_ci(s["acceptance_ratio"] for s in summaries if s["allocator"].startswith(allocator)
                                and s["topology"].startswith("tiered:channels=8,"))
        cells.append((mean, f"{mean:.3f} ± {half:.3f}"))
    best = max(cells)[0]
    acceptance = pools.split("#### Acceptance ratio")[1].split("####")[0]
    assert "| scenario | random | tetris |" in acceptance
    assert "| tiered:8,1x4 | " + " | ".join(f"**{text}**" if mean == best else text for mean, text in cells) + " |" \
        in acceptance
    assert "| tiered:16,1x8 | – | **" in acceptance  # random did not run there
    assert "over seeds [0, 1, 2]" in pools and "#### Ranking by acceptance_ratio" in pools
    assert "| tiered:8,1x4 | " in pools.split("#### Ranking by acceptance_ratio")[1]
    assert "| ocs:servers=2 vmjobs:load=8,warmup=10 |" in jobs and "#### Ranking by blocking_probability" in jobs
    assert "#### Packet loss" in jobs and "Acceptance ratio" not in jobs and "Packet loss" not in pools


def test_plot_draws_the_pool_and_the_job_figures_of_a_folder_of_runs(folder_of_runs, tmp_path):
    result = CliRunner().invoke(cli, ["plot", str(folder_of_runs), "--out", str(tmp_path / "plots")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "fig2_acceptance_cpu_memory.png", "fig3_link_utilisation.png", "fig5_spread.png", "fig8_size_brackets.png",
        "jobs_16x2.png"]


def test_a_folder_of_runs_of_one_allocator_scenario_and_seed_twice_is_refused_and_another_version_noted(
        tmp_path, monkeypatch):
    import dcbench

    out = tmp_path / "results"
    run = ["run", "-a", "random", "-t", "tiered:8,1x4", "-n", "10", "--out", str(out), "-q"]
    made = dcbench.__version__
    monkeypatch.setattr("dcbench._version.__version__", "0.0.1")  # an older dcbench's run
    assert CliRunner().invoke(cli, run).exit_code == 0
    monkeypatch.setattr("dcbench._version.__version__", made)
    result = CliRunner().invoke(cli, ["report", str(out)])
    assert result.exit_code == 0, result.output
    assert f"Note: '{out}' was made by dcbench 0.0.1, this is {made}: how metrics" in result.stderr
    assert CliRunner().invoke(cli, run).exit_code == 0
    (old,) = [p.name for p in out.iterdir() if pq.read_table(p / "summary.parquet")["dcbench_version"][0].as_py()
              == "0.0.1"]
    (new,) = {p.name for p in out.iterdir()} - {old}
    for command in ("report", "plot"):
        result = CliRunner().invoke(cli, [command, str(out)])
        assert result.exit_code == 2 and len(result.output.splitlines()) == 1
        assert f"{old} (dcbench 0.0.1)" in result.output and f"{new} (dcbench {made})" in result.output
        assert ("are both random on tiered:8 with seed 0, and would count twice in every mean; move one of them to "
                "another folder") in result.output
    assert not (out / "plots").exists()


def test_a_damaged_run_in_a_folder_of_runs_is_one_line_and_nothing_is_written(folder_of_runs, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(folder_of_runs, out)
    damaged = sorted(out.iterdir())[2]
    table = pq.read_table(damaged / "summary.parquet")
    pq.write_table(table.set_column(table.column_names.index("seed"), "seed", pa.array([7])), damaged /
                   "summary.parquet")  # an edited seed: its run id is no longer the hash of its specs
    for command in (["report", "--out", str(tmp_path / "page.md")], ["plot"]):
        result = CliRunner().invoke(cli, [command[0], str(out), *command[1:]])
        assert result.exit_code == 2 and result.output == (
            f"Error: run folder {damaged} has a damaged summary.parquet (the run id is not the hash of its specs); "
            "run it again with `dcbench run`, or remove it\n")
    assert not (tmp_path / "page.md").exists() and not (out / "plots").exists()


def test_scenarios_are_named_by_what_tells_them_apart():
    from dcbench.harness import get_registry
    from dcbench.running.labels import compact_spec, scenario_labels

    registry = get_registry()
    tiered = "tiered:channels={},ratio={},pods=2,racks=2,servers=16,cpu=16,mem=16"
    uniform = "uniform:max_cpu=128,max_mem=128,min_cpu=1,min_mem=1,wait=yes,pairs={}"
    assert compact_spec(tiered.format(16, "1x8"), registry, "topology") == "tiered:16,1x8"
    assert compact_spec(tiered.format(32, "1x8"), registry, "topology") == "tiered:ratio=1x8"  # channels default
    assert compact_spec(tiered.format(32, "1x4"), registry, "topology", keep={"channels"}) == "tiered:32"
    assert compact_spec("mesh:size=3", registry, "topology") == "mesh:size=3"  # not installed: as it is
    a, b = (tiered.format(32, "1x4"), uniform.format("reference"), 128), (tiered.format(8, "1x4"),
                                                                           uniform.format("reference"), 128)
    assert list(scenario_labels([a, b], registry).values()) == ["tiered:32", "tiered:8"]
    longer = (a[0], a[1], 256)  # told apart by their length only where they must be
    assert list(scenario_labels([a, b, longer], registry).values()) == ["tiered:32 n=128", "tiered:8",
                                                                         "tiered:32 n=256"]
    every_pair = (a[0], uniform.format("all"), 128)
    assert list(scenario_labels([a, every_pair], registry).values()) == ["tiered uniform:pairs=reference",
                                                                         "tiered uniform:pairs=all"]


FIGURES_PLUGIN = '''
from dcbench import Scenario, Suite, hookimpl
from dcbench.harness import metric_panels
from dcbench.plugins.allocators.random_server import RandomAllocator
from dcbench.plugins.topologies.tiered import PARAMS, build


class Acceptance:
    """One panel of acceptance, each scenario's tick its label in capitals."""

    xlabel = "my fabrics"
    columns = ("acceptance_ratio",)

    def tick_label(self, row):
        return row["scenario"].upper()

    def files(self, rows):
        return ["acceptance.png"]

    def draw(self, rows, out_dir, name, defaults, colours):
        return [metric_panels(rows, [("acceptance_ratio", "accepted")], out_dir / "acceptance.png", name, colours,
                              xlabel=self.xlabel, defaults=defaults, tick_label=self.tick_label)]


class Failing(Acceptance):
    def draw(self, rows, out_dir, name, defaults, colours):
        raise ZeroDivisionError("division by zero")


ACCEPTANCE, FAILING, NOT_FIGURES = Acceptance(), Failing(), object()


def suite(name, figures):
    return Suite(name=name, figures=figures, scenarios=(
        Scenario(topology="tiered:8,1x4", workload="uniform", requests=8, seeds=(0, 1), name="small"),))


@hookimpl
def register_allocators(register):
    register("painted", RandomAllocator, description="random, in a colour of its own", colour="#123456")


@hookimpl
def register_topologies(register):
    register("plain", build, description="the tiered fabric, with no figures of its own", params=PARAMS)


@hookimpl
def register_suites(register):
    register(suite("mine", "tp_figures:ACCEPTANCE"))
    for broken in ("tp_figures:MISSING", "tp_figures:FAILING", "tp_figures:NOT_FIGURES", "tp_missing:FIGURES"):
        register(suite("broken-" + broken.replace(":", "-").lower(), broken))
'''


@pytest.fixture
def figures_plugin(tmp_path, monkeypatch, fresh_registry):
    """A third party's plugin (tp_figures): a suite 'mine' that declares its own figures, suites whose figures
    are broken, an allocator 'painted' that declares its colour and a topology 'plain' that declares no figures."""
    import importlib.metadata
    import sys

    (tmp_path / "tp_figures.py").write_text(FIGURES_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tp_figures", raising=False)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [importlib.metadata.EntryPoint("figplug", "tp_figures", group)])


def test_a_suite_is_drawn_by_the_figures_it_declares_and_an_allocator_in_the_colour_it_declares(
        tmp_path, monkeypatch, fresh_registry):
    from matplotlib.colors import to_rgb

    from tests.conftest import installed_plugin

    installed_plugin(tmp_path / "plugins", monkeypatch, "figures", FIGURES_PLUGIN)  # (the replay on submit loads it)

    runner = CliRunner()
    results = tmp_path / "mine"
    assert runner.invoke(cli, ["sweep", "-s", "mine", "-a", "painted,tetris", "--out", str(results), "-j", "1",
                               "-q"]).exit_code == 0
    figures = drawn_figures(monkeypatch)
    result = runner.invoke(cli, ["plot", str(results)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{results / 'plots' / 'acceptance.png'}\n" and list(figures) == ["acceptance.png"]
    plotted = figures.pop("acceptance.png")
    for command in (["submit", str(results)], []):
        result = runner.invoke(cli, ["leaderboard", "--root", str(tmp_path / "board"), *command])
        assert result.exit_code == 0, result.output
    # the leaderboard's plot names the scenarios as the figures do
    for figure in (plotted, figures["tp-figures.mine.png"]):
        (axis,) = figure.axes
        assert [label.get_text() for label in axis.get_xticklabels()] == ["SMALL"]
        assert axis.get_xlabel() == "my fabrics"
        assert {to_rgb(line.get_color()) for line in data_lines(axis)} == {to_rgb("#123456"), to_rgb("C1")}


def test_runs_on_a_topology_that_declares_no_figures_are_not_drawn_and_plot_says_so(tmp_path, figures_plugin):
    runner = CliRunner()
    results = tmp_path / "results"
    for topology in ("plain:8,1x4", "tiered:8,1x4"):
        assert runner.invoke(cli, ["run", "-a", "painted", "-t", topology, "-w", "uniform", "-n", "8", "--out",
                                   str(results), "-q"]).exit_code == 0
    result = runner.invoke(cli, ["plot", str(results)])
    assert result.exit_code == 0, result.output
    assert result.stderr == ("Note: no figures of the runs on plain: no installed topology plugin declares them "
                             "(register(..., figures='module:attr'))\n")
    assert sorted(p.name for p in (results / "plots").iterdir()) == [
        "fig2_acceptance_cpu_memory.png", "fig3_link_utilisation.png", "fig5_spread.png", "fig8_size_brackets.png"]


@pytest.mark.parametrize("target, problem", [
    ("tp_figures:MISSING", "failed to load its figures 'tp_figures:MISSING': AttributeError: module 'tp_figures' "
                           "has no attribute 'MISSING'; report it to the plugin's authors"),
    ("tp_missing:FIGURES", "failed to load its figures 'tp_missing:FIGURES': ModuleNotFoundError: No module named "
                           "'tp_missing'; install the package that provides 'tp_missing', or report it to the plugin's "
                           "authors"),
    ("tp_figures:NOT_FIGURES", "declares figures 'tp_figures:NOT_FIGURES' that have no 'xlabel' (see "
                               "dcbench.harness.Figures); report it to the plugin's authors"),
    ("tp_figures:FAILING", "failed to draw its figures: ZeroDivisionError: division by zero; report it to the "
                           "plugin's authors"),
])
def test_figures_a_plugin_declares_that_fail_are_one_line_naming_the_plugin(tmp_path, figures_plugin, target,
                                                                            problem):
    suite = "broken-" + target.replace(":", "-").lower()
    runner = CliRunner()
    results = tmp_path / suite
    assert runner.invoke(cli, ["sweep", "-s", suite, "-a", "painted", "--out", str(results), "-j", "1",
                               "-q"]).exit_code == 0
    result = runner.invoke(cli, ["plot", str(results), "--out", str(tmp_path / "figures")])
    assert result.exit_code == 2
    assert result.output == f"Error: suite {suite!r} (plugin figplug) {problem}\n"
    assert not (tmp_path / "figures").exists()
