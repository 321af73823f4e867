"""``irqlab linux exec``: run an unmodified epoll program under a profile.

    irqlab linux exec --profile P [--napi-dev DEV] [--set epoll.KEY=VALUE]... [--control FILE] [--shim-stats FILE]
                      [--debug] -- CMD [ARG]...

The program runs with the preload shim (``crates/irqlab-preload``) in
``LD_PRELOAD``. The shim gives every epoll instance the program creates the
profile's ``busy_poll_usecs``, ``busy_poll_budget`` and ``prefer_busy_poll``
(``EPIOCSPARAMS``, Linux 6.9+) and, for a non-blocking profile (busy-wait),
makes ``epoll_wait`` spin in the kernel's busy poll instead of sleeping. The
knobs come from the core (the profile resolved on a minimal scenario), never
from a table here, and reach the shim as environment variables:

=========================== ====================================================
``IRQLAB_BUSY_POLL_USECS``  ``epoll.busy_poll_usecs`` (µs)
``IRQLAB_BUSY_POLL_BUDGET`` ``epoll.busy_poll_budget`` (packets)
``IRQLAB_PREFER_BUSY_POLL`` ``epoll.prefer_busy_poll`` (0 or 1)
``IRQLAB_NONBLOCKING``      1 when ``epoll.blocking`` is false (busy-wait)
``IRQLAB_SPIN_ALL``         1 with ``--spin-all``: busy-wait spins in every epoll
                           instance, not only in those watching a socket that
                           arrived through a NAPI (the default)
``IRQLAB_CONTROL``          with ``--control FILE``: the file the shim reads a new
                           ``busy_poll_usecs`` from while the program runs
``IRQLAB_STATS``            with ``--shim-stats FILE``: the file the shim writes the
                           program's batch times to, every 20 ms at most
                           (``irqlab linux control --shim-stats FILE``)
``IRQLAB_PRELOAD_DEBUG``    1 with ``--debug``: one stderr line per epoll instance
=========================== ====================================================

The profiles without busy polling (``no-coalescing``, ``adaptive-coalescing``,
``irq-batching``) resolve to 0 / 0 / 0 and blocking: the shim is still loaded
but makes no ioctl, since a new epoll instance already has exactly those
values; so those profiles run the program exactly as it is, on any kernel.

``--control FILE`` works under every profile, those included: FILE starts as
``busy_poll_usecs=N`` with the profile's N, the shim records every epoll
instance the program creates, and when FILE's value changes it sets it on
all of them with ``EPIOCSPARAMS`` (budget, prefer and busy-wait stay the
profile's; budget 0 means the kernel's ``BUSY_POLL_BUDGET``, ``ep_busy_loop``
in fs/eventpoll.c). FILE takes 0 to 2147483647 (the kernel refuses more).
``irqlab linux tune --knob busy_poll_usecs --control FILE`` writes it and
reads each value back (:mod:`irqlab.linux.control`). An existing FILE that
is not a control file irqlab wrote (nor empty) is refused unless
``--force``; a device, FIFO, socket or directory always is.

A ``busy_poll_budget`` above 64 is refused before the program starts when
irqlab lacks CAP_NET_ADMIN: the program gets irqlab's credentials, and
``EPIOCSPARAMS`` refuses such a budget without it (:func:`check_budget`).

If the kernel refuses the parameters, the shim prints one warning line
(``irqlab-preload: warning: ...``) and acts no more: the program runs
unchanged, or, if it was a value from the control file, with the values set
before it.

With ``--napi-dev DEV`` the per-NAPI and coalescing part of the profile is
applied to DEV first (``irqlab.linux.knobs.apply``) and restored when the
program ends, whatever ends it (``irqlab.linux.knobs.restore``). A knob the
restore finds changed by hand while the program ran is restored all the same
and said on stderr, one line each, as ``irqlab linux restore`` says it
(``irqlab: restore: DEV NAPI 12 napi.gro_flush_timeout was 20000 ns when
applied, is now 5000 ns (changed since apply); restoring 0 ns``). Over an
earlier ``irqlab linux apply DEV`` (whose saved state the apply here keeps),
DEV goes back instead to the values in place when exec started, knob by
knob, and that state stays for ``irqlab linux restore DEV``, as ``linux
tune`` and ``linux control`` leave it (issue 62, item 3).

A program that daemonizes (nginx's default, ``memcached -d``) exits at once
while a process it forked goes on with the shim. irqlab is the subreaper of
the program's processes (``PR_SET_CHILD_SUBREAPER``), so such a process
becomes its child when the program exits; if one is left that has the shim
mapped, irqlab says so (one warning naming the PIDs) and, with
``--napi-dev``, keeps DEV's settings in force until ``irqlab linux restore
DEV`` instead of restoring them under the running server.

The command exits with the program's status (128 + N if signal N killed it;
127 if it cannot be found, 126 if it cannot be run). SIGINT, SIGTERM, SIGHUP
and SIGQUIT sent to irqlab are passed on to the program, except those a
terminal sends to its whole foreground process group (Ctrl-C, Ctrl-\\), which
the program has already received; meanwhile irqlab keeps running, so that it
can restore the device and report the program's status.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from irqlab import _core

#: The shim's file name, as cargo builds it.
SHIM_NAME = "libirqlab_preload.so"

# Where the shim is looked for: copied into the package by `make setup`
# (Makefile target `native`), else the cargo build in the repository.
_PACKAGE = Path(__file__).resolve().parents[1]
_SHIM_PATHS = (
    _PACKAGE / "_native" / SHIM_NAME,
    _PACKAGE.parents[1] / "target" / "release" / SHIM_NAME,
)

# The scenario resolved to read a profile's epoll knobs: every field at its
# default, then the profile, then the --set overrides.
_MINIMAL_SCENARIO = 'name = "exec"\n'

ENV_USECS = "IRQLAB_BUSY_POLL_USECS"
ENV_BUDGET = "IRQLAB_BUSY_POLL_BUDGET"
ENV_PREFER = "IRQLAB_PREFER_BUSY_POLL"
ENV_NONBLOCKING = "IRQLAB_NONBLOCKING"
ENV_DEBUG = "IRQLAB_PRELOAD_DEBUG"
ENV_CONTROL = "IRQLAB_CONTROL"
ENV_STATS = "IRQLAB_STATS"
#: The largest ``busy_poll_usecs`` the kernel takes (the knob table,
#: ``crates/irqlab-knobs``: ``ep_eventpoll_bp_ioctl`` refuses more than
#: ``S32_MAX`` with EINVAL).
CONTROL_MAX = next(k for k in _core.knobs() if k["path"] == "epoll.busy_poll_usecs")["kernel_range"][1]

#: Signals passed on to the program.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

# si_code of a signal the kernel itself sent (include/uapi/asm-generic/siginfo.h);
# a terminal's Ctrl-C / Ctrl-\ reaches the foreground process group this way.
_SI_KERNEL = 0x80

# prctl option (include/uapi/linux/prctl.h).
_PR_SET_CHILD_SUBREAPER = 36

# How often the wait loop looks at the program even without a SIGCHLD (s).
_POLL_S = 0.5


@dataclass(frozen=True)
class EpollKnobs:
    """A profile's epoll knobs, in the kernel's units (``struct epoll_params``)."""

    busy_poll_usecs: int
    busy_poll_budget: int
    prefer_busy_poll: bool
    blocking: bool

    def env(self) -> dict[str, str]:
        """The shim's environment variables for these knobs."""
        return {
            ENV_USECS: str(self.busy_poll_usecs),
            ENV_BUDGET: str(self.busy_poll_budget),
            ENV_PREFER: str(int(self.prefer_busy_poll)),
            ENV_NONBLOCKING: str(int(not self.blocking)),
        }


def epoll_knobs(profile: str, overrides: Sequence[str] = ()) -> EpollKnobs:
    """The epoll knobs of ``profile`` (plus ``epoll.*`` overrides), from the core.

    Raises :class:`irqlab.ScenarioError` for an unknown profile or a bad override.
    """
    epoll = json.loads(_core.resolve(_MINIMAL_SCENARIO, profile, list(overrides)))["epoll"]
    return EpollKnobs(
        busy_poll_usecs=int(epoll["busy_poll_usecs"]),
        busy_poll_budget=int(epoll["busy_poll_budget"]),
        prefer_busy_poll=bool(epoll["prefer_busy_poll"]),
        blocking=bool(epoll["blocking"]),
    )


#: The largest ``busy_poll_budget`` EPIOCSPARAMS takes without CAP_NET_ADMIN:
#: ``ep_eventpoll_bp_ioctl`` (fs/eventpoll.c) refuses more than
#: ``NAPI_POLL_WEIGHT`` with EPERM unless ``capable(CAP_NET_ADMIN)``.
BUDGET_MAX_UNPRIVILEGED = 64


def check_budget(knobs: EpollKnobs) -> None:
    """Refuse, before the program starts, a ``busy_poll_budget`` the kernel
    would refuse it (issue 62, item 8: every epoll instance stayed at 0/0/0).

    The program is started with irqlab's own credentials, so it can have
    CAP_NET_ADMIN only if irqlab has it (a set-user-ID or file-capability
    program aside); with it, a program that drops it before it creates its
    epoll instances (``memcached -u``, ``setpriv``) is refused by the kernel
    and the shim says so in a warning line."""
    from irqlab.cli_common import UsageError
    from irqlab.linux.knobs import may_change_settings

    if knobs.busy_poll_budget > BUDGET_MAX_UNPRIVILEGED and not may_change_settings():
        raise UsageError(
            f"epoll.busy_poll_budget must be from 0 to {BUDGET_MAX_UNPRIVILEGED} (NAPI_POLL_WEIGHT) for a program "
            f"without CAP_NET_ADMIN, which this one, started as this user, would not have (got "
            f"{knobs.busy_poll_budget}); set a smaller one with --set epoll.busy_poll_budget=N, or run irqlab as root")


def write_control(path: str, usecs: int) -> Path:
    """Write the shim's control file (``busy_poll_usecs=N``) whole, by a
    rename, so that the shim never reads half of it; its absolute path."""
    from irqlab.cli_common import UsageError

    from irqlab.files import check_output_file, write_text_whole

    target = Path(path).absolute()
    if not 0 <= int(usecs) <= CONTROL_MAX:
        raise UsageError(f"busy_poll_usecs for --control must be a whole number from 0 to {CONTROL_MAX} "
                         f"(EPIOCSPARAMS refuses more; got {usecs})")
    if len(str(target).encode()) >= 256:
        raise UsageError(f"--control must be a path of fewer than 256 bytes (got {path!r})")
    # A device, FIFO or directory is refused, never replaced; a symbolic
    # link is written through (the shim reads the same file through it).
    check_output_file(path, "--control", UsageError)
    write_text_whole(target, f"busy_poll_usecs={int(usecs)}\n")
    return target


def is_control_text(data: bytes) -> bool:
    """Whether ``data`` is what :func:`write_control` writes: one line
    ``busy_poll_usecs=N``, N a whole number (an empty file counts: nothing
    is lost by writing over it, ``mktemp``'s file is one)."""
    if not data:
        return True
    text = data.decode("ascii", errors="replace")
    key, _, value = text.removesuffix("\n").partition("=")
    return key == "busy_poll_usecs" and value.isascii() and value.isdigit() and "\n" not in value


def check_control_target(path: str, force: bool = False, inputs: Sequence[tuple[str, str]] = ()) -> None:
    """Check ``--control FILE`` before anything runs: a path
    :func:`write_control` may write (never a device, FIFO, socket or
    directory, nor one of ``inputs``), and, unless ``force``, no existing file but a control file
    irqlab wrote (issue 62, item 13: a scenario became a control file)."""
    from irqlab.cli_common import UsageError
    from irqlab.files import check_output_file, write_target

    check_output_file(path, "--control", UsageError, inputs=inputs)
    if force:
        return
    target = write_target(path)
    try:
        with open(target, "rb") as f:
            head = f.read(4097)
    except FileNotFoundError:
        return
    except OSError as e:
        raise UsageError(f"--control {path} cannot be read ({e.strerror or e}); give a new file or a control file "
                         "irqlab wrote") from None
    if len(head) > 4096 or not is_control_text(head):
        raise UsageError(f"--control {path} is an existing file that is not a control file irqlab wrote (one line "
                         "busy_poll_usecs=N); give a new file, or add --force to replace it")


def read_control(path: str) -> int:
    """The ``busy_poll_usecs`` a control file holds; ValueError if none."""
    text = Path(path).read_text()
    key, _, value = text.strip().partition("=")
    if key != "busy_poll_usecs" or not value.isdigit():
        raise ValueError(f"{path} holds no busy_poll_usecs=N line")
    return int(value)


def stats_path(path: str) -> str:
    """The ``IRQLAB_STATS`` value for ``--shim-stats``: the file a write to
    ``path`` lands on (links resolved: the shim refuses a symbolic link,
    since its rename would replace the link), absolute, checked as any
    output file (a regular file or nothing yet, in a directory that exists)."""
    from irqlab.cli_common import UsageError
    from irqlab.files import check_output_file, write_target

    check_output_file(path, "--shim-stats", UsageError)
    target = str(write_target(path))
    if len(target.encode()) >= 256:
        raise UsageError(f"--shim-stats must be a path of fewer than 256 bytes (got {target!r})")
    return target


def find_shim() -> Optional[Path]:
    """The preload shim to use, or None when it has not been built."""
    for path in _SHIM_PATHS:
        if path.is_file():
            return path
    return None


def program_env(base: Mapping[str, str], knobs: EpollKnobs, shim: Path, debug: bool = False) -> dict[str, str]:
    """``base`` plus the shim in front of ``LD_PRELOAD`` and the knobs' variables."""
    env = dict(base)
    preload = env.get("LD_PRELOAD", "").strip()
    env["LD_PRELOAD"] = f"{shim}:{preload}" if preload else str(shim)
    env.update(knobs.env())
    if debug:
        env[ENV_DEBUG] = "1"
    else:
        env.pop(ENV_DEBUG, None)
    return env


def add_exec_parser(linux_subparsers: Any) -> argparse.ArgumentParser:
    """Register ``exec`` under ``irqlab linux``; return its parser.

    ``linux_subparsers`` is what ``add_subparsers()`` returned for the
    ``linux`` command; the handler is set as ``handler`` (``args -> int``).
    """
    from irqlab.profiles import PROFILES

    p = linux_subparsers.add_parser(
        "exec",
        help="run an unmodified epoll program under a profile (preload shim)",
        description=(
            "Run CMD with the irqlab preload shim, which gives each epoll instance CMD creates the "
            "profile's busy-poll parameters (EPIOCSPARAMS) and, under busy-wait, keeps epoll_wait "
            "from sleeping. Exits with CMD's status."
        ),
        allow_abbrev=False,
    )
    p.add_argument("--profile", metavar="P", required=True, help=f"profile: {', '.join(PROFILES)}")
    p.add_argument(
        "--napi-dev",
        metavar="DEV",
        help="also apply the profile's per-NAPI and coalescing knobs to network device DEV, "
        "restored when CMD ends (needs root)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override an epoll knob of the profile, e.g. --set epoll.busy_poll_budget=16 (repeatable)",
    )
    p.add_argument(
        "--control",
        metavar="FILE",
        help="write busy_poll_usecs=N (the profile's) to FILE and let the shim set a new N from it on every epoll "
        "instance CMD creates while it runs, under any profile "
        "(irqlab linux tune --knob busy_poll_usecs --control FILE)",
    )
    p.add_argument(
        "--shim-stats",
        metavar="FILE",
        help="let the shim write CMD's batch times (an epoll wait returning events to the thread's next wait: "
        "count, sum and a log2 histogram) to FILE every 20 ms at most, for irqlab linux control --shim-stats FILE; "
        "one process's (a server of several processes overwrites FILE in turn)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="let --control replace an existing regular file that is not a control file irqlab wrote",
    )
    p.add_argument("--debug", action="store_true", help="the shim reports each epoll instance it configures")
    p.add_argument(
        "--spin-all",
        action="store_true",
        help="busy-wait: spin in every epoll instance (default: only in those watching a socket with a NAPI id, "
        "so that a program's other event loops, e.g. memcached's dispatcher, keep sleeping)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARG]...", help="the program to run")
    p.set_defaults(handler=cmd_exec)
    return p


def cmd_exec(args: argparse.Namespace) -> int:
    """The ``irqlab linux exec`` handler."""
    from irqlab.cli_common import UsageError

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("a command to run is required after --, e.g. irqlab linux exec --profile P -- memcached")
    if not command[0] or "\0" in command[0]:
        # posix_spawnp refuses an empty program name with a ValueError (issue 62, item 11).
        raise UsageError(f"the command after -- must name a program, e.g. memcached (got {command[0]!r})")
    for override in args.overrides:
        if not override.startswith("epoll."):
            raise UsageError(f"--set only takes epoll.* knobs here (got {override!r})")
    if args.control is not None:
        # The shim would replace one with the other (issue 62, item 9).
        shared = [("--shim-stats", args.shim_stats)] if args.shim_stats is not None else []
        check_control_target(args.control, force=args.force, inputs=shared)
    stats_file = None if args.shim_stats is None else stats_path(args.shim_stats)
    knobs = epoll_knobs(args.profile, args.overrides)
    check_budget(knobs)
    shim = find_shim()
    if shim is None:
        raise UsageError(
            f"the preload shim {SHIM_NAME} is not built (looked in {', '.join(map(str, _SHIM_PATHS))}); run make setup"
        )
    if any(c in str(shim) for c in ": "):
        raise UsageError(f"the preload shim's path cannot go in LD_PRELOAD (it holds a space or colon): {shim}")
    env = program_env(os.environ, knobs, shim, debug=args.debug)
    if args.spin_all:
        env["IRQLAB_SPIN_ALL"] = "1"
    if stats_file is not None:
        env[ENV_STATS] = stats_file
    if args.napi_dev is not None:
        knobs_module = _napi_knobs()
        if not knobs_module.may_change_settings():
            # Refused here, naming this command: the native apply's own refusal
            # names `irqlab linux apply`, which is not what the user ran.
            raise UsageError(
                f"irqlab linux exec --napi-dev needs root (CAP_NET_ADMIN) to change the NAPI and coalescing settings "
                f"of {args.napi_dev}; run it as root, or without --napi-dev"
            )
    # The control file last of the checks (it is checked before it is written):
    # a refusal above leaves no file behind.
    if args.control is not None:
        env[ENV_CONTROL] = str(write_control(args.control, knobs.busy_poll_usecs))

    _become_subreaper()
    if args.napi_dev is None:
        status = run_program(command, env)
        _warn_lingering(command, None)
        return status

    with _signals_held():
        applied = knobs_module.apply(args.napi_dev, args.profile)
        lingering: list[int] = []
        ended = False
        try:
            status = run_program(command, env)
            lingering = _warn_lingering(command, args.napi_dev)
            ended = True
            return status
        finally:
            if not lingering:
                if applied.get("state_kept"):
                    # An earlier apply's state stays for `irqlab linux
                    # restore`: put back the values found at the start
                    # instead, as `linux tune` and `linux control` do
                    # (issue 62, item 3).
                    _put_back_found(knobs_module, args.napi_dev, applied, said=not ended)
                else:
                    _restore_device(knobs_module, args.napi_dev, said=not ended)


def _restore_device(knobs_module: Any, dev: str, said: bool) -> None:
    """Put DEV's settings back after the program; ``said``: the program did
    not end normally (an error in irqlab), so say on stderr what became of
    DEV. A restore that fails says how to finish it by hand, and raises."""
    from irqlab.linux.words import hand_change_line

    try:
        report = knobs_module.restore(dev)
    except _core.LinuxError as e:
        raise _core.LinuxError(
            f"{dev}'s settings could not be put back ({' '.join(str(e).split())}); `irqlab linux restore {dev}` "
            "puts back the settings saved before the profile was applied"
        ) from None
    # A knob changed by hand while the program ran (ethtool -C, another
    # tool's napi-set) is undone by the restore; say so, as `irqlab linux
    # restore` does, or the change would vanish unseen.
    for h in report.get("changed_since_apply", []):
        print(f"irqlab: {hand_change_line(dev, h)}", file=sys.stderr)
    if said:
        print(f"irqlab: {dev} is back to its settings from before the profile was applied", file=sys.stderr)


def _put_back_found(knobs_module: Any, dev: str, applied: dict[str, Any], said: bool) -> None:
    """Put DEV's knobs back to the values the apply at the start found
    (its report's ``changed``: each knob's ``from``), one by one, keeping
    the state an earlier apply saved. A knob found changed by hand since
    (not at the profile's value) is put back all the same and said, as
    :func:`_restore_device` says it. A failure says what the values were
    and raises."""
    from irqlab.linux.words import hand_change_line

    changed = list(applied.get("changed", []))
    done: list[str] = []
    try:
        now = _current_values(knobs_module.show(dev)) if changed else {}
        for c in changed:
            key = (c["part"], c.get("napi_id"), c["knob"])
            if key in now and now[key] != c["to"]:
                h = {**c, "applied": c["to"], "now": now[key], "restoring": c["from"]}
                print(f"irqlab: {hand_change_line(dev, h)}", file=sys.stderr)
            knobs_module.set_knob(dev, c["knob"], int(c["from"]), c.get("napi_id"))
            done.append(c["knob"])
    except (_core.LinuxError, ValueError) as e:
        found = ", ".join(f"{_where(c)} {c['knob']} {c['from']}" for c in changed)
        raise _core.LinuxError(
            f"{dev}'s settings could not be put back to those in place when irqlab linux exec started "
            f"({' '.join(str(e).split())}); they were: {found}; the state an earlier apply saved stays for "
            f"`irqlab linux restore {dev}`"
        ) from None
    if said:
        print(f"irqlab: {dev} is back to the settings it had when irqlab linux exec started ({len(done)} put back; "
              "the state an earlier apply saved stays)", file=sys.stderr)


def _where(change: dict[str, Any]) -> str:
    return f"NAPI {change['napi_id']}" if change.get("napi_id") is not None else "coalescing"


def _current_values(shown: dict[str, Any]) -> dict[tuple[str, Optional[int], str], Any]:
    """Every knob of ``irqlab linux show``'s report, keyed as a change is:
    (part, NAPI id or None, knob)."""
    values: dict[tuple[str, Optional[int], str], Any] = {}
    for napi in shown.get("napis", []):
        for knob, value in napi.items():
            values[("napi", napi.get("id"), knob)] = value
    for knob, value in (shown.get("coalesce") or {}).items():
        values[("coalesce", None, knob)] = value
    return values


def _become_subreaper() -> None:
    """Make irqlab the subreaper of the program's processes
    (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4+): a process the program
    forks and leaves behind (a daemon) becomes irqlab's child, where
    :func:`lingering` finds it. Without it (another OS), nothing is found."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def lingering() -> list[int]:
    """irqlab's children still running with the shim (mapped, or in their
    ``LD_PRELOAD``): what a daemonizing program left (reparented here,
    :func:`_become_subreaper`)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").glob("*"):
        try:
            pids.update(int(p) for p in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return [pid for pid in sorted(pids) if _has_shim(pid)]


def _has_shim(pid: int, attempts: int = 20, pause_s: float = 0.005) -> bool:
    """Whether process ``pid`` has the shim mapped, or is about to.

    Right after an execve the dynamic loader has not yet mapped what
    LD_PRELOAD names, but the new environment is in place. Inside the execve
    itself there is a moment when neither shows: the new memory map has
    replaced the old one (``exec_mmap``) but its environment is not yet set
    (``create_elf_tables``), so ``/proc/PID/environ`` reads empty. A process
    seen so is looked at again, a bounded number of times (0.1 s at most)."""
    for _ in range(attempts):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return False
            maps = Path(f"/proc/{pid}/maps").read_text()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except (OSError, IndexError):
            return False
        preload = [v for v in environ.split(b"\0") if v.startswith(b"LD_PRELOAD=") and SHIM_NAME.encode() in v]
        if SHIM_NAME in maps or preload:
            return True
        if environ:
            return False
        time.sleep(pause_s)
    return False


def _warn_lingering(command: Sequence[str], napi_dev: Optional[str]) -> list[int]:
    """Warn if the program left processes running with the shim; return
    their PIDs."""
    pids = lingering()
    if pids:
        keep = (
            f"; {napi_dev} keeps the profile's settings until `irqlab linux restore {napi_dev}`"
            if napi_dev is not None
            else ""
        )
        listed = ", ".join(map(str, pids))
        print(
            f"irqlab: warning: {command[0]} exited but left {len(pids)} process{'es' if len(pids) > 1 else ''} "
            f"running with the shim (PID {listed}), as a daemon does{keep}",
            file=sys.stderr,
        )
    return pids


def _napi_knobs() -> Any:
    """``irqlab.linux.knobs`` with its ``apply``/``restore``, or a clear error."""
    from irqlab.cli_common import UsageError

    try:
        from irqlab.linux import knobs
    except ImportError as e:
        raise UsageError(f"--napi-dev is not available: irqlab.linux.knobs cannot be imported ({e})") from None
    if not (callable(getattr(knobs, "apply", None)) and callable(getattr(knobs, "restore", None))):
        raise UsageError("--napi-dev is not available: irqlab.linux.knobs has no apply/restore yet")
    return knobs


# The signal mask irqlab had before the outermost _signals_held (the mask
# the program is started with), or None outside one.
_caller_mask: Optional[set[signal.Signals]] = None


@contextmanager
def _signals_held() -> Iterator[set[signal.Signals]]:
    """Hold the forwarded signals (and SIGCHLD) blocked, so that
    :func:`run_program` collects them with ``sigtimedwait``; yield the mask
    irqlab had before the outermost hold.

    While a device is being changed and the program runs, a Ctrl-C must not
    kill irqlab before it restores the device: the signal stays pending until
    :func:`run_program` picks it up or, if it came before the program
    started, keeps the program from starting.
    """
    global _caller_mask
    old = signal.pthread_sigmask(signal.SIG_BLOCK, (*FORWARDED, signal.SIGCHLD))
    outermost = _caller_mask is None
    if outermost:
        _caller_mask = old
    try:
        yield _caller_mask if _caller_mask is not None else old
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if outermost:
            _caller_mask = None


def run_program(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run ``argv`` with ``env``; pass signals on; return its exit status
    (128 + N if signal N killed it, 127 / 126 if it cannot be found / run)."""
    with _signals_held() as caller_mask:
        early = _pending_forwarded()
        if early is not None:
            # A signal came while the device was being set up: do not start.
            return 128 + early
        try:
            pid = os.posix_spawnp(
                argv[0],
                list(argv),
                dict(env),
                setsigmask=caller_mask,  # the program gets the mask irqlab was started with
                setsigdef=_python_ignored(),
            )
        except OSError as e:
            _error(f"cannot run {argv[0]!r}: {e.strerror or e}")
            return 127 if isinstance(e, FileNotFoundError) else 126
        try:
            return _wait(pid)
        except BaseException:
            # A bug here must not leave the program running unattended.
            _kill_and_reap(pid)
            raise


def _wait(pid: int) -> int:
    watched = (*FORWARDED, signal.SIGCHLD)
    while True:
        info = signal.sigtimedwait(watched, _POLL_S)
        if info is not None and info.si_signo != signal.SIGCHLD:
            # A terminal's signal went to the whole foreground group, the
            # program included: sending it again would deliver it twice.
            if info.si_code != _SI_KERNEL:
                _send(pid, info.si_signo)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            code = os.waitstatus_to_exitcode(status)
            return 128 - code if code < 0 else code


def _pending_forwarded() -> Optional[int]:
    pending = signal.sigpending() & set(FORWARDED)
    if not pending:
        return None
    info = signal.sigtimedwait(pending, 0)
    return None if info is None else info.si_signo


def _python_ignored() -> tuple[signal.Signals, ...]:
    # Python ignores SIGPIPE and SIGXFSZ for itself; the program gets the
    # default back, as subprocess's restore_signals does.
    return tuple(s for s in (signal.SIGPIPE, signal.SIGXFSZ) if signal.getsignal(s) == signal.SIG_IGN)


def _send(pid: int, signo: int) -> None:
    try:
        os.kill(pid, signo)
    except ProcessLookupError:
        pass


def _kill_and_reap(pid: int) -> None:
    _send(pid, signal.SIGKILL)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _error(message: str) -> None:
    print(f"irqlab: error: {' '.join(message.split())}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m irqlab.linux.exec_cmd ARGS`` = ``irqlab linux exec ARGS``,
    for use before the command is registered under ``irqlab linux``."""
    from irqlab.cli_common import EXIT_USAGE, UsageError
    from irqlab.cli_common import Parser as _Parser

    parser = _Parser(prog="irqlab linux", allow_abbrev=False)
    add_exec_parser(parser.add_subparsers(dest="command_name", required=True))
    try:
        args = parser.parse_args(["exec", *(sys.argv[1:] if argv is None else argv)])
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except (UsageError, _core.ScenarioError) as e:
        _error(str(e))
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
