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
- the global sysctls that bound busy polling and the softirq;
- per device: its NAPIs with their settings and threads, the IRQs they own
  and those IRQs' CPU affinity (``/proc/irq/N/smp_affinity_list``), which
  coalescing parameters the driver accepts (ethtool netlink reports only
  those) and their values, the device's threaded mode, and its RPS and XPS
  masks;
- per profile, whether applying it (``irqlab linux apply`` and ``exec``)
  will do what it says, partly, or nothing, and why.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import select
import socket
import struct
from pathlib import Path
from typing import Any, Optional

from irqlab.linux.knobs import LinuxError, show

#: Global sysctls under /proc/sys/net/core that matter here.
SYSCTLS = ("busy_poll", "busy_read", "netdev_budget", "netdev_budget_usecs", "netdev_max_backlog", "dev_weight")

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

#: What a profile needs, per knob family, to take effect.
_COALESCE_KNOBS = ("adaptive-rx", "rx-usecs", "rx-frames", "cqe-mode-rx")


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


def kernel_report(dev: Optional[str] = None) -> dict[str, Any]:
    """The host's side: kernel version, probed features, sysctls."""
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
    sysctls = {}
    for name in SYSCTLS:
        value = _read(Path("/proc/sys/net/core") / name)
        sysctls[f"net.core.{name}"] = int(value) if value is not None and value.lstrip("-").isdigit() else value
    return {"kernel": os.uname().release, "features": features, "sysctls": sysctls}


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
    return {**report, "irqs": irqs, "threaded_sysfs": threaded, **masks}


def _napi_knob_reasons(knobs: dict[str, Any], dev: dict[str, Any], per_napi: dict[str, Any]) -> tuple[int, list[str]]:
    """How many of the profile's per-NAPI knobs take effect, and why not."""
    wanted = [k for k in ("napi.napi_defer_hard_irqs", "napi.gro_flush_timeout", "napi.irq_suspend_timeout") if knobs.get(k)]
    reasons = []
    effective = 0
    if wanted and not dev["napis"]:
        names = ", ".join(k.split(".", 1)[1] for k in wanted)
        return 0, [f"the per-NAPI knobs ({names}) do nothing: {dev['device']} has no NAPI"]
    for k in wanted:
        name = k.split(".", 1)[1]
        if name == "irq_suspend_timeout" and not per_napi.get("irq_suspend_timeout"):
            reasons.append("irq_suspend_timeout does nothing: this kernel has no per-NAPI irq-suspend-timeout (Linux 6.13)")
        elif name != "irq_suspend_timeout" and not per_napi.get("per_napi_config"):
            reasons.append(f"{name} is not per NAPI on this kernel (Linux 6.13); only the device-wide sysfs value exists")
        else:
            effective += 1
    return effective, reasons


def verdicts(kernel: dict[str, Any], dev: Optional[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per profile: ``works`` ("yes", "partly", "no") and the reasons."""
    from irqlab.profiles import profile_knobs

    feats = kernel["features"]
    per_napi = feats["per_napi"]
    out = []
    for profile, knobs in profile_knobs().items():
        reasons: list[str] = []
        total = effective = 0
        # Busy polling and IRQ suspension through the epoll instance.
        busy = bool(knobs.get("epoll.busy_poll_usecs") or knobs.get("epoll.prefer_busy_poll"))
        if busy:
            total += 1
            if not feats["epoll_params"]["available"]:
                reasons.append("epoll busy polling does nothing: EPIOCSPARAMS is missing (Linux 6.9)")
            elif dev is not None and not dev["napis"]:
                reasons.append(f"epoll busy polling finds nothing: {dev['device']}'s packets carry no NAPI id "
                               "(it has no NAPI)")
            else:
                effective += 1
        n_eff, n_reasons = (0, [])
        wanted = sum(1 for k in ("napi.napi_defer_hard_irqs", "napi.gro_flush_timeout", "napi.irq_suspend_timeout")
                     if knobs.get(k))
        if dev is not None:
            n_eff, n_reasons = _napi_knob_reasons(knobs, dev, per_napi)
        elif wanted:
            n_eff = wanted if per_napi.get("per_napi_config") else 0
        total += wanted
        effective += n_eff
        reasons += n_reasons
        if dev is not None:
            accepted = set(dev.get("coalesce_params") or [])
            # A switch the profile turns off is already off where the driver
            # lacks it (cqe-mode-rx false on a device without CQE mode).
            mine = [k for k in _COALESCE_KNOBS
                    if (f"coalesce.{k}" in knobs or k == "rx-frames") and knobs.get(f"coalesce.{k}") is not False]
            total += len(mine)
            missing = [k for k in mine if k not in accepted]
            effective += len(mine) - len(missing)
            if missing and not accepted:
                reasons.append(f"the coalescing part ({', '.join(missing)}) does nothing: {dev['device']} has no "
                               "coalescing")
            elif missing:
                reasons.append(f"{', '.join(missing)} {'does' if len(missing) == 1 else 'do'} nothing: "
                               f"{dev['device']}'s driver does not accept {'it' if len(missing) == 1 else 'them'}")
        works = "yes" if effective == total else ("no" if effective == 0 else "partly")
        out.append({"profile": profile, "works": works, "reasons": reasons})
    return out


def notes(kernel: dict[str, Any], dev: Optional[dict[str, Any]]) -> list[str]:
    """What else the report means, in sentences."""
    out = []
    sysctls = kernel["sysctls"]
    if sysctls.get("net.core.busy_poll") in (0, "0") and sysctls.get("net.core.busy_read") in (0, "0"):
        out.append("net.core.busy_poll and busy_read are 0: only programs that ask per epoll instance "
                   "(EPIOCSPARAMS, irqlab linux exec) or per socket (SO_BUSY_POLL) busy poll")
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
    return {**kernel, "device": device, "profiles": verdicts(kernel, device), "notes": notes(kernel, device)}


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
    lines.append("sysctls: " + ", ".join(f"{k}={v}" for k, v in report["sysctls"].items()))
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


def _yes(v: Any) -> str:
    return "yes" if v is True else ("no" if v is False else "unknown")


def _queues(q: dict[str, list[int]]) -> str:
    parts = [f"{k} {','.join(map(str, ids))}" for k, ids in q.items() if ids]
    return " ".join(parts) or "none"


__all__ = ["doctor", "doctor_text", "kernel_report", "device_report", "verdicts", "notes", "SYSCTLS"]
