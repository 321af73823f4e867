"""``irqlab sweep --executor dask``: the same results as a local sweep, on
worker processes of a Dask distributed cluster; an unreachable scheduler is
a one-line refusal; a worker that dies fails its point, not the sweep."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import pytest

from conftest import REPO
from irqlab.results import PROVENANCE, load
from irqlab.scenario import Scenario
from irqlab.study import Axis, build_study
from irqlab.study.executor import DaskExecutor, ThreadExecutor, task_key

distributed = pytest.importorskip("distributed")

THESIS = REPO / "scenarios" / "thesis" / "bare-metal.toml"
SWEEP = [
    str(THESIS), "--profile", "irq-suspend,busy-wait", "--grid", "load.qps=100000:500000:100000",
    "--seeds", "2", "--duration", "0.03",
]  # fmt: skip
TOTAL = 2 * 5 * 2


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    import dask

    # A task whose worker dies fails at once (not after three more workers),
    # for the KilledWorker test; it changes nothing for tasks that finish.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        yield local
    finally:
        local.close()


@pytest.fixture(scope="module")
def client(cluster: Any) -> Iterator[Any]:
    c = distributed.Client(cluster, set_as_default=False)
    try:
        yield c
    finally:
        c.close()


def irqlab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "irqlab", *args], capture_output=True, text=True, timeout=timeout)


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.drop(columns=list(PROVENANCE))
    frame["warnings"] = frame["warnings"].map(lambda w: tuple(w) if w is not None else None)
    return frame


def test_workers_are_separate_processes(client: Any) -> None:
    pids = client.run(os.getpid)
    assert len(pids) == 2
    assert len(set(pids.values())) == 2
    assert os.getpid() not in pids.values()


def test_dask_sweep_equals_the_local_one(tmp_path: Path, cluster: Any, client: Any) -> None:
    before = sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())
    on_dask = irqlab("sweep", *SWEEP, "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "--out", str(tmp_path / "dask"), "--json")  # fmt: skip
    assert on_dask.returncode == 0, on_dask.stderr
    report = json.loads(on_dask.stdout)
    assert (report["points"], report["ran"], report["failed"]) == (TOTAL, TOTAL, [])
    assert report["executor"] == f"Dask cluster at {cluster.scheduler_address} (2 workers)"
    # The points ran on the workers.
    after = sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())
    assert after - before >= TOTAL

    local = irqlab("sweep", *SWEEP, "--jobs", "2", "--out", str(tmp_path / "local"), "--json")
    assert local.returncode == 0, local.stderr

    a, b = load(tmp_path / "dask"), load(tmp_path / "local")
    assert len(a) == TOTAL
    assert list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(comparable(a), comparable(b))

    # Resuming a Dask sweep locally (or the other way round) is the same sweep.
    again = irqlab("sweep", *SWEEP, "--out", str(tmp_path / "dask"), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["ran"] == 0


def closed_port() -> int:
    """A local port nothing listens on (connecting to it is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_one_line_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "out"
    address = f"tcp://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    result = irqlab("sweep", *SWEEP, "--executor", "dask", "--scheduler", address, "--connect-timeout", "1",
                    "--out", str(out), timeout=60)  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"irqlab: error: --scheduler {address}: cannot reach a Dask scheduler")
    assert result.stdout == "" and not out.exists()
    assert time.monotonic() - started < 30  # the timeout given, not the default 30 s


@pytest.mark.parametrize("address", ["no-port", "tcp://127.0.0.1:70000", "http://127.0.0.1:8786"])
def test_malformed_scheduler_address_is_one_line_exit_2(tmp_path: Path, address: str) -> None:
    result = irqlab("sweep", *SWEEP, "--executor", "dask", "--scheduler", address, "--out", str(tmp_path / "o"), timeout=60)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: --scheduler"), result.stderr
    assert address in lines[0]
    assert not (tmp_path / "o").exists()


@contextmanager
def fake_peer(behaviour: str) -> Iterator[str]:
    """A local TCP listener that is not a Dask scheduler, for as long as the
    block lasts: ``silent`` accepts and never sends a byte, ``text`` sends
    text (read by Dask as an absurd frame length), ``frames`` sends a small
    length and bytes that are no Dask message, ``close`` hangs up at once.
    Its thread stops with the block (every wait in it is bounded)."""
    stop = threading.Event()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            try:
                if behaviour == "text":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello\r\n" * 4)
                elif behaviour == "frames":
                    conn.sendall((24).to_bytes(8, "little") + b"\x01\x00\x00\x00\x00\x00\x00\x00" + b"\xc1" * 16)
                elif behaviour == "close":
                    conn.close()
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        for conn in held:
            conn.close()
        server.close()


@pytest.mark.parametrize("behaviour", ["silent", "text", "frames", "close"])
def test_a_peer_that_is_not_a_scheduler_is_one_line_within_the_connect_timeout(tmp_path: Path, behaviour: str) -> None:
    # Issue 62, item 10: a peer that accepts and never answers hung the
    # sweep; one that sends garbage left a traceback from Client.__del__.
    # The bound is generous (the command takes about the 2 s given, plus
    # start-up): hang detection, not speed.
    out = tmp_path / "out"
    with fake_peer(behaviour) as address:
        result = irqlab("sweep", *SWEEP, "--executor", "dask", "--scheduler", address, "--connect-timeout", "2",
                        "--out", str(out), timeout=90)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"irqlab: error: --scheduler {address}: cannot reach a Dask scheduler"), lines[0]
    if behaviour == "silent":
        assert "within 2 s" in lines[0] and "--connect-timeout" in lines[0], lines[0]
    assert result.stdout == "" and not out.exists()


def test_task_keys_differ_for_different_work() -> None:
    # The cluster returns a key's held result to anyone who submits that key:
    # the same point at another duration must not share it.
    scenario = Scenario.load(THESIS)
    tasks = []
    for duration in (0.01, 0.02):
        study = build_study(scenario, name="k", axes=[Axis("load.qps", (100000, 200000))], duration_s=duration)
        tasks.append([study.task(p) for p in study.points()])
    keys = [[task_key(t) for t in ts] for ts in tasks]
    assert len({k for ks in keys for k in ks}) == 4
    assert keys[0] == [task_key(t) for t in tasks[0]]  # stable
    assert all(k.startswith(f"irqlab-point-{i}-0-") for i, k in enumerate(keys[0]))


def test_records_are_reported_in_the_calling_thread(cluster: Any) -> None:
    study = build_study(Scenario.load(THESIS), name="t", axes=[Axis("load.qps", (100000, 200000, 300000))], duration_s=0.01)
    tasks = [study.task(p) for p in study.points()]
    for executor in (ThreadExecutor(2), DaskExecutor(cluster.scheduler_address, connect_timeout_s=10)):
        threads: list[threading.Thread] = []
        keys: list[str] = []
        try:
            executor.run(tasks, lambda r: (threads.append(threading.current_thread()), keys.append(r["key"])))
        finally:
            if isinstance(executor, DaskExecutor):
                executor.close()
        assert sorted(keys) == sorted(t["key"] for t in tasks)
        assert set(threads) == {threading.main_thread()}, executor.describe()


def test_a_killed_worker_fails_its_point_not_the_sweep(cluster: Any, client: Any) -> None:
    """Runs last: it kills a worker (the cluster's nanny starts another)."""
    study = build_study(
        Scenario.load(THESIS),
        name="k",
        profiles=["irq-suspend"],
        # Point 0 runs for minutes unless killed; the others are short.
        axes=[Axis("run.duration_s", (60.0, 0.01, 0.02, 0.03))],
    )
    tasks = [study.task(p) for p in study.points()]
    long_key = task_key(tasks[0])
    killed: list[int] = []

    def kill_the_long_points_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            on = [w for w, keys in client.processing().items() if long_key in keys]
            if on:
                time.sleep(1.0)  # well into the simulation
                pid = client.run(os.getpid, workers=on)[on[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.02)

    executor = DaskExecutor(cluster.scheduler_address, connect_timeout_s=10)
    records: list[dict[str, Any]] = []
    threads: set[threading.Thread] = set()

    def on_record(record: dict[str, Any]) -> None:
        threads.add(threading.current_thread())
        records.append(record)

    killer = threading.Thread(target=kill_the_long_points_worker, daemon=True)
    killer.start()
    try:
        started = time.monotonic()
        executor.run(tasks, on_record)
        elapsed = time.monotonic() - started
    finally:
        executor.close()
        killer.join(timeout=5)
    assert killed, "the long point never started"
    assert threads == {threading.main_thread()}  # the journal is written by one thread
    assert elapsed < 50  # the long point did not run to its end
    assert sorted(r["key"] for r in records) == sorted(t["key"] for t in tasks)
    by_point = {r["point"]: r for r in records}
    assert by_point[0]["summary"] is None
    assert by_point[0]["error"].startswith("KilledWorker:") and "\n" not in by_point[0]["error"]
    assert by_point[0]["seed"] == tasks[0]["seed"] and by_point[0]["knobs"] == tasks[0]["knobs"]
    # Points that shared the dead worker may have died with it; every other one ran.
    for r in records:
        assert (r["error"] is None) == (r["summary"] is not None)
        if r["error"] is not None:
            assert r["error"].startswith("KilledWorker:")
    assert any(r["error"] is None for r in records)
