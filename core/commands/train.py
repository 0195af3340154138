"""`dcbench train`: a learned allocator's checkpoint, from its plugin's trainer."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import click

from dcbench.commands.base import PATH, check_bounds, load_registry, plugin_prints_to_stderr
from dcbench.errors import IncompatibleError, ResultsError, SpecError
from dcbench.hookspecs import hookimpl
from dcbench.registry import PluginEntry, blamed_on
from dcbench.running.progress import progress_bar
from dcbench.spec import MAX_TRAINING_STEPS, Spec
from dcbench.storage.paths import starts_with


def example_topology(registry: Any, demands: tuple[str, ...]) -> str | None:
    """The first suite scenario's topology whose workload makes one of ``demands``."""
    for suite in registry.entries("suite").values():
        for scenario in suite.scenarios:
            if scenario.workload is not None \
                    and getattr(registry.build("workload", scenario.workload).obj, "kind", "pool") in demands:
                return scenario.topology
    return None


@click.command()
@click.option("--allocator", "-a", required=True, help="A learned allocator (see `dcbench list allocators`).")
@click.option("--topology", "-t", required=True, help="Topology spec to train on.")
@click.option("--workload", "-w", default=None, help="Workload spec (default: the topology's own).")
@click.option("--steps", type=int, default=None,
              help="Environment steps after the warm start, at least: training stops at the end of the iteration "
                   "or episode that reaches them; with --quick, every environment step, warm start included, "
                   f"exactly (default: the trainer's, 1,000 with --quick; at most {MAX_TRAINING_STEPS:,}).")
@click.option("--seed", type=int, default=0, show_default=True, help="Training seed.")
@click.option("--out", type=PATH, default=None,
              help="Checkpoint file (.pt, default checkpoints/<allocator>-<topology>.pt); its record, curve and "
                   "plot go beside it (.json, .curve.parquet, .png), the training state to OUT.train/, "
                   "resumed from there. One training writes to it at a time.")
@click.option("--quick", is_flag=True,
              help="A smoke test: small settings (no teacher trials or validation, a short warm start inside "
                   "--steps, small batches) that train in seconds; options given with -a still win. Not a recipe.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or progress lines.")
def train(allocator: str, topology: str, workload: str | None, steps: int | None, seed: int,
          out: Path | None, quick: bool, quiet: bool) -> None:
    """Train a learned allocator's checkpoint (resumes an interrupted run)."""
    from dcbench.running.runner import Runner
    from dcbench.storage.locks import file_lock, sole_writer
    from dcbench.storage.paths import check_writable

    registry = load_registry()
    entry = registry.get("allocator", allocator.split(":")[0])
    if entry.trainer is None:
        learned = sorted(n for n, e in registry.entries("allocator").items() if e.trainer is not None)
        raise SpecError(f"allocator {entry.name!r} is not trained; "
                        f"trainable allocators: {', '.join(learned) or 'none'}")
    plan = Runner(registry).resolve_scenario(topology, workload)  # check the scenario before training
    kind = getattr(plan.workload_model, "kind", "pool")
    if kind not in entry.demands:
        example = example_topology(registry, entry.demands)
        raise IncompatibleError(f"{entry.name} learns {'/'.join(entry.demands)} demands but workload "
                                f"{plan.workload.split(':')[0]!r} makes {kind} demands; "
                                + (f"train it on a topology that serves them, e.g. -t {example}" if example
                                   else "give a workload that makes them with -w"))
    trainer = PluginEntry("trainer", entry.name, entry.trainer, plugin=entry.plugin).load()
    check_bounds("--steps", steps, 1, at_most=MAX_TRAINING_STEPS)
    check_bounds("--seed", seed, 0)
    out = out or Path("checkpoints") / f"{entry.name}-{topology.replace(':', '-').replace(',', '-')}.pt"
    check_writable(out.parent, "the checkpoint")  # before training, not after it
    check_training_outputs(out)
    parsed = Spec.parse(allocator)
    if parsed.args:
        raise SpecError(f"{parsed.name} takes its training options as KEY=VALUE, got {', '.join(parsed.args)!r}; "
                        f"see `dcbench list {parsed.name}`")
    extra: dict[str, Any] = {"options": dict(parsed.kwargs)} if parsed.kwargs else {}
    if quick:
        if not takes_keyword(trainer, "quick"):
            raise SpecError(f"{entry.name}'s trainer has no quick setting; train it without --quick")
        extra["quick"] = True
    state = out.with_name(out.name + ".train")
    resuming = (state / "state.pt").is_file()
    last: dict[str, str] = {}
    with sole_writer(file_lock(out), "train", out), plugin_prints_to_stderr(), \
            progress_bar(quiet, "status") as progress:
        settle_training_outputs(out)
        task = progress.add_task(f"train {entry.name} on {topology}", total=steps, noun="steps", status="")

        def report(row: dict[str, float]) -> None:
            status = status_line(row)
            last.update(steps=f"{row.get('steps', 0):.0f}", status=status)
            progress.update(task, completed=row.get("steps", 0), status=status, unit_done=True)

        with blamed_on(entry, "failed in its trainer"):  # a third-party trainer's exception: one line
            path = trainer(topology=topology, workload=workload, steps=steps, seed=seed, out=out, progress=report,
                           **extra)
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise entry.error(f"trainer returned {path!r}, not the path of the checkpoint it wrote")
    if resuming and not last:  # it reported nothing: the state it resumed had reached --steps already
        said_nothing_was_trained(state, Path(path), steps)
    if last and not quiet:  # the bar was transient (or not drawn): its last line stays in a log
        click.echo(f"steps {last['steps']}  {last['status']}")
    click.echo(f"checkpoint: {path}")


def takes_keyword(function: Any, name: str) -> bool:
    """Whether ``function`` can be called with the keyword ``name``."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): try it
        return True
    return any(p.name == name and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               or p.kind is p.VAR_KEYWORD for p in parameters)


def status_line(row: dict[str, Any]) -> str:
    """A trainer's progress ``row`` as one status text: its ``status``, else ``name value`` (4 significant digits)."""
    if isinstance(row.get("status"), str):
        return " ".join(row["status"].splitlines())  # one line, whatever a plugin gives
    return "  ".join(f"{key} {value:.4g}" for key, value in row.items()
                     if key != "steps" and isinstance(value, (int, float)) and not isinstance(value, bool))


def said_nothing_was_trained(state: Path, checkpoint: Path, steps: int | None) -> None:
    """One line where the trainer resumed a state that had its --steps already (not silence)."""
    from dcbench.storage.records import read_json

    try:
        had = read_json(checkpoint.with_suffix(".json")).get("steps")
    except (OSError, ValueError, AttributeError):
        had = None
    asked = "the trainer's default steps" if steps is None else f"--steps {steps:,}"
    has = f"already has {had:,} steps ≥ {asked}" if isinstance(had, int) else f"had reached {asked} already"
    click.echo(f"Note: the training state at {state} {has}; nothing to train: give more --steps, or another --out "
               "(the checkpoint was written again from the state)", err=True)


def settle_training_outputs(out: Path) -> None:
    """Under the lock of ``out``, settle the writes a killed training left of its checkpoint's files and state."""
    from dcbench.storage.journal import remove_leftovers

    remove_leftovers(out.parent, [out.name, *(out.with_suffix(suffix).name for suffix in TRAINING_OUTPUTS)])
    remove_leftovers(out.with_name(out.name + ".train"), STATE_FILES)


TRAINING_OUTPUTS = (".json", ".curve.parquet", ".png")  # beside the checkpoint
STATE_FILES = ("state.pt", "curve.parquet")  # in OUT.train/


def check_training_outputs(out: Path) -> None:
    """Before training (minutes to hours), check that only an earlier checkpoint would be replaced where it goes."""
    if out.is_dir():
        raise ResultsError(f"--out {out} is a folder; give the checkpoint's file name, e.g. {out / 'model.pt'}")
    if out.suffix != ".pt":
        raise ResultsError(f"--out {out}: give a .pt file name (its .json record and .png plot are written beside it)")
    if out.exists() and not (out.is_file() and starts_with(out, b"PK\x03\x04")):  # torch.save writes a zip
        raise ResultsError(f"--out {out} exists and is not a checkpoint; give another path, or remove it")
    for beside in (out.with_suffix(suffix) for suffix in TRAINING_OUTPUTS):
        if beside.exists() and not beside.is_file():
            raise ResultsError(f"{beside}, where training writes its {beside.suffix[1:]} file, is not a file; "
                               "remove it or give another --out")
    state = out.with_name(out.name + ".train")
    if state.exists() and not state.is_dir():
        raise ResultsError(f"{state}, where training keeps its state, is not a folder; remove it or give another --out")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(train)
