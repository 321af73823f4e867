"""The ITR paper's figures in its layout: Figures 3, 5 and 8 as latency,
CPU load and interrupt rate against the offered load, a line per regime
(overloaded latencies left out, as the paper does, and named below the panels);
Figure 7 as the load-latency products of the two ITRs and their
difference."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab.reproduce.itr import (  # noqa: E402
    FIGURE_TITLES, FIGURES, LABELS, ItrResult, figure_7_rows, is_overloaded, with_no_itr,
)
from irqlab import plotstyle  # noqa: E402
from irqlab.reproduce.itr_checks import (  # noqa: E402
    IXGBE, LINEAR, OFF, PAPER_IRQ_PEAK_PPS, PAPER_OVERLOAD_PPS, PAPER_PLATEAU_US, busy, mean_us,
)

STYLE = {OFF: ("o", "tab:blue"), IXGBE: ("s", "tab:red"), LINEAR: ("^", "tab:green")}


def figure(r: ItrResult, name: str, out: Path) -> Path:
    """``out/<name>.png``: (a) mean latency, (b) CPU load, (c) IRQ rate
    against the offered load, a line per regime of figure ``name``."""
    runs = r.runs(name)
    judged = with_no_itr(r, name)
    with plt.rc_context(plotstyle.RC):
        return _figure(r, name, out, runs, judged)


def _figure(r: ItrResult, name: str, out: Path, runs, judged) -> Path:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    notes = []
    for p in FIGURES[name]:
        loads = sorted(q for (pp, q) in runs if pp == p)
        if not loads:
            continue
        marker, colour = STYLE.get(p, ("x", None))
        pre = [q for q in loads if not is_overloaded(judged, p, q)]
        over = [q for q in loads if q not in pre]
        kw = dict(marker=marker, color=colour, label=LABELS.get(p, p), markersize=5)
        axes[0].plot([q / 1e6 for q in pre], [mean_us(runs[(p, q)]) for q in pre], **kw)
        axes[1].plot([q / 1e6 for q in loads], [busy(runs[(p, q)]) for q in loads], **kw)
        axes[2].plot([q / 1e6 for q in loads], [float(runs[(p, q)].irqs_per_s) / 1e3 for q in loads], **kw)
        dropping = [mean_us(runs[(p, q)]) for q in over if int(runs[(p, q)].get("drops") or 0) > 0]
        if dropping and not any(math.isnan(v) for v in dropping):
            notes.append(f"{LABELS.get(p, p)}: {min(dropping):,.0f}-{max(dropping):,.0f} µs")
    axes[0].set_ylabel("Mean latency (µs)")
    axes[0].set_title("(a) Latency, before overload")
    axes[1].set_ylabel("CPU load (%)")
    axes[1].set_ylim(0, 105)
    axes[1].set_title("(b) CPU load")
    axes[2].set_ylabel("Interrupts (k/s)")
    axes[2].set_title("(c) IRQ rate")
    _paper_values(name, axes)
    for ax in axes:
        ax.set_xlabel("Offered load (Mpps)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
    legend = plotstyle.legend_below(fig, axes)
    if notes and legend is not None:
        legend.set_title("Latency under overload (drops; omitted from (a) as in the paper): " + "; ".join(notes))
    fig.suptitle(f"{FIGURE_TITLES[name]} - simulated (irqlab)")
    return plotstyle.save(fig, out / f"{name}.png")


#: How the values the paper's text states are drawn: grey, dotted.
PAPER_LINE = {"color": "0.35", "linestyle": ":", "linewidth": 1.4}


def _paper_values(name: str, axes) -> None:
    """The values the paper's text states about the figure, as lines marked
    as the paper's (itr_checks.py cites each): Figure 3's overload at 2.1
    Mpps and its interrupt peak near 0.5 Mpps; Figure 5's latency plateau
    near 60 µs."""
    if name == "figure-3":
        for ax in axes:
            ax.axvline(PAPER_OVERLOAD_PPS / 1e6, label=plotstyle.paper_label("overload at 2.1 Mpps"), **PAPER_LINE)
        axes[2].axvline(PAPER_IRQ_PEAK_PPS / 1e6, label=plotstyle.paper_label("IRQ rate peaks near 0.5 Mpps"),
                        color="0.35", linestyle="--", linewidth=1.2)
    elif name == "figure-5":
        axes[0].axhline(PAPER_PLATEAU_US, label=plotstyle.paper_label("latency plateau near 60 µs"), **PAPER_LINE)


def figure_7(r: ItrResult, out: Path) -> Path:
    """``out/figure-7.png``: P_ll of ixgbe's and the linear ITR and their
    difference against the offered load (pre-overload loads)."""
    rows = [row for row in figure_7_rows(r) if not row["overloaded"]]
    xs = [int(row["offered_pps"]) / 1e6 for row in rows]
    with plt.rc_context(plotstyle.RC):
        fig, ax = plt.subplots(figsize=(7, 4.4))
        return _figure_7(fig, ax, rows, xs, out)


def _figure_7(fig, ax, rows, xs, out: Path) -> Path:
    ax.plot(xs, [float(row["pll_ixgbe"]) / 1e3 for row in rows], marker="s", color="tab:red", label="ixgbe default ITR")
    ax.plot(xs, [float(row["pll_linear"]) / 1e3 for row in rows], marker="^", color="tab:green", label="linear ITR")
    ax.plot(xs, [float(row["difference"]) / 1e3 for row in rows], marker=".", linestyle="--", color="0.3",
            label="difference (ixgbe - linear)")
    ax.axhline(0, color="0.6", linewidth=0.8)
    ax.set_xlabel("Offered load (Mpps)")
    ax.set_ylabel("Load-latency product P_ll (10³ cycles · µs)")
    ax.set_xlim(left=0)
    plotstyle.legend_outside(ax)
    ax.set_title(f"{FIGURE_TITLES['figure-7']} - simulated (irqlab)")
    return plotstyle.save(fig, out / "figure-7.png")


def all_figures(r: ItrResult, out: Path) -> list[Path]:
    """Figures 3, 5, 8 and 7, in that order."""
    return [figure(r, n, out) for n in ("figure-3", "figure-5", "figure-8")] + [figure_7(r, out)]
