"""`irqlab profiles` and `irqlab.PROFILES` come from the core."""

from __future__ import annotations

import json

import irqlab
from conftest import irqlab as cli

FOUR = ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend"]


def test_python_constant_lists_the_four():
    assert list(irqlab.PROFILES) == FOUR


def test_cli_lists_the_four_with_their_knobs():
    result = cli("profiles")
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("knob"))
    assert header.split() == ["knob", *FOUR]
    for knob in ("coalesce.adaptive-rx", "napi.gro_flush_timeout", "napi.irq_suspend_timeout", "epoll.blocking"):
        assert knob in result.stdout


def test_cli_json_gives_every_profile_the_same_knobs():
    result = cli("profiles", "--json")
    assert result.returncode == 0, result.stderr
    knobs = json.loads(result.stdout)
    assert list(knobs) == FOUR
    keys = {tuple(k) for k in knobs.values()}
    assert len(keys) == 1
    # Only irq-suspend suspends IRQs; only busy-wait polls without blocking.
    assert [p for p in FOUR if knobs[p]["napi.irq_suspend_timeout"]] == ["irq-suspend"]
    assert [p for p in FOUR if not knobs[p]["epoll.blocking"]] == ["busy-wait"]
