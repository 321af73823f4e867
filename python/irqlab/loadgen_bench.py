"""``irqlab loadgen --bench``: what the load generator costs and how fast it
can keep an open-loop schedule on this machine, optionally beside memtier.

    irqlab loadgen --bench [--duration S] [--connections C] [--depth D]
                           [--threads T] [--fractions F,F,...]
                           [--memtier PATH] [--json]

Against a memcached it starts on loopback (one worker thread; on a machine
with two CPUs or more, memcached on CPU 0 and the generator on CPU 1, so
that neither takes the other's core):

1. the closed loop, ``--connections`` x ``--depth`` (default 32 x 4): the
   pair's maximum rate and the generator's CPU per request at it;
2. the open loop at each of ``--fractions`` of that maximum (default 0.1,
   0.25, 0.5, 0.75, 0.9, 1.0): the rate delivered, the generator's CPU
   microseconds (user + system, all its threads) per request, the share of
   sends late by more than 1 ms by its own doing, its own lag p99, the share
   that waited for a free slot (the server's pace), and whether it kept its
   schedule (at most 1 % late);
3. the highest of those rates at which it kept its schedule.

Every request is a ``get`` of a key that was never set (``--no-preload``),
so each reply is memcached's 5-byte miss: the server does the same little
work for either generator and what differs is the generator's own cost.

With ``--memtier PATH``, memtier_benchmark (Redis Ltd's memcached and redis
generator, built from its public source; not shipped with irqlab) runs at
the same rates with the same connections and key space, its request rate
capped with ``--rate-limiting`` (requests per second per connection), and
its CPU is measured the same way, from the kernel's account of the child
(``wait4``). memtier's rate limit is not an open loop: a connection waits
for each reply before its next request, so when the server is slow it sends
less instead of late. Its CPU per request is comparable; its latency is not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from irqlab.loadgen import BINARY_NAME, EXIT_USAGE, _error, find_binary, memcached

#: Open-loop rates tried, as fractions of the closed-loop maximum.
FRACTIONS = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
#: The load generator's exit statuses that still print a sound report: the
#: server did not keep up (1), the generator fell behind its schedule (3).
_REPORTED = (0, 1, 3)


def _cpus() -> tuple[Optional[str], Optional[str]]:
    """CPU lists for memcached and the generator (``taskset -c``), or None
    each on a one-CPU machine or without taskset."""
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        return "0", "1"
    return None, None


def _pinned(cpus: Optional[str], argv: list[str]) -> list[str]:
    return ["taskset", "-c", cpus, *argv] if cpus is not None else argv


def run_json(argv: Sequence[str], timeout_s: float = 120.0, cpus: Optional[str] = None) -> dict[str, Any]:
    """Run ``irqlab-loadgen ARGV --json`` (on ``cpus``) and return its
    report; a run that printed no report is a RuntimeError."""
    binary = find_binary()
    if binary is None:
        raise FileNotFoundError(f"{BINARY_NAME} is not built; run `make setup`")
    out = subprocess.run(
        _pinned(cpus, [str(binary), *argv, "--json"]), capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if out.returncode not in _REPORTED or not out.stdout.strip():
        raise RuntimeError(f"{BINARY_NAME} failed (exit {out.returncode}): {out.stderr.strip()}")
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def _open_row(r: dict[str, Any]) -> dict[str, Any]:
    own = r.get("own_lag_us") or {}
    return {
        "offered_qps": r["offered_qps"],
        "achieved_qps": r["achieved_qps"],
        "cpu_us_per_request": r["cpu_us_per_request"],
        "late_fraction": r["late_fraction"],
        "own_lag_p99_us": own.get("p99"),
        "slot_wait_fraction": r["slot_wait_fraction"],
        "schedule_kept": r["schedule_kept"],
        "unsent": r["unsent"],
        "timeouts": r["timeouts"],
        "errors": r["errors"],
        "p99_us": r["latency_us"]["p99"],
    }


def memtier_run(
    memtier: Path, server: str, qps: Optional[float], connections: int, depth: int, duration_s: float,
    records: int, cpus: Optional[str],
) -> dict[str, Any]:
    """memtier_benchmark at ``qps`` (None: unlimited) over ``connections``
    connections of one thread, ``depth`` requests outstanding at most on
    each (its ``--pipeline``), for ``duration_s`` (whole seconds, at least
    1): the requests it completed, their rate, and its CPU (user + system,
    from the kernel's account of the reaped child) per request."""
    host, port = server.rsplit(":", 1)
    seconds = max(1, round(duration_s))
    with tempfile.TemporaryDirectory(prefix="irqlab-memtier-") as tmp:
        out_json = Path(tmp) / "memtier.json"
        argv = [
            str(memtier), f"--server={host}", f"--port={port}", "--protocol=memcache_text", "--threads=1",
            f"--clients={connections}", f"--pipeline={depth}", "--ratio=0:1", "--key-pattern=R:R", "--key-minimum=1",
            f"--key-maximum={records}", "--key-prefix=irqlab-bench-miss-", f"--test-time={seconds}",
            "--hide-histogram", f"--json-out-file={out_json}",
        ]
        if qps is not None:
            argv.append(f"--rate-limiting={max(1, round(qps / connections))}")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            proc = subprocess.run(_pinned(cpus, argv), capture_output=True, text=True, timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"memtier_benchmark did not end within {seconds + 60} s") from None
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"memtier_benchmark failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
        try:
            totals = json.loads(out_json.read_text())["ALL STATS"]["Totals"]
            count = int(totals["Count"])
        except (OSError, ValueError, KeyError, TypeError):
            raise RuntimeError("memtier_benchmark wrote no readable JSON report") from None
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "offered_qps": qps,
        "achieved_qps": round(count / seconds, 1),
        "requests": count,
        "cpu_s": round(cpu_s, 3),
        "cpu_us_per_request": round(cpu_s * 1e6 / count, 2) if count else None,
    }


def bench(
    duration_s: float = 3.0, connections: int = 32, depth: int = 4, threads: int = 1,
    fractions: Sequence[float] = FRACTIONS, memtier: Optional[Path] = None,
) -> dict[str, Any]:
    """Measure the generator (and memtier) against a memcached it starts on
    loopback; see the module doc."""
    server_cpus, gen_cpus = _cpus()
    records = 10_000
    common = ["--duration", str(duration_s), "--warmup", "0.5", "--threads", str(threads), "--no-preload",
              "--records", str(records), "--connections", str(connections), "--depth", str(depth)]
    rows: list[dict[str, Any]] = []
    memtier_rows: list[dict[str, Any]] = []
    with memcached(threads=1, cpus=server_cpus) as server:
        closed = run_json(["--server", server, *common], cpus=gen_cpus)
        if memtier is not None:
            memtier_rows.append({"fraction": None, **memtier_run(memtier, server, None, connections, depth, duration_s,
                                                                records, gen_cpus)})
        for f in fractions:
            qps = max(1000.0, round(f * closed["achieved_qps"], -2))
            r = run_json(["--server", server, *common, "--qps", f"{qps:g}"], cpus=gen_cpus)
            rows.append({"fraction": f, **_open_row(r)})
            if memtier is not None:
                memtier_rows.append({"fraction": f, **memtier_run(memtier, server, qps, connections, depth, duration_s,
                                                                 records, gen_cpus)})
    kept = [r["offered_qps"] for r in rows if r["schedule_kept"]]
    cost = closed["cpu_us_per_request"]
    return {
        "cpus": os.cpu_count(),
        "pinned": {"memcached": server_cpus, "generator": gen_cpus},
        "max_qps": closed["achieved_qps"],
        "cpu_us_per_request": cost,
        # Cores the generator itself kept busy at the maximum rate: well
        # below 1 means the server, not the generator, set the maximum.
        "generator_cores_at_max": round(cost * closed["achieved_qps"] / 1e6, 3) if cost else None,
        "closed": {k: closed[k] for k in ("connections", "depth", "threads", "achieved_qps", "cpu_us_per_request",
                                          "errors", "timeouts", "latency_us")},
        "open": rows,
        "highest_kept_qps": max(kept) if kept else None,
        "memtier": memtier_rows or None,
    }


def _fractions(text: str) -> tuple[float, ...]:
    try:
        fs = tuple(float(x) for x in text.split(","))
    except ValueError:
        fs = ()
    if not fs or len(fs) > 20 or not all(0.01 <= f <= 2.0 for f in fs):
        raise argparse.ArgumentTypeError(
            f"--fractions must be 1 to 20 comma-separated numbers from 0.01 to 2 (got {text!r})")
    return fs


def _bounded(flag: str, lo: float, hi: float, kind: type = float) -> Any:
    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{flag} must be {'an integer' if kind is int else 'a number'} "
                                             f"from {lo:g} to {hi:g} (got {text!r})")
        return v
    return parse


def _memtier_path(text: str) -> Path:
    found = shutil.which(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"--memtier must name an executable memtier_benchmark (got {text!r})")
    return Path(found)


def bench_main(argv: Sequence[str]) -> int:
    """``irqlab loadgen --bench ...``; see the module doc."""
    p = argparse.ArgumentParser(prog="irqlab loadgen --bench", allow_abbrev=False)
    p.add_argument("--duration", type=_bounded("--duration", 0.1, 600), default=3.0, metavar="S")
    p.add_argument("--connections", type=_bounded("--connections", 1, 1000, int), default=32, metavar="C")
    p.add_argument("--depth", type=_bounded("--depth", 1, 1024, int), default=4, metavar="D")
    p.add_argument("--threads", type=_bounded("--threads", 1, 64, int), default=1, metavar="T")
    p.add_argument("--fractions", type=_fractions, default=FRACTIONS, metavar="F,F,...")
    p.add_argument("--memtier", type=_memtier_path, default=None, metavar="PATH")
    p.add_argument("--json", action="store_true")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:  # argparse has printed usage or help
        return EXIT_USAGE if e.code else 0
    if args.threads > args.connections:
        _error(f"--threads must be at most --connections ({args.connections}) (got {args.threads})")
        return EXIT_USAGE
    try:
        result = bench(args.duration, args.connections, args.depth, args.threads, args.fractions, args.memtier)
    except (FileNotFoundError, RuntimeError) as e:
        _error(str(e))
        return EXIT_USAGE if isinstance(e, FileNotFoundError) else 1
    if args.json:
        print(json.dumps(result))
        return 0
    print(render(result))
    return 0


def render(result: dict[str, Any]) -> str:
    pin = result["pinned"]
    where = (f"memcached -t 1 on CPU {pin['memcached']}, the generator on CPU {pin['generator']}"
             if pin["memcached"] is not None else "memcached -t 1 and the generator unpinned")
    c = result["closed"]
    lines = [
        f"irqlab-loadgen benchmark ({result['cpus']} CPUs, loopback, {where}; gets that miss)",
        f"  closed loop  {c['connections']} x depth {c['depth']}, {c['threads']} thread(s): "
        f"{c['achieved_qps']:,.0f} QPS, {c['cpu_us_per_request']:.2f} us CPU/request "
        f"(the generator kept {result['generator_cores_at_max']:.2f} cores busy)",
        f"  open loop    {'offered':>9} {'achieved':>9} {'us CPU/req':>10} {'late':>7} {'own p99 us':>10} "
        f"{'slot wait':>9}  schedule",
    ]
    for r in result["open"]:
        own = f"{r['own_lag_p99_us']:,.0f}" if r["own_lag_p99_us"] is not None else "-"
        lines.append(
            f"               {r['offered_qps']:>9,.0f} {r['achieved_qps']:>9,.0f} {r['cpu_us_per_request'] or 0:>10.2f} "
            f"{100 * r['late_fraction']:>6.1f}% {own:>10} {100 * r['slot_wait_fraction']:>8.1f}%  "
            f"{'kept' if r['schedule_kept'] else 'NOT kept'}")
    if result["memtier"]:
        lines.append(f"  memtier      {'offered':>9} {'achieved':>9} {'us CPU/req':>10}   (--rate-limiting per connection; "
                     "it sends in bursts every 20 ms and waits for each reply, so its latency is not comparable)")
        for r in result["memtier"]:
            offered = f"{r['offered_qps']:,.0f}" if r["offered_qps"] else "closed"
            lines.append(f"               {offered:>9} {r['achieved_qps']:>9,.0f} {r['cpu_us_per_request'] or 0:>10.2f}")
    hk = result["highest_kept_qps"]
    lines.append(
        f"  highest open-loop rate that kept its schedule: {hk:,.0f} QPS ({hk / result['max_qps']:.0%} of the closed-loop maximum)"
        if hk else "  the open loop kept its schedule at none of these rates")
    return "\n".join(lines)
