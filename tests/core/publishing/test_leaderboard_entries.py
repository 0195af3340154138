"""Entries with an identity (`submit --about`), the verified mark, and the downloadable tables."""

import csv
import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench.commands import cli
from tests.core.publishing.test_leaderboard import snapshot

ABOUT = """
[random]
name = "Uniform random"
authors = ["A. Researcher", "B. Researcher"]
code = "https://github.com/someone/random-baseline"
description = "Any server with room, uniformly"
"""


def submitted(random_sweep, tmp_path, about=ABOUT):
    root = tmp_path / "leaderboard"
    (tmp_path / "about.toml").write_text(about)
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(random_sweep),
                                      "--about", str(tmp_path / "about.toml")])
    assert result.exit_code == 0, result.output
    return root


def test_submit_stores_who_an_entry_is_over_what_its_plugin_registers(random_sweep, tmp_path):
    root = submitted(random_sweep, tmp_path)
    (folder,) = (root / "submissions").iterdir()
    entry = json.loads((folder / "submission.json").read_text())["entries"]["random"]
    assert entry == {"name": "Uniform random", "authors": ["A. Researcher", "B. Researcher"],
                     "code": "https://github.com/someone/random-baseline",
                     "paper": "https://arxiv.org/abs/2106.02412",  # from its registration, not overridden
                     "description": "Any server with room, uniformly", "kind": "paper baseline"}
    assert CliRunner().invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0
    page = (root / "index.html").read_text()
    assert '<a href="https://github.com/someone/random-baseline" title="Any server with room, uniformly">' \
           'Uniform random</a>' in page
    with open(root / "tables" / "nara2022-summary.csv", newline="") as table:
        (row,) = list(csv.DictReader(table))
    assert row["name"] == "Uniform random" and row["authors"] == "A. Researcher; B. Researcher"
    assert row["kind"] == "paper baseline" and row["rank"] == "1" and float(row["score"]) > 0
    parquet = pq.read_table(root / "tables" / "nara2022-summary.parquet").to_pylist()
    assert [r["allocator"] for r in parquet] == ["random"] and parquet[0]["score"] == float(row["score"])


@pytest.mark.parametrize("about, problem", [
    ("[random\nname = 1", "is no TOML"),
    ('[tetris]\nname = "T"', "--about describes 'tetris', which names none of its allocators (random)"),
    ('[random]\npaper = "http://example.org"', "--about's 'random': its paper 'http://example.org' is not an https://"),
    ('[random]\nkind = "genius"', "--about's 'random': its kind 'genius' is not one of"),
    ('[random]\ntraining_seeds = ["0.."]', "it gives training_seeds but its kind is not learned"),
])
def test_a_bad_about_file_is_refused_in_one_line_and_nothing_is_written(random_sweep, tmp_path, about, problem):
    (tmp_path / "about.toml").write_text(about)
    root = tmp_path / "leaderboard"
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "submit", str(random_sweep),
                                      "--about", str(tmp_path / "about.toml")])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and problem in result.output, result.output
    assert snapshot(root) == {}


@pytest.mark.parametrize("seeds, mark", [('["0..99"]', "trained on test seeds"), ('["1000000.."]', "clean"),
                                         (None, "unknown")])
def test_a_learned_entry_is_marked_by_its_training_seeds_against_the_suites_test_seeds(random_sweep, tmp_path,
                                                                                      seeds, mark):
    about = '[random]\nkind = "learned"\n' + (f"training_seeds = {seeds}\n" if seeds else "")
    root = submitted(random_sweep, tmp_path, about)
    assert CliRunner().invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0
    summary = (root / "README.md").read_text().split("| rank | entry |")[1].split("\n\n")[0]
    assert summary.splitlines()[2].endswith(f"| {mark} |")


def test_verify_records_what_it_ran_again_and_the_page_marks_it(random_sweep, tmp_path):
    root = submitted(random_sweep, tmp_path)
    (folder,) = (root / "submissions").iterdir()
    assert not (folder / "verified.json").exists()
    result = CliRunner().invoke(cli, ["leaderboard", "--root", str(root), "verify", "--runs", "3", "-q"])
    assert result.exit_code == 0, result.output
    verified = json.loads((folder / "verified.json").read_text())
    assert len(verified["same"]) == 3 and verified["otherwise"] == [] and set(verified) == {
        "same", "otherwise", "dcbench_version", "date"}
    assert CliRunner().invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0
    page = (root / "index.html").read_text()
    replayed = len(json.loads((folder / "submission.json").read_text())["replayed"]["runs"])
    assert f"{replayed} runs replayed at submission" in page and "3 re-run by verify" in page
    assert "the same, bit for bit\">✓</span>" in page
    verified["same"][0] = "0123456789abcdef"  # a run the submission does not hold
    (folder / "verified.json").write_text(json.dumps(verified))
    damaged = CliRunner().invoke(cli, ["leaderboard", "--root", str(root)])
    assert damaged.exit_code == 2 and "its verified.json is not {same: run ids" in damaged.output


def test_the_suites_reference_is_the_delta_every_entry_is_measured_against(random_sweep, tmp_path):
    from dcbench.publishing.leaderboard import _reference
    from dcbench.registry import get_registry

    registry = get_registry()
    suites = registry.entries("suite")
    tetris = "tetris:penalty=0.9,scale=10,fit_last=no"
    assert _reference(suites["nara2022"], [tetris, "random"], registry) == tetris
    assert _reference(suites["nara2022-published"], [tetris, "random"], registry) is None  # its own is not there
    root = submitted(random_sweep, tmp_path)
    assert CliRunner().invoke(cli, ["leaderboard", "--root", str(root)]).exit_code == 0
    assert "The suite names no reference with runs here, so there is no Δ." in (root / "README.md").read_text()
