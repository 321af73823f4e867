"""The reports' tables (irqlab.htmltable) and headers (irqlab.labels)."""

from __future__ import annotations

import math

import pytest

from irqlab.htmltable import column_format, table_html
from irqlab.labels import label, unit_of


@pytest.mark.parametrize("values, cells", [
    ([100000, 100164, 721318], ["100,000", "100,164", "721,318"]),
    ([100000.0, 100164.0, 721318.25], ["100,000", "100,164", "721,318"]),
    ([1.5, 12.25, 3.0], ["1.50", "12.25", "3.00"]),
    ([150.0, 2.5], ["150.0", "2.5"]),
    ([0.5, 0.031], ["0.500", "0.031"]),
    ([1.0, math.nan, None], ["1", "\u2014", "\u2014"]),
])
def test_one_format_per_column(values: list, cells: list[str]) -> None:
    fmt = column_format(values)
    assert [fmt(v) for v in values] == cells


def test_table_has_labelled_headers_a_box_and_aligned_cells() -> None:
    html = table_html([{"profile": "busy-wait", "irqs_per_s": 100000.0, "latency_us.p99": 61.25},
                       {"profile": "no-coalescing", "irqs_per_s": 721318.0, "latency_us.p99": math.nan}])
    assert html.startswith('<div class="table-box"><table>') and html.endswith("</table></div>")
    assert '<th class="text" scope="col">Profile</th>' in html
    assert "<th scope=\"col\">Interrupts (/s)</th>" in html and "p99 latency (µs)" in html
    assert "<td>721,318</td>" in html and "<td>61.25</td>" in html and "<td>\u2014</td>" in html
    assert '<td class="text">busy-wait</td>' in html


def test_table_escapes_and_takes_given_headers_and_formats() -> None:
    html = table_html([{"a": "<b>", "b": 2.0}], headers={"a": "A & B"}, formats={"b": lambda v: f"{v:.3f} x"})
    assert "&lt;b&gt;" in html and "A &amp; B" in html and "2.000 x" in html


@pytest.mark.parametrize("name, text", [
    ("latency_us.p99", "p99 latency (µs)"),
    ("irqs_per_s", "Interrupts (/s)"),
    ("load.qps", "Offered load (QPS)"),
    ("storage.guest_irqs_per_s", "Guest IRQs (/s)"),
    ("vic.ipi_threshold_us", "IPI threshold (µs)"),
    ("vcpu_halt_pct", "vCPU halt (%)"),
    ("context_switches_per_query", "Context switches per query"),
    ("held_out", "Held out"),
])
def test_labels(name: str, text: str) -> None:
    assert label(name) == text


def test_unit_of() -> None:
    assert (unit_of("latency_us.p99"), unit_of("gbps"), unit_of("rx_usecs"), unit_of("status")) == ("µs", "", "µs", "")


def test_the_papers_values_go_in_the_papers_layout_with_the_deviation() -> None:
    from irqlab.htmltable import paired_table_html

    rows = [{"oio": 8, "iops": 28000.0, "paper_iops": 31200.0, "user": 21.5, "letter_user": 17.6, "seeds": 3},
            {"oio": 16, "iops": 44000.0, "paper_iops": 38900.0, "user": 20.0, "letter_user": math.nan, "seeds": 3}]
    html = paired_table_html(rows)
    assert html.count('<tr class="paper">') == 2 and html.count('<tr class="simulated">') == 2
    # The row's name spans its two lines; the paper's columns are not columns of their own.
    assert '<td class="text" rowspan="2">8</td>' in html and "Paper" not in html and "letter_user" not in html
    assert "<td>31,200</td>" in html and "28,000 <small>(-10.3 %)</small>" in html
    assert "21.50 <small>(+3.9 pt)</small>" in html  # a CPU share: points
    assert "20.00</td>" in html  # no paper value: no deviation
    assert "<td></td>" in html  # seeds: the paper has none


def test_a_table_whose_paper_values_are_all_withheld_stays_plain() -> None:
    from irqlab.htmltable import paired_table_html

    html = paired_table_html([{"oio": 8, "iops": 1.0, "paper_iops": math.nan}])
    assert 'class="paper"' not in html and "Paper IOPS" in html
