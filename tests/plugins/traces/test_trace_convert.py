"""The converters, on small files written here in each public trace's own format: what they keep, what they drop and
why, and the canonical CSV they write, the same bytes every time."""

import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner

from dcbench.commands import cli
from dcbench.plugins.workloads.traces import alibaba_2018, alibaba_gpu_2023, azure_packing_2020
from dcbench.plugins.workloads.traces.convert import Kept, Machine, format_number, write_canonical
from dcbench.plugins.workloads.traces.reading import read_trace
from dcbench.plugins.workloads.traces.schema import TraceError

OPENB = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,100,0
openb-pod-0001,6000,12288,1,460,V100M16|V100M32,LS,Running,30,90,40
openb-pod-0002,4000,2048,0,0,,BE,Pending,20,60,
openb-pod-0003,2000,1024,0,0,,BE,Failed,50,70,70
openb-pod-0004,0,0,2,1000,,BE,Succeeded,60,80,60
openb-pod-0005,500,512,0,0,,BE,Succeeded,10,25,15
"""

BATCH_TASK = """M1,2,j_1,1,Terminated,100,160,50,0.5
R2_1,1,j_1,1,Terminated,200,230,100,1
M1,3,j_2,1,Running,150,0,100,1
M2,1,j_3,1,Terminated,0,0,100,1
J3,4,j_4,1,Terminated,120,140,,
"""


def openb(tmp_path, text=OPENB):
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_text(text)
    return path


def converted(convert, source, *args, since=None, until=None):
    kept = Kept(f"source '{source}'", since, until)
    convert(source, kept, *args)
    return kept, *kept.table()


def test_openb_pods_arrive_at_creation_and_hold_from_scheduling_to_deletion(tmp_path):
    kept, columns, names = converted(alibaba_gpu_2023.convert, openb(tmp_path))
    assert names.tolist() == ["openb-pod-0000", "openb-pod-0005", "openb-pod-0001"]  # in order of arrival
    assert columns["arrival"].tolist() == [0, 10, 30] and columns["duration"].tolist() == [100, 10, 50]
    assert columns["cpu"].tolist() == [12, 0.5, 6] and columns["mem"].tolist() == [16, 0.5, 12]
    assert columns["gpu"].tolist() == [1, 0, 0.46]
    assert kept.read == 6 and dict(kept.dropped) == {"never scheduled": 1, "deleted before they ran": 1,
                                                     "without CPU or memory (GPU-only)": 1}
    kept, columns, names = converted(alibaba_gpu_2023.convert, openb(tmp_path), True)
    assert names.tolist() == ["openb-pod-0005"] and kept.dropped["asking for a GPU (--cpu-only)"] == 2


def test_a_window_and_the_row_bound_apply_while_reading(tmp_path, monkeypatch):
    kept, columns, _ = converted(alibaba_gpu_2023.convert, openb(tmp_path), since=5, until=30)
    assert columns["arrival"].tolist() == [10] and kept.dropped["before --from"] == 1
    from dcbench.plugins.workloads.traces import convert

    monkeypatch.setattr(convert, "MAX_TRACE_ROWS", 2)
    with pytest.raises(TraceError, match="keeps more than 2 requests, the most a trace may have; convert a window"):
        converted(alibaba_gpu_2023.convert, openb(tmp_path))


def test_a_bad_openb_cell_or_column_is_one_line(tmp_path):
    with pytest.raises(TraceError, match=r"row 3: its cpu_milli is 'lots', not a number"):
        converted(alibaba_gpu_2023.convert, openb(tmp_path, OPENB.replace("4000,2048", "lots,2048")))
    with pytest.raises(TraceError, match="has no column scheduled_time"):
        converted(alibaba_gpu_2023.convert, openb(tmp_path, OPENB.replace(",scheduled_time", ",when")))
    with pytest.raises(TraceError, match="keeps no request"):
        converted(alibaba_gpu_2023.convert, openb(tmp_path, OPENB.splitlines()[0] + "\n"))


def test_alibaba_2018_tasks_are_jobs_of_their_instances(tmp_path):
    source = tmp_path / "batch_task.csv"
    source.write_text(BATCH_TASK)
    kept, columns, names = converted(alibaba_2018.convert, source, Machine(mem=100))
    assert names.tolist() == ["j_1/M1", "j_1/R2_1"] and columns["vms"].tolist() == [2, 1]
    assert columns["arrival"].tolist() == [100, 200] and columns["duration"].tolist() == [60, 30]
    assert columns["cpu"].tolist() == [1, 1] and columns["mem"].tolist() == [1, 1]  # 2 × 0.5% of 100 GiB
    assert dict(kept.dropped) == {"without a plan": 1, "never started": 1, "without an end after their start": 1}
    instances = tmp_path / "batch_instance.csv"
    instances.write_text("ins_1,M1,j_1,1,Terminated,100,160,m_1,1,1,50,60,0.2,0.3\n")
    with pytest.raises(TraceError, match="has 14 columns, not the 9 of batch_task.csv \\(batch_instance.csv"):
        converted(alibaba_2018.convert, instances)


def azure(tmp_path, rows, types):
    path = tmp_path / "packing_trace_zone_a_v1.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE vm (vmId INTEGER, tenantId INTEGER, vmTypeId INTEGER, priority INTEGER, "
                   "starttime REAL, endtime REAL)")
        db.execute("CREATE TABLE vmType (id INTEGER, vmTypeId INTEGER, machineId INTEGER, core REAL, memory REAL, "
                   "hdd REAL, ssd REAL, nic REAL)")
        db.executemany("INSERT INTO vm VALUES (?, 0, ?, 0, ?, ?)", rows)
        db.executemany("INSERT INTO vmType VALUES (?, ?, ?, ?, ?, 0, ?, 0.1)",
                       [(i, *row) for i, row in enumerate(types)])
    return path


def test_azure_vms_take_their_types_fractions_of_one_machine_generation(tmp_path):
    source = azure(tmp_path, [(1, 10, 0.5, 1.0), (2, 10, -1.0, 2.0), (3, 11, 0.25, None), (4, 12, 0.75, 1.75),
                              (5, 10, 1.0, 1.5)],
                   [(10, 7, 0.5, 0.25, 0.125), (10, 8, 0.25, 0.125, 0.0625), (12, 8, 1.0, 1.0, 1.0)])
    kept, columns, names = converted(azure_packing_2020.convert, source, Machine(32, 256, 1024))
    # machine 7 covers 3 requests, machine 8 the same 3 and one more
    assert names.tolist() == ["1", "4", "5"] and columns["arrival"].tolist() == [43200, 64800, 86400]
    assert columns["duration"].tolist() == [43200, 86400, 43200]
    assert columns["cpu"].tolist() == [8, 32, 8] and columns["mem"].tolist() == [32, 256, 32]
    assert columns["disk"].tolist() == [64, 1024, 64]
    assert dict(kept.dropped) == {"alive before the trace began": 1, "without an end (alive past the cap)": 1}
    kept, _, names = converted(azure_packing_2020.convert, source, Machine(), 7)
    assert names.tolist() == ["1", "5"] and kept.dropped["of a type machine 7 lacks"] == 1


def test_a_bad_azure_file_is_one_line(tmp_path):
    (tmp_path / "not.sqlite").write_text("vmId,starttime\n")
    with pytest.raises(TraceError, match="is not a SQLite file"):
        converted(azure_packing_2020.convert, tmp_path / "not.sqlite")
    with sqlite3.connect(tmp_path / "empty.sqlite") as db:
        db.execute("CREATE TABLE vm (vmId INTEGER)")
    with pytest.raises(TraceError, match="has no column vmTypeId, starttime, endtime in its table vm"):
        converted(azure_packing_2020.convert, tmp_path / "empty.sqlite")
    source = azure(tmp_path, [(1, 10, 0.5, 1.0), (2, 10, "soon", 2.0)], [(10, 7, 0.5, 0.25, 0.125)])
    with pytest.raises(TraceError, match=r"row 2 \(vmId 2\): its starttime is 'soon', not a number"):
        converted(azure_packing_2020.convert, source)


def test_the_canonical_csv_is_the_same_bytes_every_time_and_reads_back(tmp_path):
    _, columns, names = converted(alibaba_gpu_2023.convert, openb(tmp_path))
    first = write_canonical(tmp_path / "a.csv", columns, names)
    assert write_canonical(tmp_path / "b.csv", columns, names) == first
    assert (tmp_path / "a.csv").read_text().splitlines()[:2] == ["arrival,duration,cpu,mem,gpu,name",
                                                                 "0,100,12,16,1,openb-pod-0000"]
    trace = read_trace(tmp_path / "a.csv")
    assert np.array_equal(trace.resources["gpu"], columns["gpu"])
    assert [format_number(v) for v in (3.0, 0.1, 1e20, 2.5e-7)] == ["3", "0.1", "1e+20", "2.5e-07"]
    with pytest.raises(TraceError, match="is not a .csv file"):
        write_canonical(tmp_path / "a.parquet", columns, names)


def test_data_convert_prints_what_it_kept_and_dropped_and_the_digest(tmp_path):
    source, out = openb(tmp_path), tmp_path / "traces" / "openb.csv"
    result = CliRunner().invoke(cli, ["data", "convert", "alibaba-gpu-2023", str(source), str(out)])
    assert result.exit_code == 0, result.output
    line = result.output.strip()
    assert line.startswith(f"wrote 3 requests to {out} (sha256 ") and "read 6 rows; dropped 1 never scheduled" in line
    assert "offers" in line and "\n" not in line and out.is_file()


@pytest.mark.parametrize("args, message", [
    (["alibaba-gpu-2023", "none.csv", "out.csv"], "Error: no source file 'none.csv'; give an openb_pod_list CSV"),
    (["azure-packing-2020", "x.sqlite", "out.csv", "--cpu-only"], "Error: --cpu-only applies to alibaba-gpu-2023"),
    (["alibaba-2018", "x.csv", "out.csv", "--machine-mem", "0"], "Error: --machine-mem is 0; give a positive"),
    (["google-2019", "x.csv", "out.csv"], "Error: Invalid value for 'FORMAT'"),
])
def test_data_convert_refuses_in_one_line(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["data", "convert", *args])
    assert result.exit_code == 2 and result.output.startswith(message) and result.output.count("\n") == 1
