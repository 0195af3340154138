"""The job bound (docs/bounds.md): its packing cuts against one server's packings, its model against brute force
and against every allocator the engine runs on tiny optical instances, and the committed bounds against every
committed run of the OCS suites."""

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from dcbench import JobAllocator, Reject, SpecError, simulate
from dcbench.harness import get_registry
from dcbench.plugins.bounds.jobs import cut_bounds, cut_weights, job_bound, job_instance, packings
from dcbench.plugins.workloads.vmjobs import VM_TYPES, VMJobsWorkload
from tests.core.engine.test_jobs import job_sequence, ocs

ROOT = Path(__file__).resolve().parents[2]
BOUNDS = ROOT / "leaderboard" / "bounds"
OCS_SUITES = ("odcn2025", "openb2023-ocs")
SERVER = np.array([32.0, 256.0, 3584.0])  # an ocs server's default capacity
# docs/bounds.md, Jobs on the optical fabric: per scenario, the bound's and the best policy's mean over seeds
DOCS_TABLE = {"16x32-load54": (1.000, 0.999), "16x32-load60": (0.999, 0.993), "16x32-load66": (0.995, 0.974),
              "16x32-load72": (0.986, 0.940), "16x32-load78": (0.975, 0.897), "32x64-load300": (0.996, 0.933),
              "64x128-load1320": (0.994, 0.884)}


def test_the_packing_cuts_hold_for_every_packing_of_the_vm_types_and_beat_the_totals():
    a, _ = cut_weights(VM_TYPES, SERVER[None, :])
    listed = packings(VM_TYPES, SERVER)
    for counts in itertools.product(*(range(9) for _ in VM_TYPES)):  # every count vector, fitting or not
        fits = (np.asarray(counts) @ VM_TYPES <= SERVER).all()
        assert fits == any((row == counts).all() for row in listed)
    b = cut_bounds(VM_TYPES, SERVER[None, :], a)
    assert ((listed @ a.T) <= b + 1e-9).all() and ((listed @ a.T) >= b - 1e-9).any(axis=0).all()  # valid, tight
    two_largest = np.array([0, 0, 0, 2.0])  # within every total of one server, but 2 × 3,200 GB of disk is not
    assert (two_largest @ VM_TYPES <= 2 * SERVER).all() and ((a @ two_largest) > b + 1e-9).any()


def test_a_job_whose_vms_cannot_share_servers_is_refused():
    """Three VMs of 20 cores fit the two servers' 64 cores in total, but at most one fits on a server."""
    network = ocs("ocs:2,servers=1")
    vm = [20.0, 10.0, 10.0]
    three = job_sequence([([vm] * 3, [[0, 1, 6.0], [1, 2, 6.0], [2, 0, 6.0]])], holding=[5.0])
    two = job_sequence([([vm] * 2, [[0, 1, 6.0], [1, 0, 6.0]])], holding=[5.0])
    assert job_bound(job_instance(network, three), "milp").accepted == 0
    assert job_bound(job_instance(network, two), "milp").accepted == 1


def spanning_jobs(n, port_gbps):
    """``n`` overlapping ring jobs of five 16-core VMs (80 cores: more than a rack of two servers) on four racks."""
    network = ocs(f"ocs:4,servers=2,ports=1,port_gbps={port_gbps}")
    ring = [[k, (k + 1) % 5, 6.0] for k in range(5)]
    return network, job_sequence([([[16.0, 32.0, 320.0]] * 5, ring)] * n, holding=[10.0] * n)


def test_jobs_too_large_for_a_rack_share_the_fabrics_circuits():
    """Each job crosses racks at least twice (12 Gbps); four 5 Gbps ports carry 20 Gbps in all: one job at a time."""
    network, sequence = spanning_jobs(3, 5.0)
    instance = job_instance(network, sequence)
    assert instance.usage[:, instance.names.index("circuits")].tolist() == [12.0] * 3
    assert job_bound(instance, "milp").accepted == 1
    network, sequence = spanning_jobs(3, 40.0)  # 160 Gbps: the cores (240 of 256) bind instead
    assert job_bound(job_instance(network, sequence), "milp").accepted == 3


class Scripted(JobAllocator):
    """Accepts job i only where ``mask[i]``, each VM on the first (or last) rack with room."""

    def __init__(self, mask, last=False):
        self.mask, self.last = mask, last

    def allocate(self, request, state):
        if not self.mask[request.id]:
            return Reject("scripted")
        return self.allocate_job(request, state)

    def choose_rack(self, builder, allowed):
        racks = np.flatnonzero(allowed)
        return racks[-1] if self.last else racks[0]


def tiny(seed, spec="ocs:2,servers=2", n=7):
    network = ocs(spec)
    workload = VMJobsWorkload(load=6.0, min_vms=1, max_vms=4, warmup=1)
    return network, workload.generate(network, n, np.random.default_rng(seed))


def best_simulated(network, sequence):
    """The most measured jobs any scripted choice, or any job allocator of the registry, gets accepted."""
    measured = np.asarray(sequence.measured)
    allocators = [Scripted(mask, last) for mask in itertools.product([True, False], repeat=len(sequence))
                  for last in (False, True)]
    allocators += [get_registry().build("allocator", spec).obj
                   for spec in ("ccf", "ccf:place=spread", "jcb", "random", "tetris")]
    best = 0
    for allocator in allocators:
        tables = simulate(network, sequence, allocator, np.random.default_rng(0))
        best = max(best, int(((tables.requests["outcome"] == "accepted") & measured).sum()))
    return best


def fits_on_servers(vms, servers):
    """Whether the VMs can be placed on the servers, a VM on one server (backtracking, largest first)."""
    vms = sorted(vms, key=lambda v: -v.sum())
    free = [s.copy() for s in servers]

    def place(k):
        if k == len(vms):
            return True
        tried = []
        for room in free:
            if (vms[k] <= room + 1e-9).all() and not any((room == t).all() for t in tried):
                tried.append(room.copy())
                room -= vms[k]
                if place(k + 1):
                    return True
                room += vms[k]
        return False

    return place(0)


def brute_force(network, sequence):
    """The most measured jobs accepted with the VMs held at every offer packed again onto the servers: what a
    policy free to move VMs would get, the fabric ignored (so an upper bound where the fabric never binds)."""
    n = len(sequence)
    arrival = np.cumsum(sequence.gaps)
    departure = arrival + sequence.holding
    measured = np.asarray(sequence.measured)
    best = 0
    for chosen in itertools.product([False, True], repeat=n):
        if sum(c and m for c, m in zip(chosen, measured)) <= best:
            continue
        if all(fits_on_servers([vm for j in range(i + 1) if chosen[j] and (j == i or departure[j] >= arrival[i])
                                for vm in sequence.vms(j)], network.server_capacity)
               for i in range(n) if chosen[i]):
            best = sum(c and m for c, m in zip(chosen, measured))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_the_bound_is_never_below_brute_force_nor_the_relaxation_below_the_integer_model(seed):
    network, sequence = tiny(seed)
    instance = job_instance(network, sequence)
    milp, lp = job_bound(instance, "milp"), job_bound(instance, "lp")
    assert lp.accepted >= milp.accepted >= brute_force(network, sequence)
    assert milp.offered == int(np.sum(sequence.measured))


@pytest.mark.parametrize("seed,spec", [(0, "ocs:2,servers=2"), (1, "ocs:3,servers=1,ports=1,port_gbps=10"),
                                       (2, "ocs:2,servers=1,ports=2,port_gbps=8,reconfigurable=no"),
                                       (3, "ocs:3,servers=1,ports=1,port_gbps=7,max_hops=2")])
def test_no_allocator_the_engine_runs_beats_the_bound(seed, spec):
    network, sequence = tiny(seed, spec)
    milp = job_bound(job_instance(network, sequence), "milp")
    assert milp.accepted >= best_simulated(network, sequence)


def test_jobs_that_wait_or_pools_are_refused():
    network, sequence = tiny(0)
    with pytest.raises(SpecError, match="jobs that wait"):
        job_instance(network, dataclasses.replace(sequence, wait_until_fits=True))
    with pytest.raises(SpecError, match="job requests"):
        job_instance(network, dataclasses.replace(sequence, kind="pool"))


def committed_job_bounds():
    return {(suite, row["scenario"], row["seed"]): row for suite in OCS_SUITES
            if (BOUNDS / suite / "bounds.parquet").is_file()
            for row in pq.read_table(BOUNDS / suite / "bounds.parquet").to_pylist()}


def test_no_committed_ocs_run_beats_its_committed_bound():
    from dcbench.publishing.leaderboard import load_submissions

    bounds = committed_job_bounds()
    checked = 0
    for submission in load_submissions(ROOT / "leaderboard"):
        for row in submission.rows:
            key = (submission.suite, row["scenario"], row["seed"])
            if submission.suite in OCS_SUITES:
                assert key in bounds, key
            if key in bounds:
                assert row["acceptance_ratio"] <= bounds[key]["bound"], (key, row["allocator"])
                checked += 1
    # odcn2025: 7 scenarios × 5 seeds, each run by four allocators; openb2023-ocs: 2 × 5 by six
    assert checked >= 7 * 5 * 4 + 2 * 5 * 6


def test_the_committed_odcn2025_bounds_and_best_policies_are_the_docs_table():
    """docs/bounds.md quotes the bound's and the best committed policy's means per scenario, every seed solved."""
    from dcbench.publishing.leaderboard import load_submissions

    rows = [row for (suite, _, _), row in committed_job_bounds().items() if suite == "odcn2025"]
    assert len(rows) == 35 and all(row["status"] == "optimal" and row["offered"] == 10_000 for row in rows)
    runs = [row for s in load_submissions(ROOT / "leaderboard") if s.suite == "odcn2025" for row in s.rows]
    table = {}
    for scenario in DOCS_TABLE:
        bound = np.mean([r["bound"] for r in rows if r["scenario"] == scenario])
        policies = {r["allocator"] for r in runs if r["scenario"] == scenario}
        best = max(np.mean([r["acceptance_ratio"] for r in runs if (r["scenario"], r["allocator"]) == (scenario, p)])
                   for p in policies)
        table[scenario] = (round(float(bound), 3), round(float(best), 3))
    assert table == DOCS_TABLE


def test_every_odcn2025_job_fits_one_rack_so_no_circuit_is_provably_needed():
    """docs/bounds.md: at most 21 VMs of 16 cores (336) against a rack's 1,024 cores, so row 3 never binds."""
    network = ocs("ocs:16")
    sequence = VMJobsWorkload(load=78, warmup=0).generate(network, 500, np.random.default_rng(0))
    instance = job_instance(network, sequence)
    assert not instance.usage[:, instance.names.index("circuits")].any()
    assert instance.usage[:, instance.names.index("cpu")].max() <= 336


def test_on_odcn2025_the_cores_total_alone_makes_the_bound():
    """docs/bounds.md: the packing cuts change no count on a prefix of 16x32-load78 where the cores bind."""
    network = ocs("ocs:16")
    sequence = VMJobsWorkload(load=78, warmup=0).generate(network, 2_000, np.random.default_rng(0))
    instance = job_instance(network, sequence)
    cores = dataclasses.replace(instance, usage=instance.usage[:, :1], capacity=instance.capacity[:1])
    assert job_bound(instance).accepted == job_bound(cores).accepted < 2_000


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "traces" / "openb2023-default.csv").is_file(),
                    reason="needs traces/openb2023-default.csv (dcbench data convert alibaba-gpu-2023)")
def test_no_committed_openb2023_ocs_run_beats_the_bound_the_command_computes(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from dcbench.commands import cli
    from dcbench.publishing.leaderboard import load_submissions

    monkeypatch.chdir(ROOT)  # the suite reads the trace relative to the working directory
    result = CliRunner().invoke(cli, ["bound", "-s", "openb2023-ocs", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    bounds = {(row["scenario"], row["seed"]): row["bound"] for row in pq.read_table(tmp_path / "bounds.parquet")
              .to_pylist()}
    runs = [row for s in load_submissions(ROOT / "leaderboard") if s.suite == "openb2023-ocs" for row in s.rows]
    assert runs and all(row["acceptance_ratio"] <= bounds[(row["scenario"], row["seed"])] for row in runs)
