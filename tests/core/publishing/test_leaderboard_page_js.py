"""The leaderboard page's behaviour (core/publishing/static/leaderboard.js and .css) in a real headless Chromium:
a page that follows the page's HTML contract (data/leaderboard_contract.html), opened from a ``file://`` URL."""

import fnmatch
import tomllib
from pathlib import Path

import pytest

from tests.conftest import inline_static, open_page, static_text

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
OVERALL = "#overall-nara2022"
SCENARIOS = "#scenarios-nara2022"
# A 1x1 PNG, standing for a suite's plot.
PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
         "AAAABJRU5ErkJggg==")


def contract_page() -> str:
    return (HERE / "data" / "leaderboard_contract.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("contract") / "index.html"
    path.write_text(inline_static(contract_page()), encoding="utf-8")
    return path


@pytest.fixture
def page(chromium_browser, page_file):
    opened = open_page(chromium_browser, page_file)
    yield opened
    assert opened.js_errors == []
    opened.context.close()


def column(page, table: str, index: int) -> list[str]:
    """The text of cell ``index`` (from 0) in each shown row of ``table``, in the order shown."""
    return page.evaluate("([table, index]) => [...document.querySelectorAll(`${table} tbody tr:not([hidden])`)]"
                         ".map(row => row.cells[index].textContent.trim())", [table, index])


def sort_state(page, table: str) -> list[str | None]:
    return page.evaluate("table => [...document.querySelectorAll(`${table} thead th`)]"
                         ".map(th => th.getAttribute('aria-sort'))", table)


def header(table: str, nth: int) -> str:
    """The sort button of ``table``'s ``nth`` header (from 1)."""
    return f"{table} thead th:nth-child({nth}) button"


def allocators(page) -> list[str]:
    """The allocators of the summary table's shown rows, in the order shown (without their marks)."""
    return page.evaluate(f"[...document.querySelectorAll('{OVERALL} tbody tr:not([hidden]) td:nth-child(2) code')]"
                         ".map(code => code.textContent)")


def test_the_static_files_can_be_inlined_and_ship_in_the_wheel():
    assert "</script" not in static_text("leaderboard.js").lower()
    assert "</style" not in static_text("leaderboard.css").lower()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for path in (ROOT / "core" / "publishing" / "static").iterdir():
        assert any(fnmatch.fnmatch(f"static/{path.name}", glob) for glob in data["dcbench.publishing"]), path


def test_the_script_wires_up_the_page(page):
    assert page.evaluate("document.documentElement.classList.contains('js')")
    assert page.evaluate("[...document.querySelectorAll('section.suite')].map(s => s.hidden)") == [False, True]
    assert page.evaluate("[...document.querySelectorAll('nav.tabs button')].map(b => b.getAttribute('aria-selected'))"
                         ) == ["true", "false"]
    assert page.text_content(".shown-count") == "6 of 6 entries"
    assert page.text_content("button.toggle-columns") == "Show all metrics"
    assert allocators(page) == ["gnn_ppo", "tetris", "a2c_multistep", "nulb", "firstfit", "random"]
    assert sort_state(page, OVERALL) == [None] * 7
    assert page.is_hidden(f"{SCENARIOS} th.extra") and page.is_visible(f"{SCENARIOS} th:nth-child(4)")


def test_a_number_column_sorts_ascending_then_descending_with_nan_last(page):
    page.click(header(OVERALL, 5))  # utilisation; tetris's is "nan"
    assert allocators(page) == ["random", "firstfit", "a2c_multistep", "nulb", "gnn_ppo", "tetris"]
    assert sort_state(page, OVERALL) == [None, None, None, None, "ascending", None, None]
    page.click(header(OVERALL, 5))
    assert allocators(page) == ["gnn_ppo", "nulb", "a2c_multistep", "firstfit", "random", "tetris"]
    assert sort_state(page, OVERALL) == [None, None, None, None, "descending", None, None]
    page.click(header(OVERALL, 5))
    assert sort_state(page, OVERALL)[4] == "ascending" and allocators(page)[0] == "random"
    page.click(header(OVERALL, 4))  # acceptance: sorts by data-value, not the "0.932 ± 0.012" shown
    assert allocators(page) == ["random", "firstfit", "nulb", "a2c_multistep", "tetris", "gnn_ppo"]
    assert sort_state(page, OVERALL) == [None, None, None, "ascending", None, None, None]
    assert column(page, OVERALL, 3)[-1] == "0.932 ± 0.012"


def test_an_empty_number_sorts_last_both_ways(page):
    page.click(header(SCENARIOS, 5))  # Δ vs best baseline: firstfit, the baseline, has none
    assert column(page, SCENARIOS, 2)[-2:] == ["firstfit", "firstfit"]
    page.click(header(SCENARIOS, 5))
    assert column(page, SCENARIOS, 2)[-2:] == ["firstfit", "firstfit"]


def test_a_text_column_sorts_and_ties_keep_their_order(page):
    page.click(header(OVERALL, 3))  # kind
    assert allocators(page) == ["firstfit", "tetris", "random", "gnn_ppo", "a2c_multistep", "nulb"]
    assert sort_state(page, OVERALL)[2] == "ascending"
    page.click(header(OVERALL, 3))
    assert allocators(page) == ["nulb", "gnn_ppo", "a2c_multistep", "tetris", "random", "firstfit"]
    page.click(header(OVERALL, 2))  # allocator: text cells with marks, no data-value
    assert allocators(page) == ["a2c_multistep", "firstfit", "gnn_ppo", "nulb", "random", "tetris"]
    assert sort_state(page, OVERALL) == [None, "ascending", None, None, None, None, None]


def test_cells_without_data_value_sort_by_their_text(page):
    page.click(header(OVERALL, 7))  # submitted by: case-insensitive, ties stable
    assert column(page, OVERALL, 6) == ["dcbench", "dcbench", "dcbench", "lab-a", "Lab-B", "Nara 2022"]
    assert allocators(page)[:3] == ["tetris", "firstfit", "random"]
    page.click(header(OVERALL, 6))  # scenarios won: numbers as text
    assert column(page, OVERALL, 5) == ["0", "0", "0", "1", "2", "3"]
    page.click(header(OVERALL, 6))
    assert column(page, OVERALL, 5) == ["3", "2", "1", "0", "0", "0"]


def test_the_text_filter_hides_rows_and_counts_them(page):
    page.fill(".filters .text-filter", "  BASELINE ")
    assert allocators(page) == ["nulb", "firstfit"]
    assert page.text_content(".shown-count") == "2 of 6 entries"
    assert page.evaluate(f"document.querySelectorAll('{OVERALL} tbody tr[hidden]').length") == 4
    assert page.is_hidden(f"{OVERALL} tbody tr:nth-child(1)")
    page.fill(".filters .text-filter", "no such entry")
    assert allocators(page) == [] and page.text_content(".shown-count") == "0 of 6 entries"
    page.fill(".filters .text-filter", "")
    assert len(allocators(page)) == 6 and page.text_content(".shown-count") == "6 of 6 entries"


def test_the_kind_select_filters(page):
    page.select_option(".filters .kind-filter", "heuristic")
    assert allocators(page) == ["tetris", "random"]
    assert page.text_content(".shown-count") == "2 of 6 entries"
    page.select_option(".filters .kind-filter", "paper baseline")
    assert allocators(page) == ["nulb"]
    page.select_option(".filters .kind-filter", "")
    assert len(allocators(page)) == 6


def test_filtering_and_sorting_compose(page):
    page.select_option(".filters .kind-filter", "learned")
    page.click(header(OVERALL, 4))
    assert allocators(page) == ["a2c_multistep", "gnn_ppo"]
    page.fill(".filters .text-filter", "lab")
    page.select_option(".filters .kind-filter", "")
    assert allocators(page) == ["a2c_multistep", "gnn_ppo"]  # lab-a and Lab-B, still in ascending order
    page.fill(".filters .text-filter", "")
    assert allocators(page) == ["random", "firstfit", "nulb", "a2c_multistep", "tetris", "gnn_ppo"]
    page.click(header(OVERALL, 4))
    page.select_option(".filters .kind-filter", "heuristic")
    assert allocators(page) == ["tetris", "random"] and page.text_content(".shown-count") == "2 of 6 entries"


def test_the_toggle_shows_the_extra_columns(page):
    assert page.evaluate(f"document.querySelector('{SCENARIOS} td.extra').offsetWidth") == 0
    page.click("button.toggle-columns")
    assert page.evaluate(f"document.querySelector('{SCENARIOS}').classList.contains('show-all')")
    assert page.text_content("button.toggle-columns") == "Show headline metrics"
    assert page.is_visible(f"{SCENARIOS} th.extra") and page.is_visible(f"{SCENARIOS} tbody td.extra")
    page.click(header(SCENARIOS, 6))  # an extra column sorts like any other
    assert sort_state(page, SCENARIOS)[5] == "ascending"
    page.click("button.toggle-columns")
    assert page.text_content("button.toggle-columns") == "Show all metrics"
    assert page.is_hidden(f"{SCENARIOS} th.extra")


def test_the_tabs_switch_sections_and_set_the_hash(page):
    page.click("nav.tabs button[data-tab='odcn2025']")
    assert page.is_hidden("#suite-nara2022") and page.is_visible("#suite-odcn2025")
    assert page.get_attribute("nav.tabs button[data-tab='odcn2025']", "aria-selected") == "true"
    assert page.get_attribute("nav.tabs button[data-tab='nara2022']", "aria-selected") == "false"
    assert page.evaluate("location.hash") == "#suite-odcn2025"
    page.click("nav.tabs button[data-tab='nara2022']")
    assert page.is_visible("#suite-nara2022") and page.is_hidden("#suite-odcn2025")
    assert page.evaluate("location.hash") == "#suite-nara2022"
    page.go_back()  # the hash's history switches the tab too
    page.wait_for_function("location.hash === '#suite-odcn2025'")
    page.wait_for_selector("#suite-odcn2025", state="visible")
    assert page.is_hidden("#suite-nara2022")


@pytest.mark.parametrize("fragment, shown", [("suite-odcn2025", "odcn2025"), ("suite-nara2022", "nara2022"),
                                             ("overall-odcn2025", "odcn2025"), ("no-such-suite", "nara2022")])
def test_the_hash_at_load_picks_the_suite(chromium_browser, page_file, fragment, shown):
    page = open_page(chromium_browser, page_file, fragment)
    visible = page.evaluate("[...document.querySelectorAll('section.suite')].filter(s => !s.hidden)"
                            ".map(s => s.dataset.suite)")
    assert visible == [shown]
    assert page.get_attribute(f"nav.tabs button[data-tab='{shown}']", "aria-selected") == "true"
    assert page.js_errors == []
    page.context.close()


def test_the_page_never_scrolls_sideways(page):
    width = "document.scrollingElement.scrollWidth"
    assert page.evaluate(width) <= 1400
    page.click("button.toggle-columns")
    assert page.evaluate(f"document.querySelector('{SCENARIOS}').scrollWidth") > 1400  # wider than the window...
    wrap = page.evaluate(f"(w => [w.scrollWidth, w.clientWidth])(document.querySelector('{SCENARIOS}').parentElement)")
    assert wrap[0] > wrap[1]  # ...so its wrapper scrolls
    assert page.evaluate(width) <= 1400  # and the page does not
    assert page.evaluate("parseFloat(getComputedStyle(document.body).width)") == 84 * 16  # its max-width


def test_a_focused_header_sorts_on_enter_and_space(page):
    page.focus(header(OVERALL, 5))
    page.keyboard.press("Enter")
    assert sort_state(page, OVERALL)[4] == "ascending" and allocators(page)[0] == "random"
    page.keyboard.press("Space")
    assert sort_state(page, OVERALL)[4] == "descending" and allocators(page)[0] == "gnn_ppo"
    page.keyboard.press("Shift+Tab")  # the previous header is reachable with the keyboard
    assert page.evaluate("document.activeElement.closest('th').cellIndex") == 3
    page.keyboard.press("Enter")
    assert sort_state(page, OVERALL) == [None, None, None, "ascending", None, None, None]


def test_images_loaded_reports_every_image(chromium_browser, tmp_path):
    for images, loaded in ((f'<img src="{PIXEL}" alt="plot">', "true"),
                           (f'<img src="{PIXEL}" alt="plot"><img src="missing.png" alt="gone">', "false")):
        path = tmp_path / f"page-{loaded}.html"
        path.write_text(inline_static(contract_page()).replace("<h2>Submissions</h2>", images + "<h2>Submissions</h2>"))
        page = open_page(chromium_browser, path)
        page.wait_for_function("document.body.dataset.imagesLoaded !== undefined")
        assert page.evaluate("document.body.dataset.imagesLoaded") == loaded
        page.context.close()


def test_the_script_works_from_the_head_too(chromium_browser, tmp_path):
    page_text = contract_page().replace("<script>/*SCRIPT*/</script>", "")
    page_text = page_text.replace("</style>", "</style><script>/*SCRIPT*/</script>")
    path = tmp_path / "head.html"
    path.write_text(inline_static(page_text))
    page = open_page(chromium_browser, path, "suite-odcn2025")
    assert page.is_visible("#suite-odcn2025") and page.is_hidden("#suite-nara2022")
    assert page.text_content(".shown-count") == "6 of 6 entries" and page.js_errors == []
    page.context.close()


def test_without_javascript_everything_shows(chromium_browser, page_file):
    page = open_page(chromium_browser, page_file, javascript=False)
    assert page.is_visible("#suite-nara2022") and page.is_visible("#suite-odcn2025")
    assert page.is_visible(f"{SCENARIOS} th.extra")  # the full table, scrolling in its wrapper
    assert page.is_hidden(".filters") and page.is_hidden("button.toggle-columns")  # controls that would do nothing
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1400
    page.context.close()
