"""``dcbench run``, ``list`` and ``plugins``: one scenario, and what is installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import click

from dcbench.commands.base import MAX_REQUESTS, MAX_SEEDS, PATH, check_bounds, load_registry, plugin_prints_to_stderr
from dcbench.errors import SpecError, UnknownPluginError
from dcbench.hookspecs import hookimpl
from dcbench.registry import KINDS, PLURALS, PluginEntry, Registry, blamed_on
from dcbench.running.progress import progress_bar
from dcbench.spec import Spec, config_params, unknown

KIND_ALIASES = {kind: kind for kind in KINDS} | {PLURALS[kind]: kind for kind in KINDS}


def with_checkpoint(registry: Registry, allocator: str, checkpoint: Path) -> str:
    """The allocator spec with ``checkpoint=PATH`` added (``--checkpoint``)."""
    def takes_checkpoint(entry: Any) -> bool:
        return any(param.name == "checkpoint" for param in entry.params)

    spec = Spec.parse(allocator)
    if not takes_checkpoint(registry.get("allocator", spec.name)):  # an unknown name fails here
        learned = sorted(name for name, entry in registry.entries("allocator").items() if takes_checkpoint(entry))
        raise SpecError(f"allocator {spec.name!r} takes no checkpoint; --checkpoint is for "
                        f"{', '.join(learned) or 'learned allocators'}")
    if "checkpoint" in spec.kwargs:
        raise SpecError("the checkpoint is given twice: use --checkpoint or checkpoint= in the spec, not both")
    if "," in str(checkpoint):  # a spec has no quoting: the comma would split the path into two arguments
        raise SpecError(f"--checkpoint {checkpoint}: a checkpoint's path may not contain ','; rename the file "
                        "or link it from a path without one")
    return str(Spec(spec.name, spec.args, {**spec.kwargs, "checkpoint": str(checkpoint)}))


def _seeds(seed: int | None, seeds: int | None) -> list[int]:
    if seed is not None and seeds is not None:
        raise SpecError("give --seed S or --seeds K, not both")
    check_bounds("--seed", seed, 0)
    check_bounds("--seeds", seeds, 1, at_most=MAX_SEEDS)
    return list(range(seeds)) if seeds is not None else [seed if seed is not None else 0]


BETTER_MARK = {"higher": " ↑", "lower": " ↓", None: ""}


def print_summary(summaries: list[dict[str, Any]], scenario: Mapping[str, Any], kind: str,
                  registry: Registry, asked_columns: Sequence[str] = ()) -> None:
    """The resolved scenario, then a table of the headline columns of the runs' demand ``kind`` over the seeds."""
    from rich.console import Console
    from rich.table import Table

    from dcbench.publishing.report import has_value, headline_columns, mean_and_spread
    from dcbench.running.stats import mean_sd

    for part, value in scenario.items():
        click.echo(f"{part:<10} {value}")
    columns = headline_columns(registry.columns(), kind, summaries)
    shown = {column for column, _, _ in columns}
    columns += [(name, name, None) for name in asked_columns  # (their metrics declare nothing of them)
                if name not in shown and any(has_value(summary.get(name)) for summary in summaries)]
    if not columns:
        click.echo("no headline metric has a value in these runs (see the notes)")
        return
    seeds = len(summaries)
    table = Table(caption="↑ higher is better, ↓ lower is better" if any(b for _, _, b in columns) else None)
    table.add_column("metric")
    table.add_column("column")
    table.add_column(f"mean ± sd, {seeds} seeds" if seeds > 1 else f"seed {summaries[0]['seed']}", justify="right")
    for column, heading, better in columns:
        mean, sd, n = mean_sd([s.get(column) for s in summaries])
        table.add_row(heading + BETTER_MARK[better], column, mean_and_spread(mean, sd if n > 1 else float("nan")))
    Console().print(table)


@click.command()
@click.option("--allocator", "-a", required=True, help="Allocator spec, e.g. tetris or tetris:penalty=0.8.")
@click.option("--topology", "-t", default="tiered:32,1x4", show_default=True, help="Topology spec.")
@click.option("--workload", "-w", default=None, help="Workload spec (default: the topology's own).")
@click.option("--requests", "-n", type=int, default=None,
              help=f"Measured requests per run, after the workload's warm-up (default: the workload's; 2 per "
                   f"server for uniform), at most {MAX_REQUESTS:,}.")
@click.option("--seed", type=int, default=None, help="Run this one seed (default 0).")
@click.option("--seeds", type=int, default=None, help=f"Run seeds 0..K-1 (K at most {MAX_SEEDS:,}).")
@click.option("--out", type=PATH, default=Path("results"), show_default=True,
              help="Folder for the results; each run writes DIR/<run_id>/. One command writes to it at a time.")
@click.option("--checkpoint", type=PATH, default=None,
              help="Weights for a learned allocator instead of its shipped checkpoint "
                   "(the same as -a NAME:checkpoint=PATH).")
@click.option("--metric", "-m", "metrics", multiple=True,
              help="Also compute this third-party metric (repeat it, or list with commas); dcbench's own metrics "
                   "always run.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary table.")
def run(allocator: str, topology: str, workload: str | None, requests: int | None, seed: int | None,
        seeds: int | None, out: Path, checkpoint: Path | None, metrics: tuple[str, ...], quiet: bool) -> None:
    """Run one allocator on one scenario and write its Parquet tables."""
    from dcbench.running.runner import Runner, measuring, run_plan
    from dcbench.running.sweep import split_specs
    from dcbench.storage.journal import remove_leftovers
    from dcbench.storage.locks import folder_lock, sole_writer
    from dcbench.storage.paths import check_writable

    seed_list = _seeds(seed, seeds)
    check_bounds("--requests", requests, 1, at_most=MAX_REQUESTS)
    metrics = tuple(split_specs(metrics, "--metric", "locality")) if metrics else ()
    registry = load_registry()
    if checkpoint is not None:
        allocator = with_checkpoint(registry, allocator, checkpoint)
    with plugin_prints_to_stderr():
        plan, warmup = measuring(Runner(registry).resolve(allocator, topology, workload, None, metrics), requests,
                                 "the run")
    check_writable(out)
    total = plan.requests * len(seed_list)
    summaries = []
    asked_columns: dict[str, None] = {}  # what the metrics asked for that declare no columns wrote: all shown
    notes: set[str] = set()
    with sole_writer(folder_lock(out), "run", out), plugin_prints_to_stderr(), progress_bar(quiet) as progress:
        remove_leftovers(out)  # what killed commands left: none can be writing now
        task = progress.add_task(f"{plan.allocator} on {plan.topology}", total=total, noun="requests")
        for index, run_seed in enumerate(seed_list):
            done_before = index * plan.requests
            result = run_plan(plan, run_seed, lambda k, base=done_before: progress.update(task, completed=base + k))
            result.write(out)
            summaries.append(result.summary)
            for entry in plan.metrics:
                if not entry.columns:  # (one that declares its columns has said which are headlines)
                    asked_columns.update(dict.fromkeys(result.metric_columns.get(entry.name, ())))
            notes.update(result.notes)
            progress.update(task, completed=done_before + plan.requests, unit_done=True)  # a seed done
    for note in sorted(notes):
        click.echo(f"Note: {note}", err=True)
    for summary in summaries:
        click.echo(f"{out / summary['run_id']}  seed={summary['seed']}  "
                   f"accepted {summary['accepted']}/{summary['offered']}")
    if not quiet:
        print_summary(summaries, {"allocator": plan.allocator, "topology": plan.topology,
                                  "workload": plan.workload, "requests": f"{plan.requests - warmup} per seed"
                                  + (f", after a warm-up of {warmup}" if warmup else "")},
                      getattr(plan.workload_model, "kind", "pool"), registry, list(asked_columns))


ENVS = ("envs", "env")  # `dcbench list envs`: the Gymnasium ids of the suites' scenarios


@click.command(name="list")
@click.argument("kind", required=False, metavar="[KIND|NAME]")
def list_(kind: str | None) -> None:
    """List topologies, workloads, allocators, metrics and suites; `list KIND` lists one kind, `list NAME` shows one
    plugin with every parameter, and `list envs` the Gymnasium environment of every suite scenario."""
    registry = load_registry()
    if kind in ENVS:
        from dcbench.envs import env_listing

        heading, *lines = env_listing(registry)
        click.secho(heading, bold=True)
        for line in lines:
            click.echo(line)
        return
    if kind is not None and kind not in KIND_ALIASES:
        named = [(current, registry.entries(current)[kind]) for current in KINDS if kind in registry.entries(current)]
        if not named:
            for current in KINDS:  # a bare name two distributions register: say which to give
                if kind in registry.entries(current).ambiguous:
                    registry.get(current, kind)
            names = sorted({name for current in KINDS for name in registry.entries(current)})
            raise UnknownPluginError(unknown("kind or plugin", kind, [PLURALS[k] for k in KINDS] + [ENVS[0]] + names,
                                             plural="kinds and plugins"))
        for current, entry in named:
            show_entry(current, entry)
        return
    kinds = [KIND_ALIASES[kind]] if kind else list(KINDS)
    for current in kinds:
        entries = registry.entries(current)
        click.secho(PLURALS[current], bold=True)
        if not entries:
            click.echo("  (none)")
        for name, entry in sorted(entries.items()):
            if current == "suite":
                click.echo(f"  {name:<16} {entry.description} "
                           f"[{len(entry.scenarios)} scenarios, ranked by {entry.primary_metric}]")
                continue
            click.echo(f"  {name:<16} {entry.description}")
            details = []
            if entry.params:
                details.append("params: " + ", ".join(p.usage() for p in entry.params))
            if current == "allocator":
                details.append("serves: " + ", ".join(entry.demands))
            if not entry.plugin.startswith("dcbench.plugins."):
                details.append(f"from: {entry.plugin}")
            for detail in details:
                click.echo(f"  {'':<16}   {detail}")


def show_entry(kind: str, entry: Any) -> None:
    click.secho(f"{kind} {entry.name}", bold=True)
    click.echo(f"  {entry.description}")
    if kind == "suite":
        click.echo(f"  ranked by {entry.primary_metric} ({'higher' if entry.higher_is_better else 'lower'} is better)")
        for scenario in entry.scenarios:
            seeds = ",".join(str(seed) for seed in scenario.seeds)
            click.echo(f"  {scenario.label:<16} {scenario.topology}  {scenario.workload or '(its default workload)'}"
                       f"  {scenario.requests or 'default'} requests  seeds {seeds}")
        return
    if kind == "allocator":
        click.echo(f"  serves: {', '.join(entry.demands)} demands"
                   + ("; trained with `dcbench train`" if entry.trainer is not None else ""))
    click.echo(f"  from: {entry.plugin}")
    if entry.params:
        positional = "; a positional one also without its KEY=" if any(p.positional for p in entry.params) else ""
        click.echo(f"  parameters ({entry.name}:KEY=VALUE,...{positional}):")
        for param in entry.params:
            click.echo(f"    {param.help_line()}")
    else:
        click.echo("  no parameters")
    options = []
    if entry.training_options is not None:  # ``module:ConfigClass``, a dataclass of options
        config_class = PluginEntry(entry.kind, entry.name, entry.training_options, plugin=entry.plugin,
                                   distribution=entry.distribution).load()
        with blamed_on(entry, "declares training options that cannot be listed"):
            options = config_params(config_class)
    if options:
        click.echo(f"  training options (-a {entry.name}:KEY=VALUE with dcbench train):")
        width = max(len(option.name) for option in options)
        for option in options:
            click.echo(f"    {option.help_line(width)}")


@click.command()
def plugins() -> None:
    """List the loaded plugin modules with their distributions and versions, and those turned off."""
    registry = load_registry()
    for plugin in registry.plugins:
        origin = "built-in" if plugin.builtin else "third-party"
        click.echo(f"{plugin.name:<42} {plugin.distribution} {plugin.version}  ({origin})")
    for plugin in registry.disabled:
        click.echo(f"{plugin.name:<42} {plugin.distribution} {plugin.version}  (disabled by DCBENCH_DISABLE_PLUGINS)")
    for failure in registry.failures:
        click.echo(f"broken: {failure}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(run)
    cli.add_command(list_)
    cli.add_command(plugins)
