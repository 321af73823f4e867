"""The real-host tools put the host back on every failure path, and say so.

``irqlab linux tune``, ``irqlab linux exec --napi-dev`` and ``irqlab testbed
run/tune``: every argument is checked before the first change; any exception
after it (the load failing, SIGTERM, Ctrl-C, the kernel refusing a value,
writing --out failing) restores the saved state and says so on stderr.

The first part drives the commands against fakes of the kernel side
(``irqlab.linux.knobs``, the load slice, the testbed's namespaces), so it
runs everywhere; the second runs ``irqlab linux tune`` on a real veth in
network namespaces as root (skipped elsewhere, saying why).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from conftest import memcached_irq_suspend_testbed, memcached_on_veth_skip_reason, server_gro_flush_timeout, wait_listening

from irqlab._core import LinuxError
from irqlab.cli import main

DEV = "fake0"
LOAD = "irqlab loadgen --server 127.0.0.1:11211 --connections 4"


class FakeDevice:
    """Two NAPIs' ``gro_flush_timeout``, changed through what the tuner calls in
    ``irqlab.linux.knobs``; the first change saves the state as the native side
    does, each records what it left (``applied``), and the restore reports a
    value found otherwise as changed since apply, as restore.rs does."""

    def __init__(self, original: int = 0) -> None:
        self.values = {1: original, 2: original}
        self.saved: Optional[dict[int, int]] = None
        self.applied: dict[int, int] = {}
        self.refuse: Callable[[int], bool] = lambda value: False
        self.restore_fails = False
        self.on_restore: Callable[[], None] = lambda: None
        self.sets: list[int] = []

    def set_knob(self, dev: str, knob: str, value: int, napi: Optional[int] = None, dry_run: bool = False) -> dict[str, Any]:
        if dev != DEV:
            raise LinuxError(f"no network device {dev!r}")
        if dry_run:
            rows = [{"napi_id": n, "knob": knob, "from": v, "to": value, "part": "napi"} for n, v in self.values.items()]
            return {"changed": [r for r in rows if r["from"] != value], "unchanged": [r for r in rows if r["from"] == value]}
        state_kept = self.saved is not None
        if self.saved is None:
            self.saved = dict(self.values)
        if self.refuse(value):
            raise LinuxError(f"the kernel refused {knob} {value} on NAPI 1 of {dev}: Invalid argument")
        for n in [napi] if napi is not None else list(self.values):
            self.values[n] = self.applied[n] = value
        self.sets.append(value)
        return {"state_kept": state_kept}

    def restore(self, dev: str) -> dict[str, Any]:
        self.on_restore()
        if self.restore_fails:
            raise LinuxError(f"NAPI 1 of {dev} is gone and its settings have nowhere to go; they stay saved")
        if self.saved is None:
            raise LinuxError(f"no saved state of {dev}")
        by_hand = [{"part": "napi", "napi_id": n, "knob": "gro_flush_timeout", "applied": self.applied[n], "now": v,
                    "restoring": self.saved[n]} for n, v in self.values.items() if self.applied.get(n, v) != v]
        self.values, self.saved, self.applied = dict(self.saved), None, {}
        return {"changed_since_apply": by_hand}

    def has_saved_state(self, dev: str) -> bool:
        return self.saved is not None


class FakeLoad:
    """The load slices: a throughput with its peak at 50000 ns; ``hooks[n]``
    runs instead at the n-th slice (0 is the check before the first change)."""

    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.calls = 0
        self.hooks: dict[int, Callable[[], None]] = {}

    def __call__(self, load: list[str], slice_s: float, cpus: Any, **budget: Any) -> dict[str, float]:
        n = self.calls
        self.calls += 1
        if n in self.hooks:
            self.hooks[n]()
        value = self.device.values[1]
        return {"throughput": 100_000.0 - abs(value - 50_000) / 10, "p99": 50.0, "cpu_per_request": 5.0,
                "errors": 0.0, "wall_s": 0.01}


@pytest.fixture
def fake(monkeypatch):
    import irqlab.linux.knobs as knobs
    import irqlab.linux.tune_cmd as tune_cmd
    import irqlab.loadgen as loadgen

    device = FakeDevice()
    for name in ("set_knob", "restore", "has_saved_state"):
        monkeypatch.setattr(knobs, name, getattr(device, name))
    monkeypatch.setattr(knobs, "may_change_settings", lambda: True)
    monkeypatch.setattr(loadgen, "find_binary", lambda: Path("/usr/bin/irqlab-loadgen"))
    load = FakeLoad(device)
    monkeypatch.setattr(tune_cmd, "measure_slice", load)
    return device, load


def tune(*extra: str) -> int:
    return main(["linux", "tune", DEV, "--knob", "gro_flush_timeout", "--range", "0:200000", "--objective",
                 "throughput", "--load", LOAD, "--budget", "600", *extra])


def restored_said(err: str) -> bool:
    return "the search did not finish; gro_flush_timeout on fake0 is back to its original value (0)" in err


def fail(exc: BaseException) -> Callable[[], None]:
    def hook() -> None:
        raise exc

    return hook


# -- linux tune, against the fakes ------------------------------------------------------


def test_a_finished_search_leaves_the_best_value_and_no_message(fake, capsys):
    device, load = fake
    assert tune() == 0
    out, err = capsys.readouterr()
    assert "best" in out and not restored_said(err)
    assert len(device.sets) >= 5 and abs(device.values[1] - 50_000) < 10_000, device.values


@pytest.mark.parametrize("out", ["file", "missing-parent", "fifo"])
def test_a_bad_out_fails_before_any_change_and_any_load(fake, tmp_path, capsys, out):
    device, load = fake
    path = {"file": tmp_path / "passwd", "missing-parent": tmp_path / "no" / "out", "fifo": tmp_path / "fifo"}[out]
    if out == "file":
        path.write_text("root:x:0:0::/root:/bin/sh\n")
    elif out == "fifo":
        os.mkfifo(path)
    assert tune("--out", str(path)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"irqlab: error: --out {path}") and err.count("\n") == 1, err
    assert device.sets == [] and load.calls == 0 and device.saved is None
    if out == "file":
        assert path.read_text() == "root:x:0:0::/root:/bin/sh\n"


def test_a_load_that_cannot_start_is_found_before_any_change(fake, capsys):
    from irqlab.linux.tune_cmd import TuneError

    device, load = fake
    load.hooks[0] = fail(TuneError("the load command could not be started: irqlab-loadgen: No such file or directory"))
    assert tune() == 2
    err = capsys.readouterr().err
    assert "could not be started" in err and not restored_said(err)
    assert device.sets == [] and device.saved is None


def test_a_load_namespace_that_does_not_exist_is_refused_before_anything(fake, capsys):
    device, load = fake
    status = main(["linux", "tune", DEV, "--knob", "gro_flush_timeout", "--range", "0:200000", "--objective",
                   "throughput", "--load", f"ip netns exec irqlab-no-such-ns-{os.getpid()} {LOAD}"])
    assert status == 2
    assert "does not exist" in capsys.readouterr().err
    assert load.calls == 0 and device.sets == []


def test_a_load_failing_mid_search_puts_the_original_back_and_says_so(fake, capsys):
    from irqlab.linux.tune_cmd import TuneError

    device, load = fake
    load.hooks[3] = fail(TuneError("the load command failed: connection refused"))
    assert tune() == 2
    err = capsys.readouterr().err
    assert restored_said(err), err
    assert err.strip().splitlines()[-1] == "irqlab: error: the load command failed: connection refused"
    assert len(device.sets) >= 2 and device.values == {1: 0, 2: 0} and device.saved is None


def test_sigterm_mid_search_puts_the_original_back_and_exits_143(fake, capsys):
    device, load = fake
    load.hooks[3] = lambda: os.kill(os.getpid(), signal.SIGTERM)
    before = signal.getsignal(signal.SIGTERM)
    assert tune() == 143
    assert restored_said(capsys.readouterr().err)
    assert device.values == {1: 0, 2: 0} and device.saved is None
    assert signal.getsignal(signal.SIGTERM) == before


def test_ctrl_c_mid_search_puts_the_original_back_and_exits_130(fake, capsys):
    device, load = fake
    load.hooks[2] = fail(KeyboardInterrupt())
    assert tune() == 130
    assert restored_said(capsys.readouterr().err)
    assert device.values == {1: 0, 2: 0} and device.saved is None


def test_the_kernel_refusing_a_value_puts_the_original_back(fake, capsys):
    device, load = fake
    device.refuse = lambda value: value > 100_000  # the search's second probe is above
    assert tune() == 2
    err = capsys.readouterr().err
    assert restored_said(err) and "the kernel refused gro_flush_timeout" in err.strip().splitlines()[-1]
    assert device.values == {1: 0, 2: 0} and device.saved is None


def test_the_first_change_refused_before_it_changed_anything_leaves_nothing_to_do(fake, capsys):
    device, load = fake
    device.refuse = lambda value: True
    assert tune() == 2
    err = capsys.readouterr().err
    assert "the kernel refused" in err and device.values == {1: 0, 2: 0} and device.saved is None


def test_writing_out_failing_after_the_search_puts_the_original_back(fake, tmp_path, monkeypatch, capsys):
    import irqlab.linux.tune_cmd as tune_cmd

    device, load = fake

    def full_disk(out: Path, result: dict[str, Any]) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out / "tune.json"))

    monkeypatch.setattr(tune_cmd, "write_results", full_disk)
    assert tune("--out", str(tmp_path / "out")) == 1
    err = capsys.readouterr().err
    assert restored_said(err) and "No space left on device" in err
    assert device.values == {1: 0, 2: 0}, "not the best value: the command failed"


def test_a_restore_that_fails_says_how_to_finish_it(fake, capsys):
    device, load = fake
    load.hooks[3] = fail(KeyboardInterrupt())
    device.restore_fails = True
    assert tune() == 130
    err = capsys.readouterr().err
    assert "could not be put back on fake0" in err and "`irqlab linux restore fake0`" in err
    assert not restored_said(err)


def test_a_state_saved_by_an_earlier_apply_is_kept_and_the_knob_put_back_by_hand(fake, capsys):
    device, load = fake
    device.saved = {1: 7, 2: 7}  # `irqlab linux apply` saved the settings before its profile
    load.hooks[3] = fail(KeyboardInterrupt())
    assert tune() == 130
    assert restored_said(capsys.readouterr().err)
    assert device.values == {1: 0, 2: 0} and device.saved == {1: 7, 2: 7}


def _by_hand(device: FakeDevice, napi: int, value: int) -> Callable[[], None]:
    """A hand change (``ethtool``, a sysfs write) just before the restore."""

    def change() -> None:
        device.values[napi] = value

    return change


def test_restore_at_the_end_says_each_knob_changed_by_hand_during_the_search(fake, capsys):
    from irqlab.linux.cli import hand_change_line

    device, load = fake
    device.on_restore = _by_hand(device, 2, 12345)
    assert tune("--restore", "--json") == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    applied = result["steps"][-1]["value"]
    change = {"part": "napi", "napi_id": 2, "knob": "gro_flush_timeout", "applied": applied, "now": 12345,
              "restoring": 0}
    assert result["changed_since_apply"] == [change] and result["left"] == "original"
    # The line `irqlab linux restore` prints, on stderr whatever --json says.
    line = f"irqlab: {hand_change_line(DEV, change)}"
    assert line == (f"irqlab: restore: fake0 NAPI 2 napi.gro_flush_timeout was {applied} ns when applied, is now "
                    "12345 ns (changed since apply); restoring 0 ns")
    assert err.splitlines() == [line], err
    assert device.values == {1: 0, 2: 0}


def test_a_search_without_hand_changes_restores_without_a_word(fake, capsys):
    device, load = fake
    assert tune("--restore", "--json") == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["changed_since_apply"] == [] and err == ""


def test_restore_on_failure_says_each_knob_changed_by_hand_before_it_is_back(fake, capsys):
    device, load = fake
    load.hooks[3] = fail(KeyboardInterrupt())
    device.on_restore = _by_hand(device, 1, 777)
    assert tune() == 130
    err = capsys.readouterr().err.splitlines()
    assert err[-2].startswith("irqlab: restore: fake0 NAPI 1 napi.gro_flush_timeout was ") and err[-2].endswith(
        " ns when applied, is now 777 ns (changed since apply); restoring 0 ns"), err
    assert restored_said(err[-1])
    assert device.values == {1: 0, 2: 0}


def test_a_second_sigterm_waits_until_the_original_is_back(fake, capsys):
    import threading

    device, load = fake
    got: list[dict[int, int]] = []
    # Another thread, as a process may have: a signal to the process can land
    # on it, so holding signals in the main thread alone would not do.
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    # What SIGTERM did before the tuner: it gets the second signal, after the restore.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(dict(device.values)))
    try:
        load.hooks[3] = lambda: os.kill(os.getpid(), signal.SIGTERM)
        device.on_restore = lambda: os.kill(os.getpid(), signal.SIGTERM)
        assert tune() == 143
        time.sleep(0.05)  # the second signal's handler runs at the main thread's next check
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop.set()
    assert restored_said(capsys.readouterr().err)
    assert got == [{1: 0, 2: 0}], "the second SIGTERM came after the restore, to the previous handler"


def test_busy_poll_usecs_control_file_is_put_back_on_failure(tmp_path, monkeypatch, capsys):
    import irqlab.linux.control as ctl
    import irqlab.linux.tune_cmd as tune_cmd
    import irqlab.loadgen as loadgen
    from irqlab.linux.exec_cmd import read_control

    control = tmp_path / "control"
    control.write_text("busy_poll_usecs=64\n")
    calls = []
    # A program whose one epoll instance takes the file's value at once (the
    # read-back is tests/python/test_linux_tune.py's subject).
    monkeypatch.setattr(ctl, "instances", lambda path: [ctl.EpollInstance(1, "fake", 3, read_control(path), 0, 0)])

    def measure(load: list[str], slice_s: float, cpus: Any, **budget: Any) -> dict[str, float]:
        calls.append(control.read_text())
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return {"throughput": 1.0, "p99": 1.0, "cpu_per_request": 1.0, "errors": 0.0, "wall_s": 0.01}

    monkeypatch.setattr(tune_cmd, "measure_slice", measure)
    monkeypatch.setattr(loadgen, "find_binary", lambda: Path("/usr/bin/irqlab-loadgen"))
    status = main(["linux", "tune", "lo", "--knob", "busy_poll_usecs", "--range", "0:200", "--control", str(control),
                   "--objective", "throughput", "--load", LOAD, "--budget", "600"])
    assert status == 143
    assert calls[2] != "busy_poll_usecs=64\n", "the search had changed the value"
    assert control.read_text() == "busy_poll_usecs=64\n"
    assert f"busy_poll_usecs on {control} is back to its original value (64)" in capsys.readouterr().err


# -- linux exec --napi-dev, against fakes --------------------------------------------------


class FakeKnobs:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.restore_fails = False
        #: What the restore reports as changed by hand since apply.
        self.by_hand: list[dict[str, Any]] = []

    def may_change_settings(self) -> bool:
        return True

    def apply(self, dev: str, profile: str) -> dict[str, Any]:
        self.calls.append(f"apply {dev} {profile}")
        return {}

    def restore(self, dev: str) -> dict[str, Any]:
        self.calls.append(f"restore {dev}")
        if self.restore_fails:
            raise LinuxError(f"the settings of {dev} have nowhere to go")
        return {"changed_since_apply": self.by_hand}


@pytest.fixture
def exec_fakes(monkeypatch):
    import irqlab.linux.exec_cmd as exec_cmd

    k = FakeKnobs()
    monkeypatch.setattr(exec_cmd, "_napi_knobs", lambda: k)
    monkeypatch.setattr(exec_cmd, "find_shim", lambda: Path("/usr/lib/libirqlab_preload.so"))
    monkeypatch.setattr(exec_cmd, "_become_subreaper", lambda: None)
    monkeypatch.setattr(exec_cmd, "_warn_lingering", lambda command, dev: [])
    return exec_cmd, k


def run_exec() -> int:
    return main(["linux", "exec", "--profile", "irq-suspend", "--napi-dev", DEV, "--", "true"])


def test_exec_restores_after_the_program_without_a_word(exec_fakes, monkeypatch, capsys):
    exec_cmd, k = exec_fakes
    monkeypatch.setattr(exec_cmd, "run_program", lambda argv, env: 3)
    assert run_exec() == 3
    assert k.calls == [f"apply {DEV} irq-suspend", f"restore {DEV}"]
    assert capsys.readouterr().err == ""


def test_exec_restores_after_an_error_and_says_so(exec_fakes, monkeypatch, capsys):
    exec_cmd, k = exec_fakes

    def broken(argv: list[str], env: dict[str, str]) -> int:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(exec_cmd, "run_program", broken)
    assert run_exec() == 1
    assert k.calls == [f"apply {DEV} irq-suspend", f"restore {DEV}"]
    err = capsys.readouterr().err
    assert f"irqlab: {DEV} is back to its settings from before the profile was applied" in err
    assert err.strip().splitlines()[-1] == "irqlab: error: Input/output error"


HAND_CHANGES = [
    {"part": "napi", "napi_id": 12, "knob": "gro_flush_timeout", "applied": 20000, "now": 5000, "restoring": 0},
    {"part": "coalesce", "napi_id": None, "knob": "rx-usecs", "applied": 0, "now": 50, "restoring": 8},
]


def test_exec_says_each_knob_changed_by_hand_while_the_program_ran(exec_fakes, monkeypatch, capsys):
    from irqlab.linux.cli import hand_change_line

    exec_cmd, k = exec_fakes
    k.by_hand = HAND_CHANGES
    monkeypatch.setattr(exec_cmd, "run_program", lambda argv, env: 0)
    assert run_exec() == 0
    assert k.calls == [f"apply {DEV} irq-suspend", f"restore {DEV}"]
    err = capsys.readouterr().err.splitlines()
    assert err == [f"irqlab: {hand_change_line(DEV, h)}" for h in HAND_CHANGES]
    assert err == [
        "irqlab: restore: fake0 NAPI 12 napi.gro_flush_timeout was 20000 ns when applied, is now 5000 ns "
        "(changed since apply); restoring 0 ns",
        "irqlab: restore: fake0 coalescing coalesce.rx-usecs was 0 when applied, is now 50 (changed since apply); "
        "restoring 8",
    ]


def test_exec_says_the_hand_changes_after_an_error_too(exec_fakes, monkeypatch, capsys):
    exec_cmd, k = exec_fakes
    k.by_hand = HAND_CHANGES[:1]

    def broken(argv: list[str], env: dict[str, str]) -> int:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(exec_cmd, "run_program", broken)
    assert run_exec() == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "irqlab: restore: fake0 NAPI 12 napi.gro_flush_timeout was 20000 ns when applied, is now 5000 ns "
        "(changed since apply); restoring 0 ns",
        f"irqlab: {DEV} is back to its settings from before the profile was applied",
        "irqlab: error: Input/output error",
    ]


def test_exec_restore_failing_says_how_to_finish_it(exec_fakes, monkeypatch, capsys):
    exec_cmd, k = exec_fakes
    k.restore_fails = True
    monkeypatch.setattr(exec_cmd, "run_program", lambda argv, env: 0)
    assert run_exec() == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"`irqlab linux restore {DEV}`" in err and "nowhere to go" in err


def test_exec_bad_control_is_refused_before_the_device_is_changed(exec_fakes, tmp_path, capsys):
    exec_cmd, k = exec_fakes
    status = main(["linux", "exec", "--profile", "irq-suspend", "--napi-dev", DEV, "--control", str(tmp_path),
                   "--", "true"])
    assert status == 2 and k.calls == []
    assert capsys.readouterr().err.startswith(f"irqlab: error: --control {tmp_path}")


# -- testbed run and tune, against fakes ---------------------------------------------------


@pytest.fixture
def fake_bed(monkeypatch):
    from irqlab.testbed import netns
    from irqlab.testbed import run as tb

    events: list[str] = []

    def create(self: Any) -> None:
        self.created = [netns.SERVER_NS, netns.CLIENT_NS]
        self.napi_pid = 1
        events.append("create")

    def destroy(self: Any) -> None:
        events.append(f"destroy {sorted(self.created)}")
        self.created.clear()

    monkeypatch.setattr(netns.Testbed, "create", create)
    monkeypatch.setattr(netns.Testbed, "destroy", destroy)
    monkeypatch.setattr(tb, "_memcached", lambda: "/usr/bin/memcached")
    monkeypatch.setattr(tb, "_loadgen", lambda: "/usr/bin/irqlab-loadgen")
    monkeypatch.setattr(tb, "_stop_server", lambda server: events.append("stop server"))
    return tb, events


def removed_said(err: str) -> bool:
    return "the testbed did not finish; its namespaces (irqlab-tb-srv, irqlab-tb-cli)" in err and "are removed" in err


def test_testbed_run_removes_the_testbed_when_the_server_fails_and_says_so(fake_bed, monkeypatch, capsys):
    from irqlab.testbed.netns import TestbedError

    tb, events = fake_bed

    def no_server(plan: Any, profile: str, control_file: Any = None) -> Any:
        raise TestbedError("memcached exited at once: bind: Address already in use")

    monkeypatch.setattr(tb, "_start_server", no_server)
    assert main(["testbed", "run", "--profiles", "irq-suspend", "--repeats", "1", "--no-sim"]) == 2
    err = capsys.readouterr().err
    assert removed_said(err) and err.strip().splitlines()[-1].startswith("irqlab: error: memcached exited at once")
    assert events == ["create", "destroy ['irqlab-tb-cli', 'irqlab-tb-srv']"]


def test_testbed_run_sigterm_removes_the_testbed_and_exits_143(fake_bed, monkeypatch, capsys):
    tb, events = fake_bed
    monkeypatch.setattr(tb, "_start_server", lambda plan, profile, control_file=None: object())
    monkeypatch.setattr(tb, "_wait_ready", lambda: os.kill(os.getpid(), signal.SIGTERM))
    before = signal.getsignal(signal.SIGTERM)
    assert main(["testbed", "run", "--profiles", "irq-suspend", "--repeats", "1", "--no-sim"]) == 143
    assert removed_said(capsys.readouterr().err)
    assert events == ["create", "stop server", "destroy ['irqlab-tb-cli', 'irqlab-tb-srv']"]
    assert signal.getsignal(signal.SIGTERM) == before


def test_testbed_tune_sigterm_removes_the_testbed_and_exits_143(fake_bed, monkeypatch, capsys):
    tb, events = fake_bed
    monkeypatch.setattr(tb, "_start_server", lambda plan, profile, control_file=None: object())
    monkeypatch.setattr(tb, "_wait_ready", lambda: None)
    monkeypatch.setattr(tb, "_loadgen_run", lambda *a, **k: os.kill(os.getpid(), signal.SIGTERM))
    assert main(["testbed", "tune", "--no-sim", "--slice", "0.2", "--budget", "2"]) == 143
    assert removed_said(capsys.readouterr().err)
    assert events == ["create", "stop server", "destroy ['irqlab-tb-cli', 'irqlab-tb-srv']"]


# -- linux tune on a real veth (root) ---------------------------------------------------------

IRQLAB = Path(sys.executable).with_name("irqlab")
SERVER_NS = "irqlab-tb-srv"
REAL_LOAD = "ip netns exec irqlab-tb-cli irqlab loadgen --server 198.18.0.1:{port} --connections 4 --no-preload"


def _skip_reason() -> str | None:
    return memcached_on_veth_skip_reason("changing a real device needs root (network namespaces, napi-set)",
                                         "per-NAPI settings")


real = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


@pytest.fixture(scope="module")
def bed():
    yield from memcached_irq_suspend_testbed()




def _real_tune(*extra: str, port: int = 11211) -> subprocess.Popen[str]:
    cmd = ["ip", "netns", "exec", SERVER_NS, str(IRQLAB), "linux", "tune", "irqlab-tb0", "--knob", "gro_flush_timeout",
           "--range", "0:200000", "--objective", "throughput", "--load", REAL_LOAD.format(port=port), "--slice", "0.3",
           *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_step(proc: subprocess.Popen[str], n: int = 1) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
        if line.startswith(f"tune: step {n}:"):
            return lines
    raise AssertionError(f"no step {n}: {lines}")


@real
def test_real_out_etc_passwd_is_refused_before_the_device_changes(bed):
    passwd = Path("/etc/passwd")
    digest = hashlib.sha256(passwd.read_bytes()).hexdigest()
    original = server_gro_flush_timeout()
    started = time.monotonic()
    proc = _real_tune("--budget", "60", "--out", str(passwd))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == ""
    assert err.startswith("irqlab: error: --out /etc/passwd") and err.count("\n") == 1, err
    assert time.monotonic() - started < 30, "refused before the search, not after it"
    assert server_gro_flush_timeout() == original
    assert hashlib.sha256(passwd.read_bytes()).hexdigest() == digest


@real
def test_real_sigterm_mid_search_puts_the_original_back(bed):
    original = server_gro_flush_timeout()
    proc = _real_tune("--budget", "120")
    _wait_for_step(proc, 2)  # step 1 measures the original; step 2 has changed it
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert f"gro_flush_timeout on irqlab-tb0 is back to its original value ({original})" in err
    assert server_gro_flush_timeout() == original


@real
def test_real_load_generator_failing_mid_search_puts_the_original_back(bed):
    import shutil

    original = server_gro_flush_timeout()
    # A second memcached of the test's own, stopped after the first step: the
    # next slice's load generator finds no server.
    mc = subprocess.Popen(["ip", "netns", "exec", SERVER_NS, shutil.which("memcached"), "-U", "0", "-l", "198.18.0.1",
                           "-p", "11214", "-t", "1", "-u", "nobody"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(SERVER_NS, "198.18.0.1", 11214)
        proc = _real_tune("--budget", "120", port=11214)
        _wait_for_step(proc, 1)
    finally:
        mc.kill()
        mc.wait(timeout=30)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert f"is back to its original value ({original})" in err
    assert err.strip().splitlines()[-1].startswith("irqlab: error: the load command failed"), err
    assert server_gro_flush_timeout() == original
