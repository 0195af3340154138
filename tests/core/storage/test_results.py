
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dcbench import ResultsError
from dcbench.running.summary import is_complete, run_folder_problem
from dcbench.storage.files import write_text_atomic
from dcbench.storage.paths import check_writable
from dcbench.storage.tables import provenance_of, read_table


def test_a_run_writes_three_tables_with_provenance(runner, tmp_path):
    result = runner.run("tetris", "tiered:8,1x4", requests=32, seed=2)
    folder = result.write(tmp_path)
    assert folder == tmp_path / result.run_id and is_complete(folder)
    requests = pq.read_table(folder / "requests.parquet")
    assert requests.num_rows == 32
    assert pq.read_table(folder / "summary.parquet").num_rows == 1
    provenance = provenance_of(pq.read_table(folder / "timeline.parquet"))
    assert provenance["run_id"] == result.run_id and provenance["seed"] == 2
    assert provenance["allocator"] == "tetris:penalty=0.9,scale=10,fit_last=no"
    assert "dcbench.plugins.allocators.tetris" in provenance["plugins"]
    assert [p.name for p in tmp_path.iterdir()] == [result.run_id]  # no leftovers


def test_rewriting_a_run_replaces_it_whole(runner, tmp_path):
    result = runner.run("tetris", "tiered:8,1x4", requests=16)
    result.write(tmp_path)
    (tmp_path / result.run_id / "stray.txt").write_text("old")
    result.write(tmp_path)
    assert sorted(p.name for p in (tmp_path / result.run_id).iterdir()) == [
        "requests.parquet", "summary.parquet", "timeline.parquet"]
    assert [p.name for p in tmp_path.iterdir()] == [result.run_id]


@pytest.mark.parametrize("stop", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_or_stopped_write_leaves_nothing_behind(runner, tmp_path, monkeypatch, stop):
    import dcbench.running.summary as results

    result = runner.run("tetris", "tiered:8,1x4", requests=16)
    calls = []

    def failing(table, path):
        calls.append(path)
        if len(calls) == 2:
            raise stop
        pq.write_table(table, path)

    monkeypatch.setattr(pq, "write_table", failing)
    with pytest.raises(ResultsError if isinstance(stop, OSError) else KeyboardInterrupt,
                       match="No space left on device" if isinstance(stop, OSError) else None):
        result.write(tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert results.is_complete(tmp_path / result.run_id) is False


def test_unwritable_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ResultsError, match="cannot write results to .*choose another folder with --out"):
        check_writable(blocker / "results")
    with pytest.raises(ResultsError, match=r"cannot write results to '.*file': it is a file, not a folder; choose"):
        check_writable(blocker)
    assert blocker.read_text() == "not a folder"


def test_the_writability_check_leaves_no_folders_behind(tmp_path):
    out = tmp_path / "a" / "b" / "results"
    check_writable(out)
    assert list(tmp_path.iterdir()) == []  # a command that fails after the check leaves nothing
    (tmp_path / "kept").mkdir()
    check_writable(tmp_path / "kept")
    assert (tmp_path / "kept").is_dir() and list((tmp_path / "kept").iterdir()) == []
    write_text_atomic(out / "note.txt", "made by the writer")  # the writers make the folders
    assert (out / "note.txt").read_text() == "made by the writer"


def test_corrupt_and_missing_files(tmp_path):
    bad = tmp_path / "summary.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ResultsError, match="corrupt results file"):
        read_table(bad)
    with pytest.raises(ResultsError, match="missing results file"):
        read_table(tmp_path / "nope.parquet")


def test_foreign_parquet_has_no_provenance(tmp_path):
    import pyarrow as pa

    pq.write_table(pa.table({"x": [1]}), tmp_path / "x.parquet")
    with pytest.raises(ResultsError, match="no dcbench provenance"):
        provenance_of(read_table(tmp_path / "x.parquet"))


@pytest.mark.parametrize("stored, problem", [
    (b"{not json", "its dcbench provenance is not JSON"),
    (b"[1, 2]", "its dcbench provenance is a JSON list, not an object"),
    (b"[" * 100_000, "its dcbench provenance is JSON nested more deeply than it can be parsed"),
    (b"[" + b"0," * 5_000_000 + b"0]", "its dcbench provenance is JSON of more than the 8,388,608 bytes dcbench "
                                       "reads"),
])
def test_damaged_provenance_is_a_one_line_error_that_names_the_file(tmp_path, stored, problem):
    import pyarrow as pa

    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"x": [1]}).replace_schema_metadata({b"dcbench": stored}), path)
    with pytest.raises(ResultsError) as caught:
        provenance_of(read_table(path), path)
    assert str(caught.value) == f"'{path}' is damaged ({problem}); delete it and rerun"


def test_a_run_folder_is_complete_only_if_its_tables_read_and_hold_its_run(runner, tmp_path):
    import shutil

    folder = runner.run("tetris", "tiered:8,1x4", requests=16).write(tmp_path)
    assert run_folder_problem(folder) is None and is_complete(folder)
    impostor = tmp_path / "0123456789abcdef"
    shutil.copytree(folder, impostor)
    assert run_folder_problem(impostor) == "holds another run"
    requests = folder / "requests.parquet"
    requests.write_bytes(requests.read_bytes()[:300])  # a truncated copy: its footer is gone
    assert not is_complete(folder)
    assert run_folder_problem(folder).startswith("has a damaged requests.parquet (ArrowInvalid: ")
    assert run_folder_problem(tmp_path / "nope") == "is missing or incomplete"


def test_results_are_as_readable_as_any_other_file(tmp_path):
    import os

    from dcbench.storage.tables import write_table_atomic

    mask = os.umask(0o022)
    try:
        write_table_atomic(tmp_path / "t.parquet", {"x": [1.0]})
        assert (tmp_path / "t.parquet").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(mask)


def test_rewriting_a_file_keeps_its_permissions_and_writes_through_a_link(tmp_path):
    from dcbench.storage.files import write_text_atomic

    page = tmp_path / "shared" / "page.md"
    page.parent.mkdir()
    page.write_text("old")
    page.chmod(0o600)
    link = tmp_path / "page.md"
    link.symlink_to(page)
    write_text_atomic(link, "new")
    assert link.is_symlink() and page.read_text() == "new"
    assert page.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in page.parent.iterdir()) == ["page.md"]  # its temporary file beside the target


def test_a_run_is_not_written_over_what_is_no_run_folder(runner, tmp_path):
    result = runner.run("tetris", "tiered:8,1x4", requests=8)
    (tmp_path / result.run_id).write_text("my notes")
    with pytest.raises(ResultsError, match="is there and is no run folder; move it, or give another --out"):
        result.write(tmp_path)
    assert (tmp_path / result.run_id).read_text() == "my notes"
    assert [p.name for p in tmp_path.iterdir()] == [result.run_id]


def test_a_folder_named_like_a_table_is_not_read_as_a_dataset(tmp_path):
    (tmp_path / "summary.parquet").mkdir()
    with pytest.raises(ResultsError, match="summary.parquet' is not a file but a folder, a device or a pipe; remove"):
        read_table(tmp_path / "summary.parquet")


def test_a_folder_that_cannot_be_swapped_in_leaves_the_previous_one_in_place(tmp_path, monkeypatch):
    import os

    import dcbench.storage.files as results

    target, staging = tmp_path / "run", tmp_path / ".run.tmp-1"
    for folder, text in ((target, "old"), (staging, "new")):
        folder.mkdir()
        (folder / "summary.parquet").write_text(text)
    replace = os.replace

    def refuse_the_new_one(source, destination):  # the old folder moved aside, then the new one refused
        if Path(source) == staging:
            raise PermissionError(13, "Permission denied")
        return replace(source, destination)

    monkeypatch.setattr(results.os, "replace", refuse_the_new_one)
    with pytest.raises(PermissionError) as raised:
        with results.swapped_in(staging, target):
            pass
    assert raised.value.filename == str(target)
    assert (target / "summary.parquet").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # the aside folder and the staging one removed


def test_a_folder_named_like_the_run_that_holds_other_files_is_refused_not_replaced(runner, tmp_path):
    result = runner.run("tetris", "tiered:8,1x4", requests=16)
    mine = tmp_path / result.run_id / "sub"
    mine.mkdir(parents=True)
    (mine / "data.csv").write_text("mine")
    with pytest.raises(ResultsError, match="is there and is no run folder; move it, or give another --out"):
        result.write(tmp_path)
    assert (mine / "data.csv").read_text() == "mine"
    (tmp_path / result.run_id / "sub" / "data.csv").unlink()
    (tmp_path / result.run_id / "sub").rmdir()
    assert is_complete(result.write(tmp_path)) and is_complete(result.write(tmp_path))  # its own folder: replaced


@pytest.mark.parametrize("below", ["page.md", "sub/page.md"])
def test_a_file_written_below_a_file_names_the_file_that_is_no_folder(tmp_path, below):
    blocker = tmp_path / "afile"
    blocker.write_text("mine")
    with pytest.raises(ResultsError) as caught:
        write_text_atomic(blocker / below, "new")
    assert str(caught.value) == (f"cannot write '{blocker / below}': '{blocker}' is a file, not a folder; "
                                 "give the path of a file to write")
    assert blocker.read_text() == "mine" and [p.name for p in tmp_path.iterdir()] == ["afile"]


def test_a_folder_below_a_file_names_the_file_that_is_no_folder(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("mine")
    with pytest.raises(ResultsError) as caught:
        check_writable(blocker / "sub" / "results", "plots")
    assert str(caught.value) == (f"cannot write plots to '{blocker / 'sub' / 'results'}': '{blocker}' is a file, "
                                 "not a folder; choose another folder with --out")
    assert blocker.read_text() == "mine"


def test_a_pipe_named_like_a_table_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(tmp_path / "summary.parquet")  # no one ever writes to it: a blocking read would wait for ever
    with pytest.raises(ResultsError) as caught:
        read_table(tmp_path / "summary.parquet")
    assert str(caught.value) == (f"'{tmp_path / 'summary.parquet'}' is not a file but a folder, a device or a pipe; "
                                 "remove it and rerun")


def not_to_be_read(*args, **kwargs):
    raise AssertionError("the data was read before the footer was checked")


@pytest.mark.parametrize("table, problem", [
    (lambda: pa.table({"x": pa.array(np.zeros(1_000_001, dtype=np.int8))}),
     "has 1,000,001 rows, more than the 1,000,000 a results table may have"),
    (lambda: pa.table({f"c{i}": [0] for i in range(1_001)}),
     "has 1,001 columns, more than the 1,000 a results table may have"),
    (lambda: pa.table([pa.array([1]), pa.array([2])], names=["run_id", "run_id"]),
     "has two columns named 'run_id', which no table dcbench writes has"),
])
def test_a_table_beyond_the_limits_is_refused_from_its_footer_before_its_data_is_read(tmp_path, monkeypatch, table,
                                                                                       problem):
    path = tmp_path / "summary.parquet"
    pq.write_table(table(), path)
    monkeypatch.setattr(pq.ParquetFile, "read", not_to_be_read)
    with pytest.raises(ResultsError) as caught:
        read_table(path)
    assert str(caught.value) == f"'{path}' {problem}; remove it and rerun"


def test_the_data_a_footer_declares_and_the_file_itself_are_bounded(tmp_path, monkeypatch):
    import dcbench.storage.tables as results

    path = tmp_path / "summary.parquet"
    pq.write_table(pa.table({"text": ["x" * 5_000]}), path, compression="zstd")  # 5 KB of data, a small file
    monkeypatch.setattr(pq.ParquetFile, "read", not_to_be_read)
    monkeypatch.setattr(results, "MAX_TABLE_BYTES", 4_000)
    assert path.stat().st_size < 4_000
    with pytest.raises(ResultsError, match=r"summary.parquet' holds 5,0\d\d bytes of data, more than the 4,000 a "
                                           "results table may hold; remove it and rerun"):
        read_table(path)
    monkeypatch.setattr(results, "MAX_TABLE_BYTES", 100)
    with pytest.raises(ResultsError, match=r"summary.parquet' is \d+ bytes, more than the 100 a results table may "
                                           "be; remove it and rerun"):
        read_table(path)


def test_a_table_within_the_limits_reads_as_pyarrow_reads_it(tmp_path):
    path = tmp_path / "summary.parquet"
    table = pa.table({"run_id": ["a", "b"], "x": [0.5, None]}).replace_schema_metadata({b"dcbench": b"{}"})
    pq.write_table(table, path)
    assert read_table(path).equals(pq.read_table(path)) and read_table(path).schema.metadata == {b"dcbench": b"{}"}


def test_text_read_as_dictionaries_comes_back_as_the_text_pyarrow_reads(tmp_path):
    path = tmp_path / "summary.parquet"
    table = pa.table({"text": ["a", None, "a", "é"], "large": pa.array(["x", "y", None, "x"], pa.large_string()),
                      "bytes": pa.array([b"\x00", b"", None, b"\x00"]), "flag": [True, False, None, True],
                      "count": pa.array([1, 2, 3, None], pa.int32()), "empty": pa.nulls(4)})
    with pq.ParquetWriter(path, table.schema) as writer:  # two row groups: a dictionary each
        writer.write_table(table.slice(0, 2))
        writer.write_table(table.slice(2))
    read = read_table(path)
    assert read.schema == pq.read_table(path).schema == table.schema
    assert read.to_pylist() == pq.read_table(path).to_pylist() == table.to_pylist()


def dictionary_bomb(path, stored_as_dictionary=False):
    """A 2.5 KB summary whose one text column, dictionary-encoded, is a million rows pointing at one 64 KiB
    value: 64 GB once decoded. Written from the dictionary itself, so that this test never holds it decoded."""
    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(1_000_000, dtype=np.int32)), pa.array(["x" * 2**16]))
    table = pa.table({"run_id": column}).replace_schema_metadata({b"dcbench": b"{}"})
    with pq.ParquetWriter(path, table.schema, compression="zstd", store_schema=stored_as_dictionary) as writer:
        writer.write_table(table)


def test_text_that_decodes_past_the_limit_is_refused_before_it_is_decoded(tmp_path):
    path = tmp_path / "summary.parquet"
    dictionary_bomb(path)
    assert path.stat().st_size < 5_000 and pq.ParquetFile(path).schema_arrow.field("run_id").type == pa.string()
    with pytest.raises(ResultsError) as caught:
        read_table(path)
    assert str(caught.value) == (f"'{path}' decodes to 65,540,000,000 bytes, more than the 268,435,456 a results "
                                 "table may hold (its column 'run_id' alone to 65,536,000,000); remove it and rerun")


@pytest.mark.parametrize("column, kind", [
    (lambda path: dictionary_bomb(path, stored_as_dictionary=True), "dictionary<values=string, indices=int32, "
                                                                    "ordered=0>"),
    (lambda path: pq.write_table(pa.table({"run_id": [[1, 2], [3]]}), path), "list<element: int64>"),
    (lambda path: pq.write_table(pa.table({"run_id": [{"a": 1}]}), path), "struct<a: int64>"),
    (lambda path: pq.write_table(pa.table({"run_id": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64()))}),
                                 path), "map<string, int64 ('run_id')>"),
    (lambda path: pq.write_table(pa.table({"run_id": pa.array([1], pa.timestamp("ms"))}), path), "timestamp[ms]"),
])
def test_a_column_of_a_type_dcbench_never_writes_is_refused_from_the_footer(tmp_path, monkeypatch, column, kind):
    path = tmp_path / "summary.parquet"
    column(path)
    monkeypatch.setattr(pq.ParquetFile, "read", not_to_be_read)
    with pytest.raises(ResultsError) as caught:
        read_table(path)
    assert str(caught.value) == (f"'{path}' has a column 'run_id' of type {kind}, which no table dcbench writes has "
                                 "(only numbers, booleans and text); remove it and rerun")


def test_rows_times_columns_of_fixed_width_are_bounded_however_small_the_file(tmp_path, monkeypatch):
    import dcbench.storage.tables as results

    path = tmp_path / "summary.parquet"
    pq.write_table(pa.table({f"c{i}": np.zeros(10_000) for i in range(10)}), path)  # 800 KB of zeros, read
    assert path.stat().st_size < 10_000
    monkeypatch.setattr(pq.ParquetFile, "read", not_to_be_read)
    monkeypatch.setattr(results, "MAX_TABLE_BYTES", 500_000)
    with pytest.raises(ResultsError) as caught:
        read_table(path)
    assert str(caught.value) == (f"'{path}' has 10,000 rows of 10 columns, 800,000 bytes once read, more than the "
                                 "500,000 a results table may hold; remove it and rerun")


def test_the_runs_of_a_folder_are_its_run_folders_each_checked_as_a_sweep_checks_it(runner, tmp_path):
    import json
    import shutil

    from dcbench.running.summary import read_runs

    runs = [runner.run(allocator, "tiered:8,1x4", requests=12).write(tmp_path) for allocator in ("tetris", "random")]
    (tmp_path / "plots").mkdir()  # not runs: what `plot` writes, a sweep's folder, a half-written run, a file
    (tmp_path / "nara2022").mkdir()
    (tmp_path / "nara2022" / "summary.parquet").write_bytes(b"PAR1")
    (tmp_path / f".{runs[0].name}.tmp-x").mkdir()
    (tmp_path / "0123456789abcdef.csv").write_text("mine")
    rows, damaged = read_runs(tmp_path)
    assert [row["run_id"] for row in rows] == sorted(run.name for run in runs) and damaged == []
    assert rows[0]["acceptance_ratio"] == pq.read_table(tmp_path / rows[0]["run_id"] / "summary.parquet")[
        "acceptance_ratio"][0].as_py()
    # an edited spec (its provenance still names the run): the run id is no longer the hash of what it says
    edited = runs[1] / "summary.parquet"
    table = pq.read_table(edited)
    table = table.set_column(table.column_names.index("allocator"), "allocator", pa.array(["bestfit"]))
    pq.write_table(table, edited)
    impostor = tmp_path / "0123456789abcdef"
    shutil.copytree(runs[0], impostor)
    rows, damaged = read_runs(tmp_path)
    assert [row["run_id"] for row in rows] == [runs[0].name]
    assert damaged == [(impostor, "holds another run"),
                       (runs[1], "has a damaged summary.parquet (the run id is not the hash of its specs)")]
    assert json.loads(pq.read_schema(runs[0] / "summary.parquet").metadata[b"dcbench"])["run_id"] == runs[0].name


def test_an_adhoc_sweep_is_told_from_a_suites_by_its_provenance(tmp_path):
    import json

    from dcbench.running.summary import is_adhoc, is_adhoc_sweep, sweep_provenance_problem

    def summary(provenance):
        table = pa.table({"scenario": ["a"]}).replace_schema_metadata({b"dcbench": json.dumps(provenance)})
        pq.write_table(table, tmp_path / "summary.parquet")
        return table

    adhoc = summary({"scenarios": [{"name": "a"}], "allocators": ["random"]})
    assert is_adhoc_sweep(tmp_path) and is_adhoc(json.loads(adhoc.schema.metadata[b"dcbench"]))
    assert sweep_provenance_problem(adhoc) is None
    assert sweep_provenance_problem(adhoc, adhoc=False).startswith(
        "it is an ad-hoc sweep's (of -t/-w specs), and the leaderboard ranks registered suites only")
    assert (sweep_provenance_problem(summary({"scenarios": "a"}))
            == "its dcbench provenance's scenarios are not a list of scenarios")
    suite = summary({"suite": "nara2022", "allocators": ["random"]})
    assert not is_adhoc_sweep(tmp_path) and sweep_provenance_problem(suite, adhoc=False) is None
    (tmp_path / "summary.parquet").write_bytes(b"not parquet")
    assert not is_adhoc_sweep(tmp_path) and not is_adhoc_sweep(tmp_path / "none")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts the process's threads in /proc")
def test_reading_a_results_table_starts_no_arrow_thread(tmp_path):
    # Arrow's thread pools, once a read starts them, can abort or hang the interpreter at exit
    # (apache/arrow#34314, #50482): a command that read results must exit cleanly. In a fresh process, so that
    # no earlier read has started them already.
    path = tmp_path / "summary.parquet"
    pq.write_table(pa.table({"x": np.arange(1000)}), path)
    code = ("import os, sys; import pyarrow.parquet; from dcbench.storage.tables import table_at; "
            "threads = lambda: len(os.listdir('/proc/self/task')); before = threads(); "
            "rows = table_at(__import__('pathlib').Path(sys.argv[1])).num_rows; print(before, threads(), rows)")
    before, after, rows = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                                         check=True).stdout.split()
    assert rows == "1000" and after == before
