"""docs/guarantees.md names a test for every guarantee: each one it names exists."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guarantees.md"


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file, test) for every `tests/...py::test_...` on the page; a `::test_...`
    right after one names a test of the same file."""
    named, current = [], None
    for match in re.finditer(r"`(tests/[\w/]+\.py)?(?:::(test_\w+))?", text):
        path, test = match.groups()
        current = path or current
        if test:
            named.append((current, test))
    return named


def test_every_test_the_guarantees_page_names_exists():
    if not PAGE.exists():
        pytest.skip("no docs/ here (an installed wheel)")
    named = named_tests(PAGE.read_text())
    assert len(named) >= 30
    for path, test in named:
        tree = ast.parse((ROOT / path).read_text())
        functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert test in functions, f"docs/guarantees.md names {path}::{test}, which does not exist"
