"""Putting a host back without being cut short.

The real-host tools (``irqlab linux tune``, ``irqlab testbed run/tune``)
undo their changes in a ``finally`` block. A second Ctrl-C or SIGTERM
arriving there (an impatient user, a supervisor's stop followed by its kill
timeout's first signal) would raise inside the undo and leave the host half
restored. :func:`signals_held` keeps both signals waiting until the undo is
done.

The signals are caught by Python handlers that only record them, not
blocked with ``pthread_sigmask``: a mask holds only for the thread that sets
it, and a signal sent to the process may land on any other thread, whose
Python handler then still runs in the main thread.
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from typing import Any, Iterator, Optional

HELD = (signal.SIGINT, signal.SIGTERM)


def raise_terminated(signum: int, frame: object) -> None:
    """A SIGTERM handler: raise ``irqlab.study.cli.Terminated``, a
    ``KeyboardInterrupt``, so that ``finally`` blocks run (exit status 143)."""
    from irqlab.study.cli import Terminated

    raise Terminated()


@contextmanager
def signals_held(after: Optional[dict[int, Any]] = None) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM are recorded, not acted on. At its
    end the handlers become ``after`` (signal -> handler; a signal not in it
    gets back the handler it had before the block), and the first signal
    recorded is sent again to this process, to those handlers."""
    got: list[int] = []

    def record(signum: int, frame: object) -> None:
        got.append(signum)

    try:
        before = {s: signal.signal(s, record) for s in HELD}
    except ValueError:  # not the main thread: handlers cannot be changed here
        yield
        return
    try:
        yield
    finally:
        for s in HELD:
            signal.signal(s, (after or {}).get(s, before[s]))
        if got:
            os.kill(os.getpid(), got[0])
