"""Specs, ``NAME[:ARG,ARG,KEY=VALUE,...]``, bound to the `Param`s a plugin declares; the resolved spec (every
parameter, in declaration order) identifies a run."""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, Callable, Mapping, Sequence

from dcbench.errors import SpecError, cut, short_repr

# a plugin's name, or one qualified by its distribution's, which may start with a digit (``3d-pack.firstfit``)
_NAME = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_.\-]*|[A-Za-z0-9][A-Za-z0-9\-]*\.[A-Za-z_][A-Za-z0-9_\-]*)$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_SPEC_CHARACTERS = 5_000  # room for a checkpoint= path of 4,096 bytes; longer is a paste gone wrong
ECHOED = 80  # the most characters of a spec, or of a part of it, that an error quotes
_REQUIRED: Any = object()
_OPTION = "dcbench.option"  # the key of `Param.option`'s declaration in a field's metadata
_BOOLS = dict.fromkeys(("yes", "true", "1", "on"), True) | dict.fromkeys(("no", "false", "0", "off"), False)
LARGEST_INTEGER = 2**53  # larger integers overflow numpy's int64 draws, and are never meant
# Bounds that refuse a typo rather than run out of memory or time, far above any suite run or shipped recipe.
MAX_REQUESTS = 1_000_000
MAX_TRAINING_STEPS = 10_000_000


def _echo(text: str) -> str:
    return short_repr(text, ECHOED)


@dataclass(frozen=True)
class Spec:
    """A parsed spec: a plugin name, positional and keyword arguments (strings).

    Attributes:
        name: The plugin's name (``tiered``).
        args: The positional arguments as written (``("32", "1x4")``).
        kwargs: The keyword arguments, ``KEY`` to ``VALUE`` text, in order."""

    name: str
    args: tuple[str, ...] = ()
    kwargs: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> "Spec":
        """Parse a spec; whitespace around the name, ``:``, ``,`` and ``=`` is dropped.

        Args:
            text: The spec as typed: ``NAME[:ARG,...,KEY=VALUE,...]``.
        Returns:
            The parsed spec, its values still text.
        Raises:
            SpecError: It is malformed, or longer than `MAX_SPEC_CHARACTERS`."""
        text = text.strip()
        if len(text) > MAX_SPEC_CHARACTERS:
            raise SpecError(f"spec {_echo(text)} has {len(text):,} characters, more than the "
                            f"{MAX_SPEC_CHARACTERS:,} a spec may have; shorten it")
        expected = "expected NAME[:ARG,...,KEY=VALUE], e.g. 'tiered:32,1x4,pods=8'"
        name, sep, rest = (part.strip() for part in text.partition(":"))
        malformed = f"malformed spec {_echo(text)}"
        if not _NAME.match(name):
            raise SpecError(f"{malformed}: bad name {_echo(name)}; {expected}")
        args: list[str] = []
        kwargs: dict[str, str] = {}
        if sep and not rest:
            raise SpecError(f"{malformed}: nothing after ':'; {expected}")
        for item in rest.split(",") if rest else []:
            item = item.strip()
            if not item:
                raise SpecError(f"{malformed}: empty argument; {expected}")
            key, eq, value = item.partition("=")
            if eq:
                key, value = key.strip(), value.strip()
                if not _KEY.match(key) or not value:
                    raise SpecError(f"{malformed}: bad keyword {_echo(item)}; {expected}")
                if key in kwargs:
                    raise SpecError(f"{malformed}: {_echo(key)} given twice")
                kwargs[key] = value
            elif kwargs:
                raise SpecError(f"{malformed}: positional {_echo(item)} after a keyword; "
                                "put positional arguments first")
            else:
                args.append(item)
        return cls(name, tuple(args), kwargs)

    def __str__(self) -> str:
        items = list(self.args) + [f"{k}={v}" for k, v in self.kwargs.items()]
        return self.name + (":" + ",".join(items) if items else "")


def parse_int(text: str) -> int:
    """``int`` of ASCII digits, without ``_`` separators: Python's own reads ``８`` and ``1_0``."""
    if "_" in text or not text.isascii():
        raise ValueError("not an integer")
    return int(text)


def parse_finite_float(text: str) -> float:
    """``float`` as `parse_int` reads an int, and finite: no parameter means nan or ±inf."""
    value = float(text) if "_" not in text and text.isascii() else math.nan
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def check_bounds(option: str, value: int | None, minimum: int, at_most: int = LARGEST_INTEGER) -> None:
    """Refuse a count (``option``, as an error names it) below ``minimum`` or above ``at_most``; None passes."""
    if value is not None and value < minimum:
        raise SpecError(f"{option} must be at least {minimum}, got {value}")
    if value is not None and value > at_most:
        raise SpecError(f"{option} must be at most {at_most:,}, got {value:,}")


_PARSERS: dict[type, Callable[[str], Any]] = {int: parse_int, float: parse_finite_float, str: str,
                                              bool: lambda text: _BOOLS[text.lower()]}
PARAM_TYPES = tuple(_PARSERS)
_TYPE_NAMES = {int: "an integer", float: "a finite number", str: "a string", bool: "yes or no"}


def format_value(value: Any) -> str:
    """How a parameter value is written in a resolved spec."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class Param:
    """A parameter a plugin accepts, or a trainer's training option (`Param.option`).

    Attributes:
        name: The ``KEY`` of ``KEY=VALUE``, and the factory's keyword.
        type: ``str``, ``int``, ``float`` or ``bool`` (yes/no, true/false, 1/0, on/off).
        default: Its value where a spec gives none (None: the plugin decides); left out, the parameter is required.
        help: One line for ``dcbench list NAME``.
        choices: The only values it may take (None: any of its type).
        positional: Whether it may also be given by position, in declaration order.
        minimum: The smallest value a number may take (None: no bound).
        above: Whether ``minimum`` itself is excluded.
        maximum: The largest value a number may take (None: no bound)."""

    name: str
    type: type = str
    default: Any = _REQUIRED
    help: str = ""
    choices: tuple[Any, ...] | None = None
    positional: bool = False
    minimum: float | None = None
    above: bool = False
    maximum: float | None = None

    @property
    def required(self) -> bool:
        """Whether a spec must give it: it was declared without a default."""
        return self.default is _REQUIRED

    @staticmethod
    def option(default: Any, help: str, range: Range | None = None, choices: tuple[Any, ...] | None = None) -> Any:
        """A field of a trainer's configuration dataclass declared as a training option:
        ``envs: int = Param.option(8, "environments stepped in lockstep", Range(1, 256))``.

        Args:
            default: The value when ``-a NAME:KEY=VALUE`` does not give one.
            help: One line for ``dcbench list NAME``.
            range: The values a number may take (None: any finite one).
            choices: The only values it may take (None: any of its type).
        Returns:
            A `dataclasses.field` with that default, the rest in its metadata."""
        bounds = range or Range()
        declared = {"help": help, "choices": choices, "minimum": bounds.low, "maximum": bounds.high,
                    "above": bounds.above}
        return field(default=default, metadata={_OPTION: declared})

    def convert(self, owner: str, raw: str) -> Any:
        """``raw`` as a value of the parameter's type, checked against its choices and range.

        Args:
            owner: The plugin's name, which starts every error.
            raw: The value's text in the spec.
        Returns:
            The typed value.
        Raises:
            SpecError: Not of its type (ASCII digits, finite), not one of its choices, or out of its range."""
        try:
            value = _PARSERS[self.type](raw)
        except (ValueError, KeyError):
            non_ascii = self.type in (int, float) and any(c.isdigit() and not c.isascii() for c in raw)
            hint = "; write its digits as ASCII 0-9" if non_ascii else ""
            what = _TYPE_NAMES.get(self.type, self.type.__name__)
            raise SpecError(f"{owner}: {self.name}={_echo(raw)} is not {what}{hint}") from None
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(format_value(c) for c in self.choices)
            raise SpecError(f"{owner}: {self.name}={_echo(raw)} is not one of {allowed}")
        problem = Range(self.minimum, self.maximum, self.above).violation(value) \
            if self.type in (int, float) else None
        if not problem and self.type is int and abs(value) > LARGEST_INTEGER:
            problem = f"at most {LARGEST_INTEGER:,} in size"
        if problem:
            raise SpecError(f"{owner}: {self.name}={_echo(raw)} must be {problem}")
        return value

    def usage(self) -> str:
        """The parameter in a plugin's usage line.

        Returns:
            ``name=a|b``, ``name=default``, ``name (required)``, or the bare name."""
        text = self.name
        if self.choices is not None:
            text += "=" + "|".join(format_value(c) for c in self.choices)
        elif not self.required and self.default is not None:
            text += "=" + format_value(self.default)
        elif self.required:
            text += " (required)"
        return text

    def help_line(self, width: int = 16) -> str:
        """One line for `dcbench list NAME`: name, allowed values, default, help.

        Args:
            width: The characters the name is padded to.
        Returns:
            The line, without a newline."""
        if self.required:
            default = "required"
        elif self.default is None:
            default = "default: the plugin decides"
        else:
            default = f"default {format_value(self.default)}"
        if self.choices is not None:
            allowed = "one of " + ", ".join(format_value(c) for c in self.choices)
        elif self.type in (int, float):
            allowed = {int: "integer", float: "number"}[self.type]
            if self.minimum is not None and self.maximum is not None and not self.above:
                allowed += f" from {format_value(self.minimum)} to {format_value(self.maximum)}"
            elif self.minimum is not None:
                allowed += (" > " if self.above else " ≥ ") + format_value(self.minimum)
                if self.maximum is not None:
                    allowed += f" and ≤ {format_value(self.maximum)}"
            elif self.maximum is not None:
                allowed += f" ≤ {format_value(self.maximum)}"
        else:
            allowed = {bool: "yes or no"}.get(self.type, "text")
        place = ", positional" if self.positional else ""
        return f"{self.name:<{width}} {allowed}; {default}{place}" + (f" — {self.help}" if self.help else "")


def unknown(what: str, name: str, known: Sequence[str], plural: str | None = None) -> str:
    """``unknown <what> 'name'; did you mean 'x'? Known <what>s: ...`` (the suggestion where one is close)."""
    close = difflib.get_close_matches(name, list(known), n=1)
    suggestion = f"; did you mean {close[0]!r}?" if close else "."
    return f"unknown {what} {_echo(name)}{suggestion} Known {plural or what + 's'}: {', '.join(known) or 'none'}"


def bind(owner: str, params: Sequence[Param], spec: Spec) -> dict[str, Any]:
    """Bind a spec's arguments to declared parameters, converting their types."""
    by_name = {p.name: p for p in params}
    positional = [p for p in params if p.positional]
    if len(spec.args) > len(positional):
        names = ", ".join(p.name for p in positional) or "none"
        raise SpecError(f"{owner}: takes {len(positional)} positional argument(s) ({names}), "
                        f"got {len(spec.args)} in {_echo(str(spec))}")
    values: dict[str, Any] = {}
    for param, raw in zip(positional, spec.args):
        values[param.name] = param.convert(owner, raw)
    for key, raw in spec.kwargs.items():
        if key not in by_name:
            raise SpecError(f"{owner}: {unknown('parameter', key, list(by_name))}")
        if key in values:
            raise SpecError(f"{owner}: {key!r} given both by position and by keyword")
        values[key] = by_name[key].convert(owner, raw)
    missing = [param.name for param in params if param.required and param.name not in values]
    if missing:
        raise SpecError(f"{owner}: missing required parameter {missing[0]!r}")
    return {param.name: values.get(param.name, param.default) for param in params}


def resolved_spec(name: str, values: Mapping[str, Any]) -> str:
    """The canonical text of a bound spec: every parameter by keyword, ``None`` left out."""
    items = [f"{k}={format_value(v)}" for k, v in values.items() if v is not None]
    return name + (":" + ",".join(items) if items else "")


@dataclass(frozen=True)
class Range:
    """The values a number may take: ``low`` (excluded where ``above``) to ``high``; None: open.

    Attributes:
        low: The smallest value (None: no lower bound).
        high: The largest value, included (None: no upper bound).
        above: Whether ``low`` itself is excluded."""

    low: float | None = None
    high: float | None = None
    above: bool = False

    def violation(self, value: float) -> str | None:
        """What ``value`` must be instead, or None when it is in range.

        Args:
            value: The number to check.
        Returns:
            The bound it breaks ("at least 1 and at most 256"), or None."""
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            low = f"greater than {format_value(self.low)}" if self.above else f"at least {format_value(self.low)}"
            return low + (f" and at most {format_value(self.high)}" if self.high is not None else "")
        if self.high is not None and value > self.high:
            return f"at most {format_value(self.high)}"
        return None


def config_params(config_class: type) -> list[Param]:
    """A `Param` per field of a trainer's configuration dataclass but ``steps`` (``dcbench train --steps``)."""
    if not is_dataclass(config_class):
        raise TypeError(f"{config_class!r} is not a dataclass of training options")
    if hasattr(config_class, "LIMITS"):
        raise TypeError(f"{config_class.__name__}.LIMITS is not read; declare each field's range with "
                        "Param.option(default, help, Range(...))")
    types = {kind.__name__: kind for kind in PARAM_TYPES}
    params = []
    for setting in fields(config_class):
        if setting.name == "steps":
            continue
        kind = types.get(setting.type) if isinstance(setting.type, str) else setting.type
        if kind not in PARAM_TYPES:
            written = getattr(setting.type, "__name__", setting.type)
            raise TypeError(f"{config_class.__name__}.{setting.name} has type {written}; a training option is str, "
                            "int, float or bool")
        default = _REQUIRED if setting.default is MISSING else setting.default
        params.append(Param(setting.name, kind, default, **setting.metadata.get(_OPTION, {})))
    return params


def config_options(config_class: type, options: Mapping[str, str] | None, owner: str) -> dict[str, Any]:
    """``-a NAME:KEY=VALUE`` training options typed and checked by `config_params`.

    Args:
        config_class: The trainer's configuration dataclass.
        options: The ``KEY=VALUE`` texts given (None: none).
        owner: The allocator's name, which starts every error.
    Returns:
        The options given, typed, by key (defaults left to the dataclass).
    Raises:
        SpecError: An unknown key, ``steps``, or a value `Param.convert` refuses."""
    params = {param.name: param for param in config_params(config_class)}
    parsed: dict[str, Any] = {}
    for key, text in (options or {}).items():
        if key == "steps" and any(setting.name == "steps" for setting in fields(config_class)):
            steps = cut(text, ECHOED)
            raise SpecError(f"{owner}: steps={steps} is not a training option; give it as --steps {steps}")
        if key not in params:
            raise SpecError(f"{owner}: {unknown('training option', key, list(params))}")
        parsed[key] = params[key].convert(owner, text)
    return parsed
