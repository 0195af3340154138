"""Figures of a sweep's rows: a suite or a topology family names a `Figures` by ``"module:attr"``, imported only when
drawn; an allocator declares its colour (`Colours`)."""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, Mapping, Protocol, Sequence, runtime_checkable

from dcbench.errors import DcbenchError, PluginError, ResultsError, describe
from dcbench.model.suite import Suite
from dcbench.publishing.report import by_demand_kind
from dcbench.publishing.report import labels as allocator_labels
from dcbench.registry.columns import Column
from dcbench.registry.entry import import_target
from dcbench.registry.kinds import BUILTIN_PLUGINS
from dcbench.running.stats import mean_ci
from dcbench.storage.files import write_atomic
from dcbench.storage.paths import check_regular_file, check_writable

Row = dict[str, Any]


@runtime_checkable
class Figures(Protocol):
    """The figures a suite or a topology family declares: ``xlabel`` names the leaderboard plot's scenario axis;
    ``columns`` are the summary columns `draw` needs."""

    xlabel: str
    columns: Sequence[str]

    def tick_label(self, row: Row) -> str:
        """A scenario's tick on that axis.

        Args:
            row: One summary row of the scenario.

        Returns:
            The label (a newline in it makes two lines).
        """

    def files(self, rows: list[Row]) -> list[str]:
        """The file names `draw` writes of ``rows``.

        Args:
            rows: The summary rows to draw.

        Returns:
            The PNG files' names in the output folder.
        """

    def draw(self, rows: list[Row], out_dir: Path, name: str, defaults: Mapping[str, str] | None,
             colours: Colours) -> list[Path]:
        """Draw every figure of ``rows`` into ``out_dir``, which `save_figure` makes.

        Args:
            rows: The summary rows, one per run, with every column of ``columns``.
            out_dir: The folder to write the PNGs in (`save_figure`).
            name: The suite's or the folder's name, for the titles.
            defaults: Each allocator's default spec, by name (`dcbench.publishing.report.labels`).
            colours: The allocators' colours (`Colours`).

        Returns:
            The paths written, in the order of `files`.
        """


@dataclass(frozen=True)
class Colours:
    """The colours allocators declared (``register(..., colour=...)``), by name.

    A declaration is a colour, or a mapping from ``""`` and ``"KEY=VALUE"`` options to colours: a spec takes the colour
    of its first such option, else ``""``'s.

    Attributes:
        declared: Each allocator's declaration, by plugin name.
    """

    declared: Mapping[str, str | Mapping[str, str]] = field(default_factory=dict)

    def of(self, spec: str, index: int) -> str:
        """The colour of the allocator ``spec``, the ``index``-th of its figure.

        Args:
            spec: The allocator's spec (``tetris:fit_last=yes``).
            index: Its place among the figure's allocators, from 0.

        Returns:
            A matplotlib colour: the declared one, else "C8" or "C9".
        """
        name, _, arguments = spec.partition(":")
        declared = self.declared.get(name)
        if isinstance(declared, str):
            return declared
        if declared is not None:
            options = {argument.strip() for argument in arguments.split(",")}
            chosen = next((colour for option, colour in declared.items() if option and option in options),
                          declared.get(""))
            if chosen is not None:
                return chosen
        return f"C{8 + index % 2}"

    def shares(self, spec: str, specs: Sequence[str]) -> bool:
        """Whether an earlier allocator in ``specs`` has ``spec``'s colour.

        Args:
            spec: An allocator's spec, one of ``specs``.
            specs: The figure's allocators, in order.

        Returns:
            Whether ``spec`` is to be drawn in open squares (`points`).

        Raises:
            ValueError: ``spec`` is not in ``specs``.
        """
        position = specs.index(spec)
        mine = self.of(spec, position)
        return any(self.of(other, index) == mine for index, other in enumerate(specs[:position]))


def allocator_colours(registry: Any) -> Colours:
    return Colours({name: entry.colour for name, entry in registry.entries("allocator").items()
                    if entry.colour is not None})


@dataclass(frozen=True)
class DeclaredFigures:
    """Figures a plugin declared by their ``"module:attr"``, not yet imported."""

    target: str
    owner: str  # as an error names it: "suite 'nara2022' (plugin dcbench.plugins.topologies.tiered)"
    builtin: bool  # a built-in plugin's failure is dcbench's bug: it keeps its traceback

    def load(self) -> Figures:
        """The object ``target`` names, checked to be `Figures`."""
        figures = import_target(self.target, self.builtin, f"{self.owner} failed to load its figures", (DcbenchError,))
        if not isinstance(figures, Figures):
            absent = next(member for member in ("xlabel", "columns", "tick_label", "files", "draw")
                          if not hasattr(figures, member))
            raise PluginError(f"{self.owner} declares figures {self.target!r} that have no {absent!r} "
                              "(see dcbench.harness.Figures); report it to the plugin's authors")
        if not isinstance(figures.xlabel, str) or not isinstance(figures.columns, (list, tuple)) or not all(
                isinstance(column, str) for column in figures.columns):
            raise PluginError(f"{self.owner} declares figures {self.target!r} whose xlabel is not a string or "
                              "whose columns are not a list of column names; report it to the plugin's authors")
        return figures

    @contextlib.contextmanager
    def blamed(self, failure: str) -> Iterator[None]:
        """A third-party figures' exception as a one-line `PluginError` saying ``failure``."""
        try:
            yield
        except (DcbenchError, KeyboardInterrupt, OSError):
            raise
        except BaseException as exc:  # a plugin's sys.exit() is its failure, not the command's end
            if self.builtin:
                raise
            raise PluginError(f"{self.owner} {failure}: {describe(exc)}; report it to the plugin's "
                              "authors") from exc


def suite_figures(suite: Suite | None) -> DeclaredFigures | None:
    if suite is None or suite.figures is None:
        return None
    return DeclaredFigures(suite.figures, f"suite {suite.name!r} (plugin {suite.plugin})",
                           suite.plugin in BUILTIN_PLUGINS)


def topology_figures(registry: Any) -> dict[str, DeclaredFigures]:
    return {name: DeclaredFigures(entry.figures, f"topology {name!r} ({entry.origin})", entry.builtin)
            for name, entry in registry.entries("topology").items() if entry.figures is not None}


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or a one-line error saying how to install it.

    Returns:
        The ``matplotlib.pyplot`` module.

    Raises:
        DcbenchError: matplotlib is not installed.
    """
    try:
        import matplotlib
    except ImportError:
        raise DcbenchError("plotting needs matplotlib: pip install 'dcbench[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plain(text: str) -> str:
    """``text`` for matplotlib to show as it is: '$' escaped (mathtext), a leading '_' (hidden legend entry) spaced.

    Args:
        text: A label, title or legend entry.

    Returns:
        The escaped text.
    """
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def scenario_label(row: Row) -> str:
    return row["scenario"]


def seeds_text(rows: Sequence[Row]) -> str:
    """'seeds 0–4', 'seed 3' or 'seeds 0, 2, 7': the seeds of ``rows``.

    Args:
        rows: Summary rows; those without a ``seed`` are left out.

    Returns:
        The text: a range for three or more consecutive seeds.
    """
    seeds = sorted({int(r["seed"]) for r in rows if r.get("seed") is not None})
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(str(seed) for seed in seeds)


def mean_over(rows: Sequence[Row]) -> str:
    """What a point of a panel is: 'mean over seeds 0–4 with 95% CI'.

    Args:
        rows: The summary rows drawn.

    Returns:
        The text; 'seed 3 alone (no CI)' for a single seed.
    """
    seeds = seeds_text(rows)
    return f"mean over {seeds} with 95% CI" if seeds.startswith("seeds") else f"{seeds} alone (no CI)"


def grouped(names: Sequence[str]) -> list[list[int]]:
    """The indices of ``names`` by name, groups in first-seen order ([[0, 2], [1], ...]); an index named '' alone."""
    groups: dict[Hashable, list[int]] = {}
    for index, name in enumerate(names):
        groups.setdefault(name or index, []).append(index)
    return list(groups.values())


def positions(groups: list[list[int]]) -> list[float]:
    """The x of every scenario: one apart within a group, an empty slot between groups."""
    xs = [0.0] * sum(len(group) for group in groups)
    slot = 0
    for group in groups:
        for index in group:
            xs[index] = float(slot)
            slot += 1
        slot += 1
    return xs


GROUP_NAME_PAD = 18  # points between the x axis and a group's name: below the tick labels
DODGE_WIDTH = 0.7  # the part of a category's slot (1 wide) over which its allocators' points stand side by side


def dodge(count: int, width: float = DODGE_WIDTH) -> list[float]:
    """The x offsets of ``count`` allocators' points within a category, centred on it.

    Args:
        count: The number of allocators.
        width: The part of the category's slot they take.

    Returns:
        One offset per allocator, in order, ``width / count`` apart.
    """
    return [width / count * (index - (count - 1) / 2) for index in range(count)]


def points(axis: Any, xs: Sequence[float], cells: Sequence[tuple[float, float]], colour: str, shared: bool,
           label: str | None) -> None:
    """One allocator's points: a marker at each mean with its 95% CI as an error bar.

    Args:
        axis: The matplotlib axes.
        xs: Each point's x.
        cells: (mean, CI half-width) per point; a NaN mean draws nothing, a NaN half-width no bar.
        colour: The allocator's colour.
        shared: Whether an earlier allocator has that colour (`Colours.shares`): open squares, not filled dots.
        label: Its legend entry, or None.
    """
    axis.errorbar(list(xs), [mean for mean, _ in cells], yerr=[0.0 if half != half else half for _, half in cells],
                  linestyle="none", marker="s" if shared else "o", markersize=4, color=colour,
                  markerfacecolor="white" if shared else colour, elinewidth=1.0, capsize=2, label=label)


def mark_groups(axes: Sequence[Any], groups: list[list[int]], xs: list[float], names: list[str]) -> None:
    """A vertical line between groups in every panel, and each group's name below the bottom tick labels."""
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


def category_grid(axis: Any, groups: list[list[int]], xs: list[float]) -> None:
    """Horizontal grid lines, and faint vertical ones between the neighbouring categories of a group."""
    bounds = [(xs[a] + xs[b]) / 2 for group in groups for a, b in zip(group, group[1:])]
    axis.set_xticks(sorted(bounds), minor=True)
    axis.tick_params(axis="x", which="minor", length=0)
    axis.grid(axis="y", alpha=0.3)
    axis.grid(axis="x", which="minor", alpha=0.3)


def metric_panels(rows: list[Row], metrics: Sequence[tuple[str, str]], path: Path, title: str, colours: Colours,
                  xlabel: str = "scenario", defaults: Mapping[str, str] | None = None,
                  group_by: Callable[[Row], str] | None = None,
                  tick_label: Callable[[Row], str] = scenario_label) -> Path:
    """One panel per metric: each allocator's mean and 95% CI per scenario.

    The scenarios are categories, one slot each, the allocators side by side (`dodge`); no line joins two points, as
    scenarios form no continuum. With ``group_by``, groups stand apart, each group's name below its ticks.

    Args:
        rows: Summary rows, one per run.
        metrics: (column, its panel's y label) per panel, top to bottom.
        path: The PNG to write.
        title: The figure's title.
        colours: The allocators' colours.
        xlabel: The x axis's label.
        defaults: Each allocator's default spec, for its label (`dcbench.publishing.report.labels`).
        group_by: A row's group's name ('' for none), or None for no groups.
        tick_label: A scenario's tick, from one of its rows.

    Returns:
        ``path``.

    Raises:
        DcbenchError: matplotlib is not installed.
        ResultsError: As `save_figure`.
    """
    plt = pyplot()
    figure, grid = plt.subplots(len(metrics), 1, figsize=(9, 2.6 * len(metrics) + (0.5 if len(metrics) == 1 else 0)),
                                sharex=True, squeeze=False)
    axes = grid[:, 0]
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    first_rows = [next(r for r in rows if r["scenario"] == s) for s in scenarios]
    groups = grouped([group_by(row) for row in first_rows]) if group_by else [list(range(len(scenarios)))]
    xs = positions(groups)
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    shown = allocator_labels(allocators, defaults)
    for axis, (metric, ylabel) in zip(axes, metrics):
        for index, (allocator, offset) in enumerate(zip(allocators, dodge(len(allocators)))):
            cells = [mean_ci(r[metric] for r in rows if r["scenario"] == scenario and r["allocator"] == allocator)[:2]
                     for scenario in scenarios]
            points(axis, [x + offset for x in xs], cells, colours.of(allocator, index),
                   colours.shares(allocator, allocators), plain(shown[allocator]))
        axis.set_ylabel(plain(ylabel))
        category_grid(axis, groups, xs)
    axes[-1].set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    if group_by:
        mark_groups(axes, groups, xs, [group_by(row) for row in first_rows])
    ticks = sorted(zip(xs, (tick_label(row) for row in first_rows)))
    axes[-1].set_xticks([x for x, _ in ticks])
    axes[-1].set_xticklabels([plain(label) for _, label in ticks])
    axes[-1].set_xlabel(plain(xlabel), labelpad=GROUP_NAME_PAD + 6 if group_by else 4)  # below the group names
    handles, names = axes[0].get_legend_handles_labels()
    legend = {"ncol": min(len(names), 5), "fontsize": 8, "frameon": False}
    if len(metrics) == 1:  # the legend just above the axes
        axes[0].legend(handles, names, loc="lower center", bbox_to_anchor=(0.5, 1.0), **legend)
    else:
        figure.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.965), **legend)
    figure.suptitle(plain(title))
    figure.tight_layout(rect=(0, 0, 1, 1 if len(metrics) == 1 else 0.95))
    save_figure(figure, path, dpi=120)
    plt.close(figure)
    return path


def save_figure(figure: Any, path: Path, dpi: int) -> None:
    """Save as PNG atomically.

    Args:
        figure: A matplotlib figure.
        path: The PNG to write; its folder is made where it is missing.
        dpi: Its resolution, in dots per inch.

    Raises:
        ResultsError: As `write_atomic`: ``path`` is a folder or no regular file.
        OSError: The file system failed.
    """
    write_atomic(path, lambda temporary: figure.savefig(temporary, dpi=dpi, format="png"))


def check_rows(rows: list[Row], figures: Figures) -> None:
    if not rows:
        raise ResultsError("the summary has no rows; run the sweep first")
    missing = [column for column in ("scenario", "allocator", "topology", *figures.columns) if column not in rows[0]]
    if missing:
        raise ResultsError(f"the summary has no column {missing[0]!r}, which the figures need; "
                           "run the sweep again to rebuild it")


def plot_sweep(rows: list[Row], out_dir: Path, name: str, figures: DeclaredFigures, colours: Colours,
               defaults: Mapping[str, str] | None = None) -> list[Path]:
    """Draw a suite's declared figures of a sweep of it into ``out_dir`` (removed again if it fails)."""
    if not rows:
        raise ResultsError("the summary has no rows; run the sweep first")
    return _draw([(rows, figures)], out_dir, name, colours, defaults)


def plot_runs(rows: list[Row], out_dir: Path, name: str, figures: Mapping[str, DeclaredFigures],
              columns: Sequence[Column], colours: Colours, defaults: Mapping[str, str] | None,
              note: Callable[[str], None]) -> list[Path]:
    """Draw runs of no suite by their topology family's figures, by demand kind; ``note`` hears of undrawn runs."""
    owners = {declared.target: declared for declared in reversed(list(figures.values()))}  # the first family's
    parts: list[tuple[list[Row], DeclaredFigures]] = []
    for part in by_demand_kind(rows, columns).values():
        by_target: dict[str, list[Row]] = {}
        undrawn: list[str] = []
        for row in part:
            family = row["topology"].partition(":")[0]
            if family in figures:
                by_target.setdefault(figures[family].target, []).append(row)
            elif family not in undrawn:
                undrawn.append(family)
        parts += [(chosen, owners[target]) for target, chosen in by_target.items()]
        if undrawn:
            note(f"no figures of the runs on {', '.join(undrawn)}: no installed topology plugin declares them "
                 "(register(..., figures='module:attr'))")
    return _draw(parts, out_dir, name, colours, defaults)


def _draw(parts: list[tuple[list[Row], DeclaredFigures]], out_dir: Path, name: str, colours: Colours,
          defaults: Mapping[str, str] | None) -> list[Path]:
    """Draw each part's figures, all loaded and checked before ``out_dir`` is made or any file replaced."""
    if not parts:
        return []
    loaded = [(rows, declared, declared.load()) for rows, declared in parts]
    files = []
    for rows, declared, figures in loaded:
        check_rows(rows, figures)
        with declared.blamed("failed to name its figures' files"):
            files += figures.files(rows)
    made = [path for path in (out_dir, *out_dir.parents) if not path.exists()]  # deepest first
    check_writable(out_dir, "plots")  # first: a file where the folder goes is named as such, not by a figure
    for file_name in files:  # before any is replaced: all of them, or none
        check_regular_file(out_dir / file_name, "another --out, or move it")
    try:
        paths = []
        for rows, declared, figures in loaded:
            with declared.blamed("failed to draw its figures"):
                paths += figures.draw(rows, out_dir, name, defaults, colours)
        return paths
    except Exception:
        if made:
            shutil.rmtree(made[-1], ignore_errors=True)
        raise
