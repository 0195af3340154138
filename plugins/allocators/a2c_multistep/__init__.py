"""a2c_multistep: the OCS paper's actor-critic agent, a rack per VM.

Only the registration lives here; torch is imported when the allocator is
built or trained.
"""

from __future__ import annotations

from pathlib import Path

from dcbench import Param, hookimpl
from dcbench.harness import check_writable, folder_lock, sole_writer
from dcbench.plugins.allocators._papers import OCS, OCS_AUTHORS


@hookimpl
def register_allocators(register):
    register(
        "a2c_multistep",
        "dcbench.plugins.allocators.a2c_multistep.allocator:A2CAllocator",
        description="The OCS paper's multi-step A2C agent: an MLP over the per-rack state picks a rack per VM",
        params=[Param("checkpoint", str, None, "checkpoint file (default: the shipped one for the ToR count)")],
        demands=("job",),
        colour="C0",
        learned=True,
        authors=OCS_AUTHORS,
        paper=OCS,
        training_seeds=("500000..",),  # train.py: warm-start episodes from 500,000, training from 1,000,000
        trainer="dcbench.plugins.allocators.a2c_multistep.train:train",
        training_options="dcbench.plugins.allocators.a2c_multistep.config:A2CConfig",
    )


# phi-sweep's sizes: as many test requests and seeds as `dcbench run` takes, episodes as the trainer's limit,
# and costs each of which trains a checkpoint (the paper's figure has six).
MAX_TEST_REQUESTS = 1_000_000
MAX_SEEDS = 10_000
MAX_EPISODE_JOBS = 10_000_000
MAX_COSTS = 100


@hookimpl
def register_commands(cli):
    import click

    @cli.command(name="phi-sweep")
    @click.option("--allocator", "-a", default="a2c_multistep", show_default=True,
                  help="The training spec, a2c_multistep[:KEY=VALUE,...]; Φ_reconf is the sweep's.")
    @click.option("--topology", "-t", default="ocs:16", show_default=True, help="Topology spec.")
    @click.option("--workload", "-w", default="vmjobs:load=66", show_default=True, help="Workload spec.")
    @click.option("--costs", default="0,5,10,25,30,50", show_default=True,
                  help=f"Φ_reconf values, comma-separated (at most {MAX_COSTS}).")
    @click.option("--steps", type=int, default=100_000, show_default=True, help="Training decisions per value.")
    @click.option("--seeds", default="0,1,2,3,4", show_default=True,
                  help=f"Test seeds, comma-separated (at most {MAX_SEEDS:,}).")
    @click.option("--requests", "-n", type=int, default=None,
                  help=f"Measured jobs per test run, after the warm-up (default: the workload's; at most "
                       f"{MAX_TEST_REQUESTS:,}).")
    @click.option("--episode-jobs", type=int, default=2_000, show_default=True, help="Jobs per training episode.")
    @click.option("--out", type=click.Path(path_type=Path), default=Path("results/phi-sweep"), show_default=True)
    @click.option("--quiet", "-q", is_flag=True, help="No progress lines (a line per training episode and test run).")
    def phi_sweep_command(allocator, topology, workload, costs, steps, seeds, requests, episode_jobs, out, quiet):
        """Blocking and reconfigurations of a2c_multistep against Φ_reconf (the OCS paper's Fig. 3)."""
        from dcbench import SpecError
        from dcbench.harness import MAX_TRAINING_STEPS
        from dcbench.plugins.allocators.a2c_multistep.phi_sweep import phi_sweep

        try:
            values = [float(c) for c in costs.split(",")]
            seed_list = [int(s) for s in seeds.split(",")]
        except ValueError:
            raise SpecError(f"--costs and --seeds take comma-separated numbers (--costs {costs!r}, --seeds "
                            f"{seeds!r}), e.g. --costs 0,10,50 --seeds 0,1,2") from None
        for option, value, least in (("--steps", steps, 1), ("--episode-jobs", episode_jobs, 1),
                                     ("--seeds", min(seed_list), 0), ("--requests", requests, 1)):
            if value is not None and value < least:
                raise SpecError(f"{option} must be at least {least}, got {value}")
        for option, value, most in (("--steps", steps, MAX_TRAINING_STEPS), ("--seeds", max(seed_list), 2**53),
                                    ("--episode-jobs", episode_jobs, MAX_EPISODE_JOBS),
                                    ("--requests", requests, MAX_TEST_REQUESTS)):
            if value is not None and value > most:
                raise SpecError(f"{option} must be at most {most:,}, got {value:,}")
        for option, count, most in (("--costs", len(values), MAX_COSTS), ("--seeds", len(seed_list), MAX_SEEDS)):
            if count > most:
                raise SpecError(f"{option} lists {count:,} values; give at most {most:,}")
        progress = None if quiet else (lambda line: click.echo(line, err=True))  # stdout: the results alone
        check_writable(out)
        with sole_writer(folder_lock(out), "phi-sweep", out):  # one command writes to the folder at a time
            table = phi_sweep(topology, workload, values, steps, seed_list, requests, out, click.echo, episode_jobs,
                              allocator, progress)
        click.echo(f"table: {table}\nplot: {table.with_suffix('.png')}")
