"""Two network namespaces joined by a veth pair on the benchmarking range
198.18.0.0/15, set up so that the server's veth has a NAPI instance that
busy polling and IRQ suspension act on.

Two facts about veth (``drivers/net/veth.c``) shape the setup:
- veth hands a packet to the receiver's NAPI (``veth_xdp_rx``) only with GRO
  (or XDP) on the receiving device, and only when the packet is eligible
  (``veth_skb_is_eligible_for_gro``): the *sending* device must have TSO and
  GSO off. Otherwise ``veth_xmit`` delivers with ``netif_rx`` and busy
  polling finds nothing.
- That NAPI is scheduled by the sender (``__veth_xdp_flush`` →
  ``napi_schedule``) instead of a device interrupt. Threaded NAPI, pinned to
  the server core, stands in for an IRQ routed to the application core: a
  "hard interrupt" is a wake-up of that thread.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SERVER_NS = "irqlab-tb-srv"
CLIENT_NS = "irqlab-tb-cli"
SERVER_DEV = "irqlab-tb0"
CLIENT_DEV = "irqlab-tb1"
SERVER_ADDR = "198.18.0.1"
CLIENT_ADDR = "198.18.0.2"
PREFIX = 30


class TestbedError(RuntimeError):
    """The testbed cannot be set up or run; the message is one sentence."""


def sh(*args: str, ns: str | None = None, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise TestbedError(f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout).strip()}")
    return proc


def existing_namespaces() -> set[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@dataclass
class Testbed:
    server_core: int
    client_core: int
    napi_pid: int | None = None
    napi_id: int | None = None
    #: Namespaces this testbed created (and alone may remove).
    created: list[str] = field(default_factory=list)

    def create(self) -> None:
        """Create both namespaces and the veth pair; refuse if they exist."""
        if os.geteuid() != 0:
            raise TestbedError("the testbed needs root (network namespaces, veth, threaded NAPI); run it as root")
        clash = existing_namespaces() & {SERVER_NS, CLIENT_NS}
        if clash:
            raise TestbedError(
                f"network namespace {sorted(clash)[0]} already exists; another testbed may be running "
                f"(remove it with `ip netns del {sorted(clash)[0]}` if not)"
            )
        for ns in (SERVER_NS, CLIENT_NS):
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
        sh("ip", "link", "add", SERVER_DEV, "netns", SERVER_NS, "type", "veth", "peer", "name", CLIENT_DEV, "netns", CLIENT_NS)
        for ns, dev, addr in ((SERVER_NS, SERVER_DEV, SERVER_ADDR), (CLIENT_NS, CLIENT_DEV, CLIENT_ADDR)):
            sh("ip", "addr", "add", f"{addr}/{PREFIX}", "dev", dev, ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        # GRO on the server side gives its veth a NAPI; TSO/GSO off on the
        # client side makes the client's packets eligible for it.
        sh("ethtool", "-K", SERVER_DEV, "gro", "on", ns=SERVER_NS)
        sh("ethtool", "-K", CLIENT_DEV, "tso", "off", "gso", "off", ns=CLIENT_NS)
        # The client's veth has no NAPI (GRO off): veth hands each reply to the
        # backlog of the sending CPU, so the server core also runs the
        # client's receive softirq (NET_RX on the server core). Giving the
        # client a threaded NAPI pinned to the client core instead was tried:
        # on two cores it starves the load generator and makes every
        # measurement noisier.
        sh("ethtool", "-K", SERVER_DEV, "tso", "off", "gso", "off", ns=SERVER_NS)
        # Threaded NAPI, its thread pinned to the server core.
        sh("sh", "-c", f"echo 1 > /sys/class/net/{SERVER_DEV}/threaded", ns=SERVER_NS)
        self.napi_pid = self._find_napi_thread()
        os.sched_setaffinity(self.napi_pid, {self.server_core})

    def _find_napi_thread(self) -> int:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for p in Path("/proc").iterdir():
                if not p.name.isdigit():
                    continue
                try:
                    comm = (p / "comm").read_text().strip()
                except OSError:
                    continue
                if comm.startswith(f"napi/{SERVER_DEV}-"):
                    self.napi_id = int(comm.rsplit("-", 1)[1]) if comm.rsplit("-", 1)[1].isdigit() else None
                    return int(p.name)
            time.sleep(0.05)
        raise TestbedError(f"no threaded NAPI thread for {SERVER_DEV} appeared; does this kernel support threaded NAPI on veth?")

    def destroy(self) -> None:
        """Remove the namespaces this testbed created (and with them the veth
        pair and anything still running inside). Idempotent."""
        for ns in list(self.created):
            if ns in existing_namespaces():
                # Kill anything still running inside first.
                pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
                for pid in pids:
                    try:
                        os.kill(int(pid), 9)
                    except (ProcessLookupError, ValueError):
                        pass
                sh("ip", "netns", "del", ns, check=False)
            self.created.remove(ns)
