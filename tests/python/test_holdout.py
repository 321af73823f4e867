"""The leave-one-out predictions of the thesis reproduction (irqlab.reproduce.holdout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irqlab.reproduce import holdout
from irqlab.reproduce.thesis import TABLE_4_1, default_scenario, thesis_dir


def test_the_kept_fits_hold_out_each_profile_once():
    fits, procedure = holdout.load_fits(thesis_dir() / holdout.LOO_FILE)
    assert sorted(f.holdout for f in fits) == sorted(TABLE_4_1)
    for f in fits:
        assert f.holdout not in f.fitted_on and len(f.fitted_on) == 3
        assert set(f.in_sample) == set(f.fitted_on)
        # Every fitted group is set, so nothing of the defaults leaks in.
        keys = {o.split("=", 1)[0] for o in f.overrides}
        assert {"app.service", "costs.rx_packet_cycles", "microarch.thread_code_bytes", "microarch.flush_cycles"} <= keys
    assert procedure["starts"] >= 1 and procedure["qps_resolution"] == 0.01


@pytest.mark.parametrize("text", ["", "{}", '{"leave_one_out": [{"holdout": []}]}', "[1, 2]"])
def test_a_file_of_another_shape_is_one_clear_error(tmp_path: Path, text: str):
    path = tmp_path / "loo.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"loo\.json: not a leave-one-out result of tools/calibrate\.py") as e:
        holdout.load_fits(path)
    assert "\n" not in str(e.value)


def test_predictions_run_the_held_out_profile_with_its_fits_constants(tmp_path: Path):
    fits, procedure = holdout.load_fits(thesis_dir() / holdout.LOO_FILE)
    fit = next(f for f in fits if f.holdout == "busy-wait")
    preds = holdout.predict([fit], default_scenario(), TABLE_4_1, {"busy-wait": 3}, duration_s=0.02)
    (p,) = preds
    assert p.summary.profile == "busy-wait" and p.summary.seed == 3
    qps = TABLE_4_1["busy-wait"]["qps"]
    assert p.errors["qps_pct"] == pytest.approx(100.0 * (p.summary.throughput_qps / qps - 1.0))
    # The fit's constants are what ran: a different service time than the default's.
    default = holdout.predict(
        [holdout.HoldoutFit("busy-wait", fit.fitted_on, (), fit.in_sample)],
        default_scenario(), TABLE_4_1, {"busy-wait": 3}, duration_s=0.02,
    )[0]
    assert default.summary.throughput_qps != p.summary.throughput_qps
    # Saved and read back as they were.
    holdout.save(preds, procedure, tmp_path)
    back, proc = holdout.read(tmp_path)
    assert proc == procedure
    assert back[0].errors == p.errors and back[0].summary.throughput_qps == p.summary.throughput_qps
    table = holdout.text_table(back)
    assert "busy-wait" in table and "(nc / ad / is)" in table
    assert holdout.worst_qps_error_pct(back) == pytest.approx(abs(p.errors["qps_pct"]))
    assert json.loads((tmp_path / holdout.PREDICTIONS).read_text())["predictions"][0]["holdout"] == "busy-wait"


def test_no_predictions_file_reads_as_none(tmp_path: Path):
    assert holdout.read(tmp_path) == ([], {})
