"""What a plugin registers, checked as it registers: each ``*_problem`` returns what makes it unusable, or None."""

from __future__ import annotations

import difflib
import inspect
import re
from typing import Any, Mapping

from dcbench.errors import SpecError, short_repr
from dcbench.model.about import about_problem
from dcbench.model.suite import Scenario, Suite
from dcbench.registry.columns import columns_problem
from dcbench.registry.kinds import DEMAND_KINDS, DEMAND_KINDS_TEXT, PLURALS, REGISTER_KEYWORDS
from dcbench.spec import PARAM_TYPES, Param, Spec, bind, resolved_spec

QUALIFIER_DOT = ("its name has a '.', which dcbench keeps for the distribution's name that qualifies it "
                 "(DIST.NAME); use '_' or '-'")
COLOUR_LENGTH = 40


def registration_problem(kind: str, name: Any, target: Any, keywords: Mapping[str, Any]) -> str | None:
    """What makes ``register(name, target, **keywords)`` unusable, or None."""
    if not isinstance(name, str) or not is_spec_name(name):
        return "no spec can give that name; use letters, digits, '_' and '-', starting with a letter or '_'"
    if "." in name:
        return QUALIFIER_DOT
    takes = REGISTER_KEYWORDS[kind]
    known = list(inspect.signature(takes).parameters)
    given = takes(**{keyword: value for keyword, value in keywords.items() if keyword in known})
    description, params = given["description"], given["params"]
    if not isinstance(description, str):
        return f"its description {description!r} is not a string"
    if not _loadable(target):
        return f"its target {target!r} is neither a callable nor a 'module:attr' string"
    if not isinstance(params, (list, tuple)):
        return f"params={params!r} is not a list of dcbench.Param"
    strays = [param for param in params if not isinstance(param, Param)]
    if strays:
        return f"params holds {strays[0]!r}, not a dcbench.Param"
    names = [param.name for param in params]
    if len(set(names)) != len(names):
        return "two of its params have one name"
    for param in params:
        problem = param_problem(param)
        if problem is not None:
            return f"param {param.name!r} {problem}"
    strays = sorted(set(keywords) - set(known))
    if strays:  # a misspelt ``lerned=True`` would otherwise make a learned allocator a baseline
        close = difflib.get_close_matches(strays[0], known, n=1)
        listed = ", ".join(f"{keyword}=" for keyword in known)
        takes_text = f"did you mean {close[0]}=?" if close else f"register takes {listed} for {PLURALS[kind]}"
        return f"it passes the unknown keyword {strays[0]}=; {takes_text}"
    return _keywords_problem(given)


def _keywords_problem(given: Mapping[str, Any]) -> str | None:
    learned = given.get("learned", False)
    if not isinstance(learned, bool):
        return f"learned={learned!r} is not True or False"
    trainer = given.get("trainer")
    if trainer is not None and not _loadable(trainer):
        return f"its trainer {trainer!r} is neither a callable nor a 'module:attr'"
    training_options = given.get("training_options")
    if training_options is not None and not (isinstance(training_options, str) and _loadable(training_options)):
        return f"training_options={short_repr(training_options)} is not a 'module:attr' string"
    demands = given.get("demands", ("pool",))
    if not isinstance(demands, (list, tuple)) or not demands or not set(demands) <= set(DEMAND_KINDS):
        return f"demands={demands!r} is not a tuple of {DEMAND_KINDS_TEXT}"
    if "columns" in given:
        return columns_problem(given["columns"])
    if given.get("colour") is not None:
        return colour_problem(given["colour"])
    figures = given.get("figures")
    if figures is not None and not (isinstance(figures, str) and _loadable(figures)):
        return f"figures={short_repr(figures)} is not a 'module:attr' string"
    if any(key in given for key in ("authors", "paper", "code", "training_seeds")):
        about = {key: given[key] for key in ("authors", "paper", "code", "training_seeds") if given.get(key)}
        problem = about_problem({**about, "kind": "learned" if learned else "heuristic"})
        if problem is not None:
            problem = problem.replace("its kind is not learned", "its allocator is not learned=True")
            return problem.removeprefix("its ")
    return None


def colour_problem(colour: Any) -> str | None:
    """What makes ``colour=`` (a colour, or a mapping from "" and ``KEY=VALUE`` spec options to one) unusable."""
    colours = colour if isinstance(colour, Mapping) else {"": colour}
    for option, value in colours.items():
        if not isinstance(option, str) or option and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=[^,:=]+", option):
            return f"colour has the key {short_repr(option)}; give '' or an option of the spec, KEY=VALUE"
        if not isinstance(value, str) or not value.strip() or not value.isprintable() or len(value) > COLOUR_LENGTH:
            return f"colour={short_repr(value)} is not a colour's name ('C1', 'tab:blue', '#1f77b4')"
    return None


def _loadable(target: Any) -> bool:
    return callable(target) or isinstance(target, str) and ":" in target


def param_problem(param: Param) -> str | None:
    """What makes a declared `Param` unusable, or None: a name a spec can give, and a default it accepts."""
    if not isinstance(param.name, str) or not param.name.isidentifier():
        return "needs a name of letters, digits and '_'"
    if param.type not in PARAM_TYPES:
        return f"has type {getattr(param.type, '__name__', param.type)}; use str, int, float or bool"
    if param.required or param.default is None:
        return None
    try:
        written = resolved_spec("probe", {param.name: param.default})
        if bind("probe", [param], Spec.parse(written))[param.name] != param.default:
            raise SpecError(written)
    except SpecError:
        return f"has default {param.default!r}, which is not a value it accepts"
    return None


def suite_problem(suite: Any) -> str | None:
    """What makes ``register(suite)`` unusable, or None."""
    if not isinstance(suite, Suite):
        return f"it is a {type(suite).__name__}, not a dcbench.Suite"
    if not isinstance(suite.name, str) or not is_spec_name(suite.name):
        return "its name is no name --suite can give; use letters, digits, '_' and '-'"
    if "." in suite.name:
        return QUALIFIER_DOT
    if not isinstance(suite.primary_metric, str) or not suite.primary_metric:
        return f"primary_metric={suite.primary_metric!r} is not a summary column's name"
    if not isinstance(suite.higher_is_better, bool):
        return f"higher_is_better={suite.higher_is_better!r} is not True or False"
    if suite.figures is not None and not (isinstance(suite.figures, str) and _loadable(suite.figures)):
        return f"figures={short_repr(suite.figures)} is not a 'module:attr' string"
    if not isinstance(suite.metrics, (list, tuple)) or not all(isinstance(m, str) and m for m in suite.metrics):
        return f"metrics={short_repr(suite.metrics)} is not a tuple of metric names"
    if suite.reference is not None and not (isinstance(suite.reference, str) and suite.reference):
        return f"reference={short_repr(suite.reference)} is not an allocator spec"
    if not isinstance(suite.scenarios, (list, tuple)) or not suite.scenarios:
        return "it has no scenarios; give scenarios=[dcbench.Scenario(...), ...]"
    labels: set[Any] = set()
    for scenario in suite.scenarios:
        if not isinstance(scenario, Scenario):
            return f"scenarios holds {scenario!r}, not a dcbench.Scenario"
        problem = _scenario_problem(scenario)
        if problem is not None:
            return f"scenario {scenario.label!r} {problem}"
        if scenario.label in labels:
            return f"two scenarios are labelled {scenario.label!r}; give each its own name="
        labels.add(scenario.label)
    return None


def _scenario_problem(scenario: Scenario) -> str | None:
    if not isinstance(scenario.topology, str) or not isinstance(scenario.workload, (str, type(None))):
        return "has a topology or workload that is not a spec string"
    if not isinstance(scenario.name, str) or not scenario.label.isprintable():
        return f"has name={scenario.name!r}, not a string of one line"
    if scenario.requests is not None and (type(scenario.requests) is not int or scenario.requests < 1):
        return f"has requests={scenario.requests!r}, not a positive integer or None"
    seeds = scenario.seeds
    if (not isinstance(seeds, (list, tuple)) or not seeds
            or any(type(seed) is not int or seed < 0 for seed in seeds)):
        return f"has seeds={seeds!r}, not a non-empty list of integers >= 0"
    if len(set(seeds)) < len(seeds):
        return f"lists a seed twice in seeds={seeds!r}; its runs would count twice"
    return None


def is_spec_name(name: str) -> bool:
    try:
        return Spec.parse(name) == Spec(name)
    except SpecError:
        return False
