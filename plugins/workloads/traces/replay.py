"""The ``trace`` workload: requests replayed from a trace file (`schema`), scaled onto the topology.

A run replays ``requests`` consecutive rows from row ``start`` (default: drawn from the seed, so a suite's seeds
replay different windows); past the last row the trace begins again, one mean gap later. Each demand is the
trace's amount divided by its unit (``cpu_unit`` cores per CPU unit, ``mem_unit`` GiB per memory unit, ...),
rounded up to whole units where ``whole``; times are divided by ``time_unit`` seconds, and gaps between arrivals
also by ``load``. With ``kind=job`` each request is a job of VMs and flows (`jobs`). See docs/workloads.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dcbench import CONNECTIVITY_RULES, MAX_CAPACITY, Network, PacketModel, Param, RequestSequence
from dcbench.plugins.workloads.traces.jobs import JobModel
from dcbench.plugins.workloads.traces.reading import Trace, file_sha256, read_trace
from dcbench.plugins.workloads.traces.schema import MissingTrace, TraceError
from dcbench.plugins.workloads.vmjobs import PATTERNS

MAX_REQUESTS = 1_000_000  # a run's most (dcbench's bound on -n)
DOCS = "docs/workloads.md"
SHA256 = re.compile(r"[0-9a-f]{64}")

PARAMS = [
    Param("file", str, help="the trace: a .csv or .parquet file of the canonical columns, its path without ',' or "
          "'='"),
    Param("sha256", str, None, "the file's expected sha256 (64 hex digits): another file, or none, is an error"),
    Param("kind", str, "pool", "pool (the tiered fabric) or job (the optical fabric: VMs and flows)",
          choices=("pool", "job")),
    Param("cpu_unit", float, 1.0, "trace cores per CPU unit of the topology", minimum=0, above=True,
          maximum=MAX_CAPACITY),
    Param("mem_unit", float, 1.0, "trace GiB per memory unit", minimum=0, above=True, maximum=MAX_CAPACITY),
    Param("disk_unit", float, 1.0, "trace GB per disk unit", minimum=0, above=True, maximum=MAX_CAPACITY),
    Param("gpu_unit", float, 1.0, "trace GPUs per GPU unit", minimum=0, above=True, maximum=MAX_CAPACITY),
    Param("time_unit", float, 1.0, "trace seconds per time unit of the run", minimum=0, above=True, maximum=1e9),
    Param("load", float, 1.0, "arrival-rate factor: 2 replays arrivals twice as fast, holding times kept",
          minimum=0, above=True, maximum=1e6),
    Param("start", int, None, "the row the replay starts at, from 0 (default: drawn from the seed)", minimum=0),
    Param("whole", bool, True, "round each demand (each VM's, for jobs) up to whole units"),
    Param("wait", bool, False, "offer a request only once the total free capacity covers it"),
    Param("warmup", int, 0, "requests left out of the metrics at the start", minimum=0, maximum=MAX_REQUESTS),
    Param("pairs", str, "reference", "pools: which of a request's server pairs need a path",
          choices=CONNECTIVITY_RULES),
    Param("vm_cpu", float, 16.0, "jobs: cores of a full VM; a request is ceil(cores / vm_cpu) VMs where the trace "
          "has no vms column", minimum=0, above=True, maximum=MAX_CAPACITY),
    Param("pattern", str, "ring", "jobs: which VM pairs communicate", choices=PATTERNS),
    Param("gbps", float, 8.0, "jobs: Gbps of a pair of full VMs, scaled by a VM's share of vm_cpu, where the trace "
          "has no gbps column", minimum=0, above=True, maximum=1e6),
    Param("packet_bytes", int, 296, "jobs: packet size of the M/M/1/K latency and loss model", minimum=1),
    Param("buffer", int, 15, "jobs: packets a link holds at most in the M/M/1/K model (K)", minimum=1),
]


@dataclass(frozen=True)
class TraceWorkload:
    file: str
    sha256: str | None = None
    kind: str = "pool"
    cpu_unit: float = 1.0
    mem_unit: float = 1.0
    disk_unit: float = 1.0
    gpu_unit: float = 1.0
    time_unit: float = 1.0
    load: float = 1.0
    start: int | None = None
    whole: bool = True
    wait: bool = False
    warmup: int = 0
    pairs: str = "reference"
    vm_cpu: float = 16.0
    pattern: str = "ring"
    gbps: float = 8.0
    packet_bytes: int = 296
    buffer: int = 15

    def __post_init__(self) -> None:
        if self.sha256 is not None and not SHA256.fullmatch(self.sha256):
            raise ValueError(f"sha256={self.sha256[:80]!r} is not 64 lower-case hex digits")

    @property
    def units(self) -> dict[str, float]:
        """Trace amount per topology unit, by resource."""
        return {"cpu": self.cpu_unit, "mem": self.mem_unit, "disk": self.disk_unit, "gpu": self.gpu_unit}

    def fingerprint(self, network: Network) -> str:
        """The trace's digest, which enters the run id: the declared one (the file, where here, must match it), else
        the file's.

        Args:
            network: The run's network (unused: the trace is the same on every topology).
        Returns:
            ``trace sha256=<64 hex digits>``.
        Raises:
            TraceError: The file is missing (without a declared digest) or differs from the declared digest."""
        if self.sha256 is None or Path(self.file).exists():
            digest = self._digest()
        else:  # checked when the requests are drawn: a suite resolves where its trace is not downloaded
            digest = self.sha256
        return f"trace sha256={digest}"

    def default_requests(self, network: Network) -> int:
        """The whole trace once, at most 1,000,000 requests."""
        return min(max(len(self._trace()), self.warmup + 1), MAX_REQUESTS)

    def generate(self, network: Network, requests: int, rng: np.random.Generator) -> RequestSequence:
        trace = self._trace()
        rows_total = len(trace)
        start = self.start if self.start is not None else int(rng.integers(rows_total))
        if start >= rows_total:
            raise ValueError(f"start={start} but the trace has {rows_total:,} rows; give start below it")
        position = start + np.arange(requests, dtype=np.int64)
        rows, cycle = position % rows_total, position // rows_total
        arrival = trace.arrival[rows] + cycle * repeat_period(trace)
        gaps = np.diff(arrival, prepend=arrival[:1]) / (self.time_unit * self.load)
        holding = trace.duration[rows] / self.time_unit
        amounts = self._amounts(trace, rows, network)
        measured = np.arange(requests) >= self.warmup if self.warmup else None
        if self.kind == "pool":
            return RequestSequence(kind="pool", gaps=gaps, holding=holding, demand=self._rounded(amounts),
                                   connectivity=self.pairs, wait_until_fits=self.wait, measured=measured)
        model = JobModel(self.vm_cpu, self.pattern, self.gbps)
        cores = trace.resources["cpu"][rows]
        sizes = model.sizes(cores, None if trace.vms is None else trace.vms[rows], rows)
        vm_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        vm_demand = self._rounded(np.repeat(amounts / sizes[:, None], sizes, axis=0))
        flows, flow_offsets = model.flows(sizes, cores / sizes, None if trace.gbps is None else trace.gbps[rows])
        return RequestSequence(
            kind="job", gaps=gaps, holding=holding, demand=np.add.reduceat(vm_demand, vm_offsets[:-1], axis=0),
            wait_until_fits=self.wait, measured=measured, vm_offsets=vm_offsets, vm_demand=vm_demand,
            flow_offsets=flow_offsets, flows=flows,
            packets=PacketModel(packet_bytes=self.packet_bytes, buffer_packets=self.buffer))

    def _amounts(self, trace: Trace, rows: np.ndarray, network: Network) -> np.ndarray:
        """The rows' demands in the topology's units, unrounded, a column per resource of the network."""
        units = self.units
        unknown = [name for name in network.resources if name not in units]
        if unknown:
            raise ValueError(f"the topology's resource {unknown[0]!r} is none a trace gives "
                             f"({', '.join(units)})")
        amounts = np.zeros((len(rows), len(network.resources)))
        for column, name in enumerate(network.resources):
            if name in trace.resources:
                amounts[:, column] = trace.resources[name][rows] / units[name]
        empty = np.flatnonzero(~(amounts > 0).any(axis=1))
        if len(empty):
            raise TraceError(f"trace '{self.file}' row {int(rows[empty[0]]) + 1:,} asks for none of the topology's "
                             f"resources ({', '.join(network.resources)})")
        return amounts

    def _rounded(self, amounts: np.ndarray) -> np.ndarray:
        return np.ceil(amounts - 1e-9) if self.whole else amounts

    def _trace(self) -> Trace:
        if self.sha256 is not None:
            self._digest()
        return read_trace(Path(self.file))

    def _digest(self) -> str:
        """The file's sha256, checked against the declared one."""
        path = Path(self.file)
        try:
            digest = file_sha256(path)
        except MissingTrace:
            if self.sha256 is None:
                raise
            raise MissingTrace(f"no trace file '{self.file}'; the scenario replays the file of sha256 {self.sha256}: "
                               f"{DOCS} says where to get it and how to convert it") from None
        if self.sha256 is not None and digest != self.sha256:
            raise TraceError(f"trace '{self.file}' has sha256 {digest[:12]}…, not the {self.sha256} expected: "
                             f"{DOCS} says where to get that file and how to convert it")
        return digest


def repeat_period(trace: Trace) -> float:
    """Seconds after which a replay past the last row begins the trace again: its span and one mean gap (a second
    where every row arrives at once)."""
    span = float(trace.arrival[-1] - trace.arrival[0])
    return span + (span / (len(trace) - 1) if len(trace) > 1 and span > 0 else 1.0)
