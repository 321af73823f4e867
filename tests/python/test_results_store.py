"""The results directory and its dataset: the journal, results.parquet,
irqlab.results.load/aggregate/summary/sql."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats

from conftest import SMALL
from irqlab.results import LEADING, MIDDLE, PROVENANCE, ResultsError, aggregate, load, sql, succeeded, summary
from irqlab.scenario import Scenario
from irqlab.study import Axis, build_study, sweep
from irqlab.study.store import JOURNAL, MANIFEST, RESULTS, Store, read_journal
from irqlab.summary import Summary

AXES = ["cpu.app_cores", "load.qps"]


def make_study(**kw: object):
    args: dict = {
        "name": "store",
        "profiles": ["irq-suspend", "busy-wait"],
        # cpu.app_cores=0 fails: the first point of each profile is a failure.
        "axes": [Axis("cpu.app_cores", (0, 1, 2)), Axis("load.qps", (30000, 10000))],
        "seeds": 3,
        "seed": 11,
        "duration_s": 0.005,
    }
    args.update(kw)
    return build_study(Scenario.load(SMALL), **args)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("store") / "r"
    result = sweep(make_study(), out, jobs=2, progress=False, quiet=True)
    assert result.ran == 36 and len(result.failures) == 12
    return out


@pytest.fixture
def copy(swept: Path, tmp_path: Path) -> Path:
    """A copy of the sweep's directory to damage."""
    return Path(shutil.copytree(swept, tmp_path / "copy"))


def journal_records(d: Path) -> list[dict]:
    return [json.loads(line) for line in (d / JOURNAL).read_text().splitlines()]


# -- layout ----------------------------------------------------------------------


def test_column_layout(swept: Path) -> None:
    frame = load(swept)
    columns = list(frame.columns)
    assert columns[:3] == list(LEADING)
    assert columns[3:5] == AXES  # the axes, in the study's order
    assert columns[5:8] == list(MIDDLE)
    # Provenance last, even though the first row is a failed run with no summary.
    assert columns[-3:] == ["wall_time_s", "irqlab_version", "git_commit"]
    summary_columns = columns[8:-3]
    for name in ("throughput_qps", "latency_us.p99", "cpu_pct.user", "cpu_pct.idle", "drops_by_site.ring", "warnings", "wall_s"):
        assert name in summary_columns, name
    assert "latency_us" not in columns and "profile" not in summary_columns and "seed" not in summary_columns
    # cpu_pct.busy right after cpu_pct.idle, derived from it.
    assert columns.index("cpu_pct.busy") == columns.index("cpu_pct.idle") + 1
    ok = succeeded(frame)
    assert np.allclose(ok["cpu_pct.busy"], 100.0 - ok["cpu_pct.idle"])
    assert frame.attrs["axes"] == AXES
    assert frame.attrs["name"] == "store"
    assert frame.attrs["directory"] == str(swept)


def test_values_and_types(swept: Path) -> None:
    frame = load(swept)
    study = make_study()
    points = list(study.points())
    assert len(frame) == len(points) == 36
    assert frame["load.qps"].dtype == np.int64 and frame["cpu.app_cores"].dtype == np.int64
    by_position = {(p.index, p.replicate): p for p in points}
    for row in frame.itertuples(index=False):
        p = by_position[(row.point, row.replicate)]
        assert row.profile == p.profile
        assert row.seed == p.seed
        assert (getattr(row, "_3"), getattr(row, "_4")) == tuple(v for _, v in p.knobs)
        assert row.duration_s == 0.005


def test_rows_sorted_by_point_and_replicate(swept: Path) -> None:
    frame = load(swept)
    keys = list(zip(frame["point"], frame["replicate"]))
    assert keys == sorted(keys)
    assert keys == [(i, r) for i in range(12) for r in range(3)]


def test_rows_sorted_whatever_the_journal_order(copy: Path, swept: Path) -> None:
    lines = (copy / JOURNAL).read_text().splitlines()
    (copy / JOURNAL).write_text("\n".join(reversed(lines)) + "\n")
    (copy / RESULTS).unlink()
    pd.testing.assert_frame_equal(load(copy), load(swept), check_like=False)


def test_failed_rows_have_null_summary_columns(swept: Path) -> None:
    frame = load(swept)
    failed = frame[frame["error"].notna()]
    assert len(failed) == 12
    assert (failed["cpu.app_cores"] == 0).all()
    assert failed["error"].str.contains("cpu.app_cores").all()
    summary_columns = list(frame.columns[8:-3])
    assert failed[summary_columns].isna().all().all()
    ok = frame[frame["error"].isna()]
    assert ok["throughput_qps"].notna().all() and (ok["requests_completed"] > 0).all()
    assert len(succeeded(frame)) == 24


def test_parquet_holds_the_same_rows_and_the_study(swept: Path) -> None:
    table = pq.read_table(swept / RESULTS)
    meta = table.schema.metadata
    assert meta[b"irqlab.name"] == b"store"
    assert meta[b"irqlab.fingerprint"] == make_study().fingerprint().encode()
    assert table.num_rows == 36
    manifest = json.loads((swept / MANIFEST).read_text())
    assert manifest["fingerprint"] == make_study().fingerprint() and manifest["axes"] == AXES


# -- the journal -----------------------------------------------------------------------


def test_read_from_the_journal_when_results_parquet_is_missing(copy: Path, swept: Path) -> None:
    (copy / RESULTS).unlink()  # a crash before compaction
    from_journal = load(copy)
    pd.testing.assert_frame_equal(from_journal, load(swept))


def test_journal_newer_than_results_parquet_wins(copy: Path) -> None:
    records = journal_records(copy)
    # A later sweep ran point 0 again and was killed before compaction.
    extra = dict(records[0], error="a later failure")
    Store(copy).append(extra)
    frame = load(copy)
    row = frame[(frame["point"] == extra["point"]) & (frame["replicate"] == extra["replicate"])]
    assert list(row["error"]) == ["a later failure"]
    assert len(frame) == 36


def test_torn_last_line_is_ignored_and_cut_before_the_next_record(copy: Path) -> None:
    text = (copy / JOURNAL).read_text()
    (copy / JOURNAL).write_text(text + '{"key": "torn')  # killed mid-write
    (copy / RESULTS).unlink()
    assert len(list(read_journal(copy))) == 36
    assert len(load(copy)) == 36
    # Reopening (a resumed sweep) cuts it, so that the next record is a line of its own.
    store = Store.open(copy, make_study())
    store.append(journal_records(copy)[5])
    assert (copy / JOURNAL).read_text().endswith("}\n")
    assert len(list(read_journal(copy))) == 37
    assert len(load(copy)) == 36


def test_damaged_journal_line_is_refused(copy: Path) -> None:
    lines = (copy / JOURNAL).read_text().splitlines()
    lines[3] = "garbage"
    (copy / JOURNAL).write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 4"):
        list(read_journal(copy))


def test_empty_sweep_directory_loads_as_an_empty_frame(tmp_path: Path) -> None:
    Store.open(tmp_path / "d", make_study())
    frame = load(tmp_path / "d")
    assert len(frame) == 0 and list(frame.columns[:3]) == list(LEADING)


def test_load_refuses_a_directory_without_a_sweep(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match=MANIFEST):
        load(tmp_path)


# -- aggregation ----------------------------------------------------------------------


def test_aggregate_mean_and_ci_by_hand(swept: Path) -> None:
    frame = load(swept)
    agg = aggregate(frame, metrics=["throughput_qps", "latency_us.p99"])
    assert list(agg.columns) == [
        "profile", *AXES, "n",
        "throughput_qps.mean", "throughput_qps.ci_low", "throughput_qps.ci_high",
        "latency_us.p99.mean", "latency_us.p99.ci_low", "latency_us.p99.ci_high",
    ]  # fmt: skip
    # Failed runs are left out: the cpu.app_cores=0 groups have no row.
    assert len(agg) == 2 * 2 * 2 and (agg["cpu.app_cores"] != 0).all()
    assert (agg["n"] == 3).all()
    ok = succeeded(frame)
    for row in agg.itertuples(index=False):
        profile, cores, qps = row[0], row[1], row[2]
        values = ok[(ok["profile"] == profile) & (ok["cpu.app_cores"] == cores) & (ok["load.qps"] == qps)]["throughput_qps"]
        values = values.to_numpy(dtype=float)
        mean = values.sum() / 3
        sd = math.sqrt(((values - mean) ** 2).sum() / 2)
        half = stats.t.ppf(0.975, 2) * sd / math.sqrt(3)
        assert row[4] == pytest.approx(mean, rel=1e-12)
        assert row[5] == pytest.approx(mean - half, rel=1e-9, abs=1e-9)
        assert row[6] == pytest.approx(mean + half, rel=1e-9, abs=1e-9)
        assert row[5] <= row[4] <= row[6]


def test_aggregate_confidence_and_single_seed() -> None:
    frame = pd.DataFrame(
        {
            "point": [0, 0, 0, 0, 1],
            "replicate": [0, 1, 2, 3, 0],
            "profile": ["a"] * 5,
            "x.y": [1, 1, 1, 1, 2],
            "seed": [1, 2, 3, 4, 5],
            "duration_s": [0.1] * 5,
            "error": [None, None, None, "failed", None],
            "m": [1.0, 2.0, 6.0, 100.0, 7.0],
        }
    )
    frame.attrs["axes"] = ["x.y"]
    agg = aggregate(frame, confidence=0.9)
    assert list(agg.columns) == ["profile", "x.y", "n", "m.mean", "m.ci_low", "m.ci_high"]
    first = agg.iloc[0]
    assert first["n"] == 3 and first["m.mean"] == 3.0
    half = stats.t.ppf(0.95, 2) * np.std([1.0, 2.0, 6.0], ddof=1) / math.sqrt(3)
    assert first["m.ci_high"] - 3.0 == pytest.approx(half)
    second = agg.iloc[1]
    assert second["n"] == 1 and second["m.mean"] == 7.0
    assert math.isnan(second["m.ci_low"]) and math.isnan(second["m.ci_high"])
    with pytest.raises(ValueError, match="confidence"):
        aggregate(frame, confidence=1.0)
    with pytest.raises(ResultsError, match="'nope'"):
        aggregate(frame, metrics=["nope"])


def test_aggregate_default_metrics_are_numeric_summary_columns(swept: Path) -> None:
    agg = aggregate(load(swept))
    assert "throughput_qps.mean" in agg.columns and "cpu_pct.busy.mean" in agg.columns
    for excluded in ("seed", "point", "replicate", "duration_s", *PROVENANCE):
        assert f"{excluded}.mean" not in agg.columns


# -- back to summaries, and SQL -----------------------------------------------------------


def test_summary_round_trip(swept: Path) -> None:
    frame = load(swept)
    originals = {(r["point"], r["replicate"]): r["summary"] for r in journal_records(swept)}

    def without_provenance(s: dict) -> dict:
        return {k: v for k, v in s.items() if k not in PROVENANCE}

    checked = 0
    for _, row in succeeded(frame).iterrows():
        s = summary(row)
        assert isinstance(s, Summary)
        original = originals[(row["point"], row["replicate"])]
        assert without_provenance(s.to_dict()) == without_provenance(original)
        assert set(s) <= set(original)  # no axis or study columns leak in
        assert s.latency_us.p99 == original["latency_us"]["p99"]
        checked += 1
    assert checked == 24
    # A plain mapping (no attrs) names its axes.
    row = succeeded(frame).iloc[0]
    plain = {k: row[k] for k in frame.columns}
    assert without_provenance(summary(plain, axes=AXES).to_dict()) == without_provenance(
        originals[(row["point"], row["replicate"])]
    )


def test_sql(swept: Path) -> None:
    out = sql(swept, 'SELECT profile, count(*) AS n, count("latency_us.p99") AS ok FROM results GROUP BY profile ORDER BY profile')
    assert out.to_dict("records") == [
        {"profile": "busy-wait", "n": 18, "ok": 12},
        {"profile": "irq-suspend", "n": 18, "ok": 12},
    ]
    with pytest.raises(ResultsError) as info:
        sql(swept, "SELECT FROM WHERE")
    assert str(info.value).startswith("--sql: ") and "\n" not in str(info.value)


@pytest.mark.parametrize("query", [
    "COPY results TO '{out}'",
    "COPY (SELECT 1) TO '{out}' (FORMAT csv)",
    "SELECT * FROM read_csv('{out}')",
    "ATTACH '{out}' AS other",
    "SET enable_external_access = true",
])
def test_sql_touches_no_file(swept: Path, tmp_path: Path, query: str) -> None:
    """A query is refused any file: it could otherwise write anywhere the
    user (often root) can, past the output rules of irqlab.files."""
    out = tmp_path / "escaped.csv"
    if "read_csv" in query:
        out.write_text("a\n1\n")
    with pytest.raises(ResultsError) as info:
        sql(swept, query.format(out=out))
    assert str(info.value).startswith("--sql: ") and "\n" not in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == (["escaped.csv"] if "read_csv" in query else [])


# -- DIM's profile time shares in the store (issue 10, item 3) ----------------------


@pytest.fixture(scope="module")
def dim_swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """no-coalescing (no RX DIM) and adaptive-coalescing, with TX DIM on and
    off: rows whose `dim` is null, whose `dim.rx` is null, and complete ones."""
    from irqlab.cli import main

    out = tmp_path_factory.mktemp("dim") / "r"
    status = main(["sweep", str(SMALL), "--profile", "no-coalescing,adaptive-coalescing",
                   "--grid", "coalesce.adaptive-tx=true,false", "--seeds", "2", "--duration", "0.005",
                   "--out", str(out), "--quiet"])
    assert status == 0
    return out


def test_dim_columns_are_numeric_per_profile_and_round_trip(dim_swept: Path) -> None:
    assert (dim_swept / RESULTS).is_file()
    frame = load(dim_swept)
    assert len(frame) == 8
    for i in range(5):
        assert frame[f"dim.rx.time_share_pct.{i}"].dtype.kind == "f"
        assert frame[f"dim.tx.time_share_pct.{i}"].dtype.kind == "f"
    adaptive = frame[frame["profile"] == "adaptive-coalescing"]
    shares = adaptive[[f"dim.rx.time_share_pct.{i}" for i in range(5)]].sum(axis=1)
    assert np.allclose(shares, 100.0)
    assert frame[frame["profile"] == "no-coalescing"]["dim.rx.time_share_pct.4"].isna().all()
    assert all(isinstance(v, str) for v in adaptive["dim.rx.queues"])  # JSON text
    agg = aggregate(frame)
    assert "dim.rx.time_share_pct.4.mean" in agg.columns and "dim.rx.changes.mean" in agg.columns
    out = sql(dim_swept, 'SELECT profile, avg("dim.rx.time_share_pct.4") AS p4 FROM results GROUP BY profile ORDER BY profile')
    assert out["profile"].tolist() == ["adaptive-coalescing", "no-coalescing"] and math.isnan(out["p4"][1])

    originals = {(r["point"], r["replicate"]): r["summary"] for r in journal_records(dim_swept)}
    kinds = set()
    for _, row in frame.iterrows():
        s = summary(row)
        original = originals[(row["point"], row["replicate"])]
        assert {k: v for k, v in s.to_dict().items() if k not in PROVENANCE} == {
            k: v for k, v in original.items() if k not in PROVENANCE
        }
        dim = original["dim"]
        kinds.add("null" if dim is None else "no rx" if dim["rx"] is None else "rx")
        if dim and dim["rx"]:
            assert s.dim.rx.queues == dim["rx"]["queues"]
    assert kinds == {"null", "no rx", "rx"}


# -- issue 62, item 12: a directory that is not what it seems is refused, not misread


@pytest.mark.parametrize("line", ['{"note": "added by hand"}', "[1, 2]", '"text"', "3", "null", '{"key": 5}'])
@pytest.mark.parametrize("where", [3, -1])
def test_a_json_line_that_is_no_record_says_the_directory_is_damaged(copy: Path, line: str, where: int) -> None:
    # It was dropped without a word: a point then showed n = 1 for 2 seeds.
    lines = (copy / JOURNAL).read_text().splitlines()
    lines[where] = line
    (copy / JOURNAL).write_text("\n".join(lines) + "\n")
    (copy / RESULTS).unlink()
    number = where + 1 if where >= 0 else len(lines)
    with pytest.raises(ValueError, match=rf"{JOURNAL} line {number} is .*not a journal record; the directory is damaged"):
        list(read_journal(copy))
    with pytest.raises(ResultsError, match=rf"line {number} is"):
        load(copy)
    with pytest.raises(ValueError, match=rf"line {number} is"):
        sweep(make_study(), copy, jobs=1, progress=False, quiet=True)


@pytest.mark.parametrize("fmt", [99, 0, "1", None, True])
def test_a_manifest_of_another_format_is_refused(copy: Path, fmt: object) -> None:
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["format"] = fmt
    (copy / MANIFEST).write_text(json.dumps(manifest))
    before = (copy / JOURNAL).read_bytes()
    with pytest.raises(ResultsError, match=rf"{MANIFEST} says format {json.dumps(fmt)}, and this irqlab reads format 1"):
        load(copy)
    with pytest.raises(ValueError, match=rf"says format {json.dumps(fmt)}"):
        sweep(make_study(), copy, jobs=1, progress=False, quiet=True)
    assert (copy / JOURNAL).read_bytes() == before
