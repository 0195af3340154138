"""The suites' scenarios as environments: their Gymnasium ids ``dcbench/<suite>-<scenario>-v0``, episodes and
seeds."""

from __future__ import annotations

import itertools
import re
import textwrap
import warnings
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import gymnasium as gym
import numpy as np

from dcbench.errors import DcbenchError, SpecError
from dcbench.model.suite import Scenario, Suite
from dcbench.registry import Registry, get_registry
from dcbench.running.runner import Runner, warmup_requests

NAMESPACE = "dcbench"
VERSION = 0
ENTRY_POINT = "dcbench.envs:ScenarioEnv"
VECTOR_ENTRY_POINT = "dcbench.envs:scenario_vector_env"  # a `VectorAllocationEnv`
# Test seeds are small (0..4 for dcbench's suites); the shipped trainers train on 1,000,000 + run · RUN_STRIDE +
# episode and validate on 2,000,000 + k.
TRAINING_SEEDS_FROM = 1_000_000
VALIDATION_SEEDS = range(2_000_000, 3_000_000)
RUN_STRIDE = 100_000_000  # between the training seeds of two runs (`SeedSplit.training`)
EPISODES_PER_RUN = VALIDATION_SEEDS.start - TRAINING_SEEDS_FROM


@dataclass(frozen=True)
class SeedSplit:
    """Which seeds are for what, so that nobody trains or selects a model on its test seeds (docs/envs.md).

    Attributes:
        test: The test seeds (none for ``dcbench/Allocation-v0``).
        validation: The validation seeds.
    """

    test: tuple[int, ...] = ()
    validation: range = VALIDATION_SEEDS

    def training(self, episode: int, run: int = 0) -> int:
        """The seed of a training episode: 1,000,000 + run · 100,000,000 + episode.

        Args:
            episode: The episode's number in the run, 0 to 999,999.
            run: The training run's number (a trainer's ``--seed``), 0 or more.

        Returns:
            The seed.

        Raises:
            ValueError: ``episode`` or ``run`` out of range, or the seed is a test seed.
        """
        if not 0 <= episode < EPISODES_PER_RUN:
            raise ValueError(f"episode must be 0 to {EPISODES_PER_RUN - 1:,}, got {episode!r}")
        if run < 0:
            raise ValueError(f"run must be 0 or more, got {run!r}")
        seed = TRAINING_SEEDS_FROM + run * RUN_STRIDE + episode
        if seed in self.test:
            raise ValueError(f"training seed {seed} is one of this scenario's test seeds")
        return seed

    def role(self, seed: int) -> str:
        """What a seed is for.

        Args:
            seed: The seed.

        Returns:
            "test", "validation", "training", or "none" (below 1,000,000 and no test seed).
        """
        if seed in self.test:
            return "test"
        if seed in self.validation:
            return "validation"
        return "training" if seed >= TRAINING_SEEDS_FROM else "none"


def _id_part(text: str) -> str:
    # each run of characters a Gymnasium id does not take (or splits on, ':') as one '-'
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "-"


def env_id(suite: str, scenario: str) -> str:
    """The Gymnasium id ``dcbench/<suite>-<scenario>-v0`` of a suite's scenario (``tiered:8,1x4`` → ``tiered-8-1x4``).

    Args:
        suite: The suite's (qualified) name.
        scenario: The scenario's label (`Scenario.label`).

    Returns:
        The id.
    """
    return f"{NAMESPACE}/{_id_part(suite)}-{_id_part(scenario)}-v{VERSION}"


@dataclass(frozen=True)
class SuiteEnv:
    """One registered environment: a suite's scenario under its id.

    Attributes:
        id: Its Gymnasium id (`env_id`).
        suite: The suite's qualified name.
        scenario: The scenario.
    """

    id: str
    suite: str
    scenario: Scenario


def suite_envs(registry: Registry | None = None) -> tuple[SuiteEnv, ...]:
    """The environment of every suite scenario; of two with the same id, the second has none, with a warning.

    Args:
        registry: The plugins (None: the process's, `get_registry`).

    Returns:
        The environments.
    """
    registry = registry or get_registry()
    found: dict[str, SuiteEnv] = {}
    for name, suite in sorted(registry.entries("suite").items()):
        for scenario in suite.scenarios:
            env = SuiteEnv(env_id(name, scenario.label), name, scenario)
            if env.id in found:
                first = found[env.id]
                warnings.warn(f"dcbench.envs: suite {name!r} scenario {scenario.label!r} has no environment: its "
                              f"id {env.id} is that of suite {first.suite!r} scenario {first.scenario.label!r}",
                              stacklevel=2)
                continue
            found[env.id] = env
    return tuple(found.values())


_REGISTERED: set[str] = set()  # the ids register_suite_envs put in gymnasium's registry


def register_suite_envs(registry: Registry | None = None) -> tuple[str, ...]:
    """Register one Gymnasium id per suite scenario for `ScenarioEnv`, replacing those it registered before.

    Args:
        registry: The plugins (None: the process's, `get_registry`).

    Returns:
        The ids registered.
    """
    envs = suite_envs(registry)
    for stale in _REGISTERED - {env.id for env in envs}:
        gym.registry.pop(stale, None)
        _REGISTERED.discard(stale)
    registered = []
    for env in envs:
        if env.id in gym.registry and env.id not in _REGISTERED:
            warnings.warn(f"dcbench.envs: {env.id} is already registered by {gym.registry[env.id].entry_point}; "
                          f"suite {env.suite!r} scenario {env.scenario.label!r} keeps no id", stacklevel=2)
            continue
        gym.registry.pop(env.id, None)
        gym.register(env.id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT,
                     kwargs={"suite": env.suite, "scenario": env.scenario.label})
        _REGISTERED.add(env.id)
        registered.append(env.id)
    return tuple(registered)


def find_scenario(registry: Registry, suite: str, scenario: str) -> tuple[Suite, Scenario]:
    """A suite (by name or alias) and its scenario of that label."""
    entry = registry.get("suite", suite)
    for candidate in entry.scenarios:
        if candidate.label == scenario:
            return entry, candidate
    labels = ", ".join(candidate.label for candidate in entry.scenarios)
    raise SpecError(f"suite {suite!r} has no scenario {scenario!r}; its scenarios are {labels}")


def shown(value: Any) -> str:
    """A value in a few words on one line."""
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 60 and "\n" not in text else f"a {type(value).__name__}"


def check_measured(requests: Any) -> None:
    """Refuse a scenario's ``requests=`` other than None or a whole number ≥ 1."""
    if requests is not None and (isinstance(requests, bool) or not isinstance(requests, (Integral, np.integer))
                                 or requests < 1):
        raise SpecError(f"requests must be a whole number of measured requests, at least 1, got {shown(requests)}")


def scenario_episode(scenario: Scenario, runner: Runner | None = None) -> tuple[int, int]:
    """A scenario's episode as its environment runs it by default.

    Args:
        scenario: The scenario.
        runner: Resolves it (None: a new `Runner` on the process's plugins).

    Returns:
        ``(measured, warmup)``: the requests measured after the warm-up, and the warm-up's.

    Raises:
        SpecError: As `Runner.resolve_scenario`, or the workload refuses its parameters.
        UnknownPluginError: A spec names no registered plugin.
        IncompatibleError: The topology serves no demand of the workload's kind.
        PluginError: A third-party plugin failed.
    """
    plan = (runner or Runner()).resolve_scenario(scenario.topology, scenario.workload, scenario.requests)
    warmup = warmup_requests(plan)
    return plan.requests - warmup, warmup


LISTING_WIDTH = 80  # the columns `env_listing` fits


def _seed_ranges(seeds: tuple[int, ...]) -> str:
    # seeds as ``0..4,7``: each run of three or more consecutive seeds (seed − position the same) as FIRST..LAST
    parts = []
    for _, group in itertools.groupby(enumerate(seeds), lambda pair: pair[1] - pair[0]):
        run = [seed for _, seed in group]
        parts.append(f"{run[0]}..{run[-1]}" if len(run) >= 3 else ",".join(map(str, run)))
    return ",".join(parts)


def env_listing(registry: Registry | None = None, runner: Runner | None = None) -> list[str]:
    """``dcbench list envs``: a line per registered environment, then why any says n/a and a note.

    Args:
        registry: The plugins (None: the process's, `get_registry`).
        runner: Resolves the scenarios (None: a new `Runner` on ``registry``).

    Returns:
        The lines, without newlines, the first the heading "environments".
    """
    registry = registry or get_registry()
    runner = runner or Runner(registry)
    rows, problems = [], {}  # (each problem once: the ids it applies to say n/a)
    for env in suite_envs(registry):
        try:
            measured, warmup = scenario_episode(env.scenario, runner)
            counts = (f"{measured:,}", f"{warmup:,}" if warmup else "-")
        except DcbenchError as exc:
            counts = ("n/a", "-")
            problems[f"n/a: {exc}"] = None
        rows.append((env.id, *counts, _seed_ranges(tuple(int(seed) for seed in env.scenario.seeds))))
    lines = ["environments"]
    if not rows:
        lines.append("  (none)")
    else:
        header = ("id", "measured", "warm-up", "test seeds")
        widths = [max(len(row[i]) for row in [header, *rows]) for i in (1, 2)]
        rest = 2 + widths[0] + 2 + widths[1] + 2 + max(len(row[3]) for row in [header, *rows])
        id_width = max(len(header[0]), min(max(len(row[0]) for row in rows), LISTING_WIDTH - 2 - rest))
        for row in [header, *rows]:
            counts = f"  {row[1]:>{widths[0]}}  {row[2]:>{widths[1]}}  {row[3]}"
            if len(row[0]) > id_width:  # an id too long for the column: alone on its line
                lines += [f"  {row[0]}", f"  {'':<{id_width}}{counts}"]
            else:
                lines.append(f"  {row[0]:<{id_width}}{counts}")
    note = (f"An id is dcbench/SUITE-SCENARIO-v{VERSION} (`dcbench list SUITE` gives their topology and workload); "
            "requests=N sets the measured requests, after the warm-up. dcbench/Allocation-v0 takes any topology and "
            f"workload. Train on seeds from {TRAINING_SEEDS_FROM:,} up outside {VALIDATION_SEEDS.start:,}.."
            f"{VALIDATION_SEEDS.stop - 1:,} (validation), never the test seeds (docs/envs.md).")
    for text in [*problems, note]:
        lines += textwrap.wrap(text, LISTING_WIDTH, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)
    return lines
