"""The vIC paper's claims (Ahmad, Gulati, Mashtizadeh, USENIX ATC 2011, §4.1,
§4.2, §4.4 and §4.5), each checked on simulated runs: V1–V12 on Tables 2–6,
V13–V16 on Figure 5 (the IPI send threshold), V17–V22 on the TPC-C-like
load (Table 8, Figures 3–4), V23–V24 on the SQLIOSim- and GSBlaster-like
loads (Table 7). There is no V11: §4.4's "at the median delivery rate
R = 1/3, at the achieved mean IOPS of [withheld] ..., the increase would be
200 µs" needs the TPC-C rate the paper withholds, so it cannot be checked
(the paragraph's bound, "less than a few hundred microseconds", is V22).

Each check's status says what its verdict tells: a prediction, or a
claim that holds by construction (V19 and V20: R's swings come from the
TPC-C scenario's assumed checkpoint bursts, around a median R the
scenario's computation per transaction was set to give).

Every check takes the runs' means per (block size, outstanding I/Os, vIC
on) (:data:`Table`, built by :func:`irqlab.reproduce.vic.table`) and
returns a :class:`~irqlab.reproduce.claim.ShapeCheck` with the paper's
sentence, whether it holds and the numbers measured. The tolerances are
this module's constants, chosen from the paper's wording (or the issue's
15 %) and written into each detail; they are not adjusted to what the
simulation gives. A claim whose numbers are missing does not hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

from irqlab.reproduce.claim import CONSTRUCTION, PREDICTION, ShapeCheck, claim, declared

OIOS = (8, 16, 32, 64)
KB4, KB8 = 4096, 8192

# -- the paper's numbers ---------------------------------------------------------


@dataclass(frozen=True)
class PaperRow:
    """One row of Table 2: vIC on, then the baseline (vIC off)."""

    r_hat: float
    iops: float
    cycles_per_io: float
    guest_irqs_per_s: float
    base_iops: float
    base_cycles_per_io: float
    base_guest_irqs_per_s: float


#: Table 2 (4 KB reads, one worker, cached LUN).
TABLE_2 = {
    8: PaperRow(4 / 5, 31.2e3, 82.6e3, 49e3, 30.5e3, 84.2e3, 47e3),
    16: PaperRow(2 / 3, 38.9e3, 74.8e3, 58e3, 38.4e3, 77.0e3, 60e3),
    32: PaperRow(1 / 3, 48.3e3, 68.0e3, 69e3, 46.4e3, 70.5e3, 74e3),
    64: PaperRow(1 / 6, 53.1e3, 64.0e3, 34e3, 52.9e3, 78.4e3, 113e3),
}
#: Table 3: IOPS, CPU cost and guest interrupts with vIC, % against the baseline.
TABLE_3 = {8: (2.3, -1.9, 4.3), 16: (1.3, -2.8, -3.3), 32: (4.1, -3.5, -6.8), 64: (0.4, -18.4, -66.4)}
#: Table 1 at CIF = OIO (cifThreshold 4): 3/4 for 8-11, 8/CIF from 16 on.
TABLE_1_AT_OIO = {8: 3 / 4, 16: 1 / 2, 32: 1 / 4, 64: 1 / 8}
#: Table 6 (8 KB, OIO 64): percent of a core, with vIC and without.
TABLE_6 = {
    "VMK_VCPU_HALT": (71.4, 65.0),
    "TC64_IDENT": (7.4, 9.0),
    "device_Priv_Lsilogic_IO": (4.3, 5.0),
    "DrainMonitorActions": (0.7, 0.5),
}
#: §4.2: "the guest idle time which is a significant 6.4% of a core".
PAPER_IDLE_GAIN_PT = 6.4
#: §4.1: "an efficiency gain of 18%" at OIO 64 (78.4K to 64.0K cycles per I/O).
PAPER_COST_GAIN_64_PCT = 18.4

# -- tolerances ---------------------------------------------------------------------

#: The issue's bar for Table 2's vIC rows and R-hat: within 15 %.
CELL_TOLERANCE = 0.15
#: "Throughput never decreased": not below the baseline by more than the
#: seeds' noise (three seeds' means of one point differ by about 1 %).
NOISE = 0.01
#: "Dropped sharply" at OIO 64: guest interrupts fall by at least half.
SHARP_DROP = 0.5


@dataclass(frozen=True)
class Point:
    """The seeds' means of one (block size, OIO, vIC) point."""

    iops: float
    cycles_per_io: float
    guest_irqs_per_s: float
    virtual_irqs_per_s: float
    r_hat: float
    mean_cif: float
    reply_wait_us: float
    vcpu_halt_pct: float
    guest_pct: float
    emulation_pct: float
    pickup_pct: float
    ipis_per_s: float
    ipis_deferred_per_s: float
    latency_us: float
    seeds: int


#: (block bytes, OIO, vIC on) → the point's means.
Table = Mapping[tuple[int, int, bool], Point]


@dataclass(frozen=True)
class Fig5Point:
    """The seeds' means of one Figure 5 point: IOPS (0 without reads) and
    Hyper Pi's run time relative to Hyper Pi alone at no threshold (NaN
    without Hyper Pi)."""

    iops: float
    hyper_pi_time: float
    seeds: int


#: (reads?, Hyper Pi?, IPI threshold µs) → the point's means.
Fig5 = Mapping[tuple[bool, bool, int], Fig5Point]

#: "Severely interfere": the loser at each end of the sweep loses at least this much.
SEVERE = 0.10
#: "Do not change much": IOPS alone within this fraction over the thresholds.
FLAT = 0.05
#: "No sensitivity": Hyper Pi alone within this fraction.
INSENSITIVE = 0.01


def _missing(id_: str, claim: str, what: str) -> ShapeCheck:
    return ShapeCheck(claim=claim, holds=False, detail=f"not checked: {what} missing", id=id_)


def _have(t: Table, block: int, both: bool = True) -> Optional[str]:
    need = [(block, o, v) for o in OIOS for v in ((False, True) if both else (True,))]
    gone = [k for k in need if k not in t]
    return None if not gone else ", ".join(f"{b // 1024} KB OIO {o} vIC {'on' if v else 'off'}" for b, o, v in gone)


def pct_change(new: float, old: float) -> float:
    return 100.0 * (new / old - 1.0) if old else math.nan


@claim(
    "V1",
    "as expected, our algorithm coalesces more rigorously as the number of outstanding IOs is increased",
    tolerance="OIOS",
    status=PREDICTION,
)
def v1_ratio_falls(t: Table, *, claim: str) -> ShapeCheck:
    for block in (KB4, KB8):
        if (gone := _have(t, block, both=False)):
            return _missing("V1", claim, gone)
    parts, holds = [], True
    for block in (KB4, KB8):
        rs = [t[(block, o, True)].r_hat for o in OIOS]
        holds &= all(a > b for a, b in zip(rs, rs[1:]))
        parts.append(f"{block // 1024} KB: R-hat " + ", ".join(f"{r:.3f}" for r in rs))
    return ShapeCheck(claim, holds, "; ".join(parts) + " at OIO 8, 16, 32, 64 (must fall at each step)", id="V1")


@claim(
    "V2",
    "At runtime, CIF is often lower than the workload configured OIO as confirmed by R-hat here being lower "
    "than the R(OIO) from Table 1",
    tolerance="OIOS, TABLE_1_AT_OIO",
    status=PREDICTION,
)
def v2_cif_below_oio(t: Table, *, claim: str) -> ShapeCheck:
    if (gone := _have(t, KB4, both=False)):
        return _missing("V2", claim, gone)
    rows, holds = [], True
    for o in OIOS:
        p = t[(KB4, o, True)]
        ok = p.mean_cif < o and p.r_hat >= TABLE_1_AT_OIO[o] - 1e-9
        holds &= ok
        rows.append(f"OIO {o}: mean CIF {p.mean_cif:.1f}, R-hat {p.r_hat:.3f} vs R(OIO) {TABLE_1_AT_OIO[o]:.3f}")
    return ShapeCheck(
        claim, holds,
        "; ".join(rows) + ". Checked: CIF below OIO, hence less coalescing than Table 1 gives at CIF = OIO, i.e. "
        "R-hat at least R(OIO). This reads the sentence's 'lower' in reverse, as the degree of coalescing: the "
        "paper's own R-hat column is above R(OIO) at every OIO (4/5 > 3/4, 2/3 > 1/2, 1/3 > 1/4, 1/6 > 1/8), so "
        "read literally the sentence fails on the paper's own table", id="V2")


@claim(
    "V3",
    "Looking closely at the 64 CIF case, we can see that the dynamic delivery ratio, R, was found to be 1/6 "
    "on average (Table 2's R-hat column: 4/5, 2/3, 1/3, 1/6)",
    tolerance="OIOS, CELL_TOLERANCE",
    status=PREDICTION,
)
def v3_r_hat_as_table_2(t: Table, *, claim: str) -> ShapeCheck:
    if (gone := _have(t, KB4, both=False)):
        return _missing("V3", claim, gone)
    rows, holds = [], True
    for o in OIOS:
        sim, paper = t[(KB4, o, True)].r_hat, TABLE_2[o].r_hat
        ok = abs(sim / paper - 1) <= CELL_TOLERANCE
        holds &= ok
        rows.append(f"OIO {o}: {sim:.3f} vs {paper:.3f}{'' if ok else ' (miss)'}")
    return ShapeCheck(claim, holds, "; ".join(rows) + f" (each within {CELL_TOLERANCE:.0%})", id="V3")


def _change_with_vic(t: Table, attr: str) -> tuple[list[float], str]:
    """``attr``'s change with vIC, %, at every OIO of both sizes, and the
    changes as text per size."""
    changes, parts = [], []
    for block in (KB4, KB8):
        ch = [pct_change(getattr(t[(block, o, True)], attr), getattr(t[(block, o, False)], attr)) for o in OIOS]
        changes += ch
        parts.append(f"{block // 1024} KB: " + ", ".join(f"{c:+.1f} %" for c in ch))
    return changes, "; ".join(parts)


@claim(
    "V4",
    "In both Table 2 and 4 we see a noticeable reduction in CPU cycles per IO whenever vIC has been enabled",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def v4_cost_falls(t: Table, *, claim: str) -> ShapeCheck:
    if (gone := _have(t, KB4) or _have(t, KB8)):
        return _missing("V4", claim, gone)
    ch, text = _change_with_vic(t, "cycles_per_io")
    return ShapeCheck(claim, all(c < 0 for c in ch), text + " at OIO 8, 16, 32, 64 (each must be below 0)", id="V4")


@claim(
    "V5",
    "We also would like to note that throughput never decreased and in many cases actually increased "
    "significantly",
    tolerance="NOISE",
    status=PREDICTION,
)
def v5_iops_never_fall(t: Table, *, claim: str) -> ShapeCheck:
    if (gone := _have(t, KB4) or _have(t, KB8)):
        return _missing("V5", claim, gone)
    ch, text = _change_with_vic(t, "iops")
    return ShapeCheck(claim, all(c >= -100 * NOISE for c in ch), text + f" IOPS with vIC at OIO 8-64 (none below "
                      f"-{NOISE:.0%}, the seeds' noise)", id="V5")


@claim(
    "V6",
    "The guest operating system reported a drop from 113K interrupts per second to 34K (OIO 64)",
    tolerance="SHARP_DROP",
    status=PREDICTION,
)
def v6_sharp_drop_at_64(t: Table, *, claim: str) -> ShapeCheck:
    if (gone := _have(t, KB4)):
        return _missing("V6", claim, gone)
    off, on = t[(KB4, 64, False)].guest_irqs_per_s, t[(KB4, 64, True)].guest_irqs_per_s
    drop = 1 - on / off if off else math.nan
    return ShapeCheck(claim, drop >= SHARP_DROP,
                      f"simulated {off / 1e3:.1f}K to {on / 1e3:.1f}K per second, a drop of {drop:.0%} (paper 66 %; "
                      f"'sharp': at least {SHARP_DROP:.0%})", id="V6")


@claim(
    "V7",
    "the CPU cycles per IO have also dropped from 78.4K to 64.0K, which is an efficiency gain of 18%",
    tolerance="PAPER_COST_GAIN_64_PCT, CELL_TOLERANCE, OIOS",
    status=PREDICTION,
)
def v7_cost_gain_at_64(t: Table, *, claim: str) -> ShapeCheck:
    if (gone := _have(t, KB4)):
        return _missing("V7", claim, gone)
    off, on = t[(KB4, 64, False)].cycles_per_io, t[(KB4, 64, True)].cycles_per_io
    gain = 100 * (1 - on / off)
    lo, hi = PAPER_COST_GAIN_64_PCT * (1 - CELL_TOLERANCE), PAPER_COST_GAIN_64_PCT * (1 + CELL_TOLERANCE)
    others = [100 * (1 - t[(KB4, o, True)].cycles_per_io / t[(KB4, o, False)].cycles_per_io) for o in OIOS[:-1]]
    holds = lo <= gain <= hi and gain > max(others)
    return ShapeCheck(claim, holds,
                      f"simulated {off / 1e3:.1f}K to {on / 1e3:.1f}K, a gain of {gain:.1f} % (18.4 % within "
                      f"{CELL_TOLERANCE:.0%}: {lo:.1f} to {hi:.1f} %, and the largest of the four; at OIO 8-32: "
                      + ", ".join(f"{g:.1f} %" for g in others) + "; the paper's: 1.9, 2.8, 3.5 %). The baseline's "
                      "78.4K is a target of the fit; the gain is predicted", id="V7")


@claim(
    "V8",
    "For the 64 CIF case [8 KB], the algorithm results in the same interrupt coalescing ratio of 1/6",
    tolerance="CELL_TOLERANCE",
    status=PREDICTION,
)
def v8_same_ratio_at_8k(t: Table, *, claim: str) -> ShapeCheck:
    if (KB8, 64, True) not in t or (KB4, 64, True) not in t:
        return _missing("V8", claim, "OIO 64 with vIC")
    r8, r4 = t[(KB8, 64, True)].r_hat, t[(KB4, 64, True)].r_hat
    holds = abs(r8 / (1 / 6) - 1) <= CELL_TOLERANCE and abs(r8 / r4 - 1) <= CELL_TOLERANCE
    return ShapeCheck(claim, holds, f"8 KB R-hat {r8:.3f}, 4 KB {r4:.3f}, 1/6 = 0.167 (within {CELL_TOLERANCE:.0%} "
                      "of both)", id="V8")


def _profile(p: Point) -> dict[str, float]:
    """Table 6's rows as the model measures them (TC64_IDENT: all the
    guest's time; the model does not split its kernel from Iometer)."""
    return {
        "VMK_VCPU_HALT": p.vcpu_halt_pct,
        "TC64_IDENT": p.guest_pct,
        "device_Priv_Lsilogic_IO": p.emulation_pct,
        "DrainMonitorActions": p.pickup_pct,
    }


@claim(
    "V9",
    "Table 6 (8 KB, OIO 64): with vIC the guest idles more, runs less in its kernel and on the LSI Logic "
    "adapter's emulation, and DrainMonitorActions rises slightly (0.5 % to 0.7 %)",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def v9_profile_directions(t: Table, *, claim: str) -> ShapeCheck:
    if (KB8, 64, True) not in t or (KB8, 64, False) not in t:
        return _missing("V9", claim, "8 KB OIO 64")
    on, off = _profile(t[(KB8, 64, True)]), _profile(t[(KB8, 64, False)])
    rows, holds = [], True
    for name, (paper_on, paper_off) in TABLE_6.items():
        up = paper_on > paper_off
        ok = on[name] > off[name] if up else on[name] < off[name]
        holds &= ok
        rows.append(f"{name} {off[name]:.1f} -> {on[name]:.1f} % (paper {paper_off} -> {paper_on}){'' if ok else ' (miss)'}")
    return ShapeCheck(claim, holds, "; ".join(rows) + ". TC64_IDENT here is all of the guest's time", id="V9")


@claim(
    "V10",
    "The net savings gained by enabling virtual interrupt coalescing can be measured by looking at the guest "
    "idle time which is a significant 6.4% of a core",
    tolerance="PAPER_IDLE_GAIN_PT, CELL_TOLERANCE",
    status=PREDICTION,
)
def v10_idle_gain(t: Table, *, claim: str) -> ShapeCheck:
    if (KB8, 64, True) not in t or (KB8, 64, False) not in t:
        return _missing("V10", claim, "8 KB OIO 64")
    gain = t[(KB8, 64, True)].vcpu_halt_pct - t[(KB8, 64, False)].vcpu_halt_pct
    lo, hi = PAPER_IDLE_GAIN_PT * (1 - CELL_TOLERANCE), PAPER_IDLE_GAIN_PT * (1 + CELL_TOLERANCE)
    return ShapeCheck(claim, lo <= gain <= hi,
                      f"simulated {gain:.1f} points of a core (8 KB, OIO 64; 6.4 within {CELL_TOLERANCE:.0%}: "
                      f"{lo:.1f} to {hi:.1f}); halted {t[(KB8, 64, False)].vcpu_halt_pct:.1f} % without vIC (paper 65.0 %, "
                      "a target of the fit; the gain is predicted)",
                      id="V10")


def table_2_cells(t: Table) -> list[tuple[int, str, float, float]]:
    """(OIO, metric, simulated, paper) for Table 2's vIC columns."""
    cells = []
    for o in OIOS:
        if (KB4, o, True) not in t:
            continue
        p, q = t[(KB4, o, True)], TABLE_2[o]
        cells += [(o, "IOPS", p.iops, q.iops), (o, "cycles/IO", p.cycles_per_io, q.cycles_per_io),
                  (o, "guest int/s", p.guest_irqs_per_s, q.guest_irqs_per_s)]
    return cells


@claim(
    "V12",
    "Table 2's vIC rows (IOPS, CPU cost cycles/IO, guest interrupts per second) within 15 % of the paper",
    tolerance="CELL_TOLERANCE",
    status=PREDICTION,
)
def v12_table_2_within(t: Table, *, claim: str) -> ShapeCheck:
    if (gone := _have(t, KB4, both=False)):
        return _missing("V12", claim, gone)
    misses = []
    cells = table_2_cells(t)
    for o, name, sim, paper in cells:
        err = sim / paper - 1
        if abs(err) > CELL_TOLERANCE:
            misses.append(f"OIO {o} {name} {sim / 1e3:.1f}K vs {paper / 1e3:.1f}K ({err:+.0%})")
    detail = (f"{len(cells) - len(misses)} of {len(cells)} cells within {CELL_TOLERANCE:.0%}"
              + (("; misses: " + "; ".join(misses)) if misses else ""))
    return ShapeCheck(claim, not misses, detail, id="V12")


def thresholds(f: Fig5, reads: bool, hyper_pi: bool) -> list[int]:
    return sorted(th for (r, h, th) in f if (r, h) == (reads, hyper_pi))


def _series5(f: Fig5, reads: bool, hyper_pi: bool, attr: str) -> list[float]:
    return [getattr(f[(reads, hyper_pi, th)], attr) for th in thresholds(f, reads, hyper_pi)]


def _fmt5(f: Fig5, reads: bool, hyper_pi: bool, attr: str, fmt: str) -> str:
    return ", ".join(f"{th} us: {fmt.format(getattr(f[(reads, hyper_pi, th)], attr))}"
                     for th in thresholds(f, reads, hyper_pi))


@claim(
    "V13",
    "the throughput for 'IOPS no Hyper Pi' bars do not change much with the IPI send threshold",
    tolerance="FLAT",
    status=PREDICTION,
)
def v13_io_alone_flat(f: Fig5, *, claim: str) -> ShapeCheck:
    xs = _series5(f, True, False, "iops")
    if len(xs) < 2:
        return _missing("V13", claim, "Iometer alone over two thresholds or more")
    spread = max(xs) / min(xs) - 1 if min(xs) > 0 else math.inf
    return ShapeCheck(claim, spread <= FLAT, f"IOPS {_fmt5(f, True, False, 'iops', '{:.0f}')}: spread {spread:.1%} "
                      f"(at most {FLAT:.0%}); the guest halts between reads and the VMM looks at the queue then", id="V13")


@claim(
    "V14",
    "the blue triangle case of 'Hyper Pi no IO' shows no sensitivity to our parameter",
    tolerance="INSENSITIVE",
    status=PREDICTION,
)
def v14_hyper_pi_alone_flat(f: Fig5, *, claim: str) -> ShapeCheck:
    xs = _series5(f, False, True, "hyper_pi_time")
    if len(xs) < 2:
        return _missing("V14", claim, "Hyper Pi alone over two thresholds or more")
    spread = max(xs) / min(xs) - 1
    return ShapeCheck(claim, spread <= INSENSITIVE, f"relative run time {_fmt5(f, False, True, 'hyper_pi_time', '{:.3f}')}: "
                      f"spread {spread:.2%} (at most {INSENSITIVE:.0%})", id="V14")


@claim(
    "V15",
    "No delay in sending an IPI results in the highest IO throughput whereas waiting 500 microseconds to send "
    "an IPI results in the highest performance of the CPU-bound workload",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def v15_ends_of_the_tradeoff(f: Fig5, *, claim: str) -> ShapeCheck:
    ths = thresholds(f, True, True)
    if len(ths) < 2 or ths[0] != 0 or ths[-1] != 500:
        return _missing("V15", claim, "both workloads together at 0 and 500 us")
    iops = _series5(f, True, True, "iops")
    times = _series5(f, True, True, "hyper_pi_time")
    best_io = ths[max(range(len(ths)), key=lambda i: iops[i])]
    best_pi = ths[min(range(len(ths)), key=lambda i: times[i])]
    holds = best_io == 0 and best_pi == 500
    return ShapeCheck(claim, holds,
                      f"together: IOPS {_fmt5(f, True, True, 'iops', '{:.0f}')} (highest at {best_io} us); Hyper Pi's "
                      f"relative run time {_fmt5(f, True, True, 'hyper_pi_time', '{:.3f}')} (shortest at {best_pi} us)",
                      id="V15")


@claim(
    "V16",
    "As soon as we run those two benchmarks together, they severely interfere with each other",
    tolerance="SEVERE",
    status=PREDICTION,
)
def v16_severe_interference(f: Fig5, *, claim: str) -> ShapeCheck:
    ths = [th for th in thresholds(f, True, True) if (True, False, th) in f and (False, True, th) in f]
    if not ths:
        return _missing("V16", claim, "the three cases at a common threshold")
    both = all(f[(True, True, th)].iops < f[(True, False, th)].iops
               and f[(True, True, th)].hyper_pi_time > f[(False, True, th)].hyper_pi_time for th in ths)
    lo, hi = ths[0], ths[-1]
    pi_loss = f[(True, True, lo)].hyper_pi_time / f[(False, True, lo)].hyper_pi_time - 1
    io_loss = 1 - f[(True, True, hi)].iops / f[(True, False, hi)].iops
    holds = both and pi_loss >= SEVERE and io_loss >= SEVERE
    return ShapeCheck(claim, holds,
                      f"at {lo} us Hyper Pi takes {pi_loss:+.0%} longer beside the reads; at {hi} us the reads lose "
                      f"{io_loss:.0%} of their IOPS beside Hyper Pi (each at least {SEVERE:.0%}); both lose at every "
                      f"threshold: {both}", id="V16")


@dataclass(frozen=True)
class TpccPoint:
    """The seeds' means of one TPC-C-like point, and every seed's epochs' R."""

    tps: float
    iops: float
    guest_irqs_per_s: float
    latency_us: float
    reply_wait_us: float
    cycles_per_txn: float
    epoch_ratios: tuple[float, ...]
    seeds: int


#: (users, vIC on, cifThreshold) → the point; vIC off is stored with cifThreshold 4.
Tpcc = Mapping[tuple[int, bool, int], TpccPoint]
#: §4.4: users at the CPU saturation point without vIC and with it.
USERS_OFF, USERS_ON = 80, 90
#: "R varies dramatically": the epochs' R spans at least this factor.
R_SPAN = 4.0
#: "Numerous times ... less than 1 out of every 12": at least this many epochs per run.
NUMEROUS = 3
#: "Less than a few hundred microseconds".
FEW_HUNDRED_US = 300.0


def _need(p: Tpcc, keys) -> Optional[str]:
    gone = [k for k in keys if k not in p]
    return None if not gone else ", ".join(f"{u} users vIC {'on, cifThreshold ' + str(c) if v else 'off'}"
                                           for u, v, c in gone)


@claim(
    "V17",
    "When vIC is enabled, we were able to increase the number of users from 80 to 90 at the CPU saturation "
    "point. This immediately demonstrates that vIC freed up more CPU for real workload computation",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def v17_vic_frees_cpu(p: Tpcc, *, claim: str) -> ShapeCheck:
    keys = [(u, v, c) for u in (USERS_OFF, USERS_ON) for v, c in ((False, 4), (True, 4), (True, 2))]
    if (gone := _need(p, keys)):
        return _missing("V17", claim, gone)
    rows, holds = [], True
    for u in (USERS_OFF, USERS_ON):
        off = p[(u, False, 4)].cycles_per_txn
        for c in (4, 2):
            ch = pct_change(p[(u, True, c)].cycles_per_txn, off)
            holds &= ch < 0
            rows.append(f"{u} users, cifThreshold {c}: {ch:+.2f} %")
    return ShapeCheck(claim, holds, "CPU cycles per transaction with vIC against without: " + "; ".join(rows)
                      + " (each must be below 0)", id="V17")


@claim(
    "V18",
    "Increasing the number of users also helps increase the achieved, user-visible benchmark metric of "
    "throughput or transactions per minute (Table 8: the transaction rate increased)",
    tolerance="NOISE",
    status=PREDICTION,
)
def v18_throughput_rises(p: Tpcc, *, claim: str) -> ShapeCheck:
    keys = [(USERS_OFF, False, 4), (USERS_ON, True, 4), (USERS_ON, True, 2)]
    if (gone := _need(p, keys)):
        return _missing("V18", claim, gone)
    base = p[(USERS_OFF, False, 4)].tps
    ch = {c: pct_change(p[(USERS_ON, True, c)].tps, base) for c in (4, 2)}
    holds = all(v > 100 * NOISE for v in ch.values())
    return ShapeCheck(claim, holds, f"transactions per minute {60 * base:,.0f} without vIC at {USERS_OFF} users; with vIC at "
                      f"{USERS_ON}: {ch[4]:+.2f} % (cifThreshold 4), {ch[2]:+.2f} % (2) (each must exceed the seeds' "
                      f"noise, {NOISE:.0%}; the abstract says up to 5 %)", id="V18")


@claim(
    "V19",
    "It is interesting that R varies dramatically throughout the workload (Figures 3 and 4)",
    tolerance="R_SPAN",
    status=CONSTRUCTION,
)
def v19_r_varies(p: Tpcc, *, claim: str) -> ShapeCheck:
    k = (USERS_ON, True, 4)
    if k not in p or not p[k].epoch_ratios:
        return _missing("V19", claim, "the epochs of the vIC run at 90 users")
    rs = p[k].epoch_ratios
    span = max(rs) / min(rs)
    return ShapeCheck(claim, span >= R_SPAN, f"the epochs' R from {min(rs):.3f} to {max(rs):.3f} ({span:.1f}x, at "
                      f"least {R_SPAN:g}x), {len(rs)} epochs; the swings come from the checkpoints' bursts, which are "
                      "an assumption of the workload (docs/calibration.md)", id="V19")


@claim(
    "V20",
    "there are numerous times where the algorithm selects to deliver less than 1 out of every 12 interrupts",
    tolerance="NUMEROUS",
    status=CONSTRUCTION,
)
def v20_below_a_twelfth(p: Tpcc, *, claim: str) -> ShapeCheck:
    k = (USERS_ON, True, 4)
    if k not in p or not p[k].epoch_ratios:
        return _missing("V20", claim, "the epochs of the vIC run at 90 users")
    rs = p[k].epoch_ratios
    n = sum(r < 1 / 12 for r in rs) / max(p[k].seeds, 1)
    return ShapeCheck(claim, n >= NUMEROUS, f"{n:.1f} epochs per run below 1/12 (at least {NUMEROUS}), of "
                      f"{len(rs) / max(p[k].seeds, 1):.0f}", id="V20")


@claim(
    "V21",
    "As a result of interrupt coalescing, we see a decrease in virtual interrupts per second delivered to "
    "the guest (the more so with cifThreshold 2)",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def v21_fewer_interrupts(p: Tpcc, *, claim: str) -> ShapeCheck:
    keys = [(USERS_ON, v, c) for v, c in ((False, 4), (True, 4), (True, 2))]
    if (gone := _need(p, keys)):
        return _missing("V21", claim, gone)
    off, c4, c2 = (p[k].guest_irqs_per_s for k in keys)
    holds = c2 < c4 < off
    return ShapeCheck(claim, holds, f"guest interrupts per second at {USERS_ON} users: {off:,.0f} without vIC, {c4:,.0f} "
                      f"with cifThreshold 4, {c2:,.0f} with 2", id="V21")


@claim(
    "V22",
    "we expect latency increases to be less than a few hundred microseconds",
    tolerance="FEW_HUNDRED_US",
    status=PREDICTION,
)
def v22_latency_added(p: Tpcc, *, claim: str) -> ShapeCheck:
    keys = [(USERS_OFF, False, 4), (USERS_OFF, True, 4), (USERS_OFF, True, 2)]
    if (gone := _need(p, keys)):
        return _missing("V22", claim, gone)
    base = p[keys[0]].reply_wait_us
    added = {c: p[(USERS_OFF, True, c)].reply_wait_us - base for c in (4, 2)}
    holds = all(0 <= a < FEW_HUNDRED_US for a in added.values())
    return ShapeCheck(claim, holds, f"completions wait {added[4]:.0f} us (cifThreshold 4) and {added[2]:.0f} us (2) "
                      f"longer in the reply queue at {USERS_OFF} users (below {FEW_HUNDRED_US:.0f} us)", id="V22")


#: Table 7: (tool, vIC on) → (IOPS, cycles per I/O).
Table7 = Mapping[tuple[str, bool], tuple[float, float]]
TOOLS = ("SQLIOSim", "GSBlaster")


def _table_7_check(id_: str, claim: str, s: Table7, column: int, falls: bool, what: str) -> ShapeCheck:
    """Table 7's ``column`` (0 IOPS, 1 cycles per I/O) rises (or ``falls``) with vIC for both tools."""
    if any((tool, v) not in s for tool in TOOLS for v in (False, True)):
        return _missing(id_, claim, "a Table 7 run")
    ch = {tool: pct_change(s[(tool, True)][column], s[(tool, False)][column]) for tool in TOOLS}
    holds = all((c < 0) if falls else (c > 0) for c in ch.values())
    return ShapeCheck(claim, holds, "; ".join(f"{tool} {c:+.2f} %" for tool, c in ch.items())
                      + f" {what} with vIC (each {'below' if falls else 'above'} 0)", id=id_)


@claim(
    "V23",
    "We can see that the IOPS increased as a result of vIC (Table 7: SQLIOSim and GSBlaster)",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def v23_table_7_iops(s: Table7, *, claim: str) -> ShapeCheck:
    return _table_7_check("V23", claim, s, 0, False, "IOPS")


@claim(
    "V24",
    "As in previous benchmarks, we also found that the CPU cost per IO decreased",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def v24_table_7_cost(s: Table7, *, claim: str) -> ShapeCheck:
    return _table_7_check("V24", claim, s, 1, True, "cycles per I/O")


def all_checks(t: Table, f: Optional[Fig5] = None, p: Optional[Tpcc] = None,
               s: Optional[Table7] = None) -> list[ShapeCheck]:
    f = f if f is not None else {}
    p = p if p is not None else {}
    s = s if s is not None else {}
    return [
        v1_ratio_falls(t), v2_cif_below_oio(t), v3_r_hat_as_table_2(t), v4_cost_falls(t), v5_iops_never_fall(t),
        v6_sharp_drop_at_64(t), v7_cost_gain_at_64(t), v8_same_ratio_at_8k(t), v9_profile_directions(t),
        v10_idle_gain(t), v12_table_2_within(t),
        v13_io_alone_flat(f), v14_hyper_pi_alone_flat(f), v15_ends_of_the_tradeoff(f), v16_severe_interference(f),
        v17_vic_frees_cpu(p), v18_throughput_rises(p), v19_r_varies(p), v20_below_a_twelfth(p),
        v21_fewer_interrupts(p), v22_latency_added(p), v23_table_7_iops(s), v24_table_7_cost(s),
    ]


#: Each claim as declared beside its check, in order.
CLAIMS = declared((
    v1_ratio_falls,
    v2_cif_below_oio,
    v3_r_hat_as_table_2,
    v4_cost_falls,
    v5_iops_never_fall,
    v6_sharp_drop_at_64,
    v7_cost_gain_at_64,
    v8_same_ratio_at_8k,
    v9_profile_directions,
    v10_idle_gain,
    v12_table_2_within,
    v13_io_alone_flat,
    v14_hyper_pi_alone_flat,
    v15_ends_of_the_tradeoff,
    v16_severe_interference,
    v17_vic_frees_cpu,
    v18_throughput_rises,
    v19_r_varies,
    v20_below_a_twelfth,
    v21_fewer_interrupts,
    v22_latency_added,
    v23_table_7_iops,
    v24_table_7_cost,
))
