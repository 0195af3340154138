"""Scenarios and suites: what a sweep runs and a leaderboard ranks."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scenario:
    """A topology, a workload, an episode length and the seeds to run.

    Attributes:
        topology: The topology spec (``tiered:32,1x4``).
        workload: The workload spec (None: the topology's default).
        requests: Requests per run (None: the workload's default, else two per server).
        seeds: The seeds each allocator runs it with.
        name: Its label in sweeps, reports and the leaderboard ("": its topology spec)."""

    topology: str
    workload: str | None = None
    requests: int | None = None
    seeds: tuple[int, ...] = (0,)
    name: str = ""

    @property
    def label(self) -> str:
        """Its name, or its topology spec where it has none."""
        return self.name or self.topology


@dataclass(frozen=True)
class Suite:
    """A named list of scenarios, ranked by ``primary_metric``.

    Attributes:
        name: The suite's name (``dcbench sweep --suite NAME``).
        scenarios: Its scenarios, in the order reports show them.
        description: One line for ``dcbench list`` and the leaderboard.
        primary_metric: The summary column that ranks allocators.
        higher_is_better: Whether a larger ``primary_metric`` ranks higher.
        figures: The ``"module:attr"`` of the figures ``dcbench plot`` draws of a sweep of it, or None.
        metrics: Third-party metrics its runs compute besides dcbench's own.
        reference: The allocator spec the leaderboard measures every Δ against (None: no Δ).
        floor: The allocator spec that scores 0 on the score normalised to the bound, which scores 1 (None: none).
        plugin: The plugin that registered it (set by the registry, not compared)."""

    name: str
    scenarios: tuple[Scenario, ...]
    description: str = ""
    primary_metric: str = "acceptance_ratio"
    higher_is_better: bool = True
    figures: str | None = None
    metrics: tuple[str, ...] = ()
    reference: str | None = None
    floor: str | None = None
    plugin: str = field(default="", compare=False)
