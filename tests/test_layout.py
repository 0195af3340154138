"""The layout's two import rules (docs/plugins.md): the core imports nothing
from the plugins, and every plugin, built-in ones included, imports from
dcbench only its public API: ``dcbench`` (its ``__all__``), ``dcbench.envs``
and ``dcbench.harness`` (what figures are drawn with). And the core's logic
names no built-in plugin."""

import ast
import re
from pathlib import Path

import pytest

import dcbench

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = {"dcbench", "dcbench.envs", "dcbench.harness"}


def dcbench_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every import of a dcbench module in ``path``, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dcbench":
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names if alias.name.split(".")[0] == "dcbench"]
    return found


def sources(folder: str) -> list[Path]:
    paths = sorted((ROOT / folder).rglob("*.py"))
    if not paths:
        pytest.skip(f"no {folder}/ here (an installed wheel)")
    return paths


def test_the_core_imports_nothing_from_the_plugins():
    offending = [f"{path.relative_to(ROOT)}: {module}" for path in sources("core")
                 for module, _ in dcbench_imports(path) if module.startswith("dcbench.plugins")]
    assert offending == []


def test_plugins_import_only_the_public_api():
    offending = []
    for path in sources("plugins"):
        for module, names in dcbench_imports(path):
            if module.startswith("dcbench.plugins"):
                continue  # a plugin's own modules, or a built-in one it builds on
            if module not in PUBLIC_MODULES:
                offending.append(f"{path.relative_to(ROOT)}: {module}")
            elif module == "dcbench":
                offending += [f"{path.relative_to(ROOT)}: dcbench.{name}" for name in names
                              if name not in dcbench.__all__]
    assert offending == []


def test_the_check_sees_an_internal_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from dcbench.results import write_table_atomic\n    import dcbench.stats\n")
    assert dcbench_imports(sample) == [("dcbench.results", ["write_table_atomic"]), ("dcbench.stats", [])]


def builtin_plugin_names() -> set[str]:
    """The names of the registered topologies, workloads, allocators, metrics and suites."""
    registry = dcbench.get_registry()
    return {name for kind in ("topology", "workload", "allocator", "metric", "suite")
            for name in registry.entries(kind)}


def plugin_names_in_logic(folder: Path, names: set[str]) -> list[tuple[str, str]]:
    """(file, literal) of every string literal in ``folder``'s Python files
    that is a plugin's name or one of its specs ('tiered', 'ccf:', 'ccf:
    reconfigure=no'), outside what may name one: `ALLOWED_FILES`, docstrings,
    and the defaults and help texts of the commands' click options."""
    spec = re.compile(rf"(?:{'|'.join(map(re.escape, sorted(names)))})(?::\S*)?")
    found = []
    for path in sorted(folder.rglob("*.py")):
        where = path.relative_to(folder).as_posix()
        if where in ALLOWED_FILES:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        allowed = {id(node.body[0].value) for node in ast.walk(tree)  # docstrings
                   if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                   and node.body and isinstance(node.body[0], ast.Expr)
                   and isinstance(node.body[0].value, ast.Constant)}
        if where.startswith("commands/"):
            allowed |= {id(constant) for call in ast.walk(tree) if isinstance(call, ast.Call)
                        and getattr(call.func, "attr", getattr(call.func, "id", None)) in ("option", "argument")
                        for keyword in call.keywords if keyword.arg in ("default", "help")
                        for constant in ast.walk(keyword.value)}
        found += [(where, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and isinstance(node.value, str) and id(node) not in allowed and spec.fullmatch(node.value)]
    return sorted(set(found))


ALLOWED_FILES = {"registry/kinds.py"}  # BUILTIN_PLUGINS: the modules dcbench loads as its own plugins
# The defaults of a command's options kept in a constant, not in its click.option: bench's topologies.
COMMAND_DEFAULTS = {("commands/bench.py", "tiered:32,1x4"), ("commands/bench.py", "tiered:32,1x4,pods=8,racks=8"),
                    ("commands/bench.py", "tiered:32,1x4,pods=16,racks=32")}
# Words that are also a metric's name, used as themselves: the requests table's spread column, the demand
# kind "jobs" as headings name it, the acceptance in a benchmark's table.
WORDS = {("engine/simulation.py", "spread"), ("harness/report.py", "jobs"), ("harness/bench.py", "acceptance")}
# The environment's defaults, as a command's: its default topology, and the examples its errors give.
ENV_DEFAULTS = {("envs/__init__.py", "tiered:32,1x4"), ("envs/__init__.py", "uniform")}


def test_the_core_names_no_builtin_plugin_in_its_logic():
    sources("core")
    found = set(plugin_names_in_logic(ROOT / "core", builtin_plugin_names()))
    allowed = COMMAND_DEFAULTS | WORDS | ENV_DEFAULTS
    assert found - allowed == set()
    assert allowed <= found  # one gone: take it off its list


def test_the_check_sees_a_plugin_named_in_logic(tmp_path):
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "plot.py").write_text(
        'import click\n\n@click.option("--topology", default="tiered:8,1x4", help="e.g. tiered")\n'
        'def plot(topology):\n    """Draw tiered figures."""\n    return {"tiered": "fabric"}[topology]\n')
    (tmp_path / "colours.py").write_text(
        '"""ccf"""\n\ndef colour(spec):\n    return "C7" if spec.startswith("ccf:") and "reconfigure=no" in spec '
        'else f"{spec} is tetris"\n')
    assert plugin_names_in_logic(tmp_path, {"tiered", "ccf", "tetris"}) == [("colours.py", "ccf:"),
                                                                           ("commands/plot.py", "tiered")]
