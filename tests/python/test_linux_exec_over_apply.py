"""``irqlab linux exec --napi-dev DEV`` after ``irqlab linux apply DEV``
(issue 62, item 3): at its end exec returns DEV to the values in place when
it started (the applied ones) and keeps the state the apply saved, so that
``irqlab linux restore`` still returns to the settings from before the apply
— as ``linux tune`` and ``linux control`` do. On a veth pair in a private
network namespace, with the saved states in a directory of the test's own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

IRQLAB = Path(sys.executable).with_name("irqlab")


def _why_not() -> str | None:
    if not sys.platform.startswith("linux"):
        return "Linux only"
    if os.geteuid() != 0:
        return "a veth in a network namespace and napi-set need root"
    if shutil.which("ip") is None or shutil.which("ethtool") is None:
        return "iproute2 and ethtool are needed"
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    if (major, minor) < (6, 13):
        return f"kernel {os.uname().release} is older than 6.13 (no per-NAPI settings)"
    if not IRQLAB.exists():
        return "the irqlab command is not installed in the virtualenv (make setup)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


def sh(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, timeout=30)


@dataclass
class Veth:
    ns: str
    state_dir: Path

    def irqlab(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, IRQLAB_STATE_DIR=str(self.state_dir))
        return subprocess.run(["ip", "netns", "exec", self.ns, str(IRQLAB), "linux", *args],
                              capture_output=True, text=True, env=env, timeout=120)

    def napi_knobs(self) -> list[tuple[int, int, int]]:
        r = self.irqlab("show", "veth0", "--json")
        assert r.returncode == 0, r.stderr
        return knobs_of(r.stdout)


def knobs_of(show_json: str) -> list[tuple[int, int, int]]:
    return [(n["defer_hard_irqs"], n["gro_flush_timeout"], n["irq_suspend_timeout"])
            for n in json.loads(show_json)["napis"]]


@pytest.fixture
def veth(tmp_path: Path) -> Iterator[Veth]:
    ns = f"irqlab-t62e-{os.getpid()}"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
        for dev in ("lo", "veth0", "veth1"):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "netns", "exec", ns, "ethtool", "-K", "veth0", "gro", "on")  # gives veth0 its NAPI
        bed = Veth(ns, tmp_path / "state")
        assert len(bed.napi_knobs()) == 1
        yield bed
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


BUSY_WAIT = (100, 5_000_000, 0)  # irqlab profiles: napi_defer_hard_irqs, gro_flush_timeout, irq_suspend_timeout
IRQ_SUSPEND = (100, 20_000, 20_000_000)


def test_exec_over_an_apply_returns_to_the_applied_values_and_keeps_the_saved_state(veth: Veth):
    before = veth.napi_knobs()
    assert before != [BUSY_WAIT]
    r = veth.irqlab("apply", "veth0", "--profile", "busy-wait")
    assert r.returncode == 0, r.stderr
    assert veth.napi_knobs() == [BUSY_WAIT]

    # The program sees irq-suspend in force (it reads the device back).
    r = veth.irqlab("exec", "--profile", "irq-suspend", "--napi-dev", "veth0", "--",
                    str(IRQLAB), "linux", "show", "veth0", "--json")
    assert r.returncode == 0, r.stderr
    assert knobs_of(r.stdout) == [IRQ_SUSPEND]
    assert r.stderr == "", r.stderr
    # Back to the applied values, not to those from before the apply.
    assert veth.napi_knobs() == [BUSY_WAIT]

    # A knob changed by hand while the program ran is put back all the same,
    # and said, as `irqlab linux restore` says it.
    r = veth.irqlab("exec", "--profile", "irq-suspend", "--napi-dev", "veth0", "--",
                    "sh", "-c", "echo 5000 > /sys/class/net/veth0/gro_flush_timeout")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "napi.gro_flush_timeout was 20000 ns when applied, is now 5000 ns" in lines[0], lines
    assert lines[0].endswith("restoring 5000000 ns"), lines[0]
    assert veth.napi_knobs() == [BUSY_WAIT]

    # The apply's saved state is still there: restore goes back before it.
    r = veth.irqlab("restore", "veth0")
    assert r.returncode == 0, r.stderr
    assert veth.napi_knobs() == before


def test_exec_without_an_earlier_apply_still_restores_and_leaves_no_state(veth: Veth):
    before = veth.napi_knobs()
    r = veth.irqlab("exec", "--profile", "irq-suspend", "--napi-dev", "veth0", "--", "true")
    assert r.returncode == 0, r.stderr
    assert veth.napi_knobs() == before
    r = veth.irqlab("restore", "veth0")
    assert r.returncode != 0 and len(r.stderr.splitlines()) == 1, r.stderr
