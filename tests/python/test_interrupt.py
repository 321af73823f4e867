"""Ctrl-C stops a long simulation: the core checks for signals every few
million events, so `irqlab run` ends with status 130 within a second or so
instead of running to the end (it simulates with the GIL released and would
otherwise never look)."""

from __future__ import annotations

import pytest

from conftest import interrupted_run


@pytest.mark.needs_run
def test_ctrl_c_stops_irqlab_run_with_status_130():
    # An hour of simulated time takes far longer than the wait.
    status, out, err = interrupted_run(["run", "scenarios/thesis/bare-metal.toml", "--duration", "3600"])
    assert status == 130, (out, err)
    assert "Traceback" not in err, err
    assert out == ""
