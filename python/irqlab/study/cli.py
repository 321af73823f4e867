"""``irqlab sweep``, ``irqlab results``, ``irqlab plot`` and ``irqlab report``."""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import Any, Iterator, Optional

from contextlib import contextmanager

from irqlab.flags import seconds, whole_number

#: Exit status when some points of a sweep failed (the others are stored).
EXIT_POINTS_FAILED = 3
#: Exit status after SIGTERM (128 + 15), as a shell reports it.
EXIT_TERMINATED = 143


class SweepUsageError(ValueError):
    """A bad flag or study; one sentence; exit status 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that the same code
    keeps the finished points."""


def add_study_parsers(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    s = commands.add_parser(
        "sweep",
        help="run a grid of scenarios (profiles × knobs × seeds) into a results directory",
        description=(
            "Run the cross product of profiles, grid axes and seeds of a scenario, or a study file, "
            "on every core or a Dask cluster. Finished points are kept; re-running the same command "
            "runs only what is missing."
        ),
        allow_abbrev=False,
    )
    s.add_argument("source", metavar="SCENARIO|STUDY", help="a scenario file, or a study file (TOML with a [study] table)")
    s.add_argument("--profile", metavar="P[,P...]", help="profiles to sweep (default: the scenario's run.profile)")
    s.add_argument(
        "--grid",
        metavar="FIELD=VALUES",
        action="append",
        default=[],
        help="an axis: FIELD=a,b,c or FIELD=start:stop:step (stop included) or FIELD=log:start:stop:n; repeatable",
    )
    s.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], help="override a field for every point; repeatable")
    s.add_argument("--seeds", metavar="N", help="replicates per point, each with its own derived seed (default 1)")
    s.add_argument("--seed", metavar="N", help="base seed the points' seeds are derived from (default 1)")
    s.add_argument("--duration", metavar="S", help="simulated seconds per run (run.duration_s)")
    s.add_argument("--name", metavar="NAME", help="the study's name (default: the file's name)")
    s.add_argument("--out", metavar="DIR", help="results directory (default results/NAME)")
    s.add_argument("--jobs", metavar="N", help="parallel runs on this machine (default: every core)")
    s.add_argument("--executor", choices=("local", "dask"), default="local", help="where points run (default local)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="the Dask scheduler, e.g. tcp://10.0.0.1:8786 (with --executor dask)")
    s.add_argument(
        "--connect-timeout",
        metavar="S",
        help="seconds to wait for the Dask scheduler before giving up (with --executor dask; default 30)",
    )
    s.add_argument("--yes", action="store_true", help="run grids of more than 100,000 points")
    s.add_argument("--quiet", action="store_true", help="no progress bar: a line per tenth of the points")
    s.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    s.set_defaults(handler=_cmd_sweep)

    r = commands.add_parser(
        "results",
        help="show or query a sweep's results (pandas aggregation or DuckDB SQL)",
        description=(
            "Without --sql: the mean and 95 %% confidence interval over seeds of a few metrics per profile "
            'and axis value. With --sql: a DuckDB query over the view results (quote dotted columns: "latency_us.p99").'
        ),
        allow_abbrev=False,
    )
    r.add_argument("directory", metavar="DIR")
    r.add_argument("--sql", metavar="QUERY", help='e.g. SELECT profile, avg("latency_us.p99") FROM results GROUP BY profile')
    r.add_argument("--metric", metavar="COLUMN", action="append", help="metrics to aggregate (repeatable; default QPS, p99, CPU busy)")
    r.add_argument("--format", choices=("text", "csv", "json"), default="text",
                   help="output format (default text: numbers rounded for reading; csv and json keep every digit)")
    r.add_argument("--max-rows", metavar="N", help="with --sql: the most rows the query may return (default 10,000)")
    r.add_argument("--timeout", metavar="S", help="with --sql: the seconds the query may run (default 60)")
    r.set_defaults(handler=_cmd_results)


# -- sweep ---------------------------------------------------------------------


def _int(text: Optional[str], flag: str, low: int, high: int) -> Optional[int]:
    return whole_number(text, flag, low, high, SweepUsageError)


def _seconds(text: Optional[str], flag: str, most: Optional[float] = None) -> Optional[float]:
    return seconds(text, flag, SweepUsageError, most=most)


def study_from_args(args: argparse.Namespace) -> Any:
    """The study a ``sweep`` command line describes (validated; nothing run)."""
    from irqlab.flags import check_overrides, override_key, overlaps
    from irqlab.run import MAX_SEED
    from irqlab.scenario import Scenario, read_scenario_file
    from irqlab.study.axis import AxisError, parse_grid_flag
    from irqlab.study.spec import build_study, is_study_file, load_study_file

    source = args.source
    text = read_scenario_file(source)
    try:
        axes = [parse_grid_flag(g) for g in args.grid]
    except AxisError as e:
        raise SweepUsageError(f"--grid: {e}") from None
    profiles = None
    if args.profile is not None:
        profiles = [p.strip() for p in args.profile.split(",")]
        if any(not p for p in profiles):
            raise SweepUsageError(f"--profile must be profile names separated by single commas (got {args.profile!r})")
    seeds = _int(args.seeds, "--seeds", 1, 10_000)
    seed = _int(args.seed, "--seed", 0, MAX_SEED)
    # At most the core's bound on run.duration_s, or every point would fail on it.
    duration = _seconds(args.duration, "--duration", most=3600)
    # Two flags setting one field: one would silently win.
    by_flag = {a.field: f"--grid {a.field}" for a in axes}
    if duration is not None:
        by_flag["run.duration_s"] = "--duration"
    check_overrides(list(args.set), "--set", SweepUsageError, by_flag)
    if is_study_file(text):
        spec = load_study_file(source)
        # Flags given with a study file replace its values; a --grid axis
        # replaces the study's axis of the same field or is added after them.
        # A flag replacing a value of the other kind (--grid over [set],
        # --set over an axis) is said, since the study file reads otherwise.
        flagged = {**by_flag, **{override_key(p): f"--set {override_key(p)}" for p in args.set}}

        def replaced(field: str, what: str) -> bool:
            for f, flag in flagged.items():
                if overlaps(field, f) and not (what == "axis" and flag.startswith("--grid")):
                    _say(f"{flag} replaces the study's {what} {field} ({source})")
                    return True
            return False

        by_field = {a.field: a for a in spec["axes"] if not replaced(a.field, "axis")}
        for axis in axes:
            by_field[axis.field] = axis
        spec["axes"] = list(by_field.values())
        kept = [p for p in spec["overrides"] if not replaced(override_key(p), "[set]")]
        spec["overrides"] = kept + list(args.set)
        spec["where"] = f"{spec['where']} or --grid"
    else:
        scenario = Scenario.load(source)
        spec = {
            "scenario": scenario,
            "name": Path(source).stem,
            "axes": axes,
            "overrides": list(args.set),
            "where": "--grid",
        }
    for key, value in (("profiles", profiles), ("seeds", seeds), ("seed", seed), ("duration_s", duration), ("name", args.name)):
        if value is not None:
            spec[key] = value
    scenario = spec.pop("scenario")
    if spec["overrides"]:
        # Checked here so that the message names the override.
        scenario.with_overrides(list(spec["overrides"]))
    # Every axis value the scenario takes on its own, before anything runs.
    return build_study(scenario, **spec, check_values=True)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread."""

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from irqlab.cli_common import write_stdout
    from irqlab.files import check_name, check_output_dir
    from irqlab.study.executor import DaskExecutor, ExecutorError, ThreadExecutor
    from irqlab.study.spec import StudyError
    from irqlab.study.sweep import check_size, sweep

    jobs = _int(args.jobs, "--jobs", 1, 4096)
    if args.executor == "dask":
        if not args.scheduler:
            raise SweepUsageError("--executor dask needs --scheduler ADDRESS (e.g. tcp://10.0.0.1:8786)")
        if args.jobs is not None:
            raise SweepUsageError("--jobs is for --executor local; a Dask cluster runs as many points as it has worker threads")
    elif args.scheduler:
        raise SweepUsageError("--scheduler is for --executor dask")
    elif args.connect_timeout is not None:
        raise SweepUsageError("--connect-timeout is for --executor dask")
    connect_timeout = _seconds(args.connect_timeout, "--connect-timeout") or 30.0
    check_name(args.name, "--name", SweepUsageError)
    try:
        study = study_from_args(args)
        check_size(study, args.yes)
    except StudyError as e:
        raise SweepUsageError(str(e)) from None
    if args.out is not None:
        out = check_output_dir(args.out, "--out", SweepUsageError)
    else:
        # The default, results/NAME, is the one place a sweep creates a
        # parent directory (results/): the name must stay inside it.
        check_name(study.name, "the study's name (the default --out is results/NAME)", SweepUsageError)
        out = check_output_dir(Path("results") / study.name, "", SweepUsageError, parents=True)
    try:
        executor = DaskExecutor(args.scheduler, connect_timeout) if args.executor == "dask" else ThreadExecutor(jobs)
    except ExecutorError as e:
        raise SweepUsageError(str(e)) from None
    interrupted: Optional[BaseException] = None
    try:
        with sigterm_as_interrupt():
            try:
                result = sweep(study, out, executor=executor, yes=args.yes, quiet=args.quiet)
            except StudyError as e:
                raise SweepUsageError(str(e)) from None
    except KeyboardInterrupt as e:
        interrupted = e
    finally:
        if isinstance(executor, DaskExecutor):
            executor.close()
    if interrupted is not None:
        _say(f"sweep {study.name} interrupted; the finished points are in {out}/; run the same command again to finish it")
        return EXIT_TERMINATED if isinstance(interrupted, Terminated) else 130
    for warning in result.warnings:
        _say(warning)
    if args.json:
        write_stdout(
            json.dumps(
                {
                    "name": study.name,
                    "directory": str(result.directory),
                    "results": str(result.results),
                    "points": result.total,
                    "ran": result.ran,
                    "already_done": result.skipped,
                    "failed": [
                        {"point": f.point, "replicate": f.replicate, "what": f.what, "error": f.error}
                        for f in result.failures
                    ],
                    "wall_s": result.wall_s,
                    "points_per_s": result.rate,
                    "executor": result.executor,
                }
            )
        )
    else:
        shape = " × ".join(
            [f"{len(study.profiles)} profile{'s' if len(study.profiles) != 1 else ''}"]
            + [f"{len(a.values)} {a.field}" for a in study.axes]
            + [f"{study.seeds} seed{'s' if study.seeds != 1 else ''}"]
        )
        write_stdout(f"sweep {study.name}: {result.total} points ({shape}) on {result.executor}")
        write_stdout(
            f"ran {result.ran} in {result.wall_s:.1f} s ({result.rate:.1f} points/s), "
            f"{result.skipped} already done, {len(result.failures)} failed"
        )
        write_stdout(f"results: {result.results}")
        write_stdout(f"next: irqlab report {result.directory}   or   irqlab results {result.directory}")
    if result.failures:
        listed = "; ".join(f"#{f.point} ({f.what}): {f.error}" for f in result.failures[:5])
        more = f"; and {len(result.failures) - 5} more" if len(result.failures) > 5 else ""
        what = f"{len(result.failures)} of {result.total} points failed"
        if len(result.failures) >= result.total:
            what += " (none succeeded: the results hold nothing to show)"
        _say(f"{what}: {listed}{more}", kind="error")
        return EXIT_POINTS_FAILED
    return 0


def _say(message: str, kind: str = "warning") -> None:
    from irqlab.cli_common import say

    say(kind, message)


# -- results -------------------------------------------------------------------

DEFAULT_METRICS = ("throughput_qps", "latency_us.p99", "cpu_pct.busy")


def _cmd_results(args: argparse.Namespace) -> int:
    from irqlab.cli_common import write_stdout
    from irqlab.results import ResultsError, aggregate, axes_of, check_metrics, load, sql, succeeded

    if args.sql is not None and args.metric:
        raise SweepUsageError("--metric is for the aggregation; with --sql the query chooses the columns")
    from irqlab.results import SQL_MAX_ROWS, SQL_TIMEOUT_S

    for flag, value in (("--max-rows", args.max_rows), ("--timeout", args.timeout)):
        if value is not None and args.sql is None:
            raise SweepUsageError(f"{flag} is for --sql (a query's cap); the aggregation is always small")
    max_rows = _int(args.max_rows, "--max-rows", 1, 1_000_000_000) or SQL_MAX_ROWS
    timeout_s = _seconds(args.timeout, "--timeout", most=86_400) or SQL_TIMEOUT_S
    metrics: list[str] = []
    try:
        if args.sql is not None:
            frame = sql(args.directory, args.sql, max_rows=max_rows, timeout_s=timeout_s)
        else:
            loaded = load(args.directory)
            # An empty table would read as "no data" and exit 0; say why instead.
            if len(loaded) == 0:
                raise ResultsError(f"{args.directory} holds no finished run yet; run irqlab sweep to completion first")
            if succeeded(loaded).empty:
                raise ResultsError(
                    f"every run in {args.directory} failed ({len(loaded)} runs), so there is nothing to aggregate; "
                    f"irqlab report {args.directory} lists the errors"
                )
            metrics = args.metric or [m for m in DEFAULT_METRICS if m in loaded.columns]
            check_metrics(loaded, metrics, ["profile", *axes_of(loaded)], what="--metric")
            frame = aggregate(loaded, metrics=metrics)
    except ResultsError as e:
        raise SweepUsageError(str(e)) from None
    if args.format == "csv":
        write_stdout(frame.to_csv(index=False).rstrip("\n"))
    elif args.format == "json":
        from irqlab.results import json_records

        write_stdout(json_records(frame))
    else:
        import sys

        from irqlab.cli_common import can_encode
        from irqlab.results_text import aggregate_table, frame_table, raised_note

        ascii_only = not can_encode(sys.stdout, "\u00b5\u2014")
        if args.sql is not None:
            write_stdout(frame_table(frame, ascii_only=ascii_only))
        else:
            by = [c for c in ["profile", *axes_of(loaded)] if c in frame.columns]
            write_stdout(aggregate_table(frame, by, metrics, ascii_only=ascii_only))
            note = raised_note(frame, metrics)
            if note is not None:
                write_stdout("\n" + note)
    return 0
