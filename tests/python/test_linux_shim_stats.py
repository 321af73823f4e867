"""The preload shim's batch times (``IRQLAB_STATS``, crates/irqlab-preload
``stats.rs``) and what ``irqlab linux control --shim-stats`` makes of them
(the sample's ``threads``, :mod:`irqlab.linux.host_sample`).

The parsers run anywhere. The program tests run
``tests/programs/epoll_echo.c`` (compiled here with ``cc``) under the shim
with no profile variables, so the shim makes no ioctl and any kernel does;
traffic stays on 127.0.0.1 and every wait is bounded. The controller test
needs root and a network namespace (test_linux_live.py's testbed)."""

from __future__ import annotations

import json
import os
import select
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from irqlab.linux.control_cmd import ControlError, check_shim_stats
from irqlab.linux.host_sample import STATS_BUCKETS, ShimStats, read_shim_stats, shim_stats, shim_threads

from conftest import REPO
from test_linux_live import IRQLAB, Testbed, _testbed, _why_not_live



def line(batch_ns: int, hist: dict[int, int], batches: Optional[int] = None) -> str:
    counts = [hist.get(i, 0) for i in range(STATS_BUCKETS)]
    n = sum(counts) if batches is None else batches
    return f"irqlab-stats v1 batches={n} batch_ns={batch_ns} hist={','.join(map(str, counts))}\n"


# -- the line -----------------------------------------------------------------


def test_the_shims_line_is_parsed():
    got = shim_stats(line(70_000, {10: 3, 12: 2}))
    assert got == {"batches": 5, "batch_ns": 70_000, "hist": [3 if i == 10 else 2 if i == 12 else 0
                                                              for i in range(STATS_BUCKETS)]}
    top = (1 << 64) - 1
    longest = f"irqlab-stats v1 batches={top} batch_ns={top} hist={','.join(['0'] * 63 + [str(top)])}\n"
    assert shim_stats(longest) == {"batches": top, "batch_ns": top, "hist": [0] * 63 + [top]}


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "\n",
        line(5, {3: 1}).rstrip("\n"),  # half a line: no newline yet
        line(5, {3: 1}) + line(5, {3: 1}),  # two lines
        line(5, {3: 1}).replace("v1", "v2"),
        line(5, {3: 1}).replace("irqlab-stats", "irqlab-stat"),
        line(5, {3: 1}, batches=2),  # the count is not the buckets' sum
        line(5, {3: 1}).replace("hist=0,", "hist="),  # 63 buckets
        line(5, {3: 1}).replace("\n", ",0\n"),  # 65 buckets
        line(5, {3: 1}).replace("batch_ns=5", "batch_ns=-5"),
        line(5, {3: 1}).replace("batch_ns=5", "batch_ns=5.0"),
        line(5, {3: 1}).replace("batch_ns=5", "batch_ns=18446744073709551616"),  # 2^64
        line(5, {3: 1}).replace("batch_ns=5", "batch_ns=\u0665"),  # a digit, not ASCII
        line(5, {3: 1}).replace("batch_ns=5", "batch_ns="),
        line(5, {3: 1}).replace("batch_ns=5", "ns=5"),
        line(5, {3: 1}).replace(" batch_ns", "  batch_ns"),
        line(5, {3: 1}).replace("\n", " extra=1\n"),
        line(5, {3: 1}).replace(",0,", ",,", 1),
    ],
)
def test_anything_else_is_no_reading(text):
    assert shim_stats(text) is None


# -- two readings -> threads ---------------------------------------------------


def test_the_longest_batch_is_the_upper_edge_of_the_highest_bucket_that_grew():
    first = shim_stats(line(10_000, {10: 3, 12: 1}))
    # No reading before: every batch counted is new; bucket 12 is [4096, 8192) ns.
    assert shim_threads(first, None) == [{"batches": 4, "batch_ns": 10_000, "batch_max_ns": 8192}]
    # Nothing new (the file was not written again): 0, counts as they were.
    assert shim_threads(first, first) == [{"batches": 4, "batch_ns": 10_000, "batch_max_ns": 0}]
    # Only bucket 10 grew: 2048, although bucket 12 holds longer, older batches.
    second = shim_stats(line(13_000, {10: 5, 12: 1}))
    assert shim_threads(second, first) == [{"batches": 6, "batch_ns": 13_000, "batch_max_ns": 2048}]
    # Bucket 0 (0 and 1 ns) has upper edge 2 ns; bucket 63, 2^64.
    assert shim_threads(shim_stats(line(1, {0: 1})), None)[0]["batch_max_ns"] == 2
    assert shim_threads(shim_stats(line(1 << 63, {63: 1})), None)[0]["batch_max_ns"] == 1 << 64
    # A program started again counts from 0: its buckets are all new.
    again = shim_stats(line(500, {8: 1}))
    assert shim_threads(again, second) == [{"batches": 1, "batch_ns": 500, "batch_max_ns": 512}]
    # No reading now: no entry.
    assert shim_threads(None, first) == []


def test_a_call_without_a_valid_file_gives_no_threads_and_keeps_the_previous_reading(tmp_path: Path):
    path = tmp_path / "stats"
    stats = ShimStats(str(path))
    assert stats.threads() == []  # not written yet
    path.write_text(line(3000, {10: 1}))
    assert stats.threads() == [{"batches": 1, "batch_ns": 3000, "batch_max_ns": 2048}]
    path.write_text("irqlab-stats v1 batches=2")  # cut short
    assert stats.threads() == []
    path.write_text(line(9000, {10: 1, 11: 1}))
    assert stats.threads() == [{"batches": 2, "batch_ns": 9000, "batch_max_ns": 4096}]
    assert stats.threads()[0]["batch_max_ns"] == 0


def test_a_fifo_is_never_read(tmp_path: Path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert read_shim_stats(str(fifo)) is None
    assert time.monotonic() - started < 5


def test_the_controllers_option_takes_a_file_or_nothing_yet_in_a_directory_that_exists(tmp_path: Path):
    check_shim_stats(str(tmp_path / "new"))
    (tmp_path / "old").write_text("")
    check_shim_stats(str(tmp_path / "old"))
    os.mkfifo(tmp_path / "fifo")
    for bad, words in [
        (tmp_path / "no" / "stats", "its directory"),
        (tmp_path / "fifo", "is a FIFO, not a regular file"),
        (tmp_path, "is a directory, not a regular file"),
    ]:
        with pytest.raises(ControlError) as e:
            check_shim_stats(str(bad))
        message = str(e.value)
        assert message.startswith(f"--shim-stats {bad}") and words in message and "\n" not in message, message
    with pytest.raises(ControlError, match="must name a file"):
        check_shim_stats("")


# -- the shim under a real program --------------------------------------------


def shim_env(shim: Path, stats: str) -> dict[str, str]:
    """The environment with the shim and IRQLAB_STATS only (no profile: no ioctl)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRQLAB_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(shim), IRQLAB_STATS=stats)
    return env


def ready_port(proc: subprocess.Popen[str], timeout_s: float = 10) -> int:
    """The port of epoll_echo's READY line, read within ``timeout_s``."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        text = proc.stdout.readline()
        if not text:
            break
        if text.startswith("READY port="):
            return int(text.split("=", 1)[1])
    proc.kill()
    raise AssertionError(f"no READY line within {timeout_s} s: {proc.communicate(timeout=10)}")


def round_trips(s: socket.socket, count: int, size: int = 100) -> None:
    """``count`` request/reply round trips of ``size`` bytes on ``s``."""
    for i in range(count):
        data = bytes([i % 256]) * size
        s.sendall(data)
        back = b""
        while len(back) < len(data):
            chunk = s.recv(len(data) - len(back))
            assert chunk, "the server closed the connection"
            back += chunk
        assert back == data


def wait_for_batches(path: Path, at_least: int, timeout_s: float = 5) -> dict:
    """The file's reading once it counts ``at_least`` batches (within ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    got = None
    while time.monotonic() < deadline:
        got = read_shim_stats(str(path))
        if got is not None and got["batches"] >= at_least:
            return got
        time.sleep(0.02)
    raise AssertionError(f"{path} never counted {at_least} batches within {timeout_s} s: {got}")


def check_consistent(got: dict) -> None:
    hist = got["hist"]
    assert sum(hist) == got["batches"] > 0
    assert got["batch_ns"] >= got["batches"]
    # Each batch lies within its bucket: [2^i, 2^(i+1)) ns (bucket 0 from 0).
    floor = sum(c << i for i, c in enumerate(hist) if i > 0)
    ceiling = sum(c << (i + 1) for i, c in enumerate(hist))
    assert floor <= got["batch_ns"] < ceiling, got
    # A loopback echo takes microseconds, not seconds.
    assert max(i for i, c in enumerate(hist) if c) < 32, hist


REQUESTS = 50


def echo_round_trips(cmd: list[str], env: dict[str, str], stats: Path, count: int, size: int = 100,
                     cwd: Optional[Path] = None) -> tuple[int, str, str, dict]:
    """Start the echo server ``cmd``, make ``count`` round trips with it over
    loopback, wait until ``stats`` counts them, then let it end: its exit
    status, stdout, stderr, and the stats file's reading."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    try:
        port = ready_port(proc, timeout_s=30)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            round_trips(s, count, size=size)
            # The connection stays open: the server keeps waiting (100 ms
            # timeouts), and each wait may write the file.
            got = wait_for_batches(stats, count)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err, got


def test_an_echo_server_under_the_shim_publishes_its_batches(echo, shim, tmp_path: Path):
    stats = tmp_path / "stats"
    status, out, err, got = echo_round_trips([echo, "--conns", "1", "--timeout-ms", "15000"], shim_env(shim, str(stats)),
                                             stats, REQUESTS)
    assert status == 0, (out, err)
    assert "DONE conns=1 bytes=5000" in out
    assert "irqlab-preload" not in err, err
    check_consistent(got)
    # One batch per request at least, plus the accept; a few more at most
    # (the close, a wait that returned a partial read).
    assert REQUESTS <= got["batches"] <= REQUESTS + 10, got
    st = os.lstat(stats)
    assert stat.S_ISREG(st.st_mode)
    assert not (tmp_path / "stats.tmp").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["stats"]


@pytest.mark.parametrize("where", ["file", "tmp"])
def test_a_fifo_is_refused_and_left_alone(echo, shim, tmp_path: Path, where: str):
    stats = tmp_path / "stats"
    fifo = stats if where == "file" else tmp_path / "stats.tmp"
    os.mkfifo(fifo)
    # --idle-ms: one wait, in which the shim would write if it had accepted the path.
    r = subprocess.run([echo, "--conns", "0", "--idle-ms", "50"], capture_output=True, text=True,
                       env=shim_env(shim, str(stats)), timeout=30)
    assert r.returncode == 0, r
    lines = r.stderr.splitlines()
    assert lines == [f'irqlab-preload: warning: IRQLAB_STATS: "{fifo}" is a FIFO, not a regular file; it is left '
                     "alone and no batch statistics are written"], r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == [fifo.name]


def test_a_relative_path_is_refused_in_one_line(echo, shim, tmp_path: Path):
    r = subprocess.run([echo, "--conns", "0", "--idle-ms", "50"], capture_output=True, text=True,
                       env=shim_env(shim, "stats"), timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r
    assert r.stderr.splitlines() == ['irqlab-preload: warning: IRQLAB_STATS="stats" is not an absolute path of fewer '
                                     "than 256 bytes; no batch statistics are written"]
    assert list(tmp_path.iterdir()) == []


def exec_launcher() -> list[str]:
    return [sys.executable, "-m", "irqlab.linux.exec_cmd"]


def test_irqlab_linux_exec_passes_the_stats_file(echo, shim, tmp_path: Path):
    # A link to the file: exec gives the shim the file it points to.
    stats = tmp_path / "stats"
    link = tmp_path / "link"
    link.symlink_to(stats)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRQLAB_")}
    status, out, err, got = echo_round_trips([*exec_launcher(), "--profile", "no-coalescing", "--shim-stats", str(link),
                                              "--", echo, "--conns", "1", "--timeout-ms", "15000"],
                                             env, stats, 10, size=10, cwd=REPO)
    assert status == 0, (out, err)
    check_consistent(got)
    assert link.is_symlink() and stat.S_ISREG(os.lstat(stats).st_mode)


def test_irqlab_linux_exec_refuses_a_fifo(echo, shim, tmp_path: Path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = subprocess.run([*exec_launcher(), "--profile", "no-coalescing", "--shim-stats", str(fifo), "--", echo,
                        "--conns", "0"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and f"--shim-stats {fifo} is a FIFO" in r.stderr, r.stderr
    assert "READY" not in r.stdout
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# -- the controller -------------------------------------------------------------


POLICY = """
from irqlab.policy import Policy

class Threads(Policy):
    period_us = 20_000

    def __init__(self):
        self.calls = 0
        self.calls_with_threads = 0
        self.entries = 0
        self.batches = -1
        self.batch_ns = -1
        self.first_max_ns = -1
        self.later_max_ns = 0

    def observe(self, sample):
        self.calls += 1
        if sample.threads:
            self.calls_with_threads += 1
            self.entries = max(self.entries, len(sample.threads))
            t = sample.threads[0]
            self.batches, self.batch_ns = t["batches"], t["batch_ns"]
            if self.first_max_ns < 0:
                self.first_max_ns = t["batch_max_ns"]
            else:
                self.later_max_ns += t["batch_max_ns"]
"""


@pytest.fixture
def bed(tmp_path: Path) -> Iterator[Testbed]:
    yield from _testbed(tmp_path, "irqlab-tss-")


@pytest.mark.skipif(_why_not_live() is not None, reason=str(_why_not_live()))
def test_the_controller_gives_the_policy_one_entry_from_the_stats_file(bed: Testbed, tmp_path: Path):
    policy = tmp_path / "threads_policy.py"
    policy.write_text(POLICY)
    stats = tmp_path / "stats"
    stats.write_text(line(50_000, {12: 2, 14: 1}))
    env = dict(os.environ, IRQLAB_STATE_DIR=str(bed.state_dir))

    def control(*extra: str) -> dict:
        r = subprocess.run(["ip", "netns", "exec", bed.ns, str(IRQLAB), "linux", "control", "veth0", "--policy",
                            f"{policy}:Threads", "--duration", "0.2", "--json", *extra],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["fields"]

    got = control("--shim-stats", str(stats))
    assert got["calls"] >= 2 and got["calls_with_threads"] == got["calls"] and got["entries"] == 1, got
    assert (got["batches"], got["batch_ns"]) == (3, 50_000)
    # Bucket 14 is [16384, 32768) ns; the file never changed after.
    assert (got["first_max_ns"], got["later_max_ns"]) == (32768, 0)
    assert control("--shim-stats", str(tmp_path / "missing"))["calls_with_threads"] == 0
    assert control()["calls_with_threads"] == 0
    r = bed.irqlab("control", "veth0", "--policy", f"{policy}:Threads", "--duration", "1",
                   "--shim-stats", str(tmp_path / "no" / "stats"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "its directory" in r.stderr, r.stderr
