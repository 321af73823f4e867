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
from irqlab.reproduce.sriov_checks import NAMES, PEAK_RATE, counts  # noqa: E402
from irqlab.files import write_whole  # noqa: E402

STYLE = {"ixgbe": ("o", "tab:gray", "-"), "golden-section": ("D", "tab:green", "--")}


def figure_1(r: SriovResult, out: Path) -> Path:
    """``out/figure-1.png``: throughput and interrupts against the static rate."""
    rates = sorted(r.rates)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), dpi=110)
    axes[0].plot(rates, [r.rates[x].gbps for x in rates], marker="o", color="tab:blue")
    axes[0].set_ylabel("Throughput (Gbit/s)")
    axes[1].plot(rates, [r.rates[x].irqs_per_s for x in rates], marker="s", color="tab:orange")
    axes[1].set_ylabel("Interrupts per second, all VFs")
    for ax in axes:
        ax.axvline(PEAK_RATE, color="0.6", linestyle=":", linewidth=1, label="48,000/s (the paper's peak)")
        ax.set_xscale("log")
        ax.set_xlabel("Interrupt throttle rate (interrupts/s per VF)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("SR-IOV paper Figure I (simulated, 3 VMs)")
    fig.tight_layout()
    path = out / "figure-1.png"
    write_whole(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return path


def figure_2(r: SriovResult, out: Path) -> Path:
    """``out/figure-2.png``: throughput against the VM count."""
    fig, ax = plt.subplots(figsize=(6.5, 4.0), dpi=110)
    for p in POLICIES:
        ns = counts(r.vms, p)
        marker, colour, line = STYLE[p]
        ax.plot(ns, [r.vms[(p, n)].gbps for n in ns], marker=marker, color=colour, linestyle=line, label=NAMES[p])
    ax.set_xlabel("VMs")
    ax.set_ylabel("Throughput (Gbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("SR-IOV paper Figure II (simulated)")
    fig.tight_layout()
    path = out / "figure-2.png"
    write_whole(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return path


def figures_3_4(r: SriovResult, out: Path) -> Path:
    """``out/figures-3-4.png``: (III) mean and (IV) median host CPU use."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), dpi=110)
    for ax, attr, title in ((axes[0], "cpus_mean", "(III) Mean"), (axes[1], "cpus_median", "(IV) Median")):
        for p in POLICIES:
            ns = counts(r.vms, p)
            marker, colour, line = STYLE[p]
            ax.plot(ns, [getattr(r.vms[(p, n)], attr) for n in ns], marker=marker, color=colour, linestyle=line,
                    label=NAMES[p])
        ax.set_xlabel("VMs")
        ax.set_ylabel("Host CPUs busy")
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("SR-IOV paper Figures III-IV (simulated): CPU use on the server")
    fig.tight_layout()
    path = out / "figures-3-4.png"
    write_whole(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return path


def all_figures(r: SriovResult, out: Path) -> list[Path]:
    return [figure_1(r, out), figure_2(r, out), figures_3_4(r, out)]
