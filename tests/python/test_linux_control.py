"""``irqlab linux control DEV --policy``: your policy against a real device,
every knob it touched put back at the end, on SIGINT and on its failure.

The parsers of the sample run anywhere; the live tests run as root in a
network namespace of their own with a veth pair (test_linux_live.py's
testbed: veth0 has one NAPI, GRO on) and skip elsewhere, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from irqlab.linux.control_cmd import check_change, kernel_ranges
from irqlab.linux.host_sample import busy_poll_rx_packets, core_times, irq_counts, net_rx_softirqs, queue_counters, rps_mask
from irqlab.policy import PolicyError

from conftest import interrupt
from test_linux_live import IRQLAB, Testbed, _testbed, _why_not_live

INTERRUPTS = """           CPU0       CPU1
  0:         41          0   IO-APIC   2-edge      timer
 24:       1000        234   PCI-MSI 1-edge      eth0-rx-0
 25:          5          7   PCI-MSI 2-edge      eth0-rx-1
NMI:          0          0   Non-maskable interrupts
"""
SOFTIRQS = """                    CPU0       CPU1
          HI:          0          0
      NET_TX:         10         20
      NET_RX:        300        400
"""
NETSTAT = """TcpExt: SyncookiesSent BusyPollRxPackets TCPAutoCorking
TcpExt: 0 1234 5
IpExt: InNoRoutes
IpExt: 0
"""
STAT = """cpu  10 0 20 300 4 5 6 0 0 0
cpu0 1 2 3 4 5 6 7 0 0 0
cpu1 10 0 20 30 0 1 2 0 0 0
intr 1 2 3
"""


def test_the_samples_counters_are_read_from_the_kernels_files():
    assert irq_counts({24, 25}, INTERRUPTS) == {24: 1234, 25: 12}
    assert irq_counts({26}, INTERRUPTS) == {}
    assert net_rx_softirqs(SOFTIRQS) == 700
    assert busy_poll_rx_packets(NETSTAT) == 1234
    assert busy_poll_rx_packets("IpExt: a\nIpExt: 1\n") is None
    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    cpus = core_times(STAT)
    assert len(cpus) == 2
    assert cpus[0] == {"user_ns": 3 * tick, "system_ns": 3 * tick, "softirq_ns": 7 * tick, "irq_ns": 6 * tick,
                       "idle_ns": 9 * tick}


def test_a_napis_queue_counters_are_its_linked_queues_qstats_summed():
    def q(kind, i, **c):
        counters = dict.fromkeys(("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_hw_drops", "rx_alloc_fail"))
        return {"queue_type": kind, "queue_id": i, **counters, **c}

    stats = [q("rx", 0, rx_packets=10, rx_bytes=1000, rx_hw_drops=1), q("rx", 1, rx_packets=5, rx_bytes=500),
             q("rx", 2, rx_packets=99, rx_bytes=9900), q("tx", 0, tx_packets=7, tx_bytes=700)]
    napi = {"queues": {"rx": [0, 1], "tx": [0]}}
    assert queue_counters(napi, stats) == {"packets": 15, "bytes": 1500, "tx_packets": 7, "tx_bytes": 700, "drops": 1}
    # A device without per-queue statistics (veth), or a NAPI with no queue linked.
    none = dict.fromkeys(("packets", "bytes", "tx_packets", "tx_bytes", "drops"))
    assert queue_counters(napi, None) == none
    assert queue_counters({"queues": {"rx": [], "tx": []}}, stats) == none


def test_an_rps_files_mask_is_read_as_the_kernel_shows_it():
    assert rps_mask("00000000,00000003\n") == 3
    assert rps_mask("0\n") == 0
    assert rps_mask("ff,00000000\n") == 0xFF << 32
    assert rps_mask(None) is None and rps_mask("zz") is None and rps_mask("") is None


@pytest.mark.parametrize(
    "knob, target, value, control, words",
    [
        ("rx-usecs", None, 1 << 33, None, "`rx-usecs`, which must be between 0 and 4294967295 (got 8589934592)"),
        ("InterruptThrottleRate", None, 8000, None, "the simulated 82599's rate"),
        ("adaptive-rx", None, 1, None, "cannot set on a real device"),
        ("defer-hard-irqs", 3, 1, None, "`defer-hard-irqs` on 3, but the device has 2 NAPI instances (0 to 1)"),
        ("rx-frames", 0, 8, None, "set for the whole device"),
        ("busy_poll_usecs", None, 50, None, "needs --control FILE"),
        ("busy_poll_usecs", 1, 50, "/tmp/c", "every thread"),
        ("rps_cpus", 4, 1, None, "`rps_cpus` on RX queue 4, but the device has 4 (0 to 3)"),
        ("rps_cpus", None, 1 << 63, None, "`rps_cpus`, which must be between 0 and 9223372036854775807"),
    ],
)
def test_what_a_real_device_cannot_take_is_refused_in_one_sentence(knob, target, value, control, words):
    with pytest.raises(PolicyError) as e:
        check_change("P", knob, target, value, 2, control, kernel_ranges(), rx_queues=4)
    assert str(e.value).startswith(f"policy `P` set `{knob}`")
    assert words in str(e.value)


live = pytest.mark.skipif(_why_not_live() is not None, reason=str(_why_not_live()))

POLICY = """
from irqlab.policy import Policy

class Steps(Policy):
    period_us = 20_000

    def __init__(self):
        self.calls = 0

    def observe(self, sample):
        self.calls += 1
        assert sample.napis and sample.cores and sample.softirq_rounds is not None
        assert sample.time_ns == (self.calls - 1) * 20_000_000
        if self.calls == 1:
            return {"gro-flush-timeout": 20000, "defer-hard-irqs": 2}
        if self.calls == 3:
            return {"irq-suspend-timeout": {0: 1000000}}

class Overreach(Steps):
    def observe(self, sample):
        out = super().observe(sample)
        return {"defer-hard-irqs": 1 << 40} if self.calls == 4 else out

class TooFast(Steps):
    period_us = 100

class Steer(Policy):
    period_us = 20_000

    def __init__(self):
        self.masks = []

    def observe(self, sample):
        self.masks.append(sample.rps_cpus)
        if len(self.masks) == 1:
            return {"rps_cpus": 1}

    def fields(self):
        return {"first_mask": float(self.masks[0]), "last_mask": float(self.masks[-1])}
"""


@pytest.fixture
def bed(tmp_path: Path):
    yield from _testbed(tmp_path, "irqlab-tc-")


def _policy(tmp_path: Path) -> Path:
    p = tmp_path / "host_policy.py"
    p.write_text(POLICY)
    return p


def _start(bed: Testbed, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, IRQLAB_STATE_DIR=str(bed.state_dir))
    return subprocess.Popen(["ip", "netns", "exec", bed.ns, str(IRQLAB), "linux", "control", "veth0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for(bed: Testbed, want: tuple[int, int, int], proc: subprocess.Popen[str], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if bed.napi_knobs()[0] == want:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"the NAPI never held {want}: {bed.napi_knobs()}")


@live
def test_control_applies_the_policys_settings_and_puts_them_back_at_the_end(bed: Testbed, tmp_path: Path):
    before = bed.napi_knobs()
    assert before == [(0, 0, 0)]
    proc = _start(bed, "--policy", f"{_policy(tmp_path)}:Steps", "--duration", "3", "--json")
    try:
        _wait_for(bed, (2, 20000, 1000000), proc)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["calls"] >= 100 and report["changes"] == 3
    assert [d["knob"] for d in report["decisions"]] == ["gro-flush-timeout", "defer-hard-irqs", "irq-suspend-timeout"]
    assert [d["time_us"] for d in report["decisions"]] == [0.0, 0.0, 40_000.0]
    assert len(report["restored"]) == 3
    assert "veth0 is back to its settings from before the controller (3 restored)" in err
    assert bed.napi_knobs() == before
    assert not list(bed.state_dir.glob("*.json")), "the saved state is gone with the restore"


@live
def test_sigint_puts_every_knob_back(bed: Testbed, tmp_path: Path):
    proc = _start(bed, "--policy", f"{_policy(tmp_path)}:Steps", "--duration", "600")
    status, out, err = interrupt(proc, lambda: _wait_for(bed, (2, 20000, 1000000), proc))
    assert status == 130, (out, err)
    assert "Traceback" not in err
    assert "the controller stopped early; veth0 is back to its settings" in err
    assert bed.napi_knobs() == [(0, 0, 0)]


@live
def test_a_value_out_of_range_stops_the_controller_and_puts_every_knob_back(bed: Testbed, tmp_path: Path):
    proc = _start(bed, "--policy", f"{_policy(tmp_path)}:Overreach", "--duration", "30")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    lines = err.splitlines()
    assert lines[0] == "irqlab: first call made: Overreach on veth0, then every 20 ms for 30 s", err
    assert lines[1].startswith("irqlab: the controller stopped early; veth0 is back"), err
    assert lines[-1] == ("irqlab: error: policy `Overreach` set `defer-hard-irqs`, which must be between 0 and "
                         "2147483647 (got 1099511627776)")
    assert bed.napi_knobs() == [(0, 0, 0)]


@live
def test_refused_before_anything_changes(bed: Testbed, tmp_path: Path):
    p = _policy(tmp_path)
    fast = bed.irqlab("control", "veth0", "--policy", f"{p}:TooFast", "--duration", "1")
    assert fast.returncode == 2 and "`period_us` = 100; on a real host it must be a number from 1000" in fast.stderr
    nodev = bed.irqlab("control", "nosuch0", "--policy", f"{p}:Steps", "--duration", "1")
    assert nodev.returncode == 2 and nodev.stderr.count("\n") == 1, nodev.stderr
    for bad in ("0", "-1", "nan", "1e9"):
        r = bed.irqlab("control", "veth0", "--policy", f"{p}:Steps", "--duration", bad)
        assert r.returncode == 2 and "--duration must be" in r.stderr, (bad, r.stderr)
    assert bed.napi_knobs() == [(0, 0, 0)]


@live
def test_on_top_of_an_applied_profile_it_puts_back_the_profiles_values(bed: Testbed, tmp_path: Path):
    # The state `apply` saved stays; the controller sets back by hand what
    # it found, and `restore` still returns to before the profile.
    bed.ok("apply", "veth0", "--profile", "busy-wait")
    profile = bed.napi_knobs()
    assert profile == [(100, 5000000, 0)]
    proc = _start(bed, "--policy", f"{_policy(tmp_path)}:Steps", "--duration", "1", "--json")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "back to the settings it had when the controller started (3 put back" in err
    assert json.loads(out)["changes"] == 3
    assert bed.napi_knobs() == profile
    bed.ok("restore", "veth0")
    assert bed.napi_knobs() == [(0, 0, 0)]


@live
def test_control_sets_an_rps_mask_and_writes_the_old_one_back(bed: Testbed, tmp_path: Path):
    path = "/sys/class/net/veth0/queues/rx-0/rps_cpus"
    read = lambda: subprocess.run(["ip", "netns", "exec", bed.ns, "cat", path], capture_output=True, text=True,
                                  check=True).stdout.strip()
    before = read()
    assert int(before.replace(",", ""), 16) == 0
    proc = _start(bed, "--policy", f"{_policy(tmp_path)}:Steer", "--duration", "0.1", "--json")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    report = json.loads(out)
    # The sample showed RPS off, then CPU 0's mask; the file holds its old text again.
    assert report["fields"] == {"first_mask": 0.0, "last_mask": 1.0}
    assert report["decisions"][0] == {"time_us": 0.0, "knob": "rps_cpus", "target": None, "value": 1}
    assert {"knob": "rps_cpus", "queue": 0, "to": before} in report["restored"]
    assert "the RPS masks of veth0 are back (rx-0 " in err
    assert read() == before


def test_the_host_sample_reads_a_kernel_file_only_when_the_policy_reads_its_field(monkeypatch):
    # /proc/net/netstat alone takes a fraction of a millisecond to read: a
    # policy called every millisecond pays only for the fields it reads,
    # each read once per call.
    from irqlab.linux import host_sample as hs

    reads: list[str] = []
    monkeypatch.setattr(hs, "busy_poll_rx_packets", lambda: reads.append("netstat") or 7)
    monkeypatch.setattr(hs, "net_rx_softirqs", lambda: reads.append("softirqs") or 8)
    monkeypatch.setattr(hs, "core_times", lambda: reads.append("stat") or [])
    shown = {"napis": [{"id": 1, "irq": None, "queues": {"rx": [0], "tx": [0]}, "defer_hard_irqs": 2,
                        "gro_flush_timeout": 20000, "irq_suspend_timeout": 0}], "coalesce": None}

    def show():
        reads.append("napi-get")
        return shown

    s = hs.host_sample("irqlab-nosuch0", show, 5_000_000, None, qstats=False)
    assert reads == [] and s.time_ns == 5_000_000 and s.threads == [] and s.busy_poll_usecs == []
    assert s.packets_busy_polled == 7 and s.packets_busy_polled == 7 and reads == ["netstat"]
    assert s.napis == [{"defer_hard_irqs": 2, "gro_flush_timeout_ns": 20000, "irq_suspend_timeout_ns": 0}]
    assert s.queues[0]["irqs"] is None and s.queues[0]["packets"] is None and s.hard_irqs == 0
    assert reads == ["netstat", "napi-get"]
    assert s.softirq_rounds == 8 and s.cores == [] and reads == ["netstat", "napi-get", "softirqs", "stat"]
