"""Ctrl-C stops a long simulation: the core checks for signals every few
million events, so `irqlab run` ends with status 130 within a second or so
instead of running to the end (it simulates with the GIL released and would
otherwise never look)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO


@pytest.mark.needs_run
def test_ctrl_c_stops_irqlab_run_with_status_130():
    proc = subprocess.Popen(
        [sys.executable, "-m", "irqlab", "run", "scenarios/thesis/bare-metal.toml", "--duration", "3600"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Let it get past imports and into the simulation (an hour of
        # simulated time takes far longer than this to run).
        time.sleep(3.0)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err, err
    assert out == ""
