"""Figures in the style of the papers, drawn from a sweep's combined summary.

matplotlib is imported only here (``pip install 'dcbench[plot]'``).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Callable, Hashable, Mapping, Sequence

from dcbench.errors import DcbenchError, ResultsError
from dcbench.harness.files import write_atomic
from dcbench.harness.paths import check_regular_file, check_writable
from dcbench.harness.report import labels as allocator_labels
from dcbench.harness.stats import mean_ci

# The papers' colours: agent blue, Tetris orange, NALB green, NULB red, random purple;
# for the OCS family, ALL2ALL-CCF, ODCN-CCF and ODCN-JCB get their own, the A2C agent blue too.
PAPER_COLOURS = {"gnn_ppo": "C0", "tetris": "C1", "nalb": "C2", "nulb": "C3", "random": "C4",
                 "a2c_multistep": "C0", "ccf:reconfigure=no": "C7", "ccf": "C5", "jcb": "C6"}


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or a one-line error saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise DcbenchError("plotting needs matplotlib: pip install 'dcbench[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plain(text: str) -> str:
    """``text`` for matplotlib to show as it is: its '$' escaped, which would
    start mathtext (a '$…$' in an allocator's spec or a scenario's label is
    drawn as a formula, or fails to parse and the figure with it), and a
    leading '_' kept from hiding a legend's entry."""
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def topology_label(row: dict[str, Any]) -> str:
    """The papers' naming: channels per server link over the oversubscription label."""
    spec = row["topology"]
    channels = re.search(r"channels=(\d+)", spec)
    ratio = re.search(r"ratio=1x(\d+)", spec)
    if channels and ratio:
        return f"{channels.group(1)}\n1:{ratio.group(1)}"
    load = re.search(r"load=([0-9.]+)", row.get("workload", ""))
    if spec.startswith("ocs:") and load:
        return f"{float(load.group(1)):g}"
    return row.get("scenario", spec)


def colour(spec: str, index: int) -> str:
    if spec.startswith("ccf:") and "reconfigure=no" in spec:
        return PAPER_COLOURS["ccf:reconfigure=no"]
    return PAPER_COLOURS.get(spec.split(":")[0], f"C{8 + index % 2}")


def shares_colour(spec: str, specs: Sequence[str]) -> bool:
    """Whether an earlier allocator in ``specs`` has the same colour (a
    variant of the same paper method, say): this one is drawn dashed
    (hatched for bars)."""
    position = specs.index(spec)
    mine = colour(spec, position)
    return any(colour(other, index) == mine for index, other in enumerate(specs[:position]))


Series = dict[str, list[tuple[float, float]]]  # allocator -> (mean, CI half-width) per scenario


def _series(rows: list[dict[str, Any]], metric: str, scenarios: Sequence[str]) -> tuple[list[str], Series]:
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    values = {}
    for allocator in allocators:
        values[allocator] = []
        for scenario in scenarios:
            of_cell = (r[metric] for r in rows if r["scenario"] == scenario and r["allocator"] == allocator)
            mean, half, _ = mean_ci(of_cell)
            values[allocator].append((mean, 0.0 if half != half else half))
    return allocators, values


def channels(row: dict[str, Any]) -> int | None:
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


def fabric_groups(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Each scenario's group on the tiered figures' x axis, by name: the
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


def ratio_label(row: dict[str, Any]) -> str:
    """The oversubscription label of a tiered row ('1:16'), the topology label of another."""
    return topology_label(row).split("\n")[-1]


def seeds_text(rows: Sequence[dict[str, Any]]) -> str:
    """'seeds 0–4', 'seed 3' or 'seeds 0, 2, 7': the seeds of ``rows``."""
    seeds = sorted({int(r["seed"]) for r in rows if r.get("seed") is not None})
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(str(seed) for seed in seeds)


def mean_over(rows: Sequence[dict[str, Any]]) -> str:
    """What a point of a panel is: 'mean over seeds 0–4 with 95% CI', or one seed's value."""
    seeds = seeds_text(rows)
    return f"mean over {seeds} with 95% CI" if seeds.startswith("seeds") else f"{seeds} alone (no CI)"


def grouped(names: Sequence[str]) -> list[list[int]]:
    """The indices of ``names`` gathered by name, groups in the order their
    name first comes ([[0, 2], [1], ...]); an index named '' alone."""
    groups: dict[Hashable, list[int]] = {}
    for index, name in enumerate(names):
        groups.setdefault(name or index, []).append(index)
    return list(groups.values())


def positions(groups: list[list[int]]) -> list[float]:
    """The x of every scenario, indexed as ``groups`` index them: one apart
    within a group, with an empty slot between groups."""
    xs = [0.0] * sum(len(group) for group in groups)
    slot = 0
    for group in groups:
        for index in group:
            xs[index] = float(slot)
            slot += 1
        slot += 1
    return xs


GROUP_NAME_PAD = 18  # points between the x axis and a group's name: below the tick labels


def mark_groups(axes: Sequence[Any], groups: list[list[int]], xs: list[float], names: list[str]) -> None:
    """Separate the groups of scenarios: a vertical line in every panel in
    the gap between two groups, and each group's name below the bottom
    panel's tick labels."""
    for before, after in zip(groups, groups[1:]):
        for axis in axes:
            axis.axvline((xs[before[-1]] + xs[after[0]]) / 2, color="0.35", linewidth=1.0)
    if not any(names):
        return
    centres = [(xs[group[0]] + xs[group[-1]]) / 2 for group in groups]
    below = axes[-1].secondary_xaxis("bottom")
    below.set_xticks(centres, [plain(names[group[0]]) for group in groups])
    below.tick_params(length=0, pad=GROUP_NAME_PAD)
    below.spines["bottom"].set_visible(False)


def metric_panels(rows: list[dict[str, Any]], metrics: Sequence[tuple[str, str]], path: Path, title: str,
            xlabel: str = "topology (channels per server link / oversubscription)",
            defaults: Mapping[str, str] | None = None, group_by: Callable[[dict[str, Any]], str] | None = None,
            tick_label: Callable[[dict[str, Any]], str] = topology_label) -> Path:
    """One panel per metric: each allocator's mean and 95% CI per scenario,
    each scenario's tick labelled ``tick_label(row)``. With ``group_by``
    (a row's group's name, '' for none), the scenarios of a group are drawn
    side by side and joined by lines, the groups apart and never joined
    (the tiered figures: a group per number of channels, whose points are
    no continuum)."""
    plt = pyplot()
    figure, grid = plt.subplots(len(metrics), 1, figsize=(9, 2.6 * len(metrics) + (0.5 if len(metrics) == 1 else 0)),
                                sharex=True, squeeze=False)
    axes = grid[:, 0]
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    first_rows = [next(r for r in rows if r["scenario"] == s) for s in scenarios]
    groups = grouped([group_by(row) for row in first_rows]) if group_by else [list(range(len(scenarios)))]
    xs = positions(groups)
    for axis, (metric, ylabel) in zip(axes, metrics):
        allocators, values = _series(rows, metric, scenarios)
        shown = allocator_labels(allocators, defaults)
        for index, allocator in enumerate(allocators):
            for number, group in enumerate(groups):
                axis.errorbar([xs[i] for i in group], [values[allocator][i][0] for i in group],
                              yerr=[values[allocator][i][1] for i in group], marker="o", markersize=4, capsize=2,
                              linewidth=1.2, linestyle="--" if shares_colour(allocator, allocators) else "-",
                              color=colour(allocator, index), label=plain(shown[allocator]) if number == 0 else None)
        axis.set_ylabel(plain(ylabel))
        axis.grid(alpha=0.3)
    if group_by:
        mark_groups(axes, groups, xs, [group_by(row) for row in first_rows])
    ticks = sorted(zip(xs, (tick_label(row) for row in first_rows)))
    axes[-1].set_xticks([x for x, _ in ticks])
    axes[-1].set_xticklabels([plain(label) for _, label in ticks])
    axes[-1].set_xlabel(plain(xlabel), labelpad=GROUP_NAME_PAD + 6 if group_by else 4)  # below the group names
    handles, names = axes[0].get_legend_handles_labels()
    if len(metrics) == 1:  # the legend just above the axes
        axes[0].legend(handles, names, ncol=min(len(names), 5), fontsize=8, loc="lower center",
                       bbox_to_anchor=(0.5, 1.0), frameon=False)
        figure.suptitle(plain(title))
        figure.tight_layout()
    else:
        figure.legend(handles, names, ncol=min(len(names), 5), fontsize=8, loc="upper center",
                      bbox_to_anchor=(0.5, 0.965), frameon=False)
        figure.suptitle(plain(title))
        figure.tight_layout(rect=(0, 0, 1, 0.95))
    save_figure(figure, path, dpi=120)
    plt.close(figure)
    return path


def size_brackets(rows: list[dict[str, Any]], path: Path, title: str,
                  defaults: Mapping[str, str] | None = None) -> Path:
    """Accepted requests per size bracket, summed over seeds, one panel per topology."""
    plt = pyplot()
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    shown = allocator_labels(allocators, defaults)
    columns = 4 if len(scenarios) > 4 else len(scenarios)
    lines = -(-len(scenarios) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(3.2 * columns, 2.4 * lines), sharey=True, squeeze=False)
    width = 0.8 / len(allocators)
    brackets = range(1, 9)
    for position, scenario in enumerate(scenarios):
        axis = axes[position // columns][position % columns]
        for index, allocator in enumerate(allocators):
            chosen = [r for r in rows if r["scenario"] == scenario and r["allocator"] == allocator]
            counts = [sum(r.get(f"accepted_size_{k}", 0) for r in chosen) for k in brackets]
            axis.bar([k - 0.4 + width * (index + 0.5) for k in brackets], counts, width,
                     hatch="//" if shares_colour(allocator, allocators) else None,
                     color=colour(allocator, index), label=plain(shown[allocator]))
        axis.set_title(plain(topology_label(next(r for r in rows if r["scenario"] == scenario)).replace("\n", " ch, ")),
                       fontsize=9)
        axis.set_xticks(list(brackets))
    for axis in axes[-1]:
        axis.set_xlabel("request size (servers' worth)")
    for line in axes:
        line[0].set_ylabel("accepted requests")
    for extra in range(len(scenarios), lines * columns):
        axes[extra // columns][extra % columns].axis("off")
    axes[0][0].legend(fontsize=7)
    figure.suptitle(plain(title))
    figure.tight_layout()
    save_figure(figure, path, dpi=110)
    plt.close(figure)
    return path


SPREAD_COLUMNS = ("spread_server", "spread_rack", "spread_pod", "spread_cross_pod")


def ratio_order(ratio: str) -> tuple[float, str]:
    """Sorts '1:1', '1:4', '1:16' by how oversubscribed; other labels after them, as they are."""
    found = re.fullmatch(r"1:(\d+)", ratio)
    return (float(found.group(1)), "") if found else (float("inf"), ratio)


def greys(count: int) -> list[tuple[float, float, float]]:
    """``count`` greys from light to dark: an order, in no hue an allocator is drawn in."""
    levels = [0.55] if count == 1 else [0.88 - 0.7 * i / (count - 1) for i in range(count)]
    return [(level, level, level) for level in levels]


def averaged_over(rows: Sequence[dict[str, Any]]) -> str:
    """What a bar of the spread figure is the mean of, stated from ``rows``:
    "the 15 runs' shares at one oversubscription (8, 16, 32 channels per server link × seeds 0–4)"."""
    measured = [r for r in rows if mean_ci([r["spread_rack"]])[2]]  # a run that accepted nothing has no shares
    runs = {len([r for r in measured if r["allocator"] == a and ratio_label(r) == ratio])
            for a in dict.fromkeys(r["allocator"] for r in rows) for ratio in dict.fromkeys(map(ratio_label, rows))}
    counts = sorted({count for r in rows if (count := channels(r)) is not None})
    of_channels = f"{', '.join(map(str, counts))} channels per server link × " if counts else ""
    number = f"{runs.pop()}" if len(runs) == 1 else f"{min(runs)} to {max(runs)}"
    return f"the {number} runs' shares at one oversubscription ({of_channels}{seeds_text(rows)})"


def spread(rows: list[dict[str, Any]], path: Path, title: str, defaults: Mapping[str, str] | None = None
           ) -> Path:
    """Share of accepted requests at each spread level, per allocator and
    oversubscription (the tiered papers' Fig. 5: every topology of a ratio
    together). The ratios are greys, light to dark as oversubscription
    grows, so that no bar takes the colour of an allocator."""
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
        axis.set_title(plain(shown[allocator]), color=colour(allocator, index))
    axes[0][0].set_ylabel("share of accepted requests")
    axes[0][0].legend(title="oversubscription", fontsize=7, title_fontsize=7)
    figure.suptitle(plain(title) + "\n" + plain(f"each bar: the mean of {averaged_over(rows)}"), fontsize=10)
    figure.tight_layout()
    save_figure(figure, path, dpi=110)
    plt.close(figure)
    return path


JOB_PANELS = (("blocking_probability", "blocking prob."), ("latency_us", "latency (µs)"),
              ("packet_loss", "packet loss"), ("reconfigurations_per_job", "reconf. per job"))


def plot_jobs(rows: list[dict[str, Any]], out_dir: Path, name: str, defaults: Mapping[str, str] | None = None
              ) -> list[Path]:
    """The OCS paper's Figs. 5-7: blocking, latency, loss and reconfigurations
    against the load, one figure per network size."""
    paths = []
    for topology, (file_name, label) in job_figures(rows).items():
        chosen = [r for r in rows if r["topology"] == topology]
        paths.append(metric_panels(chosen, JOB_PANELS, out_dir / file_name,
                             f"{name}: {label}, {mean_over(chosen)}", xlabel="load (Erlangs)",
                             defaults=defaults))
    return paths


def job_figure(topology: str, index: int) -> tuple[str, str]:
    """The file name and title of the ``index``-th network size's figure."""
    tors = re.search(r"tors=(\d+)", topology)
    servers = re.search(r"servers=(\d+)", topology)
    if tors and servers:
        return f"jobs_{tors.group(1)}x{servers.group(1)}.png", f"{tors.group(1)} ToRs × {servers.group(1)} servers"
    return f"jobs_{index}.png", topology


TIERED_FIGURES = ("fig2_acceptance_cpu_memory.png", "fig3_link_utilisation.png", "fig5_spread.png",
                  "fig8_size_brackets.png")


def job_figures(rows: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Each topology's figure (`job_figure`); topologies of one size that
    differ otherwise (an ad-hoc sweep of ``ocs:16`` and ``ocs:16,
    reconfigurable=no``) are named by their place and spec, so that neither
    figure replaces the other."""
    topologies = list(dict.fromkeys(r["topology"] for r in rows))
    named = {topology: job_figure(topology, index) for index, topology in enumerate(topologies)}
    files = [name for name, _ in named.values()]
    return {topology: (name, label) if files.count(name) == 1 else (f"jobs_{index}.png", topology)
            for index, (topology, (name, label)) in enumerate(named.items())}


def figure_names(rows: list[dict[str, Any]]) -> list[str]:
    if is_job_sweep(rows):
        return [name for name, _ in job_figures(rows).values()]
    return list(TIERED_FIGURES)


def save_figure(figure: Any, path: Path, dpi: int) -> None:
    """Save as PNG atomically: an interrupted save leaves the previous figure whole."""
    write_atomic(path, lambda temporary: figure.savefig(temporary, dpi=dpi, format="png"))


TIERED_XLABEL = "oversubscription, in groups by channels per server link"
FIG2_PANELS = (("acceptance_ratio", "acceptance"), ("cpu_util", "CPU util."), ("mem_util", "memory util."))
FIG3_PANELS = (("link_util_tier1", "tier 1 (server-rack)"), ("link_util_tier2", "tier 2 (rack-agg.)"),
               ("link_util_tier3", "tier 3 (agg.-core)"))


def is_job_sweep(rows: list[dict[str, Any]]) -> bool:
    return "reconfigurations_per_job" in rows[0]


def check_rows(rows: list[dict[str, Any]]) -> None:
    """Fail before anything is drawn or made if the figures cannot be drawn from ``rows``."""
    if not rows:
        raise ResultsError("the summary has no rows; run the sweep first")
    metrics = JOB_PANELS if is_job_sweep(rows) else FIG2_PANELS + FIG3_PANELS
    needed = ("scenario", "allocator", "topology", *(column for column, _ in metrics),
              *(() if is_job_sweep(rows) else SPREAD_COLUMNS))
    missing = [column for column in needed if column not in rows[0]]
    if missing:
        raise ResultsError(f"the summary has no column {missing[0]!r}, which the figures need; "
                           "run the sweep again to rebuild it")


def plot_sweep(rows: list[dict[str, Any]], out_dir: Path, name: str, defaults: Mapping[str, str] | None = None
               ) -> list[Path]:
    """The papers' figures for a sweep: Figs. 2, 3, 5 and 8 of the tiered
    papers, or Figs. 5-7 of the OCS paper for a sweep of jobs. Allocators
    are named as in the report (`dcbench.harness.report.labels`). A folder this
    makes is removed again if drawing fails."""
    check_rows(rows)
    made = outermost_missing(out_dir)
    check_writable(out_dir, "plots")  # first: a file where the folder goes is named as such, not by a figure
    for file_name in figure_names(rows):  # before any is replaced: all of them, or none
        check_regular_file(out_dir / file_name, "another --out, or move it")
    try:
        if is_job_sweep(rows):
            return plot_jobs(rows, out_dir, name, defaults)
        fig2, fig3, fig5, fig8 = (out_dir / file_name for file_name in TIERED_FIGURES)
        over = mean_over(rows)
        groups = fabric_groups(rows)

        def group(row: dict[str, Any]) -> str:
            return groups[row["scenario"]]

        return [
            metric_panels(rows, FIG2_PANELS, fig2, f"{name}: acceptance and utilisation, {over}",
                          xlabel=TIERED_XLABEL, defaults=defaults, group_by=group, tick_label=ratio_label),
            metric_panels(rows, FIG3_PANELS, fig3, f"{name}: link utilisation per tier, {over}",
                          xlabel=TIERED_XLABEL, defaults=defaults, group_by=group, tick_label=ratio_label),
            spread(rows, fig5, f"{name}: spread of accepted requests by oversubscription", defaults),
            size_brackets(rows, fig8, f"{name}: accepted requests by size, summed over {seeds_text(rows)}",
                          defaults),
        ]
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise


def plot_runs(rows: list[dict[str, Any]], out_dir: Path, name: str, defaults: Mapping[str, str] | None = None
              ) -> list[Path]:
    """`plot_sweep` for runs no suite groups (a folder of runs, an ad-hoc
    sweep): the tiered papers' figures of its runs of pools, the OCS
    paper's of its runs of jobs, each from the columns its runs have. Every
    figure's rows are checked before any is drawn."""
    from dcbench.harness.report import by_demand_kind

    parts = list(by_demand_kind(rows).values())
    for part in parts:
        check_rows(part)
    return [path for part in parts for path in plot_sweep(part, out_dir, name, defaults)]


def outermost_missing(folder: Path) -> Path | None:
    """The outermost of ``folder`` and its parents that does not exist (what
    making ``folder`` creates), or None where ``folder`` exists."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            break
        missing = path
    return missing
