"""A sweep's results: one row per run, as pandas, aggregated over seeds, or
through DuckDB.

The columns of ``DIR/results.parquet``, in order:

- ``point`` (position in the grid), ``replicate``, ``profile``;
- one column per axis, named by its field (``load.qps``), with the value the
  run used;
- ``seed`` (derived from the study's seed and the point), ``duration_s``;
- ``error``: null, or the sentence that made the run fail (its summary
  columns are then null);
- every summary field, flattened: ``throughput_qps``, ``latency_us.p99``,
  ``cpu_pct.user``, ``drops_by_site.ring``, ``warnings`` (a list),
  ``dim.rx.time_share_pct.4``, …; a field that is a list of objects
  (:data:`JSON_TEXT`: DIM's profile table and per-queue figures) is one
  column of JSON text,
  and a field that is null in some runs and an object in others (``dim``,
  ``dim.rx``, ``irq_cores_cpu_pct``) has a column of its own beside those of
  its members;
- provenance: ``wall_s`` (the engine's), ``wall_time_s`` (the whole run
  call), ``irqlab_version``, ``git_commit``.

:func:`load` adds ``cpu_pct.busy`` (100 − ``cpu_pct.idle``), the CPU
utilisation the papers plot. Rows are sorted by point and replicate, so the
same sweep gives the same rows whatever order its runs finished in; only the
provenance columns (:data:`PROVENANCE`) differ between two sweeps.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from irqlab.summary import Summary, flatten

if TYPE_CHECKING:
    import pandas

#: Columns that say how a row was produced rather than what was simulated.
PROVENANCE = ("wall_s", "wall_time_s", "irqlab_version", "git_commit")

#: Columns every row has before the axes, and between the axes and the summary.
LEADING = ("point", "replicate", "profile")
MIDDLE = ("seed", "duration_s", "error")

#: Summary fields that repeat a leading column.
_DUPLICATES = ("profile", "seed")

#: Summary fields stored as JSON text (lists of objects), decoded by :func:`summary`.
JSON_TEXT = ("dim.rx.profiles", "dim.rx.queues", "dim.tx.profiles", "dim.tx.queues")


class ResultsError(ValueError):
    """A results directory that cannot be read; the message is one sentence."""


# -- writing ----------------------------------------------------------------------


def rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Journal records as flat rows, sorted by point and replicate."""
    out = []
    for r in sorted(records, key=lambda r: (r["point"], r["replicate"])):
        row: dict[str, Any] = {"point": r["point"], "replicate": r["replicate"], "profile": r["profile"]}
        for f, v in r["knobs"]:
            row[f] = v
        row["seed"] = r["seed"]
        row["duration_s"] = r["duration_s"]
        row["error"] = r["error"]
        if r.get("summary"):
            for k, v in flatten(r["summary"]).items():
                if k not in _DUPLICATES:
                    row[k] = v
        for k in PROVENANCE[1:]:
            row[k] = r.get(k)
        out.append(row)
    return out


def write_parquet(records: Sequence[dict[str, Any]], target: Path, metadata: Optional[dict[str, str]] = None) -> None:
    """Write ``records`` as one Parquet file, atomically (a reader sees the old or the new file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from irqlab.files import write_whole

    table = _table(rows(records), pa)
    meta = dict(table.schema.metadata or {})
    for k, v in (metadata or {}).items():
        meta[f"irqlab.{k}".encode()] = v.encode()
    table = table.replace_schema_metadata(meta)
    write_whole(target, lambda tmp: pq.write_table(table, tmp))


def write_directory(out: Path, *, name: str, fingerprint: str, axes: Sequence[str], records: Sequence[dict[str, Any]],
                    study_toml: str, scenario_text: Optional[str] = None) -> Path:
    """Write ``records`` (journal records, as a sweep writes them) as a whole
    results directory that :func:`load` and ``irqlab report`` read: its
    manifest, ``study.toml`` (a description and ``[[plot]]`` tables), the
    journal and the Parquet file, for results measured rather than swept
    (the testbed, a tuner). ``out`` is created; earlier files are replaced."""
    import time

    from irqlab.files import write_text_whole
    from irqlab.study.layout import JOURNAL, MANIFEST, RESULTS, SCENARIO, STUDY

    out.mkdir(parents=True, exist_ok=True)
    manifest = {"format": 1, "name": name, "fingerprint": fingerprint, "points": len({r["key"] for r in records}),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "axes": list(axes)}
    write_text_whole(out / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    write_text_whole(out / STUDY, study_toml)
    if scenario_text is not None:
        write_text_whole(out / SCENARIO, scenario_text)
    write_text_whole(out / JOURNAL, "".join(json.dumps(r, allow_nan=True) + "\n" for r in records))
    write_parquet(records, out / RESULTS, {"name": name, "fingerprint": fingerprint})
    return out


def _table(flat_rows: list[dict[str, Any]], pa: Any) -> Any:
    seen: dict[str, None] = {}
    for row in flat_rows:
        for k in row:
            seen.setdefault(k, None)
    # In the documented order whatever the first row is: a failed run has no
    # summary columns, and they must not land after the provenance.
    # rows() puts a run's axis values between the leading columns and seed.
    first = list(flat_rows[0]) if flat_rows else []
    axes = first[len(LEADING) : first.index(MIDDLE[0])] if first else []
    tail = [c for c in PROVENANCE[1:] if c in seen]
    fixed = {*LEADING, *axes, *MIDDLE, *tail}
    names = [*LEADING, *axes, *[c for c in MIDDLE if c in seen], *[c for c in seen if c not in fixed], *tail]
    arrays = []
    for name in names:
        values = [row.get(name) for row in flat_rows]
        arrays.append(_array(name, values, pa))
    return pa.Table.from_arrays(arrays, names=names)


def _array(name: str, values: list[Any], pa: Any) -> Any:
    if name == "warnings":
        return pa.array([list(v) if v is not None else None for v in values], type=pa.list_(pa.string()))
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int, float} and float in kinds:
        values = [None if v is None else float(v) for v in values]
    elif len(kinds) > 1:
        # An axis mixing types (4, "auto"): kept as text so that it is one column.
        values = [None if v is None else str(v) for v in values]
    elif kinds == {dict} or kinds == {list}:
        values = [None if v is None else json.dumps(v) for v in values]
    return pa.array(values)


# -- reading -----------------------------------------------------------------------


def load(directory: str | os.PathLike[str]) -> "pandas.DataFrame":
    """The results of the sweep in ``directory`` as a DataFrame (a row per
    run; see the module for the columns). ``df.attrs`` holds ``axes`` (the
    axis fields, in order), ``name`` and ``directory``.

    A sweep that was killed before it could write ``results.parquet`` (a
    crash) is read from its journal.
    """
    from irqlab.study.layout import JOURNAL, MANIFEST, RESULTS, read_journal

    d = Path(directory)
    manifest_path = d / MANIFEST
    if not manifest_path.is_file():
        raise ResultsError(f"{d} holds no sweep results (no {MANIFEST}); give a directory written by irqlab sweep")
    # After the check: a wrong directory is said without loading pandas.
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as e:
        raise ResultsError(f"{manifest_path} cannot be read: {e}") from None
    if not isinstance(manifest, dict):
        raise ResultsError(f"{manifest_path} is not a sweep's manifest (a JSON object); the directory is damaged")
    axes, name = manifest.get("axes", []), manifest.get("name", d.name)
    if not (isinstance(axes, list) and all(isinstance(a, str) for a in axes) and isinstance(name, str)):
        raise ResultsError(f"{manifest_path} is damaged: its name must be text and its axes a list of field names")
    from irqlab.study.layout import check_format
    from irqlab.study.spec import StudyError

    try:
        check_format(manifest, manifest_path)  # another format is refused, not misread
    except StudyError as e:
        raise ResultsError(str(e)) from None
    parquet, journal = d / RESULTS, d / JOURNAL
    if parquet.is_file() and (not journal.is_file() or parquet.stat().st_mtime_ns >= journal.stat().st_mtime_ns):
        try:
            frame = pq.read_table(parquet).to_pandas()
        except (pa.ArrowException, OSError) as e:
            # A truncated or overwritten file: say which, not pyarrow's traceback.
            reason = " ".join(str(e).split()) or type(e).__name__
            raise ResultsError(f"{parquet} cannot be read as Parquet ({reason}); the directory is damaged; "
                               f"run the sweep again into a new --out") from None
    else:
        from irqlab.study.spec import StudyError

        try:
            latest = {r["key"]: r for r in read_journal(d)}
            frame = _table(rows(latest.values()), pa).to_pandas() if latest else pd.DataFrame(columns=list(LEADING))
        except StudyError as e:
            raise ResultsError(str(e)) from None
        except (KeyError, TypeError, ValueError, pa.ArrowException) as e:
            raise ResultsError(f"{journal} holds a record that is not a finished run ({type(e).__name__}: {e}); "
                               "the directory is damaged") from None
    if "cpu_pct.idle" in frame.columns:
        at = frame.columns.get_loc("cpu_pct.idle") + 1
        frame.insert(at, "cpu_pct.busy", 100.0 - frame["cpu_pct.idle"])
    frame.attrs["axes"] = list(axes)
    frame.attrs["name"] = name
    frame.attrs["directory"] = str(d)
    return frame


def axes_of(frame: "pandas.DataFrame") -> list[str]:
    """The axis columns of a loaded frame."""
    return [a for a in frame.attrs.get("axes", []) if a in frame.columns]


def succeeded(frame: "pandas.DataFrame") -> "pandas.DataFrame":
    """The rows of runs that did not fail."""
    if "error" not in frame.columns:
        return frame
    return frame[frame["error"].isna()]


def summary(row: Any, axes: Optional[Sequence[str]] = None) -> Summary:
    """A row (a mapping or a pandas Series) back as a :class:`Summary`, for
    code written against summaries (e.g. a paper's claim checks). NaN becomes
    ``None`` (no latency); columns other than the summary's are left out.

    The axis columns are found in a Series's ``attrs`` (a row of
    :func:`load`'s frame); give ``axes`` for a plain mapping. The columns
    of :data:`JSON_TEXT` are decoded; a field that has a column of its own
    beside its members' (``dim.rx``, null in some runs) is null when it and
    all its members are."""
    data: dict[str, Any] = {}
    null_parents: list[list[str]] = []
    if axes is None:
        axes = (getattr(row, "attrs", None) or {}).get("axes", ())
    items = row.items() if hasattr(row, "items") else row
    skip = set(LEADING[:2]) | set(MIDDLE[1:]) | {"cpu_pct.busy", "wall_time_s", "irqlab_version", "git_commit"}
    skip |= set(axes)
    for key, value in items:
        if key in skip:
            continue
        if hasattr(value, "item") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 0) == 0:
            value = value.item()
        if isinstance(value, float) and math.isnan(value):
            value = None
        if hasattr(value, "tolist"):
            value = value.tolist()
        if key in JSON_TEXT and isinstance(value, str):
            value = json.loads(value)
        node = data
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1], start=1):
            child = node.get(part)
            if not isinstance(child, dict):
                if child is None and part in node:
                    null_parents.append(parts[:depth])
                child = node[part] = {}
            node = child
        if value is None and isinstance(node.get(parts[-1]), dict):
            null_parents.append(parts)
            continue
        node[parts[-1]] = value
    # Deepest first, so that `dim` sees `dim.rx` already collapsed.
    for path in sorted(null_parents, key=len, reverse=True):
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        if _all_none(parent[path[-1]]):
            parent[path[-1]] = None
    return Summary(data)


def _all_none(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_all_none(v) for v in value.values())
    return value is None


def aggregate(
    frame: "pandas.DataFrame",
    metrics: Optional[Sequence[str]] = None,
    by: Optional[Sequence[str]] = None,
    confidence: float = 0.95,
) -> "pandas.DataFrame":
    """Mean over seeds and a Student-t confidence interval, per group.

    ``by`` defaults to ``profile`` and the axes; ``metrics`` to every numeric
    summary column. For each metric M the result has ``M.mean``, ``M.ci_low``
    and ``M.ci_high`` (NaN with a single seed), and ``n`` counts the runs
    that did not fail in each group. Failed runs are left out.

    The interval of a metric that cannot be negative starts at 0 at the
    least (:func:`_clip_at_zero`); ``result.attrs["ci_low_raised"]`` maps
    each metric whose lower bound was raised to the number of groups.
    """
    import numpy as np
    import pandas as pd
    from scipy import stats

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 exclusive (got {confidence!r})")
    groups = list(by) if by is not None else ["profile", *axes_of(frame)]
    ok = succeeded(frame)
    if metrics is None:
        exclude = set(LEADING) | set(MIDDLE) | set(PROVENANCE) | set(groups)
        metrics = [c for c in ok.columns if c not in exclude and pd.api.types.is_numeric_dtype(ok[c])]
    missing = [m for m in [*groups, *metrics] if m not in frame.columns]
    if missing:
        raise ResultsError(f"no column {missing[0]!r} in the results; columns are {', '.join(map(str, frame.columns))}")
    check_metrics(frame, metrics, groups)
    grouped = ok.groupby(groups, sort=False, dropna=False)
    columns: dict[str, Any] = {"n": grouped.size()}
    raised: dict[str, int] = {}
    for m in metrics:
        g = grouped[m]
        mean, sd, n = g.mean(), g.std(ddof=1), g.count()
        q = stats.t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 1))
        half = np.where(n > 1, q * sd / np.sqrt(n), np.nan)
        low = mean - half
        if _clip_at_zero(ok[m]):
            below = low < 0
            if below.any():
                raised[m] = int(below.sum())
                low = low.clip(lower=0.0)
        columns[f"{m}.mean"] = mean
        columns[f"{m}.ci_low"] = low
        columns[f"{m}.ci_high"] = mean + half
    # One concat rather than a column at a time: DIM's per-profile columns
    # make enough metrics for pandas to warn about a fragmented frame.
    out = pd.concat(columns, axis=1).reset_index()
    out.attrs["ci_low_raised"] = raised
    return out


def _clip_at_zero(values: "pandas.Series") -> bool:
    """Whether the interval of the metric ``values`` hold starts at 0 at the
    least: every value is a number and none is negative.

    Why clip rather than another interval (issue 62, item 12): with 2 seeds
    the Student t interval is mean ± 12.7 × sd / √2, and for a throughput
    whose two runs differ by a fifth its lower bound is below 0, which no
    throughput can be. Every field of the summary (``irqlab_core::Summary``
    in crates/irqlab-core/src/stats/summary.rs) is a count, a rate, a time
    or a share, so its true mean is at least 0; the part of the interval
    below 0 holds no possible mean, and [max(low, 0), high] contains the true
    mean whenever [low, high] does: the same 95 % coverage, no narrower
    than the data allow. The interval stays wide with few seeds, as it
    should (2 seeds say little); ``irqlab results`` says when a bound was
    raised. A log-scale interval would speak of the geometric mean, not the
    mean shown beside it, and fails at a count of 0; calling every interval
    of 2 seeds meaningless would hide what they do say. A column with a
    negative value (a user's own metric) keeps the plain t interval."""
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    finite = values.dropna()
    return len(finite) > 0 and bool((finite >= 0).all())


def numeric_columns(frame: "pandas.DataFrame") -> list[str]:
    """The columns of ``frame`` a mean can be taken of: numbers (a flag's
    mean is a share), or a latency null in every run that did not fail
    (nothing completed)."""
    import pandas as pd

    from irqlab.summary import NULLABLE_NUMBERS

    ok = succeeded(frame)
    out = []
    for c in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[c]) or (c in NULLABLE_NUMBERS and ok[c].isna().all()):
            out.append(str(c))
    return out


def check_metrics(frame: "pandas.DataFrame", metrics: Sequence[str], groups: Sequence[str], what: str = "metric") -> None:
    """Raise :class:`ResultsError` naming ``what`` if a metric is missing, is
    one of the ``groups`` the rows are grouped by, or is not numeric (text,
    lists): a mean of them is meaningless."""
    numeric = numeric_columns(frame)
    for m in metrics:
        if m not in frame.columns:
            raise ResultsError(f"{what} {m!r} is not a column of the results; columns are {', '.join(map(str, frame.columns))}")
        if m not in numeric:
            exclude = set(LEADING) | set(MIDDLE) | set(PROVENANCE) | set(groups)
            examples = [c for c in numeric if c not in exclude][:8]
            kind = "text" if frame[m].dtype == object else str(frame[m].dtype)
            raise ResultsError(f"{what} {m!r} is not a numeric column (its values are {kind}); numeric metrics "
                               f"include {', '.join(examples) or 'none'}")
        if m in groups:
            raise ResultsError(f"{what} {m!r} is a column the results are grouped by ({', '.join(groups)}); "
                               "give a summary field such as throughput_qps or latency_us.p99")


def json_records(frame: "pandas.DataFrame") -> str:
    """``frame`` as a JSON array of objects, one per row, every number with
    all its digits (``DataFrame.to_json`` keeps 10 decimals): what
    ``irqlab results --format json`` prints. NaN and infinities are
    ``null``, as ``to_json`` writes them (JSON has neither)."""
    import pandas as pd

    def plain(value: Any) -> Any:
        if hasattr(value, "tolist"):  # numpy scalars and arrays (a list column)
            value = value.tolist()
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, list):
            return [plain(v) for v in value]
        if value is pd.NaT or value is pd.NA:
            return None
        return value

    records = [{str(k): plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
    return json.dumps(records, default=str, allow_nan=False)


#: ``irqlab results --sql``: the rows a query may return unless ``--max-rows``
#: raises it. Far more than a terminal shows; a query over a whole grid of
#: runs (up to 100,000 without --yes) says so rather than printing them all.
SQL_MAX_ROWS = 10_000
#: ... and the seconds it may run unless ``--timeout`` raises it.
SQL_TIMEOUT_S = 60.0
#: DuckDB's result vectors (2,048 rows each) fetched at a time: the rows
#: held beyond the cap are at most one chunk.
_SQL_VECTORS_PER_CHUNK = 1


def sql(directory: str | os.PathLike[str], query: str, *, max_rows: int = SQL_MAX_ROWS,
        timeout_s: float = SQL_TIMEOUT_S) -> "pandas.DataFrame":
    """Run a DuckDB query over the results, which it sees as the view
    ``results`` (quote dotted names: ``SELECT profile, "latency_us.p99" FROM
    results``). The query can touch no file. A query that returns more than
    ``max_rows`` rows, or runs (fetching included) longer than ``timeout_s``
    seconds, is stopped with a :class:`ResultsError` that names the flag to
    raise the cap (``--max-rows``, ``--timeout``); rows are never dropped
    silently."""
    if not query.strip():
        raise ResultsError('--sql must be a query, e.g. SELECT profile, avg("latency_us.p99") FROM results GROUP BY profile')
    if not (isinstance(max_rows, int) and max_rows >= 1):
        raise ValueError(f"max_rows must be a whole number of at least 1 (got {max_rows!r})")
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a positive number of seconds (got {timeout_s!r})")
    frame = load(directory)
    import threading

    import duckdb
    import pandas as pd

    # The query sees the results and nothing else: with file access off
    # (and the setting locked) a query cannot read or write files
    # (COPY ... TO, read_csv, ATTACH, INSTALL), so `irqlab results --sql`,
    # often run as root beside the real-host tools, is no way around the
    # output rules of irqlab.files. The results are registered from memory.
    con = duckdb.connect(config={"enable_external_access": False, "lock_configuration": True})
    # The time cap: DuckDB's connection.interrupt() from a timer thread stops
    # the running query (execute) or the stream being fetched; the rows are
    # fetched a chunk at a time (a query's result streams in DuckDB 2.0), so
    # that a huge result is never held whole.
    timed_out = threading.Event()
    closing = threading.Lock()  # the timer never interrupts a closed connection
    closed = False

    def stop() -> None:
        with closing:
            if not closed:
                timed_out.set()
                con.interrupt()

    timer = threading.Timer(timeout_s, stop)
    timer.daemon = True
    try:
        con.register("results", frame)
        timer.start()
        result = con.execute(query)
        if result is None or result.description is None:
            # A statement that returns no rows (a comment alone, SET, CREATE ...).
            raise ResultsError("--sql must be a query that returns rows (a SELECT over the view results)")
        chunks = []
        rows = 0
        while True:
            chunk = result.fetch_df_chunk(_SQL_VECTORS_PER_CHUNK)
            if len(chunk) == 0:
                break
            rows += len(chunk)
            if rows > max_rows:
                raise ResultsError(f"--sql: the query returns more than {max_rows:,} rows; add a LIMIT or a "
                                   f"GROUP BY, or give --max-rows N to allow more")
            chunks.append(chunk)
        return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else (chunks[0] if chunks else chunk)
    except duckdb.Error as e:
        if timed_out.is_set():
            raise ResultsError(f"--sql: the query ran for more than {timeout_s:g} s and was stopped; give "
                               "--timeout S to allow it longer") from None
        raise ResultsError(f"--sql: {' '.join(str(e).split())}") from None
    finally:
        timer.cancel()
        with closing:
            closed = True
            con.close()
