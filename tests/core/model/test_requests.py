import dataclasses

import numpy as np
import pytest

from dcbench import PacketModel, RequestSequence
from dcbench.model.requests import SequenceProblem, checked_sequence
from tests.conftest import tiered


def jobs(network):
    """Two jobs of two VMs each, a flow in each."""
    vm = [2.0] * len(network.resources)
    return RequestSequence("job", np.ones(2), np.full(2, 3.0), np.array([[4.0] * len(vm)] * 2),
                           vm_offsets=np.array([0, 2, 4]), vm_demand=np.array([vm] * 4),
                           flow_offsets=np.array([0, 1, 2]), flows=np.array([[0, 1, 5.0], [1, 0, 5.0]]),
                           packets=PacketModel(packet_bytes=296, buffer_packets=15))


@pytest.mark.parametrize("change, problem", [
    (lambda s: dataclasses.replace(s, vm_offsets=np.array([0, 3, 4])), "has a job whose demand is not the sum"),
    (lambda s: dataclasses.replace(s, vm_offsets=np.array([0, 2, 5])), "vm_offsets must be 3 rising integers"),
    (lambda s: dataclasses.replace(s, vm_offsets=np.array([0, 4, 2])), "vm_offsets must be 3 rising integers"),
    (lambda s: dataclasses.replace(s, vm_offsets=np.array([0, 0, 4])), "it has a job with no VMs"),
    (lambda s: dataclasses.replace(s, flows=np.array([[0, 2, 5.0], [1, 0, 5.0]])), "has a flow between VMs"),
    (lambda s: dataclasses.replace(s, flows=np.array([[0, 1, -5.0], [1, 0, 5.0]])), "flows holds a negative"),
    (lambda s: dataclasses.replace(s, vm_demand=-s.vm_demand), "vm_demand holds a negative"),
    (lambda s: dataclasses.replace(s, vm_demand=None), "it is of kind 'job' but has no VMs"),
    (lambda s: dataclasses.replace(s, packets=PacketModel("lots")), "packet_bytes='lots' is not a positive"),
    (lambda s: dataclasses.replace(s, packets=PacketModel(296, 0)), "buffer_packets=0 is not an integer >= 1"),
    (lambda s: dataclasses.replace(s, packets={"packet_bytes": 296}), "packets are a dict, not a dcbench.PacketModel"),
    (lambda s: dataclasses.replace(s, measured=["no", "yes"]), "measured must be 2 booleans"),
    (lambda s: dataclasses.replace(s, gaps=["x", "y"]), "gaps is not an array of numbers"),
    (lambda s: dataclasses.replace(s, demand=s.demand[:, :1]), "demand has shape (2, 1), expected (2, 2)"),
])
def test_a_sequence_the_engine_cannot_run_is_named(change, problem):
    network = tiered()
    good = jobs(network)
    assert checked_sequence(good, network, 2, "job") is not good
    with pytest.raises(SequenceProblem, match=problem.replace("(", r"\(").replace(")", r"\)")):
        checked_sequence(change(good), network, 2, "job")


def test_the_checked_sequence_is_the_same_numbers_and_cannot_be_changed():
    network = tiered()
    given = jobs(network)
    checked = checked_sequence(dataclasses.replace(given, gaps=[1, 1]), network, 2, "job")
    assert checked.gaps.dtype == np.float64 and np.array_equal(checked.gaps, [1.0, 1.0])
    assert np.array_equal(checked.vm_demand, given.vm_demand) and checked.vm_demand is not given.vm_demand
    for array in (checked.gaps, checked.holding, checked.demand, checked.vm_demand, checked.flows):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
        for unlocked in (array, array[:1].base):  # an allocator gets rows (views) of these
            with pytest.raises(ValueError, match="cannot set WRITEABLE flag"):
                unlocked.flags.writeable = True
    given.vm_demand[0] = 0  # the workload's own arrays stay its own
    assert checked.vm_demand[0, 0] == 2.0
