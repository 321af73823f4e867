"""The cover letter's results beside the simulation: the twelve cases' QPS
relative to base, and the open-loop CPU against the offered load."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from irqlab.reproduce import cover_letter_checks as C  # noqa: E402
from irqlab import plotstyle  # noqa: E402
from irqlab.reproduce.cover_letter import CoverLetterResult  # noqa: E402

COLOURS = {"base": "tab:gray", "defer20": "tab:orange", "defer200": "tab:brown", "napibusy": "tab:purple",
           "fullbusy": "tab:red", "suspend20": "tab:green"}


def closed_ratios(r: CoverLetterResult, out: Path) -> Path:
    """``out/closed-ratios.png``: each case's QPS over base's, letter and simulation."""
    with plt.rc_context(plotstyle.RC):
        return _closed_ratios(r, out)


def _closed_ratios(r: CoverLetterResult, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.2))
    xs = range(len(C.CASES))
    ax.bar([x - 0.2 for x in xs], [C.letter_ratio(n) for n in C.CASES], 0.4, color="0.65",
           label="cover letter v7 (paper)")
    ax.bar([x + 0.2 for x in xs], [C.ratio(r.cases, n) for n in C.CASES], 0.4, color="tab:blue",
           label="irqlab, EPYC 7662 description (prediction)")
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    ax.set_xticks(list(xs), C.CASES, rotation=30, ha="right")
    ax.set_ylabel("closed-loop QPS / base")
    ax.set_ylim(0.6, 1.3)
    ax.grid(False, axis="x")
    plotstyle.legend_outside(ax)
    ax.set_title("Cover letter v7: throughput relative to base, per case")
    return plotstyle.save(fig, out / "closed-ratios.png")


def open_cpu(r: CoverLetterResult, out: Path) -> Path:
    """``out/open-cpu.png``: CPU against offered load, the letter's points open."""
    with plt.rc_context(plotstyle.RC):
        return _open_cpu(r, out)


def _open_cpu(r: CoverLetterResult, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    loads = [q / 1000 for q in C.OPEN_QPS]
    for n, letter in C.LETTER_OPEN_CPU.items():
        colour = COLOURS[n]
        runs = r.cases.get(n, C.Case()).open
        ax.plot(loads, [runs.get(q, (float("nan"),))[0] for q in C.OPEN_QPS], marker="o", color=colour, label=n)
        ax.plot(loads, letter, marker="s", color=colour, label=plotstyle.paper_label(n), **plotstyle.PAPER_POINTS)
    ax.set_xlabel("Offered load (kQPS)")
    ax.set_ylabel("Server CPU busy (%)")
    ax.set_ylim(0, 105)
    plotstyle.legend_outside(ax, title="simulated: line; letter: open squares")
    ax.set_title("Cover letter v7: open-loop CPU")
    return plotstyle.save(fig, out / "open-cpu.png")


def all_figures(r: CoverLetterResult, out: Path) -> list[Path]:
    return [closed_ratios(r, out), open_cpu(r, out)]
