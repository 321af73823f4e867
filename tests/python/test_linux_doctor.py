"""``irqlab linux doctor``'s reasoning on reports it did not read itself, and
the command on ``lo`` (no root needed; the live tests on a veth are in
test_linux_live.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab import _core
from irqlab.linux.doctor import netns_line, notes, sysctl_line, verdicts
from irqlab.profiles import profile_knobs

ROOT = Path(__file__).resolve().parents[2]


def _kernel(**per_napi) -> dict:
    return {
        "features": {
            "per_napi": {"netdev_netlink": True, "asked": "eth9", "per_napi_config": True,
                         "irq_suspend_timeout": True, "threaded": True, **per_napi},
            "epoll_params": {"available": True, "how": ""},
        },
        "sysctls": {"net.core.busy_poll": 0, "net.core.busy_read": 0},
    }


def _device(**extra) -> dict:
    napi = {"id": 9, "irq": 77, "queues": {"rx": [0], "tx": [0]}, "threaded": "disabled"}
    return {"device": "eth9", "napis": [napi], "coalesce_params": ["rx-usecs", "rx-frames", "adaptive-rx", "cqe-mode-rx"],
            "coalesce": {"adaptive-rx": True, "rx-usecs": 8, "rx-frames": 128, "cqe-mode-rx": True},
            "irqs": [{"irq": 77, "napi": 9, "smp_affinity_list": "0", "effective_affinity_list": "0"}],
            "threaded_sysfs": "0", "rps_cpus": {"rx-0": "0"}, "xps_cpus": {}, **extra}


def _plans(skip: dict[str, str] = {}, error: str | None = None) -> dict:
    """Per profile, a plan shaped as ``knobs.plan`` returns it for NAPI 9:
    every knob apply sets changes, but those in ``skip`` (knob -> reason);
    or the refusal ``error``."""
    out = {}
    for profile, values in profile_knobs().items():
        if error is not None:
            out[profile] = {"error": error}
            continue
        plan = {"changes": [], "unchanged": [], "skipped": []}
        for knob, field in _core.LINUX_KNOB_FIELDS:
            if field not in values:
                continue
            part = "napi" if field.startswith("napi.") else "coalesce"
            entry = {"part": part, "napi_id": 9 if part == "napi" else None, "knob": knob, "to": values[field]}
            if knob in skip:
                plan["skipped"].append({**entry, "reason": skip[knob]})
            else:
                plan["changes"].append({**entry, "from": None})
        out[profile] = plan
    return out


def _by_profile(k: dict, d: dict | None, plans: dict | None = None) -> dict:
    return {v["profile"]: v for v in verdicts(k, d, plans if plans is not None or d is None else _plans())}


def test_a_capable_device_and_kernel_run_every_profile_but_the_cqe_mode_apply_leaves_alone():
    v = _by_profile(_kernel(), _device())
    assert {p: x["works"] for p, x in v.items() if x["works"] != "yes"} == {"no-coalescing": "partly"}
    # apply does not set cqe-mode-rx: no-coalescing wants it off, and eth9 has it on.
    assert v["no-coalescing"]["reasons"] == [
        "coalesce.cqe-mode-rx false is not set by irqlab linux apply, and eth9 has true "
        "(ethtool -C eth9 cqe-mode-rx off sets it)"]
    assert all(not x["reasons"] for p, x in v.items() if p != "no-coalescing")
    off = _by_profile(_kernel(), _device(coalesce={"cqe-mode-rx": False}))
    assert off["no-coalescing"]["works"] == "yes" and off["busy-wait"]["works"] == "partly"


def test_every_part_the_plan_makes_counts_even_a_knob_set_to_zero():
    # A veth with a NAPI and no coalescing: apply sets no-coalescing's
    # defer_hard_irqs, gro_flush_timeout and irq_suspend_timeout (all 0) and
    # skips the coalescing; the verdict is not "no".
    veth = _device(device="veth0", irqs=[], coalesce_params=[], coalesce=None)
    skip = {k: "not supported by this device" for k in ("adaptive-rx", "rx-usecs", "rx-frames")}
    v = _by_profile(_kernel(), veth, _plans(skip))
    assert v["no-coalescing"]["works"] == "partly" and v["adaptive-coalescing"]["works"] == "partly"
    parts = v["no-coalescing"]["parts"]
    assert [f for f, ok in parts.items() if ok] == ["napi.napi_defer_hard_irqs", "napi.gro_flush_timeout",
                                                    "napi.irq_suspend_timeout", "coalesce.adaptive-rx",
                                                    "coalesce.cqe-mode-rx"]
    # Knobs named as `irqlab profiles` lists them.
    assert v["no-coalescing"]["reasons"] == [
        "the coalescing part (coalesce.rx-usecs 1, coalesce.rx-frames 128) does nothing: veth0 has no coalescing"]
    assert v["irq-suspend"]["reasons"] == [
        "the coalescing part (coalesce.adaptive-rx true, coalesce.rx-usecs 8, coalesce.rx-frames 128, "
        "coalesce.cqe-mode-rx true) does nothing: veth0 has no coalescing"]


def test_a_profile_apply_refuses_does_nothing_through_apply():
    error = "device `veth1` has no NAPI instance, so it has no per-NAPI settings (a veth has one only while GRO is on)"
    v = _by_profile(_kernel(), _device(device="veth1", napis=[], irqs=[]), _plans(error=error))
    assert {x["works"] for x in v.values()} == {"no"}
    assert any("has no NAPI" in r for r in v["busy-wait"]["reasons"])
    assert v["no-coalescing"]["reasons"] == [f"irqlab linux apply refuses the profile, so its per-NAPI and coalescing "
                                             f"knobs do nothing: {error}"]


def test_a_kernel_without_irq_suspension_leaves_those_profiles_partly_working():
    # apply refuses irq-suspend and kernel-polling there, and skips the 0 of the others.
    error = ("this kernel reports no irq-suspend-timeout in napi-get (no IRQ suspension), so irqlab cannot apply "
             "profile irq-suspend (Linux 6.13 or later is needed)")
    plans = _plans({"irq_suspend_timeout": "not supported by this kernel (Linux 6.13+), which never suspends IRQs "
                                           "anyway"})
    plans["irq-suspend"] = plans["kernel-polling"] = {"error": error}
    v = _by_profile(_kernel(irq_suspend_timeout=False), _device(), plans)
    assert v["irq-suspend"]["works"] == "partly"  # its busy polling still works through exec
    assert any("irq-suspend-timeout" in r and "Linux 6.13" in r for r in v["irq-suspend"]["reasons"])
    assert v["busy-wait"]["works"] == "yes" and v["irq-batching"]["works"] == "yes"
    # Without a device: the kernel's part only.
    k = _by_profile(_kernel(irq_suspend_timeout=False), None)
    assert k["irq-suspend"]["works"] == "partly" and k["busy-wait"]["works"] == "yes"
    assert any("irq-suspend-timeout (Linux 6.13)" in r for r in k["irq-suspend"]["reasons"])


def test_missing_coalescing_parameters_are_named_and_switches_turned_off_do_not_count():
    d = _device(coalesce_params=["rx-usecs", "rx-frames", "adaptive-rx"], coalesce={"adaptive-rx": True})
    v = _by_profile(_kernel(), d)
    # no-coalescing turns cqe-mode-rx off, which a device without CQE mode already is.
    assert v["no-coalescing"]["works"] == "yes"
    assert v["adaptive-coalescing"]["works"] == "partly"
    assert v["adaptive-coalescing"]["reasons"] == [
        "coalesce.cqe-mode-rx true does nothing: eth9's driver does not accept it"]


def test_without_epoll_params_busy_polling_does_nothing():
    k = _kernel()
    k["features"]["epoll_params"] = {"available": False, "how": ""}
    v = _by_profile(k, _device())
    assert v["busy-wait"]["works"] == "partly"
    assert any("EPIOCSPARAMS is missing" in r for r in v["busy-wait"]["reasons"])
    # A profile that does not busy poll is unaffected.
    assert v["irq-batching"]["works"] == "yes"


def _peer(**extra) -> dict:
    return {"peer": "veth1", "peer_netns": "cli", "tso": True, "udp_gro": False, "bypass": True, "how": "", **extra}


def test_tso_on_a_veths_peer_makes_its_napi_knobs_and_busy_polling_do_nothing_for_tcp():
    # Issue 62, item 4: TCP from a peer with TSO on takes netif_rx, not the NAPI.
    v = _by_profile(_kernel(), _device(veth_peer=_peer()))
    busy = v["busy-wait"]
    assert busy["parts"]["epoll"] is False and busy["parts"]["napi.gro_flush_timeout"] is False
    (reason,) = [r for r in busy["reasons"] if "for TCP" in r]
    assert reason.startswith("epoll busy polling, napi.napi_defer_hard_irqs, napi.gro_flush_timeout do nothing for "
                             "TCP: eth9's peer veth1 has TSO on"), reason
    assert "`ip netns exec cli ethtool -K veth1 tso off`" in reason
    # A knob the profile turns off still holds; a profile of only such knobs is untouched.
    assert busy["parts"]["napi.irq_suspend_timeout"] is True
    assert not any("for TCP" in r for r in v["no-coalescing"]["reasons"])
    said = [n for n in notes(_kernel(), _device(veth_peer=_peer())) if "TSO on" in n]
    assert len(said) == 1 and "SO_INCOMING_NAPI_ID 0" in said[0] and "UDP too" in said[0], said
    # With UDP GRO forwarding on the veth, UDP still gets through: said, not counted as nothing.
    v = _by_profile(_kernel(), _device(veth_peer=_peer(udp_gro=True)))
    assert v["busy-wait"]["parts"]["epoll"] is True and any("for TCP" in r for r in v["busy-wait"]["reasons"])
    # TSO off: nothing said; TSO unknown: a note says what could not be told.
    assert _by_profile(_kernel(), _device(veth_peer=_peer(tso=False, bypass=False))) == _by_profile(_kernel(), _device())
    unknown = " ".join(notes(_kernel(), _device(veth_peer=_peer(tso=None, bypass=None, how="`ethtool` is not installed"))))
    assert "could not be told (`ethtool` is not installed)" in unknown


def test_notes_name_rps_shared_irqs_and_threading():
    d = _device(rps_cpus={"rx-0": "3"}, threaded_sysfs="1",
                irqs=[{"irq": 77, "napi": 9, "smp_affinity_list": "0-3"}, {"irq": 78, "napi": 10, "smp_affinity_list": "0-3"}])
    said = " ".join(notes(_kernel(), d))
    assert "RPS is on for rx-0" in said and "threaded" in said and "same CPUs (0-3)" in said
    assert "busy_poll and busy_read are 0" in said


def test_a_sysctl_line_is_never_a_bare_none():
    here = {"scope": "global", "visible_here": True, "hidden": False, "read_in": "this network namespace", "reason": None}
    assert sysctl_line("net.core.busy_poll", 0, here) == "net.core.busy_poll 0 (global)"
    hidden = {"scope": "global", "visible_here": False, "hidden": True, "read_in": "the initial network namespace (...)",
              "reason": None}
    assert sysctl_line("net.core.busy_poll", 50, hidden) == (
        "net.core.busy_poll: not visible in this network namespace (global; initial namespace value: 50)")
    unread = dict(hidden, read_in=None, reason="its value in the initial network namespace could not be read: no way in")
    assert sysctl_line("net.core.busy_poll", None, unread) == (
        "net.core.busy_poll: not visible in this network namespace (global; its initial namespace value could not "
        "be read)")
    gone = dict(hidden, read_in=None, reason="it is not in the initial network namespace either (No such file or "
                                              "directory): this kernel has no such sysctl")
    assert "not visible in this network namespace (global; it is not in the initial" in sysctl_line("k", None, gone)
    odd = dict(here, read_in=None, reason="/proc/sys/net/core/busy_poll cannot be read (Permission denied)")
    assert sysctl_line("net.core.busy_poll", None, odd) == (
        "net.core.busy_poll: unknown (global; /proc/sys/net/core/busy_poll cannot be read (Permission denied))")
    assert netns_line({"initial": False, "inode": 7, "how": "x"}) == "network namespace: not the initial one (inode 7; x)"
    assert "unknown whether" in netns_line({"initial": None, "inode": None, "how": ""})


def test_sysctls_hidden_in_a_namespace_are_read_in_the_initial_one_and_said_global(tmp_path, monkeypatch):
    from irqlab.linux import doctor

    # A namespace that shows only the per-namespace table, and one that also
    # has a global sysctl (as a later kernel might move one): it is per namespace there.
    (tmp_path / "somaxconn").write_text("4096\n")
    (tmp_path / "dev_weight").write_text("64\n")
    monkeypatch.setattr(doctor, "_CORE", tmp_path)
    asked = []

    def initial(names):
        asked.append(names)
        return {"via": "/proc/1/ns/net", "what": "PID 1's", "values": {n: {"value": "0"} for n in names if n != "busy_read"}
                | {"busy_read": {"error": "No such file or directory"}}}

    monkeypatch.setattr(doctor, "_read_in_initial", initial)
    values, info, via = doctor.sysctl_report({"initial": False, "inode": 5, "how": ""})
    assert asked == [[n for n in doctor.SYSCTLS if n != "dev_weight"]]
    assert values["net.core.busy_poll"] == 0 and info["net.core.busy_poll"]["scope"] == "global"
    assert info["net.core.busy_poll"]["read_in"].startswith("the initial network namespace (entered through /proc/1/ns/net")
    assert (values["net.core.dev_weight"], info["net.core.dev_weight"]["scope"]) == (64, "per-namespace")
    assert values["net.core.busy_read"] is None and "this kernel has no such sysctl" in info["net.core.busy_read"]["reason"]
    assert via == {"via": "/proc/1/ns/net", "what": "PID 1's"}
    report = {"kernel": "x", "features": _kernel()["features"] | {k: {"available": True, "how": "h"} for k in (
        "so_prefer_busy_poll", "so_busy_poll_budget", "io_uring_napi", "threaded_napi_sysfs")},
        "netns": {"initial": False, "inode": 5, "how": "h"}, "sysctls": values, "sysctl_info": info,
        "sysctl_initial": via, "device": None, "profiles": [], "notes": []}
    text = doctor.doctor_text(report)
    assert "None" not in text, text
    assert "net.core.busy_poll: not visible in this network namespace (global; initial namespace value: 0)" in text
    assert "net.core.dev_weight 64 (per-namespace)" in text
    assert "(read in the initial network namespace, entered through /proc/1/ns/net, PID 1's)" in text

    # No way in: each says so, the reason once below them.
    monkeypatch.setattr(doctor, "_read_in_initial", lambda names: {"via": None, "why": "no way in: /proc/1/ns/net: "
                                                                   "Permission denied"})
    values, info, via = doctor.sysctl_report({"initial": False, "inode": 5, "how": ""})
    text = doctor.doctor_text(dict(report, sysctls=values, sysctl_info=info, sysctl_initial=via))
    assert "None" not in text, text
    assert "(the initial network namespace's values could not be read: no way in: /proc/1/ns/net: Permission denied)" in text
    said = notes({"sysctls": values, "sysctl_info": info, "netns": {"initial": False}}, None)
    assert any("busy_read could not be read" in n for n in said)
    assert any("other than the initial one" in n for n in said)


def test_doctor_on_lo_as_json():
    proc = subprocess.run([sys.executable, "-m", "irqlab", "linux", "doctor", "lo", "--json"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    if proc.returncode != 0 and "netdev" in proc.stderr:
        pytest.skip(f"this kernel has no netdev netlink family: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["device"]["device"] == "lo" and r["device"]["napis"] == []
    assert set(r["sysctls"]) == {f"net.core.{k}" for k in ("busy_poll", "busy_read", "netdev_budget",
                                                            "netdev_budget_usecs", "netdev_max_backlog", "dev_weight")}
    assert set(r["sysctl_info"]) == set(r["sysctls"])
    assert all(i["scope"] in ("global", "per-namespace") for i in r["sysctl_info"].values())
    assert r["netns"]["initial"] in (True, False, None) and r["netns"]["how"]
    assert {v["works"] for v in r["profiles"]} == {"no"}
    for key in ("epoll_params", "so_prefer_busy_poll", "so_busy_poll_budget", "io_uring_napi", "threaded_napi_sysfs"):
        assert "available" in r["features"][key] and r["features"][key]["how"]


def test_doctor_refuses_a_bad_device_name_in_one_sentence():
    proc = subprocess.run([sys.executable, "-m", "irqlab", "linux", "doctor", "a/b"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "a/b" in proc.stderr


def test_the_tuner_accepts_only_the_load_generator_as_its_load():
    from irqlab.linux.tune_cmd import TuneError, parse_load

    argv = parse_load("ip netns exec cli taskset -c 0 irqlab loadgen --server 198.18.0.1:11211")
    assert argv[:6] == ["ip", "netns", "exec", "cli", "taskset", "-c"] and argv[7].endswith("irqlab-loadgen")
    assert argv[-2:] == ["--server", "198.18.0.1:11211"]
    for bad, said in (("sh -c 'irqlab loadgen'", "must be an `irqlab loadgen"), ("irqlab loadgen --json", "--json"),
                      ("irqlab loadgen --duration=3", "--duration"), ("irqlab loadgen 'x", "not a valid command line")):
        with pytest.raises(TuneError, match=said.replace("`", ".").replace("(", ".")):
            parse_load(bad)
