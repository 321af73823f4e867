"""``irqlab linux control DEV --policy FILE.py:CLASS --duration S``: your
policy (:mod:`irqlab.policy`), the same object the simulator calls, run
against a real device.

Every ``period_us`` of real time (at least 1 ms here) the controller reads
the sample from the kernel (:mod:`irqlab.linux.host_sample`: the device's
packets and IRQs, NET_RX rounds, each CPU's time, each NAPI's ``napi-get``
configuration, the device's coalescing and, with ``--shim-stats FILE``,
the application's batches as the preload shim measured them), calls
``observe(sample)`` and applies what it answers, through the same checks
and calls as ``irqlab linux set``/``tune``
(:func:`irqlab.linux.knobs.set_knob`, which saves the device's settings
before the first change):

* ``defer-hard-irqs``, ``gro-flush-timeout``, ``irq-suspend-timeout`` on
  every NAPI or, by index (its order in ``irqlab linux show``), on one;
* ``rx-usecs``, ``rx-frames`` on the device (ethtool's coalescing is the
  device's: a per-queue target is refused);
* ``rps_cpus``, the RPS mask, on every RX queue or, by index, on one
  (``/sys/class/net/DEV/queues/rx-N/rps_cpus``, written in hex as
  ``store_rps_map`` parses it; the mask each queue had is written back at
  the end);
* ``busy_poll_usecs`` through ``--control FILE``, the control file of a
  program run with ``irqlab linux exec --control FILE`` (every thread: a
  per-thread target is refused);
* ``InterruptThrottleRate`` is the simulated 82599's and is refused.

A value outside the kernel's range (the knob table's), an answer that is
not a dict of settings or an exception in ``observe`` stops the controller
with one sentence naming the policy and the knob, as in the simulator.

Whatever ends it (``--duration`` over, Ctrl-C, SIGTERM, the policy's
failure, the kernel refusing a value), every knob it touched is put back
(``irqlab linux restore DEV``, from the state saved before the first change,
and the control file's first value) before it exits, and it says so on
stderr. When an earlier ``irqlab linux apply`` (or ``irqlab linux exec
--profile``) saved the device's settings, that state stays, and the
controller puts back by hand the value it found on each knob it set (as
``irqlab linux tune`` does); so a policy can run on top of a profile.
Refused before anything changes: a policy that does not load or whose
period is below 1 ms or above an hour, an unknown device, no root, a
control file that cannot be read, a ``--shim-stats`` path whose directory
does not exist or that is not a regular file. The loop is bounded: ``--duration`` (at most a day), so at
most ``duration / period + 1`` calls.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import signal
import stat
import sys
import time
from typing import Any, Callable, Optional

from irqlab.cli_common import UsageError

#: A real host's control loop: its sample reads /proc and netlink (a few
#: hundred µs), so calls closer than this would measure the controller.
PERIOD_US_MIN = 1000.0
#: An hour, as in the simulator (irqlab_core::model::policy::PERIOD_NS_MAX).
PERIOD_US_MAX = 3_600_000_000.0
#: --duration at most: a day.
DURATION_S_MAX = 86_400.0
#: Settings kept in the report, at most (the count goes on), as in the
#: simulator's summary (irqlab_core::model::policy::DECISIONS_KEPT).
DECISIONS_KEPT = 10_000

#: The kernel names a policy may set here, and irqlab linux's name of each.
_NAPI = {"defer-hard-irqs": "defer_hard_irqs", "gro-flush-timeout": "gro_flush_timeout",
         "irq-suspend-timeout": "irq_suspend_timeout"}
_COALESCE = {"rx-usecs": "rx-usecs", "rx-frames": "rx-frames"}
_CONTROL = "busy_poll_usecs"
_RPS = "rps_cpus"
#: Knobs of the simulator only.
_SIM_ONLY = {"InterruptThrottleRate": "the simulated 82599's rate (itr.rate), which irqlab linux does not set"}


#: The words of the line said on stderr once the first call is made (what
#: `irqlab testbed run --policy` waits for before it starts the load).
FIRST_CALL = "first call made:"


class ControlError(UsageError):
    """A refusal of ``irqlab linux control``; one sentence."""


def _refusal(policy: str, what: str) -> str:
    return " ".join(f"policy `{policy}` {what}".split())


def check_change(policy: str, knob: str, target: Optional[int], value: int, napis: int, control: Optional[str],
                 ranges: dict[str, tuple[int, int]], rx_queues: int = 0) -> None:
    """Refuse, in one sentence naming the policy and the knob, what a real
    device cannot take (see the module); ``ranges`` by kernel name."""
    from irqlab.policy import PolicyError

    if knob in _SIM_ONLY:
        raise PolicyError(_refusal(policy, f"set `{knob}`, {_SIM_ONLY[knob]}"))
    if knob not in _NAPI and knob not in _COALESCE and knob not in (_CONTROL, _RPS):
        names = ", ".join([*_NAPI, *_COALESCE, _CONTROL, _RPS])
        raise PolicyError(_refusal(policy, f"set `{knob}`, which a policy cannot set on a real device; it may set {names}"))
    lo, hi = ranges[knob]
    if not lo <= value <= hi:
        raise PolicyError(_refusal(policy, f"set `{knob}`, which must be between {lo} and {hi} (got {value})"))
    if knob in _NAPI and target is not None and target >= napis:
        raise PolicyError(_refusal(policy, f"set `{knob}` on {target}, but the device has {napis} NAPI instances "
                                           f"(0 to {max(napis - 1, 0)})"))
    if knob == _RPS:
        if rx_queues == 0:
            raise PolicyError(_refusal(policy, f"set `{knob}`, but the device has no RX queue with an rps_cpus file "
                                               "(a kernel without CONFIG_RPS)"))
        if target is not None and target >= rx_queues:
            raise PolicyError(_refusal(policy, f"set `{knob}` on RX queue {target}, but the device has {rx_queues} "
                                               f"(0 to {rx_queues - 1})"))
    if knob in _COALESCE and target is not None:
        raise PolicyError(_refusal(policy, f"set `{knob}` on queue {target}; a real device's coalescing is set for "
                                           "the whole device here (give it for every queue)"))
    if knob == _CONTROL:
        if control is None:
            raise PolicyError(_refusal(policy, f"set `{knob}`, which needs --control FILE (the control file of a "
                                               "program run with irqlab linux exec --control FILE)"))
        if target is not None:
            raise PolicyError(_refusal(policy, f"set `{knob}` on thread {target}; the control file sets every "
                                               "thread's (give it for every thread)"))


def check_period(policy: Any) -> float:
    """The policy's ``period_us`` if a real host can keep it (1 ms to an
    hour), else ControlError naming the policy."""
    period_us = getattr(policy, "period_us", None)
    if isinstance(period_us, bool) or not isinstance(period_us, (int, float)) or not math.isfinite(period_us) \
            or not PERIOD_US_MIN <= period_us <= PERIOD_US_MAX:
        raise ControlError(f"policy `{type(policy).__name__}` has `period_us` = {period_us!r}; on a real host it must "
                           f"be a number from {PERIOD_US_MIN:g} (1 ms) to {PERIOD_US_MAX:g} (an hour)")
    return float(period_us)


def kernel_ranges() -> dict[str, tuple[int, int]]:
    """Each settable knob's range as the kernel accepts it (the knob table)."""
    from irqlab.knobs import knobs

    return {k["kernel_name"]: tuple(k["kernel_range"]) for k in knobs()}  # type: ignore[misc]


def rx_queues(dev: str) -> int:
    """The device's RX queues that have an RPS map (``rx-0`` onwards)."""
    from irqlab.linux.host_sample import rps_path

    n = 0
    while os.path.isfile(rps_path(dev, n)):
        n += 1
    return n


def _write_rps(dev: str, queue: int, text: str) -> None:
    """Write ``text`` (hex words, as ``store_rps_map`` parses them) to RX
    queue ``queue``'s ``rps_cpus``; OSError as the kernel answers."""
    from irqlab.linux.host_sample import rps_path

    with open(rps_path(dev, queue), "w", encoding="ascii") as f:
        f.write(text + "\n")


def _set_rps(dev: str, queue: int, value: int) -> None:
    """Write ``value`` as RX queue ``queue``'s RPS mask; ControlError with
    the kernel's reason if it refuses."""
    try:
        _write_rps(dev, queue, f"{value:x}")
    except OSError as e:
        raise ControlError(f"the kernel refused rps_cpus={value:#x} on {dev} rx-{queue} ({e.strerror or e}); "
                           "a mask must name online CPUs") from None


def check_shim_stats(path: str) -> None:
    """Refuse, in one sentence, a ``--shim-stats`` path that cannot be the
    shim's stats file: it must be in a directory that exists and be a
    regular file if it exists (a FIFO would never be read; a missing file
    only gives ``threads = []`` until the program writes it)."""
    from irqlab.files import what_is

    what = "give the stats file of a program run with irqlab linux exec --shim-stats FILE (IRQLAB_STATS=FILE)"
    if not path.strip() or path.endswith("/"):
        raise ControlError(f"--shim-stats must name a file (got {path!r}); {what}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ControlError(f"--shim-stats {path}: its directory {parent} does not exist; {what}")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ControlError(f"--shim-stats {path} cannot be reached ({e.strerror or e}); {what}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ControlError(f"--shim-stats {path} is {what_is(st.st_mode)}, not a regular file; {what}")


def control(dev: str, policy: Any, duration_s: float, *, control_file: Optional[str] = None,
            shim_stats: Optional[str] = None,
            tell: Callable[[str], None] = lambda m: print(f"irqlab: {m}", file=sys.stderr)) -> dict[str, Any]:
    """Run ``policy`` against ``dev`` for ``duration_s`` (see the module);
    the report: calls, decisions, the policy's fields, what was restored."""
    from irqlab._core import policy_changes
    from irqlab.linux import knobs
    from irqlab.linux.exec_cmd import read_control, write_control
    from irqlab.linux.host_sample import ShimStats, has_queue_stats, host_sample
    from irqlab.policy import PolicyError
    from irqlab.undo import raise_terminated, signals_held

    name = type(policy).__name__
    # Refusals before anything changes.
    period_us = check_period(policy)
    if not (isinstance(duration_s, (int, float)) and 0 < duration_s <= DURATION_S_MAX):
        raise ControlError(f"--duration must be above 0 and at most {DURATION_S_MAX:g} s (got {duration_s!r})")
    if shim_stats is not None:
        check_shim_stats(shim_stats)
    shown = knobs.show(dev)
    if not shown.get("napis"):
        raise ControlError(f"{dev} has no NAPI instance (napi-get lists none), so there is nothing a policy could set")
    if not knobs.may_change_settings():
        raise ControlError("irqlab linux control needs root (CAP_NET_ADMIN) to change NAPI and coalescing settings; "
                           "run it as root")
    # A state saved by an earlier `apply` (or `irqlab linux exec --profile`)
    # stays: the controller then puts back by hand the values it found on
    # each knob it sets, and otherwise restores the state it saved.
    saved_before = knobs.has_saved_state(dev)
    found: dict[tuple[str, Optional[int]], int] = {}
    control_original: Optional[int] = None
    if control_file is not None:
        try:
            control_original = read_control(control_file)
        except (OSError, ValueError) as e:
            raise ControlError(f"--control {control_file} cannot be read as a control file ({e})") from None
    ranges = kernel_ranges()
    napi_ids = [n["id"] for n in shown["napis"]]
    rx = rx_queues(dev)
    # Each RX queue's RPS mask before the controller first set it, as the
    # file showed it, to write back at the end.
    rps_found: dict[int, str] = {}
    period_ns = int(round(period_us * 1e3))
    calls_max = int(duration_s * 1e9 // period_ns) + 1

    started = time.monotonic_ns()
    cpu_started = time.process_time()
    decisions: list[dict[str, Any]] = []
    changes = 0
    calls = 0
    changed = False
    busy = control_original
    finished = False
    # The previous reading stays between calls: a call's longest batch is
    # the highest bucket that grew since the one before.
    stats = None if shim_stats is None else ShimStats(shim_stats)
    qstats = has_queue_stats(dev)
    old_term = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        while calls < calls_max:
            due = started + calls * period_ns
            wait = due - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait / 1e9)
            # The device's settings now, asked once in the call if the
            # policy reads them or sets a knob whose value is remembered
            # (the first call has the report read before it).
            sample_shown: Callable[[], dict[str, Any]] = (
                functools.cache(lambda: knobs.show(dev)) if calls else (lambda: shown))
            sample = host_sample(dev, sample_shown, calls * period_ns, busy, stats, qstats)
            try:
                answer = policy.observe(sample)
            except Exception as e:
                raise PolicyError(_refusal(name, f"raised {type(e).__name__} in observe at {sample.time_ns / 1e6:.3f} ms: "
                                                 f"{e}")) from e
            calls += 1
            if calls == 1:
                tell(f"{FIRST_CALL} {name} on {dev}, then every {period_us / 1e3:g} ms for {duration_s:g} s")
            triples = policy_changes(name, answer)
            for knob, target, value in triples:
                check_change(name, knob, target, value, len(napi_ids), control_file, ranges, rx)
            for knob, target, value in triples:
                changed = True
                if saved_before:
                    _remember(found, knob, target, napi_ids, sample_shown())
                if knob in _NAPI:
                    knobs.set_knob(dev, _NAPI[knob], value, None if target is None else napi_ids[target])
                    changes += len(napi_ids) if target is None else 1
                elif knob in _COALESCE:
                    knobs.set_knob(dev, _COALESCE[knob], value)
                    changes += 1
                elif knob == _RPS:
                    for q in (range(rx) if target is None else [target]):
                        if q not in rps_found:
                            rps_found[q] = _rps_text(dev, q)
                        _set_rps(dev, q, value)
                        changes += 1
                else:
                    write_control(str(control_file), value)
                    busy = value
                    changes += 1
                if len(decisions) < DECISIONS_KEPT:
                    decisions.append({"time_us": sample.time_ns / 1e3, "knob": knob, "target": target, "value": value})
            if time.monotonic_ns() - started >= duration_s * 1e9:
                break
        finished = True
    finally:
        # Whatever ended the loop, what it changed goes back; a second
        # Ctrl-C or SIGTERM waits until it has.
        with signals_held(after={signal.SIGTERM: old_term}):
            restored = _put_back(dev, changed, control_file, control_original, busy, tell, finished,
                                 found if saved_before else None)
            restored += _put_back_rps(dev, rps_found, tell, finished)
    fields = policy.fields() if callable(getattr(policy, "fields", None)) else {}
    return {
        "device": dev, "policy": name, "period_us": float(period_us), "calls": calls, "changes": changes,
        "decisions": decisions, "fields": fields, "restored": restored,
        "elapsed_s": (time.monotonic_ns() - started) / 1e9,
        # The controller's own CPU (its samples, the policy, the settings).
        "cpu_s": time.process_time() - cpu_started,
    }


def _rps_text(dev: str, queue: int) -> str:
    """RX queue ``queue``'s RPS mask as its file shows it (to write back);
    ControlError if it cannot be read."""
    from irqlab.linux.host_sample import rps_path

    try:
        with open(rps_path(dev, queue), encoding="ascii") as f:
            return f.read().strip()
    except OSError as e:
        raise ControlError(f"rps_cpus of {dev} rx-{queue} cannot be read ({e.strerror or e})") from None


def _put_back_rps(dev: str, found: dict[int, str], tell: Callable[[str], None],
                  finished: bool) -> list[dict[str, Any]]:
    """Write back each RX queue's RPS mask as the controller found it."""
    restored: list[dict[str, Any]] = []
    how = "" if finished else "the controller stopped early; "
    for q, text in sorted(found.items()):
        try:
            _write_rps(dev, q, text)
        except OSError as e:
            tell(f"error: {how}rps_cpus of {dev} rx-{q} could not be written back to {text} ({e.strerror or e})")
        else:
            restored.append({"knob": _RPS, "queue": q, "to": text})
    if restored:
        masks = ", ".join(f"rx-{r['queue']} {r['to']}" for r in restored)
        tell(f"{how}the RPS masks of {dev} are back ({masks})")
    return restored


def _remember(found: dict[tuple[str, Optional[int]], int], knob: str, target: Optional[int], napi_ids: list[int],
              shown: dict[str, Any]) -> None:
    """Before the controller first sets ``knob`` on a target, the value the
    device held there (``irqlab linux show``'s report), to put back by hand."""
    if knob in _NAPI:
        name = _NAPI[knob]
        for i, n in enumerate(shown["napis"]):
            if target is None or i == target:
                found.setdefault((name, napi_ids[i]), int(n[name]))
    elif knob in _COALESCE and (shown.get("coalesce") or {}).get(knob) is not None:
        found.setdefault((_COALESCE[knob], None), int(shown["coalesce"][knob]))


def _put_back(dev: str, changed: bool, control_file: Optional[str], control_original: Optional[int],
              busy: Optional[int], tell: Callable[[str], None], finished: bool,
              found: Optional[dict[tuple[str, Optional[int]], int]]) -> list[dict[str, Any]]:
    """Put back what the controller changed: the state it saved, or (with
    ``found``, when an earlier apply's state stays) each knob's value as it
    found it."""
    from irqlab.linux import knobs
    from irqlab.linux.exec_cmd import write_control
    from irqlab.linux.words import hand_change_line

    restored: list[dict[str, Any]] = []
    how = "" if finished else "the controller stopped early; "
    if found:
        try:
            for (knob, napi_id), value in found.items():
                knobs.set_knob(dev, knob, value, napi_id)
                restored.append({"knob": knob, "napi_id": napi_id, "to": value})
        except Exception as e:
            tell(f"error: {how}the settings of {dev} could not be put back ({' '.join(str(e).split())}); "
                 f"they were {', '.join(f'{k} {v}' for (k, _), v in found.items())}")
        else:
            tell(f"{how}{dev} is back to the settings it had when the controller started ({len(restored)} put back; "
                 "the state an earlier apply saved stays)")
    elif changed and knobs.has_saved_state(dev):
        try:
            report = knobs.restore(dev)
        except Exception as e:
            tell(f"error: {how}the settings of {dev} could not be put back ({' '.join(str(e).split())}); "
                 f"`irqlab linux restore {dev}` puts back the settings saved before the first change")
        else:
            restored = list(report.get("restored", []))
            for h in report.get("changed_since_apply", []):
                tell(hand_change_line(dev, h))
            tell(f"{how}{dev} is back to its settings from before the controller ({len(restored)} restored)")
    if control_file is not None and control_original is not None and busy != control_original:
        try:
            write_control(control_file, control_original)
        except Exception as e:
            tell(f"error: {how}busy_poll_usecs={control_original} could not be written back to {control_file} ({e})")
        else:
            tell(f"{how}{control_file} is back to busy_poll_usecs={control_original}")
    return restored


def add_control_parser(commands: Any) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "control",
        help="run your own policy (irqlab.policy) against a device for a while, then put every knob back (needs root)",
        description="Call a policy's observe(sample) every period_us with what the kernel exposes about DEV and "
        "apply its knob settings; at the end, on Ctrl-C, SIGTERM or any error, put back every knob it changed.",
        allow_abbrev=False,
    )
    p.add_argument("device", metavar="DEV", help="network device name, e.g. eth0")
    p.add_argument("--policy", metavar="FILE.py:CLASS", required=True, help="the policy: a class in a Python file")
    p.add_argument("--duration", metavar="S", required=True, help=f"seconds to run it (at most {DURATION_S_MAX:g})")
    p.add_argument("--control", metavar="FILE", help="the control file of a program run with irqlab linux exec "
                   "--control FILE, for busy_poll_usecs")
    p.add_argument("--shim-stats", metavar="FILE", help="the stats file of a program run with irqlab linux exec "
                   "--shim-stats FILE (IRQLAB_STATS), for the sample's threads: one entry for the whole program, "
                   "its batches (epoll wait returning events to the thread's next wait), their time and the longest "
                   "since the previous call, rounded up to a power of two; [] while the file is missing")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(handler=_cmd_control)
    return p


def _cmd_control(args: argparse.Namespace) -> int:
    from irqlab.policy import load_policy

    try:
        duration_s = float(args.duration)
    except ValueError:
        raise ControlError(f"--duration must be a number of seconds (got {args.duration!r})") from None
    if not math.isfinite(duration_s):
        raise ControlError(f"--duration must be above 0 and at most {DURATION_S_MAX:g} s (got {args.duration!r})")
    policy = load_policy(args.policy)
    report = control(args.device, policy, duration_s, control_file=args.control, shim_stats=args.shim_stats)
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{report['policy']} on {report['device']}: {report['calls']} calls every {report['period_us']:g} us, "
              f"{report['changes']} settings, {len(report['restored'])} restored at the end")
        for d in report["decisions"][-10:]:
            on = "all" if d["target"] is None else f"#{d['target']}"
            print(f"  {d['time_us'] / 1e3:10.3f} ms  {d['knob']} = {d['value']} on {on}")
    return 0
