"""The vIC paper's Tables 2 and 4 as plots: IOPS, CPU cost per I/O and guest
interrupts per second against the outstanding I/Os, vIC off and on, with
the paper's Table 2 values as open markers (Table 4's are withheld)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab import plotstyle  # noqa: E402
from irqlab.reproduce.vic import VicResult, figure_5_rows, figures_3_4_rows  # noqa: E402
from irqlab.reproduce.vic_checks import KB4, KB8, OIOS, TABLE_2  # noqa: E402

METRICS = (
    ("iops", "IOPS", "iops", "base_iops"),
    ("cycles_per_io", "CPU cost (cycles per I/O)", "cycles_per_io", "base_cycles_per_io"),
    ("guest_irqs_per_s", "Guest interrupts per second", "guest_irqs_per_s", "base_guest_irqs_per_s"),
)


def table_figure(r: VicResult, out: Path, block: int) -> Path:
    """``out/table-2.png`` (4 KB) or ``out/table-4.png`` (8 KB)."""
    with plt.rc_context(plotstyle.RC):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        for ax, (attr, label, paper_on, paper_off) in zip(axes, METRICS):
            values = []
            for on, colour, name in ((False, "tab:gray", "vIC off"), (True, "tab:green", "vIC on")):
                xs = [o for o in OIOS if (block, o, on) in r.table]
                ys = [getattr(r.table[(block, o, on)], attr) for o in xs]
                values += ys
                ax.plot(xs, ys, color=colour, label=f"{name} (simulated)", **plotstyle.series_style(int(on)))
                if block == KB4:
                    paper = [getattr(TABLE_2[o], paper_on if on else paper_off) for o in OIOS]
                    values += paper
                    ax.plot(OIOS, paper, marker="s", color=colour, label=plotstyle.paper_label(name),
                            **plotstyle.PAPER_POINTS)
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(OIOS), [str(o) for o in OIOS])
            ax.minorticks_off()
            ax.set_xlabel("Outstanding I/Os (Iometer)")
            ax.set_ylabel(label)
            ax.set_ylim(*plotstyle.data_range(values))
            plotstyle.plain_ticks(ax)
        plotstyle.legend_below(fig, axes)
        name = "table-2" if block == KB4 else "table-4"
        size = "4 KB reads: simulated lines, the paper's Table 2 as open squares" if block == KB4 else \
            "8 KB reads, simulated (the paper's values are withheld)"
        fig.suptitle(f"vIC paper, Iometer {size}")
        return plotstyle.save(fig, out / f"{name}.png")


def figure_5(r: VicResult, out: Path) -> Path:
    """``out/figure-5.png``: IOPS as bars (alone, beside Hyper Pi) and Hyper
    Pi's relative run time as triangles (alone, beside the reads) against
    the IPI send threshold, as the paper draws it."""
    rows = figure_5_rows(r)
    with plt.rc_context(plotstyle.RC):
        fig, ax = plt.subplots(figsize=(8.5, 4.5))
        xs = list(range(len(rows)))
        w = 0.38
        ax.bar([x - w / 2 for x in xs], [row["iops_no_hyper_pi"] for row in rows], w, color="tab:gray",
               label="IOPS no Hyper Pi")
        ax.bar([x + w / 2 for x in xs], [row["iops_with_hyper_pi"] for row in rows], w, color="tab:blue",
               label="IOPS with Hyper Pi")
        ax.set_xticks(xs, [str(row["ipi_threshold_us"]) for row in rows])
        ax.set_xlabel("IPI send threshold (µs)")
        ax.set_ylabel("IOPS")
        ax.grid(False, axis="x")
        plotstyle.plain_ticks(ax)
        ax2 = ax.twinx()
        ax2.plot(xs, [row["hyper_pi_time_no_io"] for row in rows], "^", color="tab:cyan", markersize=8,
                 label="Hyper Pi no IO (run time)")
        ax2.plot(xs, [row["hyper_pi_time_with_io"] for row in rows], "v", color="tab:red", markersize=8,
                 label="Hyper Pi with IO (run time)")
        ax2.set_ylabel("Hyper Pi run time (relative to alone)")
        ax2.set_ylim(bottom=0)
        ax2.grid(False)
        plotstyle.legend_below(fig, [ax, ax2])
        fig.suptitle("vIC paper Figure 5 (simulated): the IPI send threshold")
        return plotstyle.save(fig, out / "figure-5.png")


def figures_3_4(r: VicResult, out: Path) -> Path:
    """``out/figures-3-4.png``: the epochs' R as a histogram on a log
    axis (Figure 3) and over time (Figure 4)."""
    rs = [row["r"] for row in figures_3_4_rows(r)]
    with plt.rc_context(plotstyle.RC):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.0))
        bins = sorted({1 / k for k in range(1, 65)} | {k / (k + 1) for k in range(1, 5)})
        edges = [b * 0.97 for b in bins] + [1.03]
        axes[0].hist(rs, bins=edges, color="tab:green")
        plotstyle.log_axis(axes[0], "x")
        axes[0].set_xlabel("R, the delivery ratio (log scale)")
        axes[0].set_ylabel("Epochs")
        axes[0].set_title("(3) Histogram of the chosen R")
        axes[1].plot([i * 0.2 for i in range(len(rs))], rs, color="tab:green", linewidth=1)
        plotstyle.log_axis(axes[1], "y")
        axes[1].set_xlabel("Time (s; the seeds' runs one after another)")
        axes[1].set_ylabel("R, the delivery ratio (log scale)")
        axes[1].set_title("(4) R over time")
        fig.suptitle("vIC paper Figures 3-4 (simulated): TPC-C-like load, 90 users, cifThreshold 4")
        return plotstyle.save(fig, out / "figures-3-4.png")


def all_figures(r: VicResult, out: Path) -> list[Path]:
    figures = [table_figure(r, out, KB4), table_figure(r, out, KB8)]
    if r.figure_5:
        figures.append(figure_5(r, out))
    if figures_3_4_rows(r):
        figures.append(figures_3_4(r, out))
    return figures
