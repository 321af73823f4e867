"""Whether a veth's packets reach its NAPI at all: its peer's TSO (issue 62,
item 4).

veth hands a packet to the receiving device's NAPI (``veth_xdp_rx``) only
when the receiver has one (GRO or XDP on) and the packet is eligible
(drivers/net/veth.c, ``veth_xmit`` → ``veth_skb_is_eligible_for_gro``): the
*sending* device, the peer, must have none of ``NETIF_F_ALL_TSO`` (TSO,
TSO6, TSO-ECN, TSO-MANGLEID), or else the packet must be a locally sent one
(``skb->destructor == sock_wfree``: UDP, not TCP, whose skbs carry
``tcp_wfree``) and the receiver must have ``rx-gro-list`` or
``rx-udp-gro-forwarding`` on. Otherwise ``veth_xmit`` delivers with
``netif_rx`` through the backlog: the socket's ``SO_INCOMING_NAPI_ID`` stays
0, so the receiver's per-NAPI knobs and epoll busy polling do nothing for
that traffic. A veth's TSO is on by default. GSO does not enter into it: with
TSO off and GSO on, the stack segments before ``veth_xmit``.

The peer is found with ``ip -details link show`` (``link_index``, and
``link_netnsid`` when it lives in another namespace, named through ``ip
netns list-id``) and its offloads read with ``ethtool -k``, entering its
namespace with ``ip netns exec`` when it is another one (root). Nothing is
changed.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any, Optional

#: Seconds each ``ip`` or ``ethtool`` call may take.
_TIMEOUT_S = 10.0

#: ``ethtool -k`` names of NETIF_F_ALL_TSO (include/linux/netdev_features.h).
TSO_FEATURES = ("tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation",
                "tx-tcp6-segmentation")
#: The receiver's features that let locally sent UDP through with TSO on.
UDP_GRO_FEATURES = ("rx-gro-list", "rx-udp-gro-forwarding")


def _run(argv: list[str]) -> tuple[Optional[str], str]:
    """(stdout, "") or (None, why it failed)."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except FileNotFoundError:
        return None, f"`{argv[0]}` is not installed"
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"`{' '.join(argv)}` failed ({e})"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"`{' '.join(argv)}` failed: {last}"
    return proc.stdout, ""


def features(dev: str, netns: Optional[str] = None) -> tuple[Optional[dict[str, bool]], str]:
    """``ethtool -k DEV`` (in namespace ``netns``) as {feature: on}, or (None, why)."""
    prefix = ["ip", "netns", "exec", netns] if netns else []
    out, why = _run([*prefix, "ethtool", "-k", dev])
    if out is None:
        return None, why
    found: dict[str, bool] = {}
    for line in out.splitlines():
        name, sep, value = line.strip().partition(":")
        if sep and value.split():
            found[name] = value.split()[0] == "on"
    return found, ""


def _json(argv: list[str]) -> tuple[Any, str]:
    out, why = _run(argv)
    if out is None:
        return None, why
    try:
        return json.loads(out or "null"), ""
    except ValueError:
        return None, f"`{' '.join(argv)}` printed no JSON"


def peer_report(dev: str) -> Optional[dict[str, Any]]:
    """For a veth, its peer and whether its packets reach ``dev``'s NAPI:
    ``peer`` (name, or None when it could not be found), ``peer_netns`` (the
    ``ip netns`` name of its namespace; None: this one), ``tso`` (the peer's
    TSO, None when unknown), ``udp_gro`` (``dev``'s rx-gro-list or
    rx-udp-gro-forwarding), ``bypass`` (True: TSO on the peer keeps TCP from
    the NAPI), ``how`` (why something is unknown). None when ``dev`` is not
    a veth or ``ip`` cannot say."""
    links, _ = _json(["ip", "-json", "-details", "link", "show", "dev", dev])
    if not links or not isinstance(links, list):
        return None
    link = links[0]
    if (link.get("linkinfo") or {}).get("info_kind") != "veth":
        return None
    report: dict[str, Any] = {"peer": None, "peer_netns": None, "tso": None, "udp_gro": None, "bypass": None,
                              "how": ""}
    own, _ = features(dev)
    if own is not None:
        report["udp_gro"] = any(own.get(f, False) for f in UDP_GRO_FEATURES)
    index, nsid = link.get("link_index"), link.get("link_netnsid")
    if index is None:
        report["how"] = f"`ip link` names no peer of {dev}"
        return report
    netns_prefix: list[str] = []
    if nsid is not None:
        ids, why = _json(["ip", "-json", "netns", "list-id"])
        names = [i.get("name") for i in ids or [] if i.get("nsid") == nsid and i.get("name")]
        if not names:
            report["how"] = (f"{dev}'s peer (ifindex {index}) lives in network namespace id {nsid}, which has no "
                             f"`ip netns` name here{f' ({why})' if why else ''}")
            return report
        report["peer_netns"] = names[0]
        netns_prefix = ["-netns", names[0]]
    peers, why = _json(["ip", *netns_prefix, "-json", "link", "show"])
    name = next((p.get("ifname") for p in peers or [] if p.get("ifindex") == index), None)
    if name is None:
        report["how"] = why or f"no device of ifindex {index} (the peer) was found"
        return report
    report["peer"] = name
    found, why = features(name, report["peer_netns"])
    if found is None:
        report["how"] = why
        return report
    report["tso"] = any(found.get(f, False) for f in TSO_FEATURES)
    report["bypass"] = report["tso"]
    return report


def peer_command(report: dict[str, Any]) -> str:
    """The command that turns the peer's TSO off."""
    prefix = f"ip netns exec {report['peer_netns']} " if report.get("peer_netns") else ""
    return f"{prefix}ethtool -K {report['peer']} tso off"


def bypass_sentence(dev: str, report: dict[str, Any]) -> str:
    """What TSO on the peer means, and what to do (a note of the doctor)."""
    where = f" (network namespace {report['peer_netns']})" if report.get("peer_netns") else ""
    udp = (f"UDP still reaches it, as {dev} has rx-udp-gro-forwarding or rx-gro-list on"
           if report.get("udp_gro") else
           f"UDP too, unless {dev} turns on rx-udp-gro-forwarding")
    return (f"{dev}'s peer {report['peer']}{where} has TSO on: veth hands a packet to {dev}'s NAPI only when its "
            f"sender does no TSO (drivers/net/veth.c, veth_skb_is_eligible_for_gro), so TCP to {dev} bypasses its "
            f"NAPI ({udp}): TCP sockets get SO_INCOMING_NAPI_ID 0, and per-NAPI knobs and epoll busy polling do "
            f"nothing for TCP; `{peer_command(report)}` turns it off (GSO may stay on)")


__all__ = ["peer_report", "peer_command", "bypass_sentence", "features", "TSO_FEATURES", "UDP_GRO_FEATURES"]
