"""What every ``irqlab`` command shares: the exit statuses, the usage
error and the parser that raises it, writing standard output so that a
full disk or a closed pipe is an error, the one-line ``irqlab: warning:``
and ``irqlab: error:`` messages, and the flags several commands take.

The sub-commands (``irqlab.linux``, ``irqlab.testbed``, ``irqlab.study``,
``irqlab.reproduce``, ``irqlab.tune``) import these from here, not from
:mod:`irqlab.cli`, which imports them: the command line is then a tree,
not a circle.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, NoReturn, Optional

from irqlab.flags import seconds
from irqlab.profiles import PROFILES
from irqlab.run import MAX_SEED

EXIT_OK = 0
#: An internal error (a bug) or an operating-system error (a full disk).
EXIT_INTERNAL = 1
EXIT_OS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A bad command line; the message is one sentence."""


class OutputError(OSError):
    """Standard output could not be written (a full disk, a closed pipe)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def _print_message(self, message: str, file: Optional[IO[str]] = None) -> None:
        # argparse ignores a failed write (--help > /dev/full would exit 0
        # having printed nothing); report it like any other output.
        if message:
            stream = file or sys.stderr
            try:
                stream.write(message)
            except BrokenPipeError:
                raise
            except OSError as e:
                if stream is sys.stdout:
                    raise OutputError(e.errno, e.strerror) from None
                raise


def flush_stdout() -> None:
    """Flush standard output, raising :class:`OutputError` if it cannot be written."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError(e.errno, e.strerror) from None


def write_stdout(text: str) -> None:
    """Print ``text`` and a newline on standard output, raising
    :class:`OutputError` if it cannot be written."""
    try:
        print(text)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError(e.errno, e.strerror) from None


def os_error_sentence(e: OSError) -> str:
    """One sentence for an operating-system error: the file, then the reason."""
    reason = e.strerror or str(e) or type(e).__name__
    if e.filename is not None:
        return f"{e.filename}: {reason}"
    return reason


def discard_stdout() -> None:
    """Point standard output at /dev/null so that what is still buffered
    leaves quietly at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a file (tests capture it): nothing is flushed at exit


def add_profile(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", metavar="P", help=f"interrupt-handling profile: {', '.join(PROFILES)}")


def add_duration(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", metavar="S", help="simulated seconds measured after warm-up (run.duration_s)")


def add_json(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--json", action="store_true", help=text)


def seed_flag(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise UsageError(f"--seed must be a non-negative integer no larger than {MAX_SEED} (got {text!r})")
    return value


def duration_flag(text: Optional[str]) -> Optional[float]:
    return seconds(text, "--duration", UsageError)


def check_set_flags(overrides: list[str], seed: Optional[int], duration_s: Optional[float],
                     others: Optional[dict[str, str]] = None) -> None:
    """Refuse ``--set`` giving a field twice, or one that ``--seed``,
    ``--duration`` (or ``others``: field → flag) also sets: one of the two
    would silently win."""
    from irqlab.flags import check_overrides

    by_flag = dict(others or {})
    if seed is not None:
        by_flag["run.seed"] = "--seed"
    if duration_s is not None:
        by_flag["run.duration_s"] = "--duration"
    check_overrides(list(overrides), "--set", UsageError, by_flag)


def positive_int(text: str, flag: str, most: int) -> int:
    """A whole number from 1 to ``most``: a count of runs or workers, each of
    which costs real time, so a mistyped one must not start a day's work."""
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = 0
    if not 1 <= value <= most:
        raise UsageError(f"{flag} must be a whole number from 1 to {most} (got {text!r})")
    return value


def say_warning(message: str) -> None:
    """``irqlab: warning: <sentence>`` on stderr."""
    say("warning", message)


def say(kind: str, message: str) -> None:
    # One line, whatever the message holds.
    try:
        print(f"irqlab: {kind}: {' '.join(message.split())}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # stderr itself cannot be written: there is no one left to tell


def can_encode(stream: object, text: str) -> bool:
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
