import re

import pytest

from dcbench import Param, Spec, SpecError
from dcbench.spec import bind, resolved_spec


@pytest.mark.parametrize("text, name, args, kwargs", [
    ("tetris", "tetris", (), {}),
    ("tiered:32,1x4", "tiered", ("32", "1x4"), {}),
    ("tiered:32,1x4,pods=8,racks=8", "tiered", ("32", "1x4"), {"pods": "8", "racks": "8"}),
    ("vmjobs:load=66", "vmjobs", (), {"load": "66"}),
    (" ccf:reconfigure=no ", "ccf", (), {"reconfigure": "no"}),
])
def test_parse(text, name, args, kwargs):
    spec = Spec.parse(text)
    assert (spec.name, spec.args, dict(spec.kwargs)) == (name, args, kwargs)


@pytest.mark.parametrize("text, fragment", [
    ("", "bad name"),
    ("tiered:", "nothing after"),
    ("tiered:32,,1x4", "empty argument"),
    ("tiered:pods=2,32", "positional '32' after a keyword"),
    ("tiered:pods=2,pods=3", "given twice"),
    ("tiered:=3", "bad keyword"),
    ("9lives", "bad name"),
])
def test_malformed_specs_say_what_is_wrong(text, fragment):
    with pytest.raises(SpecError, match=fragment) as info:
        Spec.parse(text)
    assert "\n" not in str(info.value)


LONG = "x" * 100_000  # a paste gone wrong


def test_a_spec_longer_than_any_is_refused_with_its_text_cut():
    from dcbench.spec import MAX_SPEC_CHARACTERS

    assert Spec.parse("tiered:" + "8" * (MAX_SPEC_CHARACTERS - 7)).name == "tiered"
    with pytest.raises(SpecError) as refused:
        Spec.parse("tiered:" + LONG)
    assert str(refused.value) == ("spec 'tiered:" + "x" * 71 + "… has 100,007 characters, more than the 5,000 a spec "
                                  "may have; shorten it")


@pytest.mark.parametrize("option, spec, said", [
    ("-t", "tiered:" + LONG, "Error: spec 'tiered:xxx"),
    ("-t", LONG, "Error: spec 'xxx"),
    ("-w", "uniform:max_cpu=" + LONG, "Error: spec 'uniform:max_cpu=xxx"),
    ("-a", LONG + ":1", "Error: spec 'xxx"),
    ("-t", "tiered:" + LONG[:4_000], "Error: tiered: channels='xxx"),  # within the limit, each echo is cut
    ("-t", LONG[:4_000], "Error: unknown topology 'xxx"),
    ("-t", "tiered:8,1x4," + LONG[:4_000], "Error: tiered: takes 2 positional argument(s) (channels, ratio), got 3 in "
                                           "'tiered:8,1x4,xxx"),
    ("-t", "tiered:8,,," + LONG[:4_000], "Error: malformed spec 'tiered:8,,,xxx"),
    ("-t", "tiered:8," + LONG[:4_000] + "=1", "Error: tiered: unknown parameter 'xxx"),
])
def test_a_long_spec_is_echoed_cut_in_one_short_line(tmp_path, option, spec, said):
    from click.testing import CliRunner

    from dcbench.commands import cli

    args = {"-a": "random", "-t": "tiered:8,1x4", "-w": "uniform"} | {option: spec}
    result = CliRunner().invoke(cli, ["run", *(part for pair in args.items() for part in pair), "--requests", "4",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output.startswith(said)
    assert result.output.count("\n") == 1 and len(result.output) < 300, result.output[:300]
    assert not (tmp_path / "out").exists()


PARAMS = [
    Param("channels", int, None, positional=True, minimum=1),
    Param("ratio", str, "1x4", choices=("1x1", "1x4"), positional=True),
    Param("pods", int, 2),
    Param("fast", bool, False),
]


def test_bind_fills_defaults_and_converts_types():
    values = bind("t", PARAMS, Spec.parse("t:8,pods=3,fast=yes"))
    assert values == {"channels": 8, "ratio": "1x4", "pods": 3, "fast": True}
    assert resolved_spec("t", values) == "t:channels=8,ratio=1x4,pods=3,fast=yes"


@pytest.mark.parametrize("text, fragment", [
    ("t:x", "channels='x' is not an integer"),
    ("t:0", "must be at least 1"),
    ("t:8,1x3", "not one of 1x1, 1x4"),
    ("t:8,1x4,2", "takes 2 positional"),
    ("t:speed=3", "unknown parameter 'speed'. Known parameters: channels, ratio, pods, fast"),
    ("t:pod=3", "unknown parameter 'pod'; did you mean 'pods'? Known parameters: channels, ratio, pods, fast"),
    ("t:8,channels=9", "both by position and by keyword"),
    ("t:fast=maybe", "yes or no"),
])
def test_bind_errors_name_the_problem(text, fragment):
    with pytest.raises(SpecError, match=re.escape(fragment)):
        bind("t", PARAMS, Spec.parse(text))


def test_required_parameter():
    with pytest.raises(SpecError, match="missing required parameter 'load'"):
        bind("w", [Param("load", float)], Spec.parse("w"))


def test_spec_round_trips_through_str():
    spec = Spec.parse("tiered:32,1x4,pods=8")
    assert Spec.parse(str(spec)) == spec


def test_a_range_says_what_a_value_must_be():
    from dcbench import Range

    assert Range(1).violation(0) == "at least 1" and Range(1).violation(1) is None
    assert Range(0, above=True).violation(0) == "greater than 0" and Range(0, above=True).violation(1e-9) is None
    assert Range(0, 1).violation(-0.5) == "at least 0 and at most 1" and Range(0, 1).violation(1.5) == "at most 1"
    assert Range(0, 1).violation(0) is None and Range(0, 1).violation(1) is None


def test_a_parameter_that_must_be_positive_says_so():
    from dcbench import Param

    scale = Param("scale", float, 10.0, minimum=0, above=True)
    assert scale.convert("tetris", "0.5") == 0.5
    with pytest.raises(SpecError, match=r"tetris: scale='0' must be greater than 0$"):
        scale.convert("tetris", "0")


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "NaN", "1e400"])
def test_a_number_must_be_finite(raw):
    # nan compares false with every bound, so without this it slips past the range check.
    load = Param("load", float, 66.0, minimum=0)
    with pytest.raises(SpecError, match=rf"vmjobs: load='{raw}' is not a finite number$"):
        load.convert("vmjobs", raw)


def test_digit_separators_are_a_typo_not_a_number():
    # Python's int("1_0") and float("0_5") are 10 and 5.0: in a spec that is a typo of 1,0 or 0.5.
    assert Param("pods", int, 2).convert("tiered", "10") == 10
    with pytest.raises(SpecError, match=r"tiered: pods='1_0' is not an integer$"):
        Param("pods", int, 2).convert("tiered", "1_0")
    with pytest.raises(SpecError, match=r"tetris: penalty='0_5' is not a finite number$"):
        Param("penalty", float, 0.9).convert("tetris", "0_5")


def test_an_integer_beyond_2_to_the_53_is_refused():
    pods = Param("pods", int, 2, minimum=1)
    assert pods.convert("tiered", str(2**53)) == 2**53
    with pytest.raises(SpecError, match=r"tiered: pods='1000000000000000000000' must be at most "
                                        r"9,007,199,254,740,992 in size$"):
        pods.convert("tiered", "1000000000000000000000")


def test_training_options_are_finite_too():
    from dataclasses import dataclass

    from dcbench.harness import config_options

    @dataclass
    class Config:
        steps: int = 1
        gamma: float = 0.9
        envs: int = 8

    assert config_options(Config, {"gamma": "0.5"}, "x") == {"gamma": 0.5}
    with pytest.raises(SpecError, match=r"x: gamma='nan' is not a finite number$"):
        config_options(Config, {"gamma": "nan"}, "x")
    with pytest.raises(SpecError, match=r"x: envs='100000000000000000000' must be at most"):
        config_options(Config, {"envs": str(10**20)}, "x")
    with pytest.raises(SpecError, match=r"x: envs='1_6' is not an integer$"):
        config_options(Config, {"envs": "1_6"}, "x")


def test_a_trainers_config_fields_are_params_with_their_help_and_bounds():
    from dataclasses import dataclass

    from dcbench import Range
    from dcbench.spec import config_params

    @dataclass
    class Config:
        steps: int = Param.option(100, "steps to train for")  # `dcbench train --steps`, not an option
        envs: int = Param.option(8, "environments in lockstep", Range(1, 256))
        rate: float = Param.option(0.1, "learning rate", Range(0, 10, above=True))
        actor: str = Param.option("dense", "the actor's network", choices=("dense", "shared"))
        mask: bool = True  # a plain field is an option too, without help or bounds

    assert config_params(Config) == [
        Param("envs", int, 8, "environments in lockstep", minimum=1, maximum=256),
        Param("rate", float, 0.1, "learning rate", minimum=0, above=True, maximum=10),
        Param("actor", str, "dense", "the actor's network", choices=("dense", "shared")),
        Param("mask", bool, True),
    ]
    assert Config() == Config(100, 8, 0.1, "dense", True)  # the defaults are the fields' own
    assert (config_params(Config)[0].help_line(8)
            == "envs     integer from 1 to 256; default 8 — environments in lockstep")


def test_a_training_option_is_refused_with_the_message_of_a_parameter():
    from dataclasses import dataclass

    from dcbench import Range
    from dcbench.harness import config_options

    @dataclass
    class Config:
        steps: int = 1
        envs: int = Param.option(8, "environments in lockstep", Range(1, 256))
        rate: float = Param.option(0.1, "learning rate", Range(0, 10, above=True))
        actor: str = Param.option("dense", "the actor's network", choices=("dense", "shared"))

    assert config_options(Config, {"envs": "3", "actor": "shared"}, "x") == {"envs": 3, "actor": "shared"}
    assert config_options(Config, None, "x") == {}  # defaults are the dataclass's to fill in
    for options, message in [
        ({"env": "3"}, "x: unknown training option 'env'; did you mean 'envs'? Known training options: envs, rate, "
                       "actor"),
        ({"steps": "10"}, "x: steps=10 is not a training option; give it as --steps 10"),
        ({"envs": "0"}, "x: envs='0' must be at least 1 and at most 256"),
        ({"envs": "300"}, "x: envs='300' must be at most 256"),
        ({"rate": "0"}, "x: rate='0' must be greater than 0 and at most 10"),
        ({"actor": "wide"}, "x: actor='wide' is not one of dense, shared"),
    ]:
        with pytest.raises(SpecError, match=re.escape(message) + "$"):
            config_options(Config, options, "x")


def test_a_config_that_no_spec_can_set_is_refused():
    from dataclasses import dataclass
    from typing import ClassVar

    from dcbench import Range
    from dcbench.spec import config_params

    @dataclass
    class Listed:
        sizes: tuple = (1, 2)

    @dataclass
    class Limited:  # the bounds of dcbench 0.3, which would no longer be checked
        envs: int = 8
        LIMITS: ClassVar[dict[str, Range]] = {"envs": Range(1, 256)}

    with pytest.raises(TypeError, match=r"Listed.sizes has type tuple; a training option is str, int, float or bool"):
        config_params(Listed)
    with pytest.raises(TypeError, match=r"Limited.LIMITS is not read; declare each field's range with Param.option"):
        config_params(Limited)
    with pytest.raises(TypeError, match="is not a dataclass of training options"):
        config_params(dict)


@pytest.mark.parametrize("text", [
    "t :8,1x4", "t: 8 , 1x4", " t : 8,1x4 , pods = 2 ", "t\t:8,\t1x4", "t:8,1x4\n", "t : 8,ratio = 1x4",
])
def test_whitespace_around_the_name_arguments_and_separators_is_ignored(text):
    # It was stripped around arguments but not between the name and ':', so 't :8' was a bad name.
    values = bind("t", PARAMS, Spec.parse(text))
    assert resolved_spec("t", values) == "t:channels=8,ratio=1x4,pods=2,fast=no"


@pytest.mark.parametrize("text, fragment", [
    ("ti ered:8", "bad name 'ti ered'"),
    ("t:po ds=3", "bad keyword 'po ds=3'"),
    ("t : ", "nothing after ':'"),
])
def test_whitespace_inside_a_name_or_key_is_still_malformed(text, fragment):
    with pytest.raises(SpecError, match=re.escape(fragment)):
        Spec.parse(text)


@pytest.mark.parametrize("text, fragment", [
    ("t:８", "channels='８' is not an integer; write its digits as ASCII 0-9"),  # full-width 8
    ("t:8,pods=٣", "pods='٣' is not an integer; write its digits as ASCII 0-9"),  # Arabic-Indic 3
])
def test_digits_must_be_ascii(text, fragment):
    # Python's int('８') is 8: the spec would run as 't:8' under the same run id, or be a typo read as a number.
    with pytest.raises(SpecError, match=re.escape(fragment) + "$"):
        bind("t", PARAMS, Spec.parse(text))


def test_a_number_with_non_ascii_digits_is_refused_as_a_parameter_and_a_training_option():
    from dataclasses import dataclass

    from dcbench.harness import config_options

    @dataclass
    class Config:
        gamma: float = 0.9

    with pytest.raises(SpecError, match=r"tetris: penalty='０\.５' is not a finite number; write its digits as "
                                        r"ASCII 0-9$"):
        Param("penalty", float, 0.9).convert("tetris", "０.５")
    with pytest.raises(SpecError, match=r"x: gamma='0\.９' is not a finite number; write its digits as ASCII 0-9$"):
        config_options(Config, {"gamma": "0.９"}, "x")


def test_equivalent_spellings_of_a_spec_share_a_run_id_and_canonical_specs_keep_theirs(runner):
    canonical = runner.resolve("tetris", "tiered:8,1x4", requests=16)
    spaced = runner.resolve(" tetris : penalty = 0.9 ", "tiered : 8, 1x4", requests=16)
    assert (spaced.topology, spaced.allocator) == (canonical.topology, canonical.allocator)
    assert spaced.run_id(0) == canonical.run_id(0)
    with pytest.raises(SpecError, match="not an integer; write its digits as ASCII 0-9"):
        runner.resolve("tetris", "tiered:８,1x4", requests=16)


@pytest.mark.parametrize("allocators, said", [
    ("key=" + LONG, "Error: 'key=xxx"),
    ("tetris,," + LONG, "Error: 'xxx"),
])
def test_a_long_allocator_list_of_a_sweep_is_echoed_cut_in_one_short_line(tmp_path, allocators, said):
    from click.testing import CliRunner

    from dcbench.commands import cli

    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", allocators, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output.startswith(said)
    assert result.output.count("\n") == 1 and len(result.output) < 300, result.output[:300]
