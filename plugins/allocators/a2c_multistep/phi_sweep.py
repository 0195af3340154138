"""``dcbench phi-sweep``: the OCS paper's Fig. 3, blocking and reconfigurations against Φ_reconf.

For each reconfiguration cost Φ, train an a2c_multistep checkpoint with that
cost (resumable: an interrupted sweep picks up where it stopped), run it on
the test seeds, and draw blocking probability and reconfigurations per job
against Φ with 95% intervals over the seeds.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

from dcbench import IncompatibleError, Spec, SpecError
from dcbench.harness import (
    Runner,
    check_writable,
    format_ci,
    mean_ci,
    measuring,
    pyplot,
    save_figure,
    write_table_atomic,
)


def phi_sweep(topology: str, workload: str, costs: list[float], steps: int, seeds: list[int],
              requests: int | None, out: Path, echo: Callable[[str], None], episode_jobs: int = 2_000,
              allocator: str = "a2c_multistep", progress: Callable[[str], None] | None = None) -> Path:
    """``echo`` says each Φ's results; ``progress``, where given, a line per
    training episode and per test run (what is done, of how many, and the
    time since the sweep began)."""
    from dcbench.plugins.allocators.a2c_multistep.train import train

    spec = Spec.parse(allocator)
    if spec.name != "a2c_multistep":
        raise SpecError(f"phi-sweep trains a2c_multistep, not {spec.name!r}: "
                        "give --allocator a2c_multistep[:KEY=VALUE]")
    if spec.args:
        raise SpecError(f"a2c_multistep takes its training options as KEY=VALUE, got {', '.join(spec.args)!r}")
    options = {key: str(value) for key, value in spec.kwargs.items()}
    if "reconfiguration_cost" in options:
        raise SpecError("phi-sweep sets reconfiguration_cost itself: give the values with --costs")
    episode_jobs_option = "episode_jobs" if "episode_jobs" in options else "--episode-jobs"  # the one that counts
    options.setdefault("episode_jobs", str(episode_jobs))

    wrong = [cost for cost in costs if not math.isfinite(cost) or cost < 0]
    if wrong:
        raise SpecError(f"--costs takes finite numbers of at least 0, got {wrong[0]:g}")
    for option, values in (("--costs", costs), ("--seeds", seeds)):
        if len(set(values)) < len(values):  # a seed twice would count twice in the interval
            raise SpecError(f"{option} lists a value twice; give each once")
    if "," in str(out):  # the checkpoints are run as a2c_multistep:checkpoint=OUT/phi-C.pt, and specs have no quoting
        raise SpecError(f"--out {out}: the sweep's folder may not contain ','; give another")
    runner = Runner()
    topology_spec, network = runner.network(topology)
    if "job" not in network.demand_kinds:
        raise IncompatibleError(f"phi-sweep trains a2c_multistep, which serves job demands, but topology "
                                f"{topology_spec.split(':')[0]!r} serves {'/'.join(network.demand_kinds)} "
                                "demands; give an optical one, e.g. -t ocs:16")
    # The test runs' scenario is checked before the first training, not after it.
    requests = measuring(runner.resolve("random", topology, workload), requests, "the test run")[0].requests
    check_writable(out)
    for written in (out / "phi_sweep.parquet", out / "phi_sweep.png"):  # checked now, not after the training
        if written.exists() and not written.is_file():
            raise SpecError(f"{written}, where phi-sweep writes its results, is not a file; remove it or give "
                            "another --out")
    rows: list[dict[str, Any]] = []
    started = time.monotonic()

    def said(text: str) -> None:
        if progress is not None:
            seconds = int(time.monotonic() - started)
            progress(f"phi-sweep {text}, {seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d} elapsed")

    for number, cost in enumerate(costs, 1):
        checkpoint = out / f"phi-{cost:g}.pt"
        where = f"Φ = {cost:g} ({number}/{len(costs)})"
        train(topology, workload, steps=steps, seed=0, out=checkpoint,
              options={**options, "reconfiguration_cost": str(cost)}, episode_jobs_option=episode_jobs_option,
              progress=lambda row, where=where: said(f"{where}: trained {row['steps']:,.0f}/{steps:,} decisions, "
                                                     f"blocking {row['blocking']:.3f}"))
        for index, seed in enumerate(seeds, 1):
            summary = runner.run(f"a2c_multistep:checkpoint={checkpoint}", topology, workload, requests, seed).summary
            said(f"{where}: tested seed {seed} ({index}/{len(seeds)}), blocking {summary['blocking_probability']:.4f}")
            rows.append({"reconfiguration_cost": float(cost), "seed": seed,
                         "blocking_probability": summary["blocking_probability"],
                         "reconfigurations_per_job": summary["reconfigurations_per_job"]})
        blocking = mean_ci(r["blocking_probability"] for r in rows if r["reconfiguration_cost"] == cost)
        reconfigurations = mean_ci(r["reconfigurations_per_job"] for r in rows if r["reconfiguration_cost"] == cost)
        echo(f"Φ = {cost:g}: blocking {format_ci(*blocking[:2], digits=4)}, "
             f"reconfigurations per job {format_ci(*reconfigurations[:2])}"
             + (" (one seed: no confidence interval)" if len(seeds) == 1 else ""))
    table = out / "phi_sweep.parquet"
    write_table_atomic(table, {key: [r[key] for r in rows] for key in rows[0]})
    plot(rows, out / "phi_sweep.png", f"a2c_multistep on {topology}, {workload}")
    return table


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    plt = pyplot()
    costs = sorted({r["reconfiguration_cost"] for r in rows})
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for axis, metric, label in ((axes[0], "blocking_probability", "blocking probability"),
                                (axes[1], "reconfigurations_per_job", "reconfigurations per job")):
        stats = [mean_ci(r[metric] for r in rows if r["reconfiguration_cost"] == c) for c in costs]
        axis.errorbar(costs, [s[0] for s in stats], yerr=[0.0 if s[1] != s[1] else s[1] for s in stats],
                      marker="o", capsize=3, color="C0")
        axis.set_xlabel("Φ_reconf")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    save_figure(figure, path, dpi=110)
    plt.close(figure)
