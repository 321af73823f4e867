"""``irqlab linux doctor``'s reasoning on reports it did not read itself, and
the command on ``lo`` (no root needed; the live tests on a veth are in
test_linux_live.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab.linux.doctor import notes, verdicts

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
            "irqs": [{"irq": 77, "napi": 9, "smp_affinity_list": "0", "effective_affinity_list": "0"}],
            "threaded_sysfs": "0", "rps_cpus": {"rx-0": "0"}, "xps_cpus": {}, **extra}


def _by_profile(k: dict, d: dict | None) -> dict:
    return {v["profile"]: v for v in verdicts(k, d)}


def test_a_capable_device_and_kernel_run_every_profile():
    assert all(v["works"] == "yes" and not v["reasons"] for v in verdicts(_kernel(), _device()))


def test_a_kernel_without_irq_suspension_leaves_those_profiles_partly_working():
    v = _by_profile(_kernel(irq_suspend_timeout=False), _device())
    assert v["irq-suspend"]["works"] == "partly"
    assert any("irq-suspend-timeout (Linux 6.13)" in r for r in v["irq-suspend"]["reasons"])
    assert v["busy-wait"]["works"] == "yes" and v["no-coalescing"]["works"] == "yes"


def test_missing_coalescing_parameters_are_named_and_switches_turned_off_do_not_count():
    v = _by_profile(_kernel(), _device(coalesce_params=["rx-usecs", "rx-frames", "adaptive-rx"]))
    # no-coalescing turns cqe-mode-rx off, which a device without CQE mode already is.
    assert v["no-coalescing"]["works"] == "yes"
    assert v["adaptive-coalescing"]["works"] == "partly"
    assert v["adaptive-coalescing"]["reasons"] == ["cqe-mode-rx does nothing: eth9's driver does not accept it"]


def test_without_epoll_params_busy_polling_does_nothing():
    k = _kernel()
    k["features"]["epoll_params"] = {"available": False, "how": ""}
    v = _by_profile(k, _device())
    assert v["busy-wait"]["works"] == "partly"
    assert any("EPIOCSPARAMS is missing" in r for r in v["busy-wait"]["reasons"])
    # A profile that does not busy poll is unaffected.
    assert v["irq-batching"]["works"] == "yes"


def test_notes_name_rps_shared_irqs_and_threading():
    d = _device(rps_cpus={"rx-0": "3"}, threaded_sysfs="1",
                irqs=[{"irq": 77, "napi": 9, "smp_affinity_list": "0-3"}, {"irq": 78, "napi": 10, "smp_affinity_list": "0-3"}])
    said = " ".join(notes(_kernel(), d))
    assert "RPS is on for rx-0" in said and "threaded" in said and "same CPUs (0-3)" in said
    assert "busy_poll and busy_read are 0" in said


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
