"""The cover letter's results beside the simulation: the twelve cases' QPS
relative to base, and the open-loop CPU against the offered load."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab.reproduce import cover_letter_checks as C  # noqa: E402
from irqlab.reproduce.cover_letter import CoverLetterResult  # noqa: E402
from irqlab.files import write_whole  # noqa: E402

COLOURS = {"base": "tab:gray", "defer20": "tab:orange", "defer200": "tab:brown", "napibusy": "tab:purple",
           "fullbusy": "tab:red", "suspend20": "tab:green"}


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    write_whole(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return path


def closed_ratios(r: CoverLetterResult, out: Path) -> Path:
    """``out/closed-ratios.png``: each case's QPS over base's, letter and simulation."""
    fig, ax = plt.subplots(figsize=(10, 4.2), dpi=110)
    xs = range(len(C.CASES))
    ax.bar([x - 0.2 for x in xs], [C.letter_ratio(n) for n in C.CASES], 0.4, color="0.65", label="cover letter (v7)")
    ax.bar([x + 0.2 for x in xs], [C.ratio(r.cases, n) for n in C.CASES], 0.4, color="tab:blue",
           label="irqlab, EPYC 7662 description (prediction)")
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    ax.set_xticks(list(xs), C.CASES, rotation=30, ha="right")
    ax.set_ylabel("closed-loop QPS / base")
    ax.set_ylim(0.6, 1.3)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("Cover letter v7: throughput relative to base, per case")
    return _save(fig, out / "closed-ratios.png")


def open_cpu(r: CoverLetterResult, out: Path) -> Path:
    """``out/open-cpu.png``: CPU against offered load, the letter dashed."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    loads = [q / 1000 for q in C.OPEN_QPS]
    for n, letter in C.LETTER_OPEN_CPU.items():
        colour = COLOURS[n]
        runs = r.cases.get(n, C.Case()).open
        ax.plot(loads, [runs.get(q, (float("nan"),))[0] for q in C.OPEN_QPS], marker="o", color=colour, label=n)
        ax.plot(loads, letter, linestyle="--", marker="x", color=colour, alpha=0.7)
    ax.set_xlabel("offered load (kQPS)")
    ax.set_ylabel("server CPU busy (%)")
    ax.set_ylim(0, 105)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, title="simulated (solid); letter dashed", title_fontsize=8)
    ax.set_title("Cover letter v7: open-loop CPU")
    return _save(fig, out / "open-cpu.png")


def all_figures(r: CoverLetterResult, out: Path) -> list[Path]:
    return [closed_ratios(r, out), open_cpu(r, out)]
