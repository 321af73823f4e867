"""Measure the four profiles on the veth testbed.

For each profile: start Debian's memcached on the server core inside the
server namespace through ``irqlab linux exec --profile P --napi-dev
irqlab-tb0`` (epoll busy-poll parameters through the preload shim, the
per-NAPI part on the server veth, restored when memcached exits), preload
the key space, then from the client namespace on the other core run the load
generator: closed loop for maximum throughput, then open loop at a low and a
medium rate. Around each measurement the server core's CPU breakdown, its
NET_RX softirqs and the NAPI thread's wake-ups are sampled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from irqlab.loadgen import find_binary
from irqlab.testbed import netns, procstat
from irqlab.testbed.netns import CLIENT_NS, SERVER_ADDR, SERVER_DEV, SERVER_NS, Testbed, TestbedError

#: The profiles measured by default: the thesis's four (``--profiles`` takes any).
PROFILES = ("no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend")
PORT = 11211


@dataclass
class Plan:
    profiles: tuple[str, ...] = PROFILES
    connections: int = 16
    depth: int = 1
    closed_s: float = 3.0
    open_s: float = 2.0
    warmup_s: float = 0.5
    low_qps: float = 5_000.0
    #: The medium rate as a fraction of the first profile's closed-loop maximum.
    medium_fraction: float = 0.5
    records: int = 10_000
    server_core: int = 1
    client_core: int = 0


@dataclass
class ProfileResult:
    profile: str
    closed: dict[str, Any] = field(default_factory=dict)
    low: dict[str, Any] = field(default_factory=dict)
    medium: dict[str, Any] = field(default_factory=dict)


def _memcached() -> str:
    path = shutil.which("memcached") or "/usr/bin/memcached"
    if not os.path.exists(path):
        raise TestbedError("memcached is not installed (Debian package memcached); install it to run the testbed")
    return path


def _loadgen() -> str:
    path = find_binary()
    if path is None:
        raise TestbedError("the load generator binary is missing; run `make setup` first")
    return str(path)


def _wait_ready(timeout_s: float = 10.0) -> None:
    """Wait until memcached accepts connections from the client namespace."""
    probe = (
        "import socket,sys,time\n"
        f"end=time.monotonic()+{timeout_s}\n"
        "while time.monotonic()<end:\n"
        f"  try: socket.create_connection(('{SERVER_ADDR}',{PORT}),0.2).close(); sys.exit(0)\n"
        "  except OSError: time.sleep(0.05)\n"
        "sys.exit(1)\n"
    )
    proc = subprocess.run(["ip", "netns", "exec", CLIENT_NS, sys.executable, "-c", probe], timeout=timeout_s + 5)
    if proc.returncode != 0:
        raise TestbedError(f"memcached did not accept connections on {SERVER_ADDR}:{PORT} within {timeout_s:.0f} s")


def _loadgen_run(plan: Plan, extra: list[str], duration_s: float, preload: bool = False) -> dict[str, Any]:
    if not preload:
        extra = [*extra, "--no-preload"]
    cmd = [
        "ip", "netns", "exec", CLIENT_NS, "taskset", "-c", str(plan.client_core), _loadgen(),
        "--server", f"{SERVER_ADDR}:{PORT}", "--connections", str(plan.connections), "--depth", str(plan.depth),
        "--warmup", str(plan.warmup_s), "--duration", str(duration_s), "--records", str(plan.records), "--json",
        *extra,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=plan.warmup_s + duration_s + 30)
    if proc.returncode != 0:
        raise TestbedError(f"the load generator failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _measured(plan: Plan, bed: Testbed, extra: list[str], duration_s: float) -> dict[str, Any]:
    """One load-generator run with the server core's counters around it.
    The counters cover warm-up and measurement; the load is steady over both."""
    a = procstat.sample(plan.server_core, bed.napi_pid)
    t0 = time.monotonic()
    lg = _loadgen_run(plan, extra, duration_s)
    secs = time.monotonic() - t0
    b = procstat.sample(plan.server_core, bed.napi_pid)
    return {"loadgen": lg, "server_core": procstat.breakdown(a, b, secs)}


def _start_server(plan: Plan, profile: str) -> subprocess.Popen[bytes]:
    cmd = [
        "ip", "netns", "exec", SERVER_NS, "taskset", "-c", str(plan.server_core),
        sys.executable, "-m", "irqlab", "linux", "exec", "--profile", profile, "--napi-dev", SERVER_DEV, "--",
        _memcached(), "-U", "0", "-l", SERVER_ADDR, "-p", str(PORT), "-t", "1", "-c", "4096", "-m", "256",
    ]
    if os.geteuid() == 0:
        cmd += ["-u", "nobody"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        # SIGTERM to `irqlab linux exec`: it forwards it to memcached and
        # restores the per-NAPI settings before it exits.
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_testbed(plan: Plan, progress: Optional[Callable[[str], None]] = None) -> dict[str, Any]:
    """Create the testbed, measure every profile, always clean up."""
    say = progress or (lambda _m: None)
    _memcached()
    _loadgen()
    bed = Testbed(plan.server_core, plan.client_core)
    results: list[ProfileResult] = []
    medium_qps: Optional[float] = None
    # Ctrl-C and SIGTERM unwind through the finally below.
    old_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        bed.create()
        say(f"testbed up: {SERVER_NS}/{SERVER_DEV} {SERVER_ADDR} <-> {CLIENT_NS}, NAPI thread pid {bed.napi_pid}")
        for profile in plan.profiles:
            server = _start_server(plan, profile)
            try:
                _wait_ready()
                r = ProfileResult(profile)
                # Store the key space once (unmeasured), so measured gets hit.
                _loadgen_run(plan, [], 0.1, preload=True)
                say(f"{profile}: closed loop ({plan.connections} connections, depth {plan.depth})")
                r.closed = _measured(plan, bed, [], plan.closed_s)
                if medium_qps is None:
                    medium_qps = round(plan.medium_fraction * r.closed["loadgen"]["achieved_qps"], -2)
                say(f"{profile}: open loop {plan.low_qps:.0f} QPS")
                r.low = _measured(plan, bed, ["--qps", str(plan.low_qps)], plan.open_s)
                say(f"{profile}: open loop {medium_qps:.0f} QPS")
                r.medium = _measured(plan, bed, ["--qps", str(medium_qps)], plan.open_s)
                results.append(r)
            finally:
                _stop_server(server)
    finally:
        signal.signal(signal.SIGTERM, old_term)
        bed.destroy()
    return {
        "plan": plan.__dict__,
        "medium_qps": medium_qps,
        "kernel": os.uname().release,
        "profiles": [r.__dict__ for r in results],
    }
