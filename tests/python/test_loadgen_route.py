"""``irqlab loadgen`` sends load to 198.18.0.0/15 only where the kernel's
route stays on the machine (no gateway).

Two network namespaces of the test's own (``irqlab-lgr-<pid>-<n>-cli`` and
``-srv``) joined by a veth pair on 198.18.0.0/30: the client side
198.18.0.2 with a default route through 198.18.0.1 (the server side), as a
host whose default gateway leads off the machine would have; the server
side without any default route. Nothing listens anywhere, so a target the
generator accepts ends in "cannot connect" (exit 1: the SYN reached the
other namespace and was refused there), while a refused target is exit 2
before any socket is opened. Both namespaces are deleted afterwards
whatever happened.

Needs root, ``ip netns`` and veth; skipped, saying which is missing, elsewhere.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from irqlab.loadgen import find_binary

from conftest import sh

IRQLAB = Path(sys.executable).with_name("irqlab")
_numbers = itertools.count()


def _why_not_live() -> Optional[str]:
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "needs root (to create network namespaces)"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "needs `ip netns` (iproute2)"
    if find_binary() is None:
        return "irqlab-loadgen is not built (make setup)"
    return None


pytestmark = pytest.mark.skipif(_why_not_live() is not None, reason=str(_why_not_live()))


@dataclass
class Pair:
    cli: str
    srv: str

    def loadgen(self, ns: str, server: str) -> subprocess.CompletedProcess[str]:
        binary = find_binary()
        assert binary is not None
        return subprocess.run(
            ["ip", "netns", "exec", ns, str(binary), "--server", server, "--duration", "0.1", "--no-preload"],
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture
def pair() -> Iterator[Pair]:
    base = f"irqlab-lgr-{os.getpid()}-{next(_numbers)}"
    p = Pair(f"{base}-cli", f"{base}-srv")
    try:
        sh("ip", "netns", "add", p.cli)
        sh("ip", "netns", "add", p.srv)
        sh("ip", "-n", p.cli, "link", "add", "lgr0", "type", "veth", "peer", "name", "lgr1", "netns", p.srv)
        sh("ip", "-n", p.cli, "addr", "add", "198.18.0.2/30", "dev", "lgr0")
        sh("ip", "-n", p.srv, "addr", "add", "198.18.0.1/30", "dev", "lgr1")
        for ns, dev in ((p.cli, "lgr0"), (p.srv, "lgr1"), (p.cli, "lo"), (p.srv, "lo")):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", p.cli, "route", "add", "default", "via", "198.18.0.1")
        sh("ip", "-n", p.cli, "route", "add", "198.18.9.0/24", "via", "198.18.0.1")
        yield p
    finally:
        for ns in (p.cli, p.srv):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _refused(result: subprocess.CompletedProcess[str], server: str, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"irqlab-loadgen: error: --server {server} "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert result.stdout == ""


def _accepted(result: subprocess.CompletedProcess[str]) -> None:
    # Accepted by the route check; nothing listens, so the connection is refused.
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "cannot connect" in result.stderr and "Connection refused" in result.stderr, result.stderr


def test_a_target_behind_the_default_gateway_is_refused(pair: Pair) -> None:
    # 198.19.5.5 is in the range but this namespace would send it to its
    # default gateway: off the machine, were the gateway a real router.
    _refused(pair.loadgen(pair.cli, "198.19.5.5:11211"), "198.19.5.5:11211", "gateway 198.18.0.1", "directly connected")
    # So is one behind a gateway on an explicit route.
    _refused(pair.loadgen(pair.cli, "198.18.9.9:11211"), "198.18.9.9:11211", "gateway 198.18.0.1")


def test_a_target_without_a_route_is_refused(pair: Pair) -> None:
    _refused(pair.loadgen(pair.srv, "198.19.5.5:11211"), "198.19.5.5:11211", "no route in this network namespace")


def test_directly_connected_local_and_loopback_targets_are_accepted(pair: Pair) -> None:
    _accepted(pair.loadgen(pair.cli, "198.18.0.1:11211"))  # the peer, on the veth
    _accepted(pair.loadgen(pair.cli, "198.18.0.2:11211"))  # this namespace's own address
    _accepted(pair.loadgen(pair.cli, "127.0.0.1:11211"))


def test_irqlab_loadgen_refuses_it_too(pair: Pair) -> None:
    if not IRQLAB.exists():
        pytest.skip(f"{IRQLAB} is not installed (run make setup)")
    result = subprocess.run(
        ["ip", "netns", "exec", pair.cli, str(IRQLAB), "loadgen", "--server", "198.19.5.5:11211", "--duration", "0.1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    _refused(result, "198.19.5.5:11211", "gateway 198.18.0.1")
