"""``irqlab sweep`` and ``irqlab results`` from the command line: refusals
(exit 2, one line, nothing written), failed points (exit 3), --json,
progress, queries."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, SMALL, irqlab
from irqlab.cli import main
from irqlab.results import load
from irqlab.study.store import JOURNAL, MANIFEST, RESULTS

S = str(SMALL)
#: Small enough to keep every run of this file short.
DURATION = "0.005"


def sweep(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["sweep", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``directory`` with its bytes and mtime."""
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def one_error_line(err: str, *words: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("irqlab: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# -- refusals ---------------------------------------------------------------------

BIG = ["--grid", "load.qps=1:100000:1", "--grid", "cpu.app_cores=1,2"]  # 200,000 points

REFUSALS = [
    (["--grid", "load.qpz=1,2"], ["load.qpz", "--grid"]),
    (["--grid", "nosection.qps=1,2"], ["nosection.qps"]),
    (["--grid", "load.qps=10:1:1"], ["load.qps", "empty"]),
    (["--grid", "load.qps=1:10:0"], ["load.qps", "step"]),
    (["--grid", "load.qps=log:0:10:3"], ["load.qps", "above 0"]),
    (["--grid", "load.qps=log:1:10:1"], ["load.qps", "at least 2"]),
    (["--grid", "load.qps=4,,8"], ["load.qps", "empty item"]),
    (["--grid", "load.qps=4,4"], ["load.qps", "repeats"]),
    (["--grid", "load.qps="], ["load.qps", "no values"]),
    (["--grid", "load.qps"], ["--grid", "FIELD=VALUES"]),
    (["--grid", "load.qps=1:1000000:1"], ["load.qps", "100000"]),
    (["--grid", "run.seed=1,2"], ["run.seed", "--seeds"]),
    (["--grid", "run.profile=busy-wait"], ["run.profile", "--profile"]),
    (["--grid", "load.qps=1,2", "--grid", "load.qps=3"], ["load.qps", "twice"]),
    (["--grid", "run.duration_s=0.01,0.02", "--duration", "0.01"], ["run.duration_s", "--duration"]),
    (BIG, ["200,000", "--yes"]),
    (["--profile", "no-such"], ["no-such"]),
    (["--profile", "busy-wait,,irq-suspend"], ["--profile"]),
    (["--profile", "busy-wait,busy-wait"], ["busy-wait", "twice"]),
    (["--seeds", "0"], ["--seeds"]),
    (["--seeds", "many"], ["--seeds"]),
    (["--seed", "-1"], ["--seed"]),
    (["--duration", "0"], ["--duration"]),
    (["--duration", "soon"], ["--duration"]),
    (["--jobs", "0"], ["--jobs"]),
    (["--set", "load.nope=1"], ["load.nope"]),
    (["--executor", "dask"], ["--scheduler"]),
    (["--scheduler", "tcp://127.0.0.1:8786"], ["--scheduler", "--executor dask"]),
    (["--connect-timeout", "1"], ["--connect-timeout", "--executor dask"]),
    (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--jobs", "2"], ["--jobs"]),
    (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--connect-timeout", "0"], ["--connect-timeout"]),
    (["--executor", "dask", "--scheduler", "no-port"], ["--scheduler", "no-port"]),
    (["--executor", "dask", "--scheduler", "foo://h:1"], ["--scheduler", "foo"]),
    (["--executor", "threads"], ["--executor"]),
]


@pytest.mark.parametrize(("flags", "words"), REFUSALS)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], words: list[str]
) -> None:
    out = tmp_path / "out"
    duration = [] if "--duration" in flags else ["--duration", DURATION]
    status, stdout, err = sweep(capsys, S, *flags, *duration, "--out", str(out))
    assert status == 2, err
    one_error_line(err, *words)
    assert stdout == ""
    assert not out.exists()
    assert not (REPO / "results").exists() or "small" not in os.listdir(REPO / "results")


def test_missing_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = sweep(capsys, str(tmp_path / "nope.toml"), "--out", str(tmp_path / "out"))
    assert status == 2
    one_error_line(err, "nope.toml")
    assert not (tmp_path / "out").exists()


def test_refusals_through_the_installed_command(tmp_path: Path) -> None:
    """The real binary: the same one line on stderr, exit 2, nothing on stdout."""
    out = tmp_path / "out"
    result = irqlab("sweep", S, "--grid", "load.qpz=1,2", "--out", str(out))
    assert result.returncode == 2
    one_error_line(result.stderr, "load.qpz")
    assert result.stdout == "" and not out.exists()


def test_big_grid_is_refused_before_any_point_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status, _, err = sweep(capsys, S, *BIG, "--seeds", "2", "--out", str(out))
    assert status == 2
    one_error_line(err, "400,000", "--yes")
    assert not out.exists()


def test_yes_lets_a_big_grid_past_the_size_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Never run: --out holds another sweep, which is the next refusal; that it
    # is the one reported shows --yes passed the size check.
    out = tmp_path / "out"
    assert sweep(capsys, S, "--duration", DURATION, "--out", str(out), "--quiet")[0] == 0
    before = snapshot(out)
    status, _, err = sweep(capsys, S, *BIG, "--yes", "--out", str(out))
    assert status == 2
    one_error_line(err, "--out", "another sweep")
    assert snapshot(out) == before


def test_out_holding_another_sweep_is_refused_and_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status, _, _ = sweep(capsys, S, "--grid", "load.qps=1000,2000", "--duration", DURATION, "--out", str(out), "--quiet")
    assert status == 0
    before = snapshot(out)
    assert set(before) >= {MANIFEST, JOURNAL, RESULTS, "study.toml", "scenario.toml"}
    for other in (
        ["--grid", "load.qps=1000,3000"],
        ["--grid", "load.qps=1000,2000", "--seeds", "2"],
        ["--grid", "load.qps=1000,2000", "--profile", "busy-wait"],
        ["--grid", "load.qps=1000,2000", "--set", "load.depth=2"],
        ["--grid", "load.qps=1000,2000", "--seed", "2"],
    ):
        status, stdout, err = sweep(capsys, S, *other, "--duration", DURATION, "--out", str(out))
        assert status == 2, other
        one_error_line(err, f"--out {out}", "another sweep")
        assert stdout == ""
    status, _, err = sweep(capsys, S, "--grid", "load.qps=1000,2000", "--duration", "0.006", "--out", str(out))
    assert status == 2
    one_error_line(err, "another sweep")
    assert snapshot(out) == before


def test_out_that_is_not_a_sweep_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    status, _, err = sweep(capsys, S, "--duration", DURATION, "--out", str(busy))
    assert status == 2
    one_error_line(err, "--out", "not empty")
    assert os.listdir(busy) == ["notes.txt"]

    a_file = tmp_path / "file"
    a_file.write_text("x")
    status, _, err = sweep(capsys, S, "--duration", DURATION, "--out", str(a_file))
    assert status == 2
    one_error_line(err, "--out", "not a directory")
    assert a_file.read_text() == "x"

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / MANIFEST).write_text("{not json")
    status, _, err = sweep(capsys, S, "--duration", DURATION, "--out", str(damaged))
    assert status == 2
    one_error_line(err, "--out", MANIFEST)
    assert os.listdir(damaged) == [MANIFEST]


def test_empty_out_directory_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    status, _, _ = sweep(capsys, S, "--duration", DURATION, "--out", str(empty), "--quiet")
    assert status == 0
    assert (empty / RESULTS).is_file()


# -- failed points ----------------------------------------------------------------------


def test_failing_point_is_recorded_and_the_others_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Each value alone is fine (a value refused on its own is refused up
    # front); two queues beside one core are not (aligned routing): point #1.
    out = tmp_path / "out"
    args = [S, "--grid", "cpu.app_cores=1,2", "--grid", "nic.queues=0,2", "--seeds", "2", "--duration", DURATION,
            "--out", str(out), "--quiet"]
    status, stdout, err = sweep(capsys, *args)
    assert status == 3, err
    errors = [line for line in err.splitlines() if line.startswith("irqlab: error: ")]
    assert len(errors) == 1, err
    assert "2 of 8 points failed" in errors[0]
    assert "#1 (cpu.app_cores=1, nic.queues=2)" in errors[0]
    assert "#0" not in errors[0] and "#2" not in errors[0] and "#3" not in errors[0]
    assert "Traceback" not in err
    assert "ran 8" in stdout and "2 failed" in stdout

    frame = load(out)
    assert len(frame) == 8
    is_bad = (frame["cpu.app_cores"] == 1) & (frame["nic.queues"] == 2)
    bad, good = frame[is_bad], frame[~is_bad]
    assert len(bad) == 2 and len(good) == 6
    assert bad["error"].str.contains("nic.queues").all()
    assert good["error"].isna().all()
    assert bad["throughput_qps"].isna().all() and bad["latency_us.p99"].isna().all()
    assert (good["throughput_qps"] > 0).all()

    # Re-running runs the failed points again (and only them); they fail again.
    status, stdout, err = sweep(capsys, *args, "--json")
    assert status == 3
    report = json.loads(stdout)
    assert (report["ran"], report["already_done"]) == (2, 6)
    assert [(f["point"], f["replicate"]) for f in report["failed"]] == [(1, 0), (1, 1)]
    assert all("nic.queues" in f["error"] for f in report["failed"])
    assert "cpu.app_cores=1, nic.queues=2" in report["failed"][0]["what"]
    assert len(load(out)) == 8


@pytest.mark.parametrize("grid", [["load.qps=a,b"], ["cpu.app_cores=0,1"], ["load.qps=1000,-5"]])
def test_an_axis_value_refused_on_its_own_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], grid: list[str]
) -> None:
    # Issue 62, item 12: `a,b` ran and failed point by point (exit 3, a
    # results directory left) where `nan` was refused up front.
    out = tmp_path / "out"
    status, stdout, err = sweep(capsys, S, *(x for g in grid for x in ("--grid", g)), "--duration", DURATION,
                                "--out", str(out), "--quiet")
    assert status == 2 and stdout == ""
    field, values = grid[0].split("=")
    one_error_line(err, f"--grid: axis {field} value", "is refused on its own", f"scenario field `{field}`")
    assert not out.exists()


def test_failed_points_listed_at_most_five(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = sweep(
        capsys, S, "--grid", "cpu.app_cores=1,3", "--grid", "nic.queues=2", "--seeds", "4", "--duration", DURATION,
        "--out", str(tmp_path / "out"), "--quiet",
    )  # fmt: skip
    assert status == 3
    line = one_error_line("\n".join(x for x in err.splitlines() if not x.startswith("sweep ")), "8 of 8 points failed", "and 3 more")
    assert line.count("#") == 5


# -- output ------------------------------------------------------------------------------


def test_json_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status, stdout, _ = sweep(
        capsys, S, "--profile", "irq-suspend,busy-wait", "--grid", "load.qps=1000:3000:1000",
        "--seeds", "2", "--duration", DURATION, "--jobs", "2", "--out", str(out), "--json", "--quiet",
    )  # fmt: skip
    assert status == 0
    report = json.loads(stdout)
    assert report["name"] == "small"
    assert Path(report["directory"]) == out and Path(report["results"]) == out / RESULTS
    assert (report["points"], report["ran"], report["already_done"], report["failed"]) == (12, 12, 0, [])
    assert report["executor"] == "2 threads"
    assert report["wall_s"] > 0 and report["points_per_s"] > 0
    assert len(load(out)) == 12


def test_text_outcome_and_default_out(tmp_path: Path) -> None:
    # Without --out: results/NAME under the working directory.
    result = subprocess.run(
        [sys.executable, "-m", "irqlab", "sweep", S, "--grid", "load.qps=1000,2000", "--duration", DURATION],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "results" / "small" / RESULTS).is_file()
    lines = result.stdout.splitlines()
    assert lines[0] == "sweep small: 2 points (1 profile × 2 load.qps × 1 seed) on " + lines[0].split(" on ", 1)[1]
    assert lines[1].startswith("ran 2 in ") and lines[1].endswith("0 already done, 0 failed")
    assert lines[2] == f"results: {Path('results') / 'small' / RESULTS}"


def progress_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("sweep small: ")]


@pytest.mark.parametrize("quiet", [False, True])
def test_progress_without_a_terminal_is_a_line_per_tenth(tmp_path: Path, quiet: bool) -> None:
    args = ["sweep", S, "--grid", "load.qps=1000:37000:1000", "--duration", "0.002", "--out", str(tmp_path / "o")]
    result = irqlab(*args, *(["--quiet"] if quiet else []))
    assert result.returncode == 0, result.stderr
    lines = progress_lines(result.stderr)
    assert 1 <= len(lines) <= 10, result.stderr
    assert lines[-1].startswith("sweep small: 37/37 points (100 %)")
    assert all("\r" not in line and "\x1b" not in line for line in lines)
    assert len(result.stderr.splitlines()) == len(lines)


def run_on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Run ``irqlab ARGS`` with stderr on a pseudo-terminal; its status and what it wrote there."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "irqlab", *args], stdout=subprocess.DEVNULL, stderr=slave, cwd=REPO
        )
        os.close(slave)
        chunks = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        status = proc.wait(timeout=60)
    finally:
        os.close(master)
    return status, b"".join(chunks).decode(errors="replace")


def test_progress_on_a_terminal_is_a_bar(tmp_path: Path) -> None:
    args = ["sweep", S, "--grid", "load.qps=1000:20000:1000", "--duration", "0.002"]
    status, text = run_on_a_terminal([*args, "--out", str(tmp_path / "a")])
    assert status == 0, text
    assert "20/20" in text
    assert "sweep small: 20/20 points (100 %)" not in text  # not the lines
    status, text = run_on_a_terminal([*args, "--out", str(tmp_path / "b"), "--quiet"])
    assert status == 0, text
    assert "sweep small: 20/20 points (100 %)" in text


# -- irqlab results ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("results") / "r"
    status = main(
        [
            "sweep", S, "--profile", "irq-suspend,busy-wait", "--grid", "load.qps=2000,4000",
            "--seeds", "3", "--duration", DURATION, "--out", str(out), "--quiet",
        ]
    )  # fmt: skip
    assert status == 0
    return out


def results(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["results", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_results_text(done: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    status, out, err = results(capsys, str(done))
    assert status == 0, err
    # Names with units, and numbers rounded for reading (issue 62, item 17):
    # tests/python/test_results_text.py has the details.
    table = out.split("\n\n")[0].splitlines()
    assert table[0].startswith("Profile ")
    for words in ("Offered load (QPS)", "Seeds", "Throughput (QPS)", "p99 latency (", "CPU busy (%)", "95 % CI"):
        assert words in table[0], table[0]
    assert len(table) == 1 + 2 * 2


def test_results_csv_and_json(done: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    status, out, _ = results(capsys, str(done), "--format", "csv", "--metric", "throughput_qps")
    assert status == 0
    table = list(csv.DictReader(io.StringIO(out)))
    assert list(table[0]) == [
        "profile", "load.qps", "n", "throughput_qps.mean", "throughput_qps.ci_low", "throughput_qps.ci_high",
    ]  # fmt: skip
    assert {(r["profile"], r["load.qps"], r["n"]) for r in table} == {
        (p, q, "3") for p in ("irq-suspend", "busy-wait") for q in ("2000", "4000")
    }
    for r in table:
        assert float(r["throughput_qps.ci_low"]) <= float(r["throughput_qps.mean"]) <= float(r["throughput_qps.ci_high"])
    status, out, _ = results(capsys, str(done), "--format", "json", "--metric", "latency_us.p99")
    assert status == 0
    records = json.loads(out)
    assert len(records) == 4 and all(r["n"] == 3 for r in records)
    assert set(records[0]) == {"profile", "load.qps", "n", "latency_us.p99.mean", "latency_us.p99.ci_low", "latency_us.p99.ci_high"}


def test_results_sql(done: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    query = (
        'SELECT profile, "load.qps", count(*) AS runs, avg("latency_us.p99") AS p99 '
        'FROM results GROUP BY profile, "load.qps" ORDER BY profile, "load.qps"'
    )
    status, out, err = results(capsys, str(done), "--sql", query, "--format", "csv")
    assert status == 0, err
    table = list(csv.DictReader(io.StringIO(out)))
    assert [(r["profile"], r["load.qps"], r["runs"]) for r in table] == [
        ("busy-wait", "2000", "3"), ("busy-wait", "4000", "3"), ("irq-suspend", "2000", "3"), ("irq-suspend", "4000", "3"),
    ]  # fmt: skip
    frame = load(done)
    expected = frame[(frame["profile"] == "busy-wait") & (frame["load.qps"] == 2000)]["latency_us.p99"].mean()
    assert float(table[0]["p99"]) == pytest.approx(expected)
    status, out, _ = results(capsys, str(done), "--sql", 'SELECT max("cpu_pct.busy") AS m FROM results', "--format", "json")
    assert status == 0
    assert json.loads(out)[0]["m"] == pytest.approx(frame["cpu_pct.busy"].max())


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--sql", "SELEC nonsense"], ["--sql"]),
        (["--sql", "SELECT nosuchcolumn FROM results"], ["--sql", "nosuchcolumn"]),
        (["--sql", "SELECT * FROM nosuchtable"], ["--sql", "nosuchtable"]),
        (["--metric", "nosuch.metric"], ["nosuch.metric"]),
        (["--format", "xml"], ["--format"]),
    ],
)
def test_results_refusals(done: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: list[str]) -> None:
    capsys.readouterr()
    status, out, err = results(capsys, str(done), *args)
    assert status == 2
    one_error_line(err, *words)
    assert out == ""


def test_results_of_a_directory_without_a_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = results(capsys, str(tmp_path))
    assert status == 2
    one_error_line(err, str(tmp_path), MANIFEST)
    status, out, err = results(capsys, str(tmp_path / "missing"), "--sql", "SELECT 1")
    assert status == 2
    one_error_line(err, "missing")


def test_resuming_runs_of_another_irqlab_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A sweep resumed after an upgrade or an edit mixes two codes: said once
    # on stderr, the sweep still completes; with nothing left to run, silence.
    out = tmp_path / "out"
    args = [S, "--grid", "load.qps=20000,40000", "--duration", DURATION, "--out", str(out), "--quiet"]
    status, _, _ = sweep(capsys, *args)
    assert status == 0
    journal = out / JOURNAL
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    records[0]["git_commit"] = "0" * 40
    journal.write_text(json.dumps(records[0]) + "\n")  # the second point is missing
    status, _, err = sweep(capsys, *args)
    assert status == 0
    warnings = [line for line in err.splitlines() if line.startswith("irqlab: warning: ")]
    assert len(warnings) == 1 and "0" * 40 in warnings[0] and "mix" in warnings[0], err
    status, _, err = sweep(capsys, *args)
    assert status == 0 and "warning" not in err
