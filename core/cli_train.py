"""`dcbench train`: a learned allocator's checkpoint, from its plugin's trainer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from dcbench.cli import PATH, UserError, check_bounds, cli, load_registry, plugin_prints_to_stderr, progress_bar
from dcbench.results import starts_with
from dcbench.spec import MAX_TRAINING_STEPS


def example_topology(registry: Any, demands: tuple[str, ...]) -> str | None:
    """The first suite scenario's topology whose workload makes one of ``demands``."""
    for suite in registry.entries("suite").values():
        for scenario in suite.scenarios:
            if scenario.workload is not None \
                    and getattr(registry.build("workload", scenario.workload).obj, "kind", "pool") in demands:
                return scenario.topology
    return None


@cli.command()
@click.option("--allocator", "-a", required=True, help="A learned allocator (see `dcbench list allocators`).")
@click.option("--topology", "-t", required=True, help="Topology spec to train on.")
@click.option("--workload", "-w", default=None, help="Workload spec (default: the topology's own).")
@click.option("--steps", type=int, default=None,
              help="Environment steps, at least: training stops at the end of the iteration or episode "
                   f"that reaches them (default: the trainer's; at most {MAX_TRAINING_STEPS:,}).")
@click.option("--seed", type=int, default=0, show_default=True, help="Training seed.")
@click.option("--out", type=PATH, default=None,
              help="Checkpoint file (.pt, default checkpoints/<allocator>-<topology>.pt); its record, curve and "
                   "plot go beside it (.json, .curve.parquet, .png), the training state to OUT.train/, "
                   "resumed from there. One training writes to it at a time.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def train(allocator: str, topology: str, workload: str | None, steps: int | None, seed: int,
          out: Path | None, quiet: bool) -> None:
    """Train a learned allocator's checkpoint (resumes an interrupted run)."""
    from dcbench.locks import file_lock, sole_writer
    from dcbench.registry import PluginEntry, blamed_on
    from dcbench.results import check_writable
    from dcbench.runner import Runner
    from dcbench.spec import Spec

    registry = load_registry()
    entry = registry.get("allocator", allocator.split(":")[0])
    if "trainer" not in entry.extra:
        learned = sorted(n for n, e in registry.entries("allocator").items() if "trainer" in e.extra)
        raise UserError(f"allocator {entry.name!r} is not trained; "
                        f"trainable allocators: {', '.join(learned) or 'none'}")
    plan = Runner(registry).resolve("random", topology, workload)  # check the scenario before training
    kind = getattr(plan.workload_model, "kind", "pool")
    if kind not in entry.demands:
        example = example_topology(registry, entry.demands)
        raise UserError(f"{entry.name} learns {'/'.join(entry.demands)} demands but workload "
                        f"{plan.workload.split(':')[0]!r} makes {kind} demands; "
                        + (f"train it on a topology that serves them, e.g. -t {example}" if example
                           else "give a workload that makes them with -w"))
    trainer = PluginEntry("trainer", entry.name, entry.extra["trainer"], plugin=entry.plugin).load()
    check_bounds("--steps", steps, 1, at_most=MAX_TRAINING_STEPS)
    check_bounds("--seed", seed, 0)
    out = out or Path("checkpoints") / f"{entry.name}-{topology.replace(':', '-').replace(',', '-')}.pt"
    check_writable(out.parent, "the checkpoint")  # before training, not after it
    check_training_outputs(out)
    parsed = Spec.parse(allocator)
    if parsed.args:
        raise UserError(f"{parsed.name} takes its training options as KEY=VALUE, got {', '.join(parsed.args)!r}; "
                        f"see `dcbench list {parsed.name}`")
    options = dict(parsed.kwargs)
    extra = {"options": options} if options else {}
    last: dict[str, str] = {}
    with sole_writer(file_lock(out), "train", out), plugin_prints_to_stderr(), \
            progress_bar(quiet, "status") as progress:
        settle_training_outputs(out)
        task = progress.add_task(f"train {entry.name} on {topology}", total=steps, status="")

        def report(row: dict[str, float]) -> None:
            status = (f"acceptance {row['acceptance']:.3f}  policy {row['policy_loss']:+.4f}  "
                      f"value {row['value_loss']:.3f}  entropy {row['entropy']:.3f}")
            validation = row.get("validation_acceptance", float("nan"))
            if validation == validation:  # not NaN: this iteration was validated
                status += f"  validation {validation:.3f}"
            last.update(steps=f"{row['steps']:.0f}", status=status)
            progress.update(task, completed=row["steps"], status=status)

        with blamed_on(entry, "failed in its trainer"):  # a third-party trainer's exception: one line
            path = trainer(topology=topology, workload=workload, steps=steps, seed=seed, out=out, progress=report,
                           **extra)
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise entry.error(f"trainer returned {path!r}, not the path of the checkpoint it wrote")
    if last and not quiet:  # the bar was transient (or not drawn): its last line stays in a log
        click.echo(f"steps {last['steps']}  {last['status']}")
    click.echo(f"checkpoint: {path}")


def settle_training_outputs(out: Path) -> None:
    """Under the lock of ``out``, before the trainer reads its state: finish
    (or undo) a write of the checkpoint's files or of the training state that
    a killed training left, and remove the temporary files it left of them."""
    from dcbench.atomic import remove_leftovers

    state = out.with_name(out.name + ".train")
    remove_leftovers(out.parent, [out.name, *(out.with_suffix(suffix).name for suffix in TRAINING_OUTPUTS)])
    remove_leftovers(state, STATE_FILES)


TRAINING_OUTPUTS = (".json", ".curve.parquet", ".png")  # beside the checkpoint
STATE_FILES = ("state.pt", "curve.parquet")  # in OUT.train/


def check_training_outputs(out: Path) -> None:
    """Before training (minutes to hours): nothing but an earlier checkpoint
    may be replaced where it and the files beside it go."""
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give the checkpoint's file name, e.g. {out / 'model.pt'}")
    if out.suffix != ".pt":
        raise UserError(f"--out {out}: give a .pt file name (its .json record and .png plot are written beside it)")
    if out.exists() and not (out.is_file() and starts_with(out, b"PK\x03\x04")):  # torch.save writes a zip
        raise UserError(f"--out {out} exists and is not a checkpoint; give another path, or remove it")
    for beside in (out.with_suffix(suffix) for suffix in TRAINING_OUTPUTS):
        if beside.exists() and not beside.is_file():
            raise UserError(f"{beside}, where training writes its {beside.suffix[1:]} file, is not a file; "
                            "remove it or give another --out")
    state = out.with_name(out.name + ".train")
    if state.exists() and not state.is_dir():
        raise UserError(f"{state}, where training keeps its state, is not a folder; remove it or give another --out")
