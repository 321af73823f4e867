"""The IAPS paper's figures in its layout: Figure 2 as throughput, dropped
packets and packets per IPI against the connections, a line per scheme;
Figure 3 as the share of each of IAPS's decision cases."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab.reproduce.iaps import SCHEMES, IapsResult, figure_3_rows  # noqa: E402
from irqlab.reproduce.iaps_checks import NAMES, connections  # noqa: E402
from irqlab.files import write_whole  # noqa: E402

STYLE = {"rss": ("o", "tab:gray"), "rps": ("s", "tab:blue"), "rfs": ("^", "tab:orange"), "iaps": ("D", "tab:green")}
#: Line styles, so that schemes with equal values stay visible on top of each other.
LINES = {"rss": ":", "rps": "-", "rfs": "--", "iaps": "-"}
WIDTHS = {"rss": 3.0, "rps": 1.5, "rfs": 2.5, "iaps": 1.2}


def figure_2(r: IapsResult, out: Path) -> Path:
    """``out/figure-2.png``: (a) throughput, (b) drops, (c) packets per IPI."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), dpi=110)
    for s in SCHEMES:
        ns = connections(r.table, s)
        if not ns:
            continue
        marker, colour = STYLE[s]
        kw = dict(marker=marker, color=colour, label=NAMES[s], markersize=4, linestyle=LINES[s], linewidth=WIDTHS[s])
        axes[0].plot(ns, [r.table[(s, n)].gbps for n in ns], **kw)
        axes[1].plot(ns, [r.table[(s, n)].drops for n in ns], **kw)
        if s != "rss":
            axes[2].plot(ns, [r.table[(s, n)].packets_per_ipi for n in ns], **kw)
    axes[0].axhline(50, color="0.6", linestyle=":", linewidth=1)
    for ax, (label, title) in zip(axes, (
        ("Throughput (Gbit/s)", "(a) Throughput"),
        ("Dropped packets per run", "(b) Dropped packet count"),
        ("Packets per IPI", "(c) Packets per IPI"),
    )):
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8, 16, 32], ["1", "2", "4", "8", "16", "32"])
        ax.set_xlabel("Connections")
        ax.set_ylabel(label)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.suptitle("IAPS paper Figure 2 (simulated)")
    fig.tight_layout()
    path = out / "figure-2.png"
    write_whole(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return path


def figure_3(r: IapsResult, out: Path) -> Path:
    """``out/figure-3.png``: each decision case's share against the connections."""
    rows = figure_3_rows(r)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.0), dpi=110)
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
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("IAPS paper Figure 3 (simulated)")
    fig.tight_layout()
    path = out / "figure-3.png"
    write_whole(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return path


def all_figures(r: IapsResult, out: Path) -> list[Path]:
    return [figure_2(r, out), figure_3(r, out)]
