"""The native module `irqlab._core` converts and maps errors, nothing more."""

from __future__ import annotations

import json

import pytest

from irqlab import _core


def test_profiles_are_the_thesis_four_then_cai_and_karsten_mapped():
    assert _core.profiles() == [
        "no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend", "irq-batching", "kernel-polling",
    ]


def test_resolve_returns_the_config_as_json(small_text):
    cfg = json.loads(_core.resolve(small_text, None, []))
    assert cfg["name"] == "small"
    assert cfg["run"]["seed"] == 7
    assert cfg["cpu"]["app_cores"] == 2
    # Sections the file leaves out come back with their defaults.
    assert {"costs", "napi", "epoll", "coalesce", "nic", "app", "load"} <= cfg.keys()
    assert cfg["load"]["qps"] is None


def test_resolve_applies_profile_then_overrides(small_text):
    cfg = json.loads(_core.resolve(small_text, "irq-suspend", ["napi.irq_suspend_timeout=5000000"]))
    assert cfg["napi"]["irq_suspend_timeout"] == 5_000_000
    assert cfg["epoll"]["prefer_busy_poll"] is True


def test_scenario_error_is_a_value_error():
    assert issubclass(_core.ScenarioError, ValueError)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("name = ",), "TOML"),
        (("", "no-such-profile"), "no-such-profile"),
        (("", None, ["cpu.app_cores=0"]), "cpu.app_cores"),
        (("", None, ["no-equals-sign"]), "key=value"),
    ],
)
def test_core_errors_become_scenario_error(args, needle):
    with pytest.raises(_core.ScenarioError, match=needle):
        _core.resolve(*args)


def test_run_validates_before_simulating():
    with pytest.raises(_core.ScenarioError, match="cpu.app_cores"):
        _core.run("", None, ["cpu.app_cores=0"])
    with pytest.raises(_core.ScenarioError, match="run.duration_s"):
        _core.run("", None, [], None, 1e9)


def test_overrides_must_be_a_list_of_strings():
    with pytest.raises(TypeError):
        _core.resolve("", None, "load.qps=1")


def test_a_panic_becomes_runtime_error():
    with pytest.raises(RuntimeError, match="panicked.*boom.*bug in irqlab") as info:
        _core._selftest_panic("boom")
    # The command line adds "irqlab: internal error:"; the message must not say it again.
    assert "internal error" not in str(info.value)
