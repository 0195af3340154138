"""The tiered papers' figures of a sweep on tiered fabrics: Fig. 2
(acceptance, CPU and memory utilisation), Fig. 3 (link utilisation per
tier), Fig. 5 (spread of the accepted requests) and Fig. 8 (acceptance
by request size, with the requests offered). Declared by the ``tiered`` topology and its suites as
``"dcbench.plugins.topologies.tiered_figures:FIGURES"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from dcbench.harness import (
    Colours,
    allocator_labels,
    dodge,
    mean_ci,
    mean_over,
    metric_panels,
    plain,
    points,
    pyplot,
    save_figure,
    seeds_text,
)

Row = dict[str, Any]

FILES = ("fig2_acceptance_cpu_memory.png", "fig3_link_utilisation.png", "fig5_spread.png", "fig8_size_brackets.png")
GROUPED_XLABEL = "oversubscription, in groups by channels per server link"
FIG2_PANELS = (("acceptance_ratio", "acceptance"), ("cpu_util", "CPU util."), ("mem_util", "memory util."))
FIG3_PANELS = (("link_util_tier1", "tier 1 (server-rack)"), ("link_util_tier2", "tier 2 (rack-agg.)"),
               ("link_util_tier3", "tier 3 (agg.-core)"))
SPREAD_COLUMNS = ("spread_server", "spread_rack", "spread_pod", "spread_cross_pod")
BRACKETS = range(1, 9)  # request sizes in servers' worth, the last one 8 or more (`dcbench.plugins.metrics.acceptance`)
BRACKET_COLUMNS = tuple(f"{kind}_size_{k}" for kind in ("acceptance", "accepted") for k in BRACKETS)


def topology_label(row: Row) -> str:
    """The papers' naming: channels per server link over the oversubscription
    label ('8\\n1:4'); the scenario's label for a row of another fabric."""
    channels = re.search(r"channels=(\d+)", row["topology"])
    ratio = re.search(r"ratio=1x(\d+)", row["topology"])
    if channels and ratio:
        return f"{channels.group(1)}\n1:{ratio.group(1)}"
    return row.get("scenario", row["topology"])


def ratio_label(row: Row) -> str:
    """The oversubscription label of a tiered row ('1:16'), the topology label of another."""
    return topology_label(row).split("\n")[-1]


def channels(row: Row) -> int | None:
    """Channels per server link of a tiered row's topology, None for any other."""
    found = re.search(r"channels=(\d+)", row["topology"])
    return int(found.group(1)) if found else None


def parameters(spec: str, prefix: str = "") -> dict[str, str]:
    """A resolved spec's plugin and options by name: 'tiered:channels=8,pods=2'
    gives {'topology': 'tiered', 'channels': '8', 'pods': '2'} (with prefix
    'workload ', a workload's: {'workload': 'uniform', 'workload pairs': ...})."""
    name, _, arguments = spec.partition(":")
    pairs = (argument.split("=", 1) for argument in arguments.split(",") if "=" in argument)
    return {prefix.strip() or "topology": name, **{prefix + key: value for key, value in pairs}}


def fabric_groups(rows: Sequence[Row]) -> dict[str, str]:
    """Each scenario's group on the x axis of Figs. 2 and 3, by name: the
    scenarios whose topologies differ only in oversubscription, under one
    workload, named by what tells the groups apart ('8 channels per server
    link' in the suites). A scenario of a topology without an
    oversubscription gets '' (a group of its own)."""
    described = {r["scenario"]: {**parameters(r["topology"]), **parameters(r.get("workload", ""), "workload ")}
                 for r in rows if "ratio=" in r["topology"]}
    for options in described.values():
        del options["ratio"]
    names = list(dict.fromkeys(name for options in described.values() for name in options))
    differing = [name for name in names if len({options.get(name) for options in described.values()}) > 1]

    def group_name(options: dict[str, str]) -> str:
        if set(differing) <= {"channels"} and "channels" in options:
            return f"{options['channels']} channels per server link"
        return ", ".join(f"{name}={options.get(name, '')}" for name in differing)

    return {r["scenario"]: group_name(described[r["scenario"]]) if r["scenario"] in described else "" for r in rows}


def finite(value: Any) -> bool:
    """Whether ``value`` is a number and no NaN (a summary's empty cell is None or NaN)."""
    return value is not None and value == value


def offered(rows: Sequence[Row], bracket: int) -> tuple[int, bool]:
    """The measured requests offered in ``bracket`` to one scenario's runs, every seed's once, and whether that is
    exact. A run's count is ``accepted_size_k / acceptance_size_k``; every allocator of a seed is offered the same
    requests (one is skipped only where it exceeds the whole capacity), so a seed's count is read off any of its runs
    that accepted one. A seed none of whose runs did counts 1, the least a share of 0 rests on (not exact); one
    whose share is NaN had none.

    Args:
        rows: The summary rows of one scenario.
        bracket: The request size, 1 to 8.

    Returns:
        (the count, whether it is exact rather than a least count).
    """
    counts: dict[Any, int] = {}
    unknown = set()
    for row in rows:
        share, accepted = row.get(f"acceptance_size_{bracket}"), row.get(f"accepted_size_{bracket}")
        if not finite(share):
            counts.setdefault(row.get("seed"), 0)
        elif share > 0 and finite(accepted):
            counts[row.get("seed")] = max(counts.get(row.get("seed"), 0), round(accepted / share))
        else:
            unknown.add(row.get("seed"))
    unknown -= {seed for seed, count in counts.items() if count}
    return sum(counts.values()) + len(unknown), not unknown


def size_brackets(rows: list[Row], path: Path, title: str, colours: Colours,
                  defaults: Mapping[str, str] | None = None) -> Path:
    """Fig. 8: acceptance by request size, one panel per topology. At each size every allocator's share of the
    requests offered in it (``acceptance_size_k``) is a marker at its mean over seeds with its 95% CI, the allocators
    side by side and no line between sizes; above each size, the requests offered in it (`offered`), all seeds
    together (a '≥' where a seed's count is unknown), so that a share of few requests reads as such."""
    plt = pyplot()
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    shown = allocator_labels(allocators, defaults)
    columns = 4 if len(scenarios) > 4 else len(scenarios)
    lines = -(-len(scenarios) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(3.2 * columns, 2.6 * lines + 0.4), sharey=True,
                                squeeze=False)
    for position, scenario in enumerate(scenarios):
        axis = axes[position // columns][position % columns]
        of_scenario = [r for r in rows if r["scenario"] == scenario]
        for index, (allocator, offset) in enumerate(zip(allocators, dodge(len(allocators)))):
            chosen = [r for r in of_scenario if r["allocator"] == allocator]
            cells = [mean_ci(r.get(f"acceptance_size_{k}") for r in chosen)[:2] for k in BRACKETS]
            points(axis, [k + offset for k in BRACKETS], cells, colours.of(allocator, index),
                   colours.shares(allocator, allocators), plain(shown[allocator]))
        for k in BRACKETS:
            count, exact = offered(of_scenario, k)
            axis.text(k, 1.01, f"{count:,}" if exact else f"≥{count:,}", transform=axis.get_xaxis_transform(),
                      ha="center", va="bottom", fontsize=6, color="0.3")
        axis.set_title(plain(topology_label(of_scenario[0]).replace("\n", " ch, ")), fontsize=9, pad=11)
        axis.set_xticks(list(BRACKETS), [str(k) for k in BRACKETS[:-1]] + [f"{BRACKETS[-1]}+"])
        axis.set_xlim(BRACKETS[0] - 0.5, BRACKETS[-1] + 0.5)
        axis.set_ylim(-0.04, 1.04)
        axis.grid(axis="y", alpha=0.3)
    for axis in axes[-1]:
        axis.set_xlabel("request size (servers' worth)")
    for line in axes:
        line[0].set_ylabel("acceptance ratio")
    for extra in range(len(scenarios), lines * columns):
        axes[extra // columns][extra % columns].axis("off")
    axes[0][0].legend(fontsize=7, loc="lower left")
    figure.suptitle(plain(title), fontsize=10)
    figure.tight_layout()
    save_figure(figure, path, dpi=110)
    plt.close(figure)
    return path


def ratio_order(ratio: str) -> tuple[float, str]:
    """Sorts '1:1', '1:4', '1:16' by how oversubscribed; other labels after them, as they are."""
    found = re.fullmatch(r"1:(\d+)", ratio)
    return (float(found.group(1)), "") if found else (float("inf"), ratio)


def greys(count: int) -> list[tuple[float, float, float]]:
    """``count`` greys from light to dark: an order, in no hue an allocator is drawn in."""
    levels = [0.55] if count == 1 else [0.88 - 0.7 * i / (count - 1) for i in range(count)]
    return [(level, level, level) for level in levels]


def averaged_over(rows: Sequence[Row]) -> str:
    """What a bar of the spread figure is the mean of, stated from ``rows``:
    "the 15 runs' shares at one oversubscription (8, 16, 32 channels per server link × seeds 0–4)"."""
    measured = [r for r in rows if mean_ci([r["spread_rack"]])[2]]  # a run that accepted nothing has no shares
    runs = {len([r for r in measured if r["allocator"] == a and ratio_label(r) == ratio])
            for a in dict.fromkeys(r["allocator"] for r in rows) for ratio in dict.fromkeys(map(ratio_label, rows))}
    counts = sorted({count for r in rows if (count := channels(r)) is not None})
    of_channels = f"{', '.join(map(str, counts))} channels per server link × " if counts else ""
    number = f"{runs.pop()}" if len(runs) == 1 else f"{min(runs)} to {max(runs)}"
    return f"the {number} runs' shares at one oversubscription ({of_channels}{seeds_text(rows)})"


def spread(rows: list[Row], path: Path, title: str, colours: Colours, defaults: Mapping[str, str] | None = None
           ) -> Path:
    """Fig. 5: share of accepted requests at each spread level, per allocator
    and oversubscription (every topology of a ratio together). The ratios
    are greys, light to dark as oversubscription grows, so that no bar
    takes the colour of an allocator."""
    plt = pyplot()
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    shown = allocator_labels(allocators, defaults)
    ratios = sorted(dict.fromkeys(ratio_label(r) for r in rows), key=ratio_order)
    shades = greys(len(ratios))
    figure, axes = plt.subplots(1, len(allocators), figsize=(max(9.0, 3.2 * len(allocators)), 3.2), sharey=True,
                                squeeze=False)
    width = 0.8 / len(ratios)
    for index, allocator in enumerate(allocators):
        axis = axes[0][index]
        for r_index, ratio in enumerate(ratios):
            chosen = [r for r in rows if r["allocator"] == allocator and ratio_label(r) == ratio]
            shares = [mean_ci(r[level] for r in chosen)[0] for level in SPREAD_COLUMNS]
            axis.bar([i - 0.4 + width * (r_index + 0.5) for i in range(len(SPREAD_COLUMNS))], shares, width,
                     color=shades[r_index], edgecolor="black", linewidth=0.5, label=plain(ratio))
        axis.set_xticks(range(len(SPREAD_COLUMNS)))
        axis.set_xticklabels(["server", "rack", "pod", "across\npods"], fontsize=8)
        axis.set_title(plain(shown[allocator]), color=colours.of(allocator, index))
    axes[0][0].set_ylabel("share of accepted requests")
    axes[0][0].legend(title="oversubscription", fontsize=7, title_fontsize=7)
    figure.suptitle(plain(title) + "\n" + plain(f"each bar: the mean of {averaged_over(rows)}"), fontsize=10)
    figure.tight_layout()
    save_figure(figure, path, dpi=110)
    plt.close(figure)
    return path


@dataclass(frozen=True)
class TieredFigures:
    """Figs. 2, 3, 5 and 8 of the tiered papers (`dcbench.harness.Figures`)."""

    xlabel: str = "topology (channels per server link / oversubscription)"
    columns: tuple[str, ...] = (tuple(column for column, _ in FIG2_PANELS + FIG3_PANELS) + SPREAD_COLUMNS
                                + BRACKET_COLUMNS)

    def tick_label(self, row: Row) -> str:
        return topology_label(row)

    def files(self, rows: list[Row]) -> list[str]:
        return list(FILES)

    def draw(self, rows: list[Row], out_dir: Path, name: str, defaults: Mapping[str, str] | None,
             colours: Colours) -> list[Path]:
        fig2, fig3, fig5, fig8 = (out_dir / file_name for file_name in FILES)
        over = mean_over(rows)
        groups = fabric_groups(rows)

        def group(row: Row) -> str:
            return groups[row["scenario"]]

        return [
            metric_panels(rows, FIG2_PANELS, fig2, f"{name}: acceptance and utilisation, {over}", colours,
                          xlabel=GROUPED_XLABEL, defaults=defaults, group_by=group, tick_label=ratio_label),
            metric_panels(rows, FIG3_PANELS, fig3, f"{name}: link utilisation per tier, {over}", colours,
                          xlabel=GROUPED_XLABEL, defaults=defaults, group_by=group, tick_label=ratio_label),
            spread(rows, fig5, f"{name}: spread of accepted requests by oversubscription", colours, defaults),
            size_brackets(rows, fig8, f"{name}: acceptance by request size, {over}\n"
                          f"above each size: the requests offered in it, {seeds_text(rows)} together", colours,
                          defaults),
        ]


FIGURES = TieredFigures()
