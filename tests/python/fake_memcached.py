"""A fake memcached for the load generator's tests (test_loadgen.py,
test_loadgen_verdicts.py): it stores every ``set`` (``STORED``) and answers
each ``get`` with what the test's ``answer`` says, on daemon threads with
bounded waits, on 127.0.0.1. ``servers()`` is the fixtures' body: it yields
a starter returning ``HOST:PORT`` and closes every socket when the test
ends, which ends every thread.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Callable, Union

#: How long a fake server's socket waits for the generator before it gives up.
SOCKET_WAIT_S = 20.0
#: What a get is answered with: bytes, or "close" / "reset" the connection.
Reply = Union[bytes, str]
#: ``answer(nth_get_of_the_connection, key, stored_value)``.
Answer = Callable[[int, bytes, bytes], Reply]


def value_reply(key: bytes, data: bytes) -> bytes:
    """memcached's answer to a get of ``key`` that holds ``data``."""
    return b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, len(data), data)


def servers() -> Iterator[Callable[..., str]]:
    """Yield ``start(answer, delay_s=0.0) -> "HOST:PORT"``, which starts a
    fake memcached answering each get with ``answer(n, key, stored)`` after
    ``delay_s`` (a set is answered at once); every socket is closed after
    the yield."""
    socks: list[socket.socket] = []
    lock = threading.Lock()

    def start(answer: Answer, delay_s: float = 0.0) -> str:
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(64)
        lsock.settimeout(SOCKET_WAIT_S)
        socks.append(lsock)
        store: dict[bytes, bytes] = {}

        def serve(conn: socket.socket) -> None:
            conn.settimeout(SOCKET_WAIT_S)
            buf, gets = b"", 0
            # Bounded: each turn reads at least one byte or ends, and the
            # generator's run is bounded in time.
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                out = b""
                while b"\r\n" in buf:
                    line, rest = buf.split(b"\r\n", 1)
                    parts = line.split()
                    if parts[0] == b"set":
                        n = int(parts[4])
                        if len(rest) < n + 2:
                            break
                        with lock:
                            store[parts[1]] = rest[:n]
                        buf = rest[n + 2 :]
                        out += b"STORED\r\n"
                        continue
                    buf = rest
                    with lock:
                        stored = store.get(parts[1], b"")
                    reply = answer(gets, parts[1], stored)
                    gets += 1
                    if reply == "reset":  # RST instead of FIN
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    if isinstance(reply, str):
                        conn.close()
                        return
                    out += reply
                if out:
                    if delay_s and not out.startswith(b"STORED"):
                        time.sleep(delay_s)
                    try:
                        conn.sendall(out)
                    except OSError:
                        return

        def accept() -> None:
            while True:
                try:
                    conn, _ = lsock.accept()
                except OSError:  # closed by the fixture, or no one came
                    return
                socks.append(conn)
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return f"127.0.0.1:{lsock.getsockname()[1]}"

    try:
        yield start
    finally:
        for s in socks:
            s.close()
