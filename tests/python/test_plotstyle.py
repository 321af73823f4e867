"""The plot style every figure shares (irqlab.plotstyle): readable log axes,
legends off the data, y ranges that show the data, and the check that says
when a figure breaks these."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from irqlab import plotstyle  # noqa: E402


def _labels(ax, which: str = "y") -> list[str]:  # type: ignore[no-untyped-def]
    ax.figure.canvas.draw()
    axis = ax.yaxis if which == "y" else ax.xaxis
    lo, hi = sorted(ax.get_ylim() if which == "y" else ax.get_xlim())
    return [t.get_text() for t, v in zip(axis.get_ticklabels(), axis.get_ticklocs()) if t.get_text() and lo <= v <= hi]


@pytest.mark.parametrize("lo, hi, least", [(60, 600, 4), (60, 150, 3), (1, 10_000, 5), (0.02, 1, 4)])
def test_a_log_axis_has_plain_labels_to_read_between(lo: float, hi: float, least: int) -> None:
    fig, ax = plt.subplots()
    ax.plot([1, 2], [lo, hi])
    plotstyle.log_axis(ax)
    labels = _labels(ax)
    assert len(labels) >= least, labels
    # Plain numbers, never 10^n.
    assert all("$" not in t and "^" not in t for t in labels), labels
    plt.close(fig)


def test_the_default_log_axis_of_60_to_600_has_one_label_and_is_flagged() -> None:
    fig, ax = plt.subplots()
    ax.plot([1, 2], [60, 600])
    ax.set_yscale("log")
    ax.set_xlabel("x (s)")
    ax.set_ylabel("y (µs)")
    problems = plotstyle.readability_problems(fig)
    assert any("log y axis" in p for p in problems), problems
    plotstyle.log_axis(ax)
    assert plotstyle.readability_problems(fig) == []
    plt.close(fig)


def test_a_legend_on_the_data_is_flagged_and_one_outside_is_not() -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="a")
    ax.set_xlabel("x (s)")
    ax.set_ylabel("y (s)")
    ax.legend()
    assert any("legend covers" in p for p in plotstyle.readability_problems(fig))
    ax.get_legend().remove()
    plotstyle.legend_outside(ax)
    assert plotstyle.readability_problems(fig) == []
    plt.close(fig)


def test_a_figure_legend_below_the_panels_covers_none() -> None:
    fig, axes = plt.subplots(1, 2)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="same")
        ax.set_xlabel("x (s)")
        ax.set_ylabel("y (s)")
    legend = plotstyle.legend_below(fig, axes)
    assert [t.get_text() for t in legend.get_texts()] == ["same"]  # each label once
    assert plotstyle.readability_problems(fig) == []
    plt.close(fig)


def test_unlabelled_axes_are_flagged_but_not_a_categorical_x() -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    assert sorted(plotstyle.readability_problems(fig)) == ["panel 1 has no x label", "panel 1 has no y label"]
    ax.clear()
    ax.bar(["base", "defer20"], [1, 2])
    ax.set_ylabel("QPS / base")
    assert plotstyle.readability_problems(fig) == []
    plt.close(fig)


@pytest.mark.parametrize("values, expected", [
    ([40.0, 52.0], (40.0 - 0.96, 52.0 + 0.96)),  # far from 0: the data fill the axis
    ([5.0, 100.0], (0.0, 108.0)),  # 0 near: from 0
    ([float("nan")], (0.0, 1.0)),
])
def test_data_range(values: list[float], expected: tuple[float, float]) -> None:
    assert plotstyle.data_range(values) == pytest.approx(expected)


def test_plain_and_dodge() -> None:
    assert [plotstyle.plain(v) for v in (0, 0.5, 60, 200, 25_000, 1_500_000)] == ["0", "0.5", "60", "200", "25k", "1.5M"]
    assert plotstyle.dodge([1, 2], 0, 3) == pytest.approx([0.988, 1.988])
    assert plotstyle.dodge([1, 2], 1, 3) == [1, 2]
    assert plotstyle.dodge([8.0], 2, 3, log=True, width=0.03) == pytest.approx([8.24])


def test_save_warns_once_per_figure_and_writes_the_same_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def draw() -> Path:
        with plt.rc_context(plotstyle.RC):
            fig, ax = plt.subplots()
            ax.plot([1, 2], [60, 600], label="a")
            ax.set_yscale("log")
            return plotstyle.save(fig, tmp_path / "f.png")

    first = draw().read_bytes()
    err = capsys.readouterr().err
    assert err.count("irqlab: warning: figure f.png:") == 1 and "no x label" in err, err
    assert draw().read_bytes() == first
