"""User errors: exit status 2 and one line `irqlab: error: <sentence>` naming
the flag or field, never a traceback. None of these needs a simulation."""

from __future__ import annotations

import pytest

from conftest import SMALL, irqlab

S = str(SMALL)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", S, "--bogus"], "--bogus"),
        (["run"], "SCENARIO"),
        (["frobnicate"], "frobnicate"),
        (["run", S, "--profile", "nope"], "nope"),
        (["run", S, "--set", "load.bogus=1"], "bogus"),
        (["run", S, "--set", "load.qps=abc"], "load.qps"),
        (["run", S, "--set", "cpu.app_cores=0"], "cpu.app_cores"),
        (["run", S, "--set", "load.get_fraction=1.5"], "load.get_fraction"),
        (["run", S, "--set", "no-equals-sign"], "key=value"),
        (["run", S, "--seed", "-1"], "--seed"),
        (["run", S, "--seed", "abc"], "--seed"),
        (["run", S, "--seed", "1.5"], "--seed"),
        (["run", S, "--duration", "0"], "--duration"),
        (["run", S, "--duration", "-2"], "--duration"),
        (["run", S, "--duration", "soon"], "--duration"),
        (["run", S, "--duration", "inf"], "--duration"),
        (["run", S, "--duration", "5000"], "run.duration_s"),
        (["run", "no/such/scenario.toml"], "no/such/scenario.toml"),
        (["bench", S, "--repeat", "0"], "--repeat"),
        (["bench", S, "--profile", "nope"], "nope"),
    ],
)
def test_user_error_is_one_line_and_exit_2(args, needle):
    result = irqlab(*args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("irqlab: error: ")
    assert needle in lines[0]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_bad_scenario_file_names_file_and_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[cpu]\napp_cores = 0\n")
    result = irqlab("run", str(bad))
    assert result.returncode == 2
    assert "bad.toml" in result.stderr and "cpu.app_cores" in result.stderr


def test_help_and_version_exit_0():
    assert irqlab("--help").returncode == 0
    assert irqlab("run", "--help").returncode == 0
    version = irqlab("--version")
    assert version.returncode == 0 and version.stdout.startswith("irqlab ")


def test_run_profile_cannot_be_set_as_an_override():
    # The profile is chosen with --profile; an override of run.profile would
    # bypass its knobs. Fails until the core rejects it (issue 8, item 6).
    result = irqlab("run", S, "--set", "run.profile=busy-wait")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: "), result.stderr
    assert "--profile" in lines[0]
    assert result.stdout == ""
