"""Outputs that cannot destroy (``irqlab.files``; README "Where output goes").

Every output path of every command: anything that exists and is not a
regular file (a device, a FIFO, a socket, a directory where a file is meant)
is refused in one sentence naming the option, and is still what it was
afterwards; a symbolic link is written through to its target; no missing
parent directory is created; a name is one path component; a reproduction
refuses another kind's directory without --force. All of it before any work.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from conftest import SMALL, irqlab

from irqlab import files
from irqlab.cli import main

ROOT = os.geteuid() == 0
DEV_NULL = Path("/dev/null")


def one_error_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("irqlab: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, err)
    assert "Traceback" not in err
    return lines[0]


def fingerprint(path: Path) -> tuple[int, int, int]:
    """What a path is (kind and device) without following a link: a rename
    over it would change the kind and the inode."""
    st = os.lstat(path)
    return stat.S_IFMT(st.st_mode), st.st_ino, st.st_rdev


@pytest.fixture
def specials(tmp_path: Path):
    """A FIFO, a listening socket's path, a directory and (as root) a
    character device made like /dev/null, each kept to check it afterwards."""
    made = {"fifo": tmp_path / "fifo", "dir": tmp_path / "adir", "socket": tmp_path / "sock"}
    os.mkfifo(made["fifo"])
    made["dir"].mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(made["socket"]))
    if ROOT:
        made["chardev"] = tmp_path / "null"
        os.mknod(made["chardev"], 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    before = {k: fingerprint(p) for k, p in made.items()}
    yield made
    server.close()
    for k, p in made.items():
        assert fingerprint(p) == before[k], f"{k} was replaced"


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """A directory that passes for a sweep's results (the refusals come before anything reads it)."""
    d = tmp_path / "results"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"format": 1, "name": "x", "fingerprint": "f", "axes": []}))
    return d


# -- the rules, on irqlab.files ---------------------------------------------------


def test_check_output_file_refuses_every_special_file_and_names_the_flag(specials):
    for kind, path in specials.items():
        with pytest.raises(files.OutputPathError) as e:
            files.check_output_file(path, "--out")
        assert str(e.value).startswith(f"--out {path} ") and "regular file" in str(e.value), str(e.value)


def test_write_whole_refuses_what_was_not_checked(specials):
    for kind, path in specials.items():
        with pytest.raises(files.NotARegularFile) as e:
            files.write_text_whole(path, "x")
        assert e.value.filename == str(path)


def test_a_symbolic_link_is_written_through_to_its_target(tmp_path):
    target = tmp_path / "target.txt"
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    files.check_output_file(link, "--out")  # absent target: accepted
    files.write_text_whole(link, "one")
    assert link.is_symlink() and target.read_text() == "one"
    files.write_text_whole(link, "two")  # an existing regular target is replaced
    assert link.is_symlink() and target.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "target.txt"]  # no temporary file left


def test_a_link_to_a_special_file_or_a_missing_directory_is_refused(tmp_path, specials):
    to_fifo = tmp_path / "to-fifo"
    to_fifo.symlink_to(specials["fifo"])
    with pytest.raises(files.OutputPathError, match="symbolic link to .*is a FIFO"):
        files.check_output_file(to_fifo, "--out")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere" / "x.html")
    with pytest.raises(files.OutputPathError, match="does not exist"):
        files.check_output_file(dangling, "--out")
    assert to_fifo.is_symlink() and dangling.is_symlink()


def test_no_parent_directory_is_created(tmp_path):
    with pytest.raises(files.OutputPathError, match=r"--out .*: its directory .*missing does not exist"):
        files.check_output_file(tmp_path / "missing" / "x.html", "--out")
    with pytest.raises(files.OutputPathError, match="its directory .* does not exist"):
        files.make_output_dir(tmp_path / "missing" / "out", "--out")
    assert not (tmp_path / "missing").exists()
    files.make_output_dir(tmp_path / "one", "--out")  # one level: the output directory itself
    assert (tmp_path / "one").is_dir()


@pytest.mark.parametrize("name", ["", ".", "..", "../../x", "a/b", "/abs", "a\nb", "x" * 256])
def test_a_name_is_one_path_component(name):
    with pytest.raises(files.OutputPathError, match="--name must be one file name"):
        files.check_name(name, "--name")


def test_a_plain_name_passes():
    assert files.check_name("app-cores.v2 ü", "--name") == "app-cores.v2 ü"


# -- irqlab report -----------------------------------------------------------------


def test_report_out_dev_null_is_refused_and_stays_a_device(results_dir, capsys):
    if not DEV_NULL.exists():
        pytest.skip("no /dev/null")
    before = fingerprint(DEV_NULL)
    assert main(["report", str(results_dir), "--out", str(DEV_NULL)]) == 2
    one_error_line(capsys.readouterr().err, "--out /dev/null", "character device", "regular file")
    assert fingerprint(DEV_NULL) == before and stat.S_ISCHR(os.stat(DEV_NULL).st_mode)
    assert not (results_dir / "plots").exists(), "nothing drawn before the refusal"


def test_report_out_special_files_are_refused(results_dir, specials, capsys):
    for kind, path in specials.items():
        assert main(["report", str(results_dir), "--out", str(path)]) == 2, kind
        one_error_line(capsys.readouterr().err, f"--out {path}")


def test_report_out_in_a_missing_directory_is_refused_and_not_created(results_dir, tmp_path, capsys):
    target = tmp_path / "nonexistent" / "x.html"
    assert main(["report", str(results_dir), "--out", str(target)]) == 2
    one_error_line(capsys.readouterr().err, f"--out {target}", f"its directory {target.parent} does not exist")
    assert not target.parent.exists()


def test_report_refuses_a_special_file_where_its_default_page_or_figures_go(results_dir, capsys):
    os.mkfifo(results_dir / "report.html")
    assert main(["report", str(results_dir)]) == 2
    one_error_line(capsys.readouterr().err, str(results_dir / "report.html"), "FIFO")
    (results_dir / "report.html").unlink()
    (results_dir / "plots").write_text("not a directory")
    assert main(["report", str(results_dir)]) == 2
    one_error_line(capsys.readouterr().err, str(results_dir / "plots"), "not a directory")


@pytest.mark.needs_run
def test_report_writes_through_a_link_and_replaces_a_regular_file(tmp_path):
    out = tmp_path / "sweep"
    done = irqlab("sweep", str(SMALL), "--grid", "load.qps=1000,2000", "--duration", "0.005", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    target = tmp_path / "page.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    done = irqlab("report", str(out), "--out", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("<!DOCTYPE html>")


# -- irqlab plot and sweep -----------------------------------------------------------


def test_plot_out_must_be_a_directory_whose_parent_exists(results_dir, specials, tmp_path, capsys):
    for kind, path in specials.items():
        if kind == "dir":
            continue
        assert main(["plot", str(results_dir), "--x", "load.qps", "--y", "x", "--out", str(path)]) == 2, kind
        one_error_line(capsys.readouterr().err, f"--out {path}", "not a directory")
    deep = tmp_path / "no" / "figs"
    assert main(["plot", str(results_dir), "--x", "load.qps", "--y", "x", "--out", str(deep)]) == 2
    one_error_line(capsys.readouterr().err, "does not exist")
    assert not deep.parent.exists()


def test_sweep_name_must_stay_inside_the_results_directory(tmp_path):
    done = subprocess_in(tmp_path, "sweep", str(SMALL), "--name", "../../x", "--duration", "0.005")
    assert done.returncode == 2
    one_error_line(done.stderr, "--name", "'../../x'")
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent.parent / "x").exists()


def test_sweep_out_in_a_missing_directory_or_on_a_special_file_is_refused(tmp_path, specials):
    deep = tmp_path / "nonexistent" / "out"
    done = irqlab("sweep", str(SMALL), "--duration", "0.005", "--out", str(deep))
    assert done.returncode == 2
    one_error_line(done.stderr, f"--out {deep}", "does not exist")
    assert not deep.parent.exists()
    done = irqlab("sweep", str(SMALL), "--duration", "0.005", "--out", str(specials["fifo"]))
    assert done.returncode == 2
    one_error_line(done.stderr, "--out", "FIFO")


def subprocess_in(cwd: Path, *args: str):
    import subprocess

    return subprocess.run([sys.executable, "-m", "irqlab", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


# -- irqlab linux exec --control and linux tune --out ----------------------------------


def test_exec_control_dev_null_is_refused_and_the_program_never_runs(tmp_path):
    if not DEV_NULL.exists():
        pytest.skip("no /dev/null")
    before = fingerprint(DEV_NULL)
    ran = tmp_path / "ran"
    done = irqlab("linux", "exec", "--profile", "busy-wait", "--control", str(DEV_NULL), "--", "touch", str(ran))
    assert done.returncode == 2
    one_error_line(done.stderr, "--control /dev/null", "character device")
    assert fingerprint(DEV_NULL) == before and stat.S_ISCHR(os.stat(DEV_NULL).st_mode)
    assert not ran.exists()


def test_exec_control_special_files_and_missing_directories_are_refused(tmp_path, specials, capsys):
    for kind, path in {**specials, "missing": tmp_path / "no" / "ctl"}.items():
        assert main(["linux", "exec", "--profile", "busy-wait", "--control", str(path), "--", "true"]) == 2, kind
        one_error_line(capsys.readouterr().err, f"--control {path}")
    assert not (tmp_path / "no").exists()


def test_linux_tune_out_etc_passwd_is_refused_before_anything(capsys, monkeypatch):
    # Refused before the device is even looked at: the device does not exist.
    passwd = Path("/etc/passwd")
    digest = hashlib.sha256(passwd.read_bytes()).hexdigest() if passwd.exists() else None
    import irqlab.linux.tune_cmd as tune_cmd

    monkeypatch.setattr(tune_cmd, "tune_knob", lambda *a, **k: pytest.fail("the search started"))
    status = main(["linux", "tune", "nosuchdev0", "--knob", "gro_flush_timeout", "--range", "0:200000",
                   "--objective", "throughput", "--load", "irqlab loadgen --server 127.0.0.1:11211",
                   "--out", str(passwd)])
    assert status == 2
    one_error_line(capsys.readouterr().err, "--out /etc/passwd", "not a directory")
    if digest is not None:
        assert hashlib.sha256(passwd.read_bytes()).hexdigest() == digest


def test_results_outputs_refuse_another_commands_directory(tmp_path, results_dir):
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune" / "tune.json").write_text("{}")
    # A sweep's results, a tuner's, a reproduction's and other files are
    # each refused by the commands that write another kind.
    with pytest.raises(files.OutputPathError, match="holds a sweep's results"):
        files.check_results_out(results_dir, "--out", "linux tune")
    with pytest.raises(files.OutputPathError, match="holds the output of irqlab linux tune"):
        files.check_results_out(tmp_path / "tune", "--out", "testbed run")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(files.OutputPathError, match="files that irqlab did not write"):
        files.check_results_out(tmp_path / "other", "--out", "testbed tune")
    # Its own earlier output, an empty and a new directory are fine.
    files.check_results_out(tmp_path / "tune", "--out", "linux tune")
    files.check_results_out(tmp_path / "new", "--out", "linux tune")


def test_testbed_out_is_checked_before_the_testbed_is_built(tmp_path, specials, monkeypatch, capsys):
    from irqlab.testbed import netns

    monkeypatch.setattr(netns.Testbed, "create", lambda self: pytest.fail("the testbed was built"))
    for command in (["run"], ["tune"]):
        for path in (specials["fifo"], tmp_path / "no" / "out", specials["fifo"] / "x"):
            assert main(["testbed", *command, "--out", str(path)]) == 2
            one_error_line(capsys.readouterr().err, f"--out {path}")


# -- irqlab reproduce ----------------------------------------------------------------


def test_reproduce_refuses_another_reproductions_directory(tmp_path, monkeypatch, capsys):
    import irqlab.reproduce.iaps as iaps

    itr_out = tmp_path / "itr"
    itr_out.mkdir()
    (itr_out / "reproduction.json").write_text(json.dumps({"kind": "itr"}))
    (itr_out / "report.html").write_text("the ITR report")
    monkeypatch.setattr(iaps, "run_iaps", lambda *a, **k: pytest.fail("the reproduction ran"))
    assert main(["reproduce", "iaps", "--out", str(itr_out)]) == 2
    one_error_line(capsys.readouterr().err, f"--out {itr_out}", "irqlab reproduce itr", "--force")
    assert (itr_out / "report.html").read_text() == "the ITR report"
    assert json.loads((itr_out / "reproduction.json").read_text()) == {"kind": "itr"}


def test_reproduce_resume_refuses_a_plain_sweep(results_dir, monkeypatch, capsys):
    import irqlab.reproduce.itr as itr

    monkeypatch.setattr(itr, "run_itr", lambda *a, **k: pytest.fail("the reproduction ran"))
    before = sorted(p.name for p in results_dir.iterdir())
    assert main(["reproduce", "itr", "--resume", "--out", str(results_dir)]) == 2
    one_error_line(capsys.readouterr().err, f"--out {results_dir}", "a sweep's results", "--force")
    assert sorted(p.name for p in results_dir.iterdir()) == before


def test_reproduce_recognises_an_output_written_before_the_marker(tmp_path, monkeypatch, capsys):
    import irqlab.reproduce.itr as itr
    import irqlab.reproduce.sriov as sriov

    legacy = tmp_path / "legacy-itr"
    for study in ("figure-3", "figure-5"):
        (legacy / study).mkdir(parents=True)
        (legacy / study / "manifest.json").write_text("{}")
    monkeypatch.setattr(sriov, "run_sriov", lambda *a, **k: pytest.fail("the reproduction ran"))
    assert main(["reproduce", "sriov", "--out", str(legacy)]) == 2
    one_error_line(capsys.readouterr().err, "irqlab reproduce itr")
    # The same kind is recognised and marked; its run is the next step.
    seen = []

    def stop(*args, **kwargs):
        seen.append(json.loads((legacy / "reproduction.json").read_text())["kind"])
        raise KeyboardInterrupt

    monkeypatch.setattr(itr, "run_itr", stop)
    assert main(["reproduce", "itr", "--resume", "--out", str(legacy)]) == 130
    assert seen == ["itr"]


def test_reproduce_force_writes_into_another_kind(tmp_path, monkeypatch):
    import irqlab.reproduce.iaps as iaps

    out = tmp_path / "itr"
    out.mkdir()
    (out / "reproduction.json").write_text(json.dumps({"kind": "itr"}))
    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(iaps, "run_iaps", stop)
    assert main(["reproduce", "iaps", "--force", "--out", str(out)]) == 130
    assert json.loads((out / "reproduction.json").read_text())["kind"] == "iaps"


def test_reproduce_out_special_files_and_missing_parents_are_refused(tmp_path, specials, capsys):
    for path in (specials["fifo"], specials["socket"], tmp_path / "no" / "out"):
        assert main(["reproduce", "itr", "--out", str(path)]) == 2
        one_error_line(capsys.readouterr().err, f"--out {path}")
    assert not (tmp_path / "no").exists()
    # A FIFO where a reproduction writes its report.
    out = tmp_path / "out"
    out.mkdir()
    (out / "reproduction.json").write_text(json.dumps({"kind": "itr"}))
    os.mkfifo(out / "report.md")
    assert main(["reproduce", "itr", "--out", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out / "report.md"), "FIFO")
    assert stat.S_ISFIFO(os.lstat(out / "report.md").st_mode)


# -- issue 62, item 9: no output is an input or a results directory's own file -------


def test_a_results_directorys_own_files_are_refused_as_output(results_dir, tmp_path):
    (results_dir / "journal.jsonl").write_text("{}\n")
    for name in sorted(files.RESULTS_DIR_FILES):
        with pytest.raises(files.OutputPathError) as e:
            files.check_output_file(results_dir / name, "--out")
        assert str(e.value).startswith(f"--out {results_dir / name} is the {name} of the results directory {results_dir}")
    # Through a symbolic link too.
    link = tmp_path / "innocent.parquet"
    link.symlink_to(results_dir / "results.parquet")
    with pytest.raises(files.OutputPathError, match="symbolic link to .* results directory"):
        files.check_output_file(link, "--out")
    # The report's default page and any other new file in it are fine, and so
    # is a file of those names in a directory that is no results directory.
    files.check_output_file(results_dir / "report.html", "")
    files.check_output_file(tmp_path / "results.parquet", "--out")
    (tmp_path / "scenario.toml").write_text("")
    files.check_output_file(tmp_path / "scenario.toml", "--out")


def test_the_kind_files_mark_a_results_directory_without_a_manifest(tmp_path):
    (tmp_path / "tune.json").write_text("{}")
    with pytest.raises(files.OutputPathError, match="results directory"):
        files.check_output_file(tmp_path / "tune.json", "--control")
    with pytest.raises(files.OutputPathError, match="results directory"):
        files.check_output_file(tmp_path / "journal.jsonl", "--control")


def test_the_names_cover_the_layout():
    from irqlab.study import layout

    names = {layout.MANIFEST, layout.JOURNAL, layout.RESULTS, layout.SCENARIO, layout.STUDY, *files.KIND_FILES.values()}
    assert names == set(files.RESULTS_DIR_FILES)


def test_an_output_that_is_an_input_is_refused(tmp_path):
    source = tmp_path / "in.toml"
    source.write_text("x")
    hard = tmp_path / "hard.toml"
    os.link(source, hard)
    link = tmp_path / "link.toml"
    link.symlink_to(source)
    for out in (source, hard, link):
        with pytest.raises(files.OutputPathError, match=r"is the file --in .*in\.toml names"):
            files.check_output_file(out, "--out", inputs=[("--in", source)])
    files.check_output_file(tmp_path / "other.toml", "--out", inputs=[("--in", source)])
    assert source.read_text() == "x"


@pytest.mark.parametrize("name", ["results.parquet", "journal.jsonl", "study.toml", "manifest.json", "scenario.toml"])
def test_report_out_onto_the_directory_it_reads_is_refused(results_dir, name, capsys):
    (results_dir / "journal.jsonl").write_text("")
    (results_dir / "results.parquet").write_text("the dataset")
    before = {p.name: p.read_bytes() for p in results_dir.iterdir()}
    assert main(["report", str(results_dir), "--out", str(results_dir / name)]) == 2
    one_error_line(capsys.readouterr().err, f"--out {results_dir / name}", "results directory")
    assert {p.name: p.read_bytes() for p in results_dir.iterdir()} == before


def test_another_commands_output_onto_a_results_directory_is_refused(results_dir, capsys):
    (results_dir / "journal.jsonl").write_text("")
    before = (results_dir / "journal.jsonl").read_bytes()
    ran = results_dir.parent / "ran"
    assert main(["linux", "exec", "--profile", "busy-wait", "--control", str(results_dir / "journal.jsonl"),
                 "--", "touch", str(ran)]) == 2
    one_error_line(capsys.readouterr().err, "--control", "results directory")
    assert (results_dir / "journal.jsonl").read_bytes() == before and not ran.exists()


def test_exec_control_and_shim_stats_cannot_be_one_file(tmp_path, capsys):
    # The shim would write its stats over the control file it reads.
    both = tmp_path / "both"
    ran = tmp_path / "ran"
    assert main(["linux", "exec", "--profile", "busy-wait", "--control", str(both), "--shim-stats", str(both),
                 "--", "touch", str(ran)]) == 2
    one_error_line(capsys.readouterr().err, f"--control {both}", f"--shim-stats {both}", "give each its own path")
    assert not both.exists() and not ran.exists()
