"""``dcbench data convert FORMAT SOURCE DESTINATION``: a public cluster trace as a canonical trace
(docs/workloads.md). Loaded only by the command line (`register_commands`), so that runs never import click."""

from __future__ import annotations

from pathlib import Path

import click

from dcbench import SpecError
from dcbench.plugins.workloads.traces import alibaba_2018, alibaba_gpu_2023, azure_packing_2020
from dcbench.plugins.workloads.traces.convert import Kept, Machine, summary, write_canonical

FORMATS = ("alibaba-gpu-2023", "alibaba-2018", "azure-packing-2020")
MACHINE_FORMATS = ("alibaba-2018", "azure-packing-2020")  # traces in fractions of a machine


@click.group()
def data() -> None:
    """Trace files for the trace workload (docs/workloads.md)."""


@data.command()
@click.argument("trace_format", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("destination", type=click.Path(path_type=Path))
@click.option("--from", "since", type=float, default=None, help="Drop requests arriving before this (seconds of the "
              "source's clock).")
@click.option("--to", "until", type=float, default=None, help="Drop requests arriving at or after this.")
@click.option("--cpu-only", is_flag=True, help="alibaba-gpu-2023: drop the pods that ask for a GPU.")
@click.option("--machine-cores", type=float, default=Machine.cores, show_default=True,
              help="azure-packing-2020: the cores of a whole machine.")
@click.option("--machine-mem", type=float, default=Machine.mem, show_default=True,
              help="alibaba-2018, azure-packing-2020: the GiB of memory of a whole machine.")
@click.option("--machine-disk", type=float, default=Machine.disk, show_default=True,
              help="azure-packing-2020: the GB of SSD of a whole machine.")
@click.option("--machine-id", type=int, default=None,
              help="azure-packing-2020: the machine generation whose VM type sizes to use (default: the one whose "
                   "types cover the most requests).")
def convert(trace_format: str, source: Path, destination: Path, since: float | None, until: float | None,
            cpu_only: bool, machine_cores: float, machine_mem: float, machine_disk: float,
            machine_id: int | None) -> None:
    """Convert SOURCE, a public trace in FORMAT, to DESTINATION, a canonical trace (.csv).

    \b
    alibaba-gpu-2023    openb_pod_list_*.csv of alibaba/clusterdata cluster-trace-gpu-v2023
    alibaba-2018        batch_task.csv of cluster-trace-v2018
    azure-packing-2020  the .sqlite file of the Azure trace for packing 2020

    It prints what it kept and dropped, and the file's sha256 (the trace workload's sha256=).
    """
    for path in (source, destination):
        if not str(path).strip():
            raise SpecError("a path is empty (an unset shell variable?); give a path")
    if cpu_only and trace_format != "alibaba-gpu-2023":
        raise SpecError(f"--cpu-only applies to alibaba-gpu-2023 only, not {trace_format}")
    machine = Machine(machine_cores, machine_mem, machine_disk)
    for name, value in (("--machine-cores", machine_cores), ("--machine-mem", machine_mem),
                        ("--machine-disk", machine_disk)):
        if not 0 < value < float("inf"):
            raise SpecError(f"{name} is {value:g}; give a positive number")
    kept = Kept(f"source '{source}'", since, until)
    if trace_format == "alibaba-gpu-2023":
        alibaba_gpu_2023.convert(source, kept, cpu_only)
    elif trace_format == "alibaba-2018":
        alibaba_2018.convert(source, kept, machine)
    else:
        azure_packing_2020.convert(source, kept, machine, machine_id)
    columns, names = kept.table()
    digest = write_canonical(destination, columns, names)
    click.echo(summary(columns, kept, destination, digest))
