"""``irqlab results`` (issue 62, items 12 and 17): numbers rounded for
reading with units in the headers (csv and json keep every digit), an
interval that never goes below what a metric can be, and a ``--sql`` query
capped in rows and time."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from irqlab.cli import main
from irqlab.results import ResultsError, aggregate, sql, write_directory

#: Two seeds per point whose throughputs differ a lot: the Student t
#: interval (12.7 × sd / √2 with 2 seeds) reaches below 0.
THROUGHPUTS = {("a", 1000): (100.0, 900.0), ("a", 2000): (1000.12345678912, 1010.98765432198), ("b", 1000): (500.0, 520.0),
               ("b", 2000): (333.333333333333, 366.666666666667)}


def _records() -> list[dict]:
    out = []
    for point, ((profile, qps), values) in enumerate(THROUGHPUTS.items()):
        for replicate, qps_done in enumerate(values):
            summary = {"throughput_qps": qps_done, "latency_us": {"p99": 40.0 + replicate + point / 7},
                       "cpu_pct": {"idle": 50.0 - replicate}, "delta": -1.0 + replicate * 0.5}
            out.append({"key": f"{point}-{replicate}", "point": point, "replicate": replicate, "profile": profile,
                        "knobs": [["load.qps", qps]], "seed": 2**63 - 1 - point * 10 - replicate, "duration_s": 0.1,
                        "error": None, "summary": summary})
    return out


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_directory(tmp_path_factory.mktemp("results-text") / "r", name="r", fingerprint="f",
                           axes=["load.qps"], records=_records(), study_toml="[study]\n")


def _results(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["results", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# -- item 12: the interval of a quantity that cannot be negative ---------------------


def test_the_lower_bound_of_a_metric_that_cannot_be_negative_stops_at_0() -> None:
    frame = pd.DataFrame({"profile": ["a", "a", "b", "b"], "error": [None] * 4,
                          "throughput_qps": [100.0, 900.0, 500.0, 520.0], "delta": [-1.0, 5.0, 1.0, 1.2]})
    agg = aggregate(frame, metrics=["throughput_qps", "delta"], by=["profile"])
    a, b = agg.iloc[0], agg.iloc[1]
    half = stats.t.ppf(0.975, 1) * pd.Series([100.0, 900.0]).std() / math.sqrt(2)
    assert 500.0 - half < 0, "the plain t interval goes below 0 here"
    assert a["throughput_qps.ci_low"] == 0.0 and a["throughput_qps.ci_high"] == pytest.approx(500.0 + half)
    # The other group's interval is above 0: untouched.
    half_b = stats.t.ppf(0.975, 1) * pd.Series([500.0, 520.0]).std() / math.sqrt(2)
    assert b["throughput_qps.ci_low"] == pytest.approx(510.0 - half_b) and b["throughput_qps.ci_low"] < 500.0
    # A metric with a negative value may be negative: the plain interval.
    assert a["delta.ci_low"] < -20
    assert agg.attrs["ci_low_raised"] == {"throughput_qps": 1}


def test_results_prints_no_negative_throughput_and_says_why(directory: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    status, out, err = _results(capsys, str(directory))
    assert status == 0, err
    table, _, note = out.partition("\n\n")
    assert not re.search(r"(^|\s)-\d", table), table
    assert "Note:" in note and "Throughput (QPS) (1 of 4 rows)" in note and "2 seeds" in note, note
    assert "\n" not in note.strip()
    status, out, _ = _results(capsys, str(directory), "--format", "json")
    records = json.loads(out)
    assert min(r["throughput_qps.ci_low"] for r in records) == 0.0


# -- item 17: numbers for reading, units in headers; csv and json exact -------------


def test_text_has_units_in_headers_and_rounded_numbers(directory: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    status, out, err = _results(capsys, str(directory))
    assert status == 0, err
    lines = out.split("\n\n")[0].splitlines()
    for words in ("Profile", "Offered load (QPS)", "Seeds", "Throughput (QPS)", "95 % CI", "CPU busy (%)"):
        assert words in lines[0], lines[0]
    assert len(lines) == 1 + len(THROUGHPUTS)
    assert not re.search(r"\.\d{4,}", out), out  # no six-decimal floats
    row = next(line for line in lines if line.startswith("a ") and "2,000" in line)
    # Means of 1,000-odd: whole numbers with separators; the interval in the same format.
    assert " 1,006 " in row and re.search(r"\d[\d,]* to 1,0\d\d", row), row


def test_csv_and_json_keep_every_digit(directory: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    mean = (1000.12345678912 + 1010.98765432198) / 2
    status, out, _ = _results(capsys, str(directory), "--format", "json", "--metric", "throughput_qps")
    assert status == 0
    got = [r for r in json.loads(out) if r["profile"] == "a" and r["load.qps"] == 2000][0]
    assert got["throughput_qps.mean"] == mean  # exactly, not to 10 decimals
    status, out, _ = _results(capsys, str(directory), "--format", "csv", "--metric", "throughput_qps")
    assert repr(mean) in out


def test_sql_text_is_rounded_and_seeds_are_exact(directory: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    status, out, err = _results(capsys, str(directory), "--sql", 'SELECT seed, throughput_qps FROM results ORDER BY seed DESC')
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["seed", "throughput_qps"]
    assert lines[1].split()[0] == str(2**63 - 1)  # a 64-bit seed, not a rounded float
    assert not re.search(r"\.\d{4,}", out), out


# -- item 12: --sql capped in rows and time -----------------------------------------


def test_sql_refuses_more_rows_than_the_cap(directory: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    query = "SELECT * FROM range(10001)"
    status, out, err = _results(capsys, str(directory), "--sql", query)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: --sql") and "10,000 rows" in lines[0]
    assert "--max-rows" in lines[0]
    status, out, err = _results(capsys, str(directory), "--sql", query, "--max-rows", "10001", "--format", "csv")
    assert status == 0, err
    assert len(out.splitlines()) == 1 + 10001
    with pytest.raises(ResultsError, match="more than 3 rows"):
        sql(directory, "SELECT * FROM results", max_rows=3)
    assert len(sql(directory, "SELECT * FROM results", max_rows=8)) == 8


def test_sql_stops_a_query_at_the_time_cap(directory: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # A count no machine finishes: only the cap can stop it.
    status, out, err = _results(capsys, str(directory), "--sql", "SELECT count(*) FROM range(1000000000000000000)",
                                "--timeout", "0.5")
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "ran for more than 0.5 s" in lines[0] and "--timeout" in lines[0], err


@pytest.mark.parametrize(("args", "needle"), [
    (["--max-rows", "5"], "--max-rows is for --sql"),
    (["--timeout", "5"], "--timeout is for --sql"),
    (["--sql", "SELECT 1", "--max-rows", "0"], "--max-rows"),
    (["--sql", "SELECT 1", "--timeout", "nan"], "--timeout"),
])
def test_cap_flags_are_checked(directory: Path, capsys, args: list[str], needle: str) -> None:  # type: ignore[no-untyped-def]
    status, out, err = _results(capsys, str(directory), *args)
    assert status == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1, err


def test_the_report_shows_an_interval_cut_at_0_by_both_ends(directory: Path, tmp_path: Path) -> None:
    import shutil

    from irqlab.study.report import write_report

    d = tmp_path / "r"
    shutil.copytree(directory, d)
    page = write_report(d).read_text(encoding="utf-8")
    table = page.split("<h3>Results</h3>")[1].split("<h3>")[0]
    # Profile a at 1,000 QPS: 100 and 900, mean 500; the t interval's upper half is 5,082.
    assert "500 (0 to 5,582)" in table, table
    assert "starts at 0 instead" in table
    assert not re.search(r"500 ± ", table)


def test_sql_nulls_and_lists_read_as_such(directory: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    query = "SELECT NULL::INTEGER AS x, 1 AS y, [1.5, NULL] AS l"
    status, out, err = _results(capsys, str(directory), "--sql", query, "--format", "json")
    assert status == 0, err
    assert json.loads(out) == [{"x": None, "y": 1, "l": [1.5, None]}]
    status, out, err = _results(capsys, str(directory), "--sql", query)
    assert status == 0, err
    assert "<NA>" not in out and "--" not in out and "[1.5, None]" in out, out
