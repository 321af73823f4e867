"""One sweep at a time into a results directory (issue 62, item 13): two
identical sweeps into one ``--out`` both ran every missing point (83 runs
for 48 points); now the second is refused in one sentence, and the
directory is free again when the first ends, however it ends."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, SMALL, irqlab
from irqlab.scenario import Scenario
from irqlab.study import Axis, StudyError, build_study
from irqlab.study.dirlock import DirectoryLock
from irqlab.study.store import JOURNAL, MANIFEST, Store

SWEEP = [str(SMALL), "--grid", "load.qps=1000,2000", "--duration", "0.002", "--quiet"]


def study():
    return build_study(Scenario.load(SMALL), name="lock", axes=[Axis("load.qps", (1000, 2000))], duration_s=0.002)


def one_error_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_a_second_store_on_the_same_directory_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = Store.open(out, study())
    try:
        with pytest.raises(StudyError, match=r"--out .*out is being written by another irqlab sweep right now"):
            Store.open(out, study())
        assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "scenario.toml", "study.toml"]
    finally:
        first.close()
    Store.open(out, study()).close()  # free again


def test_a_sweep_into_a_directory_another_holds_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = irqlab("sweep", *SWEEP, "--out", str(out))
    assert done.returncode == 0, done.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    lock = DirectoryLock.take(out, "--out")
    try:
        busy = irqlab("sweep", *SWEEP, "--out", str(out), timeout=60)
    finally:
        lock.release()
    assert busy.returncode == 2 and busy.stdout == ""
    one_error_line(busy.stderr, f"--out {out}", "another irqlab sweep")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    again = irqlab("sweep", *SWEEP, "--out", str(out), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["ran"] == 0, again.stderr


def test_two_identical_sweeps_at_once_run_each_point_once(tmp_path: Path) -> None:
    # The first sweep's one point runs for an hour of simulated time: it is
    # certainly still running when the second starts, and is stopped by
    # SIGTERM afterwards (it keeps nothing: its point never finished).
    out = tmp_path / "out"
    args = [sys.executable, "-m", "irqlab", "sweep", str(SMALL), "--duration", "3600", "--jobs", "1", "--quiet",
            "--out", str(out)]
    first = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / MANIFEST).is_file() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (out / MANIFEST).is_file() and first.poll() is None, "the first sweep did not start"
        second = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert first.poll() is None, "the first sweep ended before the second was refused"
    finally:
        first.send_signal(signal.SIGTERM)
        try:
            first.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            first.kill()
            first.communicate()
    assert second.returncode == 2, second.stderr
    one_error_line(second.stderr, f"--out {out}", "another irqlab sweep", "wait for it to finish")
    assert first.returncode == 143
    assert not (out / JOURNAL).exists() or (out / JOURNAL).read_text() == ""
