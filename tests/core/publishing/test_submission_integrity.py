"""A submission is data, and only well-formed data: whatever `submit` accepts, a rebuild ranks and draws.

Each hostile submission here is forged as its submitter could forge it: every
row changed alike in the sweep's summary and in its run's own folder, the run
ids recomputed, so that only the checks of names and values stand in its way.
"""

import html
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbench.commands import cli
from dcbench.publishing.submissions import SPEC_CHARACTERS, spec_problem, submission_name
from dcbench.running.numbers import value_range, values_problem
from dcbench.running.runner import run_hash
from dcbench.running.summary import RUN_IDENTITY
from tests.conftest import board_copy
from tests.core.publishing.test_leaderboard import copied_submission, snapshot


def write_rows(path, rows, provenance):
    pq.write_table(pa.Table.from_pylist(rows).replace_schema_metadata(
        {b"dcbench": json.dumps(provenance, sort_keys=True).encode()}), path)


def forge(results, change):
    """Rewrite the sweep in ``results`` as if its runs had made the rows ``change(row)`` makes: the
    combined summary, each run's own summary and folder name, and the run ids, all agreeing."""
    combined = pq.read_table(results / "summary.parquet")
    rows = []
    for row in combined.to_pylist():
        new = change(dict(row))
        new["run_id"] = run_hash(*(new[column] for column in RUN_IDENTITY[1:]))
        folder = results / row["run_id"]
        own = json.loads(pq.read_table(folder / "summary.parquet").schema.metadata[b"dcbench"])
        write_rows(folder / "summary.parquet", [{k: v for k, v in new.items() if k != "scenario"}],
                   {**own, "run_id": new["run_id"], "allocator": new["allocator"]})
        folder.rename(results / new["run_id"])
        rows.append(new)
    provenance = json.loads(combined.schema.metadata[b"dcbench"])
    write_rows(results / "summary.parquet", rows, {**provenance, "runs": [row["run_id"] for row in rows],
                                                   "allocators": list(dict.fromkeys(r["allocator"] for r in rows))})


def copied(root, submission, name, change_rows, suite=None):
    """`copied_submission`, its submission.json naming the allocators its rows now hold."""
    copy = copied_submission(root, submission, name, change_rows, suite)
    record = json.loads((copy / "submission.json").read_text())
    record["allocators"] = list(dict.fromkeys(pq.read_table(copy / "summary.parquet").column("allocator").to_pylist()))
    (copy / "submission.json").write_text(json.dumps(record))
    return copy


def allocator(spec):
    return lambda row: {**row, "allocator": spec}


def workload(spec):
    return lambda row: {**row, "workload": spec}


REPLAYED = "refused by the replay, or accepted"


def first_row(column, value):
    """Every run of seed 0 of the first scenario with ``column`` set to ``value``."""
    return lambda row: {**row, column: value} if (row["seed"], row["scenario"]) == (0, "8-1x1") else row


def column_added(column, value):
    return lambda row: {**row, column: value}


REFUSED = [
    pytest.param(allocator("random/../../../ESCAPED"), "holds '/'; a submitted spec holds only letters, digits and "
                 "_ . - + : , =", id="path-traversal"),
    pytest.param(allocator("random:x=..\\..\\x"), "holds '\\\\'", id="windows-path"),
    pytest.param(workload("trace:file=/etc/passwd"), "names an absolute path; a submitted spec names files "
                 "relative to its folder", id="workload-absolute-path"),
    pytest.param(workload("trace:file=traces/../../x.csv"), "holds '..'", id="workload-dot-dot"),
    pytest.param(allocator("random:x=a..b"), "holds '..'; a submitted spec names no path", id="dot-dot"),
    pytest.param(allocator("random:x=[a](https://x)"), "holds '['", id="markdown-link"),
    pytest.param(allocator("random:x=<script>"), "holds '<'", id="html"),
    pytest.param(allocator("random:x=$\\frac{$"), "holds '$'", id="mathtext"),
    pytest.param(allocator("random:x=`a`"), "holds '`'", id="backtick"),
    pytest.param(allocator("random:x=a|b"), "holds '|'", id="pipe"),
    pytest.param(allocator("random\n## pwned"), "holds '\\n'", id="newline"),
    pytest.param(allocator("random:x=" + "a" * 600), "has 609 characters, more than the 512 a spec may have",
                 id="long"),
    pytest.param(allocator("gnn_ppo:checkpoint=mine.pt"), "names a checkpoint file, which no one else has to run it "
                 "again; ship the checkpoint in a plugin", id="checkpoint"),
    pytest.param(allocator("gnn_ppo:checkpoint=/home/me/mine.pt"), "names a checkpoint file", id="checkpoint-path"),
    pytest.param(allocator("firstfit"), "allocator 'firstfit' is no plugin installed here, so its runs could never "
                 "be verified; install the plugin", id="not-installed"),
    pytest.param(allocator("random:x=1"), "allocator 'random:x=1' does not bind to its plugin's parameters",
                 id="unknown-parameter"),
    pytest.param(allocator("tetris"), "allocator 'tetris' is not written as its runs write it "
                 "('tetris:penalty=0.9,scale=10,fit_last=no')", id="not-resolved"),
    pytest.param(first_row("acceptance_ratio", 2.0), "acceptance_ratio=2.0 is not a share from 0 to 1, or NaN",
                 id="acceptance-2"),
    pytest.param(first_row("acceptance_ratio", -1.0), "acceptance_ratio=-1.0 is not a share", id="acceptance-negative"),
    pytest.param(first_row("acceptance_ratio", 1e308), "acceptance_ratio=1e+308 is not a share", id="acceptance-huge"),
    pytest.param(first_row("acceptance_ratio", math.inf), "acceptance_ratio=inf is not a share", id="acceptance-inf"),
    pytest.param(first_row("acceptance_ratio", math.nan), "has no finite acceptance_ratio", id="acceptance-nan"),
    pytest.param(first_row("cpu_util", math.inf), "cpu_util=inf is not a utilisation from 0 to 1, or NaN",
                 id="utilisation-inf"),
    pytest.param(first_row("link_util_tier2", 1.5), "link_util_tier2=1.5 is not a utilisation", id="utilisation-1.5"),
    pytest.param(first_row("invalid_allocations", math.nan), "invalid_allocations=nan is not a whole number from 0",
                 id="count-nan"),
    pytest.param(first_row("accepted_size_3", 2.5), "accepted_size_3=2.5 is not a whole number", id="count-fraction"),
    pytest.param(first_row("offered", -3), "offered=-3 is not a whole number from 0", id="count-negative"),
    pytest.param(column_added("score", math.inf), "score=inf is not a finite number, or NaN", id="other-inf"),
    pytest.param(column_added("weird_ratio", 1.5), "weird_ratio=1.5 is not a share", id="convention-ratio"),
    pytest.param(column_added("a|b", 1.0), "column 'a|b' is no column name", id="column-name"),
]

ACCEPTED = [
    pytest.param(lambda row: row, None, id="as-made"),
    # Forged in one seed only: the replay on arrival catches them where it draws that seed.
    pytest.param(first_row("cpu_util", math.nan), REPLAYED, id="utilisation-nothing-measured"),
    pytest.param(first_row("link_util_tier1_last25", -7.6e-18), REPLAYED, id="utilisation-rounded-below-0"),
]

# Within every range, so that only the replay on arrival, which makes a run of each cell again, refuses them.
REPLAYED_OTHERWISE = [
    pytest.param(column_added("score", 1e308), "other score (not made here)", id="other-huge-but-finite"),
    pytest.param(column_added("score", math.nan), "other score (not made here)", id="other-nan"),
    pytest.param(allocator("tetris:penalty=0.5,scale=10,fit_last=no"), "other accepted, acceptance_ratio",
                 id="a-variant"),
]


def submit(results, root):
    return CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(results)])


@pytest.mark.parametrize("change, refusal", REFUSED + ACCEPTED + REPLAYED_OTHERWISE)
def test_a_hostile_submission_is_refused_by_submit_in_one_line_or_accepted_and_rebuilt(random_sweep, tmp_path,
                                                                                        change, refusal):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    forge(results, change)
    root = tmp_path / "leaderboard"
    (root / "submissions").mkdir(parents=True)
    before = snapshot(root)
    result = submit(results, root)
    if refusal is REPLAYED:  # refused by the replay, or accepted: either way in one line, and nothing half-done
        refusal = "replayed, came out otherwise" if result.exit_code else None
    if refusal is not None:
        assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
        assert result.output.startswith("Error: submission refused: ") and refusal in result.output
        assert snapshot(root) == before
    else:
        assert result.exit_code == 0, result.output
        rebuilt = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
        assert rebuilt.exit_code == 0, rebuilt.output
        assert (root / "plots" / "nara2022.png").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaderboard", "results"]  # nothing escaped


# ----- counts that disagree ---------------------------------------------------
# Each forgery of the first scenario's seed 0 (as `first_row`) takes that row as made (its measured requests M
# are all it offered, 128, of which it accepted A) and gives (the cells it changes, what the refusal says).

def raised_acceptance(row):
    ratio = row["acceptance_ratio"] + 0.25
    return {"acceptance_ratio": ratio}, (f"acceptance_ratio={ratio!r} is not the {row['accepted']} accepted "
                                         "(accepted_size_1..8) over a whole number of measured requests of at most "
                                         f"offered={row['offered']}")


def accepted_above_offered(row):
    return {"accepted": row["offered"] + 1}, f"accepted={row['offered'] + 1} is more than offered={row['offered']}"


def offered_above_requests(row):
    return {"offered": row["requests"] + 1}, f"offered={row['requests'] + 1} is more than requests={row['requests']}"


def invalid_above_refused(row):
    refused = row["offered"] - row["accepted"]
    return ({"invalid_allocations": float(refused + 1)},
            f"invalid_allocations={refused + 1} is more than the {refused} requests refused (offered - accepted)")


def accepted_below_its_brackets(row):
    return ({"accepted": row["accepted"] - 1},
            f"accepted_size_1..8 add up to {row['accepted']}, more than accepted={row['accepted'] - 1}")


def measured_refusals_beyond_the_runs(row):
    return ({"accepted": row["offered"]}, f"acceptance_ratio={row['acceptance_ratio']!r} leaves "
            f"{row['offered'] - row['accepted']} measured requests refused, more than offered - accepted=0")


def blocking_not_the_rest(row):
    blocking = row["blocking_probability"] - 0.01
    return {"blocking_probability": blocking}, (f"blocking_probability={blocking!r} is not "
                                                f"{row['blocking_probability']!r}, the share refused of the measured "
                                                f"requests that acceptance_ratio={row['acceptance_ratio']!r} gives")


def a_bracket(row):
    """The first size bracket with some requests accepted and some refused, and how many it had."""
    k = next(k for k in range(1, 9) if 0 < row[f"acceptance_size_{k}"] < 1)
    return k, round(row[f"accepted_size_{k}"] / row[f"acceptance_size_{k}"])


def bracket_share_of_no_count(row):
    k, requests = a_bracket(row)
    share = row[f"acceptance_size_{k}"] + 0.01
    return {f"acceptance_size_{k}": share}, (f"acceptance_size_{k}={share!r} is not "
                                             f"accepted_size_{k}={int(row[f'accepted_size_{k}'])} over a whole "
                                             "number of requests")


def brackets_beyond_the_measured(row):
    k, requests = a_bracket(row)
    return ({f"acceptance_size_{k}": row[f"accepted_size_{k}"] / (requests + 1)},
            f"the requests of acceptance_size_1..8 come to {row['offered'] + 1}, not the {row['offered']} measured "
            "requests of acceptance_ratio")


INCONSISTENT = [raised_acceptance, accepted_above_offered, offered_above_requests, invalid_above_refused,
                accepted_below_its_brackets, measured_refusals_beyond_the_runs, blocking_not_the_rest,
                bracket_share_of_no_count, brackets_beyond_the_measured]


@pytest.mark.parametrize("forgery", INCONSISTENT)
def test_a_summary_whose_counts_disagree_is_refused_by_submit_rebuild_report_and_plot(random_sweep, random_board,
                                                                                      tmp_path, forgery):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    (row,) = [row for row in pq.read_table(results / "summary.parquet").to_pylist()
              if (row["seed"], row["scenario"]) == (0, "8-1x1")]
    assert row["offered"] == row["requests"] and row["invalid_allocations"] == 0  # as the forgeries take it
    changes, problem = forgery(row)
    forge(results, lambda forged: {**forged, **changes} if forged["run_id"] == row["run_id"] else forged)
    assert pq.read_table(results / "summary.parquet").column("run_id").to_pylist().count(row["run_id"]) == 1
    problem = f"run {row['run_id']}: {problem}"
    root = tmp_path / "leaderboard"
    refused = submit(results, root)
    assert refused.exit_code == 2 and refused.output == f"Error: submission refused: {problem}\n"
    board_copy(random_board, tmp_path)  # accepted as made, then edited in below
    (submission,) = (root / "submissions").iterdir()
    shutil.copy(results / "summary.parquet", submission / "summary.parquet")  # edited in after it was accepted
    rebuilt = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert rebuilt.exit_code == 2 and rebuilt.output == (
        f"Error: submission '{submission}' is damaged ({problem}); remove that folder and submit the sweep's results "
        "folder again with `dcbench leaderboard submit`\n")
    for command in (["report", str(results), "--out", str(tmp_path / "r.md")],
                    ["plot", str(results), "--out", str(tmp_path / "plots")]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2 and result.output == (
            f"Error: '{results / 'summary.parquet'}' is damaged ({problem}); remove it and run the sweep again to "
            "rebuild it\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaderboard", "results"]


@pytest.mark.parametrize("command", ["report", "plot"])
def test_report_and_plot_refuse_a_number_outside_its_range_as_submit_and_the_rebuild_do(random_sweep, tmp_path,
                                                                                        command):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    forge(results, first_row("cpu_util", 1.5))
    (run,) = [row["run_id"] for row in pq.read_table(results / "summary.parquet").to_pylist()
              if (row["seed"], row["scenario"]) == (0, "8-1x1")]
    result = CliRunner().invoke(cli, [command, str(results), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output == (
        f"Error: '{results / 'summary.parquet'}' is damaged (run {run}: cpu_util=1.5 is not a utilisation from 0 to "
        "1, or NaN); remove it and run the sweep again to rebuild it\n")
    assert not (tmp_path / "out").exists()


def test_the_counts_of_every_committed_submission_agree():
    from dcbench.running.numbers import counts_problem

    summaries = sorted((Path(__file__).resolve().parents[3] / "leaderboard" / "submissions").glob("*/summary.parquet"))
    if not summaries:
        pytest.skip("no leaderboard/ here (an installed wheel)")
    tables = [pq.read_table(path) for path in summaries]
    assert sum(table.num_rows for table in tables) == 1_760
    suites = {json.loads(t.schema.metadata[b"dcbench"])["suite"] for t in tables}
    assert {"nara2022", "odcn2025", "openb2023", "openb2023-ocs"} <= suites
    assert [counts_problem(table) for table in tables] == [None] * len(tables)
    # with a warm-up, the measured requests the ratios give back are fewer than those offered
    rows = [row for table in tables for row in table.to_pylist() if row["acceptance_ratio"] > 0]
    measured = [round(sum(row[f"accepted_size_{k}"] for k in range(1, 9)) / row["acceptance_ratio"]) for row in rows]
    assert {"warmup=" in row["workload"] for row, m in zip(rows, measured) if m < row["offered"]} == {True}
    assert any(m == row["offered"] for row, m in zip(rows, measured))


@pytest.mark.parametrize("column", ["acceptance_ratio", "run_id"])
def test_a_summary_with_two_columns_of_one_name_is_refused_in_one_line(random_sweep, tmp_path, column):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    table = pq.read_table(results / "summary.parquet")
    pq.write_table(table.append_column(column, table.column(column)), results / "summary.parquet")
    root = tmp_path / "leaderboard"
    for command in (["report", str(results), "--out", str(tmp_path / "r.md")],
                    ["plot", str(results), "--out", str(tmp_path / "plots")],
                    ["leaderboard", "--root", str(root), "submit", str(results)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2 and result.output == (
            f"Error: '{results / 'summary.parquet'}' has two columns named {column!r}, which no table dcbench writes "
            "has; remove it and rerun\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


def test_a_submission_given_a_second_column_of_one_name_later_is_named_by_the_rebuild(random_board, tmp_path):
    root = board_copy(random_board, tmp_path)
    (submission,) = (root / "submissions").iterdir()
    table = pq.read_table(submission / "summary.parquet")
    pq.write_table(table.append_column("acceptance_ratio", table.column("acceptance_ratio")),
                   submission / "summary.parquet")
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and result.output == (
        f"Error: submission '{submission}' is damaged (its summary.parquet has two columns named 'acceptance_ratio', "
        "which no table dcbench writes has); remove that folder and submit the sweep's results folder again with "
        "`dcbench leaderboard submit`\n")


def decompression_bomb(path, rows):
    """A summary of ``rows`` zeros in one column, written a million at a time: a small file, a big table."""
    chunk = pa.table({"run_id": pa.array(np.zeros(1_000_000, dtype=np.int64))})
    with pq.ParquetWriter(path, chunk.schema, compression="zstd") as writer:
        for _ in range(rows // 1_000_000):
            writer.write_table(chunk)


def test_a_small_summary_that_decompresses_to_millions_of_rows_is_refused_before_it_is_read(random_sweep, tmp_path,
                                                                                          monkeypatch):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    decompression_bomb(results / "summary.parquet", 10_000_000)
    assert (results / "summary.parquet").stat().st_size < 200_000

    def not_to_be_read(*args, **kwargs):
        raise AssertionError("the data was read")

    monkeypatch.setattr(pq.ParquetFile, "read", not_to_be_read)
    for command in (["report", str(results)], ["plot", str(results)],
                    ["leaderboard", "--root", str(tmp_path / "board"), "submit", str(results)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2 and result.output == (
            f"Error: '{results / 'summary.parquet'}' has 10,000,000 rows, more than the 1,000,000 a results table may "
            "have; remove it and rerun\n")


def test_a_small_summary_whose_text_decodes_to_gigabytes_is_refused_in_one_line(random_sweep, tmp_path):
    from tests.core.storage.test_results import dictionary_bomb

    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    dictionary_bomb(results / "summary.parquet")
    for command in (["report", str(results)], ["plot", str(results)],
                    ["leaderboard", "--root", str(tmp_path / "board"), "submit", str(results)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2 and result.output == (
            f"Error: '{results / 'summary.parquet'}' decodes to 65,540,000,000 bytes, more than the 268,435,456 a "
            "results table may hold (its column 'run_id' alone to 65,536,000,000); remove it and rerun\n")


def with_provenance(path, stored):
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({b"dcbench": stored}), path)


DEEP = b"[" * 100_000  # deeper than Python's parser goes: a RecursionError, were it not caught


def test_provenance_nested_too_deeply_is_one_line_that_names_the_file(random_sweep, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(random_sweep, results)
    with_provenance(results / "summary.parquet", DEEP)
    summary = results / "summary.parquet"
    problem = "its dcbench provenance is JSON nested more deeply than it can be parsed"
    for command, said in [
        (["report", str(results)], f"'{summary}' is damaged ({problem}); remove it and run the sweep again"),
        (["plot", str(results)], f"'{summary}' is damaged ({problem}); remove it and run the sweep again"),
        (["leaderboard", "--root", str(tmp_path / "board"), "submit", str(results)],
         f"'{summary}' is damaged ({problem}); remove it and run the sweep again"),
        (["sweep", "-s", "nara2022", "-a", "random", "--out", str(results), "-q"],
         f"'{summary}' is not a dcbench sweep's summary ({problem}); give this sweep another --out"),
    ]:
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
        assert result.output.startswith(f"Error: {said}")


@pytest.mark.parametrize("damage, problem", [
    (lambda submission: with_provenance(submission / "summary.parquet", DEEP),
     "its dcbench provenance is JSON nested more deeply than it can be parsed"),
    (lambda submission: (submission / "submission.json").write_bytes(DEEP),
     "its submission.json does not read: UnreadableJSON: JSON nested more deeply than it can be parsed"),
    (lambda submission: (submission / "submission.json").write_bytes(b"[" + b"0," * 5_000_000 + b"0]"),
     "its submission.json does not read: UnreadableJSON: JSON of more than the 8,388,608 bytes dcbench reads"),
    (lambda submission: ((submission / "submission.json").unlink(), os.mkfifo(submission / "submission.json")),
     "its submission.json does not read: OSError: [Errno 22] not a file but a folder, a device or a pipe"),
])
def test_a_submission_whose_json_does_not_parse_is_named_by_the_rebuild_and_verify(random_board, tmp_path, damage,
                                                                                  problem):
    root = board_copy(random_board, tmp_path)
    (submission,) = (root / "submissions").iterdir()
    damage(submission)
    for command in ([], ["verify", "--runs", "1"]):
        result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), *command])
        assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
        assert result.output.startswith(f"Error: submission '{submission}' is damaged ({problem}")


@pytest.mark.parametrize("command", ["report", "plot", "submit"])
def test_a_pipe_named_summary_parquet_is_refused_in_one_line_not_waited_on(tmp_path, command):
    results = tmp_path / "results"
    results.mkdir()
    os.mkfifo(results / "summary.parquet")
    args = ["leaderboard", "--root", str(tmp_path / "board"), "submit"] if command == "submit" else [command]
    result = CliRunner().invoke(cli, [*args, str(results)])
    assert result.exit_code == 2 and result.output == (
        f"Error: '{results / 'summary.parquet'}' is not a file but a folder, a device or a pipe; remove it and "
        "rerun\n")


def hostile_labels(row):
    row["scenario"] += " <img src=x>|`x`*$\\frac{$"


def test_a_submission_of_a_suite_no_longer_registered_is_ranked_with_its_labels_escaped(random_board, tmp_path):
    root = board_copy(random_board, tmp_path)
    (submission,) = (root / "submissions").iterdir()
    copied(root, submission, "oldsuite--random--00000000", hostile_labels, suite="oldsuite")
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 0, result.output
    page = (root / "README.md").read_text()
    assert "### oldsuite / 8-1x1 \\<img src=x\\>\\|\\`x\\`\\*\\$\\\\frac{\\$\n" in page
    assert page.count("<img") == page.count("\\<img") == 12 and "`x`" not in page
    page = (root / "index.html").read_text()
    assert "<h4>8-1x1 &lt;img src=x&gt;|`x`*$\\frac{$</h4>" in page and "<img src=x>" not in page
    assert (root / "plots" / "oldsuite.png").is_file()


def test_a_submission_whose_allocator_is_no_longer_installed_is_still_ranked(random_board, tmp_path):
    root = board_copy(random_board, tmp_path)
    (submission,) = (root / "submissions").iterdir()
    copied(root, submission, "nara2022--firstfit--00000000",
                      lambda row: row.update(allocator="firstfit:fast=yes"))
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "| firstfit | heuristic |" in (root / "README.md").read_text()  # described as it could be


@pytest.mark.parametrize("make, problem", [
    (lambda root, submission: submission.rename(root / "submissions" / "nara2022 random"),
     "its name 'nara2022 random' is none that `dcbench leaderboard submit` gives"),
    (lambda root, submission: (shutil.move(submission, root / "elsewhere"),
                               (root / "submissions" / submission.name).symlink_to(root / "elsewhere")),
     "it or its summary.parquet is a link; a submission is a folder of its own"),
    (lambda root, submission: (shutil.move(submission / "summary.parquet", root / "summary.parquet"),
                               (submission / "summary.parquet").symlink_to(root / "summary.parquet")),
     "it or its summary.parquet is a link"),
])
def test_a_submission_folder_submit_did_not_make_is_named_by_the_rebuild(random_board, tmp_path, make, problem):
    root = board_copy(random_board, tmp_path)
    (submission,) = (root / "submissions").iterdir()
    make(root, submission)
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert " is damaged (" + problem in result.output


def test_a_rebuild_that_fails_on_one_submission_names_it(random_board, tmp_path, monkeypatch):
    import dcbench.publishing.leaderboard as leaderboard

    root = board_copy(random_board, tmp_path)
    (submission,) = (root / "submissions").iterdir()
    culprit = copied(root, submission, "nara2022--mine--00000000",
                                lambda row: row.update(allocator="mine:x=1"))
    draw = leaderboard._plot

    def fails_on_mine(rows, *args, **kwargs):  # as matplotlib failed on a '$…$' in a label
        if any(row["allocator"] == "mine:x=1" for row in rows):
            raise ValueError("Unknown symbol: \\bad")
        return draw(rows, *args, **kwargs)

    monkeypatch.setattr(leaderboard, "_plot", fails_on_mine)
    before = snapshot(root)
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and result.output == (
        f"Error: submission '{culprit}' is damaged (it cannot be ranked or drawn: ValueError: Unknown symbol: \\bad); "
        "remove that folder and submit the sweep's results folder again with `dcbench leaderboard submit`\n")
    assert snapshot(root) == before

    def fails_on_both(rows, *args, **kwargs):  # neither alone: both are named
        if {"random", "mine:x=1"} <= {row["allocator"] for row in rows}:
            raise ValueError("too many")
        return draw(rows, *args, **kwargs)

    monkeypatch.setattr(leaderboard, "_plot", fails_on_both)
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert result.exit_code == 2 and result.output == (
        f"Error: the submissions {culprit.name}, {submission.name} cannot be ranked or drawn together (ValueError: "
        "too many); remove one of their folders and rebuild\n")
    assert snapshot(root) == before


def test_a_new_submissions_folder_name_is_short_and_from_checked_names_whatever_its_allocators():
    many = [f"allocator_number_{i}:x=1" for i in range(40)]
    name = submission_name("nara2022", many, ["a", "b"], "0.3.3")
    assert len(name) <= 120 and name.startswith("nara2022--allocator_number_0-allocator_number_1-")
    assert name != submission_name("nara2022", many, ["a", "c"], "0.3.3")  # the digest of its runs tells them apart
    assert submission_name("nara2022", ["tetris:penalty=0.9,scale=10,fit_last=yes", "bestfit:local=no"],
                           ["x"], "0.3.3").startswith("nara2022--bestfit-tetris--")


# ----- properties ------------------------------------------------------------

HOSTILE_CHARACTERS = "/\\`|<>[]()$&*~#_!\"' \t\n\r\x00\x1b\u202e\u00a0é８.:,=+-"


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet=sorted(SPEC_CHARACTERS) + list(HOSTILE_CHARACTERS), max_size=30), st.text()))
def test_a_spec_that_passes_is_plain_text_on_every_page_and_in_every_figure(text):
    from dcbench.publishing.figures import plain
    from dcbench.publishing.report import cell
    from dcbench.spec import Spec

    if spec_problem("allocator", text) is not None:
        return
    assert set(text) <= SPEC_CHARACTERS and ".." not in text and "checkpoint" not in Spec.parse(text).kwargs
    assert html.escape(text) == text
    assert cell(text).replace("\\_", "_") == text  # a '_' at a word's edge escaped, lest it start emphasis
    assert plain(text).strip() == text and "$" not in text and Path(text).name == text


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["acceptance_ratio", "cpu_util", "link_util_tier3_last25", "accepted_size_2", "latency_us",
                        "score"]),
       st.one_of(st.floats(), st.sampled_from([0.0, 1.0, -1e-12, 1 + 1e-12, 2.0, -1.0, 1e308, 2.5, 2.0**60])))
def test_a_value_passes_exactly_when_it_is_within_its_columns_declared_range(column, value):
    table = pa.table({"run_id": ["r"], column: pa.array([value], type=pa.float64())})
    declared = value_range(column)
    inside = (declared.nan if math.isnan(value) else
              math.isfinite(value) and declared.low - declared.slack <= value <= declared.high + declared.slack
              and (not declared.whole or value.is_integer()))
    assert (values_problem(table) is None) == inside


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=st.text(min_size=1, max_size=20), value=st.floats(), name=st.sampled_from(["score", "x_ratio"]))
def test_whatever_a_rebuild_does_not_refuse_as_damaged_it_ranks_and_draws(random_board, tmp_path_factory, scenario,
                                                                          value, name):
    root = board_copy(random_board, tmp_path_factory.mktemp("board"))
    (submission,) = (root / "submissions").iterdir()
    copied(root, submission, "oldsuite--random--00000000",
                      lambda row: row.update(scenario=row["scenario"] + scenario, **{name: value}), suite="oldsuite")
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    # the pages, a plot and four tables per suite
    assert result.output.count("\n") == (1 if result.exit_code == 2 else 2 + 2 * 5), result.output
    if result.exit_code == 2:
        assert result.output.startswith(f"Error: submission '{root / 'submissions' / 'oldsuite--random--00000000'}' "
                                        "is damaged (")
    else:
        assert result.exit_code == 0 and (root / "plots" / "oldsuite.png").is_file()
