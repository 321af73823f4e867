"""``irqlab linux tune DEV``: an online controller for one real knob.

At each step the golden-section search policy (``irqlab_policy::search``,
the same code the simulator's controllers and ``irqlab tune`` drive) names a
value; the knob is set to it on DEV (``irqlab.linux.knobs.set_knob``, which
saves the device's settings before the first change, as ``apply`` does),
then the load command runs for one slice and the objective is measured:
``throughput`` (requests per second from the load generator's report),
``p99`` (its 99th-percentile latency, µs) or ``cpu_per_request`` (the busy
time of ``--cpus`` from ``/proc/stat`` over the slice, per request, µs). The
loop is :func:`irqlab.tuning.drive`'s: each search first measures the
knob's original value (the first time as the device holds it, before any
change); when the search has narrowed the range to ``--accept``, its answer
is measured again, and if the objective there moved by more than a quarter
(and more than three noises) from what the search saw, the load has changed
and the search starts over, within the budget. The search's best replaces
the original only if it beats the original's measurement by more than the
tolerance: ``--min-effect`` of it, or twice the noise of repeated slices of
one value, whichever is larger; otherwise the original is kept, as with
``--restore``. When the NAPIs hold different values there is no one
original to measure, and the search's best is applied as found.

``busy_poll_usecs`` is no device's: it is the knob of a program started with
``irqlab linux exec --control FILE`` (any profile), set by writing FILE,
which the preload shim reads at the program's next epoll wait and sets on
every epoll instance the program created. Each value is read back from the
kernel before its slice is measured: ``EPIOCGPARAMS`` on every epoll
instance of every process that carries the shim with that FILE
(:mod:`irqlab.linux.control`, through ``pidfd_getfd``, so as root). An idle
program that has not taken the value within 0.25 s is woken by running the
load once for 0.2 s, unmeasured; a value not everywhere 2 s after that stops
the search with an error, and so does a FILE that no program uses (found
before the first change).

The best value reported is always one a slice measured in the last search
(after the last restart): the search's answer (the middle of its last
interval), measured again, or, if the budget ran out before that, the best
value measured (``search_best``), or the original when that was a tie
(``kept``); ``best_step`` in the result names the slice, and the curve
shows its measurement. When no slice could be measured within the budget
there is no best and the original stays.

At the end the best value is applied (``irqlab linux restore DEV`` puts back
what was there before), or with ``--restore`` the original is put back. The
original comes back on Ctrl-C, SIGTERM or any failure too, and irqlab says
so on stderr; a knob that the restore finds changed by hand since the tuner
set it gets a line of its own there, as ``irqlab linux restore`` prints it
(not when an earlier ``apply`` saved the state: the tuner then sets its knob
back itself, without a restore, and has no record to compare with). Every
flag, ``--out`` included, and the load command (run once) are checked before
the first change. ``--budget`` bounds the whole run, every wait in it
counted (issue 62, item 5): the check of the load command, each slice with
the load generator's connects and preload, each nudge and read-back. A slice
starts only if it fits in what is left, by what slices have cost so far
beyond their length; a load command still running a second
(``BUDGET_GRACE_S``) after the budget ran out (a server stopped with SIGSTOP
keeps the generator waiting) is stopped, the original put back, and the
tuner fails saying so (exit status 2). Only the read-back of a control
file's original at the end may take a few seconds more. The
load command may only be ``irqlab loadgen`` (``irqlab`` by name or by any
path the shell would resolve to the irqlab command, or the
``irqlab-loadgen`` binary; optionally under ``ip netns exec NS``), whose
targets are limited to loopback and 198.18.0.0/15.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from irqlab.tuning import DEFAULT_MIN_EFFECT, DEFAULT_RESTART_FRACTION

OBJECTIVES = ("throughput", "p99", "cpu_per_request")

#: Flags of the load generator the tuner sets itself.
_OWN_FLAGS = ("--duration", "--json", "--warmup")


class TuneError(ValueError):
    """A bad flag or a refusal; one sentence."""


class BudgetSpent(TuneError):
    """``--budget`` ran out inside a wait: a load command that had not ended
    (a server that does not answer: stopped, hung). One sentence."""


def _irqlab_entry_points() -> list[str]:
    """The ``irqlab`` commands: the one on PATH, the one beside this
    interpreter (a virtualenv's) and the one this process was started as."""
    points = [shutil.which("irqlab"), str(Path(sys.executable).with_name("irqlab"))]
    if sys.argv and Path(sys.argv[0]).name == "irqlab":
        points.append(sys.argv[0])
    return [p for p in points if p and os.path.isfile(p)]


def _is_irqlab(program: str) -> bool:
    """Whether ``program``, found as the shell finds it (``shutil.which``:
    a name on PATH, or a path), is the irqlab command. The bare name is
    always taken, as before: the tuner runs the load generator binary
    itself, not the command named."""
    if program == "irqlab":
        return True
    found = shutil.which(program)
    if found is None:
        return False
    for point in _irqlab_entry_points():
        try:
            if os.path.samefile(found, point):
                return True
        except OSError:
            continue
    return False


def parse_load(text: str) -> list[str]:
    """The load command as argv for the load generator binary: ``irqlab
    loadgen ARGS`` (``irqlab`` by name or by any path that resolves to the
    irqlab command) or ``irqlab-loadgen ARGS``, optionally after ``ip netns
    exec NS`` and then ``taskset -c CPUS``; refuses anything else and the
    flags the tuner sets."""
    from irqlab.loadgen import find_binary

    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise TuneError(f"--load is not a valid command line ({e})") from None
    prefix: list[str] = []
    if argv[:3] == ["ip", "netns", "exec"] and len(argv) > 3:
        prefix, argv = argv[:4], argv[4:]
    if argv[:2] == ["taskset", "-c"] and len(argv) > 2:
        prefix, argv = prefix + argv[:3], argv[3:]
    if argv[1:2] == ["loadgen"] and _is_irqlab(argv[0]):
        rest = argv[2:]
    elif argv and Path(argv[0]).name == "irqlab-loadgen":
        rest = argv[1:]
    else:
        why = ""
        if argv[1:2] == ["loadgen"]:
            found = shutil.which(argv[0])
            if found is None:
                why = f"; {argv[0]} is not found"
            elif found == argv[0]:
                why = f"; {argv[0]} is not the irqlab command"
            else:
                why = f"; {argv[0]} resolves to {found}, not to the irqlab command"
        raise TuneError(f"--load must be an `irqlab loadgen ...` command, optionally under `ip netns exec NS` and "
                        f"`taskset -c CPUS` (got {text!r}{why})")
    for a in rest:
        if a.split("=", 1)[0] in _OWN_FLAGS:
            raise TuneError(f"--load must not set {a.split('=', 1)[0]}: the tuner sets it for each slice")
    binary = find_binary()
    if binary is None:
        raise TuneError("the load generator binary is missing; run `make setup` first")
    return [*prefix, str(binary), *rest]


def parse_range(text: str, knob: str, limit: int) -> tuple[int, int]:
    try:
        lo_text, hi_text = text.split(":")
        lo, hi = int(lo_text), int(hi_text)
    except ValueError:
        raise TuneError(f"--range must be LOW:HIGH, two whole numbers (got {text!r})") from None
    if not 0 <= lo < hi <= limit:
        raise TuneError(f"--range must have 0 <= LOW < HIGH <= {limit} for {knob} (got {text!r})")
    return lo, hi


def _busy_jiffies(cpus: Optional[set[int]]) -> tuple[int, int]:
    """(busy, total) jiffies of the CPUs (all when None) from /proc/stat."""
    busy = total = 0
    for line in Path("/proc/stat").read_text().splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu") or parts[0] == "cpu":
            continue
        if cpus is not None and int(parts[0][3:]) not in cpus:
            continue
        v = [int(x) for x in parts[1:9]]
        total += sum(v)
        busy += sum(v) - v[3] - v[4]  # less idle and iowait
    return busy, total


def measure_slice(load: list[str], slice_s: float, cpus: Optional[set[int]], *,
                  budget_left_s: Optional[float] = None, budget_s: Optional[float] = None) -> dict[str, float]:
    """One slice of load: its throughput, p99 and CPU per request. The load
    command is killed after ``slice_s`` + 60 s, or when what is left of the
    budget (``budget_left_s`` of ``--budget`` ``budget_s``) runs out, if that
    comes first: then :class:`BudgetSpent`. (The load generator itself waits
    up to 5 s to connect and 60 s for its preload, crates/irqlab-loadgen
    lib.rs, which a server stopped by SIGSTOP makes it spend whole.)"""
    limit_s = slice_s + 60
    by_budget = budget_left_s is not None and budget_left_s < limit_s
    if by_budget:
        limit_s = max(0.0, float(budget_left_s or 0.0))
    b0, _ = _busy_jiffies(cpus)
    t0 = time.monotonic()
    try:
        proc = subprocess.run([*load, "--duration", f"{slice_s:g}", "--json"], capture_output=True, text=True,
                              timeout=limit_s)
    except OSError as e:
        raise TuneError(f"the load command could not be started: {load[0]}: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        if by_budget:
            raise BudgetSpent(f"--budget {budget_s:g} s ran out while the load command was still running, "
                              f"{time.monotonic() - t0:.1f} s into a {slice_s:g} s slice (does its server answer? a "
                              "stopped or hung server keeps it waiting), and it was stopped") from None
        raise TuneError(f"the load command did not end within {slice_s + 60:g} s of a {slice_s:g} s slice") from None
    secs = time.monotonic() - t0
    b1, _ = _busy_jiffies(cpus)
    # 1: the server failed or did not keep up (the objective shows it); 3:
    # the open loop fell behind its schedule, refused below.
    if proc.returncode not in (0, 1, 3) or not proc.stdout.strip():
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise TuneError(f"the load command failed: {last[0]}")
    try:
        report = json.loads(proc.stdout)
        qps = float(report["achieved_qps"])
        report["latency_us"].get("p99")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise TuneError("the load command's output is not the load generator's JSON report") from None
    if report.get("schedule_kept") is False:
        raise TuneError(
            f"the load generator fell behind its open-loop schedule in a slice ({100 * report['late_fraction']:.1f} % "
            f"of its sends more than {report['late_us']} us late), so the slice measured the generator, not the knob; "
            "lower --qps in --load or give the generator a CPU of its own")
    requests = qps * slice_s
    cpu_us = (b1 - b0) / os.sysconf("SC_CLK_TCK") * 1e6
    return {
        "throughput": qps,
        "p99": float(report["latency_us"]["p99"]) if report["latency_us"].get("p99") is not None else math.nan,
        "cpu_per_request": cpu_us / requests if requests > 0 else math.nan,
        "errors": float(report.get("errors", 0)),
        "wall_s": secs,
    }


def _tell(message: str) -> None:
    """A line on stderr whatever --json says: what happened to the device."""
    try:
        print(f"irqlab: {' '.join(message.split())}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


#: Seconds a slice is allowed beyond its length (setting the value, starting
#: the load generator) when the budget is checked before it.
SLICE_MARGIN_S = 1.0
#: How long past the budget a load command still running is given before it
#: is stopped: a slice that started in time but ran slow on a busy host ends
#: normally; one that waits on a server that does not answer does not.
BUDGET_GRACE_S = 1.0

#: The knob the preload shim takes through its control file (not the device's).
CONTROL_KNOB = "busy_poll_usecs"

# A value written to the control file reaches the kernel at the program's
# next epoll wait (the shim looks at the file then, at most every 20 ms). An
# idle server can sleep in epoll_wait for long: memcached's clock event
# wakes it each second, a server without timers not at all. So after
# _CONTROL_IDLE_S the load runs once for _NUDGE_S, unmeasured, to wake it,
# and the value must be everywhere _CONTROL_WAIT_S after that.
_CONTROL_IDLE_S = 0.25
_NUDGE_S = 0.2
_CONTROL_WAIT_S = 2.0
#: How long the nudge that reads the original back at the end may take when
#: the budget is spent (a load command still running then is stopped).
_FINAL_NUDGE_S = 5.0


def _no_user(control: str) -> str:
    mine = "" if os.geteuid() == 0 else " among this user's processes"
    return (f"no running program uses --control {control} (no process with the preload shim and IRQLAB_CONTROL "
            f"naming that file has an epoll instance{mine}); start one with irqlab linux exec --control first")


def await_control(control: str, value: int, nudge: Callable[[], None],
                  deadline: Optional[Callable[[], None]] = None) -> list[Any]:
    """Wait until every epoll instance of every program using ``control``
    holds ``busy_poll_usecs`` = ``value``, read back from the kernel
    (``EPIOCGPARAMS``, :mod:`irqlab.linux.control`); the instances. Runs
    ``nudge`` (the load, once) if the value is not there after
    ``_CONTROL_IDLE_S``; TuneError, naming an instance, if it is still not
    everywhere ``_CONTROL_WAIT_S`` after that, or if no program uses the file.
    ``deadline()``, called at each look, raises when the budget has run out."""
    from irqlab.linux import control as ctl

    started = time.monotonic()
    nudged_at: Optional[float] = None
    while True:
        try:
            found = ctl.instances(control)
        except ctl.ReadBackError as e:
            raise TuneError(str(e)) from None
        if not found:
            raise TuneError(_no_user(control))
        wrong = [i for i in found if i.busy_poll_usecs != value]
        if not wrong:
            return found
        if deadline is not None:
            deadline()
        now = time.monotonic()
        if nudged_at is None and now - started >= _CONTROL_IDLE_S:
            nudge()
            nudged_at = time.monotonic()
        elif nudged_at is not None and now - nudged_at >= _CONTROL_WAIT_S:
            w = wrong[0]
            more = f", and {len(wrong) - 1} more of its {len(found)} instances" if len(wrong) > 1 else ""
            raise TuneError(f"busy_poll_usecs={value} in {control} did not reach the kernel: epoll fd {w.fd} of PID "
                            f"{w.pid} ({w.comm}) still holds {w.busy_poll_usecs} after {now - started:.1f} s{more} "
                            "(the program's irqlab-preload warning, if any, says why)")
        time.sleep(0.01)


def tune_knob(dev: str, knob: str, low: int, high: int, objective: str, load: list[str], *, slice_s: float,
              budget_s: float, accept: float, napi: Optional[int] = None, restore_after: bool = False,
              cpus: Optional[set[int]] = None, restart_fraction: float = DEFAULT_RESTART_FRACTION,
              min_effect: float = DEFAULT_MIN_EFFECT, control: Optional[str] = None,
              say: Callable[[str], None] = lambda _m: None,
              finish: Optional[Callable[[dict[str, Any]], None]] = None,
              tell: Callable[[str], None] = _tell) -> dict[str, Any]:
    """Run the search (see the module); the steps, the best value and what
    was left on the device. ``busy_poll_usecs`` is set through the control
    file of a program run with ``irqlab linux exec --control``.

    Everything is checked before the first change (the knob, the device, the
    range, root, and the load command, which runs once before). From the
    first change on, any exception (Ctrl-C, SIGTERM, the kernel refusing a
    value, the load command failing, ``finish`` failing) puts the original
    back and says so through ``tell``. ``finish(result)`` runs last, with the
    final value in place (it writes ``--out``)."""
    from irqlab._core import GoldenSection
    from irqlab.linux import knobs
    from irqlab.linux.exec_cmd import read_control, write_control
    from irqlab.tuning import check_min_effect, drive
    from irqlab.undo import raise_terminated, signals_held

    # Refusals before anything changes: the knob, the device, the range, root.
    check_min_effect(min_effect, TuneError)
    if knob == CONTROL_KNOB:
        if control is None:
            raise TuneError("--knob busy_poll_usecs needs --control FILE, the file of a program run with "
                            "irqlab linux exec --control FILE")
        try:
            originals = {(None, knob): read_control(control)}
        except (OSError, ValueError) as e:
            raise TuneError(f"--control {control} cannot be read as a control file ({e})") from None
        saved_before = True  # nothing is saved for a control file: its value is put back by hand
        # A program must use the file, and its epoll instances be readable
        # back, before anything changes (read-back needs ptrace access).
        from irqlab.linux import control as ctl

        try:
            if not ctl.instances(control):
                raise TuneError(_no_user(control))
        except ctl.ReadBackError as e:
            raise TuneError(str(e)) from None
    else:
        dry = knobs.set_knob(dev, knob, low, napi, dry_run=True)
        if not knobs.may_change_settings():
            raise TuneError("irqlab linux tune needs root (CAP_NET_ADMIN) to change NAPI and coalescing settings; "
                            "run it as root")
        originals = {(c["napi_id"], c["knob"]): c["from"] for c in dry["changed"] + dry["unchanged"]}
        # A state saved by an earlier `apply` stays; the tuner puts its own
        # knob back by hand then, and otherwise restores the state it saved.
        saved_before = knobs.has_saved_state(dev)
    # The budget bounds every wait from here on (issue 62, item 5): the
    # check below, each slice (its connects and preload included), each
    # nudge and read-back. A load command still running when it runs out is
    # stopped, and the original put back (the finally block below).
    started = time.monotonic()

    def budget_left() -> float:
        return budget_s - (time.monotonic() - started)

    def measure(length_s: float) -> dict[str, float]:
        return measure_slice(load, length_s, cpus, budget_left_s=budget_left() + BUDGET_GRACE_S, budget_s=budget_s)

    def deadline() -> None:
        if budget_left() + BUDGET_GRACE_S <= 0:
            raise BudgetSpent(f"--budget {budget_s:g} s ran out while the value in {control} was not yet on every "
                              "epoll instance of the program using it")

    # The load command once, before any change: one that cannot start or
    # reach its server is refused with the device untouched.
    check = measure(min(slice_s, 0.2))
    # What a slice costs beyond its length (starting the generator, its
    # connects and preload), as seen so far: a slice starts only if it fits.
    overhead_s = max(SLICE_MARGIN_S, check["wall_s"] - min(slice_s, 0.2))

    def nudge() -> None:
        measure(_NUDGE_S)

    if knob == CONTROL_KNOB:
        # The kernel holds the file's value already: the shim reached every
        # epoll instance (a refused or inactive shim is found here, unchanged).
        await_control(control, int(originals[(None, knob)]), nudge, deadline)
    maximize = objective == "throughput"
    # The knob's one value before the tuner, which a tie keeps; None when
    # the NAPIs hold different values (no tie rule then, see the module).
    held = {int(v) for v in originals.values()}
    current = held.pop() if len(held) == 1 else None
    steps: list[dict[str, Any]] = []
    changing = False
    where = f"{control}" if knob == CONTROL_KNOB else f"{dev}"

    def put(value: int) -> None:
        nonlocal changing
        changing = True  # from here on, a failure may have changed something
        if knob == CONTROL_KNOB:
            write_control(control, value)
            # Measured only once the kernel holds it on every instance.
            await_control(control, value, nudge, deadline)
        else:
            knobs.set_knob(dev, knob, value, napi)

    def put_back(verify: bool = False) -> list[dict[str, Any]]:
        """Put the original back; the knobs the restore found changed by
        hand since the tuner last set them (restore's ``changed_since_apply``)."""
        if knob == CONTROL_KNOB:
            write_control(control, int(originals[(None, knob)]))
            if verify:
                # The original is read back even when the search used up the
                # budget, within a few seconds of grace for the nudge.
                def final_nudge() -> None:
                    measure_slice(load, _NUDGE_S, cpus, budget_left_s=max(budget_left(), _FINAL_NUDGE_S),
                                  budget_s=budget_s)

                await_control(control, int(originals[(None, knob)]), final_nudge)
        elif not saved_before:
            # The state this run saved: exactly the settings before it. None
            # saved means the first change failed before it changed anything.
            if knobs.has_saved_state(dev):
                return list(knobs.restore(dev).get("changed_since_apply", []))
        else:
            for (napi_id, _), value in originals.items():
                knobs.set_knob(dev, knob, int(value), napi_id)
        return []

    def tell_hand_changes(changes: list[dict[str, Any]]) -> None:
        # On stderr whatever --json says, as `irqlab linux restore` prints
        # them: a hand change during the search is otherwise undone unseen.
        from irqlab.linux.words import hand_change_line

        for h in changes:
            tell(hand_change_line(dev, h))

    def original_text() -> str:
        values = sorted({int(v) for v in originals.values()})
        return ", ".join(map(str, values)) if len(values) <= 3 else f"{len(originals)} saved values"

    def step(x: float) -> float:
        value = int(round(x))
        # The current value before the first change is measured as the
        # device holds it: nothing to set, nothing to put back.
        nonlocal overhead_s
        if changing or value != current:
            put(value)
        m = measure(slice_s)
        overhead_s = max(overhead_s, m["wall_s"] - slice_s)
        # "search" is the driver's, filled in from its outcome.
        steps.append({"step": len(steps) + 1, "search": None, "value": value, **m})
        say(f"step {len(steps)}: {knob} = {value}: {m['throughput']:,.0f} req/s, p99 {m['p99']:.0f} us, "
            f"{m['cpu_per_request']:.1f} us CPU/request")
        return m[objective]

    def out_of_time() -> bool:
        return time.monotonic() - started + slice_s + overhead_s > budget_s

    finished = False
    # SIGTERM unwinds like Ctrl-C, so that the finally block puts the original back.
    old_term = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        policy = GoldenSection(float(low), float(high), accept, maximize=maximize, reuse=False)
        outcome = drive(policy, step, maximize=maximize, current=current, min_effect=min_effect,
                        restart_fraction=restart_fraction, snap=lambda x: float(int(round(x))),
                        out_of_time=out_of_time, say=say)
        for row, m in zip(steps, outcome.measurements):
            row["search"] = m.search
        restarts = outcome.restarts
        chosen, candidate = outcome.best, outcome.candidate
        answer = None if outcome.answer is None else int(outcome.answer)
        best = None if chosen is None else int(chosen.value)
        if candidate is None:
            say("the budget ran out before any value was measured; the original value is kept")
        elif answer is None:
            say(f"the budget ran out before the search converged; the best value it measured is "
                f"{int(candidate.value)} (step {candidate.step})")
        elif int(candidate.value) != answer:
            say(f"the budget ran out before the search could measure its answer, {answer}; the best value it "
                f"measured is {int(candidate.value)} (step {candidate.step})")
        # A tie keeps the original: the state saved before the first change
        # comes back whole, as with --restore.
        if restore_after or best is None or outcome.kept:
            hand = put_back(verify=True)
            left = "original"
        else:
            hand = []
            put(best)
            left = "best"
        tell_hand_changes(hand)
        curve = sorted({s["value"]: s[objective] for s in steps}.items())
        result = {
            "device": dev, "knob": knob, "napi": napi, "objective": objective, "maximize": maximize,
            "range": [low, high], "accept": accept, "slice_s": slice_s, "budget_s": budget_s,
            "original": [{"napi_id": k[0], "value": v} for k, v in originals.items()],
            "steps": steps, "curve": [{"value": v, objective: y} for v, y in curve],
            "best": best, "best_step": None if chosen is None else chosen.step,
            "best_objective": None if chosen is None or not math.isfinite(chosen.objective) else chosen.objective,
            "converged": answer is not None, "restarts": restarts, "left": left,
            "current": current, "kept": outcome.kept, "min_effect": min_effect, "noise": outcome.noise,
            "tolerance": outcome.tolerance,
            "search_best": None if candidate is None else int(candidate.value),
            "changed_since_apply": hand,
            "elapsed_s": time.monotonic() - started,
        }
        if finish is not None:
            finish(result)
        finished = True
    finally:
        if not finished and changing:
            # A second Ctrl-C or SIGTERM waits until the original is back.
            with signals_held(after={signal.SIGTERM: old_term}):
                try:
                    hand = put_back()
                except Exception as e:
                    tell(f"error: the original {knob} could not be put back on {where} ({' '.join(str(e).split())}); "
                         + (f"`irqlab linux restore {dev}` puts back the settings saved before the first change"
                            if knob != CONTROL_KNOB else f"write busy_poll_usecs={original_text()} to {control}"))
                else:
                    tell_hand_changes(hand)
                    tell(f"the search did not finish; {knob} on {where} is back to its original value "
                         f"({original_text()})")
        else:
            signal.signal(signal.SIGTERM, old_term)
    return result


def write_results(out: Path, result: dict[str, Any]) -> Path:
    """The steps as a results directory (study format; ``irqlab report DIR``)."""
    import hashlib

    from irqlab._core import __version__
    from irqlab.provenance import git_commit
    from irqlab.results import write_directory

    knob = result["knob"]
    recs = [{
        "key": f"{s['step']}/0", "point": s["step"], "replicate": 0, "profile": None,
        "knobs": [[knob, s["value"]]], "seed": None, "duration_s": result["slice_s"], "error": None,
        "summary": {"throughput_qps": s["throughput"], "latency_us": {"p99": s["p99"]},
                    "cpu_per_request_us": s["cpu_per_request"], "errors": s["errors"]},
        "wall_time_s": s["wall_s"], "irqlab_version": __version__, "git_commit": git_commit(),
    } for s in result["steps"]]
    fingerprint = hashlib.sha256(json.dumps({k: result[k] for k in ("device", "knob", "range", "objective")},
                                            sort_keys=True).encode()).hexdigest()
    y = {"throughput": "throughput_qps", "p99": "latency_us.p99", "cpu_per_request": "cpu_per_request_us"}
    study = (f'# Written by `irqlab linux tune {result["device"]}`: one row per step.\n[study]\nname = "tune-{knob}"\n'
             f'description = "irqlab linux tune: {knob} on {result["device"]}, objective {result["objective"]}"\n\n'
             f'[[plot]]\nx = "{knob}"\ny = "{y[result["objective"]]}"\nhue = "profile"\n')
    from irqlab.files import write_text_whole

    out.mkdir(exist_ok=True)  # checked before the search (check_results_out): its parent exists
    # The kind's own file first: an interrupted write is still recognised as this command's output.
    write_text_whole(out / "tune.json", json.dumps(result, indent=1))
    write_directory(out, name=f"tune-{knob}", fingerprint=fingerprint, axes=[knob], records=recs, study_toml=study)
    return out


def add_tune_parser(commands: Any) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "tune",
        help="search one real knob online with the golden-section policy, under a load you give (needs root)",
        description=("Set KNOB on DEV to the values the golden-section search policy asks for, run the load "
                     "command for a slice at each and measure the objective, then apply the best value (or, with "
                     "--restore, the original; the original too when the best beats it by no more than "
                     "--min-effect or the noise of repeated slices). The original comes back on Ctrl-C or any "
                     "failure. Knobs: "
                     "defer_hard_irqs, gro_flush_timeout, irq_suspend_timeout (every NAPI, or --napi), rx-usecs, "
                     "rx-frames; and busy_poll_usecs of a program run under irqlab linux exec --control FILE "
                     "(with --control FILE)."),
        allow_abbrev=False,
    )
    p.add_argument("device", metavar="DEV", help="network device name, e.g. eth0")
    p.add_argument("--knob", required=True, help="the knob to tune")
    p.add_argument("--range", required=True, metavar="LOW:HIGH", help="the values to search, whole numbers")
    p.add_argument("--objective", required=True, choices=OBJECTIVES, help="what to optimise")
    p.add_argument("--load", required=True, metavar="CMD",
                   help='the load, an "irqlab loadgen ..." command (optionally under "ip netns exec NS")')
    p.add_argument("--slice", default="1", metavar="S", help="seconds of load per step (0.2-60, default 1)")
    p.add_argument("--budget", default="60", metavar="S", help="seconds for the whole run, every wait included (a load "
                   "command still running a second after it runs out is stopped and the original put back); at least 3 slices "
                   "and --slice + 1 (default 60)")
    p.add_argument("--accept", metavar="W", help="stop when the range is this narrow (default: 1/32 of it)")
    p.add_argument("--min-effect", metavar="FRACTION", default=str(DEFAULT_MIN_EFFECT),
                   help="keep the original value unless the best found beats it by more than this fraction of its "
                        "objective and by more than twice the noise of repeated slices (0 to 0.5, default "
                        f"{DEFAULT_MIN_EFFECT:g})")
    p.add_argument("--napi", metavar="ID", help="tune only this NAPI (default: every NAPI of DEV)")
    p.add_argument("--cpus", metavar="LIST", help="CPUs whose busy time counts for cpu_per_request (default: all)")
    p.add_argument("--control", metavar="FILE",
                   help="with --knob busy_poll_usecs: the control file of a program run under "
                        "irqlab linux exec --control FILE; each value is read back from the program's epoll "
                        "instances (EPIOCGPARAMS) before it is measured")
    p.add_argument("--restore", action="store_true", help="put the original value back at the end")
    p.add_argument("--out", metavar="DIR", help="also write the steps as a results directory (irqlab report DIR)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=_cmd_tune)
    return p


def _number(text: str, flag: str, lo: float, hi: float) -> float:
    from irqlab.flags import number

    return number(text, flag, lo, hi, TuneError)


def _cpus(text: Optional[str]) -> Optional[set[int]]:
    if text is None:
        return None
    out: set[int] = set()
    try:
        for part in text.split(","):
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    except ValueError:
        raise TuneError(f"--cpus must be a CPU list such as 0-3,6 (got {text!r})") from None
    online = os.cpu_count() or 1
    if not out or max(out) >= online:
        raise TuneError(f"--cpus must name CPUs 0 to {online - 1} (got {text!r})")
    return out


def check_load_namespace(load: list[str]) -> None:
    """Refuse a load command under ``ip netns exec NS`` whose namespace does
    not exist (``ip netns`` keeps them in /run/netns)."""
    if load[:3] == ["ip", "netns", "exec"]:
        ns = load[3]
        if "/" in ns or not Path("/run/netns", ns).exists():
            raise TuneError(f"--load runs in network namespace {ns!r}, which does not exist (ip netns list)")


def _cmd_tune(args: argparse.Namespace) -> int:
    from irqlab._core import TUNABLE_KNOBS
    from irqlab.cli_common import UsageError
    from irqlab.files import check_output_file, check_results_out
    from irqlab.linux.words import napi_id as _napi_id
    from irqlab.linux.exec_cmd import CONTROL_MAX  # the kernel's S32_MAX for busy_poll_usecs
    from irqlab.tuning import parse_min_effect

    try:
        limits = {**dict(TUNABLE_KNOBS), CONTROL_KNOB: CONTROL_MAX}
        if args.control is not None and args.knob != CONTROL_KNOB:
            raise TuneError(f"--control goes with --knob {CONTROL_KNOB} only (got --knob {args.knob})")
        if args.knob not in limits:
            raise TuneError(f"--knob must be one of {', '.join(limits)} (got {args.knob!r})")
        low, high = parse_range(args.range, args.knob, limits[args.knob])
        slice_s = _number(args.slice, "--slice", 0.2, 60)
        # At least one slice must fit, or the search could measure nothing;
        # rounded, so that 3 x 0.2 is 0.6 and not 0.6000000000000001.
        budget_s = _number(args.budget, "--budget", round(max(3 * slice_s, slice_s + SLICE_MARGIN_S), 6), 3600)
        accept = _number(args.accept, "--accept", 1, high - low) if args.accept else max(1.0, (high - low) / 32)
        min_effect = parse_min_effect(args.min_effect, TuneError)
        load = parse_load(args.load)
        check_load_namespace(load)
        cpus = _cpus(args.cpus)
        napi = _napi_id(args.napi)
        if args.control is not None:
            check_output_file(args.control, "--control", TuneError)
        # --out before the search: a bad one must not be found out after it
        # changed the device for a minute (and then left it changed).
        out = check_results_out(args.out, "--out", "linux tune", TuneError) if args.out is not None else None
    except TuneError as e:
        raise UsageError(str(e)) from None
    say = (lambda m: None) if args.json else (lambda m: print(f"tune: {m}", file=sys.stderr, flush=True))
    finish = (lambda result: write_results(out, result)) if out is not None else None
    try:
        result = tune_knob(args.device, args.knob, low, high, args.objective, load, slice_s=slice_s, budget_s=budget_s,
                           accept=accept, napi=napi, restore_after=args.restore, cpus=cpus,
                           min_effect=min_effect, control=args.control, say=say, finish=finish)
    except TuneError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt as e:
        from irqlab.study.cli import EXIT_TERMINATED, Terminated

        return EXIT_TERMINATED if isinstance(e, Terminated) else 130
    if args.json:
        print(json.dumps(result))
    else:
        runs = f"{len(result['steps'])} steps, {result['restarts']} restarts, {result['elapsed_s']:.1f} s"
        if result["best"] is None:
            head = f"{result['knob']} on {result['device']}: no value measured within the budget ({runs})"
        else:
            # The best with the measurement that backs it, which the curve shows too.
            y = result["best_objective"]
            kept = ", the original kept" if result["kept"] else ""
            head = (f"{result['knob']} on {result['device']}: best {result['best']} for {result['objective']}, "
                    f"{'nan' if y is None else f'{y:.4g}'} at step {result['best_step']}{kept} ({runs})")
        lines = [f"{head}; left: the {result['left']} value", "curve:"]
        lines += [f"  {c['value']:>12}  {c[result['objective']]:.4g}" for c in result["curve"]]
        print("\n".join(lines))
    return 0
