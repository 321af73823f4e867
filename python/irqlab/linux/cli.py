"""``irqlab linux``: the real-kernel commands.

    irqlab linux show DEV [--json]
    irqlab linux apply DEV --profile P [--napi ID] [--dry-run] [--json]
    irqlab linux restore DEV [--forget] [--json]
    irqlab linux control DEV --policy FILE.py:CLASS --duration S [--control FILE] [--json]

``show`` lists every NAPI of DEV (id, irq, queues, pid, defer_hard_irqs,
gro_flush_timeout, irq_suspend_timeout, threaded) and its coalescing.
``apply`` sets a profile's per-NAPI and coalescing knobs on DEV (every NAPI,
or the one ``--napi`` names), saving the previous settings first; what the
device cannot do is skipped and said so; ``--dry-run`` prints the changes and
touches nothing. ``restore`` puts back the settings DEV had before the first
apply, on the NAPI now serving each saved NAPI's queues if the device was
reconfigured since (new NAPI ids); settings that have nowhere to go are a
refusal, and their saved state is kept. A knob found at another value than
irqlab last left it at (changed by hand since apply) is restored all the
same, since restore means "as before irqlab", and each one is said in a line
of its own (``restore: DEV NAPI 12 napi.gro_flush_timeout was 20000 ns when
applied, is now 5000 ns (changed since apply); restoring 0 ns``); a state
saved by an irqlab that did not record what it set restores without that
check. Changing anything needs root.

A saved state is for one device in one network namespace: the namespace by
its cookie (never given to another namespace, as its inode number is once it
is deleted) and the device by its name, index and hardware address. A state
file under DEV's name that is not its own, or an older irqlab's whose
namespace cannot be told, is refused by ``apply`` and ``restore`` in one
sentence, never applied; ``restore --forget`` deletes DEV's saved state
without restoring anything, leaving DEV as it is.

The text output names each knob as ``irqlab profiles`` does (the scenario
field a profile sets it through: ``napi.napi_defer_hard_irqs``,
``coalesce.rx-frames``), with booleans as ``true``/``false``; ``--json``
keeps the kernel's and ethtool's names (``defer_hard_irqs``, ``rx-frames``).

A refusal (not root, unknown device, device without NAPI, kernel without the
feature, the kernel's own refusal) prints ``irqlab: error: <sentence>`` and
exits with status 2, like every user error of ``irqlab``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from typing import Any, Callable, Optional

from irqlab.linux import knobs
from irqlab.linux.knobs import LinuxError
from irqlab.linux.words import hand_change_line, knob_name
from irqlab.linux.words import napi_id as _napi_id
from irqlab.linux.words import target as _target
from irqlab.linux.words import value_text as _value

EXIT_OK = 0
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]


def add_linux_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``irqlab linux`` (show, apply, restore, and exec when its
    module is there) on the top-level ``subparsers``; return its parser."""
    from irqlab.profiles import PROFILES

    linux = subparsers.add_parser(
        "linux",
        help="read and set a real device's per-NAPI and coalescing knobs (Linux 6.13+)",
        description="Read and set the per-NAPI and coalescing knobs of a real network device (Linux 6.13+).",
        allow_abbrev=False,
    )
    commands = linux.add_subparsers(dest="linux_command", metavar="COMMAND", required=True)

    p = commands.add_parser(
        "show",
        help="every NAPI of a device and its coalescing",
        description="Show every NAPI of DEV (id, irq, queues, pid, defer_hard_irqs, gro_flush_timeout, "
        "irq_suspend_timeout, threaded) and its coalescing.",
        allow_abbrev=False,
    )
    _add_device(p)
    _add_json(p, "print the device as one JSON object")
    p.set_defaults(handler=_linux_errors(_cmd_show))

    p = commands.add_parser(
        "apply",
        help="apply a profile's per-NAPI and coalescing knobs to a device (needs root)",
        description="Set the per-NAPI and coalescing knobs of profile P on DEV, saving the previous "
        "settings first (irqlab linux restore DEV puts them back).",
        allow_abbrev=False,
    )
    _add_device(p)
    p.add_argument("--profile", metavar="P", required=True, help=f"profile: {', '.join(PROFILES)}")
    p.add_argument("--napi", metavar="ID", help="change only this NAPI's knobs (default: every NAPI of DEV)")
    p.add_argument("--dry-run", action="store_true", help="print the changes and touch nothing")
    _add_json(p, "print the report as one JSON object")
    p.set_defaults(handler=_linux_errors(_cmd_apply))

    p = commands.add_parser(
        "restore",
        help="put back a device's settings from before the first apply (needs root)",
        description="Put back the per-NAPI and coalescing settings DEV had before the first "
        "irqlab linux apply, and forget them.",
        allow_abbrev=False,
    )
    _add_device(p)
    p.add_argument("--forget", action="store_true",
                   help="delete DEV's saved state without restoring anything (DEV stays as it is)")
    _add_json(p, "print the report as one JSON object")
    p.set_defaults(handler=_linux_errors(_cmd_restore))

    p = commands.add_parser(
        "doctor",
        help="what this host and device can do about interrupts and busy polling, and what each profile will do",
        description="Report the kernel's features (each probed by trying it), the sysctls that bound busy polling, "
        "and for DEV its NAPIs, IRQs and their CPU affinity, the coalescing parameters its driver accepts, its "
        "threaded mode and RPS/XPS masks; then which profiles will work, partly work or do nothing, and why. "
        "Changes nothing.",
        allow_abbrev=False,
    )
    p.add_argument("device", metavar="DEV", nargs="?", help="network device name, e.g. eth0 (default: the host only)")
    _add_json(p, "print the report as one JSON object")
    p.set_defaults(handler=_linux_errors(_cmd_doctor))

    from irqlab.linux.tune_cmd import add_tune_parser

    tune_parser = add_tune_parser(commands)
    tune_parser.set_defaults(handler=_linux_errors(tune_parser.get_default("handler")))

    from irqlab.linux.control_cmd import add_control_parser

    control_parser = add_control_parser(commands)
    control_parser.set_defaults(handler=_linux_errors(control_parser.get_default("handler")))

    try:
        from irqlab.linux.exec_cmd import add_exec_parser
    except ModuleNotFoundError as e:
        if e.name != "irqlab.linux.exec_cmd":
            raise
    else:
        exec_parser = add_exec_parser(commands)
        handler = exec_parser.get_default("handler") if exec_parser is not None else None
        if handler is not None:
            exec_parser.set_defaults(handler=_linux_errors(handler))
    return linux


# -- commands ---------------------------------------------------------------


def _cmd_show(args: argparse.Namespace) -> int:
    report = knobs.show(args.device)
    print(json.dumps(report) if args.json else show_text(report))
    return EXIT_OK


def _cmd_doctor(args: argparse.Namespace) -> int:
    from irqlab.linux.doctor import doctor, doctor_text

    report = doctor(args.device)
    print(json.dumps(report) if args.json else doctor_text(report))
    return 0


def _cmd_apply(args: argparse.Namespace) -> int:
    report = knobs.apply(args.device, args.profile, napi=_napi_id(args.napi), dry_run=args.dry_run)
    print(json.dumps(report) if args.json else apply_text(report))
    return EXIT_OK


def _cmd_restore(args: argparse.Namespace) -> int:
    if args.forget:
        report = knobs.forget(args.device)
        print(json.dumps(report) if args.json else forget_text(report))
        return EXIT_OK
    report = knobs.restore(args.device)
    print(json.dumps(report) if args.json else restore_text(report))
    return EXIT_OK


def _linux_errors(handler: Handler) -> Handler:
    """Report a refusal from the kernel side as a user error (exit status 2)."""

    @functools.wraps(handler)
    def wrapped(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except LinuxError as e:
            print(f"irqlab: error: {' '.join(str(e).split())}", file=sys.stderr)
            return EXIT_USAGE

    return wrapped


# -- flags ------------------------------------------------------------------


def _add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument("device", metavar="DEV", help="network device name, e.g. eth0")


def _add_json(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--json", action="store_true", help=text)


# -- text output ------------------------------------------------------------


def show_text(report: dict[str, Any]) -> str:
    """``irqlab linux show`` as a table: one row per NAPI, then coalescing."""
    lines = [f"{report['device']} (ifindex {report['ifindex']})"]
    napis = report["napis"]
    if not napis:
        lines.append("NAPI: none (this device has no NAPI instance; a veth has one only while GRO is on)")
    else:
        header = ["NAPI", "irq", "queues", "pid", "defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout", "threaded"]
        rows = [
            [
                str(n["id"]),
                _dash(n["irq"]),
                _queues(n["queues"]) or "-",
                _dash(n["pid"]),
                _dash(n["defer_hard_irqs"]),
                _dash(n["gro_flush_timeout"]),
                _dash(n["irq_suspend_timeout"]),
                _dash(n["threaded"]),
            ]
            for n in napis
        ]
        lines.extend(_table(header, rows))
        lines.append("(gro_flush_timeout and irq_suspend_timeout in ns; - : not reported by this kernel or device)")
    unlinked = _queues(report["unlinked_queues"])
    if unlinked:
        lines.append(f"queues the driver links to no NAPI: {unlinked}")
    lines.append(_coalesce_line(report["coalesce"]))
    return "\n".join(lines)


def apply_text(report: dict[str, Any]) -> str:
    """``irqlab linux apply`` as text: the changes, then what was skipped, then where the old state is."""
    where = f"{report['device']} (ifindex {report['ifindex']})"
    scope = f", NAPI {report['napi']} only" if report["napi"] is not None else ""
    changed = report["changed"]
    if report["dry_run"]:
        head = f"profile {report['profile']} on {where}{scope} would change:" if changed else (
            f"profile {report['profile']} on {where}{scope} would change nothing."
        )
    else:
        head = f"profile {report['profile']} applied to {where}{scope}:" if changed else (
            f"profile {report['profile']} on {where}{scope}: every knob was already set."
        )
    lines = [head]
    lines.extend(_change_lines(changed))
    if report["unchanged"]:
        lines.append(f"already set: {_knob_list(report['unchanged'])}")
    lines.extend(_skip_lines(report["skipped"]))
    lines.extend(f"warning: {w}" for w in report["warnings"])
    if report["dry_run"]:
        lines.append("nothing was changed (--dry-run).")
    elif report["state_kept"]:
        lines.append(
            f"the settings from before an earlier apply stay saved in {report['state_file']}; "
            f"irqlab linux restore {report['device']} puts those back."
        )
    else:
        lines.append(
            f"the previous settings are saved in {report['state_file']}; "
            f"irqlab linux restore {report['device']} puts them back."
        )
    return "\n".join(lines)


def restore_text(report: dict[str, Any]) -> str:
    """``irqlab linux restore`` as text."""
    where = f"{report['device']} (ifindex {report['ifindex']})"
    restored = report["restored"]
    if restored:
        lines = [f"{where} restored to its settings from before profile {report['profile']} was first applied:"]
        lines.extend(_change_lines(restored))
    else:
        lines = [f"{where} already had its settings from before profile {report['profile']} was first applied."]
    # Saved NAPIs that are gone (the device was reconfigured): where their settings went.
    for r in report.get("replaced", []):
        lines.append(f"NAPI {r['saved_napi_id']} is gone; its settings went to NAPI {r['napi_id']}, since {r['because']}.")
    lines.extend(hand_change_line(report["device"], h) for h in report.get("changed_since_apply", []))
    lines.extend(_skip_lines(report["skipped"]))
    lines.extend(f"warning: {w}" for w in report["warnings"])
    lines.append(f"removed {report['state_file']}.")
    return "\n".join(lines)


def forget_text(report: dict[str, Any]) -> str:
    """``irqlab linux restore --forget`` as text: one line per deleted file."""
    import datetime

    lines = []
    for f in report["forgotten"]:
        if f["profile"] is None:
            what = "an unreadable saved state"
        else:
            when = datetime.datetime.fromtimestamp(f["saved_at"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            what = f"the state saved by profile {f['profile']} at {when}"
        lines.append(f"forgot {what}: removed {f['state_file']}; {report['device']} keeps its settings as they are.")
    return "\n".join(lines)


def _change_lines(changes: list[dict[str, Any]]) -> list[str]:
    rows = [[_target(c), knob_name(c["knob"]), _value(c["knob"], c["from"]), "->", _value(c["knob"], c["to"])]
            for c in changes]
    return ["  " + line for line in _table(None, rows)]


def _skip_lines(skipped: list[dict[str, Any]]) -> list[str]:
    # One line per target and reason, knobs named as `irqlab profiles` lists them:
    # "skipped: coalescing: coalesce.adaptive-rx true, coalesce.rx-usecs 8: not supported by this device".
    groups: dict[tuple[str, str], list[str]] = {}
    for s in skipped:
        groups.setdefault((_target(s), s["reason"]), []).append(f"{knob_name(s['knob'])} {_value(s['knob'], s['to'])}")
    return [f"skipped: {target}: {', '.join(knobs_)}: {reason}" for (target, reason), knobs_ in groups.items()]


def _knob_list(changes: list[dict[str, Any]]) -> str:
    groups: dict[str, list[str]] = {}
    for c in changes:
        groups.setdefault(_target(c), []).append(f"{knob_name(c['knob'])} {_value(c['knob'], c['to'])}")
    return "; ".join(f"{target}: {', '.join(items)}" for target, items in groups.items())


def _coalesce_line(coalesce: Optional[dict[str, Any]]) -> str:
    if coalesce is None:
        return "coalescing: not supported by this device"
    if not coalesce:
        return "coalescing: the device reports no parameter irqlab knows"
    # ethtool's names and on/off, as `ethtool -c` shows them: this is the device's view, not a profile's.
    items = [f"{k} {('on' if v else 'off') if isinstance(v, bool) else _value(k, v)}" for k, v in coalesce.items()]
    return f"coalescing: {', '.join(items)}"


def _queues(queues: dict[str, list[int]]) -> str:
    parts = [f"{kind} {','.join(map(str, ids))}" for kind in ("rx", "tx") if (ids := queues.get(kind))]
    return " ".join(parts)


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


def _table(header: Optional[list[str]], rows: list[list[str]]) -> list[str]:
    all_rows = ([header] if header else []) + rows
    if not all_rows:
        return []
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(all_rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in all_rows]
