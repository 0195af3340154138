"""The plugin author's surface: what docs/plugins.md's "What a plugin may read"
lists exists, with the type it says, and is all that the example package and
the built-in allocators read; an allocator's `check(network)`."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import dcbench
from dcbench import Allocator, JobAllocator, JobBuilder, PoolAllocator, PoolBuilder, Request, SpecError
from dcbench.engine.simulation import Simulation
from dcbench.harness import Runner
from dcbench.plugins.allocators.random_server import RandomAllocator
from dcbench.running.runner import draw_requests

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "plugins.md"
SECTION = "## What a plugin may read"
TOPOLOGIES = ("tiered:8,1x4", "ocs:4,servers=4")
# The objects each table of the section lists the names of (a name written `request.id` says its own).
TABLES = {
    "`dcbench.Network`": "network",
    "`dcbench.PoolBuilder`": "pool_builder",
    "`dcbench.JobBuilder`": "job_builder",
    "`dcbench.Request` and `dcbench.State`": None,
    "An allocator": "allocator",
    "A workload": "workload",
}
# What the code that reads the surface calls those objects.
ROLES = {"builder": ("pool_builder", "job_builder"), "job_builder": ("job_builder",), "network": ("network",),
         "request": ("request",), "state": ("state",)}
SOURCES = [*sorted((ROOT / "examples" / "dcbench-firstfit" / "src").rglob("*.py")),
           *sorted((ROOT / "plugins" / "allocators").glob("*.py"))]
ARRAY = re.compile(r"(float64|int64|bool)\[(.*)\]")


@dataclass(frozen=True)
class Row:
    """One row of a table: whose name it is, the name, and the type and meaning as written."""

    role: str
    name: str
    method: bool
    types: tuple[str, ...]  # the backticked types of its type cell: any of them will do
    none: bool  # "or None"
    optional: bool  # its meaning starts "Optional": a plugin may leave it out


def documented(text: str) -> list[Row]:
    """Every row of the tables under "What a plugin may read" in ``text``."""
    lines = text.splitlines()
    start = lines.index(SECTION)
    rows, role = [], None
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("### "):
            heading = line[4:].strip()
            assert heading in TABLES, f"a table under {heading!r}: say in TABLES whose names it lists"
            role = TABLES[heading]
            continue
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == "name":
            continue
        assert len(cells) == 3, f"a row of three cells: {line}"
        written = re.match(r"`([^`]+)`", cells[0])
        assert written, f"a row whose first cell names nothing in backticks: {line}"
        name = written[1]
        whose, _, name = name.rpartition(".") if "." in name.split("(")[0] else ("", "", name)
        method = "(" in name
        rows.append(Row(whose or role, name.split("(")[0], method, tuple(re.findall(r"`([^`]+)`", cells[1])),
                        cells[1].endswith("or None"), cells[2].startswith("Optional")))
    return rows


def type_problem(value, types: tuple[str, ...], none: bool, sizes: dict[str, int]) -> str | None:
    """What is wrong with ``value`` for one of ``types`` (None where it fits, or no type is written)."""
    if value is None and none:
        return None
    if not types:
        return None
    seen = []
    for written in types:
        array = ARRAY.fullmatch(written)
        if array:
            shape = tuple(eval(size, {}, dict(sizes)) for size in array[2].split(","))  # "n_links + 1"
            dtype = np.dtype(array[1])
            if isinstance(value, np.ndarray) and value.dtype == dtype and value.shape == shape:
                return None
            seen.append(f"{written} = {dtype}{list(shape)}")
            continue
        expected = {"int": (int, np.integer), "float": (float, np.floating), "bool": (bool, np.bool_), "str": str,
                    "tuple": tuple, "list": list, "Mapping": Mapping}.get(written)
        if expected is None:
            module, _, attribute = written.rpartition(".")
            expected = getattr(importlib.import_module(module), attribute)
        if isinstance(value, expected) and not (written == "int" and isinstance(value, bool)):
            return None
        seen.append(written)
    got = (f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__)
    return f"is {got}, not {' or '.join(seen)}{' or None' if none else ''}"


def surface_problems(rows: list[Row], objects: dict[str, object], sizes: dict[str, int]) -> list[str]:
    """Each documented name that ``objects`` lack, or that is not of its documented type."""
    problems = []
    for row in rows:
        if row.role not in objects:
            raise AssertionError(f"no object for {row.role!r}")
        owner = objects[row.role]
        if owner is None:  # (no job builder on a topology without rack switches)
            continue
        label = f"{row.role}.{row.name}"
        if not hasattr(owner, row.name):
            if not row.optional:
                problems.append(f"{label}: documented, but {type(owner).__name__} has no such attribute")
            continue
        value = getattr(owner, row.name)
        if row.method:
            if not callable(value):
                problems.append(f"{label}: documented as a method, but not callable")
                continue
            if not all(ARRAY.fullmatch(t) for t in row.types) or not row.types:
                continue  # only the methods that take nothing and give an array are called
            value = value()
        problem = type_problem(value, row.types, row.none, sizes)
        if problem is not None:
            problems.append(f"{label}: {problem}")
    return problems


def documented_names(rows: list[Row]) -> dict[str, set[str]]:
    names: dict[str, set[str]] = {}
    for row in rows:
        names.setdefault(row.role, set()).add(row.name)
    return names


def undocumented_reads(source: str, names: dict[str, set[str]], where: str = "") -> list[str]:
    """Every ``builder.X``, ``network.X``, ``self.network.X``, ``builder.request.X``, ... in
    ``source`` whose ``X`` the tables do not list for what its owner is named after."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        called = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else None
        if called not in ROLES:
            continue
        if not any(node.attr in names.get(role, ()) for role in ROLES[called]):
            found.append(f"{where}:{node.lineno}: {called}.{node.attr}")
    return found


def scenario(topology: str) -> tuple[dict[str, object], dict[str, int]]:
    """A real network, builders that are building a request, a request, the
    state, an allocator and a workload, and the sizes their shapes are in."""
    plan = Runner().resolve_scenario(topology)
    simulation = Simulation(plan.network, draw_requests(plan, 5, np.random.default_rng(0)))
    request = simulation.next_request()
    network = simulation.allocator_network
    allocator = RandomAllocator()
    allocator.reset(network, np.random.default_rng(0))
    pool = request if request.kind == "pool" else Request(0, 0.0, 1.0, network.server_capacity[0] / 2)
    allocator.builder.start(pool, simulation.view)
    allocator.builder.add(int(np.flatnonzero(allocator.builder.allowed())[0]))
    sizes = {"n_servers": network.n_servers, "n_nodes": network.n_nodes, "n_links": network.n_links,
             "n_racks": network.n_racks, "n_resources": len(network.resources), "n_vms": 0, "n_flows": 0}
    if allocator.job_builder is not None:
        jobs = allocator.job_builder
        jobs.start(request, simulation.view)
        jobs.place(int(np.flatnonzero(jobs.rack_fits())[0]))
        sizes.update(n_vms=len(request.vms), n_flows=len(request.flows))
    objects = {"network": network, "pool_builder": allocator.builder, "job_builder": allocator.job_builder,
               "request": request, "state": simulation.view, "allocator": allocator,
               "workload": plan.workload_model}
    return objects, sizes


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return documented(DOCS.read_text())


def test_the_section_lists_every_object_a_plugin_reads(rows):
    roles = {row.role for row in rows}
    assert roles == {"network", "pool_builder", "job_builder", "request", "state", "allocator", "workload"}
    assert all(not row.name.startswith("_") for row in rows), "a private name is documented"
    assert len(rows) > 100


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_every_documented_name_exists_with_its_documented_type(rows, topology):
    objects, sizes = scenario(topology)
    assert surface_problems(rows, objects, sizes) == []


def test_a_builder_has_every_documented_name_before_its_first_request(rows):
    network = Runner().network("ocs:4,servers=4")[1].private_copy()
    fresh = {"pool_builder": PoolBuilder(network), "job_builder": JobBuilder(network)}
    assert [f"{row.role}.{row.name}" for row in rows if row.role in fresh
            and row.name not in dir(fresh[row.role])] == []  # (no `vm` to read before a job: no next VM)
    assert fresh["job_builder"].request is None and fresh["job_builder"].step == 0


def test_a_documented_name_that_is_missing_or_of_another_shape_fails():
    text = DOCS.read_text().replace(
        "| `n_servers` | `int` |",
        "| `no_such_name` | `int` | planted |\n| `racks` | `int64[n_links]` | planted |\n"
        "| `circuits` | `dcbench.Circuits` | planted: no None |\n| `n_servers` | `int` |", 1)
    objects, sizes = scenario("tiered:8,1x4")
    problems = surface_problems(documented(text), objects, sizes)
    assert [problem.split(":")[0] for problem in problems] == [
        "network.no_such_name", "network.racks", "network.circuits"]
    assert "is int64[64], not int64[n_links] = int64[76]" in problems[1]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_the_example_and_the_builtin_allocators_read_only_documented_names(rows, path):
    assert undocumented_reads(path.read_text(), documented_names(rows), path.name) == []


def test_the_scan_sees_an_undocumented_read(rows):
    planted = (
        "class Sneaky(PoolAllocator):\n"
        "    def choose(self, builder, allowed):\n"
        "        links = builder._free_links\n"
        "        racks = self.network.rack_of_server\n"
        "        return int(builder.chosen[0] + builder.request.priority + len(self.job_builder._partners))\n")
    assert undocumented_reads(planted, documented_names(rows), "planted") == [
        "planted:3: builder._free_links", "planted:4: network.rack_of_server",
        "planted:5: request.priority", "planted:5: job_builder._partners"]


# check(network) ---------------------------------------------------------


class Fussy(PoolAllocator):
    """Needs at least ``k`` racks."""

    def __init__(self, k: int = 4):
        self.k = k

    def check(self, network):
        if self.k > network.n_racks:
            raise SpecError(f"k={self.k} but the topology has only {network.n_racks} racks")

    def choose(self, builder, allowed):
        return int(np.flatnonzero(allowed)[0])


def test_check_accepts_any_network_unless_an_allocator_says_otherwise(small_network):
    class Bare(Allocator):
        def reset(self, network, rng):
            pass

        def allocate(self, request, state):
            return None

    for allocator in (Bare(), RandomAllocator(), JobAllocator(), Fussy(k=4)):
        assert allocator.check(small_network.private_copy()) is None
    with pytest.raises(SpecError, match="k=12 but the topology has only 4 racks"):
        Fussy(k=12).check(small_network.private_copy())


def test_a2c_refuses_a_checkpoint_for_another_number_of_tors_in_check():
    pytest.importorskip("torch")
    from dcbench.plugins.allocators._learned.checkpoints import shipped_checkpoints
    from dcbench.plugins.allocators.a2c_multistep.allocator import CHECKPOINTS, A2CAllocator

    shipped = shipped_checkpoints(CHECKPOINTS)["ocs-16"]
    _, network = Runner().network("ocs:32")
    with pytest.raises(SpecError, match="checkpoint ocs-16.pt is for 16 ToRs, the topology has 32"):
        A2CAllocator(str(shipped)).check(network.private_copy())
    A2CAllocator(str(shipped)).check(Runner().network("ocs:16")[1].private_copy())
    A2CAllocator().check(network.private_copy())  # the shipped one is picked by the number of ToRs


CHECKED_PLUGIN = '''
import numpy as np
from dcbench import Param, PoolAllocator, SpecError, hookimpl

RESET = []


class Fussy(PoolAllocator):
    def __init__(self, k=4):
        self.k = k

    def check(self, network):
        if self.k == 99:
            raise KeyError("racks")
        if self.k > network.n_racks:
            raise SpecError(f"k={self.k} but the topology has only {network.n_racks} racks")

    def reset(self, network, rng):
        RESET.append(self.k)
        super().reset(network, rng)

    def choose(self, builder, allowed):
        return int(np.flatnonzero(allowed)[0])


@hookimpl
def register_allocators(register):
    register("fussy", Fussy, params=[Param("k", int, 4, "racks it needs")], demands=("pool",))
'''


@pytest.fixture
def fussy(tmp_path, monkeypatch):
    """A runner whose registry has the third-party allocator ``fussy:k=K``, which needs K racks."""
    from dcbench.registry import create_registry

    (tmp_path / "tp_fussy.py").write_text(CHECKED_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DCBENCH_STRICT_PLUGINS", raising=False)
    registry = create_registry([importlib.metadata.EntryPoint("fussy", "tp_fussy", "dcbench")])
    return Runner(registry), importlib.import_module("tp_fussy")


def test_a_spec_error_from_check_stops_the_run_before_it_starts(fussy):
    runner, module = fussy
    assert runner.run("fussy:k=4", "tiered:8,1x4", requests=5).summary["requests"] == 5
    module.RESET.clear()
    with pytest.raises(SpecError, match="k=12 but the topology has only 4 racks"):
        runner.run("fussy:k=12", "tiered:8,1x4", requests=5)
    assert module.RESET == []  # refused before any allocator was reset


def test_anything_else_from_check_is_the_plugins_bug(fussy):
    runner, _ = fussy
    with pytest.raises(dcbench.PluginError, match=r"fussy.*check\(network\).*KeyError"):
        runner.run("fussy:k=99", "tiered:8,1x4", requests=5)
