"""A leaderboard built by `dcbench leaderboard`, opened from disk in a real headless Chromium: clicked and typed in."""

import pytest
from click.testing import CliRunner

from dcbench.commands import cli
from tests.conftest import open_page


@pytest.fixture(scope="module")
def built(tmp_path_factory, chromium_browser):
    root = tmp_path_factory.mktemp("board")
    results = root / "results"
    runner = CliRunner()
    swept = runner.invoke(cli, ["sweep", "-s", "nara2022", "-a", "random,tetris", "-a", "tetris:fit_last=yes",
                                "-a", "bestfit", "--out", str(results), "-q"])
    assert swept.exit_code == 0, swept.output
    assert runner.invoke(cli, ["leaderboard", "--root", str(root / "lb"), "submit", str(results)]).exit_code == 0
    assert runner.invoke(cli, ["leaderboard", "--root", str(root / "lb")]).exit_code == 0
    return root / "lb" / "index.html"


def entries(page, table="#summary-nara2022"):
    return page.eval_on_selector_all(f"{table} tbody tr:not([hidden]) td:nth-child(2)",
                                     "cells => cells.map(c => c.dataset.value)")


def test_the_built_page_renders_whole_with_no_errors_and_fits_1400_pixels(built, chromium_browser):
    page = open_page(chromium_browser, built)
    try:
        assert page.evaluate("document.body.dataset.imagesLoaded") == "true"
        assert page.js_errors == []
        assert len(entries(page)) == 4 and page.locator("table.scenario").count() == 12
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 1400
        page.locator("button.toggle-columns").first.click()  # every metric of the first scenario
        assert page.locator("#scenario-nara2022-0 th.extra").first.is_visible()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 1400  # its wrapper scrolls, not the page
    finally:
        page.context.close()


def test_clicking_a_header_sorts_and_typing_filters(built, chromium_browser):
    page = open_page(chromium_browser, built)
    try:
        ranked = entries(page)
        assert ranked[-1] == "random"  # best first
        score = page.locator("#summary-nara2022 thead th", has_text="Score")
        score.click()
        assert score.get_attribute("aria-sort") == "ascending" and entries(page) == ranked[::-1]
        score.click()
        assert score.get_attribute("aria-sort") == "descending" and entries(page) == ranked
        page.fill('.filters[data-table="summary-nara2022"] input.text-filter', "tetris")
        assert sorted(entries(page)) == ["tetris:fit_last=no", "tetris:fit_last=yes"]
        assert page.text_content('.filters[data-table="summary-nara2022"] .shown-count') == "2 of 4 entries"
        page.fill('.filters[data-table="summary-nara2022"] input.text-filter', "")
        page.select_option('.filters[data-table="summary-nara2022"] select.kind-filter', "dcbench baseline")
        assert entries(page) == ["bestfit"]
    finally:
        page.context.close()
