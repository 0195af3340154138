import hashlib
import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench._version import __version__
from dcbench.commands import cli
from tests.conftest import board_copy, board_of


@pytest.fixture(scope="module")
def sweep_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "nara2022"
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random,tetris", "--out", str(out), "-j", "2",
                                      "-q"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def submitted_board(sweep_results, tmp_path_factory):
    """A leaderboard with `sweep_results` submitted and no pages yet; tests change a copy (`board_copy`)."""
    return board_of(sweep_results, tmp_path_factory.mktemp("submitted"))


@pytest.fixture(scope="module")
def built_board(submitted_board, tmp_path_factory):
    """`submitted_board` with its pages built."""
    root = board_copy(submitted_board, tmp_path_factory.mktemp("built"))
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 0, result.output
    return root


def snapshot(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()} if root.exists() else {}


def rewrite_summary(folder, change):
    table = pq.read_table(folder / "summary.parquet")
    metadata = table.schema.metadata
    table = change(table)
    pq.write_table(table.replace_schema_metadata(metadata if table.schema.metadata is None else table.schema.metadata),
                   folder / "summary.parquet")


def with_provenance(stored):
    return lambda table: table.replace_schema_metadata({b"dcbench": stored(table.schema.metadata[b"dcbench"])})


def listing_its_runs(table):
    """``table`` with its provenance's list of runs made its own (a summary whose rows were rewritten)."""
    stored = json.loads(table.schema.metadata[b"dcbench"])
    runs = table.column("run_id").to_pylist()
    return table.replace_schema_metadata({b"dcbench": json.dumps({**stored, "runs": runs}).encode()})


def without_seed(seed):
    """The summary as if its suite had no ``seed``: its rows and its provenance's list of runs without them."""
    return lambda table: listing_its_runs(table.filter(pa.compute.not_equal(table["seed"], seed)))


def made_with(version):
    return with_provenance(lambda stored: json.dumps({**json.loads(stored), "dcbench_version": version}).encode())


def metric_as_strings(table):
    index = table.schema.get_field_index("acceptance_ratio")
    return table.set_column(index, "acceptance_ratio", pa.array([f"{v:.3f}" for v in table[index].to_pylist()]))


# A summary that reads as Parquet but whose contents are wrong, and what the one-line error says of it.
BAD_CONTENTS = [
    (lambda t: t.drop_columns(["acceptance_ratio"]),
     "column 'acceptance_ratio', the suite's primary metric, is missing"),
    (with_provenance(lambda stored: b"{not json"), "its dcbench provenance is not JSON"),
    (with_provenance(lambda stored: b"[1, 2]"), "its dcbench provenance is a JSON list, not an object"),
    (metric_as_strings, "metric column 'acceptance_ratio' is string, expected numbers"),
    (lambda t: t.slice(0, 0), "it is empty, with no runs"),
    (lambda t: t.set_column(t.column_names.index("allocator"), "allocator", pa.nulls(t.num_rows, pa.string())),
     "column 'allocator' has empty values"),
]


def test_submit_then_rebuild_is_byte_for_byte_repeatable(sweep_results, tmp_path):
    root = tmp_path / "leaderboard"
    runner = CliRunner()
    result = runner.invoke(cli, ["leaderboard", "--root", str(root), "submit", str(sweep_results)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0
    first = snapshot(root)
    assert runner.invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0
    assert snapshot(root) == first
    page = (root / "README.md").read_text()
    assert "## nara2022" in page and "### nara2022 / 8-1x16" in page
    ranking = page.split("| rank | entry | kind | score | Δ | wins | verified | training |")[1].split("\n\n")[0]
    assert ranking.index("| tetris |") < ranking.index("| random |")
    assert "plots/nara2022.png" in (root / "index.html").read_text()
    assert sorted(p.name for p in (root / "tables").iterdir()) == [
        "nara2022-scenarios.csv", "nara2022-scenarios.parquet", "nara2022-summary.csv", "nara2022-summary.parquet"]
    again = runner.invoke(cli, ["leaderboard", "--root", str(root), "submit", str(sweep_results)])
    assert again.exit_code == 2 and "already submitted" in again.output


@pytest.mark.parametrize("damage, fragment", [
    (lambda f: (f / "summary.parquet").write_bytes((f / "summary.parquet").read_bytes()[:500]), "corrupt results file"),
    (lambda f: rewrite_summary(f, without_seed(4)), "lacks scenario"),
    (lambda f: rewrite_summary(f, lambda t: t.rename_columns(["id" if c == "run_id" else c for c in t.column_names])),
     "column 'run_id' is missing"),
    (lambda f: rewrite_summary(f, lambda t: t.set_column(t.column_names.index("allocator"), "allocator",
                                                         pa.array(["tetris:penalty=0.5"] * t.num_rows))),
     "hash does not match"),
    (lambda f: rewrite_summary(f, lambda t: t.replace_schema_metadata(
        {b"dcbench": json.dumps({"suite": "nara2099", "dcbench_version": "0.1.0"}).encode()})),
     "unknown suite 'nara2099'"),
    (lambda f: shutil.rmtree(next(p for p in f.iterdir() if p.is_dir())), "missing or incomplete"),
    (lambda f: rewrite_summary(f, made_with("0.0.1")),
     f"submission refused: made with dcbench 0.0.1; this leaderboard takes {__version__} (rerun the sweep"),
    *((lambda f, change=change: rewrite_summary(f, change), f"summary.parquet' is damaged ({problem}); remove it and "
       "run the sweep again to rebuild it") for change, problem in BAD_CONTENTS),
])
def test_bad_submissions_are_refused_and_change_nothing(sweep_results, tmp_path, damage, fragment):
    copy = tmp_path / "results"
    shutil.copytree(sweep_results, copy)
    damage(copy)
    root = tmp_path / "leaderboard"
    (root / "submissions").mkdir(parents=True)
    (root / "README.md").write_text("before\n")
    before = snapshot(root)
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(copy)])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and len(result.output.strip().splitlines()) == 1
    assert snapshot(root) == before


def test_a_leaderboard_folder_that_does_not_exist_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(tmp_path / "leaderbord")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: no leaderboard folder '{tmp_path / 'leaderbord'}'")
    assert "submit RESULTS" in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "leaderbord").exists()


def test_a_rebuild_that_fails_leaves_the_previous_pages_and_plots_whole(built_board, tmp_path, monkeypatch):
    import dcbench.publishing.pages as pages
    from dcbench.errors import ResultsError

    root = board_copy(built_board, tmp_path)
    runner = CliRunner()
    before = snapshot(root)
    assert "plots/nara2022.png" in before

    def fail(*args, **kwargs):  # after the plot is drawn, as matplotlib or a template might
        raise ResultsError("the page could not be rendered")

    monkeypatch.setattr(pages, "html_page", fail)
    result = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and "the page could not be rendered" in result.output
    assert snapshot(root) == before
    assert sorted(p.name for p in root.iterdir()) == ["README.md", "index.html", "plots", "submissions", "tables"]


def as_if_made_by(submission, renamed):
    """The submission as if the allocators named in ``renamed`` had been others (run ids and record too)."""
    from dcbench.running.runner import run_hash

    def rename(table):
        rows = table.to_pylist()
        for row in rows:
            row["allocator"] = renamed.get(row["allocator"], row["allocator"])
            row["run_id"] = run_hash(row["topology"], row["workload"], row["allocator"], row["requests"],
                                     row["seed"], row["dcbench_version"], row["allocator_fingerprint"])
        return listing_its_runs(pa.Table.from_pylist(rows, schema=table.schema))

    rewrite_summary(submission, rename)
    record = json.loads((submission / "submission.json").read_text())
    record["allocators"] = list(dict.fromkeys(renamed.get(a, a) for a in record["allocators"]))
    record["entries"] = {renamed.get(a, a): about for a, about in record.get("entries", {}).items()}
    record.pop("replayed", None)  # made by hand: `submit` replayed none of these runs, nor `verify` any
    (submission / "verified.json").unlink(missing_ok=True)
    (submission / "submission.json").write_text(json.dumps(record))


def test_verify_runs_submitted_runs_again_and_names_what_came_out_otherwise(submitted_board, tmp_path):
    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "4", "--seed", "3"])
    assert result.exit_code == 0, result.output
    (submission,) = (root / "submissions").iterdir()
    *drawn, last = result.stdout.splitlines()  # every run drawn, named, with what came of it
    assert last == "4 runs re-run: every one gave the submitted summary bit for bit"
    assert len(drawn) == len(set(drawn)) == 4 and all(re.fullmatch(
        rf"{submission.name}: \d+-1x\d+ (random|tetris)\S* seed [0-4]: the same, bit for bit", line) for line in drawn)
    # Not a terminal: a line on stderr as each is checked, with the count and the time.
    assert [re.sub(r"\d+:\d\d:\d\d elapsed  .*", "TIME elapsed", line) for line in result.stderr.splitlines()] == [
        f"verify 4 runs: {k}/4 runs ({25 * k}%), TIME elapsed" for k in (1, 2, 3, 4)]  # (a loaded machine: 0:00:01)
    # (as each finishes: the workers run each allocator's runs apart, several at a time)
    assert sorted(line.split("elapsed  ")[1] for line in result.stderr.splitlines()) == sorted(drawn)
    quiet = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "4", "--seed", "3", "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == result.stdout
    # (a column no other one checks: an acceptance ratio that disagrees with the counts is damage, not a result)
    rewrite_summary(submission, lambda table: table.set_column(
        table.schema.get_field_index("cpu_util"), "cpu_util",
        pa.array([v / 2 for v in table.column("cpu_util").to_pylist()])))
    tampered = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "2", "--seed", "3"])
    assert tampered.exit_code == 1
    lines = tampered.stdout.splitlines()
    assert len(lines) == 3 and lines[-1] == "2 of 2 runs came out otherwise"
    assert all(line.startswith(f"{submission.name}: ") and line.endswith(": other cpu_util")
               for line in lines[:2])
    rewrite_summary(submission, lambda table: table.set_column(  # the tampered column back as it was
        table.schema.get_field_index("cpu_util"), "cpu_util",
        pa.array([v * 2 for v in table.column("cpu_util").to_pylist()])))
    as_if_made_by(submission, {"random": "firstfit"})  # a third party's allocator, not installed here
    some = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "6", "--seed", "1"])
    assert some.exit_code == 0, some.output
    counts = re.fullmatch(r"(\d) runs re-run: every one gave the submitted summary bit for bit "
                          r"\((\d) skipped: what they use is not here\)", some.stdout.splitlines()[-1])
    assert counts and int(counts[1]) > 0 and int(counts[1]) + int(counts[2]) == 6
    skipped_lines = [line for line in some.stdout.splitlines() if line.endswith(": skipped (allocator 'firstfit' "
                                                                                 "is not installed)")]
    assert len(skipped_lines) == int(counts[2]) and all(" firstfit seed " in line for line in skipped_lines)
    as_if_made_by(submission, {"tetris:penalty=0.9,scale=10,fit_last=no": "firstfit:fast=yes"})
    skipped = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "2"])
    assert skipped.exit_code == 2 and skipped.output == (
        "Error: none of the 2 runs drawn can be re-run here: allocator 'firstfit' not installed; "
        "install their plugins, or draw others with --seed\n")


def test_verify_draws_the_same_runs_for_the_same_seed_and_refuses_bad_input(tmp_path):
    from dcbench.publishing.leaderboard import Submission
    from dcbench.publishing.verify import sample_runs

    submissions = [Submission("a", "nara2022", ["x"], [{"run_id": str(i), "allocator": "x"} for i in range(30)]),
                   Submission("b", "nara2022", ["y"], [{"run_id": str(i), "allocator": "y"} for i in range(30, 40)])]
    first = sample_runs(submissions, 5, seed=1)
    assert first == sample_runs(submissions, 5, seed=1) and len({row["run_id"] for _, row in first}) == 5
    assert first != sample_runs(submissions, 5, seed=2)
    assert len(sample_runs(submissions, 100, seed=1)) == 40
    runner = CliRunner()
    empty = runner.invoke(cli, ["leaderboard", "--root", str(tmp_path), "verify"])
    assert empty.exit_code == 2 and "no submissions under" in empty.output and "--root" in empty.output
    negative = runner.invoke(cli, ["leaderboard", "--root", str(tmp_path), "verify", "--runs", "-1"])
    assert negative.exit_code == 2 and "--runs must be at least 0, got -1" in negative.output


def test_a_run_folder_whose_files_do_not_read_is_refused_with_the_fix(sweep_results, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(sweep_results, copy)
    run = sorted(p for p in copy.iterdir() if p.is_dir())[0]
    (run / "requests.parquet").write_bytes((run / "requests.parquet").read_bytes()[:300])
    root = tmp_path / "leaderboard"
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(copy)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert result.output.startswith(f"Error: run folder {run} has a damaged requests.parquet (")
    assert result.output.endswith("; run the sweep again to redo it\n")
    assert not root.exists()


def truncated(folder):
    (folder / "summary.parquet").write_bytes(b"half a table")


def summary_in_a_folder(folder):
    """As pyarrow would read it whole: a folder of that name with the file in it."""
    (folder / "part.parquet").write_bytes((folder / "summary.parquet").read_bytes())
    (folder / "summary.parquet").unlink()
    (folder / "summary.parquet").mkdir()
    (folder / "part.parquet").rename(folder / "summary.parquet" / "part.parquet")


def nan_in_first_row(table):
    values = table.column("acceptance_ratio").to_pylist()
    column = pa.array([float("nan"), *values[1:]], type=pa.float64())
    return table.set_column(table.column_names.index("acceptance_ratio"), "acceptance_ratio", column)


@pytest.mark.parametrize("damage, problem", [(truncated, "ArrowInvalid: "),
                                             (summary_in_a_folder, "its summary.parquet is not a file")] + [
    (lambda folder, change=change: rewrite_summary(folder, change), problem) for change, problem in [
        *BAD_CONTENTS, (nan_in_first_row, "run {first_run} has no finite acceptance_ratio")]])
def test_a_damaged_submission_is_named_with_the_fix_and_the_pages_are_kept(built_board, tmp_path, damage, problem):
    root = board_copy(built_board, tmp_path)
    runner = CliRunner()
    pages = snapshot(root)
    (submission,) = (root / "submissions").iterdir()
    problem = problem.format(first_run=pq.read_table(submission / "summary.parquet").column("run_id")[0])
    damage(submission)
    result = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: submission '{submission}' is damaged ({problem}")
    assert result.output.endswith("); remove that folder and submit the sweep's results folder again with "
                                  "`dcbench leaderboard submit`\n") and result.output.count("\n") == 1
    assert {k: v for k, v in snapshot(root).items() if "submissions" not in k} == \
        {k: v for k, v in pages.items() if "submissions" not in k}


@pytest.mark.parametrize("make, fragment", [
    (lambda root: (root / "README.md").write_text("# my project\n"),
     "holds no submissions/ folder, so it is no leaderboard"),
    (lambda root: ((root / "submissions").mkdir(), (root / "README.md").write_text("# my project\n")),
     "README.md' was not written by `dcbench leaderboard`, which would replace it"),
    (lambda root: ((root / "submissions").mkdir(), (root / "plots").mkdir(), (root / "plots" / "notes.txt").touch()),
     "notes.txt' was not written by `dcbench leaderboard`, which rebuilds"),
])
def test_the_pages_are_rebuilt_only_in_a_folder_that_is_a_leaderboards(tmp_path, make, fragment):
    root = tmp_path / "folder"
    root.mkdir()
    make(root)
    before = snapshot(root)
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and fragment in result.output and result.output.count("\n") == 1
    assert snapshot(root) == before


def test_submit_refuses_a_folder_that_is_not_a_leaderboard(sweep_results, tmp_path):
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(sweep_results), "submit", str(sweep_results)])
    assert result.exit_code == 2 and "holds other things and no submissions/ folder" in result.output
    assert not (sweep_results / "submissions").exists()


def test_submit_refuses_a_summary_whose_rows_are_not_what_its_runs_say(sweep_results, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(sweep_results, copy)
    rewrite_summary(copy, lambda table: table.set_column(
        table.schema.get_field_index("acceptance_ratio"), "acceptance_ratio",
        pa.array([1.0, *table.column("acceptance_ratio").to_pylist()[1:]])))
    first = pq.read_table(copy / "summary.parquet").to_pylist()[0]
    own = pq.read_table(copy / first["run_id"] / "summary.parquet").to_pylist()[0]["acceptance_ratio"]
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(tmp_path / "board"), "submit", str(copy)])
    assert result.exit_code == 2
    assert result.output == (f"Error: '{copy / 'summary.parquet'}' is damaged (run folder {copy / first['run_id']} "
                             f"says acceptance_ratio={own!r}, the summary 1.0); remove it and run the sweep again to "
                             "rebuild it\n")


@pytest.mark.parametrize("damage, problem", [
    (lambda folder: rewrite_summary(folder, lambda t: pa.concat_tables([t, t.slice(0, 1)])), "appears twice"),
    (lambda folder: rewrite_summary(folder, lambda t: t.slice(0, 30)),
     "it holds 30 of the 120 runs its provenance lists: run "),
    (lambda folder: rewrite_summary(folder, without_seed(4)), "lacks scenario"),
    (lambda folder: (folder / "submission.json").unlink(), "its submission.json does not read: FileNotFoundError"),
    (lambda folder: (folder / "submission.json").write_text("[]"), "its submission.json does not describe"),
])
def test_a_submission_edited_after_it_was_accepted_is_named_as_damaged(submitted_board, tmp_path, damage, problem):
    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    (submission,) = (root / "submissions").iterdir()
    damage(submission)
    for command in ([], ["verify", "--runs", "1"]):
        result = runner.invoke(cli, ["leaderboard", "--root", str(root), *command])
        assert result.exit_code == 2 and "is damaged (" in result.output and problem in result.output
        assert result.output.count("\n") == 1


def test_a_sweep_is_not_written_into_a_submission(submitted_board, tmp_path):
    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    (submission,) = (root / "submissions").iterdir()
    before = snapshot(root)
    result = runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--out", str(submission), "-q"])
    assert result.exit_code == 2 and "is a leaderboard submission; give the sweep its own --out" in result.output
    assert snapshot(root) == before


def copied_submission(root, submission, name, change_rows, suite=None):
    """A copy of ``submission`` under ``name``, its rows changed (run ids recomputed) and, given ``suite``,
    recorded as another suite's."""
    from dcbench.running.runner import run_hash

    copy = root / "submissions" / name
    shutil.copytree(submission, copy)

    def change(table):
        rows = table.to_pylist()
        for row in rows:
            change_rows(row)
            row["run_id"] = run_hash(row["topology"], row["workload"], row["allocator"], row["requests"],
                                     row["seed"], row["dcbench_version"], row["allocator_fingerprint"])
        changed = listing_its_runs(pa.Table.from_pylist(rows, schema=table.schema))
        if suite is None:
            return changed
        stored = json.loads(changed.schema.metadata[b"dcbench"])
        return changed.replace_schema_metadata({b"dcbench": json.dumps({**stored, "suite": suite}).encode()})

    rewrite_summary(copy, change)
    record = json.loads((copy / "submission.json").read_text())
    for made_by_submit in ("replayed", "entries"):  # made by hand: `submit` replayed and described none of these
        record.pop(made_by_submit, None)
    (copy / "verified.json").unlink(missing_ok=True)
    (copy / "submission.json").write_text(json.dumps({**record, "name": name, "suite": suite or record["suite"]}))
    return copy


def test_verify_skips_runs_whose_topology_is_not_installed_and_checks_the_rest(submitted_board, tmp_path):
    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    (submission,) = (root / "submissions").iterdir()
    copied_submission(root, submission, "starsuite--x--00000000",
                      lambda row: row.update(topology="star:" + row["topology"].split(":", 1)[1]), suite="starsuite")
    result = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "8", "--seed", "2"])
    assert result.exit_code == 0, result.output
    counts = re.fullmatch(r"(\d) runs re-run: every one gave the submitted summary bit for bit "
                          r"\((\d) skipped: what they use is not here\)", result.stdout.splitlines()[-1])
    assert counts and int(counts[1]) > 0 and int(counts[2]) > 0 and int(counts[1]) + int(counts[2]) == 8
    shutil.rmtree(submission)
    alone = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "2"])
    assert alone.exit_code == 2 and "topology 'star' not installed" in alone.output


def test_a_run_submitted_twice_with_other_numbers_is_refused_and_named(sweep_results, submitted_board, tmp_path):
    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    doctored = tmp_path / "doctored"  # the tetris runs alone, each told to have used 1 % of the CPUs
    shutil.copytree(sweep_results, doctored)
    rewrite_summary(doctored, lambda table: listing_its_runs(pa.Table.from_pylist(
        [{**row, "cpu_util": 0.01} for row in table.to_pylist() if row["allocator"].startswith("tetris")],
        schema=table.schema)))
    for run in pq.read_table(doctored / "summary.parquet").column("run_id").to_pylist():
        rewrite_summary(doctored / run, lambda table: table.set_column(
            table.schema.get_field_index("cpu_util"), "cpu_util", pa.array([0.01])))
    before = snapshot(root)
    refused = runner.invoke(cli, ["leaderboard", "--root", str(root), "submit", str(doctored)])
    assert refused.exit_code == 2 and refused.output.count("\n") == 1
    assert "is already on the leaderboard in nara2022--random-tetris--" in refused.output
    assert "with another cpu_util; the same run must give the same summary" in refused.output
    assert snapshot(root) == before
    # copied in by hand, the rebuild names the conflict rather than taking either copy
    (original,) = (root / "submissions").iterdir()
    copied_submission(root, original, "nara2022--random-tetris--00000000",
                      lambda row: row.update(cpu_util=0.01))
    result = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and "has other numbers than in nara2022--random-tetris--" in result.output


def test_a_column_only_the_submission_has_is_refused_and_one_only_this_installation_makes_is_not(
        sweep_results, tmp_path, monkeypatch):
    made_up = tmp_path / "made_up"
    shutil.copytree(sweep_results, made_up)
    rewrite_summary(made_up, lambda table: table.append_column("best_score", pa.array([99.0] * len(table))))
    runner = CliRunner()
    refused = runner.invoke(cli, ["leaderboard", "--root", str(tmp_path / "a"), "submit", str(made_up)])
    assert refused.exit_code == 2 and "has no column 'best_score', which the summary gives" in refused.output
    root = tmp_path / "b"
    assert runner.invoke(cli, ["leaderboard", "--root", str(root), "submit", str(sweep_results)]).exit_code == 0
    (submission,) = (root / "submissions").iterdir()
    rewrite_summary(submission, lambda table: table.append_column("best_score", pa.array([99.0] * len(table))))
    verify = ["leaderboard", "--root", str(root), "verify", "--runs", "2"]
    edited = runner.invoke(cli, verify)
    assert edited.exit_code == 1 and edited.stdout.count(": other best_score (not made here)") == 2
    rewrite_summary(submission, lambda table: table.drop_columns(["best_score"]))
    from tests.core.running.test_sweep import with_plugin

    with_plugin(tmp_path, monkeypatch, "extra_metric", """
from dcbench import hookimpl

@hookimpl
def register_metrics(register):
    register("extra", lambda tables, network: {"extra_metric": 1.0}, description="one more column")
""")
    result = runner.invoke(cli, verify)
    assert result.exit_code == 0 and "every one gave the submitted summary bit for bit" in result.output


def test_a_run_folder_whose_summary_is_not_one_row_is_refused_in_one_line(sweep_results, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(sweep_results, copy)
    run = pq.read_table(copy / "summary.parquet").column("run_id")[0].as_py()
    rewrite_summary(copy / run, lambda table: pa.concat_tables([table, table]))
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(tmp_path / "board"), "submit", str(copy)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "has a summary.parquet of 2 rows, not one; run the sweep again to redo it" in result.output


def test_a_third_party_allocator_is_no_baseline_whatever_its_entry_point_is_called(tmp_path, monkeypatch):
    import importlib.metadata

    from dcbench.publishing.report import baselines
    from dcbench.registry import create_registry
    from tests.conftest import random_allocator_module

    random_allocator_module(tmp_path, monkeypatch, "tp_sneaky", "sneaky")
    registry = create_registry([importlib.metadata.EntryPoint("dcbench.plugins.sneaky", "tp_sneaky", "dcbench")])
    assert "sneaky" in registry.entries("allocator")
    assert "sneaky" not in baselines(registry) and {"tetris", "nalb", "random"} <= baselines(registry)


@pytest.mark.parametrize("locked_name", ["README.md", "index.html", "plots"])
def test_a_page_that_cannot_be_replaced_is_named_and_the_pages_and_plots_stay_as_they_were(
        built_board, tmp_path, monkeypatch, locked_name):
    import os

    import dcbench.storage.journal as results

    root = board_copy(built_board, tmp_path)
    runner = CliRunner()
    (root / "README.md").write_text((root / "README.md").read_text() + "an older page\n")
    (root / "plots" / "nara2022.png").write_bytes(b"an older plot")  # which a rebuild would replace
    before = snapshot(root)
    replace = os.replace

    def locked(source, target):  # as a file made immutable (chattr +i) refuses
        if Path(source).name == locked_name or Path(target).name == locked_name:
            raise PermissionError(1, "Operation not permitted")
        return replace(source, target)

    monkeypatch.setattr(results.os, "replace", locked)
    result = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and result.output == (
        f"Error: cannot replace '{root / locked_name}': Operation not permitted; nothing was replaced; make it "
        "writable, or give another --root\n")
    assert snapshot(root) == before
    assert sorted(p.name for p in root.iterdir()) == ["README.md", "index.html", "plots", "submissions", "tables"]


def test_a_first_build_that_cannot_write_its_second_page_leaves_no_first_page_or_plots(submitted_board, tmp_path,
                                                                                        monkeypatch):
    import os

    import dcbench.storage.journal as results

    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    before = snapshot(root)
    replace = os.replace

    def locked(source, target):
        if Path(target).name == "index.html":
            raise PermissionError(1, "Operation not permitted")
        return replace(source, target)

    monkeypatch.setattr(results.os, "replace", locked)
    result = runner.invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and "nothing was replaced" in result.output
    assert snapshot(root) == before and sorted(p.name for p in root.iterdir()) == ["submissions"]


@pytest.mark.parametrize("command", [[], ["submit", "RESULTS"], ["verify"]])
@pytest.mark.parametrize("below", ["", "board"])
def test_a_leaderboard_root_that_is_a_file_or_below_one_is_named_as_no_folder(sweep_results, tmp_path, command, below):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    root = afile / below
    args = [str(sweep_results) if arg == "RESULTS" else arg for arg in command]
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), *args])
    reason = f"'{afile}' is a file" if below else "it is a file"
    assert result.exit_code == 2
    assert result.output == (f"Error: cannot use '{root}' as the leaderboard folder: {reason}, not a folder; give a "
                             "folder with --root\n")
    assert afile.read_text() == "mine" and [p.name for p in tmp_path.iterdir()] == ["afile"]


def test_verify_names_the_submission_and_the_run_it_cannot_run_here(submitted_board, tmp_path, monkeypatch):
    import dcbench.running.runner as running
    from dcbench.errors import ResultsError

    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    (submission,) = (root / "submissions").iterdir()
    first = pq.read_table(submission / "summary.parquet").to_pylist()[0]

    def cannot(*args, **kwargs):  # a shipped checkpoint that is not there, say
        raise ResultsError("no checkpoint for this topology")

    monkeypatch.setattr(running, "run_plan", cannot)
    result = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "0"])
    assert result.exit_code == 2 and result.output == (
        f"Error: submission {submission.name}, run {first['run_id']} ({first['scenario']} seed {first['seed']}), "
        "cannot be re-run here: no checkpoint for this topology; put back what it needs, or draw other runs with "
        "--seed\n")


def test_verify_loads_no_checkpoint_file_a_submission_names(submitted_board, tmp_path, monkeypatch):
    from dcbench.errors import ResultsError
    from dcbench.publishing.verify import rerun
    from dcbench.running.runner import Runner

    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()
    (submission,) = (root / "submissions").iterdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.pt").write_bytes(b"whatever a checkpoint holds")  # the path it names is there
    as_if_made_by(submission, {"random": "gnn_ppo:checkpoint=mine.pt"})  # placed by hand: `submit` refuses it

    def not_to_be_run(*args, **kwargs):
        raise AssertionError("a run was built")

    monkeypatch.setattr(Runner, "run", not_to_be_run)
    for command in ([], ["verify", "--runs", "0"]):
        result = runner.invoke(cli, ["leaderboard", "--root", str(root), *command])
        assert result.exit_code == 2 and result.output.count("\n") == 1
        assert result.output.startswith(f"Error: submission '{submission}' is damaged (run ")
        assert "allocator 'gnn_ppo:checkpoint=mine.pt' names a checkpoint file, which no one else has" in result.output
    row = next(row for row in pq.read_table(submission / "summary.parquet").to_pylist()
               if row["allocator"].startswith("gnn_ppo"))
    with pytest.raises(ResultsError, match="names a checkpoint file.*; only checkpoints that ship with an installed "
                                           "plugin are loaded$"):
        rerun(row, Runner())


def test_every_column_has_one_number_format_and_shows_the_means(sweep_results, built_board, tmp_path):
    # a column's cells share their decimals (no 8.60e-04 beside 0.0166), enough for its typical value's three digits
    from dcbench.running.stats import mean_ci

    root = board_copy(built_board, tmp_path)
    page = (root / "README.md").read_text()
    rows = pq.read_table(sweep_results / "summary.parquet").to_pylist()
    places = set()
    for scenario in sorted({row["scenario"] for row in rows}):
        table = page.split(f"### nara2022 / {scenario}\n")[1].strip().split("\n\n")[0].splitlines()
        header = [h.strip() for h in table[0].strip("|").split("|")]
        assert header == ["rank", "entry", "acceptance ratio ↑", "Δ", "significant win"]
        for line in table[2:]:
            cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
            runs = [r for r in rows if r["scenario"] == scenario and r["allocator"].split(":")[0] == cells["entry"]]
            mean, half, _ = mean_ci(r["acceptance_ratio"] for r in runs)
            shown_mean, shown_half = cells["acceptance ratio ↑"].split(" ± ")
            places |= {len(shown_mean.split(".")[1]), len(shown_half.split(".")[1])}
            assert float(shown_mean) == pytest.approx(mean, abs=0.0005) and float(shown_half) == pytest.approx(
                half, abs=0.0005)
            if cells["Δ"] != "reference":
                assert re.fullmatch(r"[+-]\d\.\d{3} ± \d\.\d{3}", cells["Δ"]), cells["Δ"]
    assert places == {3}


# ----- one writer at a time, and what a killed one left ---------------------

def test_a_second_submit_while_one_is_under_way_is_refused_in_one_line_and_the_board_is_whole(
        sweep_results, random_sweep, tmp_path, monkeypatch):
    import os
    import threading

    from dcbench.errors import ResultsError
    from dcbench.publishing import submit as submitting
    from dcbench.registry import get_registry

    root = tmp_path / "leaderboard"
    checking, may_go_on = threading.Event(), threading.Event()
    validate = submitting.validate

    def held_while_checked(results, registry, about=None):  # the first submit, paused between check and write
        if results == sweep_results:
            checking.set()
            may_go_on.wait(timeout=120)
        return validate(results, registry, about)

    monkeypatch.setattr(submitting, "validate", held_while_checked)
    accepted = []
    first = threading.Thread(target=lambda: accepted.append(submitting.submit(sweep_results, root, get_registry())))
    first.start()
    try:
        assert checking.wait(timeout=120)
        with pytest.raises(ResultsError) as refused:
            submitting.submit(random_sweep, root, get_registry())
        rebuilt = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    finally:
        may_go_on.set()
        first.join()
    said = f"another dcbench leaderboard submit is writing to '{root}' (pid {os.getpid()}); wait for it or choose " \
           "another --root"
    assert str(refused.value) == said
    assert rebuilt.exit_code == 2 and rebuilt.output == f"Error: {said}\n"
    assert len(accepted) == 1 and [p.name for p in (root / "submissions").iterdir()] == [accepted[0].name]
    assert not (tmp_path / ".leaderboard.lock").exists()
    second = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(random_sweep)])
    assert second.exit_code == 0, second.output  # once the first is done
    rebuilt = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert sorted(p.name for p in root.iterdir()) == ["README.md", "index.html", "plots", "submissions", "tables"]
    assert len(list((root / "submissions").iterdir())) == 2 and sorted(os.listdir(tmp_path)) == ["leaderboard"]


def test_a_rebuild_removes_what_a_killed_rebuild_left_and_nothing_else(tmp_path):
    root = tmp_path / "leaderboard"
    shutil.copytree(Path(__file__).resolve().parents[3] / "leaderboard", root)
    committed = snapshot(root)
    left = [root / ".plots.tmp-k1ll3d", root / ".plots.old-k1ll3d", root / ".README.md.tmp-k1ll3d",
            root / ".index.html.tmp-k1ll3d", root / ".README.md.old-4242"]
    for leftover in left[:2]:
        (leftover / "plots").mkdir(parents=True)
        (leftover / "plots" / "nara2022.png").write_bytes(b"half a plot")
    for leftover in left[2:]:
        leftover.write_text("half a page")
    others = [root / ".notes.tmp-mine", root / "submissions" / ".nara2022--x--00000000.tmp-abc"]
    for other in others:  # not the rebuild's: another name, or a submit's
        other.mkdir()
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert [path for path in left if path.exists()] == [] and all(other.is_dir() for other in others)
    assert snapshot(root) == committed  # (the folders left are empty: no file in them)


def test_a_run_id_changed_by_a_plugins_code_names_the_plugin_its_version_and_digests():
    from dcbench.publishing.verify import differing_columns

    row = {"run_id": "a" * 16, "allocator_fingerprint": "; plugin acme-alloc 1.0 src=1111; plugin acme-topo 2.0 "
                                                         "src=2222; metrics busy"}
    again = {"allocator_fingerprint": "plugin acme-alloc 1.0 src=3333; plugin acme-topo 2.0 src=2222; metrics busy"}
    assert differing_columns(row, "b" * 16, again) == [
        "run_id", "acme-alloc: submitted acme-alloc 1.0 src=1111, installed acme-alloc 1.0 src=3333"]
    assert differing_columns(row, "b" * 16, row) == ["run_id"]  # the same plugins: dcbench, specs or checkpoint


def test_verify_says_which_plugin_changed_rather_than_blaming_dcbench(submitted_board, tmp_path, monkeypatch):
    import dcbench.publishing.verify as verify

    root = board_copy(submitted_board, tmp_path)
    runner = CliRunner()

    def rerun_rows(rows, runner, workers, on_result, **kwargs):
        for i in range(len(rows)):
            on_result(i, ["run_id", "acme-alloc: submitted acme-alloc 1.0 src=1111, installed acme-alloc 1.0 "
                                    "src=3333"])

    monkeypatch.setattr(verify, "rerun_rows", rerun_rows)
    result = runner.invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "1", "-q"])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].endswith(
        ": another run id: plugin acme-alloc: submitted acme-alloc 1.0 src=1111, installed acme-alloc 1.0 src=3333")
