"""``irqlab linux doctor`` sees that TSO on a veth's peer keeps TCP from the
veth's NAPI (issue 62, item 4), on the real kernel, and a real TCP socket
agrees with it.

Two namespaces, ``irqlab-t62d-<pid>-<n>s`` (veth0 198.18.0.1/30, GRO on: a
NAPI) and ``...c`` (its peer veth1 198.18.0.2/30), deleted afterwards
whatever happened. Needs root, ``ip netns``, ``ethtool`` and Linux 6.13+
(skipped, saying why, elsewhere).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import veth_pair
from test_linux_live import IRQLAB, _why_not_live

pytestmark = pytest.mark.skipif(_why_not_live() is not None, reason=str(_why_not_live()))

# A TCP server in the server namespace: accept one connection, read, print the
# socket's SO_INCOMING_NAPI_ID (include/uapi/asm-generic/socket.h: 56). Bounded by timeouts.
_SERVER = textwrap.dedent("""
    import socket, struct
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.18.0.1", 5562)); s.listen(); s.settimeout(20)
    print("listening", flush=True)
    c, _ = s.accept(); c.settimeout(20)
    c.recv(100)
    print(struct.unpack("I", c.getsockopt(socket.SOL_SOCKET, 56, 4))[0], flush=True)
""")
_CLIENT = "import socket; c = socket.create_connection(('198.18.0.1', 5562), timeout=20); c.sendall(b'x' * 64); c.recv(1)"


def _sh(*args: str) -> str:
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"{' '.join(args)}: {result.stderr}"
    return result.stdout


@pytest.fixture
def pair():
    with veth_pair("t62d") as (server, client):
        _sh("ip", "netns", "exec", server, "ethtool", "-K", "veth0", "gro", "on")
        yield server, client


def _doctor(server: str, *args: str) -> str:
    result = subprocess.run(["ip", "netns", "exec", server, str(IRQLAB), "linux", "doctor", "veth0", *args],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _tcp_napi_id(server: str, client: str) -> int:
    """The SO_INCOMING_NAPI_ID of a TCP connection from veth1 to veth0."""
    srv = subprocess.Popen(["ip", "netns", "exec", server, sys.executable, "-c", _SERVER], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None and srv.stdout.readline().strip() == "listening", srv.stderr
        subprocess.run(["ip", "netns", "exec", client, sys.executable, "-c", _CLIENT], capture_output=True,
                       timeout=60)
        out, err = srv.communicate(timeout=60)
        return int(out.strip().splitlines()[-1]) if out.strip() else pytest.fail(f"the server said nothing: {err}")
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait(timeout=10)


def test_doctor_names_tso_on_the_peer_and_a_real_tcp_socket_agrees(pair) -> None:
    server, client = pair
    # TSO on (a veth's default).
    on_text = _doctor(server)
    on = json.loads(_doctor(server, "--json"))
    peer = on["device"]["veth_peer"]
    assert (peer["peer"], peer["peer_netns"], peer["tso"], peer["bypass"]) == ("veth1", client, True, True), peer
    notes = [n for n in on["notes"] if "has TSO on" in n]
    assert len(notes) == 1 and f"ip netns exec {client} ethtool -K veth1 tso off" in notes[0], on["notes"]
    assert "SO_INCOMING_NAPI_ID 0" in notes[0]
    busy = {v["profile"]: v for v in on["profiles"]}["busy-wait"]
    assert busy["parts"]["epoll"] is False and any("do nothing for TCP" in r for r in busy["reasons"]), busy
    assert _tcp_napi_id(server, client) == 0, "with TSO on the peer, TCP must bypass veth0's NAPI"

    # TSO off on the peer: the doctor's text changes, and TCP reaches the NAPI.
    _sh("ip", "netns", "exec", client, "ethtool", "-K", "veth1", "tso", "off")
    off_text = _doctor(server)
    off = json.loads(_doctor(server, "--json"))
    assert off_text != on_text
    assert "has TSO on" not in off_text and "do nothing for TCP" not in off_text, off_text
    assert f"veth peer veth1 in network namespace {client}: TSO off" in off_text, off_text
    assert {v["profile"]: v for v in off["profiles"]}["busy-wait"]["parts"]["epoll"] is True
    napi = on["device"]["napis"][0]["id"]
    assert _tcp_napi_id(server, client) == napi, "with TSO off on the peer, TCP goes through veth0's NAPI"
