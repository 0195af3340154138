"""Reading a canonical trace: what it gives, and a bad trace as one line naming the row and the problem, found
before anything large is read."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dcbench import DcbenchError
from dcbench.plugins.workloads.traces import reading
from dcbench.plugins.workloads.traces.reading import file_sha256, read_trace
from dcbench.plugins.workloads.traces.schema import TraceError

GOOD = "arrival,duration,cpu,mem,gpu,name\n0,10,2,4,1,a\n5,20,0.5,8,0,b\n5,3,1,0,0,c\n"


def written(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_csv_and_a_parquet_of_the_same_rows_read_alike(tmp_path):
    from_csv = read_trace(written(tmp_path, GOOD))
    table = pa.table({"arrival": [0, 5, 5], "duration": [10.0, 20, 3], "cpu": [2.0, 0.5, 1], "mem": [4, 8, 0],
                      "gpu": [1.0, 0, 0], "name": ["a", "b", "c"]})
    pq.write_table(table, tmp_path / "t.parquet")
    from_parquet = read_trace(tmp_path / "t.parquet")
    for trace in (from_csv, from_parquet):
        assert trace.arrival.tolist() == [0, 5, 5] and trace.duration.tolist() == [10, 20, 3]
        assert sorted(trace.resources) == ["cpu", "gpu", "mem"] and trace.resources["cpu"].tolist() == [2, 0.5, 1]
        assert trace.vms is None and trace.gbps is None


def test_a_departure_gives_the_duration_and_columns_may_come_in_any_order(tmp_path):
    trace = read_trace(written(tmp_path, "mem,departure,cpu,arrival\n1,15,1,10\n2,30,1,20\n"))
    assert trace.duration.tolist() == [5, 10]


@pytest.mark.parametrize("text, problem", [
    ("arrival,cpu,mem\n0,1,1\n", "has no column duration (or departure) (its columns: arrival, cpu, mem)"),
    ("arrival,duration,cpu\n0,1,1\n", "has no column mem"),
    ("arrival,duration,cpu,mem\n0,1,1,1\n1,-3,1,1\n", "row 2: its duration -3 is not positive"),
    ("arrival,duration,cpu,mem\n0,0,1,1\n", "row 1: its duration 0 is not positive"),
    ("arrival,departure,cpu,mem\n0,1,1,1\n4,4,1,1\n", "row 2: its departure 4 is not after its arrival 4"),
    ("arrival,duration,cpu,mem\n0,1,1,1\n5,1,1,1\n1,1,1,1\n", "row 3: its arrival 1 is before row 2's 5; sort"),
    ("arrival,duration,cpu,mem\n0,1,1,1\n1,1,abc,1\n", "row 2: its cpu is 'abc', not a number"),
    ("arrival,duration,cpu,mem\n0,1,1,\n", "row 1: its mem is empty"),
    ("arrival,duration,cpu,mem\n0,1,nan,1\n", "row 1: its cpu is nan, not a finite number"),
    ("arrival,duration,cpu,mem\n0,1,-1,1\n", "row 1: its cpu is -1; a demand is not negative"),
    ("arrival,duration,cpu,mem\n0,1,0,0\n", "row 1: it asks for no CPU, memory, disk or GPU"),
    ("arrival,duration,cpu,mem,vms\n0,1,1,1,2.5\n", "row 1: its vms is 2.5, not a whole number from 1 to 10,000"),
    ("arrival,duration,cpu,mem\n0,1,1,1\n1,1,1\n", "row 2: 3 cells where the header has 4"),
    ("arrival,duration,cpu,mem\n", "has a header but no rows"),
    ("", "is empty"),
    ("arrival,arrival,duration,cpu,mem\n0,0,1,1,1\n", "has two columns named 'arrival'"),
])
def test_a_bad_trace_is_one_line_naming_the_row_and_the_problem(tmp_path, text, problem):
    path = written(tmp_path, text)
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    message = str(caught.value)
    assert message == f"trace '{path}' {problem}" or message.startswith(f"trace '{path}' {problem}")
    assert "\n" not in message
    assert isinstance(caught.value, DcbenchError) and isinstance(caught.value, ValueError)


def test_a_huge_file_is_refused_by_its_size_before_it_is_read(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as file:
        file.truncate(10 * 2**30)  # 10 GiB, sparse: nothing is written
    with pytest.raises(TraceError, match=r"is 10,737,418,240 bytes, more than the 268,435,456 a trace may be"):
        read_trace(path)
    with pytest.raises(TraceError, match="more than the"):  # nor hashed
        file_sha256(path)


def test_too_many_rows_are_refused_while_streaming_and_from_a_parquet_footer(tmp_path, monkeypatch):
    monkeypatch.setattr(reading, "MAX_TRACE_ROWS", 5)
    rows = "".join(f"{i},1,1,1\n" for i in range(10))
    with pytest.raises(TraceError, match="has more than 5 rows, the most a trace may have"):
        read_trace(written(tmp_path, "arrival,duration,cpu,mem\n" + rows))
    pq.write_table(pa.table({name: np.ones(10) for name in ("arrival", "duration", "cpu", "mem")}),
                   tmp_path / "t.parquet")
    with pytest.raises(TraceError, match="has 10 rows, more than the 5 a trace may have"):
        read_trace(tmp_path / "t.parquet")


@pytest.mark.parametrize("table, problem", [
    ({"arrival": ["0"], "duration": [1.0], "cpu": [1.0], "mem": [1.0]}, "has a column 'arrival' of type string"),
    ({"arrival": [0.0, None], "duration": [1.0, 1], "cpu": [1.0, 1], "mem": [1.0, 1]}, "row 2: its arrival is empty"),
    ({"arrival": [0.0], "duration": [1.0], "cpu": [1.0]}, "has no column mem"),
])
def test_a_bad_parquet_trace_is_one_line(tmp_path, table, problem):
    pq.write_table(pa.table(table), tmp_path / "t.parquet")
    with pytest.raises(TraceError, match=f"trace '.*t.parquet' {problem}"):
        read_trace(tmp_path / "t.parquet")


def test_what_is_no_trace_file_is_refused(tmp_path):
    with pytest.raises(TraceError, match="no trace file"):
        read_trace(tmp_path / "none.csv")
    with pytest.raises(TraceError, match="is neither .csv nor .parquet"):
        read_trace(written(tmp_path, GOOD, "t.txt"))
    (tmp_path / "folder.csv").mkdir()
    with pytest.raises(TraceError, match="is not a file but a folder"):
        read_trace(tmp_path / "folder.csv")
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(TraceError, match="is not a file but a folder, a device or a pipe"):
        read_trace(tmp_path / "pipe.csv")  # refused, not waited on
    with pytest.raises(TraceError, match="is not a Parquet file"):
        read_trace(written(tmp_path, GOOD, "t.parquet"))


def test_a_changed_file_is_read_and_hashed_again(tmp_path):
    path = written(tmp_path, GOOD)
    first, digest = read_trace(path), file_sha256(path)
    path.write_text(GOOD.replace("0,10,2", "0,10,3"))
    os.utime(path, ns=(1, 1))  # (a rewrite within the clock's resolution: the size and inode may match too)
    assert read_trace(path).resources["cpu"][0] == 3 and first.resources["cpu"][0] == 2
    assert file_sha256(path) != digest
