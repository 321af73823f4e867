"""tools/fit_vic.py: its flags and its objective, on a stand-in for the simulator (no fit is run here)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "fit_vic.py"

# Prints a storage report: the paper's Table 2 baseline for the OIO it is
# given (off by `skew` in IOPS), and a halted share of 65 %.
FAKE = """#!{python}
import json, sys
paper = {{8: (30500.0, 84200.0), 16: (38400.0, 77000.0), 32: (46400.0, 70500.0), 64: (52900.0, 78400.0)}}
args = dict(a.split("=", 1) for a in sys.argv[2:])
iops, cycles = paper[int(args["storage.oio"])]
print(json.dumps({{"storage": {{"iops": iops * {skew}, "cycles_per_io": cycles, "vcpu_halt_pct": 65.0}}}}))
"""


@pytest.fixture(scope="module")
def fit_vic():
    spec = importlib.util.spec_from_file_location("fit_vic", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake(tmp_path: Path, skew: float) -> str:
    path = tmp_path / f"fake-{skew}"
    path.write_text(FAKE.format(python=sys.executable, skew=skew))
    path.chmod(0o755)
    return str(path)


def test_the_objective_is_zero_on_the_papers_numbers_and_counts_each_error(fit_vic, tmp_path):
    p = {"scale": 1.0, "vmk": 25_000, "service": 20_000, "latency": 160_000}
    err, sims = fit_vic.objective(fake(tmp_path, 1.0), p)
    assert err == 0.0 and set(sims) == {8, 16, 32, 64}
    # IOPS 10 % high at each of the four OIO: 4 x 0.01.
    err, _ = fit_vic.objective(fake(tmp_path, 1.1), p)
    assert err == pytest.approx(0.04)
    fit_vic.WITH_HALT = True
    try:
        err, sims = fit_vic.objective(fake(tmp_path, 1.0), p)
    finally:
        fit_vic.WITH_HALT = False
    assert err == 0.0 and sims["halt"] == 65.0


def test_the_scale_multiplies_every_first_estimate(fit_vic):
    o = dict(a.split("=", 1) for a in fit_vic.overrides({"scale": 0.5, "vmk": 1, "service": 2, "latency": 3}))
    for key, value in fit_vic.ESTIMATES.items():
        assert int(o[key]) == round(value * 0.5)
    assert (o["storage.vmk_complete_cycles"], o["storage.array_service_ns"], o["storage.array_latency_ns"]) == ("1", "2", "3")
    assert o["vic.enabled"] == "false"


@pytest.mark.parametrize("flags", [["--rounds", "0"], ["--points", "2"], ["--seeds", "11"], ["--warmup", "5"],
                                   ["--centre", "1,2,x,4"]])
def test_bad_flags_exit_2_with_one_sentence(tmp_path, flags):
    proc = subprocess.run([sys.executable, str(TOOL), "--run", fake(tmp_path, 1.0), *flags],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("fit_vic:") and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_a_fit_prints_every_constant_it_chose(tmp_path):
    proc = subprocess.run([sys.executable, str(TOOL), "--run", fake(tmp_path, 1.0), "--rounds", "1", "--points", "3",
                           "--jobs", "2", "--centre", "0.5,40000,20000,180000"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    constants = proc.stdout.splitlines()[-1]
    assert constants.startswith("constants: ")
    for key in ("storage.vmk_complete_cycles=", "storage.array_service_ns=", "storage.array_latency_ns=",
                "storage.guest_issue_cycles="):
        assert key in constants, constants
    assert "best: objective 0.0000, RMS error 0.0 %" in proc.stdout
