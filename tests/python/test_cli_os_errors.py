"""Files and streams that are not what they seem (issue 8, item 9): a device,
FIFO, directory or huge file given as the scenario, standard output on a full
disk, an `--out` that cannot be written. Each ends in one `irqlab: error:`
line, never a hang, a traceback or "Exception ignored"."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys

import pytest

from conftest import REPO, SHORT, SMALL, irqlab
import irqlab.scenario
from irqlab import Scenario, ScenarioError

#: The cap on a scenario file's size (irqlab.scenario.MAX_SCENARIO_BYTES), 4 MiB.
MAX_SCENARIO_BYTES = 4 * 1024 * 1024

S = str(SMALL)
FULL = "/dev/full"


def irqlab_bounded(*args: str, timeout: float = 30, stdout=subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """`python -m irqlab ARGS` with its memory capped (a command that reads
    /dev/zero to the end fails fast instead of filling the machine)."""

    def cap_memory() -> None:
        limit = 3 * 1024**3
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "irqlab", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        timeout=timeout,
        preexec_fn=cap_memory,
    )


def one_error_line(result: subprocess.CompletedProcess[str], status: int, *needles: str) -> str:
    assert result.returncode == status, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("irqlab: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    return lines[0]


# -- the scenario file --------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused_without_reading_it():
    result = irqlab_bounded("run", "/dev/zero")
    one_error_line(result, 2, "/dev/zero", "character device")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    result = irqlab_bounded("run", str(fifo), timeout=20)
    one_error_line(result, 2, str(fifo), "FIFO")


def test_a_directory_is_refused(tmp_path):
    result = irqlab_bounded("run", str(tmp_path))
    one_error_line(result, 2, str(tmp_path), "directory")


def test_a_scenario_larger_than_the_cap_is_refused(tmp_path, small_text):
    big = tmp_path / "big.toml"
    big.write_text(small_text + "#" * (MAX_SCENARIO_BYTES - len(small_text.encode())) + "\n")
    assert big.stat().st_size == MAX_SCENARIO_BYTES + 1
    with pytest.raises(ScenarioError, match=r"big\.toml.*at most 4194304 bytes \(4 MiB\)"):
        Scenario.load(big)
    one_error_line(irqlab_bounded("run", str(big)), 2, "big.toml", "4 MiB")


def test_a_scenario_of_exactly_the_cap_is_read(tmp_path, small_text):
    exact = tmp_path / "exact.toml"
    exact.write_text(small_text + "#" * (MAX_SCENARIO_BYTES - len(small_text.encode()) - 1) + "\n")
    assert exact.stat().st_size == MAX_SCENARIO_BYTES
    assert Scenario.load(exact).name == "small"


def test_the_cap_is_4_mib():
    assert getattr(irqlab.scenario, "MAX_SCENARIO_BYTES", None) == MAX_SCENARIO_BYTES


# -- standard output ----------------------------------------------------------


def _to_dev_full(*args: str) -> subprocess.CompletedProcess[str]:
    with open(FULL, "w") as full:
        return irqlab_bounded(*args, stdout=full, timeout=120)


@pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full")
@pytest.mark.parametrize("args", [["profiles"], ["profiles", "--json"], ["--help"]])
def test_output_to_a_full_disk_is_one_error_line_and_status_1(args):
    one_error_line(_to_dev_full(*args), 1, "standard output", os.strerror(errno.ENOSPC))


@pytest.mark.needs_run
@pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full")
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_run_to_a_full_disk_is_one_error_line_and_status_1(json_flag):
    result = _to_dev_full("run", S, "--duration", SHORT, *json_flag)
    one_error_line(result, 1, "standard output", os.strerror(errno.ENOSPC))


# -- irqlab reproduce --out ---------------------------------------------------

# --no-vm: a VM run this short rightly warns (its client cannot offer the
# highest load), and these tests check that stderr is the one error line.
TINY = ["--closed-duration", "0.001", "--open-duration", "0.001", "--no-plots", "--quiet", "--no-vm"]


@pytest.fixture
def no_runs(monkeypatch):
    """Make any simulation by `reproduce` fail the test: --out is checked first."""
    import irqlab.reproduce.thesis as thesis

    def refuse(*args, **kwargs):
        raise AssertionError("reproduce ran simulations before checking --out")

    monkeypatch.setattr(thesis, "run_thesis", refuse)


def _main(*args: str) -> int:
    from irqlab.cli import main

    return main(list(args))


def test_reproduce_out_that_is_a_file_is_refused_before_any_run(tmp_path, no_runs, capsys):
    target = tmp_path / "passwd"
    target.write_text("root:x:0:0::/root:/bin/sh\n")
    assert _main("reproduce", "thesis", "--out", str(target), *TINY) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("irqlab: error: --out "), err
    assert str(target) in err[0] and "not a directory" in err[0]
    assert target.read_text() == "root:x:0:0::/root:/bin/sh\n"


@pytest.mark.parametrize("where", ["file/sub", "/proc/self"])
def test_reproduce_out_that_cannot_be_written_is_refused_before_any_run(tmp_path, no_runs, capsys, where):
    (tmp_path / "file").write_text("")
    out = where if where.startswith("/") else str(tmp_path / where)
    assert _main("reproduce", "thesis", "--out", out, *TINY) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("irqlab: error: --out "), err
    assert out in err[0]


def test_reproduce_out_is_created_and_left_clean_by_the_check(tmp_path, monkeypatch):
    import irqlab.reproduce.thesis as thesis

    out = tmp_path / "a"  # one level: a missing parent is refused (test_output_paths.py)
    seen = []

    def stop(*args, **kwargs):
        seen.append(sorted(os.listdir(out)))
        raise KeyboardInterrupt

    monkeypatch.setattr(thesis, "run_thesis", stop)
    assert _main("reproduce", "thesis", "--out", str(out), *TINY) == 130
    assert seen == [["reproduction.json"]], "the directory exists and is marked before the runs; the probe file is gone"


@pytest.mark.needs_run
def test_reproduce_out_in_place_of_a_file_it_writes_is_one_line_status_1(tmp_path):
    # An OS error while writing (here: a directory where a CSV goes) after the
    # runs; --force, as a directory holding other things is refused before them.
    out = tmp_path / "out"
    (out / "table-4.1.csv").mkdir(parents=True)
    result = irqlab_bounded("reproduce", "thesis", "--out", str(out), "--force", *TINY, timeout=300)
    one_error_line(result, 1, "table-4.1.csv")


@pytest.mark.needs_run
@pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full")
def test_reproduce_to_a_full_disk_is_one_line_status_1(tmp_path):
    result = _to_dev_full("reproduce", "thesis", "--out", str(tmp_path / "out"), *TINY)
    one_error_line(result, 1, "standard output", os.strerror(errno.ENOSPC))
