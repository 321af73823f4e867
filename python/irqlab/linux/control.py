"""Who uses a control file, and what the kernel holds for their epoll instances.

``irqlab linux exec --control FILE`` starts a program with the preload shim
and ``IRQLAB_CONTROL=FILE`` in its environment; the shim sets the
``busy_poll_usecs`` it reads from FILE on every epoll instance the program
created, under any profile (``crates/irqlab-preload``). ``irqlab linux tune
--knob busy_poll_usecs --control FILE`` writes FILE and must know that a
value reached the kernel before it measures under it. It asks the kernel,
not the shim:

* the users of FILE are the processes whose initial environment
  (``/proc/PID/environ``) holds ``IRQLAB_CONTROL`` naming FILE (after
  resolving symbolic links) and that have the shim mapped (``/proc/PID/maps``;
  a shell or the launcher in between has the variable but no shim);
* their epoll instances are the descriptors whose ``/proc/PID/fd`` link reads
  ``anon_inode:[eventpoll]`` (``do_epoll_create`` in fs/eventpoll.c names the
  file so);
* each is copied into this process with ``pidfd_getfd(2)`` (Linux 5.6; it
  needs ptrace access to the process, ``PTRACE_MODE_ATTACH_REALCREDS``: root,
  or the same user where Yama allows it) and asked ``EPIOCGPARAMS`` (Linux 6.9,
  ``ep_eventpoll_bp_ioctl``), then closed.

An instance the shim never reached (one created by a raw system call, or a
process whose shim is inactive) shows its own value, which is the point.
A status file written by the shim would report what the shim believes, and
a process running as another user (memcached ``-u nobody``) could not write
it beside a root-owned control file; so there is none.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

#: ``_IOR(0x8A, 0x02, struct epoll_params)``, include/uapi/linux/eventpoll.h.
EPIOCGPARAMS = 0x80088A02
#: ``struct epoll_params``: u32 busy_poll_usecs, u16 busy_poll_budget, u8 prefer_busy_poll, u8 __pad.
_PARAMS = struct.Struct("=IHBB")
#: ``pidfd_getfd``: system calls from 424 on have one number on every
#: architecture (include/uapi/asm-generic/unistd.h, arch/x86/entry/syscalls/syscall_64.tbl).
_SYS_PIDFD_GETFD = 438
#: The link of an epoll instance's descriptor in /proc/PID/fd.
EVENTPOLL_LINK = "anon_inode:[eventpoll]"
#: The shim's file name (``irqlab.linux.exec_cmd.SHIM_NAME``).
_SHIM_NAME = b"libirqlab_preload.so"
_ENV = b"IRQLAB_CONTROL="


class ReadBackError(Exception):
    """The kernel's values cannot be read back; one sentence."""


@dataclass(frozen=True)
class EpollInstance:
    """One epoll instance of a control file's user, as the kernel holds it."""

    pid: int
    comm: str
    fd: int
    busy_poll_usecs: int
    busy_poll_budget: int
    prefer_busy_poll: int


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def users(control: str) -> list[int]:
    """The PIDs of the processes that carry the shim with ``IRQLAB_CONTROL``
    naming ``control``. Processes of other users are seen only by root."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone, a kernel thread, or another user's
        named = [v[len(_ENV):] for v in environ.split(b"\0") if v.startswith(_ENV)]
        if not named or not _same_file(os.fsdecode(named[0]), control):
            continue
        try:
            if _SHIM_NAME not in (entry / "maps").read_bytes():
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return sorted(found)


def epoll_fds(pid: int) -> list[int]:
    """The descriptors of ``pid`` that are epoll instances (none if it is gone)."""
    fds = []
    try:
        entries = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return []
    for entry in entries:
        try:
            if os.readlink(entry) == EVENTPOLL_LINK:
                fds.append(int(entry.name))
        except (OSError, ValueError):
            continue  # closed meanwhile
    return sorted(fds)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


_libc: Optional[ctypes.CDLL] = None


def _pidfd_getfd(pidfd: int, fd: int) -> int:
    """A copy of descriptor ``fd`` of the process behind ``pidfd``; OSError."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    got = _libc.syscall(ctypes.c_long(_SYS_PIDFD_GETFD), ctypes.c_int(pidfd), ctypes.c_int(fd), ctypes.c_uint(0))
    if got < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return int(got)


def read_params(fd: int) -> tuple[int, int, int]:
    """``EPIOCGPARAMS`` of epoll descriptor ``fd`` of this process:
    (busy_poll_usecs, busy_poll_budget, prefer_busy_poll); OSError."""
    buf = bytearray(_PARAMS.size)
    fcntl.ioctl(fd, EPIOCGPARAMS, buf)
    usecs, budget, prefer, _pad = _PARAMS.unpack(buf)
    return usecs, budget, prefer


def instances(control: str) -> list[EpollInstance]:
    """Every epoll instance of every user of ``control``, with the values the
    kernel holds. A process or descriptor gone meanwhile is left out;
    :class:`ReadBackError` when the kernel cannot be asked."""
    out = []
    for pid in users(control):
        fds = epoll_fds(pid)
        if not fds:
            continue
        comm = _comm(pid)
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        except OSError as e:
            raise _why(e, pid, comm, "pidfd_open", "5.3") from None
        try:
            for fd in fds:
                try:
                    local = _pidfd_getfd(pidfd, fd)
                except OSError as e:
                    if e.errno in (errno.EBADF, errno.ESRCH):
                        continue  # closed, or the process ended, meanwhile
                    raise _why(e, pid, comm, "pidfd_getfd", "5.6") from None
                try:
                    if os.readlink(f"/proc/self/fd/{local}") != EVENTPOLL_LINK:
                        continue  # the number was reused meanwhile
                    usecs, budget, prefer = read_params(local)
                except OSError as e:
                    if e.errno == errno.ENOTTY:
                        raise ReadBackError("the kernel has no EPIOCGPARAMS (Linux 6.9+), so busy_poll_usecs cannot "
                                            "be read back from the program's epoll instances") from None
                    raise ReadBackError(f"EPIOCGPARAMS on epoll fd {fd} of PID {pid} ({comm}) failed: "
                                        f"{e.strerror or e}") from None
                finally:
                    os.close(local)
                out.append(EpollInstance(pid, comm, fd, usecs, budget, prefer))
        finally:
            os.close(pidfd)
    return out


def _why(e: OSError, pid: int, comm: str, call: str, linux: str) -> ReadBackError:
    if e.errno == errno.EPERM:
        return ReadBackError(f"reading back the epoll instances of PID {pid} ({comm}) needs ptrace access to it "
                             f"({call}: permission denied); run irqlab linux tune as root")
    if e.errno == errno.ENOSYS:
        return ReadBackError(f"the kernel has no {call} (Linux {linux}+), so busy_poll_usecs cannot be read back "
                             "from the program's epoll instances")
    return ReadBackError(f"{call} on PID {pid} ({comm}) failed: {e.strerror or e}")
