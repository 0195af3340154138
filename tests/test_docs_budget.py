"""The prose has a budget (CONTRIBUTING.md): the docs at most 45,000 words,
no page over 3,000 apart from the tables `dcbench report` generates into it,
the first-hour tutorial at most 1,500, and every CHANGELOG bullet at most 30."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATED = re.compile(r"<!-- dcbench report( [\w.-]+)?: start -->.*?<!-- dcbench report( [\w.-]+)?: end -->", re.S)


def pages() -> dict[str, str]:
    found = {str(path.relative_to(ROOT)): path.read_text() for path in sorted((ROOT / "docs").rglob("*.md"))}
    if not found:
        pytest.skip("no docs/ here (an installed wheel)")
    return found


def words(text: str) -> int:
    return len(text.split())


def test_the_docs_stay_within_their_word_budget():
    written = {page: words(GENERATED.sub("", text)) for page, text in pages().items()}
    assert {page: count for page, count in written.items() if count > 3_000} == {}
    assert sum(words(text) for text in pages().values()) <= 45_000
    assert written["docs/tutorial.md"] <= 1_500


def test_generated_tables_are_told_from_prose():
    text = "intro\n<!-- dcbench report nara2022: start -->\n| a | b |\n<!-- dcbench report nara2022: end -->\nend\n"
    assert words(GENERATED.sub("", text)) == 2


def test_every_changelog_bullet_has_at_most_30_words():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    bullets = re.findall(r"^- (.*(?:\n  .*)*)", changelog, re.M)
    assert len(bullets) > 50
    assert [bullet[:60] for bullet in bullets if words(bullet) > 30] == []
