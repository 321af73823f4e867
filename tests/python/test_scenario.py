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
