"""The trace workload: rows replayed in the topology's units and time, a window per seed, jobs for the optical fabric,
and the file's digest in the run id."""

import hashlib

import numpy as np
import pytest

from dcbench import Network, NotInstalledError, SpecError
from dcbench.harness import Runner, get_registry
from dcbench.testing import check_workload

ROWS = "".join(f"{10 * i},{5 + i},{1 + i % 7},{2 + i % 5},{i % 3}\n" for i in range(40))
TRACE = "arrival,duration,cpu,mem,disk\n" + ROWS


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TRACE)
    return path


def network(spec):
    return Network.compile(get_registry().build("topology", spec).obj)


def generate(spec, topology="tiered:8,1x4", n=10, seed=0):
    return get_registry().build("workload", spec).obj.generate(network(topology), n, np.random.default_rng(seed))


def test_rows_are_scaled_to_the_topologys_units_and_time(trace):
    plain = generate(f"trace:file={trace},start=0", n=3)
    assert plain.demand.tolist() == [[1, 2], [2, 3], [3, 4]] and plain.holding.tolist() == [5, 6, 7]
    assert plain.gaps.tolist() == [0, 10, 10] and plain.kind == "pool" and not plain.wait_until_fits
    scaled = generate(f"trace:file={trace},start=0,cpu_unit=2,mem_unit=0.5,time_unit=5,load=2,wait=yes", n=3)
    assert scaled.demand.tolist() == [[1, 4], [1, 6], [2, 8]]  # 0.5 cores is one whole unit
    assert scaled.holding.tolist() == [1, 1.2, 1.4] and scaled.gaps.tolist() == [0, 1, 1]
    assert scaled.wait_until_fits
    fractions = generate(f"trace:file={trace},start=0,cpu_unit=2,whole=no", n=3)
    assert fractions.demand[:, 0].tolist() == [0.5, 1, 1.5]


def test_a_seed_picks_the_window_and_the_trace_repeats_past_its_end(trace):
    windows = {int(generate(f"trace:file={trace}", seed=seed).holding[0]) - 5 for seed in range(8)}
    assert len(windows) > 3  # the first row differs from seed to seed
    again = generate(f"trace:file={trace}", seed=3)
    assert np.array_equal(again.holding, generate(f"trace:file={trace}", seed=3).holding)
    past = generate(f"trace:file={trace},start=38", n=4)
    assert past.holding.tolist() == [43, 44, 5, 6]
    assert past.gaps.tolist() == [0, 10, 10, 10]  # one mean gap from the last row to the first again


def test_the_warmup_is_left_out_of_the_metrics(trace):
    assert generate(f"trace:file={trace},warmup=3", n=5).measured.tolist() == [False] * 3 + [True] * 2
    assert generate(f"trace:file={trace}", n=5).measured is None


@pytest.mark.parametrize("kind, topology", [("pool", "tiered:8,1x4"), ("job", "ocs:4,servers=4")])
def test_the_workload_keeps_the_contract_of_every_workload(trace, kind, topology):
    check_workload(f"trace:file={trace},kind={kind}", topology=topology, requests=30)


def test_a_job_is_vms_of_its_cores_with_flows_at_their_share(trace):
    jobs = generate(f"trace:file={trace},kind=job,start=0,vm_cpu=2,gbps=10", topology="ocs:4,servers=4", n=4)
    # rows of 1, 2, 3, 4 cores: 1, 1, 2, 2 VMs of 2 cores
    assert np.diff(jobs.vm_offsets).tolist() == [1, 1, 2, 2]
    assert jobs.vms(2).tolist() == [[2, 2, 1], [2, 2, 1]]  # 3 cores, 4 GiB, 2 GB halved, each rounded up
    assert np.array_equal(jobs.demand, np.add.reduceat(jobs.vm_demand, jobs.vm_offsets[:-1]))
    assert jobs.job_flows(0).shape == (0, 3)  # one VM: no ring
    assert jobs.job_flows(2).tolist() == [[0, 1, 7.5], [1, 0, 7.5]]  # 1.5 cores of 2: 3/4 of 10 Gbps
    assert jobs.packets is not None


def test_a_traces_vms_and_gbps_columns_are_taken_as_they_are(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,duration,cpu,mem,vms,gbps\n0,5,8,8,4,2\n1,5,8,8,1,2\n")
    jobs = generate(f"trace:file={path},kind=job,start=0,pattern=all", topology="ocs:4,servers=4", n=2)
    assert np.diff(jobs.vm_offsets).tolist() == [4, 1] and jobs.vms(0)[0].tolist() == [2, 2, 0]
    assert len(jobs.job_flows(0)) == 6 and set(jobs.job_flows(0)[:, 2]) == {2}


@pytest.mark.parametrize("allocator", ["ccf", "jcb", "a2c_multistep"])
def test_the_optical_allocators_run_on_trace_jobs(trace, allocator):
    run = Runner().run(allocator, "ocs:16,servers=2", f"trace:file={trace},kind=job,vm_cpu=2", requests=20)
    assert run.summary["offered"] == 20 and run.summary["accepted"] > 0


def test_the_files_digest_enters_the_run_id(trace):
    runner = Runner()
    spec = f"trace:file={trace}"
    first = runner.resolve("random", "tiered:8,1x4", spec, requests=5)
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()
    assert f"workload trace sha256={digest}" in first.fingerprint
    trace.write_text(TRACE.replace("0,5,1,2", "0,5,2,2", 1))
    second = Runner().resolve("random", "tiered:8,1x4", spec, requests=5)
    assert second.run_id(0) != first.run_id(0)


def test_a_missing_or_other_file_is_one_line_naming_the_expected_digest(trace, tmp_path):
    expected = "0" * 64
    spec = f"trace:file={trace},sha256={expected}"
    with pytest.raises(SpecError, match=f"has sha256 [0-9a-f]{{12}}…, not the {expected} expected: "
                                        "docs/workloads.md says where to get that file"):
        Runner().resolve("random", "tiered:8,1x4", spec, requests=5)
    missing = f"trace:file={tmp_path / 'none.csv'},sha256={expected}"
    plan = Runner().resolve("random", "tiered:8,1x4", missing, requests=5)  # a suite resolves undownloaded
    assert f"workload trace sha256={expected}" in plan.fingerprint
    # Not installed here, as a plugin can be: `leaderboard verify` skips the run, naming the file (before the ';').
    with pytest.raises(NotInstalledError, match=f"^no trace file '.*none.csv'; the scenario replays the file of "
                                                f"sha256 {expected}: docs/workloads.md says where to get it and how "
                                                "to convert it"):
        Runner().run("random", "tiered:8,1x4", missing, requests=5)
    with pytest.raises(SpecError, match="no trace file"):
        Runner().resolve("random", "tiered:8,1x4", f"trace:file={tmp_path / 'none.csv'}", requests=5)
    with pytest.raises(SpecError, match="sha256='abc' is not 64 lower-case hex digits"):
        Runner().resolve("random", "tiered:8,1x4", f"trace:file={trace},sha256=abc", requests=5)


def test_a_bad_row_stops_the_run_with_the_row_named(tmp_path):
    path = tmp_path / "gpu.csv"
    path.write_text("arrival,duration,cpu,mem,gpu\n0,1,1,1,0\n1,1,0,0,1\n")
    with pytest.raises(SpecError, match=r"row 2 asks for none of the topology's resources \(cpu, mem\)"):
        Runner().run("random", "tiered:8,1x4", f"trace:file={path},start=0", requests=2)
    with pytest.raises(SpecError, match="start=5 but the trace has 2 rows"):
        Runner().run("random", "tiered:8,1x4", f"trace:file={path},start=5", requests=2)


def test_the_default_episode_is_the_whole_trace(trace):
    assert Runner().resolve("random", "tiered:8,1x4", f"trace:file={trace}").requests == 40

