"""The machine probe and the rescaling of the simulator's constants by it
(``irqlab testbed probe``; python/irqlab/testbed/probe.py)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab.scenario import Scenario
from irqlab.testbed.probe import KERNEL_PATH, ProbeError, clock_ghz, rescaled

ROOT = Path(__file__).resolve().parents[2]

PROBE = {
    "clock_ghz": 2.0, "syscall_ns": 100.0, "tcp_message_ns": 2000.0, "switch_ns": 1000.0,
    "remote_wake_ns": 21000.0, "busy_wake_cpu_ns": 10000.0, "busy_wake_ns": 11000.0, "wake_sender_cpu_ns": 5000.0,
    "timer_sleep_cpu_ns": 6000.0,
}


def _thesis_costs() -> dict:
    from irqlab.testbed.machine import thesis_costs

    return thesis_costs(Scenario.load(ROOT / "scenarios" / "testbed" / "veth-2core.toml"))


def test_the_costs_rescaled_are_the_fit_of_the_testbeds_own_cost_model():
    from irqlab.testbed.machine import thesis_costs

    testbed = Scenario.load(ROOT / "scenarios" / "testbed" / "veth-2core.toml")
    fixed_fit = Scenario.from_str('name = "x"').resolved()["costs"]
    thesis = Scenario.load(ROOT / "scenarios" / "thesis" / "bare-metal.toml").resolved()
    assert thesis["microarch"]["ipc_model"] == "disruption"
    # Fixed costs carry the fixed-cost fit (the interrupt path with its
    # penalties), not the disruption fit's warm costs.
    assert testbed.resolved()["microarch"]["ipc_model"] == "fixed"
    assert thesis_costs(testbed) == fixed_fit and fixed_fit["hardirq_cycles"] != thesis["costs"]["hardirq_cycles"]
    footprints = [f"microarch.{k}={thesis['microarch'][k]}" for k in
                  ("thread_code_bytes", "softirq_code_bytes", "hardirq_code_bytes", "flush_cycles")]
    disrupted = testbed.with_overrides(footprints + ["microarch.ipc_model=disruption"])
    assert thesis_costs(disrupted) == thesis["costs"]


def test_each_group_is_scaled_by_its_own_measurement():
    costs = _thesis_costs()
    out = rescaled(PROBE, costs)
    model_message = costs["send_cycles"] + costs["rx_packet_cycles"] + costs["recv_cycles"] + costs["recv_cycles_per_request"]
    k = 2000.0 * 2.0 / model_message
    assert math.isclose(out["_scales"]["kernel_path"], k)
    for name in KERNEL_PATH:
        if name != "timer_irq_cycles":
            assert out[f"costs.{name}"] == round(costs[name] * k), name
    # The watchdog: a timed sleep's CPU less a same-CPU switch, 5000 ns.
    assert out["costs.timer_irq_cycles"] == 10000
    # The switch group: 1000 ns = 2000 cycles over the model's wake-up,
    # switch and two 200-cycle system calls.
    ks = 2000.0 / (costs["wakeup_cycles"] + costs["context_switch_cycles"] + 400.0)
    assert out["costs.context_switch_cycles"] == round(costs["context_switch_cycles"] * ks)
    # Cross-CPU figures as measured, less their same-CPU part.
    assert out["cpu.wakeup_latency_ns"] == 20000
    assert out["cpu.ipi_latency_ns"] == 10000
    assert out["costs.remote_wake_cycles"] == 10000
    local = out["costs.wakeup_cycles"] + 2 * out["costs.context_switch_cycles"] + 400
    assert out["costs.ipi_irq_cycles"] == round(20000 - local)
    assert out["cpu.freq_ghz"] == 2.0
    # User work keeps its cycles: nothing rescales the service or the penalty.
    assert not any(k.startswith("app.") or "interrupt_penalty" in k for k in out)


@pytest.mark.needs_run
def test_the_rescaled_constants_make_a_valid_testbed_scenario():
    from irqlab.run import run

    out = rescaled(PROBE, _thesis_costs())
    overrides = {k: v for k, v in out.items() if not k.startswith("_")}
    s = run(Scenario.load(ROOT / "scenarios" / "testbed" / "veth-2core.toml"), profile="no-coalescing",
            overrides=overrides, duration_s=0.05)
    assert s.throughput_qps > 0 and s.napi_thread_wakeups_per_s > 0


def test_the_clock_comes_from_cpuinfo():
    assert clock_ghz("processor\t: 0\ncpu MHz\t\t: 2600.000\n") == 2.6
    with pytest.raises(ProbeError, match="cpu MHz"):
        clock_ghz("processor\t: 0\n")


def test_irqlab_testbed_probe_measures_this_machine():
    proc = subprocess.run([sys.executable, "-m", "irqlab", "testbed", "probe", "--json"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    m = json.loads(proc.stdout)
    p = m["probe"]
    for key in ("syscall_ns", "tcp_message_ns", "switch_ns"):
        assert 0 < p[key] < 1e6, (key, p[key])
    # A system call is cheaper than a TCP message over loopback.
    assert p["syscall_ns"] < p["tcp_message_ns"]
    assert p["clock_ghz"] > 0.1
    assert m["rescaled"]["costs.peer_rx_cycles"] > 0
