"""Steps per second per core of the native vector env against
``SyncVectorEnv`` over single envs (docs/envs.md).

Both are made by ``gymnasium.make_vec`` on one id, with
``vectorization_mode="sync"`` (N single envs behind Gymnasium's wrappers)
or ``"vector_entry_point"`` (`dcbench.envs.VectorAllocationEnv`), and
stepped by the same loop: a uniformly random allowed action per env,
drawn for the whole batch at once from the batched mask by a seeded numpy
Generator, with NEXT_STEP autoreset. The pool case is ``nara2022``'s
64-server ``tiered:32,1x4``, the job case ``odcn2025``'s 16-ToR
``ocs:16`` at its lowest load. A vectorised step of N envs is N steps.

The time is the process's CPU time (one math thread, one process), so
that other jobs on the machine slow the figures less than wall time
would; the two loops alternate (A B A B ...) and the median of the
repeats is kept. The last column says how the native env stepped its
episodes: as one batch (`BatchedPool`) or one by one (its
``unbatched_reason`` says why). Run from a checkout with dcbench
installed:

    python benchmarks/vector_env_steps.py
    python benchmarks/vector_env_steps.py --sizes 64 --only pool --repeat 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # one math thread, set before numpy loads its BLAS

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

import dcbench.envs  # noqa: E402, F401  (registers the ids)

CASES = {"pool": "dcbench/nara2022-32-1x4-v0", "job": "dcbench/odcn2025-16x32-load54-v0"}
MODES = ("sync", "vector_entry_point")


def choose(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random allowed action per row of the batched mask."""
    return (rng.random(masks.shape) * masks).argmax(axis=1)


class Loop:
    """One vector env and its random policy, stepped ``run(steps)`` env-steps at a time."""

    def __init__(self, env_id: str, mode: str, n: int, requests: int | None):
        kwargs = {} if requests is None else {"requests": requests}
        self.env = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode=mode, **kwargs)
        self.rng = np.random.default_rng(0)
        self.obs, _ = self.env.reset(seed=1_000_000)
        self.n = n

    def run(self, steps: int) -> float:
        """CPU seconds for ``steps`` env-steps (rounded down to whole batches)."""
        env, rng, obs = self.env, self.rng, self.obs
        start = time.process_time()
        for _ in range(max(1, steps // self.n)):
            obs, *_ = env.step(choose(obs["action_mask"], rng))
        self.obs = obs
        return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,8,64", help="numbers of envs, comma-separated (default 1,8,64)")
    parser.add_argument("--only", choices=tuple(CASES), help="only the pool or only the job case")
    parser.add_argument("--steps", type=int, default=8_192, help="env-steps timed per repeat (default 8,192)")
    parser.add_argument("--repeat", type=int, default=5, help="alternated repeats; the median is kept (default 5)")
    parser.add_argument("--requests", type=int, help="measured requests per episode (default: the scenario's)")
    args = parser.parse_args(argv)
    print(f"{args.steps:,} env-steps per repeat, median of {args.repeat} alternated repeats, CPU time; "
          f"load average {os.getloadavg()[0]:.2f} at the start\n")
    print("| mode | id | envs | SyncVectorEnv steps/s | native steps/s | speed-up | episodes stepped |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, env_id in CASES.items():
        if args.only not in (None, label):
            continue
        for n in [int(size) for size in args.sizes.split(",")]:
            loops = [Loop(env_id, mode, n, args.requests) for mode in MODES]
            for loop in loops:
                loop.run(args.steps // 4)  # warm-up
            times: list[list[float]] = [[], []]
            for _ in range(args.repeat):
                for which, loop in enumerate(loops):
                    times[which].append(loop.run(args.steps))
            steps = max(1, args.steps // n) * n
            sync, native = (steps / statistics.median(t) for t in times)
            stepped = "batch" if loops[1].env.unwrapped.unbatched_reason is None else "one by one"
            print(f"| {label} | `{env_id}` | {n} | {sync:,.0f} | {native:,.0f} | {native / sync:.1f}× "
                  f"| {stepped} |", flush=True)
            for loop in loops:
                loop.env.close()
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
