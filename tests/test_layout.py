"""The layout's two import rules (docs/plugins.md): the core imports nothing
from the plugins, and every plugin, built-in ones included, imports from
dcbench only its public API: ``dcbench`` (its ``__all__``) and ``dcbench.envs``."""

import ast
from pathlib import Path

import pytest

import dcbench

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = {"dcbench", "dcbench.envs"}


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
