"""``irqlab linux tune`` live on the veth testbed (root; skipped elsewhere,
saying why): memcached under ``irqlab linux exec --profile irq-suspend`` in
the server namespace, the load from the client namespace, the tuner
changing the server veth's ``gro_flush_timeout``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import memcached_irq_suspend_testbed, memcached_on_veth_skip_reason, server_gro_flush_timeout

ROOT = Path(__file__).resolve().parents[2]
IRQLAB = Path(sys.executable).with_name("irqlab")


def _skip_reason() -> str | None:
    return memcached_on_veth_skip_reason("tuning a real device needs root (network namespaces, napi-set)", "per-NAPI settings")


pytestmark = [pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")]

LOAD = "ip netns exec irqlab-tb-cli irqlab loadgen --server 198.18.0.1:11211 --connections 8 --no-preload"


@pytest.fixture(scope="module")
def bed():
    yield from memcached_irq_suspend_testbed()




def _tune(*extra: str) -> subprocess.Popen[str]:
    cmd = ["ip", "netns", "exec", "irqlab-tb-srv", str(IRQLAB), "linux", "tune", "irqlab-tb0", "--knob",
           "gro_flush_timeout", "--range", "0:200000", "--objective", "throughput", "--load", LOAD, "--slice", "0.3",
           *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_tune_changes_the_knob_during_the_run_and_restores_it_exactly(bed, tmp_path):
    original = server_gro_flush_timeout()
    proc = _tune("--budget", "5", "--restore", "--json", "--out", str(tmp_path / "tune"))
    seen = set()
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        seen.add(server_gro_flush_timeout())
        time.sleep(0.1)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert len(result["steps"]) >= 3
    values = {s["value"] for s in result["steps"]}
    assert len(values) >= 2 and all(0 <= v <= 200000 for v in values)
    assert all(s["throughput"] > 0 for s in result["steps"])
    # The device held other values while the tuner ran, and the original after.
    assert seen - {original}, seen
    assert server_gro_flush_timeout() == original
    assert result["left"] == "original" and result["original"][0]["value"] == original
    assert result["elapsed_s"] <= 5 + 5  # the budget, plus one slice's run-down
    from irqlab.results import load

    frame = load(tmp_path / "tune")
    assert len(frame) == len(result["steps"]) and "gro_flush_timeout" in frame.columns


def test_ctrl_c_puts_the_original_back(bed):
    original = server_gro_flush_timeout()
    proc = _tune("--budget", "120")
    # Wait for the first step, then interrupt.
    line = ""
    deadline = time.monotonic() + 60
    while "step 1" not in line and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
    assert "step 1" in line, line
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert server_gro_flush_timeout() == original


def test_tune_refuses_a_knob_the_device_has_not(bed):
    proc = subprocess.run(["ip", "netns", "exec", "irqlab-tb-srv", str(IRQLAB), "linux", "tune", "irqlab-tb0",
                           "--knob", "rx-usecs", "--range", "0:64", "--objective", "p99", "--load", LOAD],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "does not accept coalescing parameter rx-usecs" in proc.stderr and proc.stderr.count("\n") == 1


def test_busy_poll_usecs_is_tuned_through_the_shims_control_file(bed):
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="irqlab-ctl-"))
    os.chmod(d, 0o755)  # memcached runs as nobody and reads the file
    control = d / "control"
    mc = subprocess.Popen(
        ["ip", "netns", "exec", "irqlab-tb-srv", "taskset", "-c", "1", str(IRQLAB), "linux", "exec", "--profile",
         "busy-wait", "--control", str(control), "--debug", "--", shutil.which("memcached"), "-U", "0", "-l",
         "198.18.0.1", "-p", "11212", "-t", "1", "-u", "nobody"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # The shim's log, read as it comes: it takes a new value at its next
    # epoll wait, which for an idle memcached is its next timer (about a
    # second), so the original's return is waited for, not raced.
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(mc.stderr.readline, "")), daemon=True)
    reader.start()

    def taken() -> list[int]:
        return [int(line.split("busy_poll_usecs=")[1].split()[0]) for line in list(lines) if "control:" in line]

    try:
        deadline = time.monotonic() + 20
        while not control.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert control.read_text() == "busy_poll_usecs=1000\n"
        time.sleep(0.5)
        load = "ip netns exec irqlab-tb-cli irqlab loadgen --server 198.18.0.1:11212 --connections 4 --records 100"
        proc = subprocess.run(["ip", "netns", "exec", "irqlab-tb-srv", str(IRQLAB), "linux", "tune", "irqlab-tb0",
                               "--knob", "busy_poll_usecs", "--range", "0:200", "--control", str(control),
                               "--objective", "throughput", "--load", load, "--slice", "0.3", "--budget", "3",
                               "--restore", "--json"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        values = {s["value"] for s in result["steps"]}
        assert len(values) >= 2 and result["left"] == "original"
        assert control.read_text() == "busy_poll_usecs=1000\n"
        deadline = time.monotonic() + 10
        while (not taken() or taken()[-1] != 1000) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        mc.send_signal(signal.SIGTERM)
        mc.wait(timeout=30)
        reader.join(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    # The shim took the tuner's values while memcached ran, and the original back.
    assert set(taken()) & values, (taken(), values)
    assert taken()[-1] == 1000, taken()
