"""Grid axes: the text forms of ``--grid FIELD=VALUES`` and ``[axes]``, and
every refusal as one sentence naming the field."""

from __future__ import annotations

import math

import pytest

from irqlab.study.axis import MAX_AXIS_VALUES, Axis, AxisError, from_toml, parse_grid_flag, parse_values


def typed(values: tuple) -> list[tuple[str, object]]:
    """Values with their types: 1 == 1.0 == True in Python, not in TOML."""
    return [(type(v).__name__, v) for v in values]


# -- lists ----------------------------------------------------------------------

LISTS = [
    ("4,8,16", (4, 8, 16)),
    ("4", (4,)),
    (" 4 , 8 ", (4, 8)),
    ("-3,0,3", (-3, 0, 3)),
    ("0.5,1.5,2", (0.5, 1.5, 2)),
    ("1e5,2.5e5", (100000.0, 250000.0)),
    ("aligned,packed", ("aligned", "packed")),
    ("exponential", ("exponential",)),
    ("irq-suspend,busy_wait", ("irq-suspend", "busy_wait")),
    ('"aligned","packed"', ("aligned", "packed")),
    ("'a b','c'", ("a b", "c")),
    ('"4"', ("4",)),
    ("true,false", (True, False)),
    ("1,1.0,true", (1, 1.0, True)),  # three TOML types: three values
    ('"a:b","c"', ("a:b", "c")),
]


@pytest.mark.parametrize(("text", "expected"), LISTS)
def test_lists(text: str, expected: tuple) -> None:
    assert typed(parse_values("nic.irq_routing", text)) == typed(expected)


def test_bare_word_and_quoted_string_are_the_same_value() -> None:
    assert parse_values("f", "aligned") == parse_values("f", '"aligned"')


# -- linear ranges --------------------------------------------------------------

LINEAR = [
    ("100000:500000:50000", tuple(range(100000, 500001, 50000))),  # stop included: 9 values
    ("1:10:3", (1, 4, 7, 10)),
    ("1:9:3", (1, 4, 7)),  # the steps miss stop: it is not added
    ("5:5:1", (5,)),
    ("10:0:-2", (10, 8, 6, 4, 2, 0)),
    ("-4:-1:1", (-4, -3, -2, -1)),
    ("0:1:0.25", (0.0, 0.25, 0.5, 0.75, 1.0)),
    ("1:0:-0.5", (1.0, 0.5, 0.0)),
    ("0:0.3:0.1", (0.0, 0.1, 0.2, 0.3)),  # 0.3 / 0.1 is 2.9999999999999996
    ("1e5:2e5:5e4", (100000.0, 150000.0, 200000.0)),
    (" 1 : 3 : 1 ", (1, 2, 3)),
]


@pytest.mark.parametrize(("text", "expected"), LINEAR)
def test_linear_ranges(text: str, expected: tuple) -> None:
    assert typed(parse_values("load.qps", text)) == typed(expected)


def test_float_step_lands_on_stop_without_accumulated_error() -> None:
    values = parse_values("f", "0:1:0.1")
    assert len(values) == 11
    assert values[0] == 0.0 and values[-1] == 1.0
    assert values[3] == 0.3  # not 0.30000000000000004
    assert all(isinstance(v, float) for v in values)
    assert values == tuple(round(0.1 * i, 12) for i in range(11))


def test_integer_range_stays_integer() -> None:
    values = parse_values("cpu.app_cores", "1:16:1")
    assert values == tuple(range(1, 17))
    assert all(type(v) is int for v in values)


def test_range_of_exactly_the_limit_is_accepted() -> None:
    values = parse_values("f", f"1:{MAX_AXIS_VALUES}:1")
    assert len(values) == MAX_AXIS_VALUES


# -- geometric ranges -----------------------------------------------------------

LOG = [
    ("log:1:1000:4", (1, 10, 100, 1000)),
    ("log:1000:1:4", (1000, 100, 10, 1)),
    ("log:10000:1000000:3", (10000, 100000, 1000000)),
    ("log:1:100:5", (1, 3, 10, 32, 100)),  # rounded: 3.16, 31.6
    ("log:1.0:1000.0:4", (1.0, 10.0, 100.0, 1000.0)),
    ("log:0.1:10:3", (0.1, 1.0, 10.0)),
    ("log:1:2:2", (1, 2)),
]


@pytest.mark.parametrize(("text", "expected"), LOG)
def test_log_ranges(text: str, expected: tuple) -> None:
    values = parse_values("load.qps", text)
    assert typed(values) == typed(expected)


def test_log_range_is_evenly_spaced_in_the_logarithm() -> None:
    values = parse_values("f", "log:0.001:1:7")
    ratios = [b / a for a, b in zip(values, values[1:])]
    assert all(math.isclose(r, 10**0.5, rel_tol=1e-9) for r in ratios)
    assert values[-1] == 1.0


# -- --grid and [axes] ------------------------------------------------------------


def test_grid_flag() -> None:
    axis = parse_grid_flag("load.qps=100000:300000:100000")
    assert axis == Axis("load.qps", (100000, 200000, 300000))
    assert parse_grid_flag(" cpu.app_cores = 4,8 ") == Axis("cpu.app_cores", (4, 8))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([4, 8], (4, 8)),
        (["aligned", "packed"], ("aligned", "packed")),
        ([True, False], (True, False)),
        ([0.5, 1], (0.5, 1)),
        ("1:3:1", (1, 2, 3)),
        ("log:1:100:3", (1, 10, 100)),
    ],
)
def test_from_toml(value: object, expected: tuple) -> None:
    assert typed(from_toml("f.g", value).values) == typed(expected)


# -- refusals -------------------------------------------------------------------

ERRORS = [
    # (text, words the message must hold besides the field)
    ("0:10:0", ["step", "0"]),
    ("0.0:1:0.0", ["step"]),
    ("10:0:1", ["empty"]),
    ("0:10:-1", ["empty"]),
    ("1:2", ["start:stop:step"]),
    ("1:2:3:4", ["start:stop:step"]),
    ("a:2:1", ["start"]),
    ("1:b:1", ["stop"]),
    ("1:2:c", ["step"]),
    ("0:inf:1", ["stop", "finite"]),
    ("0:1:nan", ["step", "finite"]),
    ("0:1000000:1", ["100000"]),
    ("0:1:5e-324", ["100000"]),  # a step so small that the count is infinite
    (f"0:{'9' * 30}:1", ["64-bit"]),
    ("log:0:100:3", ["above 0"]),
    ("log:-1:100:3", ["above 0"]),
    ("log:1:0:3", ["above 0"]),
    ("log:1:100:1", ["at least 2"]),
    ("log:1:100:0", ["at least 2"]),
    ("log:1:100:x", ["at least 2"]),
    ("log:1:100:2.5", ["at least 2"]),
    ("log:1:100", ["log:start:stop:n"]),
    ("log:5:5:3", ["equal"]),
    ("log:1:10:20", ["repeated"]),  # integers: rounding repeats values
    ("log:1:1000:200000", ["100000"]),
    ("4,4", ["repeats", "4"]),
    ("aligned,packed,aligned", ["repeats", "aligned"]),
    ("4,,8", ["empty item"]),
    ("4,8,", ["empty item"]),
    (",4", ["empty item"]),
    ("", ["no values"]),
    ("a b", ["neither"]),
    ("[1,2]", ["neither"]),
    ("{a=1}", ["dict"]),
    ("inf", ["finite"]),
    ("nan,1", ["finite"]),
]


@pytest.mark.parametrize(("text", "words"), ERRORS)
def test_refusals_name_the_field_in_one_line(text: str, words: list[str]) -> None:
    with pytest.raises(AxisError) as info:
        parse_grid_flag(f"load.qps={text}")
    message = str(info.value)
    assert "load.qps" in message
    assert "\n" not in message
    for word in words:
        assert word in message, (text, message)


@pytest.mark.parametrize(
    "text",
    ["load.qps", "=1,2", "", "  =4"],
)
def test_grid_flag_needs_field_and_values(text: str) -> None:
    with pytest.raises(AxisError, match="--grid must be FIELD=VALUES"):
        parse_grid_flag(text)


def test_grid_flag_without_values_names_the_field() -> None:
    with pytest.raises(AxisError, match="axis load.qps has no values"):
        parse_grid_flag("load.qps=")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([], ["empty list"]),
        ([1, 1], ["repeats"]),
        ([[1, 2]], ["list"]),
        ([{"a": 1}], ["dict"]),
        ([float("nan")], ["finite"]),
        ([1.0, float("inf")], ["finite"]),
        ("aligned", ["list"]),
        ("1,2,3", ["list"]),
        (5, ["must be a list"]),
        ({"a": 1}, ["must be a list"]),
        ("0:10:0", ["step"]),
        ("log:0:1:2", ["above 0"]),
    ],
)
def test_toml_refusals_name_the_field(value: object, words: list[str]) -> None:
    with pytest.raises(AxisError) as info:
        from_toml("cpu.app_cores", value)
    message = str(info.value)
    assert "cpu.app_cores" in message and "\n" not in message
    for word in words:
        assert word in message, (value, message)


def test_axis_without_values_is_refused() -> None:
    with pytest.raises(AxisError, match="axis f has no values"):
        Axis("f", ())
