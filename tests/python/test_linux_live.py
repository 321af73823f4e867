"""``irqlab linux show|apply|restore`` on the real kernel.

Each test gets a network namespace of its own (``irqlab-t-<pid>-<n>``, or
``irqlab-t32d-<pid>-<n>`` for the tests of the doctor in a namespace and of
restore after a hand change) with a
veth pair on the benchmarking range — veth0 198.18.0.1/30 with GRO on, which
gives it a NAPI, and veth1 198.18.0.2/30 with GRO off, which leaves it
without, and TSO off, which lets TCP to veth0 through its NAPI — and the namespace is deleted afterwards whatever happened. The
commands run inside it as ``ip netns exec NS .venv/bin/irqlab linux ...``,
with their saved state in the test's own directory (``IRQLAB_STATE_DIR``).

Needs root, ``ip netns``, ``ethtool`` and Linux 6.13+; skipped, saying which
is missing, elsewhere. CI runs as root, so there these tests run.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from irqlab.linux.cli import knob_name
from irqlab.profiles import PROFILES, profile_knobs

from conftest import sh

IRQLAB = Path(sys.executable).with_name("irqlab")
_numbers = itertools.count()


def _kernel_version() -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", platform.release())
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _why_not_live() -> Optional[str]:
    if not sys.platform.startswith("linux"):
        return "the real-kernel commands need Linux"
    if os.geteuid() != 0:
        return "needs root (network namespaces and napi-set)"
    if _kernel_version() < (6, 13):
        return f"needs Linux 6.13+ for per-NAPI configuration and IRQ suspension (this is {platform.release()})"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "needs `ip netns` (iproute2)"
    if shutil.which("ethtool") is None:
        return "needs ethtool (to turn GRO on, which gives a veth its NAPI)"
    if not IRQLAB.exists():
        return f"{IRQLAB} is not installed (run make setup)"
    return None


pytestmark = pytest.mark.skipif(_why_not_live() is not None, reason=str(_why_not_live()))


@dataclass
class Testbed:
    __test__ = False  # not a test class, whatever its name

    ns: str
    state_dir: Path
    #: A home any user can write to (for the runs as nobody).
    home: Path

    def irqlab(self, *args: str, user: Optional[str] = None) -> subprocess.CompletedProcess[str]:
        """``ip netns exec NS [setpriv ...] .venv/bin/irqlab linux ARGS``."""
        env = dict(os.environ, IRQLAB_STATE_DIR=str(self.state_dir))
        prefix = ["ip", "netns", "exec", self.ns]
        if user is not None:
            prefix += ["setpriv", f"--reuid={user}", "--regid=nogroup", "--clear-groups"]
            # Whatever the package imports must not need root's home.
            env["HOME"] = env["MPLCONFIGDIR"] = str(self.home)
        return subprocess.run(
            [*prefix, str(IRQLAB), "linux", *args], capture_output=True, text=True, env=env, timeout=120
        )

    def ok(self, *args: str) -> str:
        result = self.irqlab(*args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def show(self, dev: str = "veth0") -> dict[str, Any]:
        return json.loads(self.ok("show", dev, "--json"))

    def napi_get(self, dev: str = "veth0") -> list[dict[str, Any]]:
        """The device's NAPIs through the Python API (napi-get), without the
        command's start-up cost."""
        return self.api(f"show({dev!r})")["napis"]

    def api(self, call: str) -> Any:
        """Evaluate ``knobs.<call>`` inside the namespace; its JSON result."""
        code = f"import json; from irqlab.linux import knobs; print(json.dumps(knobs.{call}))"
        env = dict(os.environ, IRQLAB_STATE_DIR=str(self.state_dir))
        result = subprocess.run(
            ["ip", "netns", "exec", self.ns, sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def napi_knobs(self, dev: str = "veth0") -> list[tuple[int, int, int]]:
        return [(n["defer_hard_irqs"], n["gro_flush_timeout"], n["irq_suspend_timeout"]) for n in self.show(dev)["napis"]]

    def sysfs(self, dev: str, knob: str, value: int) -> None:
        """Set a device-wide knob through sysfs (it reaches every NAPI)."""
        sh("ip", "netns", "exec", self.ns, "sh", "-c", f"echo {value} > /sys/class/net/{dev}/{knob}")


@pytest.fixture
def bed(tmp_path: Path):
    yield from _testbed(tmp_path, "irqlab-t-")


@pytest.fixture
def bed32(tmp_path: Path):
    """The same testbed in a namespace named ``irqlab-t32d-<pid>-<n>``, the
    prefix of the doctor and restore tests below."""
    yield from _testbed(tmp_path, "irqlab-t32d-")


def _testbed(tmp_path: Path, prefix: str):
    ns = f"{prefix}{os.getpid()}-{next(_numbers)}"
    home = Path(tempfile.mkdtemp(prefix="irqlab-t-home-"))
    os.chmod(home, 0o777)
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
        sh("ip", "-n", ns, "addr", "add", "198.18.0.1/30", "dev", "veth0")
        sh("ip", "-n", ns, "addr", "add", "198.18.0.2/30", "dev", "veth1")
        for dev in ("lo", "veth0", "veth1"):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "netns", "exec", ns, "ethtool", "-K", "veth0", "gro", "on")
        # As the testbed has it (testbed/netns.py): with TSO on veth1, TCP to
        # veth0 would bypass its NAPI, and the doctor says so (its own test below).
        sh("ip", "netns", "exec", ns, "ethtool", "-K", "veth1", "tso", "off")
        testbed = Testbed(ns, tmp_path / "state", home)
        napis = testbed.napi_get()
        assert len(napis) == 1, f"veth0 with GRO on should have one NAPI (napi-get): {napis}"
        yield testbed
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def _profile_napi_knobs(profile: str) -> tuple[int, int, int]:
    # From the scenario layer, independently of the Rust side's Profile::knobs.
    k = profile_knobs()[profile]
    return (k["napi.napi_defer_hard_irqs"], k["napi.gro_flush_timeout"], k["napi.irq_suspend_timeout"])


def _one_error_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("irqlab: error: "), lines[0]
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- show -------------------------------------------------------------------


def test_show_reports_the_veth_napi_and_no_coalescing(bed: Testbed):
    report = bed.show()
    assert report["device"] == "veth0" and report["ifindex"] > 1
    (napi,) = report["napis"]
    assert isinstance(napi["id"], int) and napi["id"] > 0
    assert napi["irq"] is None and napi["pid"] is None  # a veth has no IRQ; not threaded
    assert (napi["defer_hard_irqs"], napi["gro_flush_timeout"], napi["irq_suspend_timeout"]) == (0, 0, 0)
    assert napi["threaded"] in ("disabled", None)
    assert report["coalesce"] is None
    assert report["kernel"]["per_napi_config"] and report["kernel"]["irq_suspend_timeout"]

    text = bed.ok("show", "veth0")
    assert re.search(rf"^{napi['id']}\s", text, re.M), text
    for column in ("irq", "queues", "pid", "defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout", "threaded"):
        assert column in text
    assert "coalescing: not supported by this device" in text


def test_show_of_a_device_without_napi_says_so(bed: Testbed):
    assert bed.napi_get("veth1") == []
    assert "NAPI: none" in bed.ok("show", "lo")


# -- apply and restore ------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_apply_sets_the_profile_and_restore_brings_back_the_exact_original(bed: Testbed, profile: str):
    # Distinctive previous values, so that restore is seen to put back exactly these.
    bed.sysfs("veth0", "napi_defer_hard_irqs", 7)
    bed.sysfs("veth0", "gro_flush_timeout", 12345)
    original = bed.napi_knobs()
    assert original == [(7, 12345, 0)]

    report = json.loads(bed.ok("apply", "veth0", "--profile", profile, "--json"))
    assert report["dry_run"] is False and report["profile"] == profile
    assert {s["knob"] for s in report["skipped"]} == {"adaptive-rx", "rx-usecs", "rx-frames"}
    assert all(s["reason"] == "not supported by this device" for s in report["skipped"])
    assert Path(report["state_file"]).parent == bed.state_dir
    assert report["warnings"] == []
    assert bed.napi_knobs() == [_profile_napi_knobs(profile)]  # read back through napi-get

    restored = json.loads(bed.ok("restore", "veth0", "--json"))
    assert not Path(restored["state_file"]).exists()
    assert bed.napi_knobs() == original
    assert restored["changed_since_apply"] == []  # nothing was changed by hand


def test_exec_of_a_daemon_keeps_the_settings_until_restore(bed: Testbed):
    import signal

    bed.sysfs("veth0", "gro_flush_timeout", 12345)
    original = bed.napi_knobs()
    # The program forks a process with the shim and exits 0 at once (nginx's
    # default): the server goes on, so the device must keep the profile.
    r = bed.irqlab("exec", "--profile", "irq-suspend", "--napi-dev", "veth0", "--", "sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!")
    left = int(r.stdout.split()[0]) if r.stdout.split() else None
    try:
        assert r.returncode == 0, r.stderr
        assert "as a daemon does; veth0 keeps the profile's settings until `irqlab linux restore veth0`" in r.stderr
        assert bed.napi_knobs() == [_profile_napi_knobs("irq-suspend")]
    finally:
        if left is not None:
            try:
                os.kill(left, signal.SIGKILL)
            except ProcessLookupError:
                pass
    bed.ok("restore", "veth0")
    assert bed.napi_knobs() == original
    # A program that does not daemonize has the device restored as it ends.
    r = bed.irqlab("exec", "--profile", "irq-suspend", "--napi-dev", "veth0", "--", "true")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert bed.napi_knobs() == original


def test_later_applies_keep_the_first_saved_state(bed: Testbed):
    for profile in PROFILES:
        text = bed.ok("apply", "veth0", "--profile", profile)
        assert f"profile {profile}" in text and "restore veth0" in text
        # Named as `irqlab profiles` lists them (coalesce.rx-frames is one of its rows).
        assert ("skipped: coalescing: coalesce.adaptive-rx true" in text
                or "skipped: coalescing: coalesce.adaptive-rx false" in text), text
        assert "coalesce.rx-frames 128" in text and "coalesce.rx-frames" in profile_knobs()[profile]
        assert bed.napi_knobs() == [_profile_napi_knobs(profile)]
    text = bed.ok("restore", "veth0")
    assert "restored" in text and f"profile {PROFILES[0]}" in text
    assert bed.napi_knobs() == [(0, 0, 0)]
    _one_error_line(bed.irqlab("restore", "veth0"), "no saved state", "veth0")


def test_dry_run_changes_nothing(bed: Testbed):
    before = bed.show()
    report = json.loads(bed.ok("apply", "veth0", "--profile", "irq-suspend", "--dry-run", "--json"))
    assert report["dry_run"] is True and report["state_file"] is None
    assert {(c["knob"], c["to"]) for c in report["changed"]} == {
        ("defer_hard_irqs", 100),
        ("gro_flush_timeout", 20_000),
        ("irq_suspend_timeout", 20_000_000),
    }
    plan = bed.api("plan('veth0', 'irq-suspend')")  # the Python API's plan is the dry run's content
    assert (plan["changes"], plan["skipped"]) == (report["changed"], report["skipped"])
    text = bed.ok("apply", "veth0", "--profile", "busy-wait", "--dry-run")
    assert "would change" in text and "nothing was changed (--dry-run)" in text
    assert bed.show() == before
    assert not bed.state_dir.exists() or not any(bed.state_dir.iterdir())


def test_apply_to_one_napi_by_id(bed: Testbed):
    napi_id = bed.show()["napis"][0]["id"]
    report = json.loads(bed.ok("apply", "veth0", "--profile", "busy-wait", "--napi", str(napi_id), "--json"))
    assert report["napi"] == napi_id
    assert {c["napi_id"] for c in report["changed"]} == {napi_id}
    assert bed.napi_knobs() == [_profile_napi_knobs("busy-wait")]
    bed.ok("restore", "veth0")
    _one_error_line(bed.irqlab("apply", "veth0", "--profile", "busy-wait", "--napi", str(napi_id + 1000)), str(napi_id + 1000))



def _gro(bed: Testbed, on: bool) -> None:
    """Turn veth0's GRO on or off: veth adds or deletes its NAPI
    (veth_napi_add/veth_napi_del), so it comes back with a new id."""
    sh("ip", "netns", "exec", bed.ns, "ethtool", "-K", "veth0", "gro", "on" if on else "off")


def test_restore_after_gro_was_toggled_puts_the_settings_on_the_new_napi(bed: Testbed):
    (old,) = bed.napi_get()
    bed.ok("apply", "veth0", "--profile", "irq-suspend")
    _gro(bed, False)
    _gro(bed, True)
    (new,) = bed.napi_get()
    assert new["id"] != old["id"]
    # The kernel leaves the new NAPI with irq-suspend's irq_suspend_timeout:
    # netif_napi_add resets only defer_hard_irqs and gro_flush_timeout.
    assert new["irq_suspend_timeout"] == _profile_napi_knobs("irq-suspend")[2]

    report = json.loads(bed.ok("restore", "veth0", "--json"))
    assert [(r["saved_napi_id"], r["napi_id"]) for r in report["replaced"]] == [(old["id"], new["id"])]
    assert report["unrestored"] == []
    assert {c["napi_id"] for c in report["restored"]} == {new["id"]}
    assert bed.napi_knobs() == [(0, 0, 0)]
    assert not Path(report["state_file"]).exists()


def test_restore_tells_where_the_settings_went(bed: Testbed):
    (old,) = bed.napi_get()
    bed.ok("apply", "veth0", "--profile", "busy-wait")
    _gro(bed, False)
    _gro(bed, True)
    (new,) = bed.napi_get()
    text = bed.ok("restore", "veth0")
    assert f"NAPI {old['id']} is gone; its settings went to NAPI {new['id']}, since it is device `veth0`'s only NAPI now" in text
    assert bed.napi_knobs() == [(0, 0, 0)]


def test_restore_with_nowhere_to_put_the_settings_keeps_them_and_fails(bed: Testbed):
    (old,) = bed.napi_get()
    bed.ok("apply", "veth0", "--profile", "irq-suspend")
    (state,) = bed.state_dir.iterdir()
    _gro(bed, False)  # no NAPI at all now
    line = _one_error_line(bed.irqlab("restore", "veth0"), f"NAPI {old['id']}", "has no NAPI now", str(state))
    assert "could not be restored in full" in line
    assert state.exists()  # the only record of those settings is kept
    _gro(bed, True)
    report = json.loads(bed.ok("restore", "veth0", "--json"))
    assert report["unrestored"] == [] and len(report["replaced"]) == 1
    assert bed.napi_knobs() == [(0, 0, 0)]
    assert not state.exists()


def test_per_napi_settings_do_not_show_in_the_device_wide_sysfs_files(bed: Testbed):
    # As the README says (Use it on a real server): napi-set changes the
    # NAPI, not the device's defaults in sysfs.
    def sysfs(knob: str) -> int:
        out = sh("ip", "netns", "exec", bed.ns, "cat", f"/sys/class/net/veth0/{knob}").stdout
        return int(out)

    bed.ok("apply", "veth0", "--profile", "irq-suspend")
    assert bed.napi_knobs() == [_profile_napi_knobs("irq-suspend")]
    assert (sysfs("napi_defer_hard_irqs"), sysfs("gro_flush_timeout")) == (0, 0)
    bed.ok("restore", "veth0")


# -- refusals ---------------------------------------------------------------


REFUSALS = [
    (["show", "nosuch0"], ["nosuch0", "no network device"]),
    (["apply", "nosuch0", "--profile", "busy-wait"], ["nosuch0"]),
    (["restore", "nosuch0"], ["nosuch0"]),
    (["apply", "lo", "--profile", "busy-wait"], ["`lo`", "no NAPI"]),
    (["apply", "veth1", "--profile", "irq-suspend"], ["`veth1`", "no NAPI"]),
    (["apply", "veth0", "--profile", "fast"], ["fast", "irq-suspend"]),
    (["apply", "veth0", "--profile", "busy-wait", "--napi", "x"], ["--napi"]),
    (["apply", "veth0"], ["--profile"]),
    (["restore", "veth0"], ["no saved state", "veth0"]),
]


def test_refusals_are_one_line_exit_2_and_change_nothing(bed: Testbed):
    # One namespace for all of them: each command costs the package's start-up.
    before = bed.show()
    for args, needles in REFUSALS:
        _one_error_line(bed.irqlab(*args), *needles)
    assert bed.show() == before
    assert not bed.state_dir.exists() or not any(bed.state_dir.iterdir())


def test_not_root_is_refused_before_anything_changes(bed: Testbed):
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run as nobody")
    before = bed.show()
    for args in (["apply", "veth0", "--profile", "irq-suspend"], ["restore", "veth0"]):
        _one_error_line(bed.irqlab(*args, user="nobody"), "needs root")
    assert bed.show() == before
    # Reading needs no privilege, nor does a dry run.
    shown = bed.irqlab("show", "veth0", "--json", user="nobody")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == before
    dry = bed.irqlab("apply", "veth0", "--profile", "irq-suspend", "--dry-run", user="nobody")
    assert dry.returncode == 0, dry.stderr


# -- irqlab linux doctor ----------------------------------------------------------


def test_doctor_on_a_veth_with_a_napi_reports_it_and_changes_nothing(bed: Testbed) -> None:
    before = bed.show()
    bed.sysfs("veth0", "threaded", 1)
    threaded_before = bed.show()
    report = json.loads(bed.ok("doctor", "veth0", "--json"))
    assert bed.show() == threaded_before, "doctor changed the device"
    assert before["napis"][0]["id"] == report["device"]["napis"][0]["id"]
    dev = report["device"]
    assert dev["device"] == "veth0" and len(dev["napis"]) == 1
    assert dev["threaded_sysfs"] == "1" and dev["napis"][0]["pid"]
    # veth has no coalescing and its NAPI no IRQ.
    assert dev["coalesce_params"] == [] and dev["irqs"] == []
    f = report["features"]
    assert f["per_napi"]["asked"] == "veth0" and f["per_napi"]["irq_suspend_timeout"] is True
    assert f["epoll_params"]["available"] is True
    verdicts = {v["profile"]: v for v in report["profiles"]}
    # Busy polling and the per-NAPI knobs work on veth0; its coalescing part
    # does nothing, so every profile that sets coalescing works only partly.
    assert verdicts["irq-suspend"]["works"] == "partly"
    assert any("has no coalescing" in r for r in verdicts["irq-suspend"]["reasons"])
    assert not any("NAPI" in r for r in verdicts["irq-suspend"]["reasons"])
    assert any("threaded" in n for n in report["notes"])
    text = bed.ok("doctor", "veth0")
    assert "device veth0" in text and "irq-suspend" in text


def test_doctor_on_a_device_without_napi_says_what_does_nothing(bed: Testbed) -> None:
    report = json.loads(bed.ok("doctor", "veth1", "--json"))
    assert report["device"]["napis"] == []
    # The kernel's per-NAPI support is asked on veth0, the device that has a NAPI.
    assert report["features"]["per_napi"]["asked"] == "veth0"
    verdicts = {v["profile"]: v for v in report["profiles"]}
    assert all(v["works"] == "no" for v in verdicts.values()), verdicts
    assert any("has no NAPI" in r for r in verdicts["busy-wait"]["reasons"])
    assert any("veth1 has no NAPI" in n for n in report["notes"])
    lo = json.loads(bed.ok("doctor", "lo", "--json"))
    assert lo["device"]["napis"] == [] and lo["device"]["coalesce_params"] == []


def test_doctor_refuses_a_device_that_is_not_there(bed: Testbed) -> None:
    result = bed.irqlab("doctor", "nosuch0")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "nosuch0" in result.stderr


# -- the doctor in a namespace; restore after a hand change (irqlab-t32d-*) ---


def test_doctor_in_a_namespace_prints_no_none_and_says_where_each_sysctl_lives(bed32: Testbed) -> None:
    text = bed32.ok("doctor", "veth0")
    assert "None" not in text, text
    assert "network namespace: not the initial one" in text
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("net.core.")]
    assert len(lines) == 6, text
    assert all("(global" in line or "(per-namespace" in line for line in lines), lines
    report = json.loads(bed32.ok("doctor", "veth0", "--json"))
    assert report["netns"]["initial"] is False
    for key, info in report["sysctl_info"].items():
        value = report["sysctls"][key]
        # Every sysctl has a value or says why not; these six are global, hidden here.
        assert (info["scope"], info["visible_here"]) == ("global", False), (key, info)
        assert value is not None or info["reason"], (key, info)
    # As root, from an ancestor in the initial namespace (this test's own
    # process, when it runs there), they are read there: the host's values.
    host = Path("/proc/sys/net/core/busy_poll")
    if host.exists():
        for name in ("busy_poll", "busy_read", "netdev_budget", "netdev_max_backlog"):
            assert report["sysctls"][f"net.core.{name}"] == int(Path(f"/proc/sys/net/core/{name}").read_text())
        assert report["sysctl_info"]["net.core.busy_poll"]["read_in"].startswith("the initial network namespace")
        assert f"net.core.busy_poll: not visible in this network namespace (global; initial namespace value: " \
               f"{int(host.read_text())})" in text
        # The notes that depend on them are kept.
        if report["sysctls"]["net.core.busy_poll"] == 0 and report["sysctls"]["net.core.busy_read"] == 0:
            assert any("busy_poll and busy_read are 0" in n for n in report["notes"])


def test_doctor_verdicts_follow_the_plan_apply_dry_run_makes(bed32: Testbed) -> None:
    # veth0 has a NAPI (GRO on) and no coalescing: no-coalescing's per-NAPI
    # knobs take effect there, so it works partly, not "no".
    bed32.sysfs("veth0", "gro_flush_timeout", 12345)
    report = json.loads(bed32.ok("doctor", "veth0", "--json"))
    verdicts = {v["profile"]: v for v in report["profiles"]}
    for profile in ("no-coalescing", "adaptive-coalescing"):
        v = verdicts[profile]
        assert v["works"] == "partly", v
        dry = json.loads(bed32.ok("apply", "veth0", "--profile", profile, "--dry-run", "--json"))
        # A change (gro_flush_timeout 12345 -> 0) and the knobs already at the value count.
        assert any(c["knob"] == "gro_flush_timeout" for c in dry["changed"]), dry
        for c in dry["changed"] + dry["unchanged"]:
            assert v["parts"][knob_name(c["knob"])] is True, (profile, c)
        for skip in dry["skipped"]:
            if skip["to"] not in (0, False):
                assert v["parts"][knob_name(skip["knob"])] is False, (profile, skip)
    assert not re.search(r"^  (no-coalescing|adaptive-coalescing) +no ", bed32.ok("doctor", "veth0"), re.M)
    assert bed32.napi_knobs() == [(0, 12345, 0)], "doctor or the dry run changed the device"


def test_restore_after_a_hand_change_says_which_knob_and_still_restores_the_original(bed32: Testbed) -> None:
    bed32.sysfs("veth0", "gro_flush_timeout", 12345)
    original = bed32.napi_knobs()
    (napi,) = bed32.napi_get()
    bed32.ok("apply", "veth0", "--profile", "busy-wait")
    bed32.ok("apply", "veth0", "--profile", "irq-suspend")  # a later apply updates what irqlab left
    assert bed32.napi_knobs() == [_profile_napi_knobs("irq-suspend")]
    # By hand: the device-wide sysfs file sets every NAPI's value (netdev_set_gro_flush_timeout).
    bed32.sysfs("veth0", "gro_flush_timeout", 5000)
    text = bed32.ok("restore", "veth0")
    said = [line for line in text.splitlines() if "changed since apply" in line]
    assert said == [f"restore: veth0 NAPI {napi['id']} napi.gro_flush_timeout was 20000 ns when applied, is now "
                    f"5000 ns (changed since apply); restoring 12345 ns"], text
    assert bed32.napi_knobs() == original  # restored all the same
    assert not any(bed32.state_dir.iterdir())

    # --json: the same, as data; a knob set back by hand to its original is said too.
    bed32.ok("apply", "veth0", "--profile", "irq-suspend")
    bed32.sysfs("veth0", "gro_flush_timeout", 12345)
    report = json.loads(bed32.ok("restore", "veth0", "--json"))
    assert [(h["knob"], h["applied"], h["now"], h["restoring"]) for h in report["changed_since_apply"]] == [
        ("gro_flush_timeout", 20000, 12345, 12345)]
    assert bed32.napi_knobs() == original


def test_a_state_file_without_the_record_of_what_apply_set_restores_as_before(bed32: Testbed) -> None:
    original = bed32.napi_knobs()
    bed32.ok("apply", "veth0", "--profile", "irq-suspend")
    (state,) = bed32.state_dir.iterdir()
    saved = json.loads(state.read_text())
    assert saved["format"] == 3 and {a["knob"] for a in saved["applied"]} >= {"defer_hard_irqs", "gro_flush_timeout"}
    # As an irqlab that did not record it wrote the file.
    del saved["applied"]
    state.write_text(json.dumps(saved))
    bed32.sysfs("veth0", "gro_flush_timeout", 5000)
    text = bed32.ok("restore", "veth0")
    assert "changed since apply" not in text, text
    assert bed32.napi_knobs() == original
