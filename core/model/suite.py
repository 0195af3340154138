"""Scenarios and suites: what a sweep runs and a leaderboard ranks."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scenario:
    """A topology, a workload, an episode length and the seeds to run."""

    topology: str
    workload: str | None = None
    requests: int | None = None
    seeds: tuple[int, ...] = (0,)
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or self.topology


@dataclass(frozen=True)
class Suite:
    """A named list of scenarios, ranked by ``primary_metric``.

    ``figures`` is the ``"module:attr"`` of the figures that ``dcbench plot``
    draws of a sweep of it (`dcbench.harness.figures.Figures`), imported only
    when drawn; None draws none of its own.
    """

    name: str
    scenarios: tuple[Scenario, ...]
    description: str = ""
    primary_metric: str = "acceptance_ratio"
    higher_is_better: bool = True
    figures: str | None = None
    plugin: str = field(default="", compare=False)
