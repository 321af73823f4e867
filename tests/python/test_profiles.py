"""`irqlab profiles` and `irqlab.PROFILES` come from the core."""

from __future__ import annotations

import json

import irqlab
from conftest import irqlab as cli

#: The thesis's four first, then Cai & Karsten's configurations mapped.
ALL = ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend", "irq-batching", "kernel-polling"]


def test_python_constant_lists_every_profile_thesis_four_first():
    assert list(irqlab.PROFILES) == ALL


def test_cli_lists_every_profile_with_its_knobs():
    result = cli("profiles")
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("knob"))
    assert header.split() == ["knob", *ALL]
    assert result.stdout.startswith("6 profiles;")
    for knob in ("coalesce.adaptive-rx", "napi.gro_flush_timeout", "napi.irq_suspend_timeout", "epoll.blocking"):
        assert knob in result.stdout


def test_cli_json_gives_every_profile_the_same_knobs():
    result = cli("profiles", "--json")
    assert result.returncode == 0, result.stderr
    knobs = json.loads(result.stdout)
    assert list(knobs) == ALL
    keys = {tuple(k) for k in knobs.values()}
    assert len(keys) == 1
    # irq-suspend and kernel-polling suspend IRQs; only busy-wait polls without blocking.
    assert [p for p in ALL if knobs[p]["napi.irq_suspend_timeout"]] == ["irq-suspend", "kernel-polling"]
    assert [p for p in ALL if not knobs[p]["epoll.blocking"]] == ["busy-wait"]


def test_cai_and_karsten_profiles_differ_from_the_thesis_ones_only_where_documented():
    knobs = irqlab.profile_knobs()
    adaptive, suspend = knobs["adaptive-coalescing"], knobs["irq-suspend"]
    # irq-batching: adaptive plus deferral (the cover letter's defer20), no busy poll.
    batching = knobs["irq-batching"]
    assert {k: v for k, v in batching.items() if v != adaptive[k]} == {
        "napi.napi_defer_hard_irqs": 100,
        "napi.gro_flush_timeout": 20_000,
    }
    # kernel-polling: irq-suspend without deferral (the cover letter's suspend0).
    polling = knobs["kernel-polling"]
    assert {k: v for k, v in polling.items() if v != suspend[k]} == {
        "napi.napi_defer_hard_irqs": 0,
        "napi.gro_flush_timeout": 0,
    }


def test_every_field_a_profile_sets_is_listed_even_one_all_set_to_its_default():
    # Every profile sets coalesce.rx-frames to 128, the default, and `irqlab
    # linux apply` sets it on a device: listed, as apply's messages name it.
    from irqlab import _core

    knobs = irqlab.profile_knobs()
    assert list(knobs["busy-wait"]) == _core.profile_fields()
    assert {p: k["coalesce.rx-frames"] for p, k in knobs.items()} == {p: 128 for p in ALL}
    assert {field for _, field in _core.LINUX_KNOB_FIELDS if field != "napi.threaded"} <= set(knobs["busy-wait"])
    assert "coalesce.rx-frames" in cli("profiles").stdout
