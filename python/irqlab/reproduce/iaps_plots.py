"""The IAPS paper's figures in its layout: Figure 2 as throughput, dropped
packets and packets per IPI against the connections, a line per scheme;
Figure 3 as the share of each of IAPS's decision cases."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab.reproduce.iaps import SCHEMES, IapsResult, figure_3_rows  # noqa: E402
from irqlab import plotstyle  # noqa: E402
from irqlab.reproduce.iaps_checks import (  # noqa: E402
    IAPS, IAPS_HOLDS_UP_TO, LINE_GBPS, NAMES, RFS, RFS_BELOW_AT, RPS, RPS_BELOW_AT, connections,
)

STYLE = {"rss": ("o", "tab:gray"), "rps": ("s", "tab:blue"), "rfs": ("^", "tab:orange"), "iaps": ("D", "tab:green")}
#: Line styles, so that schemes with equal values stay visible on top of each other.
LINES = {"rss": ":", "rps": "-", "rfs": "--", "iaps": "-"}
WIDTHS = {"rss": 3.0, "rps": 1.5, "rfs": 2.5, "iaps": 1.2}


def figure_2(r: IapsResult, out: Path) -> Path:
    """``out/figure-2.png``: (a) throughput, (b) drops, (c) packets per IPI.

    Schemes with equal values would hide each other: each is drawn with its
    own dash, width and marker, a little apart from the others along x
    (:func:`~irqlab.plotstyle.dodge`, 3 % per scheme on the log axis, said
    below the panels)."""
    with plt.rc_context(plotstyle.RC):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
        shown = [s for s in SCHEMES if connections(r.table, s)]
        gbps = []
        for k, s in enumerate(shown):
            ns = connections(r.table, s)
            xs = plotstyle.dodge(ns, k, len(shown), log=True, width=0.03)
            marker, colour = STYLE[s]
            kw = dict(marker=marker, color=colour, label=NAMES[s], markersize=6, linestyle=LINES[s],
                      linewidth=WIDTHS[s], markerfacecolor="none" if k % 2 else colour)
            ys = [r.table[(s, n)].gbps for n in ns]
            gbps += ys
            axes[0].plot(xs, ys, **kw)
            axes[1].plot(xs, [r.table[(s, n)].drops for n in ns], **kw)
            if s != "rss":
                axes[2].plot(xs, [r.table[(s, n)].packets_per_ipi for n in ns], **kw)
        axes[0].axhline(LINE_GBPS, color="0.6", linestyle=":", linewidth=1)
        _paper_bounds(axes[0])
        for ax, (label, title) in zip(axes, (
            ("Throughput (Gbit/s)", "(a) Throughput"),
            ("Dropped packets per run", "(b) Dropped packet count"),
            ("Packets per IPI", "(c) Packets per IPI"),
        )):
            ax.set_xscale("log", base=2)
            ax.set_xticks([1, 2, 4, 8, 16, 32], ["1", "2", "4", "8", "16", "32"])
            ax.minorticks_off()
            ax.set_xlabel("Connections")
            ax.set_ylabel(label)
            ax.set_title(title)
            ax.set_ylim(bottom=0)
            plotstyle.plain_ticks(ax)
        axes[0].set_ylim(*plotstyle.data_range(gbps + [50.0]))
        legend = plotstyle.legend_below(fig, axes)
        if legend is not None:
            legend.set_title("Each scheme drawn 3 % apart along x so that equal values stay visible")
        fig.suptitle("IAPS paper Figure 2 (simulated)")
        return plotstyle.save(fig, out / "figure-2.png")


def _paper_bounds(ax) -> None:
    """What §IV-B says of panel (a), drawn at 50 Gbit/s in each scheme's
    colour and marked as the paper's (iaps_checks.py cites the sentence):
    IAPS above 50 Gbit/s up to 16 connections (a triangle pointing up), RPS
    below from 8 and RFS from 16 (pointing down)."""
    for scheme, n, marker, words in ((IAPS, IAPS_HOLDS_UP_TO, "^", "above"), (RPS, RPS_BELOW_AT, "v", "below"),
                                     (RFS, RFS_BELOW_AT, "v", "below")):
        ax.plot([n], [LINE_GBPS], marker=marker, color=STYLE[scheme][1], markersize=11,
                label=plotstyle.paper_label(f"{NAMES[scheme]} {words} 50 Gbit/s at {n}"), **{
                    k: v for k, v in plotstyle.PAPER_POINTS.items() if k != "markersize"})


def figure_3(r: IapsResult, out: Path) -> Path:
    """``out/figure-3.png``: each decision case's share against the connections."""
    rows = figure_3_rows(r)
    with plt.rc_context(plotstyle.RC):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.0))
        ns = [row["connections"] for row in rows]
        for ax, (key, title) in zip(axes, (
            ("previous_core_busy_pct", "(a) Previous core busy"),
            ("new_busy_core_pct", "(b) New busy core"),
            ("no_busy_core_pct", "(c) No busy core"),
        )):
            ax.bar([str(n) for n in ns], [row[key] for row in rows], color="tab:green")
            ax.set_xlabel("Connections")
            ax.set_ylabel("Decisions (%)")
            ax.set_ylim(0, 100)
            ax.set_title(title)
            ax.grid(False, axis="x")
        fig.suptitle("IAPS paper Figure 3 (simulated)")
        return plotstyle.save(fig, out / "figure-3.png")


def all_figures(r: IapsResult, out: Path) -> list[Path]:
    return [figure_2(r, out), figure_3(r, out)]
