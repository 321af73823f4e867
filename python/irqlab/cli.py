"""The ``irqlab`` command.

    irqlab run SCENARIO [--profile P] [--set KEY=VALUE]... [--seed N] [--duration S] [--json]
    irqlab profiles [--json]
    irqlab bench [SCENARIO] [--profile P] [--duration S] [--repeat N] [--json]

Exit status: 0 on success; 2 for a user error (bad flag, bad scenario, unknown
profile or field, out-of-range value), reported as one line
``irqlab: error: <sentence>`` on stderr and never as a traceback; 1 for an
internal error (a bug), reported as ``irqlab: internal error: <sentence>``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from typing import Callable, NoReturn, Optional

from irqlab._core import ScenarioError, __version__
from irqlab.bench import DEFAULT_SCENARIO, bench
from irqlab.linux.cli import add_linux_parser
from irqlab.loadgen import add_loadgen_parser
from irqlab.reproduce.cli import ReproduceUsageError, add_reproduce_parser
from irqlab.testbed.cli import TestbedUsageError, add_testbed_parser
from irqlab.profiles import PROFILES, profile_knobs
from irqlab.run import MAX_SEED, run
from irqlab.scenario import Scenario
from irqlab.text import bench_table, profiles_table, summary_table

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """A bad command line; the message is one sentence."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    try:
        args = build_parser().parse_args(argv)
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except (UsageError, ScenarioError, ReproduceUsageError, TestbedUsageError) as e:
        _say("error", str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); silence the flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_INTERNAL
    except RuntimeError as e:
        _say("internal error", str(e))
        return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="irqlab",
        description="Simulate a server's network receive path: interrupts, coalescing, NAPI, busy polling.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"irqlab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = commands.add_parser(
        "run",
        help="run one scenario and print its summary",
        description="Run one scenario and print its summary (a table, or one JSON object with --json).",
        allow_abbrev=False,
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
    _add_profile(p)
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one scenario field, e.g. --set load.qps=300000 (repeatable; applied after the profile)",
    )
    p.add_argument("--seed", metavar="N", help="random seed, a non-negative integer (run.seed)")
    _add_duration(p)
    _add_json(p, "print the summary as one JSON object")
    p.set_defaults(handler=_cmd_run)

    p = commands.add_parser(
        "profiles",
        help="list the profiles and the knobs each sets",
        description="List the interrupt-handling profiles and the knobs each one sets.",
        allow_abbrev=False,
    )
    _add_json(p, "print {profile: {knob: value}} as one JSON object")
    p.set_defaults(handler=_cmd_profiles)

    p = commands.add_parser(
        "bench",
        help="measure the simulator's speed (simulated events per wall second)",
        description="Run a scenario several times and report simulated events per wall-clock second.",
        allow_abbrev=False,
    )
    p.add_argument(
        "scenario", metavar="SCENARIO", nargs="?", help=f"scenario file (TOML; default {DEFAULT_SCENARIO})"
    )
    _add_profile(p)
    _add_duration(p)
    p.add_argument("--repeat", metavar="N", default="3", help="number of runs (default 3)")
    _add_json(p, "print the result as one JSON object")
    p.set_defaults(handler=_cmd_bench)
    add_loadgen_parser(commands)
    add_reproduce_parser(commands)
    add_linux_parser(commands)
    add_testbed_parser(commands)
    return parser


# -- commands ---------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    seed = _seed(args.seed)
    duration_s = _duration(args.duration)
    scenario = Scenario.load(args.scenario)
    summary = run(scenario, profile=args.profile, overrides=args.overrides, seed=seed, duration_s=duration_s)
    print(summary.to_json() if args.json else summary_table(summary))
    return EXIT_OK


def _cmd_profiles(args: argparse.Namespace) -> int:
    knobs = profile_knobs()
    if args.json:
        print(json.dumps(knobs))
    else:
        print(f"{len(PROFILES)} profiles; the knobs they set (scenario units: rx-usecs and busy_poll_usecs in us,")
        print("gro_flush_timeout and irq_suspend_timeout in ns):")
        print()
        print(profiles_table(knobs))
    return EXIT_OK


def _cmd_bench(args: argparse.Namespace) -> int:
    duration_s = _duration(args.duration)
    repeat = _positive_int(args.repeat, "--repeat")
    result = bench(args.scenario, profile=args.profile, duration_s=duration_s, repeat=repeat)
    print(json.dumps(result.to_dict()) if args.json else bench_table(result))
    return EXIT_OK


# -- flags ------------------------------------------------------------------


def _add_profile(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", metavar="P", help=f"interrupt-handling profile: {', '.join(PROFILES)}")


def _add_duration(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", metavar="S", help="simulated seconds measured after warm-up (run.duration_s)")


def _add_json(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--json", action="store_true", help=text)


def _seed(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise UsageError(f"--seed must be a non-negative integer no larger than {MAX_SEED} (got {text!r})")
    return value


def _duration(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"--duration must be a positive number of seconds (got {text!r})")
    return value


def _positive_int(text: str, flag: str) -> int:
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{flag} must be a positive integer (got {text!r})")
    return value


def _say(kind: str, message: str) -> None:
    # One line, whatever the message holds.
    print(f"irqlab: {kind}: {' '.join(message.split())}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
