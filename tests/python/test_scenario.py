"""`irqlab.Scenario`: validated at construction, immutable, layered overrides."""

from __future__ import annotations

import pytest

import irqlab
from irqlab import Scenario, ScenarioError


def test_load_reads_and_validates(small):
    s = Scenario.load(small)
    assert s.name == "small"
    assert s.source == str(small)
    assert s.profile is None and s.overrides == ()
    assert s.resolved()["cpu"]["app_cores"] == 2


def test_from_str_equals_load(small, small_text):
    assert Scenario.from_str(small_text) == Scenario.load(small)


def test_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read scenario file"):
        Scenario.load(tmp_path / "nope.toml")


def test_bad_file_fails_at_load_naming_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[load]\nbogus = 1\n')
    with pytest.raises(ScenarioError, match=r"bad\.toml.*bogus"):
        Scenario.load(bad)


def test_invalid_toml_is_a_scenario_error():
    with pytest.raises(ScenarioError, match="TOML"):
        Scenario.from_str('name = "unterminated\n')


def test_out_of_range_field_is_named():
    with pytest.raises(ScenarioError, match=r"`cpu\.app_cores`"):
        Scenario.from_str("[cpu]\napp_cores = 0\n")


def test_with_profile_returns_a_new_scenario(small):
    base = Scenario.load(small)
    suspended = base.with_profile("irq-suspend")
    assert suspended is not base
    assert base.profile is None
    assert suspended.profile == "irq-suspend"
    assert suspended.resolved()["napi"]["irq_suspend_timeout"] > 0
    assert base.resolved()["napi"]["irq_suspend_timeout"] == 0
    assert suspended.with_profile(None) == base


def test_unknown_profile_fails_at_once(small):
    with pytest.raises(ScenarioError, match="nope"):
        Scenario.load(small).with_profile("nope")


@pytest.mark.parametrize(
    "apply",
    [
        lambda s: s.with_overrides("load.qps=250000"),
        lambda s: s.with_overrides(["load.qps=250000"]),
        lambda s: s.with_overrides({"load.qps": 250000}),
        lambda s: s.with_overrides({"load": {"qps": 250000}}),
        lambda s: s.with_overrides(load__qps=250000),
        lambda s: s.with_overrides(load={"qps": 250000.0}),
    ],
)
def test_override_forms(small, apply):
    base = Scenario.load(small)
    s = apply(base)
    assert s.resolved()["load"]["qps"] == 250000
    assert base.resolved()["load"]["qps"] is None


def test_override_values_are_written_as_toml(small):
    s = Scenario.load(small).with_overrides(
        {
            "coalesce.adaptive-rx": True,
            "coalesce.rx-usecs": 16,
            "cpu.freq_ghz": 2.5,
            "nic.irq_routing": "packed",
            "app.service": {"dist": "exponential", "mean_cycles": 4000},
        }
    )
    cfg = s.resolved()
    assert cfg["coalesce"]["adaptive-rx"] is True
    assert cfg["coalesce"]["rx-usecs"] == 16
    assert cfg["cpu"]["freq_ghz"] == 2.5
    assert cfg["nic"]["irq_routing"] == "packed"
    assert cfg["app"]["service"] == {"dist": "exponential", "mean_cycles": 4000}
    nested = Scenario.load(small).with_overrides(app={"service": {"dist": "uniform", "min_cycles": 1, "max_cycles": 9}})
    assert nested.resolved()["app"]["service"] == {"dist": "uniform", "min_cycles": 1, "max_cycles": 9}


def test_later_overrides_win_and_beat_the_profile(small):
    s = Scenario.load(small).with_profile("busy-wait").with_overrides("epoll.busy_poll_usecs=50")
    s = s.with_overrides({"epoll.busy_poll_usecs": 70})
    assert s.overrides == ("epoll.busy_poll_usecs=50", "epoll.busy_poll_usecs=70")
    assert s.resolved()["epoll"]["busy_poll_usecs"] == 70


def test_bad_override_names_the_override(small):
    with pytest.raises(ScenarioError, match=r"load\.qps"):
        Scenario.load(small).with_overrides("load.qps=abc")
    with pytest.raises(ScenarioError, match=r"load\.bogus"):
        Scenario.load(small).with_overrides(load__bogus=1)


def test_none_cannot_be_an_override(small):
    with pytest.raises(TypeError, match="None"):
        Scenario.load(small).with_overrides({"load.qps": None})


def test_resolved_is_a_fresh_copy(small):
    s = Scenario.load(small)
    s.resolved()["cpu"]["app_cores"] = 99
    assert s.resolved()["cpu"]["app_cores"] == 2


def test_run_rejects_bad_seed_and_duration_before_running(small):
    with pytest.raises(ScenarioError, match="seed"):
        irqlab.run(small, seed=-1)
    with pytest.raises(ScenarioError, match="duration_s"):
        irqlab.run(small, duration_s=0)
    with pytest.raises(ScenarioError, match="run.duration_s"):
        irqlab.run(small, duration_s=1e9)


# -- issue 8: wrong types get their own TypeError naming the parameter --------


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda s: Scenario(123), r"\btext\b.*\bstr\b.*\bint\b"),
        (lambda s: Scenario(b"name = 'x'"), r"\btext\b.*\bstr\b.*\bbytes\b"),
        (lambda s: Scenario.from_str(None), r"\btext\b.*\bstr\b.*NoneType"),
        (lambda s: Scenario("", profile=3), r"\bprofile\b.*\bstr\b.*\bNone\b.*\bint\b"),
        (lambda s: Scenario("", source=5), r"\bsource\b.*\bstr\b.*\bint\b"),
        (lambda s: Scenario.load(b"tests/python/scenarios/small.toml"), r"\bpath\b.*\bstr\b.*PathLike.*\bbytes\b"),
        (lambda s: Scenario.load(123), r"\bpath\b.*\bstr\b.*PathLike.*\bint\b"),
        (lambda s: Scenario.load(None), r"\bpath\b.*NoneType"),
        (lambda s: s.with_profile(123), r"\bprofile\b.*\bstr\b.*\bNone\b.*\bint\b"),
        (lambda s: s.with_profile(["busy-wait"]), r"\bprofile\b.*\blist\b"),
        (lambda s: s.with_overrides(5), r"\boverrides\b.*key=value.*mapping.*\bint\b"),
        (lambda s: s.with_overrides(b"load.qps=1"), r"\boverrides\b.*key=value.*\bbytes\b"),
        (lambda s: s.with_overrides([b"load.qps=1"]), r"\boverride\b.*key=value.*\bbytes\b"),
        (lambda s: s.with_overrides({1: 2}), r"override keys.*\bstr\b.*\bint\b"),
        (lambda s: s.with_overrides({"load.qps": object()}), r"`load\.qps`.*object"),
        (lambda s: s.with_overrides({"app.service": {"a\nb": None}}), r"'app\.service\.a\\nb'.*None"),
        (lambda s: irqlab.run(123), r"\bscenario\b.*Scenario.*\bstr\b.*PathLike.*\bint\b"),
        (lambda s: irqlab.run(b"x.toml"), r"\bscenario\b.*\bbytes\b"),
        (lambda s: irqlab.run(s, profile=3), r"\bprofile\b.*\bstr\b.*\bint\b"),
        (lambda s: irqlab.run(s, overrides=5), r"\boverrides\b.*\bint\b"),
        (lambda s: irqlab.run(s, overrides=0), r"\boverrides\b.*\bint\b"),
        (lambda s: irqlab.run(s, seed="1"), r"\bseed\b.*\bint\b.*\bNone\b.*\bstr\b"),
        (lambda s: irqlab.run(s, seed=1.0), r"\bseed\b.*\bint\b.*\bfloat\b"),
        (lambda s: irqlab.run(s, seed=True), r"\bseed\b.*\bint\b.*\bbool\b"),
        (lambda s: irqlab.run(s, duration_s="0.5"), r"\bduration_s\b.*\bfloat\b.*\bNone\b.*\bstr\b"),
        (lambda s: irqlab.run(s, duration_s=[1]), r"\bduration_s\b.*\blist\b"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_parameter(small, call, needle):
    s = Scenario.load(small)
    with pytest.raises(TypeError, match=needle) as info:
        call(s)
    assert not isinstance(info.value, ScenarioError)
    assert "\n" not in str(info.value)


def test_a_str_of_overrides_is_one_override_not_characters(small, small_text):
    # A bare str is one "key=value", never iterated character by character.
    assert Scenario(small_text, overrides="load.qps=1000").overrides == ("load.qps=1000",)
    assert Scenario.load(small).with_overrides("load.qps=1000").overrides == ("load.qps=1000",)
    with pytest.raises(ScenarioError, match="load.qps"):
        irqlab.run(small, overrides="load.qps=abc")


def test_out_of_range_seed_and_duration_stay_scenario_errors(small):
    with pytest.raises(ScenarioError, match=r"\bseed\b.*0.*9223372036854775807"):
        irqlab.run(small, seed=2**64)
    with pytest.raises(ScenarioError, match=r"\bduration_s\b"):
        irqlab.run(small, duration_s=10**400)  # too large for a float: out of range, not OverflowError
    with pytest.raises(ScenarioError, match=r"\bduration_s\b"):
        irqlab.run(small, duration_s=float("nan"))


@pytest.mark.parametrize(
    "call",
    [
        lambda s: Scenario.from_str("name = '\ud800'"),
        lambda s: s.with_profile("irq-\udcff"),
        lambda s: s.with_overrides("name=\ud800"),
        lambda s: s.with_overrides({"name": ["\ud800"]}),
    ],
)
def test_text_that_is_not_unicode_is_a_scenario_error(small, call):
    # A lone surrogate cannot be encoded as UTF-8: a ScenarioError, not UnicodeEncodeError.
    with pytest.raises(ScenarioError, match="surrogate"):
        call(Scenario.load(small))


@pytest.mark.parametrize("value", ['a"b\\c', "tab\there", "del\x7f", "nul\x00", "\U0001F600 astral", "é"])
def test_strings_inside_values_are_quoted_as_valid_toml(value):
    # Strings inside a list or an inline table are written as TOML basic
    # strings: every character, astral ones and DEL included, reads back.
    tomllib = pytest.importorskip("tomllib")
    from irqlab.scenario import _toml_value

    text = _toml_value({"s": [value]}, key="k", top=False)
    assert tomllib.loads(f"k = {text}")["k"] == {"s": [value]}


def test_scenario_errors_are_one_line(small_text):
    # The TOML parser's message spans lines; the package's ScenarioError does not.
    with pytest.raises(ScenarioError) as info:
        Scenario.from_str("a = [1,\n")
    assert "\n" not in str(info.value) and "TOML" in str(info.value)


def test_scenario_errors_from_a_file_are_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("a = [1,\n")
    with pytest.raises(ScenarioError) as info:
        Scenario.load(bad)
    message = str(info.value)
    assert "\n" not in message and "bad.toml" in message


# -- issue 6: the profile is chosen with with_profile, not as an override -----


def test_run_profile_cannot_be_overridden(small):
    # Fails until the core rejects an override of run.profile (issue 8, item 6).
    with pytest.raises(ScenarioError, match="with_profile") as info:
        Scenario.load(small).with_overrides({"run.profile": "busy-wait"})
    assert "\n" not in str(info.value)
