"""Bad input at every command, end to end through ``python -m irqlab``: a
refusal is exit status 2 (or the status the README gives) and exactly one
line ``irqlab: error: <sentence>`` on stderr naming the input, nothing on
stdout, and never a traceback or a hang; input that is legitimately fine
exits 0. The cases of issue 31 (tracebacks, a hang, silent choices) and
representatives of the categories it lists: missing, empty and special
files, extreme and non-finite numbers, wrong types, unknown keys and
profiles, contradictory options, very long and non-ASCII strings, paths
outside the tree. test_cli_errors.py, test_sweep_cli.py, test_tune.py,
test_linux_cli.py and test_loadgen.py hold the simpler refusals; output
paths are in test_output_paths.py.

Nearly every case is refused before anything is simulated; the few that
run use a millisecond of simulated time.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, SMALL, irqlab

BARE = "scenarios/thesis/bare-metal.toml"
FORWARDING = "scenarios/itr/forwarding.toml"
LONG = "x" * 10_000
UNI = "ünï☃"
#: A refusal must come long before this; a hang fails the test instead of the suite.
TIMEOUT = 60
ERROR = ("irqlab: error: ", "irqlab-loadgen: error: ")


def _study(path: Path, body: str, scenario: Path = SMALL) -> Path:
    path.write_text(f'[study]\nscenario = "{scenario}"\nduration_s = 0.001\n{body}\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Files and results directories the cases name, made once."""
    d = tmp_path_factory.mktemp("bad-input")
    (d / "empty.toml").write_text("")
    (d / "comment.toml").write_text("# every default, on purpose\n[load]\n")
    (d / "binary.toml").write_bytes(b"\xff\xfe\x00")
    (d / "adir").mkdir()
    (d / "long-name.toml").write_text(f'name = "{LONG}"\n')
    (d / "unicode.toml").write_text(f'name = "{UNI}"\ndescription = "{UNI}"\n', encoding="utf-8")
    (d / "no-scenario.study.toml").write_text('[study]\nname = "x"\n')
    studies = {
        "set-and-axis": '[set]\n"load.qps" = 5\n[axes]\n"load.qps" = [1000, 2000]',
        "set-other": '[set]\n"load.qps" = 5000\n[axes]\n"cpu.app_cores" = [1, 2]',
        "plot-nope": '[axes]\n"load.qps" = [1000, 2000]\n[[plot]]\nx = "load.qps"\ny = "nope"',
        "plot-text": '[axes]\n"load.qps" = [1000, 2000]\n[[plot]]\nx = "load.qps"\ny = "mode"',
        "plot-logy": '[axes]\n"load.qps" = [1000, 2000]\n[[plot]]\nx = "load.qps"\ny = "throughput_qps"\nlogy = "yes"',
        "plot-x-type": '[[plot]]\nx = 1\ny = "throughput_qps"',
        "plot-key": '[[plot]]\nx = "load.qps"\ny = "throughput_qps"\nbogus = 1',
        "table": "[bogus]",
    }
    for name, body in studies.items():
        _study(d / f"{name}.study.toml", body)
    (d / "seeds-text.study.toml").write_text(f'[study]\nscenario = "{SMALL}"\nseeds = "x"\n')
    (d / "duration-text.study.toml").write_text(f'[study]\nscenario = "{SMALL}"\nduration_s = "x"\n')
    # Results: a sweep that ran, one whose every run failed, and damaged copies.
    # Every run fails: each value alone is fine, two queues beside 1 or 3 cores are not.
    sweeps = {"ok": ["--grid", "load.qps=1000,2000"], "allfail": ["--grid", "cpu.app_cores=1,3", "--grid", "nic.queues=2"]}
    for name, grid in sweeps.items():
        r = irqlab("sweep", str(SMALL), *grid, "--duration", "0.001", "--out", str(d / name), "--quiet")
        assert r.returncode in (0, 3), r.stderr
    shutil.copytree(d / "ok", d / "corrupt")
    (d / "corrupt" / "results.parquet").write_text("not parquet\n")
    shutil.copytree(d / "ok", d / "badmanifest")
    (d / "badmanifest" / "manifest.json").write_text('{"axes": 5}\n')
    places = {k: str(d / v) for k, v in {
        "empty": "empty.toml", "comment": "comment.toml", "binary": "binary.toml", "adir": "adir",
        "long": "long-name.toml", "uni": "unicode.toml", "ok": "ok", "allfail": "allfail", "corrupt": "corrupt",
        "badmanifest": "badmanifest", "tmp": ".",
    }.items()}
    places.update({f"study:{n}": str(d / f"{n}.study.toml") for n in
                   [*studies, "no-scenario", "seeds-text", "duration-text"]})
    places.update(small=str(SMALL), bare=BARE, fwd=FORWARDING, LONG=LONG, UNI=UNI, repo=str(REPO))
    return places


def _args(args: tuple[str, ...], places: dict[str, str]) -> list[str]:
    out = []
    for a in args:
        for key, value in places.items():
            a = a.replace("{" + key + "}", value)
        out.append(a)
    return out


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return irqlab(*args, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"irqlab {' '.join(a[:40] for a in args)} did not finish in {TIMEOUT} s")


def assert_refused(result: subprocess.CompletedProcess[str], needle: str, status: int = 2) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert result.returncode == status, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(ERROR), lines[0]
    assert needle in lines[0], (needle, lines[0][:300])
    assert result.stdout == "", result.stdout[:300]


T = "--duration", "0.001"
TUNE = ("tune", "{bare}", "--knob", "cpu.freq_ghz", "--range", "1:3", *T)
OUT = "--out", "{tmp}/never"

# (arguments, what the one error line names). Each is refused with status 2.
REFUSED = [
    # -- issue 31's tracebacks
    (("results", "{corrupt}"), "results.parquet"),
    (("report", "{corrupt}", "--out", "{tmp}/corrupt.html"), "results.parquet"),
    (("plot", "{corrupt}", "--x", "load.qps", "--y", "throughput_qps", "--out", "{tmp}"), "results.parquet"),
    (("results", "{ok}", "--sql", ""), "--sql"),
    (("results", "{ok}", "--metric", "profile"), "profile"),
    (("reproduce", "sriov", "--scenario", "{fwd}", "--out", "{tmp}/sriov"), "--scenario"),
    # -- issue 31's hang: an --accept no float can reach
    ((*TUNE, "--accept", "1e-300"), "--accept"),
    # -- issue 31's silent choices
    (("run", "{small}", "--set", "load.qps=5", "--set", "load.qps=6"), "load.qps"),
    (("sweep", "{small}", "--set", "load.qps=5", "--grid", "load.qps=1000,2000", *OUT), "load.qps"),
    (("sweep", "{study:set-and-axis}", *OUT), "load.qps"),
    ((*TUNE, "--set", "cpu.freq_ghz=2"), "cpu.freq_ghz"),
    ((*TUNE, "--set", "cpu={freq_ghz=2}"), "cpu.freq_ghz"),
    ((*TUNE, "--objective", "mode"), "--objective mode"),
    ((*TUNE, "--objective", "offered_qps"), "--objective offered_qps"),
    ((*TUNE, "--objective", "warnings"), "--objective warnings"),
    (("sweep", "{study:plot-nope}", *OUT), "plot.y 'nope'"),
    (("sweep", "{study:plot-text}", *OUT), "plot.y 'mode'"),
    (("sweep", "{study:plot-logy}", *OUT), "plot.logy"),
    (("testbed", "run", "--connections", "2.5"), "--connections"),
    (("results", "{allfail}"), "failed"),
    # -- missing, empty and special files
    (("run", "{adir}"), "{adir}"),
    (("run", "/dev/null"), "/dev/null"),
    (("run", "{binary}"), "{binary}"),
    (("bench", "{adir}"), "{adir}"),
    (("sweep", "/dev/null", *OUT), "/dev/null"),
    (("sweep", "{study:no-scenario}", *OUT), "study.scenario"),
    (("tune", "/dev/null", "--knob", "cpu.freq_ghz", "--range", "1:3"), "SCENARIO"),
    (("tune", "{adir}", "--knob", "cpu.freq_ghz", "--range", "1:3"), "SCENARIO"),
    (("reproduce", "itr", "--scenario", "/dev/null", "--out", "{tmp}/itr"), "--scenario"),
    (("reproduce", "thesis", "--scenario", "{adir}", "--out", "{tmp}/thesis"), "--scenario"),
    (("results", "{tmp}/nonexistent"), "nonexistent"),
    (("results", "/dev/null"), "/dev/null"),
    (("report", "{adir}"), "{adir}"),
    (("results", "{badmanifest}"), "manifest.json"),
    (("plot", "/dev/null", "--x", "a", "--y", "b"), "/dev/null"),
    # -- extreme and non-finite numbers
    (("run", "{small}", "--duration", "nan"), "--duration"),
    (("run", "{small}", "--duration", "1e308"), "run.duration_s"),
    (("run", "{small}", "--seed", "1e308"), "--seed"),
    (("run", "{small}", "--seed", "99999999999999999999"), "--seed"),
    (("run", "{small}", "--set", "load.qps=nan"), "load.qps"),
    (("run", "{small}", "--set", "load.qps=inf"), "load.qps"),
    (("run", "{small}", "--set", "load.qps=1e308"), "load.qps"),
    (("bench", "{small}", "--duration", "nan"), "--duration"),
    (("bench", "{small}", "--repeat", "1e9"), "--repeat"),
    (("bench", "{small}", "--repeat", "999999999"), "--repeat"),
    (("bench", "--sweep", "--jobs", "99999"), "--jobs"),
    (("sweep", "{small}", "--duration", "1e308", *OUT), "--duration"),
    (("sweep", "{small}", "--grid", "load.qps=nan,1", *OUT), "load.qps"),
    # issue 62, item 12: refused up front like nan, not point by point
    (("sweep", "{small}", "--grid", "load.qps=a,b", *OUT), "axis load.qps value 'a' is refused on its own"),
    (("sweep", "{small}", "--grid", "cpu.app_cores=0,2", *OUT), "axis cpu.app_cores value 0"),
    (("sweep", "{small}", "--grid", "load.qps=1:1e9:1e-300", *OUT), "load.qps"),
    (("sweep", "{small}", "--seeds", "1e9", *OUT), "--seeds"),
    ((*TUNE, "--accept", "nan"), "--accept"),
    (("tune", "{bare}", "--knob", "cpu.freq_ghz", "--range=-1e308:1e308"), "--range"),
    (("tune", "{bare}", "--knob", "cpu.freq_ghz", "--range", "0:1000"), "--range"),
    (("tune", "{bare}", "--knob", "cpu.app_cores", "--range", "0:100000"), "--range"),
    (("reproduce", "thesis", "--closed-duration", "nan", "--out", "{tmp}/thesis"), "--closed-duration"),
    (("reproduce", "itr", "--duration", "1e308", "--out", "{tmp}/itr"), "--duration"),
    (("reproduce", "iaps", "--seeds", "1.5", "--out", "{tmp}/iaps"), "--seeds"),
    (("testbed", "run", "--low-qps", "nan"), "--low-qps"),
    (("testbed", "run", "--duration", "inf"), "--duration"),
    (("testbed", "run", "--repeats", "-1"), "--repeats"),
    (("testbed", "tune", "--slice", "nan"), "--slice"),
    (("loadgen", "--qps", "nan"), "--qps"),
    (("loadgen", "--qps", "inf"), "--qps"),
    (("loadgen", "--connections", "2.5"), "--connections"),
    (("loadgen", "--duration", "1e308"), "--duration"),
    # issue 62, item 12: runs that could send nothing, flags the closed loop ignored
    (("loadgen", "--qps", "1e-300"), "--qps must be at least 0.2 requests per second with --duration 5"),
    (("loadgen", "--duration", "0.000001"), "--duration must be a number from 0.001 to 3600"),
    (("loadgen", "--spin-us", "50"), "--spin-us applies only to the open loop"),
    (("loadgen", "--batch-us", "50"), "--batch-us applies only to the open loop"),
    (("loadgen", "--max-late", "0.5"), "--max-late applies only to the open loop"),
    # -- wrong types
    (("run", "{small}", "--set", "load.qps=true"), "load.qps"),
    (("run", "{small}", "--set", "load.qps=[1,2]"), "load.qps"),
    (("run", "{small}", "--set", "load=5"), "load"),
    (("tune", "{bare}", "--knob", "nic.kind", "--range", "1:3"), "--knob"),
    (("tune", "{bare}", "--knob", "coalesce.adaptive-rx", "--range", "0:1"), "--knob"),
    (("sweep", "{study:seeds-text}", *OUT), "study.seeds"),
    (("sweep", "{study:duration-text}", *OUT), "study.duration_s"),
    (("sweep", "{study:plot-x-type}", *OUT), "plot.x"),
    (("results", "{ok}", "--metric", "warnings"), "warnings"),
    (("results", "{ok}", "--metric", "load.qps"), "load.qps"),
    (("plot", "{ok}", "--x", "load.qps", "--y", "load.qps", "--out", "{tmp}"), "--y"),
    # -- unknown keys and profiles
    (("run", "{small}", "--profile", "{UNI}"), "{UNI}"),
    ((*TUNE, "--profile", "nope"), "nope"),
    ((*TUNE, "--objective", "nope"), "--objective nope"),
    (("sweep", "{study:plot-key}", *OUT), "plot.bogus"),
    (("sweep", "{study:table}", *OUT), "bogus"),
    (("reproduce", "nope"), "nope"),
    (("testbed", "run", "--profiles", "nope"), "--profiles"),
    (("testbed", "run", "--policy", "/etc/passwd:Nope"), "--policy's file"),
    (("testbed", "run", "--policy-profile", "busy-wait"), "--policy-profile needs --policy"),
    (("testbed", "run", "--policy", "{repo}/examples/policies/rate_coalescer.py:RateCoalescer",
      "--policy", "{repo}/examples/policies/rate_coalescer.py:RateCoalescer"), "each policy's class must be named"),
    (("testbed", "run", "--policy", "{repo}/examples/policies/rate_coalescer.py:RateCoalescer", "--policy-profile", "nope"),
     "--policy-profile"),
    # net DIM's 100 us period is below what a real host's controller keeps.
    (("testbed", "run", "--policy", "{repo}/python/irqlab/policy/dim.py:Dim"), "on a real host it must be"),
    (("testbed", "tune", "--knob", "nope"), "--knob"),
    (("linux", "doctor", "irqlab-nosuch"), "irqlab-nosuch"),
    # -- contradictory options
    (("run", "{small}", "--set", "run.seed=3", "--seed", "4"), "run.seed"),
    (("run", "{small}", "--set", "run.duration_s=0.01", "--duration", "0.02"), "run.duration_s"),
    (("sweep", "{small}", "--set", "run.seed=5", *OUT), "run.seed"),
    (("sweep", "{small}", "--set", "run.duration_s=0.01", "--duration", "0.005", *OUT), "run.duration_s"),
    (("tune", "{bare}", "--knob", "run.duration_s", "--range", "0.001:0.002", "--duration", "0.001"), "--knob"),
    (("results", "{ok}", "--sql", "SELECT 1", "--metric", "throughput_qps"), "--metric"),
    (("results", "{ok}", "--sql", "-- a comment, no query"), "--sql"),
    (("reproduce", "itr", "--scenario", "{bare}", "--out", "{tmp}/itr"), "--scenario"),
    (("reproduce", "iaps", "--scenario", "{small}", "--out", "{tmp}/iaps"), "--scenario"),
    (("reproduce", "vic", "--scenario", "{fwd}", "--out", "{tmp}/vic"), "--scenario"),
    (("reproduce", "thesis", "--scenario", "{fwd}", "--out", "{tmp}/thesis"), "--scenario"),
    # -- very long and non-ASCII strings
    (("run", "{LONG}"), "xxxx"),
    (("run", "{small}", "--set", "load.qps={LONG}"), "load.qps"),
    (("run", "{small}", "--set", "load.{LONG}=1"), "xxxx"),
    (("sweep", "{small}", "--grid", "load.{UNI}=1,2", *OUT), "{UNI}"),
    (("tune", "{bare}", "--knob", "{LONG}", "--range", "1:3"), "--knob"),
    ((*TUNE, "--objective", "{UNI}"), "{UNI}"),
    (("results", "{ok}", "--sql", "{LONG}"), "--sql"),
    (("linux", "doctor", "{LONG}"), "xxxx"),
    (("linux", "show", "{UNI}"), "{UNI}"),
    (("loadgen", "--server", "{UNI}"), "--server"),
    # -- paths outside the tree
    (("run", "/etc/passwd"), "/etc/passwd"),
    (("run", "../../../../../../../../etc/passwd"), "etc/passwd"),
    (("bench", "/etc/passwd"), "/etc/passwd"),
    (("reproduce", "itr", "--scenario", "/etc/passwd", "--out", "{tmp}/itr"), "/etc/passwd"),
    (("report", "/etc"), "/etc"),
]


@pytest.mark.parametrize(("args", "needle"), REFUSED, ids=[" ".join(a)[:70] for a, _ in REFUSED])
def test_refused_in_one_line(places: dict[str, str], args: tuple[str, ...], needle: str) -> None:
    assert_refused(_run(_args(args, places)), _args((needle,), places)[0])


# Legitimately fine: exit 0, nothing on stderr but warnings, no traceback.
ACCEPTED = [
    ("run", "{comment}", *T, "--json"),  # one table, every field at its default
    ("run", "{long}", *T, "--json"),
    ("run", "{uni}", *T),
    ("results", "{ok}", "--metric", "throughput_qps", "--format", "csv"),
    ("results", "{ok}", "--sql", "SELECT '{UNI}' AS s"),
    ("results", "{allfail}", "--sql", "SELECT error FROM results"),  # the errors can still be queried
    ("sweep", "{small}", "--name", "{UNI}", *T, "--out", "{tmp}/unicode-name", "--quiet"),
]


@pytest.mark.parametrize("args", ACCEPTED, ids=[" ".join(a)[:70] for a in ACCEPTED])
def test_accepted(places: dict[str, str], args: tuple[str, ...]) -> None:
    result = _run(_args(args, places))
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == 0, result.stderr
    noise = [line for line in result.stderr.splitlines() if not line.startswith(("irqlab: warning: ", "sweep "))]
    assert noise == [], result.stderr


def test_a_flag_replacing_a_study_value_of_the_other_kind_says_so(places: dict[str, str]) -> None:
    # The README's rule (flags replace a study file's values), printed
    # rather than applied silently.
    result = _run(_args(("sweep", "{study:set-other}", "--grid", "load.qps=1000,2000", *T,
                         "--out", "{tmp}/precedence", "--quiet"), places))
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("irqlab: warning: ")]
    assert len(warnings) == 1 and "--grid load.qps replaces the study's [set] load.qps" in warnings[0], warnings


def test_a_sweep_with_no_successful_run_exits_3_saying_so(places: dict[str, str]) -> None:
    result = _run(_args(("sweep", "{small}", "--grid", "cpu.app_cores=1,3", "--grid", "nic.queues=2", *T,
                         "--out", "{tmp}/none-ok", "--quiet"), places))
    assert "Traceback" not in result.stderr
    assert result.returncode == 3, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("irqlab: error: ")]
    assert len(errors) == 1 and "none succeeded" in errors[0] and "cpu.app_cores" in errors[0], errors


def test_tune_stops_when_the_interval_cannot_shrink() -> None:
    # The range is two float steps wide around 2 GHz: the policy's probes
    # stop moving long before --accept is reached.
    result = _run(["tune", BARE, "--knob", "cpu.freq_ghz", "--range", "2:2.000000000000002", "--accept", "1e-20",
                   *T, "--json"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    # The scenario's own 3 GHz is measured first; the search's probes stay
    # in the range and stop, and none of them beats 3 GHz, so it is kept.
    probes = [e["value"] for e in data["evaluations"][1:]]
    assert 0 < len(probes) <= 8 and all(2.0 <= v <= 2.000000000000002 for v in probes), probes
    assert data["kept"] and data["best"] == data["current"] == 3.0


@pytest.mark.parametrize("paper", ["itr", "sriov"])
def test_an_interrupted_reproduction_says_how_to_resume(tmp_path: Path, paper: str) -> None:
    out = tmp_path / paper
    proc = subprocess.Popen([sys.executable, "-m", "irqlab", "reproduce", paper, "--out", str(out), "--duration",
                             "0.001", "--quiet"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Interrupted once the first runs are kept.
        deadline = time.monotonic() + TIMEOUT
        while not any(out.glob("*/journal.jsonl")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert "Traceback" not in err
    if proc.returncode == 0:
        pytest.skip("the reproduction finished before the interrupt")
    assert proc.returncode == 130, err
    lines = err.splitlines()
    assert len(lines) == 1 and f"reproduce {paper} interrupted" in lines[0] and "--resume" in lines[0], err


# -- issue 62, item 11: a title matplotlib's mathtext cannot parse, refused
# before anything is drawn (it was a traceback in plot, and in report after
# the whole sweep).
def test_a_title_matplotlib_cannot_draw_is_refused_up_front(places: dict[str, str], tmp_path: Path) -> None:
    title = r"$\frac{$"
    figs = tmp_path / "figs"
    result = _run(["plot", places["ok"], "--x", "load.qps", "--y", "throughput_qps", "--title", title,
                   "--out", str(figs)])
    assert_refused(result, "--title")
    assert not figs.exists()
    study = _study(tmp_path / "title.study.toml", f'[[plot]]\nx = "load.qps"\ny = "throughput_qps"\ntitle = \'{title}\'')
    assert_refused(_run(["sweep", str(study), "--out", str(tmp_path / "never"), "--quiet"]), "plot.title")
    assert not (tmp_path / "never").exists()


# -- issue 62, item 12: values that were accepted and ignored, or files that
# ran as every default.
SILENTLY_WRONG = [
    (("run", "{empty}", *T, "--json"), "it sets no field"),
    (("sweep", "{empty}", "--grid", "load.qps=1000,2000", *OUT), "it sets no field"),
    (("run", "{fwd}", "--set", "itr.min_effect=nan", *T), "itr.min_effect"),
    (("run", "{fwd}", "--set", "itr.min_effect=-0.01", *T), "itr.min_effect"),
    (("run", "{fwd}", "--set", "itr.min_effect=1e7", *T), "itr.min_effect"),
    (("run", "{small}", "--set", 'load.key_size={dist="etc",foo=1}', *T), "load.key_size.foo"),
    (("run", "{small}", "--set", 'load.value_size={dist="etc",bytes=64}', *T), "load.value_size.bytes"),
    (("tune", "{bare}", "--knob", "run.seed", "--range", "1:1000", *T), "--knob must be a numeric field"),
    (("testbed", "run", "--profiles", ""), "--profiles must name at least one"),
    (("testbed", "run", "--profiles", " , "), "--profiles must name at least one"),
]


@pytest.mark.parametrize(("args", "needle"), SILENTLY_WRONG, ids=[" ".join(a)[:70] for a, _ in SILENTLY_WRONG])
def test_silently_wrong_values_are_refused(places: dict[str, str], args: tuple[str, ...], needle: str) -> None:
    assert_refused(_run(_args(args, places)), _args((needle,), places)[0])


# -- issue 62, item 9: an output onto the results directory being read (it
# replaced the dataset, exit 0, and the directory then read as damaged).
@pytest.mark.parametrize("name", ["results.parquet", "journal.jsonl", "study.toml"])
def test_report_out_onto_its_own_results_is_refused(places: dict[str, str], tmp_path: Path, name: str) -> None:
    sweep = tmp_path / "sweep"
    shutil.copytree(places["ok"], sweep)
    before = {p.name: p.read_bytes() for p in sweep.iterdir() if p.is_file()}
    assert_refused(_run(["report", str(sweep), "--out", str(sweep / name)]), f"--out {sweep / name}")
    assert {p.name: p.read_bytes() for p in sweep.iterdir() if p.is_file()} == before
    assert _run(["results", str(sweep)]).returncode == 0


# -- issue 62, item 12: results --sql had no row or time cap.
def test_results_sql_is_capped_in_rows_and_time(places: dict[str, str]) -> None:
    assert_refused(_run(["results", places["ok"], "--sql", "SELECT * FROM range(20000)"]), "--max-rows")
    forever = "SELECT count(*) FROM range(1000000000000000000)"
    assert_refused(_run(["results", places["ok"], "--sql", forever, "--timeout", "0.5"]), "--timeout")
    assert_refused(_run(["results", places["ok"], "--max-rows", "5"]), "--max-rows is for --sql")


# -- issue 62, item 12: a manifest of another format, and a journal line that
# is JSON but no record (it was dropped without a word: n = 1 for 2 seeds).
def test_a_results_directory_that_is_not_what_it_seems_is_refused(places: dict[str, str], tmp_path: Path) -> None:
    future = Path(shutil.copytree(places["ok"], tmp_path / "future"))
    manifest = json.loads((future / "manifest.json").read_text())
    (future / "manifest.json").write_text(json.dumps({**manifest, "format": 99}))
    for command in (["results"], ["report"], ["plot", "--x", "load.qps", "--y", "throughput_qps"]):
        assert_refused(_run([command[0], str(future), *command[1:]]), "format 99")
    noted = Path(shutil.copytree(places["ok"], tmp_path / "noted"))
    lines = (noted / "journal.jsonl").read_text().splitlines()
    (noted / "journal.jsonl").write_text("\n".join([lines[0], '{"note": "by hand"}', *lines[1:]]) + "\n")
    (noted / "results.parquet").unlink()
    assert_refused(_run(["results", str(noted)]), "journal.jsonl line 2")
    assert_refused(_run(["sweep", places["small"], "--grid", "load.qps=1000,2000", *T, "--out", str(noted),
                         "--quiet"]), "journal.jsonl line 2")


# -- issue 62, item 10: a "scheduler" that accepts and never answers hung the
# sweep until killed. The kernel completes the connection into the listen
# backlog, so nothing here ever answers (tests/python/test_sweep_dask.py has
# the garbage-sending peers).
def test_a_dask_scheduler_that_never_answers_is_one_line_within_the_timeout(places: dict[str, str], tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        result = _run(["sweep", places["small"], *T, "--executor", "dask", "--scheduler", address,
                       "--connect-timeout", "2", "--out", str(tmp_path / "never")])
    assert_refused(result, "within 2 s")
    assert not (tmp_path / "never").exists()


# -- issue 62, item 11: an empty program name after -- was a traceback from posix_spawnp.
def test_linux_exec_with_an_empty_program_name_is_one_sentence() -> None:
    assert_refused(_run(["linux", "exec", "--profile", "busy-wait", "--", ""]), "the command after --")
