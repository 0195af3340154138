"""Requests: what a workload generates and what an allocator is asked to serve."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dcbench.model.network import Network, frozen

# Which pairs of a pool's servers need a path (docs/scenarios/tiered.md): every pair; those with a server
# that gives CPU; the reference code's rule, with its sticky flag.
CONNECTIVITY_RULES = ("all", "cpu", "reference")


@dataclass(frozen=True, slots=True)
class PacketModel:
    """A job workload's packets, for the M/M/1/K latency and loss of each inter-rack link.

    Attributes:
        packet_bytes: The size of a packet (bytes).
        buffer_packets: The most packets a link holds (the K of M/M/1/K)."""

    packet_bytes: int
    buffer_packets: int = 15


@dataclass
class RequestSequence:
    """A whole episode of requests, drawn up front so that every allocator sees the same sequence for a seed.

    Attributes:
        kind: "pool" or "job".
        gaps: The time from the previous arrival to each request (requests,).
        holding: How long each request holds what it is given (requests,).
        demand: What each request asks for, requests × resources.
        connectivity: One of `CONNECTIVITY_RULES`.
        wait_until_fits: Whether a request waits, in steps of ``time_step``, until the total free capacity covers it
            (one above the whole capacity is skipped).
        time_step: The clock's step while a request waits.
        allowed_servers: Which servers a pool's next step may choose: "needed" (those with some of a resource still
            needed) or "free" (those with anything free: the reference code's mask).
        departures_within: Whether requests due at a pool request's offer leave once its first server is placed.
        keep_useless: Whether a pool request keeps its chosen servers that give nothing, and their paths.
        extra: The workload's own: the engine reads none of it.
        measured: Booleans (requests,) marking what the metrics count (None: all).
        vm_offsets: Jobs: request ``i``'s VMs are ``vm_demand[vm_offsets[i]:vm_offsets[i + 1]]``.
        vm_demand: Jobs: VMs × resources; a job's ``demand`` is its VMs' sum.
        flow_offsets: Jobs: request ``i``'s flows are ``flows[flow_offsets[i]:flow_offsets[i + 1]]``.
        flows: Jobs: flows × 3, (source VM, destination VM, Gbps), VMs numbered within the job.
        packets: Jobs: the packet model (None: no latency or loss reported)."""

    kind: str
    gaps: np.ndarray
    holding: np.ndarray
    demand: np.ndarray
    connectivity: str = "all"
    wait_until_fits: bool = False
    time_step: float = 1.0
    allowed_servers: str = "needed"
    departures_within: bool = False
    keep_useless: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    measured: np.ndarray | None = None
    vm_offsets: np.ndarray | None = None
    vm_demand: np.ndarray | None = None
    flow_offsets: np.ndarray | None = None
    flows: np.ndarray | None = None
    packets: PacketModel | None = None

    def __len__(self) -> int:
        return len(self.gaps)

    def vms(self, i: int) -> np.ndarray | None:
        """The VMs of job ``i``.

        Args:
            i: The request's index.
        Returns:
            Its VMs × resources, a view; None for pools."""
        if self.vm_offsets is None or self.vm_demand is None:
            return None
        return self.vm_demand[self.vm_offsets[i]:self.vm_offsets[i + 1]]

    def job_flows(self, i: int) -> np.ndarray | None:
        """The flows of job ``i``.

        Args:
            i: The request's index.
        Returns:
            Its flows × 3, a view; None for pools."""
        if self.flow_offsets is None or self.flows is None:
            return None
        return self.flows[self.flow_offsets[i]:self.flow_offsets[i + 1]]


@dataclass(frozen=True, slots=True)
class Departing:
    """What requests departing inside a request free, as flat arrays, a row per request and server or link."""

    servers: np.ndarray
    amounts: np.ndarray
    links: np.ndarray
    link_amounts: np.ndarray


@dataclass(frozen=True, slots=True)
class Request:
    """One request as an allocator sees it: read-only, and its own copy.

    Attributes:
        id: Its index in the sequence, from 0.
        arrival: The time it is offered.
        holding: How long it holds what it is given.
        demand: What it asks for, per resource (resources,).
        kind: "pool" or "job".
        connectivity: One of `CONNECTIVITY_RULES`.
        vms: Jobs: its VMs × resources, in placement order (None for pools).
        flows: Jobs: its flows × 3, (source VM, destination VM, Gbps).
        allowed_servers: "needed" or "free", as `RequestSequence`'s.
        departing: What requests due at its offer free once its first server is placed (None: nothing departs).
        keep_useless: Whether its chosen servers that give nothing stay in its allocation, with their paths."""

    id: int
    arrival: float
    holding: float
    demand: np.ndarray
    kind: str = "pool"
    connectivity: str = "all"
    vms: np.ndarray | None = None
    flows: np.ndarray | None = None
    allowed_servers: str = "needed"
    departing: Departing | None = None
    keep_useless: bool = False


class Workload(Protocol):
    """What a workload plugin's factory returns; an optional ``default_requests(network) -> int`` sets the episode
    length, an optional ``fingerprint(network) -> str`` names what beyond its spec decides its requests (a trace
    file's digest), hashed into the run id.

    Attributes:
        kind: The demand kind of its sequences: "pool" or "job"."""

    kind: str

    def generate(self, network: Network, requests: int, rng: np.random.Generator) -> RequestSequence:
        """Draw ``requests`` requests for ``network`` from ``rng``.

        Args:
            network: The compiled topology (a copy of its own).
            requests: How many requests to draw.
            rng: Every random number's source; the first N requests of a seed must not depend on ``requests`` (a
                stream per quantity, ``rng.spawn``).
        Returns:
            The sequence: ``requests`` long, of kind ``kind``.
        Raises:
            ValueError: Its parameters do not suit ``network`` or ``requests`` (reported as a `SpecError`)."""
        ...


class SequenceProblem(ValueError):
    """What makes a workload's `RequestSequence` unusable."""


def checked_sequence(sequence: RequestSequence, network: Network, requests: int, kind: str) -> RequestSequence:
    """``sequence`` converted, checked and locked (`frozen`): no allocator or metric changes what the next one sees."""
    n = len(sequence.gaps) if hasattr(sequence.gaps, "__len__") else -1
    if n != requests:
        raise SequenceProblem(f"it has {n} requests, {requests} were asked for")
    if sequence.kind != kind:
        raise SequenceProblem(f"it is of kind {sequence.kind!r}, the workload declares {kind!r}")
    if sequence.connectivity not in CONNECTIVITY_RULES:
        raise SequenceProblem(f"it has connectivity={sequence.connectivity!r}, "
                              f"not one of {', '.join(CONNECTIVITY_RULES)}")
    resources = len(network.resources)
    arrays = {
        "gaps": _numbers("gaps", sequence.gaps, (n,)),
        "holding": _numbers("holding", sequence.holding, (n,)),
        "demand": _numbers("demand", sequence.demand, (n, resources)),
    }
    if sequence.wait_until_fits and not _positive_finite(sequence.time_step):
        raise SequenceProblem(f"it waits until requests fit with time_step={sequence.time_step!r}; "
                              "it must be a positive finite number")
    if sequence.measured is not None:
        measured = np.asarray(sequence.measured)
        if measured.shape != (n,) or measured.dtype != np.bool_:
            raise SequenceProblem(f"measured must be {n} booleans")
        arrays["measured"] = measured.copy()
    if kind == "job":
        arrays.update(_job_arrays(sequence, n, resources, arrays["demand"]))
        _check_packets(sequence.packets)
    return dataclasses.replace(sequence, **{name: frozen(array) for name, array in arrays.items()})


def _check_packets(packets: PacketModel | None) -> None:
    if packets is None:
        return
    if not isinstance(packets, PacketModel):
        raise SequenceProblem(f"its packets are a {type(packets).__name__}, not a dcbench.PacketModel")
    if not _positive_finite(packets.packet_bytes):
        raise SequenceProblem(f"its packet_bytes={packets.packet_bytes!r} is not a positive finite number")
    if not isinstance(packets.buffer_packets, (int, np.integer)) or packets.buffer_packets < 1:
        raise SequenceProblem(f"its buffer_packets={packets.buffer_packets!r} is not an integer >= 1")


def _positive_finite(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and 0 < value < np.inf


def _numbers(name: str, values: Any, shape: tuple[int, ...]) -> np.ndarray:
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise SequenceProblem(f"{name} is not an array of numbers") from None
    if array.shape != shape:
        raise SequenceProblem(f"{name} has shape {array.shape}, expected {shape}")
    if not (array >= 0).all() or not np.isfinite(array).all():
        raise SequenceProblem(f"{name} holds a negative, NaN or infinite value")
    return array


def _offsets(name: str, values: Any, n: int, total: int) -> np.ndarray:
    offsets = np.asarray(values) if values is not None else np.zeros(0)
    if (offsets.shape != (n + 1,) or offsets.dtype.kind not in "iu" or offsets[0] != 0
            or offsets[-1] != total or (np.diff(offsets) < 0).any()):
        raise SequenceProblem(f"{name} must be {n + 1} rising integers from 0 to {total}")
    return offsets.astype(np.int64)


def _job_arrays(sequence: RequestSequence, n: int, resources: int, demand: np.ndarray) -> dict[str, np.ndarray]:
    if sequence.vm_demand is None or sequence.flows is None:
        raise SequenceProblem("it is of kind 'job' but has no VMs or no flows")
    vm_demand = _numbers("vm_demand", sequence.vm_demand, (len(sequence.vm_demand), resources))
    vm_offsets = _offsets("vm_offsets", sequence.vm_offsets, n, len(vm_demand))
    if (np.diff(vm_offsets) == 0).any():
        raise SequenceProblem("it has a job with no VMs")
    per_job = np.add.reduceat(vm_demand, vm_offsets[:-1], axis=0) if len(vm_demand) else demand
    if not np.allclose(per_job, demand, rtol=1e-9, atol=1e-6):
        raise SequenceProblem("it has a job whose demand is not the sum of its VMs'")
    flows = _numbers("flows", sequence.flows, (len(sequence.flows), 3))
    flow_offsets = _offsets("flow_offsets", sequence.flow_offsets, n, len(flows))
    vms_of_flow = np.repeat(np.diff(vm_offsets), np.diff(flow_offsets))
    ends = flows[:, :2]
    if (ends != np.floor(ends)).any() or (ends >= vms_of_flow[:, None]).any():
        raise SequenceProblem("it has a flow between VMs its job does not have")
    return {"vm_demand": vm_demand, "vm_offsets": vm_offsets, "flows": flows, "flow_offsets": flow_offsets}
