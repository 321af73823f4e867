"""The ``irqlab loadgen`` command: the flags passed through to the native
load generator (:mod:`irqlab.loadgen`), or ``--bench`` for the benchmark
of the generator itself (:mod:`irqlab.loadgen_bench`, which uses the
first's helpers, so the dispatch between them lives here)."""

from __future__ import annotations

import argparse
from typing import Any

from irqlab.loadgen import run_binary


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
        from irqlab.loadgen_bench import bench_main

        return bench_main(argv)
    return run_binary(argv)
