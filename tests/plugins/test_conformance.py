"""Every registered plugin honours its kind's contracts: the public checks
of `dcbench.testing`, as a third party calls them, and what the built-in
plugins promise besides (a description, declared demands, a default
workload)."""

import pytest

from dcbench.harness import get_registry
from dcbench.registry import create_registry
from dcbench.testing import check_allocator, check_metric, check_suite, check_topology, check_workload

REGISTRY = get_registry()
# The learned allocators run where they have a shipped checkpoint: gnn_ppo's default scenario (tiered:8,1x4)
# has one; a2c_multistep's are for 16 ToRs or more.
SCENARIO = {"a2c_multistep": {"topology": "ocs:16,servers=2", "workload": "vmjobs:load=8,warmup=10"}}


def names(kind):
    return sorted(REGISTRY.entries(kind))


@pytest.mark.parametrize("name", names("topology"))
def test_topology(name):
    assert REGISTRY.get("topology", name).description
    assert REGISTRY.build("topology", name).obj.default_workload is not None
    check_topology(name)


def workload_spec(name, folder):
    """A workload's spec for its check: the trace workload replays a small trace written in ``folder``."""
    if name != "trace":
        return name
    path = folder / "trace.csv"
    path.write_text("arrival,duration,cpu,mem\n" + "".join(f"{i},{1 + i % 4},{1 + i % 3},2\n" for i in range(100)))
    return f"trace:file={path}"


@pytest.mark.parametrize("name", names("workload"))
def test_workload(name, tmp_path):
    assert REGISTRY.get("workload", name).description
    check_workload(workload_spec(name, tmp_path))


@pytest.mark.parametrize("name", names("allocator"))
def test_allocator(name):
    entry = REGISTRY.get("allocator", name)
    assert entry.description and entry.extra.get("demands")
    check_allocator(name, **SCENARIO.get(name, {}))


@pytest.mark.parametrize("name", names("metric"))
def test_metric(name):
    assert REGISTRY.get("metric", name).description
    check_metric(name)


@pytest.mark.parametrize("name", names("suite"))
def test_suite(name):
    assert REGISTRY.entries("suite")[name].description
    check_suite(name)


def test_builtins_alone_register_the_same_names():
    bare = create_registry([])
    for kind in ("topology", "workload", "allocator", "metric"):
        assert set(bare.entries(kind)) <= set(REGISTRY.entries(kind))
