"""``irqlab linux tune``.

Everywhere: the load command it accepts, and ``--knob busy_poll_usecs
--control FILE`` against a fake of the kernel's read-back (each value is
read back before its slice; a value that never arrives, or a FILE no program
uses, stops the tuner with an error and the original back).

Live (root; skipped elsewhere, saying why): on the veth testbed, memcached
under ``irqlab linux exec --profile irq-suspend`` in the server namespace,
the load from the client namespace, the tuner changing the server veth's
``gro_flush_timeout``; on loopback, memcached under ``--profile
no-coalescing --control FILE`` with its ``busy_poll_usecs`` tuned and read
back, and one whose shim is inactive, which the tuner finds out.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import memcached_irq_suspend_testbed, memcached_on_veth_skip_reason, server_gro_flush_timeout, wait_listening

ROOT = Path(__file__).resolve().parents[2]
IRQLAB = Path(sys.executable).with_name("irqlab")


def _skip_reason() -> str | None:
    return memcached_on_veth_skip_reason("tuning a real device needs root (network namespaces, napi-set)", "per-NAPI settings")


live = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")

LOAD = "ip netns exec irqlab-tb-cli irqlab loadgen --server 198.18.0.1:11211 --connections 8 --no-preload"


@pytest.fixture(scope="module")
def bed():
    yield from memcached_irq_suspend_testbed()


def _tune(*extra: str) -> subprocess.Popen[str]:
    cmd = ["ip", "netns", "exec", "irqlab-tb-srv", str(IRQLAB), "linux", "tune", "irqlab-tb0", "--knob",
           "gro_flush_timeout", "--range", "0:200000", "--objective", "throughput", "--load", LOAD, "--slice", "0.3",
           *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@live
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
    # A 5 s budget may end the search before it converges: the best is a measured value all the same.
    assert result["steps"][result["best_step"] - 1]["value"] == result["best"], result
    # The device held other values while the tuner ran, and the original after.
    assert seen - {original}, seen
    assert server_gro_flush_timeout() == original
    assert result["left"] == "original" and result["original"][0]["value"] == original
    assert result["elapsed_s"] <= 5 + 5  # the budget, plus one slice's run-down
    from irqlab.results import load

    frame = load(tmp_path / "tune")
    assert len(frame) == len(result["steps"]) and "gro_flush_timeout" in frame.columns


@live
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


@live
def test_tune_refuses_a_knob_the_device_has_not(bed):
    proc = subprocess.run(["ip", "netns", "exec", "irqlab-tb-srv", str(IRQLAB), "linux", "tune", "irqlab-tb0",
                           "--knob", "rx-usecs", "--range", "0:64", "--objective", "p99", "--load", LOAD],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "does not accept coalescing parameter rx-usecs" in proc.stderr and proc.stderr.count("\n") == 1


@live
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
        wait_listening("irqlab-tb-srv", "198.18.0.1", 11212)
        load = "ip netns exec irqlab-tb-cli irqlab loadgen --server 198.18.0.1:11212 --connections 4 --records 100"
        proc = subprocess.run(["ip", "netns", "exec", "irqlab-tb-srv", str(IRQLAB), "linux", "tune", "irqlab-tb0",
                               "--knob", "busy_poll_usecs", "--range", "0:200", "--control", str(control),
                               "--objective", "throughput", "--load", load, "--slice", "0.3", "--budget", "5",
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


# -- the load command (everywhere) ------------------------------------------------------------


@pytest.fixture
def loadgen_binary(monkeypatch):
    import irqlab.loadgen as loadgen

    monkeypatch.setattr(loadgen, "find_binary", lambda: Path("/opt/irqlab-loadgen"))
    return "/opt/irqlab-loadgen"


@pytest.mark.skipif(not IRQLAB.is_file(), reason="the irqlab command is not installed beside this Python (make setup)")
def test_the_load_may_name_the_irqlab_command_by_any_path_the_shell_resolves(loadgen_binary, monkeypatch, tmp_path):
    from irqlab.linux.tune_cmd import parse_load

    for program in ("irqlab", str(IRQLAB), os.path.relpath(IRQLAB)):
        assert parse_load(f"{program} loadgen --server 127.0.0.1:1") == [loadgen_binary, "--server", "127.0.0.1:1"]
    assert parse_load(f"ip netns exec cli {IRQLAB} loadgen") == ["ip", "netns", "exec", "cli", loadgen_binary]
    # Another name on PATH for the same program, as the shell would find it.
    (tmp_path / "lab").symlink_to(IRQLAB)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert parse_load("lab loadgen") == [loadgen_binary]
    # The load generator binary itself, by any path, as before.
    assert parse_load("/somewhere/irqlab-loadgen --connections 2") == [loadgen_binary, "--connections", "2"]


def test_a_load_naming_another_program_is_refused_saying_what_it_is(loadgen_binary):
    from irqlab.linux.tune_cmd import TuneError, parse_load

    echo = shutil.which("echo")
    for text, said in (("/bin/echo loadgen", "(got '/bin/echo loadgen'; /bin/echo is not the irqlab command)"),
                       ("echo loadgen", f"; echo resolves to {echo}, not to the irqlab command)"),
                       ("no-such-irqlab loadgen", "; no-such-irqlab is not found)"),
                       ("python -m irqlab loadgen", "(got 'python -m irqlab loadgen')")):
        with pytest.raises(TuneError) as e:
            parse_load(text)
        message = str(e.value)
        assert message.startswith("--load must be an `irqlab loadgen ...` command") and said in message, message


# -- busy_poll_usecs through the control file, against a fake kernel (everywhere) -------------


class FakeProgram:
    """A program using the control file, as ``irqlab.linux.control.instances``
    reads it back: two epoll instances that take the file's value ``lag``
    read-backs after it changed, or only when the load runs (``on_load``), or
    never; ``held`` is what they hold."""

    def __init__(self, control: Path, held: int, lag: int = 0, on_load: bool = False, never: bool = False) -> None:
        self.control, self.held, self.lag, self.on_load, self.never = control, held, lag, on_load, never
        self.seen: int | None = None
        self.reads = 0

    def instances(self, path: str) -> list:
        from irqlab.linux.control import EpollInstance
        from irqlab.linux.exec_cmd import read_control

        assert Path(path) == self.control
        value = read_control(path)
        if value != self.seen:
            self.seen, self.reads = value, 0
        self.reads += 1
        if not (self.never or self.on_load) and self.reads > self.lag:
            self.held = value
        return [EpollInstance(4242, "fakemc", fd, self.held, 64, 1) for fd in (3, 7)]

    def load_ran(self) -> None:
        if self.on_load and not self.never:
            from irqlab.linux.exec_cmd import read_control

            self.held = read_control(str(self.control))


@pytest.fixture
def control_tune(monkeypatch, tmp_path, loadgen_binary):
    """``tune(program, *extra)``: ``irqlab linux tune lo --knob busy_poll_usecs`` with
    ``program`` (a FakeProgram, or None for the real read-back) behind a control
    file holding 64; returns (status, slices), each slice (seconds, the file's
    value, what the program held) when the load started."""
    import irqlab.linux.control as ctl
    import irqlab.linux.tune_cmd as tune_cmd
    from irqlab.cli import main
    from irqlab.linux.exec_cmd import read_control

    control = tmp_path / "control"
    control.write_text("busy_poll_usecs=64\n")
    monkeypatch.setattr(tune_cmd, "_CONTROL_IDLE_S", 0.02)
    monkeypatch.setattr(tune_cmd, "_CONTROL_WAIT_S", 0.2)

    def tune(program: FakeProgram | None, *extra: str) -> tuple[int, list[tuple[float, int, int | None]]]:
        slices: list[tuple[float, int, int | None]] = []

        def measure(load: list[str], slice_s: float, cpus: object, **budget: object) -> dict[str, float]:
            slices.append((slice_s, read_control(str(control)), None if program is None else program.held))
            if program is not None:
                program.load_ran()
            value = read_control(str(control))
            return {"throughput": 1000.0 - abs(value - 120), "p99": 1.0, "cpu_per_request": 1.0, "errors": 0.0,
                    "wall_s": 0.01}

        monkeypatch.setattr(tune_cmd, "measure_slice", measure)
        if program is not None:
            monkeypatch.setattr(ctl, "instances", program.instances)
        status = main(["linux", "tune", "lo", "--knob", "busy_poll_usecs", "--range", "0:200", "--control",
                       str(control), "--objective", "throughput", "--load", "irqlab loadgen --server 127.0.0.1:1",
                       "--slice", "0.5", "--budget", "600", *extra])
        return status, slices

    return control, tune


def test_each_busy_poll_usecs_is_read_back_before_its_slice(control_tune, monkeypatch, capsys):
    import irqlab.linux.tune_cmd as tune_cmd

    control, tune = control_tune
    monkeypatch.setattr(tune_cmd, "_CONTROL_IDLE_S", 5.0)  # three read-backs take about 30 ms
    program = FakeProgram(control, held=64, lag=3)
    status, slices = tune(program)
    assert status == 0, capsys.readouterr().err
    measured = [s for s in slices if s[0] == 0.5]
    assert len(measured) >= 4 and len({v for _, v, _ in measured}) >= 3
    # Every slice ran with the kernel holding the file's value, and the
    # program took each value within the wait: no load was run to wake it.
    assert all(value == held for _, value, held in measured), measured
    assert [s[0] for s in slices].count(0.2) == 1, "only the check before the first change"
    assert program.held == int(control.read_text().split("=")[1]) != 64, "the best value, in the kernel"


def test_an_idle_program_is_woken_by_the_load_before_its_slice_is_measured(control_tune, capsys):
    control, tune = control_tune
    program = FakeProgram(control, held=64, on_load=True)
    status, slices = tune(program, "--restore")
    assert status == 0, capsys.readouterr().err
    measured = [s for s in slices if s[0] == 0.5]
    assert measured and all(value == held for _, value, held in measured), slices
    # One unmeasured 0.2 s load per new value (plus the check before the first change).
    assert [s[0] for s in slices].count(0.2) >= len({v for _, v, _ in measured}), slices
    assert control.read_text() == "busy_poll_usecs=64\n" and program.held == 64


def test_a_value_that_never_reaches_the_kernel_stops_the_search_and_puts_the_file_back(control_tune, capsys):
    control, tune = control_tune
    status, slices = tune(FakeProgram(control, held=64, never=True))
    err = capsys.readouterr().err
    assert status == 2, err
    # Only the original, 64, as the kernel held it before the first change.
    assert [s for s in slices if s[0] == 0.5] == [(0.5, 64, 64)], "nothing was measured under a value the kernel did not hold"
    assert control.read_text() == "busy_poll_usecs=64\n"
    assert f"the search did not finish; busy_poll_usecs on {control} is back to its original value (64)" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("irqlab: error: busy_poll_usecs=") and "1 more of its 2 instances" in last, last
    assert f"in {control} did not reach the kernel: epoll fd 3 of PID 4242 (fakemc) still holds 64 after" in last, last


def test_a_kernel_not_holding_the_files_value_is_found_before_the_first_change(control_tune, capsys):
    control, tune = control_tune
    status, slices = tune(FakeProgram(control, held=0, never=True))
    err = capsys.readouterr().err
    assert status == 2 and "did not finish" not in err, err
    assert err.strip().splitlines()[-1].startswith("irqlab: error: busy_poll_usecs=64 in "), err
    assert all(value == 64 for _, value, _ in slices) and control.read_text() == "busy_poll_usecs=64\n"


def test_a_control_file_no_program_uses_is_refused_before_anything(control_tune, capsys):
    control, tune = control_tune
    status, slices = tune(None)
    err = capsys.readouterr().err
    assert status == 2 and slices == [], "refused before the load ran once"
    assert err.startswith(f"irqlab: error: no running program uses --control {control} ") and err.count("\n") == 1, err
    assert control.read_text() == "busy_poll_usecs=64\n"


def test_a_read_back_the_kernel_does_not_allow_is_refused_before_anything(control_tune, monkeypatch, capsys):
    import irqlab.linux.control as ctl

    control, tune = control_tune

    def denied(path: str) -> list:
        raise ctl.ReadBackError("reading back the epoll instances of PID 7 (memcached) needs ptrace access to it "
                                "(pidfd_getfd: permission denied); run irqlab linux tune as root")

    program = FakeProgram(control, held=64)
    program.instances = denied  # type: ignore[method-assign]
    status, slices = tune(program)
    err = capsys.readouterr().err
    assert status == 2 and slices == [] and err.count("\n") == 1 and "needs ptrace access" in err, err
    assert control.read_text() == "busy_poll_usecs=64\n"


def test_busy_poll_usecs_above_the_kernels_limit_is_refused(control_tune, capsys):
    from irqlab.cli import main

    control, _ = control_tune
    status = main(["linux", "tune", "lo", "--knob", "busy_poll_usecs", "--range", "0:2147483648", "--control",
                   str(control), "--objective", "throughput", "--load", "irqlab loadgen --server 127.0.0.1:1"])
    assert status == 2
    assert "--range must have 0 <= LOW < HIGH <= 2147483647 for busy_poll_usecs" in capsys.readouterr().err


# -- busy_poll_usecs on loopback, read back from the kernel (root) -------------------------------


def _loopback_skip_reason() -> str | None:
    import fcntl
    import select

    if os.geteuid() != 0:
        return "reading memcached's epoll instances back (pidfd_getfd) and running it as nobody need root"
    if shutil.which("memcached") is None:
        return "Debian's memcached is not installed"
    ep = select.epoll()
    try:
        fcntl.ioctl(ep.fileno(), 0x80088A02, bytearray(8))  # EPIOCGPARAMS
    except OSError:
        return f"kernel {os.uname().release} has no EPIOCGPARAMS (Linux 6.9+)"
    finally:
        ep.close()
    return None


loopback = pytest.mark.skipif(_loopback_skip_reason() is not None, reason=_loopback_skip_reason() or "")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serving(port: int, proc: subprocess.Popen[str], timeout: float = 20) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"version\r\n")
                if s.recv(64).startswith(b"VERSION"):
                    return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"memcached is not serving on port {port}")


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    return err


@pytest.fixture
def control_dir():
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="irqlab-t32c-"))
    d.chmod(0o755)  # memcached runs as nobody and reads the file
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _tune_control(control: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    # The load names the irqlab command by its full path (as a script would).
    load = f"{IRQLAB} loadgen --server 127.0.0.1:{port} --connections 2 --records 100"
    return subprocess.Popen([str(IRQLAB), "linux", "tune", "lo", "--knob", "busy_poll_usecs", "--range", "0:200",
                             "--control", str(control), "--objective", "throughput", "--load", load, "--slice", "0.2",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@loopback
def test_tune_sets_and_reads_back_busy_poll_usecs_under_a_profile_without_busy_polling(control_dir):
    from irqlab.linux import control as ctl

    control, port = control_dir / "control", _free_port()
    mc = subprocess.Popen([str(IRQLAB), "linux", "exec", "--profile", "no-coalescing", "--control", str(control), "--",
                           shutil.which("memcached"), "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", "2", "-u",
                           "nobody"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    seen: set[int] = set()
    try:
        _serving(port, mc)
        before = ctl.instances(str(control))
        assert len(before) >= 3 and {i.busy_poll_usecs for i in before} == {0}, before
        proc = _tune_control(control, port, "--budget", "4", "--restore", "--json")
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            seen.update(i.busy_poll_usecs for i in ctl.instances(str(control)))
            time.sleep(0.02)
        out, err = proc.communicate(timeout=60)
        after = ctl.instances(str(control))
    finally:
        mc_err = _stop(mc)
    assert proc.returncode == 0, err
    result = json.loads(out)
    values = {s["value"] for s in result["steps"]}
    assert len(values) >= 2 and result["left"] == "original", result
    # The kernel held the tuner's values while it ran (before this fix it
    # held 0 throughout under this profile), and the original after.
    assert seen - {0} and seen <= values | {0}, (seen, values)
    assert {i.busy_poll_usecs for i in after} == {0} and len(after) == len(before), after
    assert control.read_text() == "busy_poll_usecs=0\n"
    assert "irqlab-preload: warning" not in mc_err, mc_err


@loopback
def test_tune_stops_and_restores_when_the_shim_does_not_take_the_control_file(control_dir):
    from irqlab.linux.exec_cmd import find_shim, write_control

    shim = find_shim()
    if shim is None:
        pytest.skip("the preload shim is not built (make setup)")
    control, port = control_dir / "control", _free_port()
    write_control(str(control), 0)
    # A shim made inactive by a bad variable: it warns once and never reads
    # the file, so the kernel keeps 0 whatever the file says.
    env = {**os.environ, "LD_PRELOAD": str(shim), "IRQLAB_CONTROL": str(control), "IRQLAB_BUSY_POLL_BUDGET": "lots"}
    mc = subprocess.Popen([shutil.which("memcached"), "-U", "0", "-l", "127.0.0.1", "-p", str(port), "-t", "1", "-u",
                           "nobody"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    try:
        _serving(port, mc)
        started = time.monotonic()
        proc = _tune_control(control, port, "--budget", "60")
        out, err = proc.communicate(timeout=120)
        elapsed = time.monotonic() - started
    finally:
        mc_err = _stop(mc)
    assert proc.returncode == 2 and out == "", err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("irqlab: error: busy_poll_usecs="), err
    assert "did not reach the kernel: epoll fd" in lines[-1], err
    assert "(memcached) still holds 0 after" in lines[-1], err
    assert f"the search did not finish; busy_poll_usecs on {control} is back to its original value (0)" in err
    assert control.read_text() == "busy_poll_usecs=0\n"
    assert elapsed < 30, "stopped at the first value, not at the end of the budget"
    warnings = [line for line in mc_err.splitlines() if line.startswith("irqlab-preload: warning:")]
    assert len(warnings) == 1 and "IRQLAB_BUSY_POLL_BUDGET" in warnings[0], mc_err


def _fake_load(report: dict[str, object], code: int) -> list[str]:
    """A load command that prints ``report`` as the generator's JSON and exits ``code``."""
    return [sys.executable, "-c", f"import sys; print({json.dumps(report)!r}); sys.exit({code})", "--"]


def test_a_slice_whose_generator_fell_behind_its_schedule_stops_the_tuner() -> None:
    import irqlab.linux.tune_cmd as tune_cmd

    # Exit 3 with schedule_kept false: the slice measured the generator.
    behind = {"achieved_qps": 30000.0, "latency_us": {"p99": 900.0}, "errors": 0, "schedule_kept": False,
              "late_fraction": 0.123, "late_us": 1000}
    with pytest.raises(tune_cmd.TuneError, match=r"fell behind its open-loop schedule in a slice \(12.3 % of its sends"):
        tune_cmd.measure_slice(_fake_load(behind, 3), 0.01, None)
    # The same report with the schedule kept (or a closed loop: null) is measured.
    for kept in (True, None):
        got = tune_cmd.measure_slice(_fake_load({**behind, "schedule_kept": kept}, 0), 0.01, None)
        assert got["throughput"] == 30000.0 and got["p99"] == 900.0
    # Any other status is the load command failing.
    with pytest.raises(tune_cmd.TuneError, match="the load command failed"):
        tune_cmd.measure_slice(_fake_load(behind, 4), 0.01, None)


# -- the best reported is a value a slice measured (everywhere) ----------------------------------


class SliceClock:
    """``time`` for the tuner: only slices move it, each by its length, so a
    budget ends the search at a chosen step; and each reading by ``stall``
    (a host too busy to run the tuner)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.stall = 0.0

    def monotonic(self) -> float:
        self.now += self.stall
        return self.now - self.stall

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class OneKnob:
    """A device with one NAPI, as the tuner sees it through ``irqlab.linux.knobs``."""

    def __init__(self, value: int = 0) -> None:
        self.value = value
        self.saved: int | None = None

    def set_knob(self, dev: str, knob: str, value: int, napi: int | None = None, dry_run: bool = False) -> dict:
        row = {"part": "napi", "napi_id": 1, "knob": knob, "from": self.value, "to": value}
        if dry_run:
            return {"changed": [row], "unchanged": []}
        if self.saved is None:
            self.saved = self.value
        self.value = value
        return {"changed": [row], "unchanged": []}

    def has_saved_state(self, dev: str) -> bool:
        return self.saved is not None

    def restore(self, dev: str) -> dict:
        assert self.saved is not None
        self.value, self.saved = self.saved, None
        return {"changed_since_apply": []}


def _noisy(seed: int) -> Callable[[int], float]:
    import random

    rng = random.Random(seed)
    return lambda v: (1000.0 - abs(v - 137)) * (1 + rng.uniform(-0.05, 0.05))


# Objectives of the knob's value (0 to 200), each a fresh function per run.
SHAPES: dict[str, Callable[[], Callable[[int], float]]] = {
    "monotone": lambda: lambda v: 10.0 + v,
    "peaked": lambda: lambda v: 1000.0 - abs(v - 137),
    "flat": lambda: lambda v: 500.0,
    "noisy": lambda: _noisy(7),
    "partly-unmeasurable": lambda: lambda v: math.nan if v < 100 else 1000.0 - abs(v - 160),
}


def _fake_kernel_and_clock(monkeypatch, knobs, tune_cmd, device, clock) -> None:
    """The one knob's device in place of the kernel, and a clock only the slices move."""
    for name in ("set_knob", "has_saved_state", "restore"):
        monkeypatch.setattr(knobs, name, getattr(device, name))
    monkeypatch.setattr(knobs, "may_change_settings", lambda: True)
    monkeypatch.setattr(tune_cmd, "time", clock)


@pytest.fixture
def bounded_tune(monkeypatch):
    """``tune(objective_of_call, budget_s, objective=...)``: ``tune_knob`` on a
    fake one-NAPI device over 0:200, 1 s slices on a clock only slices move;
    ``objective_of_call(n, value)`` is the n-th slice's objective (n from 0,
    the check before the first change). Returns (result, device, said)."""
    import irqlab.linux.knobs as knobs
    import irqlab.linux.tune_cmd as tune_cmd

    def tune(objective_of_call: Callable[[int, int], float], budget_s: float, objective: str = "throughput",
             restore: bool = False) -> tuple[dict, OneKnob, list[str]]:
        device, clock, said, calls = OneKnob(), SliceClock(), [], [0]
        _fake_kernel_and_clock(monkeypatch, knobs, tune_cmd, device, clock)

        def measure(load: list[str], slice_s: float, cpus: object, **budget: object) -> dict[str, float]:
            clock.now += slice_s
            y = objective_of_call(calls[0], device.value)
            calls[0] += 1
            return {"throughput": y, "p99": y, "cpu_per_request": y, "errors": 0.0, "wall_s": slice_s}

        monkeypatch.setattr(tune_cmd, "measure_slice", measure)
        # The budget counts the check before the first change too (0.2 s of the
        # clock, and 0.05 s against rounding); the budgets below are those of the search after it.
        result = tune_cmd.tune_knob("fake0", "gro_flush_timeout", 0, 200, objective, ["irqlab-loadgen"], slice_s=1.0,
                                    budget_s=budget_s + 0.25, accept=200 / 32, restore_after=restore,
                                    say=said.append)
        return result, device, said

    return tune


def _assert_best_was_measured(result: dict, device: OneKnob) -> None:
    """The best is a value a slice of the last search measured, the result
    names that slice, the curve shows its measurement, and the device holds
    it (or, with no best or the original kept on a tie, the original)."""
    objective = result["objective"]
    if result["best"] is None:
        assert result["steps"] == [] and result["best_step"] is None and result["left"] == "original", result
        assert device.value == 0 and device.saved is None
        return
    backing = result["steps"][result["best_step"] - 1]
    assert backing["value"] == result["best"], (result["best"], backing)
    assert backing["search"] == result["restarts"], "measured in the last search, not before a restart"
    curve = {c["value"]: c[objective] for c in result["curve"]}
    assert result["best"] in curve, (result["best"], sorted(curve))
    y = curve[result["best"]]
    assert (y == backing[objective]) or (math.isnan(y) and math.isnan(backing[objective]))
    assert (result["best_objective"] == y) or (result["best_objective"] is None and math.isnan(y))
    if result["kept"]:
        # The original (0) won or tied: put back as it was saved, not set again.
        assert result["best"] == 0 and result["left"] == "original", result
        assert device.value == 0 and device.saved is None
        return
    assert device.value == result["best"] and result["left"] == "best"


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("objective", ["throughput", "p99"])
def test_the_best_is_always_a_measured_value_wherever_the_budget_ends_the_search(bounded_tune, shape, objective):
    # Budgets from no slice at all to well past convergence (about 17 slices
    # here), so that the search stops at every point: before its first
    # slice, mid-iteration, converged without time to measure its answer,
    # and finished. Before the fix a search the budget cut short reported
    # the middle of the range, 100, which no slice had measured.
    runs = []
    for budget in [1.5, *range(3, 24)]:
        f = SHAPES[shape]()
        runs.append((budget, *bounded_tune(lambda n, v: f(v), float(budget), objective)))
    unmeasured = [(budget, r["best"], sorted({s["value"] for s in r["steps"]})) for budget, r, _, _ in runs
                  if r["best"] is not None and r["best"] not in {s["value"] for s in r["steps"]}]
    assert not unmeasured, f"best values no slice measured (budget, best, measured): {unmeasured}"
    for budget, result, device, said in runs:
        _assert_best_was_measured(result, device)
        if not result["converged"]:
            assert any("the budget ran out before" in m for m in said), said


def test_a_search_cut_short_reports_the_best_value_it_measured(bounded_tune):
    result, device, said = bounded_tune(lambda n, v: 1000.0 - abs(v - 137), 10.0)
    assert not result["converged"] and len(result["steps"]) == 9
    by_value = {s["value"]: s["throughput"] for s in result["steps"]}
    assert result["best"] == max(by_value, key=by_value.get) != 100
    assert said[-1] == (f"the budget ran out before the search converged; the best value it measured is "
                        f"{result['best']} (step {result['best_step']})")


def test_a_converged_search_reports_its_answer_measured_again(bounded_tune):
    result, device, said = bounded_tune(lambda n, v: 1000.0 - abs(v - 137), 600.0)
    assert result["converged"] and abs(result["best"] - 137) <= 200 / 32
    # The last slice is the answer measured again, and it is what backs the best.
    assert result["best_step"] == len(result["steps"]) and result["steps"][-1]["value"] == result["best"]


def test_after_a_restart_the_best_comes_from_the_new_search_only(bounded_tune):
    # The load changes at the 18th slice (the first search's answer, 137,
    # measured again after the original and 16 probes): the peak moves to
    # 40 and the objective at 137 drops by 80 %, so the search starts over. Budgets end the second search at
    # every point; a value measured before the restart (under the old load,
    # where 137 read 1000) must never be the best.
    def objective_of_call(n: int, v: int) -> float:
        return 1000.0 - abs(v - 137) if n <= 17 else 300.0 - abs(v - 40)

    runs = [(budget, *bounded_tune(objective_of_call, float(budget))) for budget in range(20, 41)]
    for _, result, _, said in runs:
        assert result["restarts"] == 1, result["restarts"]
        assert any("the load changed; searching again" in m for m in said), said
    # Slice 18 (the answer measured again) is the first under the new load.
    unmeasured = [(budget, r["best"], sorted({s["value"] for s in r["steps"][17:]})) for budget, r, _, _ in runs
                  if r["best"] not in {s["value"] for s in r["steps"][17:]}]
    assert not unmeasured, f"best values the new search did not measure (budget, best, measured): {unmeasured}"
    for _, result, device, _ in runs:
        assert [s["search"] for s in result["steps"]] == [0] * 17 + [1] * (len(result["steps"]) - 17)
        assert result["steps"][17]["value"] == 137
        _assert_best_was_measured(result, device)
        assert abs(result["best"] - 40) < abs(result["best"] - 137), "the new load's optimum side"


def test_a_flat_objective_with_noise_keeps_the_original(bounded_tune):
    # Throughput that does not depend on the knob, with 3 % noise per slice
    # (the veth testbed's gro_flush_timeout under irq-suspend): the search's
    # best is the luckiest slice, and the tuner used to apply it. Now the
    # original stays unless a value beats it by more than the tolerance.
    import random

    for seed in range(10):
        rng = random.Random(seed)
        result, device, said = bounded_tune(lambda n, v: 500.0 * (1 + rng.gauss(0.0, 0.03)), 600.0)
        assert result["converged"] and result["restarts"] == 0
        assert result["best"] == 0 and result["left"] == "original", (seed, result["best"], result["left"])
        assert device.value == 0 and device.saved is None, "put back as saved"
        assert result["kept"] and result["search_best"] != 0 and result["noise"] > 0
        assert any(m.endswith("a tie, the current value is kept") for m in said), said
        _assert_best_was_measured(result, device)


def test_no_slice_within_the_budget_leaves_the_original_and_says_so(bounded_tune):
    result, device, said = bounded_tune(lambda n, v: 1.0, 1.5)
    assert result["best"] is None and result["steps"] == [] and result["left"] == "original"
    assert said == ["the budget ran out before any value was measured; the original value is kept"]
    assert device.value == 0 and device.saved is None


def test_the_text_report_names_the_best_with_the_slice_that_measured_it(monkeypatch, capsys, loadgen_binary):
    import irqlab.linux.knobs as knobs
    import irqlab.linux.tune_cmd as tune_cmd
    from irqlab.cli import main

    device, clock = OneKnob(), SliceClock()
    _fake_kernel_and_clock(monkeypatch, knobs, tune_cmd, device, clock)

    def measure(load: list[str], slice_s: float, cpus: object, **budget: object) -> dict[str, float]:
        clock.now += slice_s
        return {"throughput": 1000.0 - abs(device.value - 137), "p99": 1.0, "cpu_per_request": 1.0, "errors": 0.0,
                "wall_s": slice_s}

    monkeypatch.setattr(tune_cmd, "measure_slice", measure)
    args = ["linux", "tune", "fake0", "--knob", "gro_flush_timeout", "--range", "0:200", "--objective", "throughput",
            "--load", "irqlab loadgen --server 127.0.0.1:1", "--slice", "1"]
    assert main([*args, "--budget", "10.25"]) == 0  # the check before the first change takes 0.2 s of it
    out, err = capsys.readouterr()
    head, curve = out.splitlines()[0], out.splitlines()[2:]
    best = int(head.split(": best ")[1].split()[0])
    assert head.startswith("gro_flush_timeout on fake0: best 135 for throughput, 998 at step 9 (9 steps, 0 restarts")
    assert head.endswith("; left: the best value"), head
    assert f"  {best:>12}  998" in curve, curve
    assert "tune: the budget ran out before the search converged; the best value it measured is 135 (step 9)" in err
    # A budget that cannot hold one slice (and its 1 s margin) is refused before anything.
    before = (device.value, device.saved)
    assert main([*args[:-1], "0.2", "--budget", "0.6"]) == 2
    assert capsys.readouterr().err == "irqlab: error: --budget must be a number between 1.2 and 3600 (got '0.6')\n"
    assert (device.value, device.saved) == before
    # A host so busy that 5 s pass between the tuner's readings of the
    # clock (from its start, the check before the first change in the
    # budget): no slice fits in 3 s.
    device.value, device.saved = 0, None
    clock.stall = 5.0
    assert main([*args, "--budget", "3"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("gro_flush_timeout on fake0: no value measured within the budget (0 steps, 0 restarts, ")
    assert out.splitlines()[0].endswith("; left: the original value") and out.splitlines()[1:] == ["curve:"]
    assert "tune: the budget ran out before any value was measured; the original value is kept" in err
    assert device.value == 0 and device.saved is None


# -- --budget bounds the whole run, a hung server included (issue 62, item 5) --


def _hanging_load(tmp_path: Path, answered: int) -> list[str]:
    """A load command that answers ``answered`` times as the load generator
    does, then hangs (as the generator waits, up to a minute, for a server
    stopped with SIGSTOP)."""
    count = tmp_path / "calls"
    report = {"achieved_qps": 1000.0, "latency_us": {"p99": 50.0}, "errors": 0}
    code = (f"import json, pathlib, time; p = pathlib.Path({str(count)!r}); n = int(p.read_text() or 0) "
            f"if p.exists() else 0; p.write_text(str(n + 1))\n"
            f"if n >= {answered}: time.sleep(120)\n"
            f"print(json.dumps({report!r}))")
    return [sys.executable, "-c", code, "--"]


def test_a_load_that_hangs_is_stopped_when_the_budget_runs_out(tmp_path) -> None:
    import irqlab.linux.tune_cmd as tune_cmd

    started = time.monotonic()
    with pytest.raises(tune_cmd.BudgetSpent) as e:
        tune_cmd.measure_slice(_hanging_load(tmp_path, 0), 0.2, None, budget_left_s=1.0, budget_s=4.0)
    assert time.monotonic() - started < 30
    assert str(e.value).startswith("--budget 4 s ran out while the load command was still running, "), e.value
    # With budget left, a load that answers is measured.
    (tmp_path / "calls").unlink()
    answers = _hanging_load(tmp_path, 1)
    assert tune_cmd.measure_slice(answers, 0.2, None, budget_left_s=30.0, budget_s=40.0)["throughput"] == 1000.0


def test_the_budget_bounds_the_search_when_the_server_hangs_and_the_original_comes_back(monkeypatch, tmp_path):
    import irqlab.linux.knobs as knobs
    import irqlab.linux.tune_cmd as tune_cmd

    device, told = OneKnob(), []
    for name in ("set_knob", "has_saved_state", "restore"):
        monkeypatch.setattr(knobs, name, getattr(device, name))
    monkeypatch.setattr(knobs, "may_change_settings", lambda: True)
    # The check and two slices answer (the original, then the first value set); the third hangs.
    started = time.monotonic()
    with pytest.raises(tune_cmd.BudgetSpent) as e:
        tune_cmd.tune_knob("fake0", "gro_flush_timeout", 0, 200, "throughput", _hanging_load(tmp_path, 3),
                           slice_s=0.2, budget_s=4.0, accept=200 / 32, tell=told.append)
    assert time.monotonic() - started < 30, "the budget, not the load's own bound, ended the run"
    assert "--budget 4 s ran out while the load command was still running" in str(e.value)
    assert device.value == 0 and device.saved is None, "the original is back"
    assert told == ["the search did not finish; gro_flush_timeout on fake0 is back to its original value (0)"]


def _own_namespace_skip_reason() -> str | None:
    return memcached_on_veth_skip_reason("tuning a real device needs root (network namespaces, napi-set)",
                                         "per-NAPI settings")


@pytest.mark.skipif(_own_namespace_skip_reason() is not None, reason=_own_namespace_skip_reason() or "")
def test_a_server_stopped_with_sigstop_ends_the_tuner_at_its_budget_with_the_knob_back(tmp_path) -> None:
    # A namespace of this test's own: veth0 (GRO on, a NAPI) whose
    # gro_flush_timeout is tuned, memcached on its loopback as the load's server.
    ns, port = f"irqlab-t62b-{os.getpid()}", 11311
    env = dict(os.environ, IRQLAB_STATE_DIR=str(tmp_path / "state"))
    in_ns = ["ip", "netns", "exec", ns]
    mc = watcher = None

    def sh(*args: str) -> None:
        result = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"{' '.join(args)}: {result.stderr}"

    def gro_flush_timeout() -> int:
        out = subprocess.run([*in_ns, str(IRQLAB), "linux", "show", "veth0", "--json"], capture_output=True, text=True,
                             env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["napis"][0]["gro_flush_timeout"]

    try:
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
        for dev in ("lo", "veth0", "veth1"):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh(*in_ns, "ethtool", "-K", "veth0", "gro", "on")
        mc = subprocess.Popen([*in_ns, shutil.which("memcached") or "memcached", "-U", "0", "-l", "127.0.0.1", "-p",
                               str(port), "-t", "1", "-u", "nobody"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        wait_listening(ns, "127.0.0.1", port)
        assert gro_flush_timeout() == 0
        # Stop memcached (SIGSTOP) as soon as the tuner has changed the knob:
        # the slice then running, or the next one's preload, waits on it.
        watch = ("import os, signal, time, sys\nfrom irqlab.linux import knobs\n"
                 "print('ready', flush=True)\nend = time.monotonic() + 60\n"
                 "while time.monotonic() < end:\n"
                 "    if knobs.show('veth0')['napis'][0]['gro_flush_timeout'] != 0:\n"
                 f"        os.kill({mc.pid}, signal.SIGSTOP); print('stopped', flush=True); sys.exit(0)\n"
                 "    time.sleep(0.01)\n")
        watcher = subprocess.Popen([*in_ns, sys.executable, "-c", watch], stdout=subprocess.PIPE, text=True, env=env)
        assert watcher.stdout is not None and watcher.stdout.readline().strip() == "ready"
        load = f"{IRQLAB} loadgen --server 127.0.0.1:{port} --connections 2 --records 200 --timeout-ms 60000"
        started = time.monotonic()
        tune = subprocess.run([*in_ns, str(IRQLAB), "linux", "tune", "veth0", "--knob", "gro_flush_timeout", "--range",
                               "0:200000", "--objective", "throughput", "--load", load, "--slice", "0.3", "--budget",
                               "4"], capture_output=True, text=True, env=env, timeout=120)
        elapsed = time.monotonic() - started
        assert watcher.stdout.readline().strip() == "stopped", "the tuner never changed the knob"
        assert elapsed < 30, f"--budget 4 took {elapsed:.1f} s"
        assert tune.returncode == 2, (tune.returncode, tune.stdout, tune.stderr)
        lines = tune.stderr.strip().splitlines()
        assert lines[-1].startswith("irqlab: error: --budget 4 s ran out while the load command was still running"), \
            tune.stderr
        assert "irqlab: the search did not finish; gro_flush_timeout on veth0 is back to its original value (0)" \
            in tune.stderr
        assert gro_flush_timeout() == 0, "the knob is back"
        assert not list((tmp_path / "state").glob("*.json")), "the saved state is restored and gone"
    finally:
        if mc is not None:
            mc.send_signal(signal.SIGCONT)
            mc.kill()
            mc.wait(timeout=30)
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.wait(timeout=30)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=60)
