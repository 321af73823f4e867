"""``irqlab linux exec``: unmodified epoll programs under a profile, on the real kernel.

The program is ``tests/programs/epoll_echo.c`` (compiled here with ``cc``)
and Debian's memcached; all traffic stays on 127.0.0.1, every loop and
every process is bounded in time. The suite needs a kernel with
``EPIOCSPARAMS`` (Linux 6.9+) and is skipped without one; the parts that
change user (``setpriv``) or start memcached as ``nobody`` need root.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pty
import queue
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from irqlab import PROFILES, _core
from irqlab.linux.exec_cmd import find_shim

from conftest import REPO

EPIOCGPARAMS = 0x80088A02  # _IOR(0x8A, 0x02, struct epoll_params), include/uapi/linux/eventpoll.h
WAIT_FNS = ("wait", "pwait", "pwait2")
IS_ROOT = os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
MEMCACHED = shutil.which("memcached") or ("/usr/bin/memcached" if os.path.exists("/usr/bin/memcached") else None)


def _kernel_has_epoll_params() -> bool:
    import select as _select

    ep = _select.epoll()
    try:
        fcntl.ioctl(ep.fileno(), EPIOCGPARAMS, bytearray(8))
        return True
    except OSError:
        return False
    finally:
        ep.close()


pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
    pytest.mark.skipif(
        sys.platform.startswith("linux") and not _kernel_has_epoll_params(),
        reason="the kernel has no EPIOCSPARAMS (Linux 6.9+)",
    ),
]


# -- fixtures -----------------------------------------------------------------


@pytest.fixture(autouse=True)
def spin_in_every_epoll(monkeypatch):
    # On loopback no socket carries a NAPI id, so busy-wait would spin in no
    # epoll instance by default; these tests exercise the spinning path
    # itself, hence IRQLAB_SPIN_ALL (`irqlab linux exec --spin-all`).
    monkeypatch.setenv("IRQLAB_SPIN_ALL", "1")


@pytest.fixture(scope="module")
def launcher(shim: Path) -> list[str]:
    """``irqlab linux exec`` from the virtualenv; until the command is
    registered under ``irqlab linux``, the module that implements it."""
    irqlab = Path(sys.executable).with_name("irqlab")
    if irqlab.exists():
        probe = subprocess.run([str(irqlab), "linux", "exec", "--help"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return [str(irqlab), "linux", "exec"]
    return [sys.executable, "-m", "irqlab.linux.exec_cmd"]


def epoll_of(profile: str) -> dict:
    """The profile's epoll section, from the core."""
    return json.loads(_core.resolve('name = "t"\n', profile, []))["epoll"]


def busy_polls(profile: str) -> bool:
    e = epoll_of(profile)
    return bool(e["busy_poll_usecs"] or e["busy_poll_budget"] or e["prefer_busy_poll"] or not e["blocking"])


# -- helpers ------------------------------------------------------------------


def run(argv: Sequence[str], timeout: float = 30, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


def fields(line: str) -> dict[str, str]:
    """``"IDLE ret=0 cpu_ms=1.5"`` -> ``{"ret": "0", "cpu_ms": "1.5"}``."""
    return dict(part.split("=", 1) for part in line.split()[1:])


def line_of(stdout: str, tag: str) -> dict[str, str]:
    lines = [line for line in stdout.splitlines() if line.startswith(tag + " ")]
    assert len(lines) == 1, f"expected one {tag} line in {stdout!r}"
    return fields(lines[0])


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("irqlab-preload: warning:")]


def stable(stdout: str) -> list[str]:
    """The program's output without what varies from run to run (the port, timings)."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("READY "):
            line = "READY"
        elif line.startswith("IDLE "):
            f = fields(line)
            line = f"IDLE ret={f['ret']} errno={f['errno']}"
        out.append(line)
    return out


class Server:
    """A process whose stdout lines are collected by a thread, started in
    its own session so that it and all its children can be killed."""

    def __init__(self, argv: Sequence[str], env: dict | None = None) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout.append(line)
            self.lines.put(line.rstrip("\n"))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def expect(self, prefix: str, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {prefix!r} line within {timeout} s; got {''.join(self.stdout)!r}")
            try:
                line = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    raise AssertionError(f"exited {self.proc.returncode} before {prefix!r}: {''.join(self.stdout)!r}")
                continue
            if line.startswith(prefix):
                return line

    def finish(self, timeout: float = 15) -> tuple[int, str, str]:
        """Wait for the exit; return (status, stdout, stderr)."""
        self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=5)
        return self.proc.returncode, "".join(self.stdout), "".join(self.stderr)

    def kill(self) -> None:
        """Kill the whole session (the launcher and the program), if still there."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for reader in self._readers:
            reader.join(timeout=5)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()


def payloads(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    sizes = [1, 2, 63, 64, 1000, 4096, 65535, 65536, 100_000]
    return [rng.randbytes(n) for n in sizes] + [b"\x00" * 3000, b"\r\nEND\r\n"]


def echo_round_trips(port: int, connections: int, seed: int, timeout: float = 10) -> list[bytes]:
    """Send each payload on each connection and read back as many bytes;
    return what came back, in order."""
    got = []
    for c in range(connections):
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            for data in payloads(seed + c):
                s.sendall(data)
                back = bytearray()
                while len(back) < len(data):
                    chunk = s.recv(len(data) - len(back))
                    assert chunk, "the server closed the connection"
                    back += chunk
                got.append(bytes(back))
    return got


# -- (a) the profile's parameters, read back inside the program ---------------


@pytest.mark.parametrize("create", ["1", "legacy"])
@pytest.mark.parametrize("profile", PROFILES)
def test_program_reads_back_the_profiles_epoll_params(launcher, echo, profile, create):
    r = run([*launcher, "--profile", profile, "--debug", "--", echo, "--print-params", "--conns", "0",
             "--create", create, "--extra-epolls", "1"])
    assert r.returncode == 0, r.stderr
    want = epoll_of(profile)
    got = line_of(r.stdout, "PARAMS")
    assert got == {
        "busy_poll_usecs": str(want["busy_poll_usecs"]),
        "busy_poll_budget": str(want["busy_poll_budget"]),
        "prefer_busy_poll": str(int(want["prefer_busy_poll"])),
    }
    # Every instance the program created was configured (both of them), or
    # none when the profile has no busy polling; and nothing went wrong.
    configured = [line for line in r.stderr.splitlines() if re.match(r"irqlab-preload: pid \d+: epfd \d+: ", line)]
    assert len(configured) == (2 if busy_polls(profile) else 0), r.stderr
    # One process: one PID on every line, and not the launcher's.
    pids = {int(line.split()[2].rstrip(":")) for line in configured}
    assert len(pids) <= 1 and os.getpid() not in pids, r.stderr
    assert not warnings_in(r.stderr)
    assert "DONE conns=0 bytes=0" in r.stdout


def test_set_overrides_an_epoll_knob(launcher, echo):
    r = run([*launcher, "--profile", "irq-suspend", "--set", "epoll.busy_poll_budget=16", "--",
             echo, "--print-params", "--conns", "0"])
    assert r.returncode == 0, r.stderr
    assert line_of(r.stdout, "PARAMS")["busy_poll_budget"] == "16"


# -- (b) the program computes the same thing ----------------------------------


@pytest.mark.parametrize(
    "profile, wait_fn",
    [(None, "wait"), ("no-coalescing", "wait"), ("irq-suspend", "wait"), ("irq-suspend", "pwait2")]
    + [("busy-wait", fn) for fn in WAIT_FNS],
)
def test_echo_bytes_identical_with_and_without_the_shim(launcher, echo, servers, profile, wait_fn):
    args = [echo, "--conns", "2", "--timeout-ms", "20000", "--wait", wait_fn]
    plain = Server(args)
    servers.append(plain)
    port = int(fields(plain.expect("READY"))["port"])
    want = echo_round_trips(port, 2, seed=7)
    status, plain_out, _ = plain.finish()
    assert status == 0
    assert want == [p for c in range(2) for p in payloads(7 + c)]

    if profile is None:
        return
    shimmed = Server([*launcher, "--profile", profile, "--", *args])
    servers.append(shimmed)
    port = int(fields(shimmed.expect("READY"))["port"])
    got = echo_round_trips(port, 2, seed=7)
    status, out, err = shimmed.finish()
    assert status == 0, err
    assert got == want
    assert stable(out) == stable(plain_out)
    assert err == ""


# -- (c) busy-wait never sleeps; irq-suspend sleeps ----------------------------

IDLE_MS = 300


def idle_wait(launcher: list[str], echo: str, profile: str | None, wait_fn: str) -> dict[str, float]:
    prefix = [*launcher, "--profile", profile, "--"] if profile else []
    r = run([*prefix, echo, "--conns", "0", "--idle-ms", str(IDLE_MS), "--wait", wait_fn])
    assert r.returncode == 0, r.stderr
    f = line_of(r.stdout, "IDLE")
    assert (f["ret"], f["errno"]) == ("0", "0"), "the idle wait ends by its timeout, with 0 events"
    return {k: float(f[k]) for k in ("waited_ms", "cpu_ms", "nvcsw", "runnable_ms")}


@pytest.mark.parametrize("wait_fn", WAIT_FNS)
def test_busy_wait_spins_through_an_idle_wait_and_irq_suspend_sleeps(launcher, echo, wait_fn):
    spin = idle_wait(launcher, echo, "busy-wait", wait_fn)
    sleep = idle_wait(launcher, echo, "irq-suspend", wait_fn)
    for m in (spin, sleep):
        # The caller's timeout is kept: no earlier, not much later.
        assert IDLE_MS - 1 <= m["waited_ms"] < IDLE_MS + 250, m
    # Busy-wait: the thread never blocks. It makes no voluntary context
    # switch, and it is runnable (on a CPU, or waiting for one when other
    # work competes for this 2-core machine) for the whole wait; it spends
    # that on the CPU when it has one. irq-suspend sleeps in ep_poll: one
    # voluntary switch and no CPU time. On a VM the host may deschedule the
    # whole guest (steal time), which counts neither as runnable nor as CPU
    # time, hence half the wait rather than all of it.
    assert spin["nvcsw"] <= 2, spin
    if spin["runnable_ms"] >= 0:
        assert spin["runnable_ms"] >= 0.5 * IDLE_MS, spin
        assert sleep["runnable_ms"] <= 30, sleep
    assert spin["cpu_ms"] > sleep["cpu_ms"] + 5, (spin, sleep)
    assert sleep["cpu_ms"] <= 30, sleep
    assert sleep["nvcsw"] >= 1, sleep


@pytest.mark.parametrize("wait_fn", WAIT_FNS)
@pytest.mark.parametrize("profile", [None, "busy-wait"])
def test_a_signal_handler_still_interrupts_the_wait(launcher, echo, servers, profile, wait_fn):
    prefix = [*launcher, "--profile", profile, "--"] if profile else []
    server = Server([*prefix, echo, "--sigwait", "--wait", wait_fn])
    servers.append(server)
    server.expect("READY")
    # The program is the launcher's child (or the process itself without one).
    pid = server.proc.pid if profile is None else _only_child(server.proc.pid)
    # A signal may come before the program is in its wait (held off the CPU
    # on a busy machine): handled, it leaves the wait to block, so send
    # again until the wait returns; every wait it ends returns EINTR.
    line = None
    for _ in range(50):
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            break  # it returned from its wait and exited: its line is on the way
        try:
            line = server.expect("WAIT", timeout=0.2)
            break
        except AssertionError:
            if server.proc.poll() is not None:
                break
    if line is None:
        line = server.expect("WAIT", timeout=5)
    assert fields(line) == {"ret": "-1", "errno": "EINTR", "handled": "1"}
    status, _, err = server.finish()
    assert status == 0, err


@pytest.fixture(scope="module")
def signal_wait() -> Iterator[str]:
    """tests/programs/epoll_signal_wait.c compiled (skips without cc)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc)")
    build = Path(tempfile.mkdtemp(prefix="irqlab-signal-wait-"))
    try:
        exe = build / "epoll_signal_wait"
        subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                        str(REPO / "tests" / "programs" / "epoll_signal_wait.c")],
                       check=True, capture_output=True, text=True, timeout=60)
        yield str(exe)
    finally:
        shutil.rmtree(build, ignore_errors=True)


# What the program's one wait of 400 ms meets (its arguments), and whether the
# kernel's own wait goes on to its timeout (True) or fails with EINTR (False).
SIGNAL_CASES = [
    ([], True),  # a child exits: SIGCHLD, ignored by default (issue 62, item 1)
    (["--signal", "winch"], True),
    (["--signal", "urg"], True),
    (["--signal", "cont"], True),
    (["--signal", "usr1", "--disposition", "ignore"], True),
    (["--wait", "pwait2", "--own-block", "--signal", "winch"], True),  # unblocked by the wait's mask only
    (["--signal", "usr1", "--disposition", "handler"], False),
    (["--signal", "chld", "--disposition", "handler"], False),
    (["--wait", "pwait", "--own-block", "--before"], False),  # pending before the wait: the kernel says EINTR
]


# Each case under every wait function, but those that name their own.
SIGNAL_RUNS = [
    ([*args, "--wait", fn] if "--wait" not in args else args, goes_on)
    for args, goes_on in SIGNAL_CASES
    for fn in (WAIT_FNS if "--wait" not in args else [None])
]


@pytest.mark.parametrize("args,goes_on", SIGNAL_RUNS, ids=lambda v: " ".join(v) if isinstance(v, list) else str(v))
def test_busy_wait_ends_on_a_signal_exactly_when_the_kernels_wait_does(launcher, signal_wait, args, goes_on):
    plain = run([signal_wait, *args])
    shimmed = run([*launcher, "--profile", "busy-wait", "--debug", "--", signal_wait, *args])
    assert plain.returncode == shimmed.returncode == 0, shimmed.stderr
    # The shim spun in this wait (it set the instance up as busy-wait).
    assert "nonblocking=1" in shimmed.stderr, shimmed.stderr
    for r in (plain, shimmed):
        f = line_of(r.stdout, "WAIT")
        if goes_on:
            # Not -1/EINTR a moment after the signal: the whole timeout, 0 events.
            assert (f["ret"], f["errno"]) == ("0", "0"), (r.args, r.stdout)
            assert float(f["waited_ms"]) >= 300, (r.args, r.stdout)
        else:
            assert (f["ret"], f["errno"]) == ("-1", "EINTR"), (r.args, r.stdout)
        assert f["handled"] == ("1" if "handler" in args else "0"), (r.args, r.stdout)


def _only_child(pid: int) -> int:
    """The one child process of ``pid`` (the program the launcher started)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat_line = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces, so split after ")".
            if int(stat_line.rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(entry.name))
    assert len(children) == 1, children
    return children[0]


# -- (d) when the kernel refuses, the program runs unchanged -------------------


def _refused(r: subprocess.CompletedProcess[str], plain: subprocess.CompletedProcess[str], errno_name: str) -> None:
    assert r.returncode == plain.returncode == 0, r.stderr
    assert stable(r.stdout) == stable(plain.stdout)
    warnings = warnings_in(r.stderr)
    assert len(warnings) == 1, r.stderr
    assert errno_name in warnings[0] and "EPIOCSPARAMS" in warnings[0]
    assert r.stderr.splitlines() == warnings, "the warning is the only line"
    # Busy-wait was switched off with the parameters: the idle wait slept.
    assert float(line_of(r.stdout, "IDLE")["cpu_ms"]) <= 30


REFUSED_ARGS = ["--print-params", "--conns", "0", "--extra-epolls", "3", "--idle-ms", "100"]


@pytest.mark.skipif(not (IS_ROOT and SETPRIV), reason="needs root and setpriv to run the program as nobody")
def test_budget_above_64_without_cap_net_admin_gives_one_eperm_warning(launcher, echo):
    as_nobody = [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", echo, *REFUSED_ARGS]
    plain = run(as_nobody)
    r = run([*launcher, "--profile", "busy-wait", "--set", "epoll.busy_poll_budget=65535", "--", *as_nobody])
    _refused(r, plain, "EPERM")


def test_busy_poll_usecs_above_s32_max_is_refused_before_the_program_runs(launcher, echo):
    # The kernel refuses busy_poll_usecs above S32_MAX (EINVAL); the knob
    # table says so once, and the launcher checks it before anything runs.
    r = run([*launcher, "--profile", "busy-wait", "--set", "epoll.busy_poll_usecs=3000000000", "--",
             echo, *REFUSED_ARGS])
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert "epoll.busy_poll_usecs" in r.stderr and "2147483647" in r.stderr, r.stderr


def test_the_shim_takes_busy_poll_usecs_up_to_s32_max_only(shim, echo):
    plain = run([echo, *REFUSED_ARGS])
    env = {**os.environ, "LD_PRELOAD": str(shim), "IRQLAB_BUSY_POLL_USECS": "2147483648",
           "IRQLAB_NONBLOCKING": "1", "IRQLAB_PRELOAD_DEBUG": "1"}
    r = run([echo, *REFUSED_ARGS], env=env)
    assert r.returncode == 0
    assert stable(r.stdout) == stable(plain.stdout)
    assert len(warnings_in(r.stderr)) == 1 and "IRQLAB_BUSY_POLL_USECS" in r.stderr, r.stderr
    assert "2147483647" in r.stderr, r.stderr


@pytest.mark.parametrize("value", ["lots", "-1", "65536", ""])
def test_a_malformed_variable_gives_one_warning_and_an_inactive_shim(shim, echo, value):
    plain = run([echo, *REFUSED_ARGS])
    env = {**os.environ, "LD_PRELOAD": str(shim), "IRQLAB_BUSY_POLL_BUDGET": value,
           "IRQLAB_BUSY_POLL_USECS": "1000", "IRQLAB_NONBLOCKING": "1", "IRQLAB_PRELOAD_DEBUG": "1"}
    r = run([echo, *REFUSED_ARGS], env=env)
    assert r.returncode == 0
    assert stable(r.stdout) == stable(plain.stdout)
    assert r.stderr.splitlines() == warnings_in(r.stderr) and len(warnings_in(r.stderr)) == 1, r.stderr
    assert "IRQLAB_BUSY_POLL_BUDGET" in r.stderr
    assert float(line_of(r.stdout, "IDLE")["cpu_ms"]) <= 30


def test_without_irqlab_variables_the_shim_does_nothing(shim, echo):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRQLAB_")}
    r = run([echo, *REFUSED_ARGS], env={**env, "LD_PRELOAD": str(shim)})
    assert r.returncode == 0 and r.stderr == ""
    assert line_of(r.stdout, "PARAMS") == {"busy_poll_usecs": "0", "busy_poll_budget": "0", "prefer_busy_poll": "0"}


# -- the launcher itself ----------------------------------------------------------


def test_exit_status_and_errors(launcher):
    assert run([*launcher, "--profile", "busy-wait", "--", "sh", "-c", "exit 7"]).returncode == 7
    assert run([*launcher, "--profile", "busy-wait", "--", "sh", "-c", "kill -TERM $$"]).returncode == 128 + 15
    r = run([*launcher, "--profile", "busy-wait", "--", "/nonexistent/program"])
    assert r.returncode == 127 and r.stderr.startswith("irqlab: error: cannot run")
    r = run([*launcher, "--profile", "no-such-profile", "--", "true"])
    assert r.returncode == 2 and r.stderr.startswith("irqlab: error:") and "no-such-profile" in r.stderr
    r = run([*launcher, "--profile", "busy-wait"])
    assert r.returncode == 2 and "command" in r.stderr
    r = run([*launcher, "--profile", "busy-wait", "--set", "napi.gro_flush_timeout=1", "--", "true"])
    assert r.returncode == 2 and "epoll." in r.stderr


def test_a_daemonizing_program_is_reported_with_the_pids_it_left(launcher):
    # The program forks a process that outlives it, as a daemon does; that
    # process has the shim mapped (LD_PRELOAD is inherited).
    r = run([*launcher, "--profile", "busy-wait", "--", "sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!"])
    try:
        assert r.returncode == 0, r.stderr
        left = int(r.stdout.split()[0])
        lines = r.stderr.splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith("irqlab: warning: sh exited but left 1 process running with the shim")
        assert f"(PID {left})" in lines[0] and "as a daemon does" in lines[0]
        os.kill(left, 0)  # still running
    finally:
        for pid in re.findall(r"PID (\d+)", r.stderr):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    # A program that waits for what it forked leaves nothing: no warning.
    r = run([*launcher, "--profile", "busy-wait", "--", "sh", "-c", "sleep 0.1 & wait"])
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_shim_detection_waits_out_an_exec_but_not_a_process_without_environment():
    # A process caught inside its execve reads an empty environment and has
    # no shim mapped yet; _has_shim looks again. One whose environment is
    # truly empty (env -i) is not the shim's, and the look is bounded.
    from irqlab.linux.exec_cmd import _has_shim

    bare = subprocess.Popen(["env", "-i", "sleep", "30"])
    with_shim = subprocess.Popen(["sleep", "30"], env={**os.environ, "LD_PRELOAD": str(find_shim())})
    try:
        deadline = time.monotonic() + 5
        while Path(f"/proc/{bare.pid}/cmdline").read_bytes().split(b"\0")[0] != b"sleep":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        started = time.monotonic()
        assert not _has_shim(bare.pid)
        assert time.monotonic() - started < 2
        assert _has_shim(with_shim.pid)
    finally:
        for p in (bare, with_shim):
            p.kill()
            p.wait()
    assert not _has_shim(bare.pid)  # gone


def test_environment_reaches_the_program(launcher):
    env = {**os.environ, "LD_PRELOAD": "", "KEEP_ME": "yes"}
    r = run([*launcher, "--profile", "busy-wait", "--", "sh", "-c",
             'echo "$KEEP_ME $IRQLAB_BUSY_POLL_USECS $IRQLAB_BUSY_POLL_BUDGET $IRQLAB_PREFER_BUSY_POLL '
             '$IRQLAB_NONBLOCKING $LD_PRELOAD"'], env=env)
    want = epoll_of("busy-wait")
    keep, usecs, budget, prefer, nonblocking, preload = r.stdout.split()
    assert (keep, usecs, budget, prefer, nonblocking) == (
        "yes", str(want["busy_poll_usecs"]), str(want["busy_poll_budget"]), "1", "1")
    assert preload.endswith("libirqlab_preload.so")


def test_sigterm_to_the_launcher_reaches_the_program(launcher, echo, servers):
    server = Server([*launcher, "--profile", "irq-suspend", "--", echo, "--conns", "5", "--timeout-ms", "20000"])
    servers.append(server)
    server.expect("READY")
    server.proc.send_signal(signal.SIGTERM)
    status, _, _ = server.finish(timeout=10)
    assert status == 128 + signal.SIGTERM


def test_ctrl_c_on_a_terminal_ends_the_program_and_the_launcher(launcher, echo):
    # The terminal sends SIGINT to the whole foreground group: the program
    # dies of it once, and the launcher reports 128 + SIGINT.
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child: become the launcher, or leave at once
        try:
            os.execv(launcher[0], [*launcher, "--profile", "irq-suspend", "--", echo, "--conns", "5",
                                   "--timeout-ms", "20000"])
        finally:
            os._exit(127)
    try:
        out = b""
        deadline = time.monotonic() + 10
        while b"READY" not in out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                out += os.read(fd, 4096)
        assert b"READY" in out, out
        os.write(fd, b"\x03")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGINT
                return
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    os.read(fd, 4096)
                except OSError as e:
                    if e.errno != errno.EIO:
                        raise
        raise AssertionError("the launcher did not exit after Ctrl-C")
    finally:
        try:
            os.killpg(pid, signal.SIGKILL)  # pty.fork made the child a session (and group) leader
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        os.close(fd)


def test_napi_dev_refusal_is_one_sentence_and_the_program_never_runs(launcher):
    # `lo` has no NAPI instance and `nosuch0` does not exist: the per-NAPI
    # part cannot be applied, so the program must not start at all.
    if os.geteuid() != 0:
        pytest.skip("--napi-dev needs root (the refusal then says so before looking at the device)")
    for dev, words in (("lo", "has no NAPI"), ("nosuch0", "no network device named")):
        r = run([*launcher, "--profile", "busy-wait", "--napi-dev", dev, "--", "echo", "RAN"])
        assert r.returncode == 2, (dev, r.stderr)
        assert "RAN" not in r.stdout
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("irqlab: error:") and words in lines[0], lines



def test_napi_dev_without_root_names_the_command_that_was_run(launcher, tmp_path):
    # The refusal used to name `irqlab linux apply`, which the user never ran.
    prefix: list[str] = []
    env = dict(os.environ)
    if IS_ROOT:
        if SETPRIV is None:
            pytest.skip("needs setpriv (util-linux) to run the launcher as nobody")
        prefix = [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        home = tmp_path / "home"
        home.mkdir()
        home.chmod(0o777)
        env["HOME"] = env["MPLCONFIGDIR"] = str(home)  # whatever the package imports must not need root's home
    r = run([*prefix, *launcher, "--profile", "busy-wait", "--napi-dev", "lo", "--", "echo", "RAN"], env=env)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "RAN" not in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("irqlab: error: irqlab linux exec --napi-dev needs root (CAP_NET_ADMIN)"), lines[0]
    assert "of lo" in lines[0] and "irqlab linux apply" not in lines[0], lines[0]


def _veth_skip_reason() -> str | None:
    if not IS_ROOT:
        return "a veth in network namespaces and napi-set need root"
    if shutil.which("ip") is None:
        return "iproute2 is needed"
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    if (major, minor) < (6, 13):
        return f"kernel {os.uname().release} is older than 6.13 (no per-NAPI settings)"
    return None


@pytest.mark.skipif(_veth_skip_reason() is not None, reason=_veth_skip_reason() or "")
def test_napi_dev_says_a_knob_changed_by_hand_while_the_program_ran(launcher):
    # The program itself is the hand: it writes the device-wide
    # gro_flush_timeout, which Linux 6.13+ copies to every NAPI, over the
    # profile's 20000 ns. The restore puts 0 back and says so in the line
    # `irqlab linux restore` prints.
    from irqlab.testbed.netns import CLIENT_NS, SERVER_DEV, SERVER_NS, Testbed, existing_namespaces

    if existing_namespaces() & {SERVER_NS, CLIENT_NS}:
        pytest.skip("the testbed's namespaces are in use")
    bed = Testbed(1, 0)
    try:
        bed.create()
        r = run(["ip", "netns", "exec", SERVER_NS, *launcher, "--profile", "irq-suspend", "--napi-dev", SERVER_DEV,
                 "--", "sh", "-c", f"echo 5000 > /sys/class/net/{SERVER_DEV}/gro_flush_timeout && echo RAN"])
        show = run(["ip", "netns", "exec", SERVER_NS, sys.executable, "-m", "irqlab", "linux", "show", SERVER_DEV,
                    "--json"])
    finally:
        bed.destroy()
    assert r.returncode == 0 and r.stdout == "RAN\n", r.stderr
    napi = json.loads(show.stdout)["napis"][0]
    assert r.stderr.splitlines() == [
        f"irqlab: restore: {SERVER_DEV} NAPI {napi['id']} napi.gro_flush_timeout was 20000 ns when applied, is now "
        "5000 ns (changed since apply); restoring 0 ns"], r.stderr
    assert napi["gro_flush_timeout"] == 0


# -- (e) memcached from the distribution ------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memcached_set_get(port: int, timeout: float = 10) -> bytes:
    deadline = time.monotonic() + timeout
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with s:
        s.sendall(b"set irqlab 0 0 11\r\nhello world\r\nget irqlab\r\n")
        reply = b""
        while not reply.endswith(b"END\r\n") and time.monotonic() < deadline:
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
        return reply


@pytest.mark.skipif(MEMCACHED is None, reason="memcached is not installed (apt-get install memcached)")
@pytest.mark.parametrize("profile", ["irq-suspend", "busy-wait"])
def test_memcached_set_get_under_a_profile(launcher, servers, profile):
    port = free_port()
    argv = [MEMCACHED, "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", "1"]
    if IS_ROOT:
        argv += ["-u", "nobody"]
    server = Server([*launcher, "--profile", profile, "--debug", "--", *argv])
    servers.append(server)
    reply = memcached_set_get(port)
    assert reply == b"STORED\r\nVALUE irqlab 0 11\r\nhello world\r\nEND\r\n"
    server.proc.send_signal(signal.SIGTERM)  # passed on; memcached exits cleanly
    status, _, err = server.finish(timeout=10)
    assert status == 0, err
    configured = re.findall(r"irqlab-preload: pid \d+: epfd \d+: busy_poll_usecs=(\d+) budget=(\d+) prefer=(\d)", err)
    want = epoll_of(profile)
    assert configured, err
    assert set(configured) == {(str(want["busy_poll_usecs"]), str(want["busy_poll_budget"]),
                                str(int(want["prefer_busy_poll"])))}
    assert not warnings_in(err)


def test_busy_wait_spins_only_where_a_napi_can_be_polled_by_default(launcher, echo, monkeypatch):
    # Without --spin-all the shim spins only in epoll instances watching a
    # socket with a NAPI id (none on loopback): the idle wait sleeps, as it
    # would in a program's dispatcher thread.
    monkeypatch.delenv("IRQLAB_SPIN_ALL")
    m = idle_wait(launcher, echo, "busy-wait", "wait")
    assert m["cpu_ms"] <= 30, m
    assert m["nvcsw"] >= 1, m


# -- (f) the control file, under every profile ------------------------------------


def epoll_params_of(pid: int) -> dict[int, tuple[int, int, int]]:
    """(busy_poll_usecs, busy_poll_budget, prefer_busy_poll) of every epoll
    instance of process ``pid``, by fd, as the kernel holds them: each fd
    whose /proc link reads ``anon_inode:[eventpoll]`` is copied here with
    pidfd_getfd(2) (438 on every architecture) and asked EPIOCGPARAMS. Kept
    apart from irqlab.linux.control, which the last test checks against it."""
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    out = {}
    pidfd = os.pidfd_open(pid)
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{name}") != "anon_inode:[eventpoll]":
                    continue
            except OSError:
                continue
            local = libc.syscall(ctypes.c_long(438), ctypes.c_int(pidfd), ctypes.c_int(int(name)), ctypes.c_uint(0))
            if local < 0:
                continue  # closed meanwhile
            try:
                buf = bytearray(8)
                fcntl.ioctl(local, EPIOCGPARAMS, buf)
                out[int(name)] = struct.unpack("=IHBx", buf)
            finally:
                os.close(local)
    finally:
        os.close(pidfd)
    return out


def _poke(port: int) -> None:
    """One memcached request: wakes its dispatcher and a worker from their
    epoll waits, where the shim looks at the control file."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"version\r\n")
            s.recv(64)
    except OSError:
        pass


def _until(pid: int, port: int, want: Callable[[dict[int, tuple[int, int, int]]], bool], timeout: float = 8
           ) -> dict[int, tuple[int, int, int]]:
    deadline = time.monotonic() + timeout
    while True:
        params = epoll_params_of(pid)
        if want(params):
            return params
        if time.monotonic() > deadline:
            raise AssertionError(f"the kernel holds {params}")
        _poke(port)
        time.sleep(0.05)


@pytest.mark.skipif(MEMCACHED is None, reason="memcached is not installed (apt-get install memcached)")
@pytest.mark.skipif(not IS_ROOT, reason="reading another user's epoll instances back (pidfd_getfd) needs root")
@pytest.mark.parametrize("profile", PROFILES)
def test_a_control_file_value_reaches_every_epoll_instance_under_every_profile(launcher, servers, profile, monkeypatch):
    from irqlab.linux import control as ctl
    from irqlab.linux.exec_cmd import write_control

    # No spinning on two cores while the test waits (loopback sockets carry
    # no NAPI id, so without --spin-all busy-wait spins nowhere).
    monkeypatch.delenv("IRQLAB_SPIN_ALL")
    d = Path(tempfile.mkdtemp(prefix="irqlab-t32c-"))
    try:
        d.chmod(0o755)  # memcached runs as nobody and reads the file
        control = d / "control"
        port = free_port()
        server = Server([*launcher, "--profile", profile, "--control", str(control), "--debug", "--", MEMCACHED,
                         "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", "2", "-u", "nobody"])
        servers.append(server)
        want = epoll_of(profile)
        budget, prefer = want["busy_poll_budget"], int(want["prefer_busy_poll"])
        memcached_set_get(port)  # up and serving
        pid = _only_child(server.proc.pid)
        # memcached's dispatcher and two workers: an event base, so an epoll
        # instance, each; all with the profile's values.
        params = _until(pid, port, lambda p: len(p) >= 3 and set(p.values()) == {(want["busy_poll_usecs"], budget,
                                                                                 prefer)})
        for value in (50, 0, 7):
            write_control(str(control), value)
            params = _until(pid, port, lambda p: set(p.values()) == {(value, budget, prefer)})
        # irqlab linux tune's read-back sees what the kernel holds.
        assert sorted((i.pid, i.fd, i.busy_poll_usecs, i.busy_poll_budget, i.prefer_busy_poll)
                      for i in ctl.instances(str(control))) == sorted((pid, fd, *p) for fd, p in params.items())
        server.proc.send_signal(signal.SIGTERM)
        status, _, err = server.finish(timeout=10)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert status == 0, err
    # Every instance the kernel showed is one the shim recorded, and the
    # values came from the file, with no warning.
    recorded = {int(fd) for fd in re.findall(r"irqlab-preload: pid \d+: epfd (\d+): ", err)}
    assert set(params) <= recorded, err
    taken = re.findall(r"irqlab-preload: pid \d+: control: busy_poll_usecs=(\d+) on (\d+) epoll instance", err)
    assert [v for v, _ in taken] == ["50", "0", "7"] and all(int(n) == len(params) for _, n in taken), err
    assert not warnings_in(err)


# -- issue 62, item 8: a budget above 64 needs CAP_NET_ADMIN --------------------


def _as_nobody(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A prefix that runs a command as nobody, and an environment whose home
    nobody can write (whatever the package imports must not need root's)."""
    if not (IS_ROOT and SETPRIV):
        pytest.skip("needs root and setpriv to run as nobody")
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o777)
    env = {**os.environ, "HOME": str(home), "MPLCONFIGDIR": str(home)}
    return [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups"], env


def test_a_budget_above_64_without_cap_net_admin_is_refused_before_the_program_runs(launcher, tmp_path):
    # The program runs with the launcher's credentials: as nobody it cannot
    # have CAP_NET_ADMIN, so EPIOCSPARAMS would refuse every instance (EPERM).
    nobody, env = _as_nobody(tmp_path)
    r = run([*nobody, *launcher, "--profile", "busy-wait", "--set", "epoll.busy_poll_budget=65", "--",
             "echo", "RAN"], env=env)
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: epoll.busy_poll_budget must be from 0 to 64"), lines
    assert "CAP_NET_ADMIN" in lines[0] and "got 65" in lines[0], lines[0]
    # 64 and below are the kernel's to take from anyone.
    r = run([*nobody, *launcher, "--profile", "busy-wait", "--set", "epoll.busy_poll_budget=64", "--",
             "echo", "RAN"], env=env)
    assert (r.returncode, r.stdout) == (0, "RAN\n"), r.stderr


def test_a_refused_epiocsparams_is_warned_even_after_another_warning(shim, echo, tmp_path):
    # A warning about the control file used to use up the process's one
    # warning, and EPIOCSPARAMS then failed (EPERM as nobody) without a word.
    nobody, env = _as_nobody(tmp_path)
    env.update({"LD_PRELOAD": str(shim), "IRQLAB_BUSY_POLL_USECS": "1000", "IRQLAB_BUSY_POLL_BUDGET": "65535",
                "IRQLAB_NONBLOCKING": "1", "IRQLAB_CONTROL": "relative/control"})
    r = run([*nobody, echo, *REFUSED_ARGS], env=env)
    assert r.returncode == 0, r.stderr
    warnings = warnings_in(r.stderr)
    assert len(warnings) == 2, r.stderr
    assert "IRQLAB_CONTROL" in warnings[0] and "not an absolute path" in warnings[0], warnings
    assert "EPERM" in warnings[1] and "EPIOCSPARAMS" in warnings[1], warnings
    assert line_of(r.stdout, "PARAMS") == {"busy_poll_usecs": "0", "busy_poll_budget": "0", "prefer_busy_poll": "0"}


# -- issue 62, item 7: the control file reaches every epoll fd and says what it cannot take


HIGH_FD_PROGRAM = r"""
import fcntl, os, resource, select, struct, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 4200:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(4200, hard), hard))
for fd in range(3, 4100):  # the epoll instance comes above fd 4096
    os.dup2(0, fd)
ep = select.epoll()
print(f"READY fd={ep.fileno()}", flush=True)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    ep.poll(0.02)  # each wait reads the control file (every 20 ms at most)
    usecs = struct.unpack("IHBB", fcntl.ioctl(ep.fileno(), 0x80088A02, bytes(8)))[0]
    if usecs == 77:
        print("SET 77", flush=True)
        sys.exit(0)
print("TIMEOUT", flush=True)
sys.exit(3)
"""


def _write_control(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # whole, as irqlab writes it


def test_a_control_value_reaches_an_epoll_fd_above_4096_and_a_bad_line_is_warned(launcher, tmp_path):
    if resource_hard_limit() < 4200:
        pytest.skip("RLIMIT_NOFILE's hard limit is below 4200")
    control = tmp_path / "control"
    server = Server([*launcher, "--profile", "no-coalescing", "--control", str(control), "--debug", "--",
                     sys.executable, "-c", HIGH_FD_PROGRAM])
    try:
        fd = int(fields(server.expect("READY"))["fd"])
        assert fd >= 4096
        _write_control(control, "busy_poll_usecs=abc\n")
        warning = _stderr_line(server, "irqlab-preload: warning: the control file")
        assert "busy_poll_usecs=abc" in warning and "busy_poll_usecs=N" in warning, warning
        assert "2147483647" in warning and "stays 0" in warning, warning
        _write_control(control, "busy_poll_usecs=77\n")
        assert server.expect("SET", timeout=15) == "SET 77"
        status, _, err = server.finish()
    finally:
        server.kill()
    assert status == 0, err
    assert "control: busy_poll_usecs=77 on 1 epoll instance(s)" in err, err
    assert sum("busy_poll_usecs=abc" in line for line in err.splitlines()) == 1, "one warning per text, not per read"


def resource_hard_limit() -> int:
    import resource

    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def _stderr_line(server: "Server", prefix: str, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(server.stderr):
            if line.startswith(prefix):
                return line.rstrip("\n")
        time.sleep(0.05)
    raise AssertionError(f"no stderr line {prefix!r} within {timeout} s: {''.join(server.stderr)!r}")


# -- issue 62, item 13: --control never replaces a file irqlab did not write ------


def test_control_refuses_a_file_irqlab_did_not_write_unless_forced(launcher, tmp_path):
    scenario = tmp_path / "scenario.toml"
    scenario.write_text('name = "mine"\n[load]\nqps = 1000\n')
    r = run([*launcher, "--profile", "busy-wait", "--control", str(scenario), "--", "echo", "RAN"])
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: --control"), lines
    assert "not a control file irqlab wrote" in lines[0] and "--force" in lines[0], lines[0]
    assert scenario.read_text() == 'name = "mine"\n[load]\nqps = 1000\n'
    # A control file irqlab wrote, or an empty one (mktemp's), is taken.
    for text in ("busy_poll_usecs=5\n", ""):
        control = tmp_path / "control"
        control.write_text(text)
        r = run([*launcher, "--profile", "busy-wait", "--control", str(control), "--", "echo", "RAN"])
        assert (r.returncode, r.stdout) == (0, "RAN\n"), r.stderr
        assert control.read_text() == "busy_poll_usecs=1000\n"
    r = run([*launcher, "--profile", "busy-wait", "--control", str(scenario), "--force", "--", "echo", "RAN"])
    assert (r.returncode, r.stdout) == (0, "RAN\n"), r.stderr
    assert scenario.read_text() == "busy_poll_usecs=1000\n"
    # A FIFO is never replaced, --force or not.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run([*launcher, "--profile", "busy-wait", "--control", str(fifo), "--force", "--", "echo", "RAN"])
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "FIFO" in r.stderr.upper(), r.stderr
    assert stat_is_fifo(fifo)


def stat_is_fifo(path: Path) -> bool:
    import stat

    return stat.S_ISFIFO(os.lstat(path).st_mode)
