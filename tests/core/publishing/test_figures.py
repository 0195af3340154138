"""The figures draw scenarios as categories: each allocator's mean over seeds as a marker with its 95% interval,
the allocators side by side, and no line between two scenarios; Fig. 8 shows acceptance by size with the requests
offered."""

import pytest

from dcbench.running.stats import mean_ci
from tests.core.publishing.test_report_plots import drawn_figures, paper_colours

SEEDS = (0, 1, 2)




def draw_suite(rows, out_dir, suite):
    from dcbench.publishing.figures import plot_sweep, suite_figures
    from dcbench.registry import get_registry

    return plot_sweep(rows, out_dir, suite, suite_figures(get_registry().entries("suite")[suite]), paper_colours())


def tiered_rows(allocators=("tetris", "random")):
    """Twelve tiered scenarios, each metric varying with the seed (so that every point has an interval)."""
    rows = []
    for channels in (8, 16, 32):
        for ratio in (1, 4, 8, 16):
            for allocator in allocators:
                for seed in SEEDS:
                    value = channels / 100 + ratio / 1000 + seed / 100
                    rows.append({"scenario": f"{channels}-1x{ratio}", "allocator": allocator, "seed": seed,
                                 "topology": f"tiered:channels={channels},ratio=1x{ratio},pods=2,racks=2",
                                 "workload": "uniform:pairs=reference",
                                 **{column: value for column in (
                                     "acceptance_ratio", "cpu_util", "mem_util", "link_util_tier1", "link_util_tier2",
                                     "link_util_tier3", "spread_server", "spread_rack", "spread_pod",
                                     "spread_cross_pod")},
                                 **{f"accepted_size_{k}": float((5 + 2 * seed) * k) for k in range(1, 9)},
                                 **{f"acceptance_size_{k}": (5 + 2 * seed) / 20 for k in range(1, 9)}})  # 20k
    return rows


def odcn_rows():
    """The odcn2025 leaderboard's scenarios: loads of 16 ToRs, then one load of 32 and one of 64 ToRs."""
    scenarios = [(16, 54), (16, 60), (16, 66), (32, 300), (64, 1320)]
    return [{"scenario": f"{tors}-load{load}", "allocator": allocator, "seed": seed,
             "topology": f"ocs:tors={tors},servers={2 * tors}", "workload": f"vmjobs:load={load}",
             "blocking_probability": tors / 1000 + load / 10_000 + seed / 100 + (0.05 if allocator == "jcb" else 0),
             "latency_us": 0.1 + seed / 100, "packet_loss": 0.01 + seed / 100,
             "reconfigurations_per_job": 0.5 + seed / 100}
            for tors, load in scenarios for allocator in ("ccf:reconfigure=no", "jcb", "a2c_multistep")
            for seed in SEEDS]


def joining_lines(figure):
    """Every line of ``figure`` that runs between two x's: a line between points, or a slanted error bar. A
    vertical line (a group's separator, an error bar) or a lone marker joins nothing."""
    joins = []
    for axis in figure.axes:
        for line in axis.lines:
            if line.get_linestyle() not in ("None", "", " ") and len({float(x) for x in line.get_xdata()}) > 1:
                joins.append((axis.get_ylabel(), line.get_label(), list(line.get_xdata())))
        for collection in axis.collections:
            for segment in collection.get_segments():
                if len({round(float(x), 9) for x, _ in segment}) > 1:
                    joins.append((axis.get_ylabel(), "segment", segment.tolist()))
    return joins


def series(axis):
    """Each allocator's points on ``axis``: (label, their data line, their error-bar segments)."""
    return [(container.get_label(), container.lines[0], container.lines[2][0].get_segments())
            for container in axis.containers if hasattr(container, "has_yerr")]


def test_no_figure_of_a_sweep_joins_two_scenarios_and_every_point_has_its_interval(tmp_path, monkeypatch):
    figures = drawn_figures(monkeypatch)
    draw_suite(tiered_rows(), tmp_path / "tiered", "nara2022")
    draw_suite(odcn_rows(), tmp_path / "ocs", "odcn2025")
    assert {"fig2_acceptance_cpu_memory.png", "fig3_link_utilisation.png", "fig8_size_brackets.png",
            "jobs_16x32.png", "jobs_32x64.png", "jobs_64x128.png"} <= set(figures)
    for name, figure in figures.items():
        assert joining_lines(figure) == [], name
        if name == "fig5_spread.png":  # bars, one per ratio and level
            continue
        for axis in figure.axes:
            for label, line, segments in series(axis):
                finite = [y for y in line.get_ydata() if y == y]
                assert finite and len(segments) == len(line.get_ydata()), (name, label)  # an error bar a point
                assert all(high > low for (_, low), (_, high) in segments), (name, label)  # seeds differ: a width


def test_the_leaderboards_plot_of_loads_of_three_networks_draws_each_as_a_category_with_its_interval(
        tmp_path, monkeypatch):
    from dcbench.plugins.topologies.ocs_figures import ODCN2025
    from dcbench.publishing.figures import metric_panels

    figures = drawn_figures(monkeypatch)
    rows = odcn_rows()
    # as the leaderboard draws it
    metric_panels(rows, [("blocking_probability", "blocking probability")], tmp_path / "odcn2025.png", "odcn2025",
                  paper_colours(), xlabel=ODCN2025.xlabel, tick_label=ODCN2025.tick_label)
    (axis,) = figures["odcn2025.png"].axes
    assert joining_lines(figures["odcn2025.png"]) == []
    ticks = [tick.get_text() for tick in axis.get_xticklabels()]
    assert ticks == ["54", "60", "66", "300", "1320"]
    centres = list(axis.get_xticks())
    drawn = series(axis)
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    assert [label for label, _, _ in drawn] == ["ccf", "jcb", "a2c_multistep"]  # named without their defaults
    for index, scenario in enumerate(dict.fromkeys(r["scenario"] for r in rows)):
        xs = [line.get_xdata()[index] for _, line, _ in drawn]
        assert xs == sorted(set(xs)) and all(abs(x - centres[index]) < 0.5 for x in xs)  # side by side, in its slot
        for allocator, (_, line, segments), x in zip(allocators, drawn, xs):
            mean, half, _ = mean_ci(r["blocking_probability"] for r in rows
                                    if r["scenario"] == scenario and r["allocator"] == allocator)
            (bar_x, low), (_, high) = segments[index]
            assert line.get_ydata()[index] == pytest.approx(mean) and bar_x == x
            assert (low, high) == pytest.approx((mean - half, mean + half))  # the tables' interval: Student's t


def test_a_variant_sharing_an_earlier_allocators_colour_is_drawn_in_open_squares(tmp_path, monkeypatch):
    from dcbench.publishing.figures import metric_panels

    figures = drawn_figures(monkeypatch)
    rows = [{**row, "allocator": "tetris:fit_last=yes" if row["allocator"] == "random" else "tetris:fit_last=no"}
            for row in tiered_rows()]
    metric_panels(rows, [("acceptance_ratio", "acceptance")], tmp_path / "board.png", "board", paper_colours())
    (axis,) = figures["board.png"].axes
    (_, first, _), (_, second, _) = series(axis)
    assert first.get_color() == second.get_color()
    assert (first.get_marker(), second.get_marker()) == ("o", "s") and second.get_markerfacecolor() == "white"


def size_rows():
    """One tiered scenario of three seeds whose seed s offers 2(k + s) requests of size k = 1..6 (tetris accepts
    half, random all up to size 3 and none above), none of size 7 and some of size 8 that no allocator accepts."""
    rows = []
    for allocator in ("tetris", "random"):
        for seed in SEEDS:
            row = tiered_rows(("tetris",))[seed] | {"allocator": allocator}
            for k in range(1, 7):
                share = 0.5 if allocator == "tetris" else float(k <= 3)
                row[f"acceptance_size_{k}"], row[f"accepted_size_{k}"] = share, share * 2 * (k + seed)
            row["acceptance_size_7"], row["accepted_size_7"] = float("nan"), 0.0
            row["acceptance_size_8"], row["accepted_size_8"] = 0.0, 0.0
            rows.append(row)
    return rows


def test_fig8_draws_acceptance_ratios_by_size_with_the_requests_offered_in_each(tmp_path, monkeypatch):
    from dcbench.plugins.topologies.tiered_figures import offered

    figures = drawn_figures(monkeypatch)
    rows = size_rows()
    draw_suite(rows, tmp_path, "nara2022")
    figure = figures["fig8_size_brackets.png"]
    (axis,) = [axis for axis in figure.axes if axis.get_title()]
    assert axis.get_title() == "8 ch, 1:1" and axis.get_ylabel() == "acceptance ratio"
    assert joining_lines(figure) == []
    drawn = {label: list(line.get_ydata()) for label, line, _ in series(axis)}
    nan = float("nan")
    assert drawn["tetris"] == pytest.approx([0.5] * 6 + [nan, 0.0], nan_ok=True)  # ratios, not counts
    assert drawn["random"] == pytest.approx([1.0] * 3 + [0.0] * 3 + [nan, 0.0], nan_ok=True)
    assert all(0 <= y <= 1 for ys in drawn.values() for y in ys if y == y)
    offered_texts = [text.get_text() for text in axis.texts]
    assert offered_texts == [str(sum(2 * (k + seed) for seed in SEEDS)) for k in range(1, 7)] + ["0", "≥3"]
    assert offered(rows, 1) == (12, True) and offered(rows, 7) == (0, True) and offered(rows, 8) == (3, False)
    assert [tick.get_text() for tick in axis.get_xticklabels()] == ["1", "2", "3", "4", "5", "6", "7", "8+"]
    title = figure._suptitle.get_text()
    assert "mean over seeds 0–2 with 95% CI" in title and "offered" in title and "summed" not in title


def test_fig8_reads_a_seeds_offered_count_off_any_allocator_that_accepted_one_of_its_requests():
    from dcbench.plugins.topologies.tiered_figures import offered

    rows = [{"seed": 0, "acceptance_size_4": 0.0, "accepted_size_4": 0.0},  # this one accepted none: unknown
            {"seed": 0, "acceptance_size_4": 0.25, "accepted_size_4": 2.0},  # ... but this one tells: 8
            {"seed": 1, "acceptance_size_4": 0.0, "accepted_size_4": 0.0}]  # and none of seed 1's: at least 1
    assert offered(rows, 4) == (9, False)
    assert offered(rows[:2], 4) == (8, True)
