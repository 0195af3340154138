"""What a leaderboard entry says of itself, checked; and whether a learned one was trained on test seeds."""

import pytest

from dcbench.model.about import CLEAN, ON_TEST, UNKNOWN, about_problem, seed_ranges, training_mark

GOOD = {"name": "My policy", "authors": ["A. Researcher"], "paper": "https://arxiv.org/abs/2106.02412",
        "code": "https://github.com/me/policy", "description": "PPO on the tiered fabric", "kind": "learned",
        "trained_on": "nara2022 8-1x16", "training_seeds": ["1000000.."]}


def test_a_full_description_passes_and_kind_alone_is_enough():
    assert about_problem(GOOD) is None
    assert about_problem({"kind": "heuristic"}) is None


@pytest.mark.parametrize("change, problem", [
    ({"kind": "genius"}, "its kind 'genius' is not one of: learned, heuristic, paper baseline, dcbench baseline"),
    ({"paper": "http://example.org"}, "its paper 'http://example.org' is not an https:// link"),
    ({"code": "https://example.org/a b"}, "is not an https:// link"),
    ({"name": "two\nlines"}, "its name is not one line of text"),
    ({"name": "x" * 201}, "its name is not one line of text of at most 200 characters"),
    ({"authors": "A. Researcher"}, "its authors are not a list"),
    ({"training_seeds": ["5..3"]}, "end before they start"),
    ({"training_seeds": ["some"]}, "training seeds 'some' are not N, A..B or A.."),
    ({"training_seeds": []}, "its training_seeds are not a non-empty list"),
    ({"kind": "heuristic"}, "it gives training_seeds but its kind is not learned"),
    ({"homepage": "https://x.org"}, "it has the unknown key 'homepage'"),
])
def test_a_bad_description_is_named(change, problem):
    assert problem in about_problem({**GOOD, **change})


def test_seed_ranges_read_single_seeds_closed_and_open_ranges():
    assert seed_ranges(["7", "0..99", "1000000.."]) == [(7, 7), (0, 99), (1000000, None)]


@pytest.mark.parametrize("seeds, mark", [
    (["1000000.."], CLEAN), (["5..9", "100"], CLEAN), (["0..99"], ON_TEST), (["4"], ON_TEST), (["3.."], ON_TEST)])
def test_a_learned_entry_is_clean_only_where_its_training_seeds_miss_every_test_seed(seeds, mark):
    assert training_mark({"kind": "learned", "training_seeds": seeds}, range(5)) == mark


def test_a_learned_entry_without_training_seeds_is_unknown_and_a_heuristic_has_no_mark():
    assert training_mark({"kind": "learned"}, range(5)) == UNKNOWN
    assert training_mark({"kind": "paper baseline"}, range(5)) is None
