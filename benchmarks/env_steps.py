"""Steps per second of the gymnasium environment (docs/performance.md).

`dcbench/Allocation-v0` (`dcbench.envs.AllocationEnv`, made with
``gymnasium.make``) on three suite scenarios: pools on the 64-server
``tiered:32,1x4`` of `nara2022` and the 1,024-server
``tiered:32,1x4,pods=8,racks=8`` of `nara2022-large`, and jobs on the
16-ToR ``ocs:16`` of `odcn2025` (its ``vmjobs`` workload at the lowest
load), each with the suite's episode length. The policy picks a uniformly
random allowed action from the observation's mask (a seeded numpy
Generator); the time is that of the whole loop: the policy, ``step``, and
``reset`` where an episode ends (a vectorised env resets its sub-envs in
the step that ends their episode). Steps are counted, not episodes: a
vectorised step of n envs is n steps.

Each case runs a single env, then ``SyncVectorEnv`` and ``AsyncVectorEnv``
of 2 and 4 envs, one math thread per process; after a warm-up the same
number of steps is timed a few times and the best is kept.
``--breakdown`` also times the single-env loop without gymnasium's
wrappers, then with the observation cut down to the action mask, and the
policy alone: where a step's time goes, without a profiler's distortion.
``--profile`` profiles the single-env pool (64 servers) and job loops with
cProfile. Run from a checkout with dcbench installed:

    python benchmarks/env_steps.py --breakdown
    python benchmarks/env_steps.py --profile --vector ''
    python benchmarks/env_steps.py --only pool --vector '' --scale   # and 65,536 servers
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import os
import pstats
import time
from dataclasses import dataclass

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
              "NUMEXPR_NUM_THREADS"):
    os.environ[_name] = "1"  # one math thread, set before numpy loads its BLAS; the async envs' workers inherit it

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv  # noqa: E402

import dcbench.envs  # noqa: E402, F401  (registers dcbench/Allocation-v0)
from dcbench.harness import get_registry  # noqa: E402

ENV_ID = "dcbench/Allocation-v0"


@dataclass(frozen=True)
class Case:
    label: str  # "pool" or "job"
    suite: str
    scenario: str  # its name in the suite
    topology: str
    workload: str | None  # None: the topology's own
    requests: int  # the whole episode
    servers: int
    warmup: int = 0  # of the requests; ``requests=`` counts those after it


# (pool or job, suite, topology, scenario name or None for the suite's first scenario on the topology)
SCENARIOS = (
    ("pool", "nara2022", "tiered:32,1x4", None),
    ("pool", "nara2022-large", "tiered:32,1x4,pods=8,racks=8", None),
    ("job", "odcn2025", "ocs:16", "16x32-load54"),
)


# Data-centre scale (--scale, issue #34): no suite runs there, so the topology's own workload and a
# 4,096-request episode; a single env only (a vectorised env would hold one 65,536-server copy per env).
SCALE = ("pool", "tiered:32,1x4,pods=64,racks=64", 4096)


def scale_case() -> Case:
    label, topology, requests = SCALE
    servers = gymnasium.make(ENV_ID, topology=topology, requests=1).unwrapped.network.n_servers
    return Case(label, "", "", topology, None, requests, servers)


def cases() -> list[Case]:
    """The measured scenarios, read from their suites."""
    registry = get_registry()
    found = []
    for label, suite_name, topology, name in SCENARIOS:
        suite = registry.get("suite", suite_name)
        scenario = next(s for s in suite.scenarios
                        if s.topology == topology and (name is None or s.name == name))
        env = gymnasium.make(ENV_ID, topology=scenario.topology, workload=scenario.workload, requests=1).unwrapped
        found.append(Case(label, suite_name, scenario.name or "", scenario.topology, scenario.workload,
                          scenario.requests, env.network.n_servers, env.warmup))
    return found


def make(case: Case):
    """The env of a case, as ``gymnasium.make`` wraps it."""
    return gymnasium.make(ENV_ID, topology=case.topology, workload=case.workload,
                          requests=case.requests - case.warmup)


def choose(mask: np.ndarray, rng: np.random.Generator) -> int:
    """A uniformly random allowed action (0 where none is allowed)."""
    allowed = np.flatnonzero(mask)
    return int(allowed[rng.integers(allowed.size)]) if allowed.size else 0


def mask_only(env) -> None:
    """Make an `AllocationEnv`'s observation the action mask alone (what
    the policy reads), to time the loop without the features."""
    builder = env.builder
    mask = builder.rack_fits if env.kind == "job" else builder.allowed
    env.features.observe = lambda _builder, _state: {"action_mask": mask().astype(np.int8)}


class Single:
    """The loop of one env: step, and reset where an episode ends.

    ``wrapped=False`` steps the bare `AllocationEnv`, without the wrappers
    of ``gymnasium.make``; ``features=False`` also replaces its observation
    by the action mask alone."""

    def __init__(self, case: Case, seed: int, wrapped: bool = True, features: bool = True):
        self.env = make(case)
        if not wrapped:
            self.env = self.env.unwrapped
        if not features:
            mask_only(self.env.unwrapped)
        self.rng = np.random.default_rng(seed)
        self.obs, _ = self.env.reset(seed=seed)
        self.n = 1

    def run(self, steps: int) -> None:
        env, rng, obs = self.env, self.rng, self.obs
        for _ in range(steps):
            obs, _, terminated, truncated, _ = env.step(choose(obs["action_mask"], rng))
            while terminated or truncated:
                obs, info = env.reset()
                terminated = info["done"]  # an episode with no decision at all
        self.obs = obs

    def close(self) -> None:
        self.env.close()


class Vector:
    """The loop of a vectorised env; each sub-env resets in the step that ends its episode."""

    def __init__(self, case: Case, seed: int, kind: type, n: int):
        fns = [functools.partial(make, case) for _ in range(n)]
        self.env = kind(fns, autoreset_mode=AutoresetMode.SAME_STEP)
        self.rng = np.random.default_rng(seed)
        self.obs, _ = self.env.reset(seed=seed)
        self.n = n

    def run(self, steps: int) -> None:
        env, rng, obs = self.env, self.rng, self.obs
        for _ in range(steps // self.n):
            actions = np.array([choose(mask, rng) for mask in obs["action_mask"]], dtype=np.int64)
            obs, *_ = env.step(actions)
        self.obs = obs

    def close(self) -> None:
        self.env.close()


def best_rate(loop, steps: int, warmup: int, repeat: int) -> tuple[int, float]:
    """(steps timed per repeat, best steps/s) after ``warmup`` untimed steps."""
    loop.run(warmup)
    timed = steps // loop.n * loop.n
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        loop.run(timed)
        best = min(best, time.perf_counter() - start)
    return timed, timed / best


def policy_rate(case: Case, steps: int, repeat: int) -> float:
    """Calls per second of the policy alone, on the mask of a case's first decision."""
    loop = Single(case, seed=0)
    mask, rng = loop.obs["action_mask"], loop.rng
    loop.close()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(steps):
            choose(mask, rng)
        best = min(best, time.perf_counter() - start)
    return steps / best


def breakdown(chosen: list[Case], steps: int, warmup: int, repeat: int) -> None:
    """The single-env loop without the wrappers, then without the
    features too, and the policy alone: where the time of a step goes,
    measured without a profiler's distortion."""
    print("\n| mode | topology | loop | steps/s | µs/step |")
    print("|---|---|---|---:|---:|")
    variants = (("gymnasium.make, full observation", {}),
                ("bare env (no gymnasium wrappers)", {"wrapped": False}),
                ("bare env, observation = the mask alone", {"wrapped": False, "features": False}))
    for case in chosen:
        for name, options in variants:
            loop = Single(case, seed=0, **options)
            try:
                _, rate = best_rate(loop, steps, warmup, repeat)
            finally:
                loop.close()
            print(f"| {case.label} | {case.topology} | {name} | {rate:,.0f} | {1e6 / rate:.1f} |", flush=True)
        rate = policy_rate(case, steps, repeat)
        print(f"| {case.label} | {case.topology} | the policy alone | {rate:,.0f} | {1e6 / rate:.1f} |", flush=True)


def profile(case: Case, steps: int, warmup: int, top: int) -> None:
    """cProfile of the single-env loop of a case: the top functions by own and cumulative time."""
    loop = Single(case, seed=0)
    loop.run(warmup)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(loop.run, steps)
    wall = time.perf_counter() - start
    loop.close()
    print(f"\n### cProfile: {case.label}, {case.topology} ({case.servers:,} servers), {steps:,} steps, "
          f"{wall:.2f} s under the profiler ({1e6 * wall / steps:.0f} µs/step)\n")
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).strip_dirs().sort_stats(key).print_stats(top)
        body = text.getvalue()
        body = body[body.index("ncalls"):] if "ncalls" in body else body
        print(f"By {key}:\n\n```\n{body.rstrip()}\n```\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20_000, help="steps timed per repeat (default 20,000)")
    parser.add_argument("--warmup", type=int, default=2_000, help="untimed steps first (default 2,000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repeats; the best is kept (default 3)")
    parser.add_argument("--vector", default="2,4", help="sizes of the vectorised envs, comma-separated "
                        "(default 2,4; '' for none)")
    parser.add_argument("--only", choices=("pool", "job"), help="only the pool or only the job cases")
    parser.add_argument("--scale", action="store_true", help="also the single env on 65,536 servers "
                        "(tiered:32,1x4,pods=64,racks=64, its own workload, 4,096 requests an episode)")
    parser.add_argument("--breakdown", action="store_true", help="also time the single-env loop without "
                        "the wrappers, without the features, and the policy alone")
    parser.add_argument("--profile", action="store_true", help="also profile the single-env pool "
                        "(64 servers) and job loops")
    parser.add_argument("--profile-steps", type=int, default=20_000, help="steps profiled (default 20,000)")
    parser.add_argument("--top", type=int, default=25, help="functions listed per profile (default 25)")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.vector.split(",") if n.strip()]

    chosen = [c for c in cases() if args.only in (None, c.label)]
    if args.scale and args.only in (None, SCALE[0]):
        chosen.append(scale_case())
    print(f"{args.steps:,} steps timed per repeat after {args.warmup:,} untimed, best of {args.repeat}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start\n")
    print("| mode | topology | servers | workload (suite scenario) | requests/episode | env | envs "
          "| steps timed | steps/s | µs/step |")
    print("|---|---|---:|---|---:|---|---:|---:|---:|---:|")
    for case in chosen:
        loops = [("single", 1, lambda: Single(case, seed=0))]
        for kind in (SyncVectorEnv, AsyncVectorEnv) if case.suite else ():
            loops += [(kind.__name__, n, functools.partial(Vector, case, 0, kind, n)) for n in sizes]
        for name, n, build in loops:
            loop = build()
            try:
                timed, rate = best_rate(loop, args.steps, args.warmup, args.repeat)
            finally:
                loop.close()
            where = f"{case.workload} ({case.suite} {case.scenario})" if case.suite else "the topology's own"
            print(f"| {case.label} | {case.topology} | {case.servers:,} | {where} "
                  f"| {case.requests:,} | {name} | {n} | {timed:,} "
                  f"| {rate:,.0f} | {1e6 / rate:.1f} |", flush=True)
    if args.breakdown:
        breakdown(chosen, args.steps, args.warmup, args.repeat)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")

    if args.profile:
        for label, servers in (("pool", 64), ("job", None)):
            case = next((c for c in chosen if c.label == label and servers in (None, c.servers)), None)
            if case is not None:
                profile(case, args.profile_steps, args.warmup, args.top)


if __name__ == "__main__":
    main()
