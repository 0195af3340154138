/* dcbench leaderboard page: suite tabs, sortable and filterable tables, a column toggle.
   Plain JavaScript, no libraries, no network: the page is opened from disk. Without it the page
   still reads: every suite is shown, the tables in their published order, all columns visible. */
"use strict";
document.documentElement.classList.add("js");  // the CSS hides the extra columns and shows the controls only then

(() => {
  const collator = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});

  /* Tabs: one section.suite shown at a time, the one location.hash names (or holds), else the first. */
  function setUpTabs() {
    const sections = [...document.querySelectorAll("section.suite")];
    const buttons = [...document.querySelectorAll("nav.tabs button[data-tab]")];
    if (sections.length === 0) return;
    document.querySelector("nav.tabs")?.setAttribute("role", "tablist");  // a tab widget only with JS
    for (const section of sections) section.setAttribute("role", "tabpanel");
    const show = (suite) => {
      for (const section of sections) section.hidden = section.dataset.suite !== suite;
      for (const button of buttons) button.setAttribute("aria-selected", String(button.dataset.tab === suite));
    };
    const fromHash = () => {
      let target = null;
      try {
        target = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
      } catch (error) { /* a malformed %-escape: no target */ }
      const section = target && target.closest("section.suite");
      return section ? section.dataset.suite : null;
    };
    for (const button of buttons) {
      button.setAttribute("role", "tab");
      button.setAttribute("aria-controls", "suite-" + button.dataset.tab);
      button.addEventListener("click", () => {
        show(button.dataset.tab);
        location.hash = "suite-" + button.dataset.tab;
      });
    }
    window.addEventListener("hashchange", () => { const suite = fromHash(); if (suite) show(suite); });
    show(fromHash() || sections[0].dataset.suite);
  }

  /* Sorting: a number column by its cells' data-value (else their text), empty or "nan" last either way. */
  function sortKey(cell, numeric) {
    const raw = cell ? (cell.dataset.value ?? cell.textContent) : "";
    if (!numeric) return raw.trim();
    const text = raw.trim().replace(/\u2212/g, "-").replace(/,/g, "");
    const number = text === "" ? NaN : parseFloat(text);
    return Number.isNaN(number) ? null : number;
  }

  function sortBy(table, header, ascending) {
    const column = header.cellIndex;
    const numeric = header.dataset.type === "number";
    const sign = ascending ? 1 : -1;
    for (const body of table.tBodies) {
      const keyed = [...body.rows].map((row) => ({row, key: sortKey(row.cells[column], numeric)}));
      keyed.sort((a, b) => {  // Array.prototype.sort is stable: ties keep their current order
        if (a.key === null || b.key === null) return (a.key === null) - (b.key === null);
        return sign * (numeric ? a.key - b.key : collator.compare(a.key, b.key));
      });
      body.append(...keyed.map((item) => item.row));
    }
    for (const other of header.parentElement.cells) {
      if (other !== header) other.removeAttribute("aria-sort");
    }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function setUpSorting(table) {
    const headers = table.tHead ? [...table.tHead.querySelectorAll("th[data-type]")] : [];
    for (const header of headers) {
      if (header.dataset.type === "number") {
        for (const body of table.tBodies) {
          for (const row of body.rows) row.cells[header.cellIndex]?.classList.add("num");
        }
      }
      const button = document.createElement("button");  // keyboard-reachable: Tab, then Enter or Space
      button.type = "button";
      button.className = "sort";
      button.append(...header.childNodes);
      header.append(button);
      button.addEventListener("click", () => sortBy(table, header, header.getAttribute("aria-sort") !== "ascending"));
    }
  }

  /* Filters: a row shows when its text holds the search text and its data-kind is the one selected. */
  function setUpFilters(box) {
    const table = document.getElementById(box.dataset.table);
    if (!table) return;
    const search = box.querySelector("input.text-filter");
    const kind = box.querySelector("select.kind-filter");
    const count = box.querySelector(".shown-count");
    const apply = () => {
      const needle = (search ? search.value : "").trim().toLowerCase();
      const wanted = kind ? kind.value : "";
      let shown = 0, total = 0;
      for (const body of table.tBodies) {
        for (const row of body.rows) {
          const match = row.textContent.toLowerCase().includes(needle) && (!wanted || row.dataset.kind === wanted);
          row.hidden = !match;
          shown += match;
          total += 1;
        }
      }
      if (count) count.textContent = `${shown} of ${total} entries`;
    };
    search?.addEventListener("input", apply);
    kind?.addEventListener("change", apply);
    window.addEventListener("pageshow", apply);  // the browser may restore the controls' values on reload
    apply();
  }

  /* The column toggle: the table's .extra cells show only while it has the class show-all. */
  function setUpToggle(button) {
    const table = document.getElementById(button.dataset.table);
    if (!table) return;
    button.setAttribute("aria-controls", table.id);
    const label = () => {
      button.textContent = table.classList.contains("show-all") ? "Show headline metrics" : "Show all metrics";
    };
    button.addEventListener("click", () => { table.classList.toggle("show-all"); label(); });
    label();
  }

  function setUp() {
    setUpTabs();
    document.querySelectorAll("table.sortable").forEach(setUpSorting);
    document.querySelectorAll(".filters[data-table]").forEach(setUpFilters);
    document.querySelectorAll("button.toggle-columns[data-table]").forEach(setUpToggle);
    document.body.dataset.ready = "true";  // the browser tests wait for this
  }

  // Lets a headless browser (and a person's console) confirm that every plot loaded.
  window.addEventListener("load", () => {
    document.body.dataset.imagesLoaded = [...document.images].every((image) => image.complete && image.naturalWidth > 0);
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
