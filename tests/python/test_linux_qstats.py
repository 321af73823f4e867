"""``irqlab.linux.qstats.queue_stats``: per-queue statistics (netdev
``qstats-get``) of a real device.

The live tests make two network namespaces of their own
(``irqlab-t-<pid>-q<n>s`` and ``...c``) joined by a veth pair on the
benchmarking range — veth0 198.18.0.1/30 in the first, veth1 198.18.0.2/30
in the second — and delete them afterwards whatever happened; the API is
called inside them through ``ip netns exec``. They need root and ``ip
netns``, and are skipped, saying which is missing, elsewhere.

A veth has per-queue statistics only where its driver has
``netdev_stat_ops`` (not up to Linux 6.18 at least): where it has none,
``queue_stats`` must say ``None``, and the test of the counters is
skipped with that reason rather than passed.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Optional

import pytest

from irqlab.linux.qstats import COUNTERS, LinuxError, queue_stats

from conftest import sh, veth_pair

#: Datagrams sent from veth1 to veth0 (a bounded number, each received).
PACKETS = 5
KEYS = {"queue_type", "queue_id", *COUNTERS}

def _why_not_live() -> Optional[str]:
    if not sys.platform.startswith("linux"):
        return "qstats-get is Linux's"
    if os.geteuid() != 0:
        return "needs root (network namespaces and veth)"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "needs `ip netns` (iproute2)"
    return None


live = pytest.mark.skipif(_why_not_live() is not None, reason=str(_why_not_live()))


@dataclass
class Pair:
    __test__ = False

    server: str  # veth0, 198.18.0.1
    client: str  # veth1, 198.18.0.2

    def python(self, ns: str, code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)

    def stats(self, ns: str, dev: str) -> Any:
        """``queue_stats(dev)`` inside namespace ``ns``, or the LinuxError's message as ``{"error": ...}``."""
        code = (
            "import json\nfrom irqlab.linux.qstats import queue_stats, LinuxError\n"
            f"try:\n    print(json.dumps(queue_stats({dev!r})))\n"
            "except LinuxError as e:\n    print(json.dumps({'error': str(e)}))\n"
        )
        result = self.python(ns, code)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def send(self, count: int) -> None:
        """``count`` UDP datagrams from veth1 to veth0, each received (5 s at most)."""
        receiver = subprocess.Popen(
            ["ip", "netns", "exec", self.server, sys.executable, "-c",
             "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind(('198.18.0.1', 0))\n"
             "s.settimeout(5)\nprint(s.getsockname()[1], flush=True)\n"
             f"for _ in range({count}):\n    s.recv(64)\nprint('received', flush=True)\n"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            port = int(receiver.stdout.readline())  # type: ignore[union-attr]
            sent = self.python(self.client, "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                               f"for _ in range({count}):\n    s.sendto(b'qstats', ('198.18.0.1', {port}))\n")
            assert sent.returncode == 0, sent.stderr
            out, err = receiver.communicate(timeout=30)
            assert receiver.returncode == 0 and "received" in out, err
        finally:
            if receiver.poll() is None:
                receiver.kill()
                receiver.wait()


@pytest.fixture
def pair():
    with veth_pair("q") as (server, client):
        yield Pair(server, client)


def _total(stats: list[dict[str, Any]], queue_type: str, counter: str) -> Optional[int]:
    values = [q[counter] for q in stats if q["queue_type"] == queue_type and q[counter] is not None]
    return sum(values) if values else None


# -- without the kernel's help -----------------------------------------------


def test_a_device_name_must_be_text():
    with pytest.raises(TypeError, match="dev must be a device name"):
        queue_stats(3)  # type: ignore[arg-type]


def test_an_unknown_device_is_refused_in_one_sentence_naming_it():
    with pytest.raises(LinuxError) as caught:
        queue_stats("irqlab-nonexist")
    assert str(caught.value) == "there is no network device named `irqlab-nonexist` in this network namespace"


# -- live ----------------------------------------------------------------------


@live
def test_a_veth_answers_a_list_of_queues_or_none_and_loopback_none(pair: Pair):
    for ns, dev in ((pair.server, "veth0"), (pair.client, "veth1")):
        stats = pair.stats(ns, dev)
        assert stats is None or isinstance(stats, list), stats
        for queue in stats or []:
            assert set(queue) == KEYS, queue
            assert queue["queue_type"] in ("rx", "tx") and queue["queue_id"] >= 0
            assert all(queue[c] is None or (isinstance(queue[c], int) and queue[c] >= 0) for c in COUNTERS), queue
    assert pair.stats(pair.server, "lo") is None  # loopback keeps no per-queue statistics
    assert pair.stats(pair.server, "veth1") == {
        "error": "there is no network device named `veth1` in this network namespace"
    }


@live
def test_veth_counters_grow_with_the_packets_sent(pair: Pair):
    rx_before, tx_before = pair.stats(pair.server, "veth0"), pair.stats(pair.client, "veth1")
    if rx_before is None:
        assert tx_before is None, "both ends of a veth pair have the same driver"
        pytest.skip(f"veth has no per-queue statistics on this kernel ({platform.release()}): "
                    "qstats-get answers EOPNOTSUPP, so queue_stats says None and there are no counters to see grow")
    pair.send(PACKETS)
    rx_after, tx_after = pair.stats(pair.server, "veth0"), pair.stats(pair.client, "veth1")
    rx = (_total(rx_before, "rx", "rx_packets"), _total(rx_after, "rx", "rx_packets"))
    tx = (_total(tx_before, "tx", "tx_packets"), _total(tx_after, "tx", "tx_packets"))
    assert rx[0] is not None or tx[0] is not None, f"neither rx nor tx packets are counted: {rx_before} {tx_before}"
    # Other traffic (neighbour discovery) may add to the counters; it never takes away.
    if rx[0] is not None:
        assert rx[1] is not None and rx[1] >= rx[0] + PACKETS, f"veth0 rx_packets {rx[0]} -> {rx[1]}"
    if tx[0] is not None:
        assert tx[1] is not None and tx[1] >= tx[0] + PACKETS, f"veth1 tx_packets {tx[0]} -> {tx[1]}"
