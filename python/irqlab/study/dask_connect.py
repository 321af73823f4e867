"""Connecting to a Dask scheduler within ``--connect-timeout``, or one
sentence saying why not (issue 62, item 10).

``distributed.Client(address, timeout=T)`` bounds only the TCP connect:
``distributed.comm.core.connect`` then waits for the peer's handshake with
no bound, so a peer that accepts and never answers holds the sweep until it
is killed; one that sends something else fails with whatever the bytes made
of Dask's frame reader (a ``MemoryError`` for a frame length of exabytes),
and the half-made Client's ``__del__`` then tries to close it, waits for
the dead connection and prints a traceback at exit.

So here the whole start (connect, handshake, scheduler information, the
stream's start) runs under ``callback_timeout`` (``distributed.utils.sync``
wraps it in ``wait_for``, which cancels it), a Client that fails to start is
closed within the same bound and marked closed so that its ``__del__`` does
nothing, and a plain TCP connect first tells an address where nothing
listens from a peer that is not a scheduler.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any, Callable


class ConnectError(ValueError):
    """The scheduler cannot be used; one sentence, naming ``--scheduler``."""


def _reachable(scheduler: str, host: str, port: int, timeout_s: float) -> None:
    """A TCP connection to ``host:port`` within ``timeout_s``, or
    :class:`ConnectError` (refused, unroutable, no answer to the SYN)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as e:
        reason = "no answer" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise ConnectError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({reason})") from None


def _timed_out(e: BaseException) -> bool:
    """Whether ``e`` says that the peer did not answer in time: the
    client's own deadline (TimeoutError), or distributed's connect and
    handshake deadlines, which it raises as a plain OSError ("Timed out
    trying to connect ...", "Timed out during handshake ...",
    distributed/comm/core.py); which of them fires first depends on how
    busy the machine is."""
    return isinstance(e, TimeoutError) or (isinstance(e, OSError) and str(e).startswith("Timed out"))


def _not_a_scheduler(scheduler: str, e: BaseException, timeout_s: float) -> ConnectError:
    if _timed_out(e):
        return ConnectError(
            f"--scheduler {scheduler}: cannot reach a Dask scheduler there: the connection was accepted but "
            f"nothing answered as one within {timeout_s:g} s; check the address, or give a longer --connect-timeout"
        )
    if isinstance(e, OSError):  # the peer hung up (distributed's CommClosedError is an OSError)
        detail = " ".join(str(e).split())[:200] or type(e).__name__
        return ConnectError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({detail})")
    return ConnectError(
        f"--scheduler {scheduler}: cannot reach a Dask scheduler there: what answers speaks another protocol "
        f"(Dask could not read it: {type(e).__name__}); check the address and port"
    )


def discard(client: Any, timeout_s: float) -> None:
    """Close ``client`` within ``timeout_s`` whatever state it is in, and
    mark it closed, so that its ``__del__`` (at the latest at exit) neither
    waits again nor prints a traceback."""
    with contextlib.suppress(Exception):
        client.close(timeout=timeout_s)
    # Client.close returns at once for a closed client (distributed/client.py).
    client.status = "closed"
    with contextlib.suppress(Exception):
        client._loop_runner.stop()


def connect(scheduler: str, timeout_s: float) -> Any:
    """A ``distributed.Client`` of the scheduler at ``scheduler`` (an address
    already parsed by the caller), started within about ``timeout_s``
    seconds, or :class:`ConnectError`."""
    from distributed import Client
    from distributed.comm import get_address_host_port

    host, port = get_address_host_port(scheduler)
    _reachable(scheduler, host, port, timeout_s)

    class BoundedClient(Client):  # type: ignore[misc]
        def start(self, **kwargs: Any) -> None:
            # Called once by Client.__init__; synchronous, so distributed's
            # sync() takes callback_timeout for itself.
            try:
                super().start(callback_timeout=timeout_s, **kwargs)
            except BaseException:
                discard(self, timeout_s)
                raise

    try:
        return BoundedClient(scheduler, timeout=f"{timeout_s}s", set_as_default=False)
    except Exception as e:  # noqa: BLE001 - whatever the peer's bytes made of Dask's reader
        raise _not_a_scheduler(scheduler, e, timeout_s) from None


def bounded(client: Any, timeout_s: float, what: str, scheduler: str, call: Callable[..., Any], *args: Any) -> Any:
    """``client.sync(call, *args)`` within ``timeout_s``, or
    :class:`ConnectError` saying that ``what`` did not answer."""
    try:
        return client.sync(call, *args, callback_timeout=timeout_s)
    except TimeoutError:
        raise ConnectError(
            f"--scheduler {scheduler}: {what} did not answer within {timeout_s:g} s; check the cluster, "
            "or give a longer --connect-timeout"
        ) from None
