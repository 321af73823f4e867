"""``irqlab loadgen``: the memcached load generator, and a benchmark of it.

    irqlab loadgen [FLAGS...]       run the native ``irqlab-loadgen`` with FLAGS
                                    (see ``irqlab loadgen --help``)
    irqlab loadgen --bench [--duration S] [--connections C] [--depth D]
                           [--threads T] [--json]
                                    measure the generator itself against a
                                    memcached it starts on loopback

The load generator is a Rust program (``crates/irqlab-loadgen``); this module
finds it and passes the arguments through unchanged, so its flags, messages
and exit statuses are the program's own. ``make setup`` copies it to
``python/irqlab/_native/``; a ``cargo build --release`` tree is the fallback.

The benchmark reports the generator's own cost, CPU microseconds (user +
system, all its threads) per request, and its maximum rate on this machine:
closed loop, ``--connections`` x ``--depth`` (default 32 x 4), against
memcached on loopback. On a small machine the generator and memcached share
the cores, so the rate is that of the pair.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

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


def add_loadgen_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``loadgen`` to the ``irqlab`` command's subcommands.

    Every argument after ``loadgen`` is kept as it is (the sub-parser has no
    option prefix, so ``--json`` or ``--help`` are not taken by argparse) and
    handed to the program.
    """
    p = subparsers.add_parser(
        "loadgen",
        help="run the memcached load generator (irqlab loadgen --help), or --bench it",
        description="Run the memcached load generator irqlab-loadgen with the given flags.",
        prefix_chars="\0",
        add_help=False,
    )
    p.add_argument("args", nargs="*", metavar="FLAGS")
    p.set_defaults(handler=_cmd_loadgen)
    return p


def _cmd_loadgen(args: argparse.Namespace) -> int:
    argv: list[str] = list(args.args)
    if "--bench" in argv:
        argv.remove("--bench")
        return bench_main(argv)
    return run_binary(argv)


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
def memcached(threads: int = 2, memory_mb: int = 64, timeout_s: float = 5.0) -> Iterator[str]:
    """Start the system's memcached on a free loopback port, yield its
    ``HOST:PORT``, and kill it on exit whatever happens.

    Raises ``FileNotFoundError`` if memcached is not installed and
    ``RuntimeError`` if it does not accept connections in ``timeout_s``.
    """
    exe = shutil.which("memcached")
    if exe is None:
        raise FileNotFoundError("memcached is not installed (apt-get install memcached)")
    cmd = [exe, "-l", "127.0.0.1", "-t", str(threads), "-U", "0", "-m", str(memory_mb)]
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


# -- benchmark ----------------------------------------------------------------


def run_json(argv: Sequence[str], timeout_s: float = 120.0) -> dict[str, Any]:
    """Run ``irqlab-loadgen ARGV --json`` and return its report."""
    binary = find_binary()
    if binary is None:
        raise FileNotFoundError(f"{BINARY_NAME} is not built; run `make setup`")
    out = subprocess.run(
        [str(binary), *argv, "--json"], capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"{BINARY_NAME} failed (exit {out.returncode}): {out.stderr.strip()}")
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def bench(
    duration_s: float = 3.0, connections: int = 32, depth: int = 4, threads: int = 1
) -> dict[str, Any]:
    """Measure the generator against a memcached it starts on loopback.

    Two runs: closed loop ``connections`` x ``depth`` (the maximum rate, and
    the CPU cost per request at that rate), then open loop at half that rate
    (the CPU cost per request below saturation, where every request costs
    its own wake-ups).
    """
    common = ["--duration", str(duration_s), "--warmup", "0.5", "--threads", str(threads)]
    with memcached() as server:
        closed = run_json(
            ["--server", server, "--connections", str(connections), "--depth", str(depth), *common]
        )
        half = max(1000.0, round(closed["achieved_qps"] / 2, -3))
        open_ = run_json(
            ["--server", server, "--connections", str(connections), "--depth", str(depth), "--qps", str(half), *common]
        )
    cost = closed["cpu_us_per_request"]
    return {
        "cpus": os.cpu_count(),
        "max_qps": closed["achieved_qps"],
        "cpu_us_per_request": cost,
        # Cores the generator itself kept busy at the maximum rate, and the
        # rate one core of generator could sustain at that cost: if the
        # first is well below 1, the server (sharing the machine), not the
        # generator, set the maximum.
        "generator_cores_at_max": round(cost * closed["achieved_qps"] / 1e6, 3) if cost else None,
        "generator_qps_per_core": round(1e6 / cost) if cost else None,
        "closed": _brief(closed),
        "open": _brief(open_),
    }


def _brief(r: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "mode",
        "connections",
        "depth",
        "threads",
        "offered_qps",
        "achieved_qps",
        "requests",
        "errors",
        "timeouts",
        "cpu_s",
        "cpu_us_per_request",
        "latency_us",
    )
    return {k: r[k] for k in keys}


def bench_main(argv: Sequence[str]) -> int:
    """``irqlab loadgen --bench [--duration S] [--connections C] [--depth D] [--threads T] [--json]``."""
    p = argparse.ArgumentParser(prog="irqlab loadgen --bench", allow_abbrev=False)
    p.add_argument("--duration", type=float, default=3.0, metavar="S")
    p.add_argument("--connections", type=int, default=32, metavar="C")
    p.add_argument("--depth", type=int, default=4, metavar="D")
    p.add_argument("--threads", type=int, default=1, metavar="T")
    p.add_argument("--json", action="store_true")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:  # argparse has printed usage or help
        return EXIT_USAGE if e.code else 0
    try:
        result = bench(args.duration, args.connections, args.depth, args.threads)
    except (FileNotFoundError, RuntimeError) as e:
        _error(str(e))
        return EXIT_USAGE if isinstance(e, FileNotFoundError) else 1
    if args.json:
        print(json.dumps(result))
        return 0
    c, o = result["closed"], result["open"]
    print(f"irqlab-loadgen benchmark ({result['cpus']} CPUs, memcached -t 2 on loopback, same machine)")
    for name, r in (("closed loop", c), ("open loop", o)):
        lat = r["latency_us"]
        offered = f", offered {r['offered_qps']:,.0f}" if r["offered_qps"] else ""
        print(
            f"  {name:<12} {r['connections']} x depth {r['depth']}, {r['threads']} thread(s){offered}: "
            f"{r['achieved_qps']:,.0f} QPS, {r['cpu_us_per_request']:.2f} us CPU/request, "
            f"p50 {lat['p50']:.0f} us, p99 {lat['p99']:.0f} us, errors {r['errors']}"
        )
    print(
        f"  max rate {result['max_qps']:,.0f} QPS at {result['cpu_us_per_request']:.2f} us CPU/request; "
        f"the generator kept {result['generator_cores_at_max']:.2f} cores busy "
        f"(one core of it would sustain about {result['generator_qps_per_core']:,} QPS)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_binary(sys.argv[1:]))
