"""`irqlab.Summary` on a made-up summary (no simulation needed)."""

from __future__ import annotations

import json

import pytest

from irqlab import Summary

DATA = {
    "scenario": "made-up",
    "profile": "irq-suspend",
    "seed": 1,
    "mode": "closed",
    "offered_qps": None,
    "throughput_qps": 950000.0,
    "latency_us": {"mean": 30.0, "p50": 25.0, "p95": 50.0, "p99": 70.0, "p999": 120.0},
    "cpu_pct": {"user": 23.0, "system": 77.0, "softirq": 0.0, "irq": 0.0, "idle": 0.0},
    "irq_cores_cpu_pct": None,
    "drops": 0,
    "sim_events": 1000,
    "wall_s": 0.5,
}


def test_attribute_item_and_dotted_access():
    s = Summary(DATA)
    assert s.throughput_qps == s["throughput_qps"] == 950000.0
    assert s.latency_us.p99 == s["latency_us"]["p99"] == s["latency_us.p99"] == 70.0
    with pytest.raises(AttributeError):
        s.no_such_field
    with pytest.raises(KeyError):
        s["latency_us.p42"]


def test_is_read_only():
    s = Summary(DATA)
    with pytest.raises(AttributeError):
        s.seed = 2
    with pytest.raises(TypeError):
        s["seed"] = 2  # type: ignore[index]


def test_to_dict_and_to_json_round_trip():
    s = Summary(DATA)
    assert s.to_dict() == DATA
    assert json.loads(s.to_json()) == DATA
    assert Summary.from_json(s.to_json()) == s
    d = s.to_dict()
    d["latency_us"]["p99"] = 0
    assert s.latency_us.p99 == 70.0


def test_to_pandas_is_one_flat_row():
    df = Summary(DATA).to_pandas()
    assert len(df) == 1
    assert {"latency_us.p99", "cpu_pct.user", "throughput_qps", "irq_cores_cpu_pct"} <= set(df.columns)
    assert df.loc[0, "latency_us.p99"] == 70.0
    assert df.loc[0, "cpu_pct.system"] == 77.0


# -- issue 8, item 4: nothing completed -> latency null, a warning ------------

NOTHING = {
    **DATA,
    "throughput_qps": 0.0,
    "latency_us": {"mean": None, "p50": None, "p95": None, "p99": None, "p999": None},
    "requests_completed": 0,
    "drops": 5,
    "drops_by_site": {"ring": 3, "socket": 2, "qdisc": 0},
    "retransmits": 4,
    "warnings": ["no request completed in the measured 0.001 s, so latency is not reported"],
}


def test_null_latency_is_none_in_flat_and_nan_in_pandas():
    import math

    s = Summary.from_json(json.dumps(NOTHING))
    assert s.latency_us.p99 is None and s["latency_us.p50"] is None
    flat = s.flat()
    assert all(flat[f"latency_us.{k}"] is None for k in ("mean", "p50", "p95", "p99", "p999"))
    df = s.to_pandas()
    for k in ("mean", "p50", "p95", "p99", "p999"):
        assert math.isnan(df.loc[0, f"latency_us.{k}"])
        assert df[f"latency_us.{k}"].dtype.kind == "f"
    assert df.loc[0, "drops_by_site.ring"] == 3 and df.loc[0, "retransmits"] == 4
    assert json.loads(s.to_json())["latency_us"]["p99"] is None


def test_warnings_are_a_list_present_or_not():
    assert Summary(NOTHING).warnings == NOTHING["warnings"]
    assert Summary(DATA).warnings == []  # a summary from before the field existed


def test_table_shows_a_dash_for_null_latency_and_drops_by_site():
    from irqlab.text import summary_table

    table = summary_table(Summary(NOTHING))
    line = next(l for l in table.splitlines() if l.startswith("latency (us)"))
    assert line.count("\u2014") == 5, line
    assert "0.0" not in line and "n/a" not in line
    drops = next(l for l in table.splitlines() if l.startswith("drops"))
    assert drops.split()[1] == "5" and "ring 3" in drops and "socket 2" in drops and "qdisc 0" in drops
    assert any(l.split()[:2] == ["retransmits", "4"] for l in table.splitlines())
    ascii_table = summary_table(Summary(NOTHING), ascii_only=True)
    assert ascii_table.isascii() and "p99       -" in ascii_table


def test_table_without_the_new_fields_is_as_before():
    from irqlab.text import summary_table

    table = summary_table(Summary(DATA))
    assert "p99    70.0" in table and "\u2014" not in table and "retransmits" not in table
    assert next(l for l in table.splitlines() if l.startswith("drops")).split() == ["drops", "0"]


def test_cli_prints_each_warning_as_one_line_on_stderr(monkeypatch, capsys, small):
    import irqlab.cli

    monkeypatch.setattr(irqlab.cli, "run", lambda *a, **k: Summary(NOTHING))
    for json_flag in ([], ["--json"]):
        assert irqlab.cli.main(["run", str(small), *json_flag]) == 0
        out, err = capsys.readouterr()
        assert err.splitlines() == [f"irqlab: warning: {NOTHING['warnings'][0]}"]
        if json_flag:
            assert json.loads(out)["latency_us"]["p99"] is None
        else:
            assert "\u2014" in out


# -- issue 10, item 3: what DIM did ---------------------------------------------

_RX_CQE = [{"usecs": 2, "frames": 256}, {"usecs": 8, "frames": 128}, {"usecs": 16, "frames": 64},
           {"usecs": 32, "frames": 64}, {"usecs": 64, "frames": 64}]
WITH_DIM = {
    **DATA,
    "dim": {
        "rx": {
            "cq_period_mode": "cqe",
            "profiles": _RX_CQE,
            "time_share_pct": {"0": 2.0, "1": 5.0, "2": 3.0, "3": 10.0, "4": 80.0},
            "changes": 7,
            "queues": [
                {"queue": 0, "time_share_pct": {"0": 4.0, "1": 10.0, "2": 6.0, "3": 0.0, "4": 80.0}, "changes": 5},
                {"queue": 1, "time_share_pct": {"0": 0.0, "1": 0.0, "2": 0.0, "3": 20.0, "4": 80.0}, "changes": 2},
            ],
        },
        "tx": None,
    },
}


def test_dim_fields_by_attribute_item_and_dotted_name():
    s = Summary(WITH_DIM)
    assert s.dim.rx.time_share_pct["4"] == s["dim.rx.time_share_pct.4"] == 80.0
    assert s.dim.rx.profiles[4]["usecs"] == 64 and s.dim.tx is None
    assert s.dim.rx.queues[1]["changes"] == 2


def test_dim_flattens_into_a_column_per_profile_and_one_for_the_queues():
    s = Summary(WITH_DIM)
    flat = s.flat()
    assert [flat[f"dim.rx.time_share_pct.{i}"] for i in range(5)] == [2.0, 5.0, 3.0, 10.0, 80.0]
    assert flat["dim.rx.profiles"][0]["frames"] == 256 and flat["dim.rx.changes"] == 7
    assert flat["dim.tx"] is None and isinstance(flat["dim.rx.queues"], list)
    df = s.to_pandas()
    assert df["dim.rx.time_share_pct.4"].dtype.kind == "f"
    assert Summary(DATA).flat().get("dim") is None  # a summary from before the field existed


def test_table_has_a_dim_line_per_direction_that_runs_dim():
    from irqlab.text import summary_table

    lines = summary_table(Summary(WITH_DIM)).splitlines()
    rx = [l for l in lines if l.startswith("dim rx (% time)")]
    assert len(rx) == 1, lines
    assert "0 (2us/256): 2.0" in rx[0] and "4 (64us/64): 80.0" in rx[0] and rx[0].endswith("changes 7")
    assert not any(l.startswith("dim tx") for l in lines)
    for without in (DATA, {**DATA, "dim": None}):
        assert "dim " not in summary_table(Summary(without))
    assert summary_table(Summary(WITH_DIM), ascii_only=True).isascii()
