"""The vIC paper: Ahmad, Gulati and Mashtizadeh, "vIC: Interrupt Coalescing
for Virtual Machine Storage Device IO" (USENIX ATC 2011), Tables 2–6 and 8,
Figures 3–5 and the claims of §4.1–§4.5, reproduced from the simulator.

The paper's machine (§4) is an HP DL-380 with 4 dual-core AMD Opterons at
2.4 GHz running ESX, a QLogic 4 Gb Fibre Channel HBA and an EMC CLARiiON
CX3-40 with small, fully cached LUNs; a Windows 2003 VM runs Iometer with
one worker reading 4 KB (Tables 2–3) or 8 KB (Tables 4–5, withheld in the
copy the model was built from) with 8 to 64 I/Os outstanding, vIC off and
on. Table 6 is the VMM's profile at 8 KB and OIO 64. Figure 5 (§4.5) sweeps
the IPI send threshold with a 2-vCPU VM running Iometer (8 KB, OIO 8)
alone, SMP Hyper Pi alone, and both together. Table 8 and Figures 3–4 are
a TPC-C run (§4.4) without vIC and with cifThreshold 4 and 2.

Here the machine is ``scenarios/vic/iometer.toml`` (``vm.kind =
"lsilogic"``, ``app.kind = "iometer"``, ``model/storage/``), vIC is
``vic.enabled`` and the policy tier's ``irqlab_policy::vic``. The studies
``scenarios/vic/table-2.study.toml`` and ``table-4.study.toml`` sweep OIO ×
vIC at 4 KB and 8 KB, three seeds per point; ``figure-5.study.toml`` and
``figure-5-no-io.study.toml`` the threshold, with Hyper Pi as
``storage.background_threads``; ``table-8.study.toml`` a TPC-C-like load
(``scenarios/vic/tpcc.toml``, ``app.kind = "oltp"``). ``table-7-sqliosim.study.toml`` and ``table-7-gsblaster.study.toml``
SQLIOSim- and GSBlaster-like loads (``storage.target_latency_us``, a fixed
depth). The claims (V1–V24 but V11,
:mod:`irqlab.reproduce.vic_checks`) are checked on the seeds' means.

What was fitted, on Table 2's baseline rows (vIC off, OIO 8–64: four IOPS
and four cycles per I/O) and Table 6's halted share without vIC (8 KB, OIO
64): the array's service time per command and its overlapped latency, the
VMkernel's cycles per completion, and one scale on the first estimates of
the guest's and the VMM's costs (docs/calibration.md, ``tools/fit_vic.py``).
Everything with vIC on, the 8 KB tables but that one cell, the rest of
Table 6 and Figure 5 are predictions. The TPC-C workload's numbers are assumptions but one: its
computation per transaction is set so that the median R is the paper's 1/3.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from irqlab.reproduce import vic_checks
from irqlab.reproduce.claim import ShapeCheck
from irqlab.reproduce.claims import frame_html as _frame_html
from irqlab.reproduce.flags import duration_option
from irqlab.reproduce.paper import Paper, Table
from irqlab.reproduce.studies import mean as _mean
from irqlab.reproduce.result import StudiesResult
from irqlab.reproduce.studies import run_seeded, scenario_dir, warnings_of
from irqlab.reproduce.vic_checks import KB4, KB8, OIOS, TABLE_2, TABLE_3, TABLE_6, Fig5Point, Point, TpccPoint

#: The studies, in the order they are run.
STUDIES = ("table-2", "table-4", "figure-5", "figure-5-no-io", "table-8", "table-7-sqliosim", "table-7-gsblaster")
#: The fit (``[storage]``'s defaults), for the note.
FIT = {
    "storage.array_service_ns": 21_250,
    "storage.array_latency_ns": 183_750,
    "storage.vmk_complete_cycles": 42_500,
}
TITLES = {
    "table-2": "Table 2: Iometer 4 KB reads, one worker, cached LUN (simulated | paper)",
    "table-3": "Table 3: improvements with vIC, % against the baseline (simulated | paper)",
    "table-4": "Table 4: Iometer 8 KB reads (simulated; the paper's numbers are withheld)",
    "table-5": "Table 5: improvements with vIC at 8 KB, % (simulated; withheld in the paper's copy)",
    "table-6": "Table 6: the vCPUs at 8 KB, OIO 64, percent of a core, their mean (simulated | paper)",
    "figure-5": "Figure 5: the IPI send threshold, Iometer 8 KB OIO 8 and Hyper Pi on a 2-vCPU VM (simulated)",
    "table-7": "Table 7: SQLIOSim- and GSBlaster-like loads (simulated; the paper's numbers are withheld)",
    "table-8": "Table 8: TPC-C-like load (simulated; the paper's numbers are withheld)",
    "figures-3-4": "Figures 3-4: the ratio vIC chose every 200 ms epoch, TPC-C-like load, 90 users, cifThreshold 4",
}
CHECKS_TITLE = "The vIC paper's claims (§4.1-4.5), checked on the simulation"


def vic_dir() -> Path:
    """``scenarios/vic`` of the working directory, else of the repository."""
    return scenario_dir("vic", "iometer.toml")


def default_scenario() -> Path:
    return vic_dir() / "iometer.toml"


@dataclass
class VicResult(StudiesResult):
    """The seeds' means per (block bytes, OIO, vIC on), and where they came from."""

    table: dict[tuple[int, int, bool], Point] = field(default_factory=dict)
    #: Figure 5: (reads?, Hyper Pi?, threshold µs) → the point.
    figure_5: dict[tuple[bool, bool, int], Fig5Point] = field(default_factory=dict)
    #: Table 8: (users, vIC on, cifThreshold) → the point.
    tpcc: dict[tuple[int, bool, int], TpccPoint] = field(default_factory=dict)
    #: Table 7: (tool, vIC on) → (IOPS, cycles per I/O).
    table_7: dict[tuple[str, bool], tuple[float, float]] = field(default_factory=dict)


def run_vic(scenario: Optional[Path] = None, duration_s: Optional[float] = None, seed: Optional[int] = None,
            seeds: Optional[int] = None, **how) -> VicResult:
    """Run the studies into ``out/<name>`` and read them back; ``how`` is
    ``out``, ``jobs``, ``resume``, ``quiet`` and ``overrides``
    (:func:`~irqlab.reproduce.studies.run_seeded`)."""
    return run_seeded(vic_dir(), STUDIES, read_vic, scenario, duration_s, seed, seeds, **how)


def table(frame, block: int) -> dict[tuple[int, int, bool], Point]:
    """The means per (OIO, vIC) of a results frame's rows, all of ``block`` bytes."""
    out: dict[tuple[int, int, bool], Point] = {}
    for (oio, vic), g in frame.groupby(["storage.oio", "vic.enabled"]):
        on = bool(vic)
        out[(block, int(oio), on)] = Point(
            iops=_mean(g, "storage.iops"),
            cycles_per_io=_mean(g, "storage.cycles_per_io"),
            guest_irqs_per_s=_mean(g, "storage.guest_irqs_per_s"),
            virtual_irqs_per_s=_mean(g, "storage.virtual_irqs_per_s"),
            r_hat=_mean(g, "storage.vic.mean_ratio") if on else 1.0,
            mean_cif=_mean(g, "storage.mean_cif"),
            reply_wait_us=_mean(g, "storage.reply_wait_us"),
            vcpu_halt_pct=_mean(g, "storage.vcpu_halt_pct"),
            guest_pct=_mean(g, "storage.guest_pct"),
            emulation_pct=_mean(g, "storage.emulation_pct"),
            pickup_pct=_mean(g, "storage.pickup_pct"),
            ipis_per_s=_mean(g, "storage.ipis_per_s"),
            ipis_deferred_per_s=_mean(g, "storage.ipis_deferred_per_s"),
            latency_us=_mean(g, "latency_us.mean"),
            seeds=len(g),
        )
    return out


def figure_5_points(frame, resolved: dict) -> list[tuple[bool, bool, int, float, float, int]]:
    """(reads?, Hyper Pi?, threshold, IOPS, Hyper Pi's CPU share %, seeds)
    per point of a Figure 5 study's frame."""
    storage = resolved.get("storage", {})
    reads = int(storage.get("oio", 0)) > 0
    by = ["vic.ipi_threshold_us"] + (["storage.background_threads"] if "storage.background_threads" in frame else [])
    points = []
    for key, g in frame.groupby(by):
        key = key if isinstance(key, tuple) else (key,)
        threads = int(key[1]) if len(key) > 1 else int(storage.get("background_threads", 0))
        points.append((reads, threads > 0, int(key[0]), _mean(g, "storage.iops"),
                       _mean(g, "storage.background_cpu_pct"), len(g)))
    return points


def _ratios(v) -> tuple[float, ...]:
    """A stored list of numbers (JSON text in the store, or a sequence)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ()
    return tuple(float(x) for x in (json.loads(v) if isinstance(v, str) else v))


def tpcc_points(frame) -> dict[tuple[int, bool, int], TpccPoint]:
    """Table 8's points; vIC off is kept once, under cifThreshold 4 (the
    threshold does nothing then), from the runs of both thresholds."""
    out: dict[tuple[int, bool, int], TpccPoint] = {}
    frame = frame.assign(_cif=[int(c) if bool(v) else 4 for c, v in zip(frame["vic.cif_threshold"], frame["vic.enabled"])])
    for (users, vic, cif), g in frame.groupby(["oltp.users", "vic.enabled", "_cif"]):
        cycles = g["storage.cycles_per_io"].astype(float) * g["storage.iops"].astype(float)
        tps = g["storage.transactions_per_s"].astype(float)
        ratios = tuple(x for v in g.get("storage.vic.epoch_ratios", []) for x in _ratios(v))
        out[(int(users), bool(vic), int(cif))] = TpccPoint(
            tps=float(tps.mean()), iops=_mean(g, "storage.iops"), guest_irqs_per_s=_mean(g, "storage.guest_irqs_per_s"),
            latency_us=_mean(g, "latency_us.mean"), reply_wait_us=_mean(g, "storage.reply_wait_us"),
            cycles_per_txn=float((cycles / tps).mean()), epoch_ratios=ratios, seeds=len(g),
        )
    return out


def read_vic(out: Path) -> VicResult:
    """The reproduction's means from the results stores under ``out``."""
    r = VicResult()
    warnings: list[str] = []
    shares: dict[tuple[bool, bool, int], tuple[float, float, int]] = {}
    for name, frame, _, resolved in r.read(out, STUDIES):
        if name.startswith("figure-5"):
            for reads, pi, th, iops, share, n in figure_5_points(frame, resolved):
                shares[(reads, pi, th)] = (iops, share, n)
        elif name == "table-8":
            r.tpcc = tpcc_points(frame)
        elif name.startswith("table-7-"):
            tool = {"table-7-sqliosim": "SQLIOSim", "table-7-gsblaster": "GSBlaster"}[name]
            for vic, g in frame.groupby("vic.enabled"):
                r.table_7[(tool, bool(vic))] = (_mean(g, "storage.iops"), _mean(g, "storage.cycles_per_io"))
        else:
            block = int(resolved.get("storage", {}).get("block_bytes", KB4))
            r.table.update(table(frame, block))
        # Hyper Pi alone completes no read, by design.
        warnings.extend(w for w in warnings_of(frame, name)
                        if not (name == "figure-5-no-io" and "no request completed" in w))
    r.warnings = list(dict.fromkeys(warnings))
    # Hyper Pi's run time for its fixed job, relative to Hyper Pi alone at
    # the first threshold: inversely proportional to its CPU share.
    alone = [v[1] for k, v in sorted(shares.items()) if k[:2] == (False, True)]
    base = alone[0] if alone else math.nan
    for k, (iops, share, n) in shares.items():
        time = base / share if k[1] and share and share > 0 else math.nan
        r.figure_5[k] = Fig5Point(iops=iops if k[0] else 0.0, hyper_pi_time=time, seeds=n)
    return r


def shape_checks(r: VicResult) -> list[ShapeCheck]:
    return vic_checks.all_checks(r.table, r.figure_5, r.tpcc, r.table_7)


def table_7_rows(r: VicResult) -> list[dict[str, object]]:
    rows = []
    for tool in vic_checks.TOOLS:
        on, off = r.table_7.get((tool, True)), r.table_7.get((tool, False))
        if on is None or off is None:
            continue
        rows.append({"tool": tool, "iops": on[0], "cycles_per_io": on[1], "baseline_iops": off[0],
                     "baseline_cycles_per_io": off[1], "iops_pct": vic_checks.pct_change(on[0], off[0]),
                     "cycles_pct": vic_checks.pct_change(on[1], off[1])})
    return rows


def table_7_text(r: VicResult) -> str:
    heads = ("", "IOPS", "CPU cost", "Baseline IOPS", "Baseline cost", "IOPS %diff", "CPU cost %diff")
    widths = (12, 10, 11, 15, 15, 12, 14)
    lines = [TITLES["table-7"], "    " + "".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    for x in table_7_rows(r):
        cells = (x["tool"], _k(x["iops"]), _k(x["cycles_per_io"]), _k(x["baseline_iops"]), _k(x["baseline_cycles_per_io"]),
                 f"{x['iops_pct']:+.2f}", f"{x['cycles_pct']:+.1f}")
        lines.append("    " + "".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)


def table_8_rows(r: VicResult) -> list[dict[str, object]]:
    rows = []
    base = r.tpcc.get((vic_checks.USERS_OFF, False, 4))
    for (users, vic, cif), p in sorted(r.tpcc.items(), key=lambda kv: (kv[0][1], -kv[0][2], kv[0][0])):
        rows.append({
            "vic": f"cifT = {cif}" if vic else "No vIC", "users": users, "tpm": 60 * p.tps,
            "tpm_diff_pct": vic_checks.pct_change(p.tps, base.tps) if base else math.nan,
            "iops": p.iops, "intr_per_s": p.guest_irqs_per_s, "latency_us": p.latency_us,
            "reply_wait_us": p.reply_wait_us, "cycles_per_txn": p.cycles_per_txn, "seeds": p.seeds,
        })
    return rows


def table_8_text(r: VicResult) -> str:
    heads = ("", "users", "T (tpm)", "T diff", "IOPS", "Intr/sec", "latency", "cycles/txn")
    widths = (10, 7, 11, 10, 9, 10, 12, 10)
    lines = [TITLES["table-8"] + f" (seeds' means; T diff against No vIC at {vic_checks.USERS_OFF} users; No vIC "
             "pools the runs of both cifThreshold values, which it ignores)",
             "    " + "".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    for x in table_8_rows(r):
        cells = (x["vic"], str(x["users"]), f"{x['tpm']:,.0f}", _f(x["tpm_diff_pct"], "{:+.2f} %"), f"{x['iops']:,.0f}",
                 f"{x['intr_per_s']:,.0f}", f"{x['latency_us'] / 1e3:.2f} ms", f"{x['cycles_per_txn'] / 1e6:.3f}M")
        lines.append("    " + "".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)


def figures_3_4_rows(r: VicResult) -> list[dict[str, object]]:
    """Every epoch's R of the 90-user, cifThreshold 4 runs (seeds in turn)."""
    p = r.tpcc.get((vic_checks.USERS_ON, True, 4))
    return [{"epoch": i, "r": x} for i, x in enumerate(p.epoch_ratios)] if p else []


def figures_3_4_text(r: VicResult) -> str:
    rows = figures_3_4_rows(r)
    if not rows:
        return TITLES["figures-3-4"] + ": no runs"
    import collections

    counts = collections.Counter(_fraction(x["r"]) for x in rows)
    order = sorted(counts, key=lambda k: -int(k.split("/")[0]) / int(k.split("/")[1]))
    rs = sorted(x["r"] for x in rows)
    median = rs[len(rs) // 2]
    hist = "   ".join(f"{k}: {counts[k]}" for k in order)
    return (f"{TITLES['figures-3-4']}\n    {len(rows)} epochs; median R {median:.3f} ({_fraction(median)}), from "
            f"{rs[0]:.3f} to {rs[-1]:.3f}\n    histogram (nearest Table 1 step): {hist}")


def fit_rows(r: VicResult) -> list[dict[str, object]]:
    """Table 2's baseline rows, the fit's targets, against the simulation."""
    rows = []
    for o in OIOS:
        p, q = r.table.get((KB4, o, False)), TABLE_2[o]
        if p is None:
            continue
        rows.append({
            "oio": o, "iops": p.iops, "paper_iops": q.base_iops, "iops_err_pct": vic_checks.pct_change(p.iops, q.base_iops),
            "cycles_per_io": p.cycles_per_io, "paper_cycles_per_io": q.base_cycles_per_io,
            "cycles_err_pct": vic_checks.pct_change(p.cycles_per_io, q.base_cycles_per_io),
        })
    return rows


def fitted_note(r: VicResult) -> str:
    s = r.resolved.get("storage", {})
    rows = fit_rows(r)
    errs = [abs(x[k]) for x in rows for k in ("iops_err_pct", "cycles_err_pct")]
    rms = math.sqrt(sum(e * e for e in errs) / len(errs)) if errs else math.nan
    note = (
        "Fitted on Table 2's baseline rows (vIC off; four IOPS and four cycles per I/O) and Table 6's halted share "
        "without vIC (65.0 %, 8 KB at OIO 64): the array's service "
        f"time per command ({s.get('array_service_ns', '?')} ns) and overlapped latency "
        f"({s.get('array_latency_ns', '?')} ns), the VMkernel's cycles per completion "
        f"({s.get('vmk_complete_cycles', '?')}) and a scale on the guest's and the VMM's first estimates (0.3875), by "
        f"least squares of the relative errors on a grid (docs/calibration.md, tools/fit_vic.py). Table 2's rows here: "
        f"RMS error {rms:.1f} % (" + "; ".join(f"OIO {x['oio']} IOPS {x['iops_err_pct']:+.0f} %, cycles {x['cycles_err_pct']:+.0f} %"
                                      for x in rows) + "). Everything with vIC on, the other 8 KB numbers, the rest of "
        "Table 6 and Figure 5 are predictions. The TPC-C-like load's shape is assumed (scenarios/vic/tpcc.toml) and its computation per "
        "transaction set so that the median R is the paper's 1/3 (V19-V22 and Table 8 are predictions of that "
        "assumed load)."
    )
    changed = [k for k, v in FIT.items() if s.get(k.split(".", 1)[1], v) != v]
    if changed:
        note += " This run overrides " + ", ".join(changed) + "."
    return note


def table_2_rows(r: VicResult, block: int = KB4) -> list[dict[str, object]]:
    rows = []
    for o in OIOS:
        on, off = r.table.get((block, o, True)), r.table.get((block, o, False))
        if on is None or off is None:
            continue
        q = TABLE_2[o] if block == KB4 else None
        nan = math.nan
        rows.append({
            "oio": o, "r_hat": on.r_hat, "paper_r_hat": q.r_hat if q else nan,
            "iops": on.iops, "paper_iops": q.iops if q else nan,
            "cycles_per_io": on.cycles_per_io, "paper_cycles_per_io": q.cycles_per_io if q else nan,
            "guest_irqs_per_s": on.guest_irqs_per_s, "paper_guest_irqs_per_s": q.guest_irqs_per_s if q else nan,
            "baseline_iops": off.iops, "paper_baseline_iops": q.base_iops if q else nan,
            "baseline_cycles_per_io": off.cycles_per_io, "paper_baseline_cycles_per_io": q.base_cycles_per_io if q else nan,
            "baseline_guest_irqs_per_s": off.guest_irqs_per_s,
            "paper_baseline_guest_irqs_per_s": q.base_guest_irqs_per_s if q else nan,
            "mean_cif": on.mean_cif, "baseline_mean_cif": off.mean_cif, "seeds": on.seeds,
        })
    return rows


def table_3_rows(r: VicResult, block: int = KB4) -> list[dict[str, object]]:
    rows = []
    for o in OIOS:
        on, off = r.table.get((block, o, True)), r.table.get((block, o, False))
        if on is None or off is None:
            continue
        paper = TABLE_3[o] if block == KB4 else (math.nan,) * 3
        rows.append({
            "oio": o,
            "iops_pct": vic_checks.pct_change(on.iops, off.iops), "paper_iops_pct": paper[0],
            "cycles_pct": vic_checks.pct_change(on.cycles_per_io, off.cycles_per_io), "paper_cycles_pct": paper[1],
            "guest_irqs_pct": vic_checks.pct_change(on.guest_irqs_per_s, off.guest_irqs_per_s),
            "paper_guest_irqs_pct": paper[2],
        })
    return rows


def table_6_rows(r: VicResult) -> list[dict[str, object]]:
    on, off = r.table.get((KB8, 64, True)), r.table.get((KB8, 64, False))
    if on is None or off is None:
        return []
    sim_on, sim_off = vic_checks._profile(on), vic_checks._profile(off)
    return [
        {"entry": k, "with_vic": sim_on[k], "paper_with_vic": v[0], "without_vic": sim_off[k], "paper_without_vic": v[1]}
        for k, v in TABLE_6.items()
    ]


def figure_5_rows(r: VicResult) -> list[dict[str, object]]:
    f = r.figure_5
    ths = sorted({th for (_, _, th) in f})
    nan = math.nan

    def get(k, attr):
        return getattr(f[k], attr) if k in f else nan

    return [{
        "ipi_threshold_us": th,
        "iops_no_hyper_pi": get((True, False, th), "iops"),
        "iops_with_hyper_pi": get((True, True, th), "iops"),
        "hyper_pi_time_no_io": get((False, True, th), "hyper_pi_time"),
        "hyper_pi_time_with_io": get((True, True, th), "hyper_pi_time"),
    } for th in ths]


def figure_5_text(r: VicResult) -> str:
    lines = [TITLES["figure-5"], "    Hyper Pi's run time is relative to Hyper Pi alone (1.000); the paper gives the "
             "figure only, so nothing is compared",
             "    IPI threshold  IOPS no Hyper Pi  IOPS with Hyper Pi  Hyper Pi time no IO  Hyper Pi time with IO"]
    for x in figure_5_rows(r):
        lines.append(f"    {x['ipi_threshold_us']:>10} us  {_f(x['iops_no_hyper_pi'], '{:16.0f}')}  "
                     f"{_f(x['iops_with_hyper_pi'], '{:18.0f}')}  {_f(x['hyper_pi_time_no_io'], '{:19.3f}')}  "
                     f"{_f(x['hyper_pi_time_with_io'], '{:21.3f}')}")
    return "\n".join(lines)


def _k(x: float) -> str:
    return "-" if isinstance(x, float) and math.isnan(x) else f"{x / 1e3:.1f}K"


def _f(x: float, fmt: str) -> str:
    return "-" if isinstance(x, float) and math.isnan(x) else fmt.format(x)


def _fraction(x: float) -> str:
    """R as the paper writes it: the nearest k/(k+1) or 1/k."""
    if isinstance(x, float) and math.isnan(x):
        return "-"
    candidates = [(k / (k + 1), f"{k}/{k + 1}") for k in range(1, 5)] + [(1 / k, f"1/{k}") for k in range(1, 17)]
    return min(candidates, key=lambda c: abs(c[0] - x))[1]


def table_2_text(r: VicResult, block: int = KB4) -> str:
    paper = block == KB4
    key = "table-2" if paper else "table-4"
    heads = ("OIO", "R-hat", "IOPS", "cycles/IO", "int/s guest", "baseline IOPS", "cycles/IO", "int/s guest")
    widths = (5, 18, 17, 17, 17, 17, 17, 17)

    def cell(x: dict, a: str, b: str, fmt=_k) -> str:
        return fmt(x[a]) + (f" | {fmt(x[b])}" if paper else "")

    lines = [f"{TITLES[key]} (means over {r.seeds} seeds, {r.duration_s:g} s each)",
             "    " + "".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    for x in table_2_rows(r, block):
        r_hat = f"{x['r_hat']:.3f} {_fraction(x['r_hat'])}" + (f" | {_fraction(x['paper_r_hat'])}" if paper else "")
        cells = (str(x["oio"]), r_hat, cell(x, "iops", "paper_iops"), cell(x, "cycles_per_io", "paper_cycles_per_io"),
                 cell(x, "guest_irqs_per_s", "paper_guest_irqs_per_s"), cell(x, "baseline_iops", "paper_baseline_iops"),
                 cell(x, "baseline_cycles_per_io", "paper_baseline_cycles_per_io"),
                 cell(x, "baseline_guest_irqs_per_s", "paper_baseline_guest_irqs_per_s"))
        lines.append("    " + "".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)


def table_3_text(r: VicResult, block: int = KB4) -> str:
    paper = block == KB4
    heads, widths = ("OIO", "IOPS %diff", "CPU cost %diff", "int/s guest %diff"), (5, 20, 20, 20)

    def cell(x: dict, a: str, b: str) -> str:
        return _f(x[a], "{:+.1f}") + (f" | {_f(x[b], '{:+.1f}')}" if paper else "")

    lines = [TITLES["table-3" if paper else "table-5"], "    " + "".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    for x in table_3_rows(r, block):
        cells = (str(x["oio"]), cell(x, "iops_pct", "paper_iops_pct"), cell(x, "cycles_pct", "paper_cycles_pct"),
                 cell(x, "guest_irqs_pct", "paper_guest_irqs_pct"))
        lines.append("    " + "".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)


def table_6_text(r: VicResult) -> str:
    lines = [TITLES["table-6"], "    entry                      with vIC        without vIC"]
    for x in table_6_rows(r):
        lines.append(f"    {x['entry']:<25} {x['with_vic']:6.1f} | {x['paper_with_vic']:<5}  {x['without_vic']:6.1f} | "
                     f"{x['paper_without_vic']}")
    lines.append("    (TC64_IDENT is the guest's kernel time in ESX's profile; the model's number is all of the guest's "
                 "time on those cores, Iometer's included; VMK_VCPU_HALT without vIC is a target of the fit)")
    return "\n".join(lines)


def title(r: VicResult) -> str:
    return "irqlab: the vIC paper (Ahmad, Gulati & Mashtizadeh, USENIX ATC 2011), Tables 2-8 and Figures 3-5"


def intro(r: VicResult) -> str:
    cpu = r.resolved.get("cpu", {})
    vm = r.resolved.get("vm", {})
    return (
        f"Simulated with scenarios/vic/iometer.toml (a {vm.get('vcpus', '?')}-vCPU VM on cores at "
        f"{cpu.get('freq_ghz', '?')} GHz; its reads trap to the VMM, go through the VMkernel to a 4 Gb FC HBA and a "
        "cached array, and come back by the HBA's interrupt on another core, the VM's completion queue, an IPI or a "
        "wake-up, the VMM and the adapter's virtual interrupt), "
        f"{r.seeds} seeds per point from seed {r.seed}, {r.duration_s:g} s of simulated time per run after "
        f"{r.resolved.get('run', {}).get('warmup_s', '?')} s of warm-up (past vIC's first 200 ms epoch). Guest "
        "interrupts are the adapter's and the guest clock's (64 Hz); Windows counts more (see V12). Figure 5's "
        "Hyper Pi is two CPU-bound guest threads at idle priority (storage.background_threads). Table 8's TPC-C-like "
        "load is scenarios/vic/tpcc.toml: a 4-vCPU VM, users that compute and read, a disk array and checkpoints."
    )


#: The reproduction as the harness runs it (:mod:`irqlab.reproduce.harness`).
PAPER = Paper(
    name="vic",
    studies=STUDIES,
    scenario="scenarios/vic/iometer.toml",
    scenario_needs={"app.kind": "iometer"},
    # Looked up when called, so that a test can stand in for the runs.
    run=lambda *a, **k: run_vic(*a, **k),
    options=duration_option,
    seeds=True,
    checks=shape_checks,
    claims=vic_checks.CLAIMS,
    title=title,
    intro=intro,
    checks_title=CHECKS_TITLE,
    notes=(fitted_note,),
    tables=(
        Table("table-2", lambda r: table_2_rows(r, KB4), TITLES["table-2"], lambda r: table_2_text(r, KB4)),
        Table("table-3", lambda r: table_3_rows(r, KB4), TITLES["table-3"], lambda r: table_3_text(r, KB4)),
        Table("table-4", lambda r: table_2_rows(r, KB8), TITLES["table-4"], lambda r: table_2_text(r, KB8)),
        Table("table-5", lambda r: table_3_rows(r, KB8), TITLES["table-5"], lambda r: table_3_text(r, KB8)),
        Table("table-6", table_6_rows, TITLES["table-6"], table_6_text),
        Table("figure-5", figure_5_rows, TITLES["figure-5"], figure_5_text),
        Table("table-7", table_7_rows, TITLES["table-7"], table_7_text),
        Table("table-8", table_8_rows, TITLES["table-8"], table_8_text),
        # Plotted (Figures 3-4), not a table of the report.
        Table("figures-3-4", figures_3_4_rows, TITLES["figures-3-4"], figures_3_4_text, html=False),
        Table("fit", fit_rows),
    ),
    plots="irqlab.reproduce.vic_plots",
    plots_title="Tables 2 and 4 and Figure 5 as plots",
    html_table=_frame_html,
)
