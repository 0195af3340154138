"""dcbench can be cited and its licence read: CITATION.cff names this
version, and the LICENSE is the one pyproject.toml declares."""

from pathlib import Path

import pytest

import dcbench

ROOT = Path(__file__).resolve().parent.parent


def test_the_citation_names_this_version_and_the_licence_is_the_declared_one():
    if not (ROOT / "CITATION.cff").exists():
        pytest.skip("no source tree here (an installed wheel)")
    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["version"] == dcbench.__version__
    assert citation["license"] == "MIT" and 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert {reference.get("doi") for reference in citation["references"]} >= {
        "10.1364/JOCN.478944", "10.1364/JOCN.562531"}
