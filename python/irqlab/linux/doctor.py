"""``irqlab linux doctor [DEV]``: what this host can do about interrupts and
busy polling, what it does now, and what that means for each profile.

Everything is read or probed, never changed:

- the kernel's features, each tried rather than inferred from the version:
  the netdev netlink family and which per-NAPI attributes it reports
  (``defer-hard-irqs``/``gro-flush-timeout`` and ``irq-suspend-timeout``,
  Linux 6.13; per-NAPI ``threaded``, 6.17) on a device that has a NAPI;
  ``EPIOCGPARAMS`` on a fresh epoll instance (6.9); ``SO_PREFER_BUSY_POLL``
  and ``SO_BUSY_POLL_BUDGET`` set to 0 on a fresh socket (5.11); io_uring's
  ``IORING_REGISTER_NAPI`` on a fresh ring, unregistered at once (6.9);
  ``/sys/class/net/*/threaded`` (5.12);
- the network namespace it runs in (the initial one or not), and the
  sysctls that bound busy polling and the softirq, each said to be global or
  per namespace. All six are global: the kernel shows them in the initial
  network namespace only, so inside another one they are not visible though
  in force; doctor then reads them in the initial namespace from a short-lived
  child process that enters it (``setns``, needs root), or says why it could
  not;
- for a veth, whether its peer's TSO keeps TCP from its NAPI (then TCP
  sockets get ``SO_INCOMING_NAPI_ID`` 0 and per-NAPI knobs and epoll busy
  polling do nothing for TCP; :mod:`irqlab.linux.veth_peer`);
- per device: its NAPIs with their settings and threads, the IRQs they own
  and those IRQs' CPU affinity (``/proc/irq/N/smp_affinity_list``), which
  coalescing parameters the driver accepts (ethtool netlink reports only
  those) and their values, the device's threaded mode, and its RPS and XPS
  masks;
- per profile, whether applying it (``irqlab linux apply`` and ``exec``)
  will do what it says, partly, or nothing, and why: its per-NAPI and
  coalescing part from the plan ``irqlab linux apply --dry-run`` prints
  (:func:`irqlab.linux.knobs.plan`), knob by knob (setting a knob to the
  value it has counts: the profile holds there), and its epoll part from the
  kernel's features and the device's NAPIs.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from irqlab import _core
from irqlab.linux import knobs as _knobs
from irqlab.linux.knobs import LinuxError, show
from irqlab.linux.veth_peer import bypass_sentence, peer_command, peer_report

#: The sysctls under /proc/sys/net/core that bound busy polling and the softirq.
SYSCTLS = ("busy_poll", "busy_read", "netdev_budget", "netdev_budget_usecs", "netdev_max_backlog", "dev_weight")

#: Where the kernel keeps each. All six are entries of net_core_table
#: (net/core/sysctl_net_core.c), which sysctl_core_init() registers for
#: init_net alone (``register_net_sysctl(&init_net, "net/core",
#: net_core_table)``); the per-namespace entries (somaxconn, txrehash,
#: rps_default_mask, rmem_max, ...) are netns_core_table's, which
#: sysctl_core_net_init() registers in every namespace. A global one has one
#: value for the whole host (busy_poll is sysctl_net_busy_poll, which
#: ep_busy_loop() reads wherever the socket lives; the budgets are
#: net_hotdata's, read by net_rx_action()), so in another namespace it is in
#: force but not visible. Inside a non-initial namespace what is visible is
#: what the kernel says, and wins over this table (a later kernel may move one).
SYSCTL_SCOPE = {name: "global" for name in SYSCTLS}

_CORE = Path("/proc/sys/net/core")
#: An entry of net_core_table that every kernel has: visible only in init_net.
_INIT_ONLY_MARKER = "netdev_max_backlog"
#: include/uapi/linux/nsfs.h NET_NS_INIT_INO (Linux 6.18+): init_net's fixed
#: inode. Dynamic namespace inodes start at 0xF0000000 (PROC_DYNAMIC_FIRST),
#: so no other namespace has it on any kernel; an older kernel's init_net
#: has a dynamic one, so only equality says something.
_NET_NS_INIT_INO = 0xEFFFFFF9
#: How many parent processes to look through for a way into the initial namespace.
_ANCESTORS_MAX = 64
#: The start of the reason given for a global sysctl whose initial value could not be read.
_NOT_READ_IN_INITIAL = "its value in the initial network namespace could not be read"
#: How long the child reading the initial namespace's sysctls may take.
_CHILD_TIMEOUT_S = 10.0

# include/uapi/linux/eventpoll.h: _IOR(0x8A, 0x02, struct epoll_params) (8 bytes).
_EPIOCGPARAMS = 0x80088A02
# include/uapi/asm-generic/socket.h
_SO_PREFER_BUSY_POLL = 69
_SO_BUSY_POLL_BUDGET = 70
# x86-64 and arm64 system call numbers; io_uring register opcodes.
_SYS_IO_URING_SETUP = 425
_SYS_IO_URING_REGISTER = 427
_IORING_REGISTER_NAPI = 27
_IORING_UNREGISTER_NAPI = 28

#: Each knob ``irqlab linux apply`` sets (kernel or ethtool name) -> the
#: profile field it comes from (irqlab-linux change.rs).
_APPLIED_FIELDS = dict(_core.LINUX_KNOB_FIELDS)
#: apply's reason for coalescing the driver does not take (change.rs NOT_SUPPORTED_BY_DEVICE).
_NOT_SUPPORTED_BY_DEVICE = "not supported by this device"


def _probe_epoll_params() -> dict[str, Any]:
    ep = select.epoll()
    try:
        fcntl.ioctl(ep.fileno(), _EPIOCGPARAMS, bytearray(8))
        return {"available": True, "how": "EPIOCGPARAMS on a new epoll instance succeeded"}
    except OSError as e:
        return {"available": False, "how": f"EPIOCGPARAMS on a new epoll instance failed: {os.strerror(e.errno)}"}
    finally:
        ep.close()


def _probe_sockopt(option: int, name: str) -> dict[str, Any]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, option, 0)
        return {"available": True, "how": f"setting {name} to 0 on a new socket succeeded"}
    except OSError as e:
        return {"available": False, "how": f"setting {name} on a new socket failed: {os.strerror(e.errno)}"}
    finally:
        s.close()


def _probe_io_uring_napi() -> dict[str, Any]:
    if os.uname().machine not in ("x86_64", "aarch64"):
        return {"available": None, "how": f"not probed on {os.uname().machine}"}
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = libc.syscall(_SYS_IO_URING_SETUP, ctypes.c_uint(2), params)
    if fd < 0:
        err = ctypes.get_errno()
        return {"available": False, "how": f"io_uring_setup failed: {os.strerror(err)} (io_uring may be disabled)"}
    try:
        napi = ctypes.create_string_buffer(struct.pack("=IB3sQ", 0, 0, b"\0\0\0", 0))  # struct io_uring_napi
        rc = libc.syscall(_SYS_IO_URING_REGISTER, ctypes.c_uint(fd), ctypes.c_uint(_IORING_REGISTER_NAPI), napi,
                          ctypes.c_uint(1))
        if rc < 0:
            err = ctypes.get_errno()
            return {"available": False, "how": f"IORING_REGISTER_NAPI failed: {os.strerror(err)}"}
        libc.syscall(_SYS_IO_URING_REGISTER, ctypes.c_uint(fd), ctypes.c_uint(_IORING_UNREGISTER_NAPI), napi,
                     ctypes.c_uint(1))
        return {"available": True, "how": "IORING_REGISTER_NAPI on a new ring succeeded (and was undone)"}
    finally:
        os.close(fd)


def _devices() -> list[str]:
    try:
        return sorted(p.name for p in Path("/sys/class/net").iterdir())
    except OSError:
        return []


def _per_napi_support(dev: Optional[str]) -> dict[str, Any]:
    """Which per-NAPI attributes the kernel reports, asked on ``dev`` or, if
    it has no NAPI, on the first device of this namespace that has one."""
    candidates = ([dev] if dev else []) + [d for d in _devices() if d != dev]
    for name in candidates:
        try:
            report = show(name)
        except LinuxError as e:
            if "netdev" in str(e) and "family" in str(e):
                return {"netdev_netlink": False, "asked": None, "how": str(e)}
            continue
        if report.get("kernel"):
            return {"netdev_netlink": True, "asked": name, **report["kernel"]}
    return {"netdev_netlink": True, "asked": None,
            "how": "no device in this network namespace has a NAPI to ask about"}


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _ns_id(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def network_namespace() -> dict[str, Any]:
    """Whether this process runs in the initial network namespace:
    ``initial`` (True, False or None when nothing could tell), this
    namespace's ``inode`` and ``how`` that was decided."""
    try:
        here = _ns_id("/proc/self/ns/net")
    except OSError as e:
        return {"initial": None, "inode": None, "how": f"/proc/self/ns/net cannot be read ({e.strerror})"}
    out: dict[str, Any] = {"initial": None, "inode": here[1], "how": ""}
    facts = []
    try:
        pid1 = _ns_id("/proc/1/ns/net")
        facts.append("PID 1's namespace is " + ("this one" if pid1 == here else f"another (inode {pid1[1]})"))
        out["initial"] = pid1 == here
    except OSError as e:
        pid1 = None
        facts.append(f"PID 1's cannot be compared (/proc/1/ns/net: {e.strerror})")
    # The kernel's own answer wins over PID 1's, which may itself be in a
    # container's namespace: net_core_table's entries are visible in init_net only.
    if _CORE.is_dir():
        visible = (_CORE / _INIT_ONLY_MARKER).exists()
        facts.insert(0, f"net.core.{_INIT_ONLY_MARKER}, which the kernel shows in the initial namespace only, is "
                        + ("visible here" if visible else "not visible here"))
        out["initial"] = visible
    if here[1] == _NET_NS_INIT_INO:
        facts.insert(0, "its inode is the initial namespace's (NET_NS_INIT_INO)")
        out["initial"] = True
    out["how"] = "; ".join(facts)
    return out


def _ancestor_namespaces() -> list[tuple[str, str]]:
    """Namespace files through which a child may enter the initial network
    namespace, with what each is: PID 1's, then those of this process's
    ancestors that are in another namespace than this one (``ip netns exec``
    runs the command in place of itself, so its parent is usually where it
    was started: the initial namespace). Bounded by :data:`_ANCESTORS_MAX`."""
    out = [("/proc/1/ns/net", "PID 1's")]
    try:
        here = _ns_id("/proc/self/ns/net")
    except OSError:
        return out
    seen = {here}
    pid = os.getppid()
    for _ in range(_ANCESTORS_MAX):
        if pid <= 1:
            break
        path = f"/proc/{pid}/ns/net"
        try:
            ns = _ns_id(path)
        except OSError:
            ns = None
        if ns is not None and ns not in seen:
            seen.add(ns)
            comm = _read(Path(f"/proc/{pid}/comm")) or "?"
            out.append((path, f"ancestor process {pid} ({comm})'s"))
        stat = _read(Path(f"/proc/{pid}/stat"))
        try:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            pid = int(stat.rsplit(")", 1)[1].split()[1]) if stat else 0
        except (IndexError, ValueError):
            break
    return out


# Run as `python -I -S -c` in a child: enter the first namespace file that is
# the initial network namespace (setns(2), CLONE_NEWNET; needs CAP_SYS_ADMIN)
# and read the sysctls there. A child, because setns changes the calling
# thread's namespace and irqlab's process goes on in its own; and /proc/sys/net
# shows the namespace of the process reading it (net/sysctl_net.c:
# net_ctl_header_lookup() takes current->nsproxy->net_ns), not of the /proc
# mount, so reading /proc/1/root/proc/sys/... from here would not do.
_READ_IN_INITIAL = r"""
import ctypes, json, os, sys
paths, names, marker = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
tried = []
for path in paths:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        tried.append(f"{path}: {e.strerror}")
        continue
    rc = libc.setns(fd, 0x40000000)
    err = ctypes.get_errno()
    os.close(fd)
    if rc != 0:
        tried.append(f"entering {path}: {os.strerror(err)}" + (" (needs root, CAP_SYS_ADMIN)" if err == 1 else ""))
        continue
    if not os.path.exists("/proc/sys/net/core/" + marker):
        tried.append(f"{path} is not the initial network namespace")
        continue
    values = {}
    for name in names:
        try:
            with open("/proc/sys/net/core/" + name) as f:
                values[name] = {"value": f.read().strip()}
        except OSError as e:
            values[name] = {"error": e.strerror}
    print(json.dumps({"via": path, "values": values}))
    sys.exit(0)
print(json.dumps({"via": None, "tried": tried}))
"""


def _read_in_initial(names: list[str]) -> dict[str, Any]:
    """The sysctls ``names`` (under net/core) as the initial network
    namespace has them: ``{"via": path, "what": ..., "values": {name:
    {"value"|"error": text}}}``, or ``{"via": None, "why": sentence}``."""
    candidates = _ancestor_namespaces()
    what = dict(candidates)
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _READ_IN_INITIAL, json.dumps([p for p, _ in candidates]),
             json.dumps(names), _INIT_ONLY_MARKER],
            capture_output=True, text=True, timeout=_CHILD_TIMEOUT_S,
        )
        result = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        return {"via": None, "why": f"the child process that enters it failed ({e})"}
    if result is None:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"via": None, "why": f"the child process that enters it failed with status {proc.returncode} ({last})"}
    if result["via"] is None:
        return {"via": None, "why": "no way in: " + "; ".join(result["tried"])}
    return {**result, "what": what.get(result["via"], "")}


def _int_or_text(text: str) -> Any:
    return int(text) if text.lstrip("-").isdigit() else text


def sysctl_report(netns: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]], Optional[dict[str, Any]]]:
    """Each sysctl's value in force (``None``: could not be read); per
    sysctl, its ``scope`` ("global" or "per-namespace"), whether it is
    ``visible_here``, where it was ``read_in`` and, when it could not be
    read, the ``reason``; and how the initial namespace was entered for
    those not visible here (``via`` and ``what``, or ``why`` not; ``None``
    when it was not needed)."""
    values: dict[str, Any] = {}
    info: dict[str, dict[str, Any]] = {}
    hidden = []
    for name in SYSCTLS:
        key = f"net.core.{name}"
        error: Optional[OSError] = None
        try:
            text: Optional[str] = (_CORE / name).read_text().strip()
        except OSError as e:
            text, error = None, e
        if text is not None:
            # Visible in a namespace that is not the initial one: per namespace, whatever the table says.
            scope = "per-namespace" if netns["initial"] is False else SYSCTL_SCOPE.get(name, "global")
            values[key] = _int_or_text(text)
            info[key] = {"scope": scope, "visible_here": True, "hidden": False, "read_in": "this network namespace",
                         "reason": None}
        elif netns["initial"] is not True and isinstance(error, FileNotFoundError):
            values[key] = None
            info[key] = {"scope": "global", "visible_here": False, "hidden": True, "read_in": None, "reason": None}
            hidden.append(name)
        else:
            values[key] = None
            why = ("this kernel has no such sysctl" if isinstance(error, FileNotFoundError)
                   else f"/proc/sys/net/core/{name} cannot be read ({error.strerror if error else 'no error'})")
            info[key] = {"scope": SYSCTL_SCOPE.get(name, "global"), "visible_here": (_CORE / name).exists(),
                         "hidden": False, "read_in": None, "reason": why}
    initial: Optional[dict[str, Any]] = None
    if hidden:
        initial = _read_in_initial(hidden)
        for name in hidden:
            key = f"net.core.{name}"
            if initial["via"] is None:
                info[key]["reason"] = f"{_NOT_READ_IN_INITIAL}: {initial['why']}"
                continue
            got = initial["values"].get(name, {})
            if "value" in got:
                values[key] = _int_or_text(got["value"])
                info[key]["read_in"] = f"the initial network namespace (entered through {initial['via']}, " \
                                       f"{initial['what']})"
            else:
                info[key]["reason"] = (f"it is not in the initial network namespace either "
                                       f"({got.get('error', 'not read')}): this kernel has no such sysctl")
        initial = {k: v for k, v in initial.items() if k in ("via", "what", "why")}
    return values, info, initial


def kernel_report(dev: Optional[str] = None) -> dict[str, Any]:
    """The host's side: kernel version, probed features, the network
    namespace and the sysctls."""
    features = {
        "per_napi": _per_napi_support(dev),
        "epoll_params": _probe_epoll_params(),
        "so_prefer_busy_poll": _probe_sockopt(_SO_PREFER_BUSY_POLL, "SO_PREFER_BUSY_POLL"),
        "so_busy_poll_budget": _probe_sockopt(_SO_BUSY_POLL_BUDGET, "SO_BUSY_POLL_BUDGET"),
        "io_uring_napi": _probe_io_uring_napi(),
        "threaded_napi_sysfs": {
            "available": any((Path("/sys/class/net") / d / "threaded").exists() for d in _devices()),
            "how": "/sys/class/net/DEV/threaded exists" if _devices() else "no device to look at",
        },
    }
    netns = network_namespace()
    sysctls, sysctl_info, initial = sysctl_report(netns)
    return {"kernel": os.uname().release, "features": features, "netns": netns, "sysctls": sysctls,
            "sysctl_info": sysctl_info, "sysctl_initial": initial}


def _cpu_list(text: Optional[str]) -> Optional[str]:
    return text if text else None


def _queue_masks(dev: str) -> dict[str, dict[str, Optional[str]]]:
    base = Path("/sys/class/net") / dev / "queues"
    out: dict[str, dict[str, Optional[str]]] = {"rps_cpus": {}, "xps_cpus": {}}
    try:
        queues = sorted(base.iterdir(), key=lambda p: (p.name.split("-")[0], int(p.name.split("-")[1])))
    except (OSError, ValueError, IndexError):
        return out
    for q in queues:
        if q.name.startswith("rx-"):
            out["rps_cpus"][q.name] = _read(q / "rps_cpus")
        elif q.name.startswith("tx-"):
            out["xps_cpus"][q.name] = _read(q / "xps_cpus")
    return out


def device_report(dev: str) -> dict[str, Any]:
    """One device: ``irqlab linux show`` plus its IRQs' affinity, threaded
    mode and RPS/XPS masks. Raises :class:`LinuxError` for a bad name."""
    report = show(dev)
    irqs = []
    for napi in report["napis"]:
        irq = napi.get("irq")
        if irq is None:
            continue
        base = Path("/proc/irq") / str(irq)
        irqs.append({
            "irq": irq, "napi": napi["id"],
            "smp_affinity_list": _cpu_list(_read(base / "smp_affinity_list")),
            "effective_affinity_list": _cpu_list(_read(base / "effective_affinity_list")),
        })
    threaded = _read(Path("/sys/class/net") / dev / "threaded")
    masks = _queue_masks(dev)
    # A veth's packets reach its NAPI only while its peer does no TSO (veth_peer.py).
    peer = peer_report(dev) if report["napis"] else None
    return {**report, "irqs": irqs, "threaded_sysfs": threaded, **masks, "veth_peer": peer}


def _is_off(value: Any) -> bool:
    return value is False or (value == 0 and not isinstance(value, bool))


def _items(items: list[str]) -> tuple[str, str, str]:
    """The list, "does"/"do" and "it"/"them" for a sentence about it."""
    one = len(items) == 1
    return ", ".join(items), "does" if one else "do", "it" if one else "them"


def _applied_part(knobs: dict[str, Any], dev: dict[str, Any], plan: dict[str, Any]) -> tuple[dict[str, bool], list[str]]:
    """The per-NAPI and coalescing part of a profile (``knobs``: its
    fields) on ``dev`` as ``irqlab linux apply`` would make it, from
    ``plan`` (:func:`irqlab.linux.knobs.plan`'s report, or ``{"error":
    sentence}`` when apply refuses): per profile field, whether it takes
    effect, and why not. A knob in the plan's changes or already at its
    value takes effect; a skipped knob the profile turns off (0, false) does
    too, since what it turns off is not there; a coalescing field apply does
    not set (``coalesce.cqe-mode-rx``) takes effect only where the device
    already has the profile's value."""
    name = dev["device"]
    fields = {k: f for k, f in _APPLIED_FIELDS.items() if f in knobs}
    ok: dict[str, bool] = {}
    reasons: list[str] = []
    if "error" in plan:
        for field in fields.values():
            ok[field] = False
        if fields:
            reasons.append(f"irqlab linux apply refuses the profile, so its per-NAPI and coalescing knobs do "
                           f"nothing: {plan['error']}")
        return ok, reasons
    for c in plan["changes"] + plan["unchanged"]:
        ok.setdefault(_APPLIED_FIELDS.get(c["knob"], c["knob"]), True)
    unaccepted: list[str] = []  # coalescing the driver does not take
    other: dict[str, list[str]] = {}  # anything else skipped, by reason
    for skip in plan["skipped"]:
        field = _APPLIED_FIELDS.get(skip["knob"], skip["knob"])
        if _is_off(skip["to"]):
            ok.setdefault(field, True)
            continue
        ok[field] = False
        item = f"{field} {_shown(skip['to'])}"
        if skip["part"] == "coalesce" and skip["reason"] == _NOT_SUPPORTED_BY_DEVICE:
            if item not in unaccepted:
                unaccepted.append(item)
        elif item not in other.setdefault(skip["reason"], []):
            other[skip["reason"]].append(item)
    applied = set(_APPLIED_FIELDS.values())
    have = dev.get("coalesce") or {}
    accepted = set(dev.get("coalesce_params") or [])
    for field, want in knobs.items():
        if not field.startswith("coalesce.") or field in applied:
            continue
        param = field.split(".", 1)[1]
        if param not in accepted:
            ok[field] = _is_off(want)
            if not ok[field]:
                unaccepted.append(f"{field} {_shown(want)}")
        elif have.get(param) == want:
            ok[field] = True
        else:
            ok[field] = False
            switch = ("on" if want else "off") if isinstance(want, bool) else str(want)
            reasons.append(f"{field} {_shown(want)} is not set by irqlab linux apply, and {name} has "
                           f"{_shown(have.get(param))} (ethtool -C {name} {param} {switch} sets it)")
    if unaccepted:
        listed, verb, pronoun = _items(unaccepted)
        if not accepted:
            reasons.insert(0, f"the coalescing part ({listed}) does nothing: {name} has no coalescing")
        else:
            reasons.insert(0, f"{listed} {verb} nothing: {name}'s driver does not accept {pronoun}")
    for why, items in other.items():
        listed, verb, _ = _items(items)
        reasons.append(f"{listed} {verb} nothing: {why}")
    return ok, reasons


def _kernel_only_part(knobs: dict[str, Any], per_napi: dict[str, Any]) -> tuple[dict[str, bool], list[str]]:
    """The per-NAPI part of a profile on this kernel, no device named."""
    ok: dict[str, bool] = {}
    reasons: list[str] = []
    for field in (f for f in _APPLIED_FIELDS.values() if f.startswith("napi.") and f in knobs):
        if field == "napi.irq_suspend_timeout":
            # Without the knob the kernel never suspends IRQs, which is what 0 asks for.
            ok[field] = bool(per_napi.get("irq_suspend_timeout")) or _is_off(knobs[field])
            if not ok[field]:
                reasons.append(f"{field} does nothing: this kernel has no per-NAPI irq-suspend-timeout (Linux 6.13)")
        else:
            ok[field] = bool(per_napi.get("per_napi_config"))
            if not ok[field]:
                reasons.append(f"{field} is not per NAPI on this kernel (Linux 6.13); only the device-wide sysfs "
                               "value exists")
    return ok, reasons


def plans(dev: str) -> dict[str, dict[str, Any]]:
    """Per profile, the plan ``irqlab linux apply DEV --dry-run`` prints, or
    ``{"error": sentence}`` when apply refuses the profile on DEV."""
    from irqlab.profiles import PROFILES

    out: dict[str, dict[str, Any]] = {}
    for profile in PROFILES:
        try:
            out[profile] = _knobs.plan(dev, profile)
        except LinuxError as e:
            out[profile] = {"error": " ".join(str(e).split())}
    return out


def verdicts(kernel: dict[str, Any], dev: Optional[dict[str, Any]],
             plans_: Optional[dict[str, dict[str, Any]]] = None) -> list[dict[str, Any]]:
    """Per profile: ``works`` ("yes", "partly", "no"), the ``reasons``, and
    per part of the profile (profile fields, and ``epoll`` for busy
    polling) whether it takes effect (``parts``). With a device, its
    per-NAPI and coalescing part comes from ``plans_`` (:func:`plans` of the
    device when not given): what apply would do, not a separate guess."""
    from irqlab.profiles import profile_knobs

    feats = kernel["features"]
    if dev is not None and plans_ is None:
        plans_ = plans(dev["device"])
    out = []
    for profile, knobs in profile_knobs().items():
        reasons: list[str] = []
        parts: dict[str, bool] = {}
        # Busy polling and IRQ suspension through the epoll instance (irqlab linux exec).
        if knobs.get("epoll.busy_poll_usecs") or knobs.get("epoll.prefer_busy_poll"):
            parts["epoll"] = False
            if not feats["epoll_params"]["available"]:
                reasons.append("epoll busy polling does nothing: EPIOCSPARAMS is missing (Linux 6.9)")
            elif dev is not None and not dev["napis"]:
                reasons.append(f"epoll busy polling finds nothing: {dev['device']}'s packets carry no NAPI id "
                               "(it has no NAPI)")
            else:
                parts["epoll"] = True
        if dev is None:
            ok, why = _kernel_only_part(knobs, feats["per_napi"])
        else:
            assert plans_ is not None
            ok, why = _applied_part(knobs, dev, plans_.get(profile, {"error": "no plan was made"}))
        parts.update(ok)
        reasons += why
        if dev is not None:
            reasons += _bypass_part(knobs, dev, parts)
        done = sum(parts.values())
        works = "yes" if done == len(parts) else ("no" if done == 0 else "partly")
        out.append({"profile": profile, "works": works, "reasons": reasons, "parts": parts})
    return out


def _bypass_part(knobs: dict[str, Any], dev: dict[str, Any], parts: dict[str, bool]) -> list[str]:
    """With TSO on a veth's peer, TCP never reaches the veth's NAPI
    (veth_peer.py): the profile's per-NAPI knobs that do something and its
    epoll busy polling take no effect for TCP. They are counted as doing
    nothing unless UDP still gets through (rx-udp-gro-forwarding); the reason
    is given either way."""
    peer = dev.get("veth_peer") or {}
    if not peer.get("bypass"):
        return []
    hit = [f for f, done in parts.items() if done and (f == "epoll" or (f.startswith("napi.") and not _is_off(knobs.get(f))))]
    if not hit:
        return []
    if not peer.get("udp_gro"):
        for f in hit:
            parts[f] = False
    listed, verb, _ = _items(["epoll busy polling" if f == "epoll" else f for f in hit])
    return [f"{listed} {verb} nothing for TCP: {dev['device']}'s peer {peer['peer']} has TSO on, so TCP bypasses "
            f"{dev['device']}'s NAPI (`{peer_command(peer)}`; see the note)"]


def _shown(value: Any) -> str:
    """A value as ``irqlab profiles`` prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "nothing" if value is None else str(value)


def notes(kernel: dict[str, Any], dev: Optional[dict[str, Any]]) -> list[str]:
    """What else the report means, in sentences."""
    out = []
    sysctls = kernel["sysctls"]
    info = kernel.get("sysctl_info", {})
    # The values are the ones in force wherever they were read: busy_poll and
    # busy_read are global, so the initial namespace's hold in this one.
    if sysctls.get("net.core.busy_poll") in (0, "0") and sysctls.get("net.core.busy_read") in (0, "0"):
        out.append("net.core.busy_poll and busy_read are 0: only programs that ask per epoll instance "
                   "(EPIOCSPARAMS, irqlab linux exec) or per socket (SO_BUSY_POLL) busy poll")
    elif sysctls.get("net.core.busy_poll") is None or sysctls.get("net.core.busy_read") is None:
        out.append("net.core.busy_poll or busy_read could not be read (see above): whether sockets busy poll "
                   "without asking for it (SO_BUSY_POLL, EPIOCSPARAMS) is unknown")
    if kernel.get("netns", {}).get("initial") is False and any(i.get("scope") == "global" for i in info.values()):
        out.append("this runs in a network namespace other than the initial one: the global sysctls hold for every "
                   "namespace, and only the initial one shows them (sysctl -w there changes them here too)")
    if dev is not None:
        if not dev["napis"]:
            out.append(f"{dev['device']} has no NAPI: no per-NAPI knob, busy polling or IRQ suspension applies to "
                       "it (a veth has a NAPI only while GRO is on)")
        threaded = [n for n in dev["napis"] if n.get("threaded") not in (None, "disabled")]
        if threaded or dev.get("threaded_sysfs") not in (None, "0"):
            out.append(f"{dev['device']}'s NAPIs are threaded: a NAPI schedule wakes a kernel thread instead of "
                       "raising the softirq; IRQ affinity then matters less than where the thread runs")
        spread = {i["smp_affinity_list"] for i in dev.get("irqs", []) if i.get("smp_affinity_list")}
        if dev.get("irqs") and len(spread) == 1 and len(dev["irqs"]) > 1:
            out.append(f"all of {dev['device']}'s IRQs may run on the same CPUs ({spread.pop()}): an application "
                       "thread per queue needs them spread, one per core")
        peer = dev.get("veth_peer") or {}
        if dev["napis"] and peer.get("bypass"):
            out.append(bypass_sentence(dev["device"], peer))
        elif dev["napis"] and peer and peer.get("tso") is None:
            out.append(f"{dev['device']} is a veth, and whether its peer's TSO keeps TCP from its NAPI could not be "
                       f"told ({peer.get('how') or 'unknown'}): with TSO on the peer, TCP sockets get "
                       f"SO_INCOMING_NAPI_ID 0 and per-NAPI knobs and epoll busy polling do nothing for TCP "
                       f"(ethtool -K PEER tso off)")
        rps = [q for q, m in dev.get("rps_cpus", {}).items() if m and m.strip("0,")]
        if rps:
            out.append(f"RPS is on for {', '.join(rps)}: packets are steered to other CPUs' backlogs, which busy "
                       "polling of the device's NAPI does not see")
    return out


def doctor(dev: Optional[str] = None) -> dict[str, Any]:
    """The whole report (see the module). Raises :class:`LinuxError` for a
    device that does not exist or a bad name, before probing anything."""
    device = device_report(dev) if dev is not None else None
    kernel = kernel_report(dev)
    plans_ = plans(dev) if dev is not None else None
    return {**kernel, "device": device, "profiles": verdicts(kernel, device, plans_), "notes": notes(kernel, device)}


def doctor_text(report: dict[str, Any]) -> str:
    lines = [f"kernel {report['kernel']}"]
    f = report["features"]
    pn = f["per_napi"]
    if pn.get("asked"):
        lines.append(f"  per-NAPI config (asked {pn['asked']}): defer-hard-irqs/gro-flush-timeout "
                     f"{_yes(pn.get('per_napi_config'))}, irq-suspend-timeout {_yes(pn.get('irq_suspend_timeout'))}, "
                     f"threaded {_yes(pn.get('threaded'))}")
    else:
        lines.append(f"  per-NAPI config: unknown ({pn.get('how', 'not asked')})")
    for key, label in (("epoll_params", "EPIOCSPARAMS (epoll busy poll)"), ("so_prefer_busy_poll", "SO_PREFER_BUSY_POLL"),
                       ("so_busy_poll_budget", "SO_BUSY_POLL_BUDGET"), ("io_uring_napi", "io_uring NAPI registration"),
                       ("threaded_napi_sysfs", "threaded NAPI (sysfs)")):
        lines.append(f"  {label}: {_yes(f[key]['available'])} ({f[key]['how']})")
    lines.append(netns_line(report.get("netns")))
    lines.append("sysctls (global: one value for the whole host, shown in the initial network namespace only; "
                 "per-namespace: this namespace's own):")
    info = report.get("sysctl_info", {})
    lines.extend("  " + sysctl_line(k, v, info.get(k, {})) for k, v in report["sysctls"].items())
    initial = report.get("sysctl_initial")
    if initial and initial.get("via"):
        lines.append(f"  (read in the initial network namespace, entered through {initial['via']}, {initial['what']})")
    elif initial:
        lines.append(f"  (the initial network namespace's values could not be read: {initial['why']})")
    d = report.get("device")
    if d:
        lines.append(f"device {d['device']} (ifindex {d['ifindex']}): {len(d['napis'])} NAPI(s), threaded "
                     f"{d.get('threaded_sysfs', '?')}")
        for n in d["napis"]:
            lines.append(f"  NAPI {n['id']}: irq {n['irq'] if n['irq'] is not None else '-'}, queues "
                         f"{_queues(n['queues'])}, defer_hard_irqs {n.get('defer_hard_irqs')}, gro_flush_timeout "
                         f"{n.get('gro_flush_timeout')} ns, irq_suspend_timeout {n.get('irq_suspend_timeout')} ns, "
                         f"threaded {n.get('threaded')}" + (f", thread pid {n['pid']}" if n.get("pid") else ""))
        for i in d.get("irqs", []):
            lines.append(f"  IRQ {i['irq']} (NAPI {i['napi']}): CPUs {i['smp_affinity_list']} "
                         f"(effective {i['effective_affinity_list']})")
        peer = d.get("veth_peer")
        if peer:
            where = f" in network namespace {peer['peer_netns']}" if peer.get("peer_netns") else ""
            tso = {True: "on", False: "off", None: f"unknown ({peer.get('how') or 'not read'})"}[peer.get("tso")]
            lines.append(f"  veth peer {peer.get('peer') or '?'}{where}: TSO {tso}"
                         + (" (TCP bypasses the NAPI)" if peer.get("bypass") else ""))
        accepted = d.get("coalesce_params") or []
        lines.append("  coalescing accepted: " + (", ".join(accepted) if accepted else "none"))
        if d.get("coalesce"):
            lines.append("  coalescing now: " + ", ".join(f"{k} {v}" for k, v in d["coalesce"].items()))
        for kind in ("rps_cpus", "xps_cpus"):
            masks = d.get(kind) or {}
            if masks:
                lines.append(f"  {kind}: " + ", ".join(f"{q} {m if m is not None else '-'}" for q, m in masks.items()))
    lines.append("profiles:" if d else "profiles (the kernel's part only; name a device for the rest):")
    for v in report["profiles"]:
        lines.append(f"  {v['profile']:<20} {v['works']:<7}" + ("; ".join(v["reasons"]) if v["reasons"] else ""))
    for n in report.get("notes", []):
        lines.append(f"note: {n}")
    return "\n".join(lines)


def netns_line(netns: Optional[dict[str, Any]]) -> str:
    """Which network namespace this is, and how that was decided."""
    if not netns:
        return "network namespace: not examined"
    inode = f"inode {netns['inode']}" if netns.get("inode") is not None else "inode unknown"
    what = {True: "the initial one", False: "not the initial one", None: "unknown whether it is the initial one"}
    return f"network namespace: {what[netns.get('initial')]} ({inode}; {netns.get('how') or 'nothing to tell'})"


def sysctl_line(key: str, value: Any, info: dict[str, Any]) -> str:
    """One sysctl, never a bare ``None``: its value and scope, or where the
    kernel keeps it and why its value could not be read."""
    scope = info.get("scope", "global")
    reason = info.get("reason") or "its value could not be read"
    if value is not None and info.get("read_in", "this network namespace") == "this network namespace":
        return f"{key} {value} ({scope})"
    if value is not None:
        return f"{key}: not visible in this network namespace ({scope}; initial namespace value: {value})"
    if reason.startswith(_NOT_READ_IN_INITIAL):
        # Why is said once, under the list (doctor_text).
        return f"{key}: not visible in this network namespace ({scope}; its initial namespace value could not be read)"
    if info.get("hidden"):
        return f"{key}: not visible in this network namespace ({scope}; {reason})"
    return f"{key}: unknown ({scope}; {reason})"


def _yes(v: Any) -> str:
    return "yes" if v is True else ("no" if v is False else "unknown")


def _queues(q: dict[str, list[int]]) -> str:
    parts = [f"{k} {','.join(map(str, ids))}" for k, ids in q.items() if ids]
    return " ".join(parts) or "none"


__all__ = ["doctor", "doctor_text", "kernel_report", "device_report", "network_namespace", "sysctl_report", "plans",
           "verdicts", "notes", "netns_line", "sysctl_line", "SYSCTLS", "SYSCTL_SCOPE"]
