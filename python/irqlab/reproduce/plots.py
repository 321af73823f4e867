"""Figures in the thesis's layout (Figure 4.1 a–c: p95, p99 and CPU
utilisation against throughput, one line per profile; Figures 4.4 and 4.5
likewise for the VM setups)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab import plotstyle  # noqa: E402
from irqlab.reproduce.thesis import PROFILES, ThesisResult, host_busy, latency  # noqa: E402

LABELS = {
    "no-coalescing": "No Coalescing",
    "adaptive-coalescing": "Adaptive Coalescing",
    "irq-suspend": "IRQ Suspend",
    "busy-wait": "Busy Wait",
    "irq-batching": "IRQ Batching",
    "kernel-polling": "Kernel Polling",
}
MARKERS = {
    "no-coalescing": "o",
    "adaptive-coalescing": "s",
    "irq-suspend": "^",
    "busy-wait": "D",
    "irq-batching": "v",
    "kernel-polling": "P",
}


def all_figures(r: ThesisResult, out: Path) -> list[Path]:
    """Figure 4.1, Table 4.1 as a chart, then each VM setup's figure."""
    return figure_4_1(r, out) + [table_4_1_chart(r, out)] + vm_figures(r, out)


def figure_4_1(r: ThesisResult, out: Path) -> list[Path]:
    """Write figure-4.1a-p95.png, figure-4.1b-p99.png, figure-4.1c-cpu.png."""
    return _figure(r.open, PROFILES, out, "figure-4.1", "CPU utilization (%)", lambda s: 100.0 - s.cpu_pct.idle,
                   "Memcached 8 cores, simulated (irqlab)")


def vm_figures(r: ThesisResult, out: Path) -> list[Path]:
    """Each VM setup's figure in Figure 4.1's layout (figure-4.4a-p95.png
    …), CPU being the host's busy share of the vCPU cores."""
    written: list[Path] = []
    for vm in r.vm.values():
        written += _figure(
            vm.open, vm.setup.profiles, out, vm.setup.figure_study, "Host CPU busy, vCPU cores (%)", host_busy,
            f"Memcached in a KVM guest ({vm.setup.label}), 8 vCPUs, simulated (irqlab)",
        )
    return written


def _figure(open_: dict, profiles: tuple[str, ...], out: Path, stem: str, cpu_label: str, cpu, suptitle: str) -> list[Path]:
    panels = [
        (f"{stem}a-p95.png", "(a) 95th Percentile Latency", "p95 latency (µs)", lambda s: latency(s, "p95")),
        (f"{stem}b-p99.png", "(b) 99th Percentile Latency", "p99 latency (µs)", lambda s: latency(s, "p99")),
        (f"{stem}c-cpu.png", "(c) CPU Utilization", cpu_label, cpu),
    ]
    loads = sorted({q for (_, q) in open_})
    written = []
    for name, title, ylabel, value in panels:
        with plt.rc_context(plotstyle.RC):
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            for p in profiles:
                runs = [open_[(p, q)] for q in loads if (p, q) in open_]
                xs = [s.throughput_qps / 1e3 for s in runs]
                ys = [value(s) for s in runs]
                ax.plot(xs, ys, marker=MARKERS.get(p, "x"), label=LABELS.get(p, p))
            ax.set_xlabel("Throughput (K QPS)")
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            if "latency" in ylabel:
                plotstyle.log_axis(ax)
            else:
                ax.set_ylim(0, 105)
            ax.grid(True, which="major", alpha=0.3)
            plotstyle.legend_outside(ax)
            fig.suptitle(suptitle, fontsize=9)
            written.append(plotstyle.save(fig, out / name))
    return written


def table_4_1_chart(r: ThesisResult, out: Path) -> Path:
    """Throughput and CPU breakdown per profile, simulated beside the paper."""
    from irqlab.reproduce.thesis import TABLE_4_1

    with plt.rc_context(plotstyle.RC):
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
        xs = range(len(PROFILES))
        sim = [r.closed[p].throughput_qps / 1e3 for p in PROFILES]
        paper = [TABLE_4_1[p]["qps"] / 1e3 for p in PROFILES]
        a.bar([x - 0.2 for x in xs], paper, width=0.4, color="0.65", label="thesis Table 4.1 (paper)")
        a.bar([x + 0.2 for x in xs], sim, width=0.4, color="tab:blue", label="irqlab (simulated)")
        a.set_xticks(list(xs), [LABELS[p] for p in PROFILES], rotation=20, ha="right")
        a.set_ylabel("Throughput (K QPS)")
        a.set_title("Closed-loop maximum throughput")
        parts = ("user", "system", "softirq")
        for i, p in enumerate(PROFILES):
            c = r.closed[p].cpu_pct
            simv = {"user": c.user, "system": c.system, "softirq": c.softirq + c.irq}
            bottom_s = bottom_p = 0.0
            for k, colour in zip(parts, ("tab:blue", "tab:orange", "tab:red")):
                b.bar(i - 0.2, TABLE_4_1[p][k], 0.4, bottom=bottom_p, color=colour, alpha=0.45,
                      label=f"{k} (paper)" if i == 0 else None)
                b.bar(i + 0.2, simv[k], 0.4, bottom=bottom_s, color=colour, label=f"{k} (simulated)" if i == 0 else None)
                bottom_p += TABLE_4_1[p][k]
                bottom_s += simv[k]
        b.set_xticks(list(xs), [LABELS[p] for p in PROFILES], rotation=20, ha="right")
        b.set_ylabel("CPU (%)")
        b.set_ylim(0, 105)
        b.set_title("CPU breakdown (left bar: thesis, right bar: irqlab)")
        for ax in (a, b):
            ax.grid(False, axis="x")
        plotstyle.legend_below(fig, [a, b], ncol=4)
        return plotstyle.save(fig, out / "table-4.1.png")
