"""The ``irqlab`` command.

    irqlab run SCENARIO [--profile P] [--set KEY=VALUE]... [--seed N] [--duration S] [--json]
    irqlab profiles [--json]
    irqlab bench [SCENARIO] [--profile P] [--duration S] [--repeat N] [--json]
    irqlab bench --sweep [SCENARIO] [--duration S] [--jobs N] [--json]
    irqlab bench --scale [SCENARIO] [--profile P] [--cores N,N,...] [--repeat N] [--json]
    irqlab sweep SCENARIO|STUDY [--profile P,...] [--grid FIELD=VALUES]... [--seeds N] [--out DIR] ...
    irqlab results DIR [--sql QUERY] · irqlab plot DIR --x COL --y COL · irqlab report DIR

Exit status:

- 0 on success;
- 2 for a user error (bad flag, bad or unreadable scenario file, unknown
  profile or field, out-of-range value, an ``--out`` that is not a writable
  directory), reported as one line ``irqlab: error: <sentence>`` on stderr;
- 1 for an operating-system error while working (standard output or a file
  cannot be written: a full disk, a closed pipe), reported as one line
  ``irqlab: error: <sentence>``, or for an internal error (a bug), reported
  as ``irqlab: internal error: <sentence>``;
- 3 when some points of a sweep failed (each named on stderr; the others
  are stored);
- 130 when interrupted (Ctrl-C); 143 when ``irqlab sweep`` is stopped by
  SIGTERM (its finished points are kept).

Never a traceback. Warnings about a result that is not what it seems (``irqlab
run`` when no request completed) are lines ``irqlab: warning: <sentence>`` on
stderr; they do not change the status.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Callable, Optional

from irqlab._core import PolicyError, ScenarioError, __version__
from irqlab.policy import PolicyLoadError
from irqlab.bench import DEFAULT_SCENARIO, bench
from irqlab.cli_common import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OS,
    EXIT_USAGE,
    OutputError,
    Parser,
    UsageError,
    add_duration,
    add_json,
    add_profile,
    can_encode,
    check_set_flags,
    discard_stdout,
    duration_flag,
    flush_stdout,
    os_error_sentence,
    positive_int,
    say,
    say_warning,
    seed_flag,
    write_stdout,
)
from irqlab.linux.cli import add_linux_parser
from irqlab.loadgen_cli import add_loadgen_parser
from irqlab.reproduce.cli import ReproduceUsageError, add_reproduce_parser
from irqlab.study.cli import SweepUsageError, add_study_parsers
from irqlab.study.report_cli import add_plot_report_parsers
from irqlab.testbed.cli import TestbedUsageError, add_testbed_parser
from irqlab.tune import TuneUsageError, add_tune_parser
from irqlab.profiles import PROFILES, profile_knobs
from irqlab.run import load_scenario, run
from irqlab.scenario import Scenario
from irqlab.text import NULL, bench_table, profiles_table, summary_table

def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    try:
        try:
            args = build_parser().parse_args(argv)
            handler: Callable[[argparse.Namespace], int] = args.handler
            status = handler(args)
        finally:
            # Flush here, not at interpreter exit, so that a full disk is
            # reported as an error line instead of "Exception ignored"
            # (also after --help and --version, which exit through SystemExit).
            flush_stdout()
        return status
    except (UsageError, ScenarioError, ReproduceUsageError, TestbedUsageError, SweepUsageError, TuneUsageError) as e:
        say("error", str(e))
        return EXIT_USAGE
    except (PolicyError, PolicyLoadError) as e:
        # The user's policy failed or named nothing: one sentence, like a
        # bad scenario (the policy's own traceback is the exception's cause,
        # for the Python API).
        say("error", str(e))
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        from irqlab.study.cli import EXIT_TERMINATED, Terminated

        # SIGTERM turned into an exception so that clean-up ran: 128 + 15, as a shell reports it.
        return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); silence the flush at exit.
        discard_stdout()
        return EXIT_OS
    except OutputError as e:
        discard_stdout()
        say("error", f"cannot write to standard output: {e.strerror or e}")
        return EXIT_OS
    except OSError as e:
        say("error", os_error_sentence(e))
        # What is still buffered for stdout must not fail again at exit.
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            discard_stdout()
        return EXIT_OS
    except RuntimeError as e:
        say("internal error", str(e))
        return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    add_profile(p)
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one scenario field, e.g. --set load.qps=300000 (repeatable; applied after the profile)",
    )
    p.add_argument("--seed", metavar="N", help="random seed, a non-negative integer (run.seed)")
    add_duration(p)
    p.add_argument(
        "--policy",
        metavar="FILE.py:CLASS",
        help="call your own policy (a class in a Python file, see irqlab.policy) at its period_us of simulated time; "
        "its knob settings apply from then on and the summary's policy field records them",
    )
    add_json(p, "print the summary as one JSON object")
    p.set_defaults(handler=_cmd_run)

    p = commands.add_parser(
        "profiles",
        help="list the profiles and the knobs each sets",
        description="List the interrupt-handling profiles and the knobs each one sets.",
        allow_abbrev=False,
    )
    add_json(p, "print {profile: {knob: value}} as one JSON object")
    p.set_defaults(handler=_cmd_profiles)

    p = commands.add_parser(
        "knobs",
        help="list every interrupt-handling knob: names, unit, ranges, default, source",
        description="List the interrupt-handling knobs as crates/irqlab-knobs declares them once: the scenario "
        "field, the kernel's or ethtool's name, the unit, the range the kernel and the simulator accept, the "
        "default, and the kernel source of the range (the README's tables are this command's output).",
        allow_abbrev=False,
    )
    fmt = p.add_mutually_exclusive_group()
    add_json(fmt, "print the table as one JSON list of knobs")
    fmt.add_argument("--markdown", action="store_true", help="print the tables as Markdown (what a pipe or a "
                     "file gets; without it a terminal gets them rendered)")
    p.set_defaults(handler=_cmd_knobs)

    p = commands.add_parser(
        "bench",
        help="measure the simulator's speed (simulated events per wall second)",
        description="Run a scenario several times and report simulated events per wall-clock second.",
        allow_abbrev=False,
    )
    p.add_argument(
        "scenario", metavar="SCENARIO", nargs="?", help=f"scenario file (TOML; default {DEFAULT_SCENARIO})"
    )
    add_profile(p)
    add_duration(p)
    p.add_argument("--repeat", metavar="N", default="3", help="number of runs (default 3)")
    p.add_argument(
        "--sweep",
        action="store_true",
        help="instead, time a 100-point sweep of the scenario (0.1 s each; --duration to change) "
        "with --jobs 1, with every core in threads and in processes",
    )
    p.add_argument("--jobs", metavar="N", help="with --sweep: parallel runs (default every core)")
    p.add_argument(
        "--scale",
        action="store_true",
        help="instead, wall ns per simulated event at 8, 32, 128 and 512 application cores (96 connections "
        "each) under busy-wait and no-coalescing, and busy-wait's events per request at 10, 50 and 100 %% load",
    )
    p.add_argument("--cores", metavar="N,N,...", help="with --scale: the core counts (default 8,32,128,512)")
    add_json(p, "print the result as one JSON object")
    p.set_defaults(handler=_cmd_bench)
    add_loadgen_parser(commands)
    add_study_parsers(commands)
    add_plot_report_parsers(commands)
    add_tune_parser(commands)
    add_reproduce_parser(commands)
    add_linux_parser(commands)
    add_testbed_parser(commands)
    return parser


# -- commands ---------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    seed = seed_flag(args.seed)
    duration_s = duration_flag(args.duration)
    check_set_flags(args.overrides, seed, duration_s)
    scenario = load_scenario(args.scenario)  # a study file is pointed to irqlab sweep
    policy = None
    if args.policy is not None:
        from irqlab.policy import load_policy

        policy = load_policy(args.policy)
    summary = run(scenario, profile=args.profile, overrides=args.overrides, seed=seed, duration_s=duration_s, policy=policy)
    if args.json:
        write_stdout(summary.to_json())
    else:
        write_stdout(summary_table(summary, ascii_only=not can_encode(sys.stdout, NULL)))
    # After the summary, so that they are the last thing a terminal shows.
    flush_stdout()
    for warning in summary.warnings:
        say_warning(warning)
    return EXIT_OK


def _cmd_profiles(args: argparse.Namespace) -> int:
    knobs = profile_knobs()
    if args.json:
        write_stdout(json.dumps(knobs))
    else:
        write_stdout(f"{len(PROFILES)} profiles; the knobs they set (scenario units: rx-usecs and busy_poll_usecs in us,")
        write_stdout("gro_flush_timeout and irq_suspend_timeout in ns):")
        write_stdout("")
        write_stdout(profiles_table(knobs))
    return EXIT_OK


def _cmd_knobs(args: argparse.Namespace) -> int:
    from irqlab import knobs

    if args.json:
        write_stdout(json.dumps(knobs.knobs()))
        return EXIT_OK
    if args.markdown or not sys.stdout.isatty():
        text = knobs.markdown()
    else:
        # A terminal gets the tables rendered, not Markdown's pipes and escapes.
        import os
        import shutil

        text = knobs.for_terminal(shutil.get_terminal_size().columns, color="NO_COLOR" not in os.environ)
    # An ASCII stream (LANG=C, PYTHONIOENCODING=ascii) gets "us" for "µs".
    write_stdout((text if can_encode(sys.stdout, text) else knobs.ascii_text(text)).rstrip("\n"))
    return EXIT_OK


#: `irqlab bench --repeat`: a benchmark's best and median need a handful of
#: runs; a thousand is already hours at the longest durations.
BENCH_REPEAT_MAX = 1000
#: `irqlab bench --sweep --jobs`: worker threads, far above any machine's cores.
BENCH_JOBS_MAX = 4096


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.sweep and args.scale:
        raise UsageError("--sweep and --scale are two different benchmarks: give one")
    if args.scale:
        return _cmd_bench_scale(args)
    if args.cores is not None:
        raise UsageError("--cores is for --scale")
    if args.sweep:
        return _cmd_bench_sweep(args)
    if args.jobs is not None:
        raise UsageError("--jobs is for --sweep")
    duration_s = duration_flag(args.duration)
    repeat = positive_int(args.repeat, "--repeat", BENCH_REPEAT_MAX)
    result = bench(args.scenario, profile=args.profile, duration_s=duration_s, repeat=repeat)
    write_stdout(json.dumps(result.to_dict()) if args.json else bench_table(result))
    return EXIT_OK


def _cmd_bench_scale(args: argparse.Namespace) -> int:
    from irqlab.bench import default_scenario
    from irqlab.bench_scale import SCALE_PROFILES, bench_load, bench_scale, cores_flag, scale_json
    from irqlab.text import scale_table

    if args.jobs is not None:
        raise UsageError("--jobs is for --sweep: --scale runs one simulation at a time, so that runs do not share a core")
    if args.duration is not None:
        raise UsageError("--duration is not for --scale: each run's simulated time is sized to about the same number of events")
    cores = cores_flag(args.cores)
    repeat = positive_int(args.repeat, "--repeat", BENCH_REPEAT_MAX)
    scenario = Scenario.load(args.scenario or default_scenario())
    profiles = (scenario.with_profile(args.profile).profile,) if args.profile is not None else SCALE_PROFILES
    rows = bench_scale(scenario, cores=cores, profiles=profiles, repeat=repeat)
    loads = bench_load(scenario)
    write_stdout(json.dumps(scale_json(rows, loads)) if args.json else scale_table(rows, loads))
    return EXIT_OK


def _cmd_bench_sweep(args: argparse.Namespace) -> int:
    from irqlab.bench import default_scenario
    from irqlab.study.bench import bench_sweep, bench_sweep_table

    if args.profile is not None:
        raise UsageError("--profile is not for --sweep: the benchmark sweep runs the thesis's four profiles")
    duration_s = duration_flag(args.duration) or 0.1
    jobs = positive_int(args.jobs, "--jobs", BENCH_JOBS_MAX) if args.jobs is not None else None
    scenario = Scenario.load(args.scenario or default_scenario())
    rows = bench_sweep(scenario, duration_s=duration_s, jobs=jobs)
    if args.json:
        base = rows[0].points_per_s
        write_stdout(
            json.dumps(
                [
                    {"executor": r.executor, "jobs": r.jobs, "points": r.points, "wall_s": r.wall_s,
                     "points_per_s": r.points_per_s, "speedup": r.points_per_s / base}
                    for r in rows
                ]
            )
        )
    else:
        write_stdout(bench_sweep_table(rows))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
