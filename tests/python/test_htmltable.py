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
