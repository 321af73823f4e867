"""Measure the profiles on the veth testbed.

For each profile: start Debian's memcached on the server core inside the
server namespace through ``irqlab linux exec --profile P --napi-dev
irqlab-tb0`` (epoll busy-poll parameters through the preload shim, the
per-NAPI part on the server veth, restored when memcached exits), preload
the key space, then from the client namespace on the other core run the load
generator: closed loop for maximum throughput, then open loop at a low and a
medium rate. Around each measurement the server core's CPU breakdown, its
NET_RX softirqs, the NAPI thread's wake-ups and CPU, and every other
process's CPU are sampled.

A policy of your own (``Plan.policies``: a label, its base profile and
``FILE.py:CLASS``) is measured as one more row: memcached runs under the
base profile, and around each measurement ``irqlab linux control`` runs the
policy against the server veth (on the client's core, as a control plane
off the data path) from its first call until just after the load ends, then
puts back every knob it set; so each measurement starts the policy afresh,
as each simulated run does. The controller's report (calls, settings, the
policy's fields) is kept with the measurement.

The whole set is repeated (``Plan.repeats``), the profiles in a rotated
order each time, so that a slow drift of the machine (another VM on the
host, thermal state) spreads over every profile instead of landing on the
last one. A measurement during which other processes used more than
``Plan.max_other_cpu_pct`` of a core, the load generator fell behind its
schedule, or the server fell behind the offered load is flagged and taken
again, up to ``Plan.retries`` times; if it stays flagged it is kept,
flagged.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from irqlab.loadgen import find_binary
from irqlab.testbed import background, procstat
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
    repeats: int = 3
    #: Other processes' CPU (percent of one core) above which a measurement
    #: is flagged as disturbed and taken again.
    max_other_cpu_pct: float = 5.0
    retries: int = 2
    #: Rows measured with a policy: label (in ``profiles``) -> [base
    #: profile, ``FILE.py:CLASS`` with an absolute path].
    policies: dict[str, list[str]] = field(default_factory=dict)

    def base_profile(self, label: str) -> str:
        """The profile memcached runs under for row ``label``."""
        return self.policies[label][0] if label in self.policies else label


def policy_label(profile: str, spec: str) -> str:
    """A policy row's label: its base profile and the policy's class."""
    return f"{profile}+{spec.rpartition(':')[2]}"

#: The phases measured per profile, in order.
PHASES = ("closed", "low", "medium")


def _memcached() -> str:
    path = shutil.which("memcached") or "/usr/bin/memcached"
    if not os.path.exists(path):
        raise TestbedError("memcached is not installed (Debian package memcached); install it to run the testbed")
    return path


#: irqlab-loadgen's exit status when the open loop could not keep its schedule.
EXIT_BEHIND_SCHEDULE = 3


def _loadgen() -> str:
    path = find_binary()
    if path is None:
        raise TestbedError("the load generator binary is missing; run `make setup` first")
    return str(path)


def wait_listening(ns: str, host: str, port: int, timeout_s: float = 10.0, what: str = "the server") -> None:
    """Wait until something accepts connections on ``host:port`` seen from
    namespace ``ns`` (a server started through ``ip netns exec`` on a busy
    machine may take a while), for at most ``timeout_s``."""
    probe = (
        "import socket,sys,time\n"
        f"end=time.monotonic()+{timeout_s}\n"
        "while time.monotonic()<end:\n"
        f"  try: socket.create_connection(('{host}',{port}),0.2).close(); sys.exit(0)\n"
        "  except OSError: time.sleep(0.05)\n"
        "sys.exit(1)\n"
    )
    proc = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", probe], timeout=timeout_s + 5)
    if proc.returncode != 0:
        raise TestbedError(f"{what} did not accept connections on {host}:{port} within {timeout_s:.0f} s")


def _wait_ready(timeout_s: float = 10.0) -> None:
    """Wait until memcached accepts connections from the client namespace."""
    wait_listening(CLIENT_NS, SERVER_ADDR, PORT, timeout_s, "memcached")


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
    return loadgen_report(proc.returncode, proc.stdout, proc.stderr)


def loadgen_report(status: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The load generator's report, when it measured the server: exit 0;
    exit 3, the open loop fell behind its schedule (schedule_kept false);
    exit 1 with every reply right but the server behind the offered load
    (server_kept_up false: requests that timed out or never found a free
    slot). The last two are measurements of a disturbed or overloaded
    server, flagged and taken again (see :func:`_measured`): the medium
    rate is half the first profile's closed-loop maximum, which another
    profile, or the same one on a machine busier than a moment before, may
    not sustain. Anything else (wrong replies, no reply at all, no report)
    is a TestbedError naming the generator's reason."""
    why = ((stderr or stdout).strip().splitlines() or ["it printed nothing"])[-1]
    try:
        report: dict[str, Any] = json.loads(stdout) if status in (0, 1, EXIT_BEHIND_SCHEDULE) else {}
    except ValueError:
        report = {}
    overloaded = report.get("server_kept_up") is False and report.get("errors") == 0 and report.get("requests", 0) > 0
    if not report or (status == 1 and not overloaded):
        raise TestbedError(f"the load generator failed: {why}")
    return report


def _app_switches(own: set[int]) -> tuple[int, int]:
    vol = invol = 0
    for tid in procstat.worker_threads(own):
        v, i = procstat.switches(tid)
        vol, invol = vol + v, invol + i
    return vol, invol


#: How long a policy's controller runs past the load generator's planned
#: time, so that it covers the generator's own start.
CONTROL_SLACK_S = 1.0


def _start_controller(plan: Plan, spec: str, duration_s: float, control_file: str) -> subprocess.Popen[str]:
    """``irqlab linux control`` on the server veth, on the client's core,
    once its first call is made (its line on stderr); TestbedError if it
    fails first."""
    from irqlab.linux.control_cmd import FIRST_CALL

    # The shim's stats file sits beside the control file (_start_server).
    stats = os.path.join(os.path.dirname(control_file), STATS_FILE)

    cmd = [
        "ip", "netns", "exec", SERVER_NS, "taskset", "-c", str(plan.client_core),
        sys.executable, "-m", "irqlab", "linux", "control", SERVER_DEV, "--policy", spec,
        "--duration", f"{plan.warmup_s + duration_s + CONTROL_SLACK_S:.3f}", "--control", control_file,
        "--shim-stats", stats, "--json",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    said: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
        line = proc.stderr.readline() if ready else ""
        if line:
            said.append(line.strip())
            if FIRST_CALL in line:
                return proc
        elif proc.poll() is not None:
            break
    _stop_controller(proc)
    why = said[-1] if said else "it said nothing within 30 s"
    raise TestbedError(f"the policy's controller (irqlab linux control) did not start: {why}")


def _stop_controller(proc: subprocess.Popen[str], timeout_s: float = 30) -> Optional[dict[str, Any]]:
    """Wait for the controller's own end (its --duration), SIGTERM it past
    ``timeout_s`` (it puts the knobs back then too); its report, or None."""
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=5)
    if proc.returncode != 0:
        lines = (err or "").strip().splitlines()
        raise TestbedError(f"the policy's controller (irqlab linux control) failed: {lines[-1] if lines else proc.returncode}")
    try:
        report: dict[str, Any] = json.loads(out)
    except ValueError:
        return None
    # A hundred settings are enough to show what it did; the count goes on.
    report["decisions"] = report.get("decisions", [])[:100]
    return report


def _measured(plan: Plan, bed: Testbed, extra: list[str], duration_s: float, own: set[int],
              policy: Optional[tuple[str, str]] = None) -> dict[str, Any]:
    """One load-generator run with the server core's counters and every
    process's CPU around it. The counters cover warm-up and measurement;
    the load is steady over both. The load generator itself is started and
    reaped between the two process samples, so it is never counted.
    ``policy``: (``FILE.py:CLASS``, the server's control file): the
    policy's controller runs around the load (and is the testbed's own)."""
    ctl = None
    if policy is not None:
        ctl = _start_controller(plan, policy[0], duration_s, policy[1])
        own = own | {ctl.pid}
    try:
        m = _measured_load(plan, bed, extra, duration_s, own)
    except BaseException:
        if ctl is not None and ctl.poll() is None:
            # It puts the knobs back on SIGTERM.
            os.killpg(ctl.pid, signal.SIGTERM)
            ctl.wait(timeout=30)
        raise
    if ctl is not None:
        m["policy"] = _stop_controller(ctl)
    return m


def _measured_load(plan: Plan, bed: Testbed, extra: list[str], duration_s: float, own: set[int]) -> dict[str, Any]:
    tasks_a = procstat.all_task_ticks()
    a = procstat.sample(plan.server_core, bed.napi_pid)
    ca = procstat.sample(plan.client_core, None)
    app_a = _app_switches(own)
    bg_a = background.counters(own)
    t0 = time.monotonic()
    lg = _loadgen_run(plan, extra, duration_s)
    secs = time.monotonic() - t0
    bg_b = background.counters(own)
    b = procstat.sample(plan.server_core, bed.napi_pid)
    cb = procstat.sample(plan.client_core, None)
    app_b = _app_switches(own)
    other_pct, top = procstat.other_cpu(tasks_a, procstat.all_task_ticks(), own, secs)
    # A generator behind its schedule measured itself as much as the server.
    behind = lg.get("schedule_kept") is False
    # A server behind the offered load: a disturbance, or the profile's limit.
    overloaded = lg.get("server_kept_up") is False
    flagged = other_pct > plan.max_other_cpu_pct or behind or overloaded
    core = procstat.breakdown(a, b, secs)
    # memcached's event loop: a voluntary switch is a sleep in epoll_wait, an
    # involuntary one a preemption (by the NAPI thread: nothing else runs there).
    core["app_sleeps_per_s"] = (app_b[0] - app_a[0]) / secs
    core["app_preemptions_per_s"] = (app_b[1] - app_a[1]) / secs
    # memcached's own background threads (the LRU maintainer): their turns
    # on the core and their CPU.
    bg = background.rates(bg_a, bg_b, secs)
    core["app_background_wakeups_per_s"] = bg["wakeups_per_s"]
    core["app_background_cpu_pct"] = bg["cpu_pct"]
    return {
        "loadgen": lg,
        "server_core": core,
        # The load generator's core: how close the client is to being the bottleneck.
        "client_core": procstat.breakdown(ca, cb, secs),
        "other_cpu": {"pct_of_core": other_pct, "top": [{"comm": c, "pid": p, "pct_of_core": x} for c, p, x in top]},
        "behind_schedule": behind,
        "server_behind": overloaded,
        "flagged": flagged,
    }


def _measured_clean(plan: Plan, bed: Testbed, extra: list[str], duration_s: float, own: set[int],
                    say: Callable[[str], None], what: str,
                    policy: Optional[tuple[str, str]] = None) -> dict[str, Any]:
    """:func:`_measured`, taken again while other processes disturb it."""
    for attempt in range(1, plan.retries + 2):
        m = _measured(plan, bed, extra, duration_s, own, policy)
        m["attempt"] = attempt
        if not m["flagged"]:
            return m
        top = ", ".join(f"{t['comm']} ({t['pid']}) {t['pct_of_core']:.0f} %" for t in m["other_cpu"]["top"])
        why = [f"other processes used {m['other_cpu']['pct_of_core']:.0f} % of a core ({top})"]
        if m["behind_schedule"]:
            why.append(f"the load generator fell behind its schedule ({100 * m['loadgen']['late_fraction']:.1f} % "
                       f"of its sends more than {m['loadgen']['late_us']} us late)")
        if m["server_behind"]:
            lg = m["loadgen"]
            why.append(f"the server did not keep up ({100 * lg['failed_fraction']:.1f} % of the window's requests timed "
                       f"out or found no free slot, stalled {100 * lg['stalled_fraction']:.1f} % of the window)")
        say(f"{what}: {'; '.join(why)}; " + ("measuring again" if attempt <= plan.retries else "kept, flagged"))
    return m


def _own_pids(server: subprocess.Popen[bytes]) -> set[int]:
    """This process, the server's launcher and everything in the server namespace."""
    pids = {os.getpid(), server.pid}
    out = subprocess.run(["ip", "netns", "pids", SERVER_NS], capture_output=True, text=True, timeout=10).stdout
    pids |= {int(p) for p in out.split() if p.isdigit()}
    return pids


def rotated(profiles: tuple[str, ...], repeat: int) -> tuple[str, ...]:
    """The order of the profiles in repeat ``repeat`` (0-based): the list
    rotated by one more place each time."""
    k = repeat % len(profiles) if profiles else 0
    return profiles[k:] + profiles[:k]


#: The shim's stats file (IRQLAB_STATS) of a policy row's memcached, in the
#: row's directory beside its control file: the policy's sample's threads.
STATS_FILE = "shim-stats"


def _start_server(plan: Plan, profile: str, control_file: Optional[str] = None) -> subprocess.Popen[bytes]:
    control = []
    if control_file:
        stats = os.path.join(os.path.dirname(control_file), STATS_FILE)
        control = ["--control", control_file, "--shim-stats", stats]
    cmd = [
        "ip", "netns", "exec", SERVER_NS, "taskset", "-c", str(plan.server_core),
        sys.executable, "-m", "irqlab", "linux", "exec", "--profile", profile, "--napi-dev", SERVER_DEV, *control, "--",
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
    # SIGTERM unwinds like Ctrl-C, so that the testbed is removed.
    from irqlab.undo import raise_terminated

    raise_terminated(signum, frame)


def remove(bed: Testbed, finished: bool, old_term: Any) -> None:
    """Remove what ``bed`` created (namespaces, veth, everything running in
    them) with SIGINT and SIGTERM held, so that a second one cannot cut the
    removal short; SIGTERM's handler becomes ``old_term``. If the run did
    not finish, say on stderr that the host is as it was."""
    from irqlab.undo import signals_held

    with signals_held(after={signal.SIGTERM: old_term}):
        created = list(bed.created)
        bed.destroy()
        if created and not finished:
            print(f"irqlab: the testbed did not finish; its namespaces ({', '.join(created)}), their veth pair and "
                  "everything running in them are removed", file=sys.stderr, flush=True)


def run_testbed(plan: Plan, progress: Optional[Callable[[str], None]] = None) -> dict[str, Any]:
    """Create the testbed, measure every profile ``plan.repeats`` times,
    always clean up. Returns ``runs`` (one record per profile, repeat and
    phase) and ``profiles`` (per profile and phase, the medians: see
    :mod:`irqlab.testbed.stats`)."""
    from irqlab.testbed.stats import per_profile

    say = progress or (lambda _m: None)
    _memcached()
    _loadgen()
    bed = Testbed(plan.server_core, plan.client_core)
    runs: list[dict[str, Any]] = []
    medium_qps: Optional[float] = None
    # Ctrl-C and SIGTERM unwind through the finally below.
    old_term = signal.signal(signal.SIGTERM, _interrupt)
    finished = False
    try:
        bed.create()
        say(f"testbed up: {SERVER_NS}/{SERVER_DEV} {SERVER_ADDR} <-> {CLIENT_NS}, NAPI thread pid {bed.napi_pid}")
        server_probe = _server_probe(plan, say)
        for repeat in range(plan.repeats):
            for profile in rotated(plan.profiles, repeat):
                # A policy row: memcached under its base profile, with a
                # control file the policy's busy_poll_usecs goes through,
                # and the shim's stats file (the sample's threads).
                spec = plan.policies.get(profile, [None, None])[1]
                tmp = tempfile.mkdtemp(prefix="irqlab-tb-") if spec else None
                if tmp:
                    # memcached, run as nobody, reads the control file and
                    # writes the shim's stats file there (sticky, as /tmp).
                    os.chmod(tmp, 0o1777)
                control_file = os.path.join(tmp, "control") if tmp else None
                policy = (spec, control_file) if spec and control_file else None
                server = _start_server(plan, plan.base_profile(profile), control_file)
                try:
                    _wait_ready()
                    own = _own_pids(server)
                    # Store the key space once (unmeasured), so measured gets hit.
                    _loadgen_run(plan, [], 0.1, preload=True)
                    tag = f"{profile} (repeat {repeat + 1}/{plan.repeats})"
                    for phase in PHASES:
                        if phase == "closed":
                            extra: list[str] = []
                            say(f"{tag}: closed loop ({plan.connections} connections, depth {plan.depth})")
                        else:
                            qps = plan.low_qps if phase == "low" else medium_qps
                            extra = ["--qps", str(qps)]
                            say(f"{tag}: open loop {qps:.0f} QPS")
                        m = _measured_clean(plan, bed, extra, plan.closed_s if phase == "closed" else plan.open_s,
                                            own, say, f"{tag} {phase}", policy)
                        runs.append({"profile": profile, "repeat": repeat, "phase": phase, **m})
                        if phase == "closed" and medium_qps is None:
                            medium_qps = round(plan.medium_fraction * m["loadgen"]["achieved_qps"], -2)
                finally:
                    _stop_server(server)
                    if tmp:
                        shutil.rmtree(tmp, ignore_errors=True)
        finished = True
    finally:
        remove(bed, finished, old_term)
    return {
        "plan": plan.__dict__,
        "medium_qps": medium_qps,
        "kernel": os.uname().release,
        "runs": runs,
        "profiles": per_profile(runs, plan.profiles),
        "server_probe": server_probe,
    }


#: The server probe's gets, seconds (irqlab.testbed.background).
SERVER_PROBE_S = 1.0


def _server_probe(plan: Plan, say: Callable[[str], None]) -> dict[str, Any]:
    """memcached's background threads under one second of gets at the low
    rate, memcached under no-coalescing (:mod:`irqlab.testbed.background`),
    before any profile is measured."""
    server = _start_server(plan, "no-coalescing")
    try:
        _wait_ready()
        own = _own_pids(server)
        _loadgen_run(plan, [], 0.1, preload=True)
        a = background.counters(own)
        t0 = time.monotonic()
        _loadgen_run(plan, ["--qps", str(plan.low_qps)], SERVER_PROBE_S)
        out = background.rates(a, background.counters(own), time.monotonic() - t0)
    finally:
        _stop_server(server)
    say(f"server probe: memcached's background threads woke {out['wakeups_per_s']:.0f} times a second, "
        f"{out['cpu_ns_per_wakeup'] / 1e3:.1f} us of CPU each, under {plan.low_qps:.0f} gets a second")
    return {**out, "qps": plan.low_qps, "seconds": SERVER_PROBE_S}
