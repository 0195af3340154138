"""What a sweep and its report call scenarios and specs: plugin defaults left out, distinguishing options kept."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from dcbench.errors import SpecError
from dcbench.spec import Spec, bind, resolved_spec


def default_specs(registry: Any, kind: str = "allocator") -> dict[str, str]:
    """Each ``kind`` plugin's resolved spec at its defaults (plugins with a required parameter left out)."""
    specs = {}
    for name, entry in registry.entries(kind).items():
        try:
            specs[name] = resolved_spec(name, bind(name, entry.params, Spec(name)))
        except SpecError:
            continue
    return specs


def compact_spec(spec: str, registry: Any, kind: str, keep: Iterable[str] = ()) -> str:
    """A resolved spec as short as one would type it: options differing from the defaults or in ``keep``."""
    parsed = Spec.parse(spec)
    entry = registry.entries(kind).get(parsed.name)
    default = default_specs(registry, kind).get(parsed.name) if entry is not None else None
    defaults = Spec.parse(default).kwargs if default is not None else None
    keep = set(keep)
    shown = {key: value for key, value in parsed.kwargs.items()
             if key in keep or defaults is None or defaults.get(key) != value}
    args = []
    for param in (p for p in (entry.params if entry is not None else ()) if p.positional):
        if param.name not in shown:
            break
        args.append(shown.pop(param.name))
    return str(Spec(parsed.name, tuple(args), shown))


def differing_options(specs: Iterable[str]) -> dict[str, set[str]]:
    """By plugin name, the options on which ``specs`` of that plugin differ."""
    by_plugin: dict[str, list[Mapping[str, str]]] = {}
    for spec in dict.fromkeys(specs):
        parsed = Spec.parse(spec)
        by_plugin.setdefault(parsed.name, []).append(parsed.kwargs)
    return {name: {key for key in {k for o in options for k in o} if len({o.get(key) for o in options}) > 1}
            for name, options in by_plugin.items()}


def compact_specs(specs: Sequence[str], registry: Any, kind: str) -> dict[str, str]:
    """`compact_spec` of each of ``specs``, keeping the options on which they differ."""
    differing = differing_options(specs)
    return {spec: compact_spec(spec, registry, kind, differing[Spec.parse(spec).name]) for spec in dict.fromkeys(specs)}


def natural(text: str) -> list[Any]:
    """A sort key that puts 'tiered:8' before 'tiered:16'."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)]


Scenario = tuple[str, str, int]  # (topology, workload, requests): the resolved specs and episode length


def scenario_labels(scenarios: Sequence[Scenario], registry: Any) -> dict[Scenario, str]:
    """What a folder of runs or an ad-hoc sweep calls each scenario: its compact topology, then its workload where not
    the defaults; names alike are told apart by ``n=REQUESTS``, the workload, then the specs."""
    scenarios = list(dict.fromkeys(scenarios))
    topologies = compact_specs([t for t, _, _ in scenarios], registry, "topology")
    workloads = compact_specs([w for _, w, _ in scenarios], registry, "workload")

    def label(scenario: Scenario, detail: int) -> str:
        topology, workload, requests = scenario
        parts = [topologies[topology]]
        if detail == 2 or ":" in workloads[workload]:
            parts.append(workloads[workload])
        if detail:
            parts.append(f"n={requests}")
        return " ".join(parts) if detail < 3 else " ".join(map(str, scenario))

    named = {scenario: label(scenario, 0) for scenario in scenarios}
    for detail in (1, 2, 3):
        alike = [s for s in scenarios if list(named.values()).count(named[s]) > 1]
        for scenario in alike:
            named[scenario] = label(scenario, detail)
    return named
