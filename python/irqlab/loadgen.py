"""``irqlab loadgen``: the memcached load generator.

    irqlab loadgen [FLAGS...]       run the native ``irqlab-loadgen`` with FLAGS
                                    (see ``irqlab loadgen --help``)
    irqlab loadgen --bench [...]    measure the generator itself against a
                                    memcached it starts on loopback
                                    (:mod:`irqlab.loadgen_bench`)

The load generator is a Rust program (``crates/irqlab-loadgen``); this module
finds it and passes the arguments through unchanged, so its flags, messages
and exit statuses are the program's own. ``make setup`` copies it to
``python/irqlab/_native/``; a ``cargo build --release`` tree is the fallback.
This module also starts memcached on loopback for the benchmark and tests.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

BINARY_NAME = "irqlab-loadgen"

_PACKAGE = Path(__file__).resolve().parent
#: Where the program is looked for, in order: beside the package (``make
#: setup``), then the cargo release build of the repository.
BINARY_CANDIDATES = (
    _PACKAGE / "_native" / BINARY_NAME,
    _PACKAGE.parents[1] / "target" / "release" / BINARY_NAME,
)

EXIT_USAGE = 2


def find_binary() -> Optional[Path]:
    """The ``irqlab-loadgen`` program, or ``None`` if it is not built."""
    for path in BINARY_CANDIDATES:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def _error(message: str) -> None:
    print(f"irqlab: error: {' '.join(message.split())}", file=sys.stderr)


def run_binary(argv: Sequence[str]) -> int:
    """Run ``irqlab-loadgen ARGV`` with this process's stdin/stdout/stderr;
    return its exit status."""
    binary = find_binary()
    if binary is None:
        _error(
            f"{BINARY_NAME} is not built (looked for {', '.join(str(p) for p in BINARY_CANDIDATES)}); run `make setup`"
        )
        return EXIT_USAGE
    try:
        return subprocess.run([str(binary), *argv], check=False).returncode
    except KeyboardInterrupt:
        return 130


# -- memcached on loopback ----------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def memcached(
    threads: int = 2, memory_mb: int = 64, timeout_s: float = 5.0, cpus: Optional[str] = None
) -> Iterator[str]:
    """Start the system's memcached on a free loopback port (on CPU list
    ``cpus`` if given, as ``taskset -c`` takes it), yield its
    ``HOST:PORT``, and kill it on exit whatever happens.

    Raises ``FileNotFoundError`` if memcached is not installed and
    ``RuntimeError`` if it does not accept connections in ``timeout_s``.
    """
    exe = shutil.which("memcached")
    if exe is None:
        raise FileNotFoundError("memcached is not installed (apt-get install memcached)")
    cmd = [exe, "-l", "127.0.0.1", "-t", str(threads), "-U", "0", "-m", str(memory_mb)]
    if cpus is not None:
        cmd = ["taskset", "-c", cpus, *cmd]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd += ["-u", "nobody"]  # memcached refuses to run as root without -u
    why = ""
    for _attempt in range(3):  # the port may be taken between probe and bind
        port = free_port()
        proc = subprocess.Popen(
            [*cmd, "-p", str(port)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            if _wait_listening(proc, port, timeout_s):
                yield f"127.0.0.1:{port}"
                return
        finally:
            why = _stop(proc)
    raise RuntimeError(
        f"memcached did not start listening on 127.0.0.1 within {timeout_s} s" + (f": {why}" if why else "")
    )


def _wait_listening(proc: subprocess.Popen[bytes], port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> str:
    """Kill and reap ``proc``; return what it wrote on stderr (one line)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
    said = b""
    if proc.stderr is not None:
        said = proc.stderr.read(4096)
        proc.stderr.close()
    return " ".join(said.decode(errors="replace").split())


if __name__ == "__main__":
    sys.exit(run_binary(sys.argv[1:]))
