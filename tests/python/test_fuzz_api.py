"""Property-based fuzzing of the Python API (issue 8: no panic, no hang, an
honest answer for every input).

The invariant: whatever is passed to ``Scenario``, ``Scenario.from_str``,
``Scenario.load``, ``with_profile``, ``with_overrides`` or ``irqlab.run``,
the only exceptions are :class:`irqlab.ScenarioError` (a bad value) and
:class:`TypeError` (a bad type), each one line; never ``RuntimeError`` (a
panic in the core), ``UnicodeEncodeError``, ``OverflowError`` or anything
else. A scenario that is accepted resolves to a configuration that reads
back to itself.

The example counts are small so that ``make test`` stays quick (well under
20 s for this file); ``IRQLAB_FUZZ=1`` (``make fuzz``) selects the profile
with many more. Runs of the simulator here last at most 1e-4 simulated
seconds.
"""

from __future__ import annotations

import contextlib
import math
import os
import pathlib
import signal
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irqlab
from conftest import SMALL
from irqlab import Scenario, ScenarioError
from irqlab.scenario import _toml_value
from irqlab.summary import flatten

# -- settings -----------------------------------------------------------------

_COMMON = dict(
    deadline=None,  # the core's first call and the GIL make timings noisy
    database=None,  # write nothing into the working tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
# `make test`: few examples, the same ones every time (a failure is reproducible).
settings.register_profile("irqlab-quick", max_examples=40, derandomize=True, **_COMMON)
# `make fuzz` (IRQLAB_FUZZ=1): many examples, new ones each time.
settings.register_profile("irqlab-fuzz", max_examples=3000, **_COMMON)
PROFILE = "irqlab-fuzz" if os.environ.get("IRQLAB_FUZZ") == "1" else "irqlab-quick"
fuzz = settings(settings.get_profile(PROFILE))

BASE = Scenario.load(SMALL)
#: Every field of a resolved scenario, dotted (`load.qps`), with its default value.
FIELDS: dict[str, Any] = flatten(BASE.resolved())
SECTIONS = sorted({k.split(".")[0] for k in FIELDS if "." in k})
ALLOWED = (ScenarioError, TypeError)


def expect_only_allowed(call) -> Any:
    """Run ``call``; return its result, or None if it raised an allowed error."""
    try:
        return call()
    except ALLOWED as e:
        message = str(e)
        assert message and "\n" not in message, repr(message)
        return None


def assert_round_trips(scenario: Scenario) -> None:
    """The resolved configuration, written back as TOML, resolves to itself."""
    resolved = scenario.resolved()
    assert resolved == scenario.resolved()  # a fresh copy each time, equal
    again = Scenario.from_str(to_toml(resolved)).resolved()
    assert same(again, resolved), (again, resolved)


def to_toml(config: dict[str, Any]) -> str:
    """A resolved configuration as a scenario file (null fields left out)."""
    lines = []
    for key, value in config.items():
        if value is not None and not isinstance(value, dict):
            lines.append(f"{key} = {_toml_value(value, key=key, top=False)}")
    for key, value in config.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            for k, v in value.items():
                if v is not None:
                    lines.append(f'"{k}" = {_toml_value(v, key=f"{key}.{k}", top=False)}')
    return "\n".join(lines) + "\n"


def same(a: Any, b: Any) -> bool:
    """Equality that takes NaN as equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# -- strategies ---------------------------------------------------------------

#: Text with anything in it: control characters, astral characters, lone surrogates.
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31 - 1, 2**32, 2**63 - 1, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, any_text, st.sampled_from(["packed", "aligned", "fixed"]))
#: Values a mapping of overrides may hold (nested lists and dicts included).
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(any_text, st.sampled_from(["dist", "cycles", "bytes", "mean_cycles"])), inner,
                        max_size=4),
    ),
    max_leaves=8,
)
keys = st.one_of(st.sampled_from(sorted(FIELDS)), st.sampled_from(SECTIONS), any_text,
                 st.builds(lambda s, t: f"{s}.{t}", st.sampled_from(SECTIONS), any_text))
#: Arguments of any type at all.
anything = st.one_of(
    scalars,
    st.binary(max_size=20),
    st.lists(st.one_of(any_text, st.binary(max_size=5), st.integers()), max_size=4),
    st.dictionaries(st.one_of(any_text, st.integers()), scalars, max_size=3),
    st.tuples(any_text),
    st.sampled_from([object(), 1j, bytearray(b"x"), pathlib.Path("nope.toml"), str, Ellipsis, frozenset({"a=1"})]),
)


# -- properties ---------------------------------------------------------------


@fuzz
@given(st.dictionaries(keys, values, max_size=4))
def test_with_overrides_of_a_random_mapping(overrides):
    scenario = expect_only_allowed(lambda: BASE.with_overrides(overrides))
    if scenario is not None:
        assert_round_trips(scenario)


@fuzz
@given(st.lists(st.one_of(any_text, st.builds(lambda k, v: f"{k}={v}", keys, any_text)), max_size=4))
def test_with_overrides_of_random_pairs(pairs):
    scenario = expect_only_allowed(lambda: BASE.with_overrides(pairs))
    if scenario is not None:
        assert_round_trips(scenario)


@fuzz
@given(anything, anything)
def test_random_types_to_the_scenario_methods(a, b):
    expect_only_allowed(lambda: BASE.with_profile(a))
    expect_only_allowed(lambda: BASE.with_overrides(a))
    expect_only_allowed(lambda: BASE.with_overrides(a, b))
    expect_only_allowed(lambda: Scenario(a))
    expect_only_allowed(lambda: Scenario(BASE.text, profile=a, overrides=b))
    expect_only_allowed(lambda: Scenario(BASE.text, source=a))
    expect_only_allowed(lambda: Scenario.from_str(a))


@pytest.fixture(scope="module")
def odd_paths(tmp_path_factory) -> list[Any]:
    """Paths that are not scenario files: a FIFO, a directory, devices, a
    binary file, an empty file; plus the real one in str and Path form."""
    d = tmp_path_factory.mktemp("odd")
    fifo = d / "fifo.toml"
    os.mkfifo(fifo)
    (d / "binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    (d / "empty.toml").write_text("")
    paths: list[Any] = [str(fifo), fifo, str(d), d / "binary.toml", str(d / "empty.toml"), str(SMALL), SMALL,
                        str(d / "missing.toml"), str(d / "binary.toml" / "below")]
    paths += [p for p in ("/dev/zero", "/dev/null", "/dev/full", "/dev/urandom") if os.path.exists(p)]
    return paths


@contextlib.contextmanager
def no_hang(seconds: int = 10) -> Iterator[None]:
    """Fail, instead of hanging the suite, if the body blocks (a FIFO opened for reading)."""

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"blocked for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@fuzz
@given(data=st.data())
def test_random_arguments_to_load(odd_paths, data):
    path = data.draw(st.one_of(st.sampled_from(odd_paths), anything, any_text.map(lambda t: "/nonexistent/" + t)))
    with no_hang():
        scenario = expect_only_allowed(lambda: Scenario.load(path))
    if scenario is not None:
        assert_round_trips(scenario)


# A scenario as text: lines of known and unknown sections, keys and TOML-ish
# values (valid literals, near misses and garbage).
toml_values = st.one_of(
    numbers.map(lambda x: _toml_value(x, key="k", top=False) if not isinstance(x, int) else str(x)),
    st.sampled_from(['"packed"', '"aligned"', "true", "false", "[]", "[1, 2]", "{}", '{ dist = "fixed", cycles = 1 }',
                     '{ dist = "exponential", mean_cycles = 0 }', "1_000", "0x10", "1e400", "-0.0", "nan", "inf",
                     "1979-05-27", '"""multi\nline"""', "'literal'", "[1, [2]]", "{ a = { b = 1 } }", "", "=",
                     '"\\ud800"', '"\\u0000"']),
    any_text,
)
toml_lines = st.one_of(
    st.sampled_from(SECTIONS).map(lambda s: f"[{s}]"),
    st.builds(lambda k, v: f"{k.split('.')[-1]} = {v}", st.sampled_from(sorted(FIELDS)), toml_values),
    st.builds(lambda k, v: f"{k} = {v}", st.sampled_from(sorted(FIELDS)), toml_values),
    st.builds(lambda k, v: f"{k} = {v}", any_text, toml_values),
    any_text,
)
toml_texts = st.one_of(st.lists(toml_lines, max_size=8).map("\n".join), any_text)


@fuzz
@given(toml_texts)
def test_random_toml_text(text):
    scenario = expect_only_allowed(lambda: Scenario.from_str(text))
    if scenario is not None:
        assert_round_trips(scenario)


@fuzz
@given(st.lists(toml_lines, max_size=6).map("\n".join))
def test_random_lines_appended_to_a_valid_scenario(extra):
    # Most of these are near the valid space: the small scenario plus a few lines.
    scenario = expect_only_allowed(lambda: Scenario.from_str(BASE.text + "\n" + extra))
    if scenario is not None:
        assert_round_trips(scenario)


#: What `irqlab.run` may be given; every valid combination simulates at most 1e-4 s.
run_scenarios = st.one_of(st.just(BASE), st.just(str(SMALL)), st.just(SMALL), anything)
run_profiles = st.one_of(st.none(), st.sampled_from(irqlab.PROFILES), anything)
run_overrides = st.one_of(
    st.none(),
    st.just(()),
    st.sampled_from(["load.qps=20000", "load.qps=abc", ["load.depth=2"], {"load.qps": 5000}, {"run.profile": "x"},
                     "run.duration_s=1e-4", "=", ""]),
    anything,
)
run_seeds = st.one_of(st.none(), st.integers(min_value=-(2**65), max_value=2**65), anything)
run_durations = st.one_of(
    st.floats(max_value=1e-4),  # negatives, zero, NaN, -inf and tiny positives
    st.integers(max_value=0),
    st.sampled_from([10**400, float("inf"), 1e9]),
    anything.filter(lambda x: not (isinstance(x, (int, float)) and not isinstance(x, bool) and x > 1e-4)),
)


@fuzz
@given(run_scenarios, run_profiles, run_overrides, run_seeds, run_durations)
def test_random_arguments_to_run(scenario, profile, overrides, seed, duration_s):
    summary = expect_only_allowed(
        lambda: irqlab.run(scenario, profile=profile, overrides=overrides, seed=seed, duration_s=duration_s)
    )
    if summary is not None:
        assert isinstance(summary, irqlab.Summary)
        assert summary.requests_completed >= 0
        if summary.requests_completed == 0:
            assert summary.latency_us.p99 is None and summary.warnings
