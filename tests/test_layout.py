"""The layout's rules (docs/concepts.md, docs/plugins.md): the core's layers
import only the layers below them, with no import cycle and no import of
the package root; the core imports nothing from the plugins and its logic
names no built-in plugin; every plugin, built-in ones included, imports
from dcbench only its public API: ``dcbench``, ``dcbench.envs`` and
``dcbench.harness`` (the names of their ``__all__``), besides the plugins'
own modules."""

import ast
import importlib
import inspect
import re
import textwrap
from pathlib import Path
from typing import Any, Collection

import pytest

import dcbench

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = {"dcbench", "dcbench.envs", "dcbench.harness", "dcbench.testing"}


def dcbench_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every import of a dcbench module in ``path``, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dcbench":
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names if alias.name.split(".")[0] == "dcbench"]
    return found


def sources(folder: str) -> list[Path]:
    paths = sorted((ROOT / folder).rglob("*.py"))
    if not paths:
        pytest.skip(f"no {folder}/ here (an installed wheel)")
    return paths


def test_the_core_imports_nothing_from_the_plugins():
    offending = [f"{path.relative_to(ROOT)}: {module}" for path in sources("core")
                 for module, _ in dcbench_imports(path) if module.startswith("dcbench.plugins")]
    assert offending == []


def test_plugins_import_only_the_public_api():
    offending = []
    for path in sources("plugins"):
        for module, names in dcbench_imports(path):
            if module.startswith("dcbench.plugins"):
                continue  # a plugin's own modules, or a built-in one it builds on
            if module not in PUBLIC_MODULES:
                offending.append(f"{path.relative_to(ROOT)}: {module}")
            else:
                public = importlib.import_module(module).__all__
                offending += [f"{path.relative_to(ROOT)}: {module}.{name}" for name in names if name not in public]
    assert offending == []


def test_the_names_that_left_the_top_level_in_0_4_are_gone_from_it():
    for name in ("Runner", "get_registry", "write_atomic", "mean_ci", "pyplot", "PathCatalogue", "required_pairs"):
        assert not hasattr(dcbench, name) and name not in dcbench.__all__
    with pytest.raises(AttributeError, match="module 'dcbench' has no attribute 'Runner'"):
        dcbench.Runner


SECTION = re.compile(r"^(Args|Arguments|Attributes|Returns|Yields|Raises):\s*$")


def doc_sections(doc: str | None) -> dict[str, list[str]]:
    """A Google-style docstring's sections (Args, Attributes, Returns, Yields,
    Raises): by heading, the names its entries start with (``source:``,
    ``SpecError:``); the Returns and Yields sections list their first words."""
    lines = inspect.cleandoc(doc or "").splitlines()
    sections: dict[str, list[str]] = {}
    for at, line in enumerate(lines):
        heading = SECTION.match(line)
        if heading is None:
            continue
        indent = len(line) - len(line.lstrip())
        body = []
        for following in lines[at + 1:]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        depth = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        entries = [re.match(r"\**(\w+)", b.strip()) for b in body if b.strip() and len(b) - len(b.lstrip()) == depth]
        name = {"Arguments": "Args"}.get(heading[1], heading[1])
        sections.setdefault(name, []).extend(entry[1] for entry in entries if entry)
    return sections


def raised_errors(function: Any) -> set[str]:
    """The dcbench error classes ``function``'s own body raises by name
    (``raise SpecError(...)``, ``raise dcbench.SpecError``, ``raise
    AllocatorError.of_allocator(...)``), nested functions left out; an error
    made elsewhere (``raise entry.error(...)``) is not seen."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError):
        return set()
    found = set()
    nodes = list(ast.iter_child_nodes(tree.body[0]))
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        nodes.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Raise) and node.exc is not None:
            chain, named = [], node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            while isinstance(named, ast.Attribute):
                chain.insert(0, named.attr)
                named = named.value
            value = function.__globals__.get(named.id) if isinstance(named, ast.Name) else None
            for attribute in [None, *chain]:  # the first of dcbench.SpecError, AllocatorError.of_allocator
                value = value if attribute is None else getattr(value, attribute, None)
                if isinstance(value, type) and issubclass(value, dcbench.DcbenchError):
                    found.add(value.__name__)
                    break
    return found


def returns_a_value(function: Any) -> tuple[bool, bool]:
    """Whether ``function`` gives something back, and whether it is a generator
    that yields values (a context manager's bare ``yield`` gives nothing):
    from its return annotation, else from a ``return VALUE`` in its body."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    except (OSError, TypeError):
        return False, False
    own, nodes = [], list(ast.iter_child_nodes(tree))
    while nodes:
        node = nodes.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            own.append(node)
            nodes.extend(ast.iter_child_nodes(node))
    yields = [node for node in own if isinstance(node, (ast.Yield, ast.YieldFrom))]
    if yields:
        return False, any(node.value is not None for node in yields)
    annotation = tree.returns
    if annotation is not None:
        return not (isinstance(annotation, ast.Constant) and annotation.value in (None, "None")), False
    return any(isinstance(node, ast.Return) and node.value is not None for node in own), False


def documentation_gaps(label: str, function: Any, skip_first: bool = False) -> list[str]:
    """What ``function``'s own docstring leaves out of what it takes, gives
    and raises: each parameter (but ``self``/``cls`` and ``*args``/``**kwargs``)
    under Args, Returns (Yields for a generator) where it returns a value,
    and under Raises each dcbench error its body raises."""
    function = inspect.unwrap(function)
    doc = function.__doc__
    if not (doc or "").strip():
        return [f"{label}: no docstring"]
    sections = doc_sections(doc)
    gaps = []
    parameters = list(inspect.signature(function).parameters.values())
    for parameter in parameters[1:] if skip_first else parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name not in sections.get("Args", []):
            gaps.append(f"{label}: no Args: for {parameter.name!r}")
    gives, yields = returns_a_value(function)
    if gives and "Returns" not in sections:
        gaps.append(f"{label}: no Returns:")
    if yields and "Yields" not in sections:
        gaps.append(f"{label}: no Yields:")
    gaps += [f"{label}: no Raises: for {error}" for error in sorted(raised_errors(function))
             if error not in sections.get("Raises", [])]
    return gaps


def class_documentation_gaps(label: str, cls: type, checked_apart: Collection[type] = (),
                             ours: str = "dcbench") -> list[str]:
    """What a public class's docstring and its public methods leave out: its
    constructor's parameters under the class's Args or Attributes, the dcbench
    errors its ``__init__`` raises under its Raises, then each method defined
    in dcbench's own code, the modules named ``ours...`` (`documentation_gaps`;
    a property needs a docstring). Methods of stdlib or third-party bases
    (tuple, Exception, gymnasium.Env), and those dataclasses and NamedTuples
    generate, are not dcbench's to document; those of a base in
    ``checked_apart`` (a public class itself) are checked there."""
    doc = cls.__doc__
    if not (doc or "").strip():
        return [f"{label}: no docstring"]
    sections = doc_sections(doc)
    documented = sections.get("Args", []) + sections.get("Attributes", [])
    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except ValueError:  # an Exception's own constructor
        parameters = []
    gaps = [f"{label}: no Args: or Attributes: for {parameter.name!r}" for parameter in parameters
            if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
            and not parameter.name.startswith("_") and parameter.name not in documented]
    init = vars(cls).get("__init__")
    if inspect.isfunction(init) and init.__module__.startswith(ours):
        gaps += [f"{label}: no Raises: for {error}" for error in sorted(raised_errors(init))
                 if error not in sections.get("Raises", [])]
    seen = set()
    for base in cls.__mro__:
        if not base.__module__.startswith(ours) or (base is not cls and base in checked_apart):
            continue
        for name, member in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            where = f"{label}.{name}"
            if isinstance(member, property):
                if not (member.__doc__ or "").strip():
                    gaps.append(f"{where}: no docstring")
            elif isinstance(member, (staticmethod, classmethod)):
                gaps += documentation_gaps(where, member.__func__, skip_first=isinstance(member, classmethod))
            elif inspect.isfunction(member):
                gaps += documentation_gaps(where, member, skip_first=True)
    return gaps


def public_documentation_gaps() -> list[str]:
    """Every gap `documentation_gaps` and `class_documentation_gaps` find in
    the public modules' ``__all__`` (constants need no sections; a callable
    from another package, pluggy's ``hookimpl``, only a docstring)."""
    import dcbench.envs
    import dcbench.harness

    gaps = []
    modules = (dcbench, dcbench.harness, dcbench.envs)
    public_classes = {value for module in modules for name in module.__all__
                      if isinstance(value := getattr(module, name), type)}
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            label = f"{module.__name__}.{name}"
            if not callable(value):
                continue
            if not getattr(inspect.unwrap(value), "__module__", "").startswith("dcbench"):
                if not (value.__doc__ or "").strip():
                    gaps.append(f"{label}: no docstring")
            elif isinstance(value, type):
                gaps += class_documentation_gaps(label, value, public_classes)
            else:
                gaps += documentation_gaps(label, value)
    return gaps


def test_every_public_name_is_documented_with_what_it_takes_and_gives():
    gaps = public_documentation_gaps()
    assert not gaps, "public names whose docstrings miss what they take, give or raise:\n" + "\n".join(gaps)


def test_the_documentation_check_sees_what_a_docstring_leaves_out():
    def path_ids(network, source: int, target: int = 0) -> list[int]:
        """Paths between two nodes.

        Args:
            network: The network.
        """
        if source == target:
            raise dcbench.SpecError("the same node")
        return []

    assert documentation_gaps("sample.path_ids", path_ids) == [
        "sample.path_ids: no Args: for 'source'", "sample.path_ids: no Args: for 'target'",
        "sample.path_ids: no Returns:", "sample.path_ids: no Raises: for SpecError"]

    def documented(network, source: int, target: int = 0) -> list[int]:
        """Paths between two nodes.

        Args:
            network: The network.
            source: A node.
            target: Another.

        Returns:
            Their paths.

        Raises:
            SpecError: The same node twice.
        """
        if source == target:
            raise dcbench.SpecError("the same node")
        return []

    assert documentation_gaps("sample.documented", documented) == []

    def pairs(count: int):
        """Pairs, one at a time.

        Args:
            count: How many.
        """
        yield from range(count)

    assert documentation_gaps("sample.pairs", pairs) == ["sample.pairs: no Yields:"]

    class Sample:
        """A sample.

        Args:
            size: Its size.
        """

        def __init__(self, size: int, name: str) -> None:
            if size < 0:
                raise dcbench.AllocatorError.of_allocator("took a negative size")

        def grow(self, by: int) -> int:
            """Grow."""
            return by

    assert class_documentation_gaps("sample.Sample", Sample, ours=__name__) == [
        "sample.Sample: no Args: or Attributes: for 'name'", "sample.Sample: no Raises: for AllocatorError",
        "sample.Sample.grow: no Args: for 'by'", "sample.Sample.grow: no Returns:"]


def test_the_check_sees_an_internal_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from dcbench.results import write_table_atomic\n    import dcbench.stats\n")
    assert dcbench_imports(sample) == [("dcbench.results", ["write_table_atomic"]), ("dcbench.stats", [])]


def builtin_plugin_names() -> set[str]:
    """The names of the registered topologies, workloads, allocators, metrics and suites."""
    registry = dcbench.harness.get_registry()
    return {name for kind in ("topology", "workload", "allocator", "metric", "suite")
            for name in registry.entries(kind)}


def plugin_names_in_logic(folder: Path, names: set[str]) -> list[tuple[str, str]]:
    """(file, literal) of every string literal in ``folder``'s Python files
    that is a plugin's name or one of its specs ('tiered', 'ccf:', 'ccf:
    reconfigure=no'), outside what may name one: `ALLOWED_FILES`, docstrings,
    and the defaults and help texts of the commands' click options."""
    spec = re.compile(rf"(?:{'|'.join(map(re.escape, sorted(names)))})(?::\S*)?")
    found = []
    for path in sorted(folder.rglob("*.py")):
        where = path.relative_to(folder).as_posix()
        if where in ALLOWED_FILES:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        allowed = {id(node.body[0].value) for node in ast.walk(tree)  # docstrings
                   if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                   and node.body and isinstance(node.body[0], ast.Expr)
                   and isinstance(node.body[0].value, ast.Constant)}
        if where.startswith("commands/"):
            allowed |= {id(constant) for call in ast.walk(tree) if isinstance(call, ast.Call)
                        and getattr(call.func, "attr", getattr(call.func, "id", None)) in ("option", "argument")
                        for keyword in call.keywords if keyword.arg in ("default", "help")
                        for constant in ast.walk(keyword.value)}
        found += [(where, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and isinstance(node.value, str) and id(node) not in allowed and spec.fullmatch(node.value)]
    return sorted(set(found))


ALLOWED_FILES = {"registry/kinds.py"}  # BUILTIN_PLUGINS: the modules dcbench loads as its own plugins
# The defaults of a command's options kept in a constant, not in its click.option: bench's topologies.
COMMAND_DEFAULTS = {("commands/bench.py", "tiered:32,1x4"), ("commands/bench.py", "tiered:32,1x4,pods=8,racks=8"),
                    ("commands/bench.py", "tiered:32,1x4,pods=16,racks=32"),
                    ("commands/bench.py", "tiered:32,1x4,pods=64,racks=64"),
                    ("commands/bench.py", "ocs:128,servers=64"),
                    # the examples a sweep's error about a comma list gives
                    ("commands/sweep.py", "tiered:16,1x8"), ("commands/sweep.py", "uniform")}
# Words that are also a metric's name, used as themselves: the requests table's spread column, the demand
# kind "jobs" as headings name it, the acceptance in a benchmark's table.
WORDS = {("engine/simulation.py", "spread"), ("publishing/report.py", "jobs"), ("running/bench.py", "acceptance")}
# The environment's defaults, as a command's: its default topology, and the examples its errors give.
ENV_DEFAULTS = {("envs/__init__.py", "tiered:32,1x4"), ("envs/__init__.py", "uniform")}
# The conformance checks' small scenarios (dcbench.testing.SCENARIOS) and the allocators a metric is checked on.
TESTING_DEFAULTS = {("testing.py", spec) for spec in (
    "tiered:8,1x4", "uniform:max_cpu=32,max_mem=32", "ocs:4,servers=4", "vmjobs:load=4,warmup=10", "random", "tetris")}
# dcbench.envs.evaluate runs any policy with the built-in allocator that asks a policy for each decision
# (POLICY_ALLOCATOR; `policy` is also the name a policy's Python file defines): the env's API names its allocator.
POLICY_RUNNER = {("envs/evaluate.py", "policy")}


def test_the_core_names_no_builtin_plugin_in_its_logic():
    sources("core")
    found = set(plugin_names_in_logic(ROOT / "core", builtin_plugin_names()))
    allowed = COMMAND_DEFAULTS | WORDS | ENV_DEFAULTS | TESTING_DEFAULTS | POLICY_RUNNER
    assert found - allowed == set()
    assert allowed <= found  # one gone: take it off its list


def test_the_check_sees_a_plugin_named_in_logic(tmp_path):
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "plot.py").write_text(
        'import click\n\n@click.option("--topology", default="tiered:8,1x4", help="e.g. tiered")\n'
        'def plot(topology):\n    """Draw tiered figures."""\n    return {"tiered": "fabric"}[topology]\n')
    (tmp_path / "colours.py").write_text(
        '"""ccf"""\n\ndef colour(spec):\n    return "C7" if spec.startswith("ccf:") and "reconfigure=no" in spec '
        'else f"{spec} is tetris"\n')
    assert plugin_names_in_logic(tmp_path, {"tiered", "ccf", "tetris"}) == [("colours.py", "ccf:"),
                                                                           ("commands/plot.py", "tiered")]


# The layers of the core, bottom up, and what each may import (besides itself): docs/concepts.md draws them.
# Lazy imports inside functions count: they are dependencies all the same.
LAYERS = {
    "errors": set(),
    "_version": set(),
    "hookspecs": set(),
    "spec": {"errors"},
    "model": {"errors", "spec"},
    "engine": {"model", "spec", "errors"},
    "registry": {"model", "spec", "hookspecs", "errors", "_version"},
    "storage": {"errors"},
    "running": {"storage", "engine", "model", "registry", "spec", "errors", "_version"},
    "publishing": {"running", "storage", "engine", "model", "registry", "spec", "errors", "_version"},
    "harness": {"running", "storage", "publishing", "registry", "spec"},  # the public API of the three rooms
    "envs": {"running", "storage", "engine", "model", "registry", "spec", "errors"},
    "testing": {"running", "storage", "engine", "model", "registry", "spec", "errors"},
    "commands": {"harness", "running", "storage", "publishing", "envs", "engine", "model", "registry", "spec",
                 "hookspecs", "errors", "_version"},
}
ENTRY_MODULES = {"dcbench", "dcbench.__main__"}  # the public facade and `python -m dcbench`, above every layer


def module_name(path: Path) -> str:
    parts = ["dcbench", *path.relative_to(ROOT / "core").with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every core module and the core modules it imports (a ``from M import name`` of a submodule counts as it)."""
    modules = {module_name(path): path for path in sources("core")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for module, names in dcbench_imports(path):
            if module.startswith("dcbench.plugins"):
                targets.add(module)
                continue
            submodules = {f"{module}.{n}" for n in names} & modules.keys()
            targets |= submodules or {module}
            if submodules and len(submodules) < len(names):
                targets.add(module)
        graph[name] = targets - {name}
    return graph


def layer_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Each import that breaks the layering: a layer importing one it may not, a module
    importing the package root, anything importing the commands, the plugins or a command
    module importing another."""
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if module in ENTRY_MODULES:
                continue
            if target == "dcbench":
                found.append(f"{module} imports the package root")
            elif target.startswith("dcbench.plugins"):
                found.append(f"{module} imports the plugin {target}")
            elif layer_of(module) == "commands" and layer_of(target) == "commands":
                if module != "dcbench.commands" and target != "dcbench.commands.base":
                    found.append(f"{module} imports the command module {target}")
            elif layer_of(target) != layer_of(module) and layer_of(target) not in LAYERS[layer_of(module)]:
                found.append(f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph`` (its strongly connected parts of more than one module), Tarjan's way."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_layer_imports_only_the_layers_below_it():
    graph = import_graph()
    assert {layer_of(m) for m in graph if m not in ENTRY_MODULES} <= set(LAYERS), "a new module: give it a layer"
    assert layer_violations(graph) == []


def test_there_is_no_import_cycle_in_dcbench():
    assert cycles(import_graph()) == []


def test_the_layer_checks_fail_on_a_planted_violation():
    graph = import_graph()
    planted = {**graph, "dcbench.model.network": graph["dcbench.model.network"] | {"dcbench.running.runner"}}
    assert layer_violations(planted) == ["dcbench.model.network (model) imports dcbench.running.runner (running)"]
    planted["dcbench.running.runner"] = graph["dcbench.running.runner"] | {"dcbench", "dcbench.commands.run"}
    assert "dcbench.running.runner imports the package root" in layer_violations(planted)
    assert "dcbench.running.runner (running) imports dcbench.commands.run (commands)" in layer_violations(planted)
    planted["dcbench.running.sweep"] = graph["dcbench.running.sweep"] | {"dcbench.publishing.report"}
    assert ("dcbench.running.sweep (running) imports dcbench.publishing.report (publishing)"
            in layer_violations(planted))  # running never imports publishing
    planted["dcbench.commands.sweep"] = graph["dcbench.commands.sweep"] | {"dcbench.commands.run"}
    assert "dcbench.commands.sweep imports the command module dcbench.commands.run" in layer_violations(planted)
    # model.network -> running.runner -> ... -> model.network
    assert any({"dcbench.model.network", "dcbench.running.runner"} <= set(cycle) for cycle in cycles(planted))


def test_the_graph_sees_lazy_imports_and_submodules_imported_by_name(tmp_path):
    graph = import_graph()
    assert "dcbench.storage.journal" in graph["dcbench.storage.files"]  # imported inside write_atomic
    assert "dcbench.hookspecs" in graph["dcbench.registry.manager"]  # `import dcbench.hookspecs as hookspecs`


def test_every_package_of_the_source_tree_is_one_the_wheel_ships():
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(["dcbench", *init.parent.relative_to(ROOT / "core").parts]) for init in sources("core")
             if init.name == "__init__.py"}
    found |= {".".join(["dcbench", "plugins", *init.parent.relative_to(ROOT / "plugins").parts])
              for init in sources("plugins") if init.name == "__init__.py"}
    assert found - declared == set()
    assert {name for name in declared - found if not name.endswith(".checkpoints")} == set()


def test_the_plugin_reference_counts_each_audiences_public_names():
    page = ROOT / "docs" / "plugins.md"
    if not page.exists():
        pytest.skip("no docs/ here (an installed wheel)")
    counted = dict(re.findall(r"^\| `(dcbench[\w.]*)` \| [^|]+ \| (\d+) \|", page.read_text(), re.M))
    assert {module: int(count) for module, count in counted.items()} == {
        module: len(importlib.import_module(module).__all__) for module in sorted(PUBLIC_MODULES)}
