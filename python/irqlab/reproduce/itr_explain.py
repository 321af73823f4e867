"""Why a claim of the ITR paper that the simulation does not reproduce
fails: one paragraph per claim, written from the runs it was checked on
(the numbers are read, not written down) and from the scenario as run.

:func:`explain` returns the paragraph for a failing claim, or None when the
claim holds or there is no diagnosis for it. The diagnoses were found by
reading the runs' interrupts per packet, busy cycles per packet and the
vector's interval; they name what in the model differs from the paper's
DuT, or what the paper's text leaves open.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

from irqlab.reproduce.itr_checks import (
    IXGBE, LINEAR, OFF, Runs, busy, capacity, kilo, loads_of, mean_us, mpps, pre_overload,
)
from irqlab.reproduce.claim import ShapeCheck

#: The paper's anchors the diagnoses compare with.
PAPER_IRQ_PEAK_PPS = 500_000
PAPER_OVERLOAD_LATENCY_US = 2300.0
PAPER_OVERLOAD_PPS = 2_100_000
#: ixgbe's highest and lowest dynamic rates ("lowest latency" and "bulk"), interrupts/s.
IXGBE_MAX_DYNAMIC_RATE = 100_000
IXGBE_MIN_RATE = 8_000
#: The frame check sequence each frame carries into the NIC's buffer, bytes.
FCS_BYTES = 4
#: Preamble, start delimiter and inter-frame gap (ixgbe's IXGBE_ETH_FRAMING).
ETH_FRAMING_BYTES = 20


def _ipp(runs: Runs, policy: str, q: int) -> float:
    """Interrupts per forwarded packet."""
    s = runs[(policy, q)]
    return float(s.irqs_per_s) / float(s.throughput_qps) if s.throughput_qps else math.nan


def _lead_c1(runs: Runs) -> str:
    """C1's own first sentence: how the CPU line departs from a straight one."""
    loads = [q for q in pre_overload(runs, OFF) if busy(runs[(OFF, q)]) < 99.0]
    if len(loads) < 3:
        return ""
    lo, mid, hi = loads[0], loads[len(loads) // 2], loads[-1]
    return (f"The CPU line below 100 % is not straight: {busy(runs[(OFF, lo)]):.0f} % at {mpps(lo)}, "
            f"{busy(runs[(OFF, mid)]):.0f} % at {mpps(mid)}, {busy(runs[(OFF, hi)]):.0f} % at {mpps(hi)}: steep at "
            "first, then flatter, as its cost per packet falls with the load. ")


def _lead_c2(runs: Runs) -> str:
    """C2's own first sentence: where the interrupt rate peaks."""
    loads = pre_overload(runs, OFF)
    if not loads:
        return ""
    peak = max(loads, key=lambda q: float(runs[(OFF, q)].irqs_per_s))
    full = next((q for q in loads if busy(runs[(OFF, q)]) >= 99.0), None)
    where = (f"the CPU is saturated from {mpps(full)}, and from there NAPI keeps polling instead of re-enabling "
             "the interrupt" if full else "the CPU never saturates before overload")
    return (f"The interrupt rate peaks at {mpps(peak)} ({float(runs[(OFF, peak)].irqs_per_s):,.0f}/s), not at the "
            f"paper's {mpps(PAPER_IRQ_PEAK_PPS)}: {where}. ")


def _interrupt_cost(runs: Runs, resolved: dict) -> str:
    """C1, C2: two interrupts per packet at low load (the mechanism both
    claims' diagnoses share, after each one's own first sentence)."""
    loads = [q for q in pre_overload(runs, OFF)]
    if not loads:
        return ""
    low = loads[0]
    full = next((q for q in loads if busy(runs[(OFF, q)]) >= 99.0), None)
    peak = max(loads, key=lambda q: float(runs[(OFF, q)].irqs_per_s))
    ghz = float(resolved.get("cpu", {}).get("freq_ghz", math.nan))
    implied = ghz * 1e9 / PAPER_IRQ_PEAK_PPS
    costs = resolved.get("costs", {})
    per_packet = float(costs.get("forward_packet_cycles", math.nan)) + float(costs.get("tx_clean_cycles", math.nan))
    if resolved.get("itr", {}).get("set_with") == "ethtool":
        how = ("ixgbe maps both rings to it; switched off by ethtool after the interface came up, ixgbe 3.14.5 "
               "keeps the TX ring's WTHRESH 8, so one write-back in eight interrupts, see docs/calibration.md")
    else:
        how = ("ixgbe maps both rings to it, and the paper's ixgbe 3.14.5 configures the TX ring with WTHRESH 1 "
               "when the ITR is off at module load, InterruptThrottleRate=0, the only way its README gives: each "
               "descriptor is written back, a cause, at once; itr.set_with = \"ethtool\" keeps 8, see "
               "docs/calibration.md")
    text = (
        f"Without ITR the model takes {_ipp(runs, OFF, low):.1f} interrupts per packet at {mpps(low)}: the RX "
        f"write-back's, then the forwarded frame's TX write-back's once NAPI re-enables the vector ({how}), "
        "so a packet costs "
        f"{runs[(OFF, low)].cycles_per_query:,.0f} busy cycles. As the load grows the TX write-back falls into "
        f"the next packet's poll and the cost per packet falls ({runs[(OFF, peak)].cycles_per_query:,.0f} cycles "
        f"at {mpps(peak)}), so the CPU load grows concavely and "
    )
    text += (f"reaches 100 % only at {mpps(full)}" if full else "does not reach 100 % before overload")
    text += (
        f", where the interrupt rate peaks ({mpps(peak)}). The paper's CPU line reaching 100 % near its 0.5 Mpps "
        f"peak means about {implied:,.0f} cycles per packet at low load"
    )
    if not math.isnan(per_packet):
        text += f", about {(implied - per_packet) / 2:,.0f} per interrupt with two"
    text += (
        ": kernel 3.7's interrupt path would cost about half the thesis's fitted cycle counts (measured on a 6.x "
        "kernel), and no source gives it; it is not fitted."
    )
    return text


def _marginal(runs: Runs, resolved: dict) -> str:
    """C3: the latency's rise just before overload."""
    loads = pre_overload(runs, OFF)
    full = [q for q in loads if busy(runs[(OFF, q)]) >= 99.0]
    if not full:
        return ""
    low = min(full, key=lambda q: mean_us(runs[(OFF, q)]))
    last = full[-1]
    costs = resolved.get("costs", {})
    entry = float(costs.get("hardirq_cycles", math.nan)) + float(costs.get("softirq_entry_cycles", math.nan))
    ghz = float(resolved.get("cpu", {}).get("freq_ghz", math.nan))
    rho = last / capacity(runs, OFF)
    return (
        f"The latency rises from {mean_us(runs[(OFF, low)]):.1f} µs at {mpps(low)} to {mean_us(runs[(OFF, last)]):.1f} "
        f"µs at {mpps(last)}: each interrupt's poll starts behind the frames that came during the interrupt's entry "
        f"({entry:,.0f} cycles, {entry / ghz / 1e3:.1f} µs), and at {rho:.1%} of capacity that backlog drains "
        "slowly. The size of the rise depends on the entry cost, as C1 does; whether ×"
        f"{mean_us(runs[(OFF, last)]) / mean_us(runs[(OFF, low)]):.1f} is 'marginal' is the tolerance's call."
    )


def _buffers(runs: Runs, resolved: dict) -> str:
    """C5: the overload latency is the buffers' size."""
    nic = resolved.get("nic", {})
    ring = int(nic.get("rx-ring-size", nic.get("rx_ring_size", 0)) or 0)
    fifo = int(nic.get("rx_packet_buffer_bytes", 0) or 0)
    frame = int(resolved.get("load", {}).get("frame_bytes", 0) or 0) + FCS_BYTES
    cap = capacity(runs, OFF)
    if not (ring and frame and cap):
        return ""
    if nic.get("rx_packet_buffer_accounting") == "fill-rate":
        # The model's rule (model/devices/nic/mod.rs, PacketBuffer::charge).
        per = -(-(frame + ETH_FRAMING_BYTES) * 36 // 25)
        how = f"{per} B each (36/25 of the frame's {frame + ETH_FRAMING_BYTES} wire bytes, ixgbe's fill rate)"
    else:
        per = frame
        how = f"{per} B each (frame and FCS)"
    frames = ring + fifo // per
    paper_frames = PAPER_OVERLOAD_LATENCY_US * 1e-6 * PAPER_OVERLOAD_PPS
    per_frame = fifo / (paper_frames - ring) if paper_frames > ring else math.nan
    return (
        f"In overload the latency is the buffers' drain time: {ring} RX descriptors plus the {fifo // 1024} KiB "
        f"packet buffer holding {fifo // per:,} frames of {how}, {frames:,} frames, "
        f"{frames / cap * 1e6:,.0f} µs at {mpps(cap)}. The paper's 2300 µs at 2.1 Mpps is about "
        f"{paper_frames:,.0f} frames: with the same ring, {per_frame:.0f} B of the packet buffer per minimum-size "
        "frame."
    )


def _ixgbe_drop(runs: Runs, resolved: dict) -> str:
    """C7: no clear drop of ixgbe's latency before overload."""
    loads = pre_overload(runs, OFF, IXGBE)
    if not loads:
        return ""
    last = loads[-1]
    s = runs[(IXGBE, last)]
    return (
        f"At {mpps(last)} the default ITR takes {s.irqs_per_s:,.0f} interrupts/s at {busy(s):.1f} % CPU: NAPI "
        "polls nearly all the time, but a poll ends once the ring is empty, and the next interrupt comes only "
        f"after the throttled interval (about {1e6 / IXGBE_MIN_RATE:.0f} µs) with that interval's frames waiting; "
        "this close to capacity the backlog drains slowly, so the latency stays near the plateau "
        f"({mean_us(s):.1f} µs). What lowers the paper's latency just before overload is not in the model; "
        "one candidate is polls that do not end (busier softirqs, or service times that vary), which it lacks."
    )


def _low_rates(runs: Runs, resolved: dict) -> str:
    """C10, C13(a): the ITRs throttle from 0.05 Mpps on."""
    loads = [q for q in loads_of(runs, OFF) if (IXGBE, q) in runs]
    hit = next((q for q in loads if float(runs[(OFF, q)].irqs_per_s) >= 0.95 * IXGBE_MAX_DYNAMIC_RATE), None)
    if hit is None:
        return ""
    return (
        f"At {mpps(hit)} the unthrottled vector already fires {runs[(OFF, hit)].irqs_per_s:,.0f} times/s "
        f"({_ipp(runs, OFF, hit):.1f} per packet, see C1): the dynamic ITRs' highest rate, "
        f"{IXGBE_MAX_DYNAMIC_RATE:,}/s. With the ITRs the TX descriptor waits in the NIC (WTHRESH 8) until the "
        "vector's 10.24 µs interval ends, whose flush interrupts (the 82598 datasheet's TXDW, §3.5.3.3.4), so the "
        "next packet's interrupt waits for the interval after that one: 0.48 µs later than its arrival, then more "
        f"each packet, until two packets share one ({mean_us(runs[(IXGBE, hit)]):.1f} µs against "
        f"{mean_us(runs[(OFF, hit)]):.1f}). With one interrupt per packet they would start at 0.1 Mpps, where the "
        "paper says they do; the linear and default ITRs still agree there."
    )


def _linear_floor(runs: Runs, resolved: dict) -> str:
    """C11, C13(c): the linear ITR's interval at high load."""
    itr = resolved.get("itr", {})
    r_max, r_min = float(itr.get("max_rate", math.nan)), float(itr.get("min_rate", math.nan))
    rho_max = float(itr.get("rho_max_pps", math.nan))
    loads = pre_overload(runs, OFF, IXGBE, LINEAR)
    if not loads or not all(map(math.isfinite, (r_max, r_min, rho_max))):
        return ""
    far = [q for q in loads if mean_us(runs[(LINEAR, q)]) > 2.0 * mean_us(runs[(OFF, q)]) + 1.0]
    if not far:
        return ""
    q = far[-1]
    rate = r_max - min(q, rho_max) * (r_max - r_min) / rho_max
    return (
        f"The linear ITR's rate falls with the load to r_min at ρ_max: at {mpps(q)} r = {kilo(rate)}/s, an "
        f"interval of {1e6 / rate:.0f} µs that each poll's end waits out before the next interrupt, so its latency "
        f"({mean_us(runs[(LINEAR, q)]):.1f} µs) follows the interval, not the no-ITR curve "
        f"({mean_us(runs[(OFF, q)]):.1f} µs), from {mpps(far[0])} on; the default ITR's there: "
        f"{mean_us(runs[(IXGBE, q)]):.1f} µs at {runs[(IXGBE, q)].irqs_per_s:,.0f} interrupts/s. In the paper's DuT "
        "the curve stays close; as with C7, polls that do not end would give that."
    )


EXPLAIN: dict[str, Callable[[Runs, dict], str]] = {
    "C1": lambda runs, resolved: _lead_c1(runs) + _interrupt_cost(runs, resolved),
    "C2": lambda runs, resolved: _lead_c2(runs) + _interrupt_cost(runs, resolved),
    "C3": _marginal,
    "C5": _buffers,
    "C7": _ixgbe_drop,
    "C10": _low_rates,
    "C11": _linear_floor,
    "C13": lambda runs, resolved: " ".join(t for t in (_low_rates(runs, resolved), _linear_floor(runs, resolved)) if t),
}


def explain(check: ShapeCheck, runs: Runs, resolved: dict) -> Optional[str]:
    """The diagnosis of a failing claim, from ``runs`` (every regime's runs,
    keyed by (regime, load)) and the scenario as run; None when it holds or
    has no diagnosis."""
    if check.holds or check.id not in EXPLAIN:
        return None
    try:
        return EXPLAIN[check.id](runs, resolved) or None
    except (KeyError, ValueError, ZeroDivisionError):
        return None
