"""The acceptance test of resumable sweeps: a sweep killed half-way (SIGTERM,
Ctrl-C, or a crash) keeps every finished point; the same command run again
runs only the missing ones, and the results equal those of a sweep that was
never interrupted (run with another parallelism, into another directory)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import pandas as pd
import pytest

from conftest import REPO
from irqlab.results import PROVENANCE, load
from irqlab.study.store import JOURNAL, RESULTS

THESIS = REPO / "scenarios" / "thesis" / "bare-metal.toml"
GRID = [
    "--profile", "irq-suspend,busy-wait",
    "--grid", "load.qps=100000:400000:100000",
    "--grid", "cpu.app_cores=4,8",
    "--seeds", "2",
]  # fmt: skip
TOTAL = 2 * 4 * 2 * 2
#: Simulated seconds per point; a slower one is tried if a sweep finishes
#: before the test could kill it (a much faster machine).
DURATIONS = ("0.03", "0.1", "0.4")
#: Finished points to wait for before killing.
AT_LEAST = TOTAL // 2


def command(out: Path, duration: str, jobs: int = 2) -> list[str]:
    return [
        sys.executable, "-m", "irqlab", "sweep", str(THESIS), *GRID,
        "--duration", duration, "--jobs", str(jobs), "--out", str(out), "--json",
    ]  # fmt: skip


def journal_keys(out: Path) -> list[str]:
    try:
        lines = (out / JOURNAL).read_bytes().split(b"\n")
    except FileNotFoundError:
        return []
    keys = []
    for line in lines:
        try:
            keys.append(json.loads(line)["key"])
        except ValueError:
            pass  # the last line being written
    return keys


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.drop(columns=list(PROVENANCE))
    frame["warnings"] = frame["warnings"].map(lambda w: tuple(w) if w is not None else None)
    return frame


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], pd.DataFrame]:
    """The uninterrupted sweep at a duration (one thread: another order than the killed ones)."""
    done: dict[str, pd.DataFrame] = {}

    def get(duration: str) -> pd.DataFrame:
        if duration not in done:
            out = tmp_path_factory.mktemp("reference") / "r"
            result = subprocess.run(command(out, duration, jobs=1), capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, result.stderr
            assert json.loads(result.stdout)["ran"] == TOTAL
            done[duration] = load(out)
        return done[duration]

    return get


def kill_half_way(out: Path, duration: str, sig: int) -> Optional[tuple[int, str, int]]:
    """Start the sweep, send ``sig`` once at least AT_LEAST points are in its
    journal; its status, stderr and the points seen before the kill, or None
    if it finished first."""
    proc = subprocess.Popen(command(out, duration), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        seen = 0
        while time.monotonic() < deadline and proc.poll() is None:
            seen = len(set(journal_keys(out)))
            if seen >= AT_LEAST:
                break
            time.sleep(0.005)
        if proc.poll() is not None or seen >= TOTAL:
            proc.communicate(timeout=60)
            return None
        assert seen >= AT_LEAST, "the sweep did not start within two minutes"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if len(set(journal_keys(out))) >= TOTAL:
        return None  # every point finished between the count and the signal
    return proc.returncode, err, seen


@pytest.mark.parametrize(
    ("sig", "status"),
    [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -signal.SIGKILL)],
    ids=["SIGTERM", "SIGINT", "SIGKILL"],
)
def test_killed_sweep_resumes_to_the_uninterrupted_results(
    tmp_path: Path, reference: Callable[[str], pd.DataFrame], sig: int, status: int
) -> None:
    for duration in DURATIONS:
        out = tmp_path / f"sweep-{duration}"
        outcome = kill_half_way(out, duration, sig)
        if outcome is not None:
            break
        shutil.rmtree(out)
    else:
        pytest.fail(f"the sweep always finished before it could be killed (durations {DURATIONS})")
    returncode, err, seen = outcome

    assert returncode == status, err
    kept = journal_keys(out)
    assert len(kept) == len(set(kept)), "a point was recorded twice"
    assert seen <= len(kept) < TOTAL
    if sig == signal.SIGKILL:
        # No time to write the dataset: it is read from the journal.
        assert not (out / RESULTS).exists()
    else:
        assert "Traceback" not in err
        last = err.splitlines()[-1]
        assert last.startswith("irqlab: warning: sweep bare-metal interrupted") and str(out) in last, err
        assert (out / RESULTS).is_file()  # written on the way out
    partial = load(out)
    assert len(partial) == len(kept)
    assert partial["error"].isna().all()

    # The same command again: only the missing points run.
    again = subprocess.run(command(out, duration), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["already_done"], report["ran"], report["points"]) == (len(kept), TOTAL - len(kept), TOTAL)
    keys = journal_keys(out)
    assert len(keys) == len(set(keys)) == TOTAL

    # And once more: nothing left to run.
    third = subprocess.run(command(out, duration), capture_output=True, text=True, timeout=300)
    assert third.returncode == 0 and json.loads(third.stdout)["ran"] == 0

    final = load(out)
    expected = reference(duration)
    assert list(final.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(comparable(final), comparable(expected))
    # Provenance differs, and is the only thing that may.
    assert final["wall_time_s"].notna().all()


def test_results_do_not_depend_on_parallelism_or_order(tmp_path: Path, reference: Callable[[str], pd.DataFrame]) -> None:
    """Same sweep, two threads instead of one: the same rows (the other tests
    compare interrupted sweeps against it too)."""
    out = tmp_path / "two-threads"
    result = subprocess.run(command(out, DURATIONS[0], jobs=2), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    frame = load(out)
    pd.testing.assert_frame_equal(comparable(frame), comparable(reference(DURATIONS[0])))
    # Derived seeds: all different, and the simulated results differ between replicates.
    assert frame["seed"].nunique() == TOTAL
    pairs = frame.groupby("point")["latency_us.p99"].nunique()
    assert (pairs == 2).any()
    assert os.path.getsize(out / RESULTS) > 0
