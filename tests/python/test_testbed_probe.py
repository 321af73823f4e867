"""The machine probe and the rescaling of the simulator's constants by it
(``irqlab testbed probe``; python/irqlab/testbed/probe.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab.scenario import Scenario
from irqlab.testbed.probe import KERNEL_PATH, ProbeError, clock_ghz, l1i_bytes, rescaled

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
    # The testbed runs the thesis's disruption model: its warm costs get
    # rescaled, with the thesis's footprints and flush.
    assert testbed.resolved()["microarch"]["ipc_model"] == "disruption"
    assert thesis_costs(testbed) == thesis["costs"]
    for k in ("thread_code_bytes", "softirq_code_bytes", "hardirq_code_bytes", "flush_cycles", "cpi_warm", "costs_cpi"):
        assert testbed.resolved()["microarch"][k] == thesis["microarch"][k], k
    assert testbed.resolved()["app"]["service"] == thesis["app"]["service"]
    # Under fixed costs the fixed-cost fit (the interrupt path with its
    # penalties) would be rescaled, not the disruption fit's warm costs.
    fixed = testbed.with_overrides(["microarch.ipc_model=fixed"])
    assert thesis_costs(fixed) == fixed_fit and fixed_fit["hardirq_cycles"] != thesis["costs"]["hardirq_cycles"]


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
    # The load generator's timed wait: as measured, and on time for a
    # probe taken before it was measured.
    assert rescaled({**PROBE, "timer_wake_ns": 23456.4}, costs)["load.client_timer_lag_ns"] == 23456
    assert out["load.client_timer_lag_ns"] == 0
    local = out["costs.wakeup_cycles"] + 2 * out["costs.context_switch_cycles"] + 400
    # The busy CPU's loss less a wake-up, two switches and the woken
    # thread's read (one 200-cycle system call): it answers through memory.
    assert out["costs.ipi_irq_cycles"] == round(20000 - local + 200)
    assert out["cpu.freq_ghz"] == 2.0
    # User work keeps its cycles: nothing rescales the service or the penalty.
    assert not any(k.startswith("app.") or "interrupt_penalty" in k for k in out)


def test_leaving_idle_is_the_idle_wake_up_less_its_work_and_comes_out_of_the_latency_and_the_timer():
    costs = _thesis_costs()
    probe = {**PROBE, "idle_wake_cpu_ns": 15000.0, "timer_sleep_cpu_ns": 16000.0}
    out = rescaled(probe, costs)
    # 30,000 cycles less a wake-up, two switches and one 200-cycle read.
    one_call = out["costs.wakeup_cycles"] + 2 * out["costs.context_switch_cycles"] + 200
    exit_cycles = round(30000 - one_call)
    assert out["costs.idle_exit_cycles"] == exit_cycles > 0
    # The latency less the exit charged before the work (2 GHz): together as measured.
    assert out["cpu.wakeup_latency_ns"] == round(20000 - exit_cycles / 2.0)
    # A timed sleep's CPU (the thread's clock, without the idle task's
    # exit) less a switch.
    assert out["costs.timer_irq_cycles"] == 30000
    # Without the measurement (an older probe, or one CPU) nothing changes.
    assert rescaled(PROBE, costs)["costs.idle_exit_cycles"] == 0


def test_the_cache_figures_come_from_the_probe_and_sysfs(tmp_path):
    out = rescaled({**PROBE, "l2_line_ns": 6.2, "l1i_bytes": 65536}, _thesis_costs())
    assert out["microarch.l2_latency_cycles"] == 12 and out["microarch.l1i_bytes"] == 65536
    assert "microarch.l1i_bytes" not in rescaled(PROBE, _thesis_costs())
    for i, (level, kind, size) in enumerate([("1", "Data", "48K"), ("1", "Instruction", "32K"), ("2", "Unified", "1024K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert l1i_bytes(tmp_path) == 32768
    assert l1i_bytes(tmp_path / "missing") is None


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
    # A line from L2 takes a few nanoseconds on any core since 2008.
    assert 0.5 < p["l2_line_ns"] < 50, p["l2_line_ns"]
    if len(os.sched_getaffinity(0)) >= 2:
        # Measured, and bounded: /proc/stat's 10 ms over 6,000 wake-ups can
        # round a cheap one to 0, and a CPU that other work keeps from
        # idling is busy from one wake-up to the next (the whole spacing,
        # stretched by a busy machine), never more, up to the file's two
        # ticks over the round (a median over probes: twice that).
        assert p["idle_wakeups"] > 0 and p["idle_wake_spacing_ns"] >= 200_000, p
        assert 0 <= p["idle_wake_cpu_ns"] <= 1.1 * p["idle_wake_spacing_ns"] + 4e7 / p["idle_wakeups"], p
        assert m["rescaled"]["costs.idle_exit_cycles"] >= 0


def test_the_testbed_takes_the_median_of_its_probes_field_by_field():
    from irqlab.testbed.probe import median_probe

    probes = [{**PROBE, "idle_wake_cpu_ns": v, "syscall_ns": s, "l1i_bytes": 32768}
              for v, s in ((18000.0, 90.0), (32000.0, 110.0), (21000.0, 100.0))]
    m = median_probe(probes)
    assert m["idle_wake_cpu_ns"] == 21000.0 and m["syscall_ns"] == 100.0
    assert m["l1i_bytes"] == 32768 and m["probes"] == 3


def test_the_ipi_cost_is_the_busy_cpus_loss_alone_not_less_a_separately_measured_waker():
    # The probe's busy wake-up has no answer that wakes the prober: the
    # waker's cost (measured elsewhere, with its own noise) is not
    # subtracted from it, so it cannot drive the IPI's cost to 0.
    costs = _thesis_costs()
    cheap, dear = (rescaled({**PROBE, "wake_sender_cpu_ns": w}, costs) for w in (1000.0, 9000.0))
    assert cheap["costs.ipi_irq_cycles"] == dear["costs.ipi_irq_cycles"] > 0
    assert dear["costs.remote_wake_cycles"] == 18000 and cheap["costs.remote_wake_cycles"] == 2000


def _spread(q1: float, median: float, q3: float, n: int = 60) -> dict:
    return {"q1": q1, "median": median, "q3": q3, "samples": n}


def test_the_spreads_of_several_probes_join_into_one_interval_per_figure():
    from irqlab.testbed.spread import combined_spread, relative_width

    probes = [
        {**PROBE, "busy_wake_cpu_ns": b, "spread": {"busy_wake_cpu_ns": _spread(b - 500, b, b + 700),
                                                     "syscall_ns": _spread(99.0, 100.0, 101.0)}}
        for b in (10000.0, 11000.0, 14000.0)
    ]
    c = combined_spread(probes)
    b = c["busy_wake_cpu_ns"]
    # The median of the figures; the median quartiles (10,500 and 11,700),
    # widened to the probes' lowest and highest figures (10,000 and 14,000).
    assert b["median"] == 11000.0 and b["lo"] == 10000.0 and b["hi"] == 14000.0
    assert b["between"] == [10000.0, 14000.0] and b["samples"] == 180
    assert c["syscall_ns"]["lo"] == 99.0 and c["syscall_ns"]["hi"] == 101.0
    assert math.isclose(relative_width(b), 4000.0 / 11000.0)
    # The testbed's median probe keeps it.
    from irqlab.testbed.probe import median_probe

    m = median_probe(probes)
    assert m["busy_wake_cpu_ns"] == 11000.0 and m["spread"] == c


def test_draws_stay_in_each_figures_interval_and_leave_the_rest():
    from irqlab.testbed.spread import drawn, draws

    probe = {**PROBE, "spread": {"busy_wake_cpu_ns": {"lo": 8000.0, "median": 10000.0, "hi": 16000.0},
                                 "syscall_ns": {"lo": 100.0, "median": 100.0, "hi": 100.0}}}
    # 0, 0.5 and 1 are the interval's ends and the figure; linear between.
    assert drawn(probe, {"busy_wake_cpu_ns": 0.0})["busy_wake_cpu_ns"] == 8000.0
    assert drawn(probe, {"busy_wake_cpu_ns": 0.5})["busy_wake_cpu_ns"] == 10000.0
    assert drawn(probe, {"busy_wake_cpu_ns": 0.75})["busy_wake_cpu_ns"] == 13000.0
    assert drawn(probe, {"busy_wake_cpu_ns": 1.0})["busy_wake_cpu_ns"] == 16000.0
    d = draws(probe, n=8)
    assert len(d) == 8 and d == draws(probe, n=8)  # the same probe, the same draws
    values = [x["busy_wake_cpu_ns"] for x in d]
    assert all(8000.0 <= v <= 16000.0 for v in values) and len(set(values)) == 8
    # A figure without spread, or with none, is the probe's.
    assert all(x["syscall_ns"] == 100.0 and x["tcp_message_ns"] == PROBE["tcp_message_ns"] for x in d)


def test_the_machine_description_carries_each_rescaled_costs_range():
    from irqlab.testbed.machine import describe

    costs = _thesis_costs()
    assert "draws" not in describe(PROBE, costs)  # no spread, no draws
    probe = {**PROBE, "spread": {"busy_wake_cpu_ns": {"lo": 8000.0, "median": 10000.0, "hi": 16000.0},
                                 "tcp_message_ns": {"lo": 2000.0, "median": 2000.0, "hi": 2000.0}}}
    m = describe(probe, costs)
    assert m["rescaled"] == rescaled(probe, costs) and len(m["draws"]) >= 2
    lo, hi = m["rescaled_spread"]["costs.ipi_irq_cycles"]
    # The IPI's cost follows the busy CPU's loss (2 GHz): its range is
    # within the ends' rescaling and holds the median's.
    assert rescaled({**probe, "busy_wake_cpu_ns": 8000.0}, costs)["costs.ipi_irq_cycles"] <= lo
    assert lo < m["rescaled"]["costs.ipi_irq_cycles"] < hi
    assert hi <= rescaled({**probe, "busy_wake_cpu_ns": 16000.0}, costs)["costs.ipi_irq_cycles"]
    # A figure without width leaves its costs a point.
    assert m["rescaled_spread"]["costs.send_cycles"][0] == m["rescaled_spread"]["costs.send_cycles"][1]


def test_an_agreement_is_judged_against_the_range_the_probes_spread_gives():
    from irqlab.testbed.compare import agreement
    from irqlab.testbed.spread import agrees, agrees_points

    assert agrees(1.30, 0.90, 1.12, 0.15) and not agrees(1.30, 0.90, 1.10, 0.15)
    assert agrees(1.00, 1.10, 1.20, 0.15) and not agrees(1.00, 1.20, 1.30, 0.15)
    assert agrees_points(30.0, 20.0, 25.0, 5.0) and not agrees_points(31.0, 20.0, 25.0, 5.0)

    core = {"idle": 70.0, "busy_exact": 30.0, "napi_wakeups_per_s": 10.0}
    measured = {"profiles": [
        {"profile": p, **{ph: {"loadgen": {"achieved_qps": q}, "server_core": core} for ph in ("closed", "low", "medium")}}
        for p, q in (("no-coalescing", 100.0), ("busy-wait", 130.0))
    ]}

    def sim(nc: float, bw: float, idle: float) -> dict:
        return {p: {ph: {"throughput_qps": q, "cpu_pct": {"idle": idle}, "irqs_per_s": 5.0} for ph in ("closed", "low", "medium")}
                for p, q in (("no-coalescing", nc), ("busy-wait", bw))}

    from irqlab.testbed.compare import summary

    median = sim(100.0, 100.0, 80.0)  # a ratio of 1.00 (-23 %), 20 % CPU (-10 points)
    alone = agreement(measured, median)
    assert any(x.startswith("busy-wait / no-coalescing") and "disagrees" in x for x in alone)
    assert any(x.startswith("no-coalescing low-load server CPU") and "disagrees" in x for x in alone)
    # A draw of the probe's spread reaches 1.20 and 26 %: within both tolerances.
    draws = [summary(sim(100.0, 120.0, 74.0)), summary(sim(100.0, 105.0, 79.0))]
    lines = agreement(measured, median, draws)
    said = [x for x in lines if x.startswith("busy-wait / no-coalescing")]
    assert said == ["busy-wait / no-coalescing closed-loop QPS: measured 1.300, simulated 1.000 (1.000-1.200 over 3 "
                    "descriptions of the probe's spread) (-23%: agrees within ±15% somewhere in the range)"]
    cpu = [x for x in lines if x.startswith("no-coalescing low-load server CPU")]
    assert "simulated 20 % (20-26 over 3 descriptions" in cpu[0] and "agrees within" in cpu[0]
    # A range that stays out of the tolerance still disagrees.
    far = [summary(sim(100.0, 101.0, 80.0))]
    assert any(x.startswith("busy-wait / no-coalescing") and "disagrees" in x for x in agreement(measured, median, far))


def test_wake_ups_and_latency_are_judged_and_every_disagreement_named():
    from irqlab.testbed.compare import agreement

    def row(wakeups_per_s: float, p50: float, p99: float) -> dict:
        return {"loadgen": {"achieved_qps": 100.0, "latency_us": {"p50": p50, "p95": p99, "p99": p99}},
                "server_core": {"idle": 70.0, "busy_exact": 30.0, "napi_wakeups_per_s": wakeups_per_s}}

    measured = {"profiles": [{"profile": "no-coalescing", "closed": row(20.0, 200.0, 400.0),
                              "low": row(80.0, 100.0, 200.0), "medium": row(40.0, 90.0, 500.0)}]}
    sim = {"no-coalescing": {ph: {"throughput_qps": 100.0, "cpu_pct": {"idle": 70.0}, "irqs_per_s": w,
                                  "latency_us": {"p50": p50, "p99": p99}}
                             for ph, w, p50, p99 in (("closed", 30.0, 210.0, 300.0), ("low", 85.0, 80.0, 110.0),
                                                     ("medium", 41.0, 60.0, 140.0))}}
    lines = agreement(measured, sim)
    wake = next(x for x in lines if "wake-ups per request" in x)
    # 0.85 against 0.80 (+6 %), 0.41 against 0.40, 0.30 against 0.20 (+50 %).
    assert "low agrees, medium agrees, closed disagrees within ±25%" in wake
    p50 = next(x for x in lines if x.startswith("no-coalescing p50 latency"))
    # 80 against 100 µs (-20 %), 60 against 90 µs (-33 %).
    assert "measured 100/90 µs, simulated 80/60 µs (low agrees, medium disagrees within ±25%)" in p50
    p99 = next(x for x in lines if x.startswith("no-coalescing p99 latency"))
    # 110 against 200 µs (-45 %), 140 against 500 µs (-72 %).
    assert "(low agrees, medium disagrees within ±50%)" in p99
    assert lines[-1] == ("3 of 5 comparisons disagree: no-coalescing NAPI-thread wake-ups per request at "
                         "low/medium/closed load; no-coalescing p50 latency at low/medium load; "
                         "no-coalescing p99 latency at low/medium load")


@pytest.mark.parametrize("rate, lengths, per_s, quantiles_ns", [
    # The host taking a busy CPU (the spinners' gaps).
    ("host_preempt_per_s", "host_preempt_gaps_ns", "cpu.host_preempt_per_s", "cpu.host_preempt_ns"),
    # The host holding a halted CPU's wake-up back (the timed waits' latenesses).
    ("halted_late_per_s", "halted_late_ns", "cpu.host_halted_late_per_s", "cpu.host_halted_late_ns"),
])
def test_the_hosts_holds_are_carried_as_their_rate_and_quantiles(rate, lengths, per_s, quantiles_ns):
    from irqlab.testbed.probe import median_probe, quantiles

    costs = _thesis_costs()
    seen = [200_000, 300_000, 400_000, 1_000_000, 5_000_000]
    out = rescaled({**PROBE, rate: 2.5, lengths: seen}, costs)
    assert out[per_s] == 2.5
    q = out[quantiles_ns]
    assert len(q) == 21 and q[0] == 200_000 and q[-1] == 5_000_000 and q[10] == 400_000 and q == sorted(q)
    assert quantiles([1, 3], 3) == [1, 2, 3]
    # None seen, or a probe from before they were measured: never.
    assert per_s not in rescaled({**PROBE, rate: 0.0, lengths: []}, costs)
    assert per_s not in rescaled(PROBE, costs)
    # Three probes: every probe's lengths, and the median rate.
    m = median_probe([{**PROBE, rate: r, lengths: [g]}
                      for r, g in ((1.0, 300_000), (3.0, 200_000), (2.0, 900_000))])
    assert m[lengths] == [200_000, 300_000, 900_000] and m[rate] == 2.0


def test_a_difference_of_medians_the_repeats_do_not_resolve_is_no_order():
    from irqlab.testbed.compare import agreement

    def run(profile: str, repeat: int, q: float) -> dict:
        return {"profile": profile, "repeat": repeat, "phase": "closed", "loadgen": {"achieved_qps": q}}

    def measured(adaptive: list[float]) -> dict:
        nc = [100.0, 100.0, 100.0]
        runs = [run("no-coalescing", k, q) for k, q in enumerate(nc)] + [run("adaptive-coalescing", k, q) for k, q in enumerate(adaptive)]
        profiles = [{"profile": p, **{ph: {"loadgen": {"achieved_qps": sorted(qs)[1]},
                                             "server_core": {"idle": 0.0, "napi_wakeups_per_s": 0.0}}
                                      for ph in ("closed", "low", "medium")}}
                    for p, qs in (("no-coalescing", nc), ("adaptive-coalescing", adaptive))]
        return {"profiles": profiles, "runs": runs}

    sim = {p: {ph: {"throughput_qps": 100.0, "cpu_pct": {"idle": 0.0}, "irqs_per_s": 0.0} for ph in ("closed", "low", "medium")}
           for p in ("no-coalescing", "adaptive-coalescing")}
    # Medians 16 % apart, repeats from 0.9 to 1.35 of no-coalescing: the
    # paired interval includes 1, so the simulation's tie is no wrong order.
    first = agreement(measured([90.0, 116.0, 135.0]), sim)[0]
    assert "(same order wherever the measured differ by more than 5% and the repeats tell them apart)" in first, first
    # The same medians with tight repeats: the order is real and the tie is wrong.
    first = agreement(measured([115.0, 116.0, 117.0]), sim)[0]
    assert "adaptive-coalescing above no-coalescing by 16% measured, not simulated (differs)" in first, first


def test_the_order_counts_only_where_the_measurement_separates_and_a_few_stray_wake_ups_agree():
    from irqlab.testbed.compare import agreement

    def row(q: float, wakeups_per_s: float) -> dict:
        return {ph: {"loadgen": {"achieved_qps": q}, "server_core": {"idle": 0.0, "napi_wakeups_per_s": wakeups_per_s}}
                for ph in ("closed", "low", "medium")}

    # busy-wait 3 % above no-coalescing measured (not separated), irq-suspend 20 %.
    measured = {"profiles": [{"profile": "no-coalescing", **row(100.0, 20.0)},
                             {"profile": "busy-wait", **row(103.0, 0.5)},
                             {"profile": "irq-suspend", **row(120.0, 0.0)}]}

    def sim(nc: float, bw: float, isus: float) -> dict:
        return {p: {ph: {"throughput_qps": q, "cpu_pct": {"idle": 0.0}, "irqs_per_s": w} for ph in ("closed", "low", "medium")}
                for p, q, w in (("no-coalescing", nc, 20.0), ("busy-wait", bw, 0.0), ("irq-suspend", isus, 0.0))}

    # The simulation may order busy-wait and no-coalescing either way...
    lines = agreement(measured, sim(100.0, 95.0, 118.0))
    assert lines[0].endswith("(same order wherever the measured differ by more than 5% and the repeats tell them apart)"), lines[0]
    # ... but not tie irq-suspend with no-coalescing.
    lines = agreement(measured, sim(100.0, 95.0, 100.5))
    assert lines[0].endswith("irq-suspend above no-coalescing by 20% measured, not simulated (differs)"), lines[0]
    # 0.005 wake-ups per request measured, none simulated: within the floor.
    wake = next(x for x in lines if x.startswith("busy-wait NAPI-thread"))
    assert "low agrees, medium agrees, closed agrees within ±25% (or 0.02)" in wake
