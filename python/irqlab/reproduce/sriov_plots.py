"""The SR-IOV paper's figures in its layout: Figure I as throughput against
the static interrupt throttle rate; Figure II as throughput against the VM
count, default against the tuner; Figures III and IV as the host's CPU use
(mean and median) against the VM count."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab.reproduce.sriov import POLICIES, SriovResult  # noqa: E402
from irqlab import plotstyle  # noqa: E402
from irqlab.reproduce.sriov import figure_2_rows  # noqa: E402
from irqlab.reproduce.sriov_checks import (  # noqa: E402
    NAMES, PAPER_GAIN_MAX_PCT, PAPER_GAIN_MIN_PCT, PEAK_RATE, counts,
)

# The two policies' lines often coincide (the same throughput at a VM
# count): the default ITR is drawn solid with small filled markers, the
# tuner dashed with large open ones, so both stay visible.
STYLE = {
    "ixgbe": {"marker": "o", "color": "tab:gray", "linestyle": "-", "markersize": 4, "zorder": 3},
    "golden-section": {"marker": "D", "color": "tab:green", "linestyle": "--", "markersize": 9,
                       "markerfacecolor": "none", "markeredgewidth": 1.5, "zorder": 2},
}


def figure_1(r: SriovResult, out: Path) -> Path:
    """``out/figure-1.png``: throughput and interrupts against the static rate."""
    rates = sorted(r.rates)
    with plt.rc_context(plotstyle.RC):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.0))
        axes[0].plot(rates, [r.rates[x].gbps for x in rates], marker="o", color="tab:blue", label="throughput")
        axes[0].set_ylabel("Throughput (Gbit/s)")
        axes[1].plot(rates, [r.rates[x].irqs_per_s for x in rates], marker="s", color="tab:orange",
                     label="interrupts")
        axes[1].set_ylabel("Interrupts per second, all VFs")
        for ax in axes:
            ax.axvline(PEAK_RATE, color="0.6", linestyle=":", linewidth=1, label="48,000/s (the paper's peak)")
            plotstyle.log_axis(ax, "x")
            ax.set_xlabel("Interrupt throttle rate (interrupts/s per VF)")
            ax.set_ylim(bottom=0)
            plotstyle.plain_ticks(ax)
        plotstyle.legend_below(fig, axes)
        fig.suptitle("SR-IOV paper Figure I (simulated, 3 VMs)")
        return plotstyle.save(fig, out / "figure-1.png")


def figure_2(r: SriovResult, out: Path) -> Path:
    """``out/figure-2.png``: throughput against the VM count, and the
    tuner's gain beside the range the paper states (§V-B: "at least 7.56%
    and at most 62.97%")."""
    with plt.rc_context(plotstyle.RC):
        fig, (ax, gain) = plt.subplots(1, 2, figsize=(11, 4.0))
        values = _per_vm_count(ax, r, "gbps", "Throughput (Gbit/s)")
        ax.set_ylim(*plotstyle.data_range(values))
        ax.set_title("Throughput")
        rows = [row for row in figure_2_rows(r) if row["gain_pct"] == row["gain_pct"]]
        gain.axhspan(PAPER_GAIN_MIN_PCT, PAPER_GAIN_MAX_PCT, color="0.85",
                     label=plotstyle.paper_label("gains from 7.56 % to 62.97 %"))
        gain.plot([row["vms"] for row in rows], [row["gain_pct"] for row in rows], label="tuner's gain (simulated)",
                  **STYLE["golden-section"])
        gain.axhline(0, color="0.5", linewidth=0.8)
        gain.set_xlabel("VMs")
        gain.set_ylabel("Tuner's throughput gain (%)")
        gain.set_title("The tuner against the default")
        plotstyle.legend_below(fig, [ax, gain], ncol=3)
        fig.suptitle("SR-IOV paper Figure II (simulated)")
        return plotstyle.save(fig, out / "figure-2.png")


def _per_vm_count(ax, r: SriovResult, attr: str, ylabel: str) -> list[float]:
    """A line per policy of ``attr`` against the VM count; the values drawn."""
    values: list[float] = []
    for p in POLICIES:
        ns = counts(r.vms, p)
        ys = [getattr(r.vms[(p, n)], attr) for n in ns]
        values += ys
        ax.plot(ns, ys, label=NAMES[p], **STYLE[p])
    ax.set_xlabel("VMs")
    ax.set_ylabel(ylabel)
    return values


def figures_3_4(r: SriovResult, out: Path) -> Path:
    """``out/figures-3-4.png``: (III) mean and (IV) median host CPU use."""
    with plt.rc_context(plotstyle.RC):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.0))
        for ax, attr, title in ((axes[0], "cpus_mean", "(III) Mean"), (axes[1], "cpus_median", "(IV) Median")):
            _per_vm_count(ax, r, attr, "Host CPUs busy")
            ax.set_ylim(bottom=0)
            ax.set_title(title)
        plotstyle.legend_below(fig, axes)
        fig.suptitle("SR-IOV paper Figures III-IV (simulated): CPU use on the server")
        return plotstyle.save(fig, out / "figures-3-4.png")


def all_figures(r: SriovResult, out: Path) -> list[Path]:
    return [figure_1(r, out), figure_2(r, out), figures_3_4(r, out)]
