"""The thesis's VM results (§4.6) in ``irqlab reproduce thesis``: Tables 4.4
and 4.5 and Figures 4.4 and 4.5, run as Table 4.1 and Figure 4.1 are, and
the §4.6 claims (P1-P6) checked on them.

No simulated number is pinned and no claim is required to hold: the VM
results are the model's predictions. What is pinned is how they are run
(the bare-metal studies' seeds, durations and loads), what the reports
show, and that a setup without its scenario file is skipped, saying so.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab.reproduce.thesis import (
    PROFILES,
    VIRTIO_PROFILES,
    VM_PAPER_UNAVAILABLE,
    VM_SETUPS,
    ThesisResult,
    VmResult,
    VmSetup,
    run_thesis,
    vm_checks,
    vm_table_rows,
)

ROOT = Path(__file__).resolve().parents[2]
THESIS = ROOT / "scenarios" / "thesis"

pytestmark = pytest.mark.needs_run

LOADS = (100_000, 300_000)
SHORT = {"closed_duration_s": 0.05, "open_duration_s": 0.02, "loads": LOADS}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("thesis-vm")
    return run_thesis(out=out, quiet=True, cai_karsten=False, leave_one_out=False, **SHORT)


def test_setups_are_the_thesis_vm_tables_and_figures():
    assert [(s.key, s.scenario, s.table, s.figure, s.claims) for s in VM_SETUPS] == [
        ("virtio-aligned", "virtio-aligned.toml", "4.2", "4.2", "virtio"),
        ("virtio-packed", "virtio-packed.toml", "4.3", "4.3", "virtio"),
        ("passthrough", "passthrough.toml", "4.4", "4.4", "passthrough"),
        ("sriov", "sriov.toml", "4.5", "4.5", "passthrough"),
    ]
    # VirtIO has no adaptive coalescing (§4.5).
    assert all(s.profiles == (VIRTIO_PROFILES if s.claims == "virtio" else PROFILES) for s in VM_SETUPS)
    assert VIRTIO_PROFILES == ("no-coalescing", "irq-suspend", "busy-wait")


def test_vm_runs_are_the_bare_metal_runs_in_a_guest(result):
    # Same profiles, loads, durations and seeds as Table 4.1 and Figure 4.1:
    # each VM run has the seed of the bare-metal run it is compared with.
    from irqlab import results

    assert list(result.vm) == [s.key for s in VM_SETUPS] and result.vm_skipped == []
    for vm in result.vm.values():
        kind = "virtio" if vm.setup.claims == "virtio" else vm.setup.key
        assert sorted(vm.closed) == sorted(vm.setup.profiles)
        assert sorted(vm.open) == sorted(k for k in result.open if k[0] in vm.setup.profiles)
        for p, s in vm.closed.items():
            assert s.vm.kind == kind and s.seed == result.closed[p].seed
            assert s.sim_time_s == result.closed[p].sim_time_s
        for key, s in vm.open.items():
            assert s.vm.kind == kind and s.seed == result.open[key].seed
            assert s.sim_time_s == result.open[key].sim_time_s
        # Read from the setup's own results stores.
        stores = {d.name: d for d in result.directories}
        table, figure = results.load(stores[vm.setup.table_study]), results.load(stores[vm.setup.figure_study])
        assert sorted(table["profile"]) == sorted(vm.setup.profiles) and set(figure["load.qps"]) == set(LOADS)
        row = table[table["profile"] == "busy-wait"].iloc[0]
        assert vm.closed["busy-wait"].throughput_qps == row["throughput_qps"]
    assert all(s.get("vm") is None for s in result.closed.values())


def test_vm_table_rows(result):
    for setup in VM_SETUPS:
        rows = vm_table_rows(result, setup)
        assert [r["profile"] for r in rows] == list(setup.profiles)
        for r in rows:
            s = result.vm[setup.key].closed[r["profile"]]
            assert r["qps"] == s.throughput_qps and r["cycles_per_query"] == s.cycles_per_query
            assert r["host_busy_pct"] == pytest.approx(100 - s.vm.host_cpu_pct.idle)
            assert r["vm_exits_per_s"] == s.vm.vm_exits_per_s
            assert r["virtual_irqs_per_s"] == s.vm.virtual_irqs_per_s
            assert r["steal"] == (s.cpu_pct.get("steal") or 0.0)  # absent (null in the store) when 0
            bare = result.closed[r["profile"]].throughput_qps
            assert r["qps_vs_bare_metal_pct"] == pytest.approx(100 * (s.throughput_qps / bare - 1))
            assert r["thesis"] == VM_PAPER_UNAVAILABLE
            assert r["ipc"] == s.ipc and s.ipc > 0
            # The host's split of the vCPU cores: guest mode as host_cpu_pct's,
            # exit time wherever exits are taken, vhost only where the
            # workers share the cores.
            split = s.vm.host_split_pct
            assert r["host_guest_pct"] == pytest.approx(s.vm.host_cpu_pct.guest)
            assert r["host_exit_pct"] == split.exit and (split.exit > 0) == (s.vm.vm_exits_per_s > 0)
            assert (r["host_vhost_pct"] > 0) == (setup.key == "virtio-aligned"), (setup.key, r)


def test_every_vm_claim_is_checked_on_every_setup(result):
    checks = vm_checks(result)
    for setup in VM_SETUPS:
        ids = [c.id for c in checks if c.setup == setup.key]
        if setup.claims == "passthrough":
            assert {"P1", "P2", "P3", "P5", "P6"} <= set(ids)
            # P4: Figure 4.1's checks on the setup's figure (one per load >=
            # 300k, then four more).
            assert ids.count("P4") == 1 + 4
        else:
            # §4.5's claims, each on the setup it is about; P5 and P6 too.
            assert {"V3", "V6", "V8", "V10", "V12", "P5", "P6"} <= set(ids) and not {"P1", "P2", "P3", "P4"} & set(ids)
    assert {c.id for c in checks if c.setup == "virtio-aligned"} >= {"V1"}
    assert {c.id for c in checks if c.setup == "virtio-packed"} >= {"V2", "V4", "V5"}
    for c in checks:
        assert c.claim.startswith(f"{c.id} ") and c.detail and isinstance(c.holds, bool)


def test_a_setup_without_some_profiles_and_a_missing_file(tmp_path, result):
    # A setup with three profiles (no adaptive-coalescing): the claims about
    # adaptive-coalescing are left out for it, the others checked.
    setup = VmSetup("three", "three profiles", "TP", "passthrough.toml", "9.1", "9.1",
                    ("no-coalescing", "irq-suspend", "busy-wait"))
    pt = result.vm["passthrough"]
    vm = VmResult(setup, {p: s for p, s in pt.closed.items() if p in setup.profiles},
                  {k: s for k, s in pt.open.items() if k[0] in setup.profiles})
    r = ThesisResult(closed=result.closed, open=result.open, vm={setup.key: vm})
    checks = vm_checks(r)
    p1 = next(c for c in checks if c.id == "P1")
    assert "is/nc" in p1.detail and "/ad" not in p1.detail
    assert not any("adaptive-coalescing" in c.claim for c in checks)
    # A setup whose scenario file does not exist is skipped, saying so.
    missing = VmSetup("virtio-aligned", "VirtIO", "VA", "no-such-setup.toml", "9.2", "9.2",
                      ("no-coalescing", "irq-suspend", "busy-wait"))
    skipped = run_thesis(out=tmp_path, quiet=True, cai_karsten=False, leave_one_out=False, vm_setups=(missing,),
                         closed_duration_s=0.01, open_duration_s=0.01, loads=(100_000,))
    assert skipped.vm == {}
    [message] = skipped.vm_skipped
    assert "Table 9.2 and Figure 9.2 (VirtIO) skipped" in message and "no-such-setup.toml does not exist" in message
    assert not (tmp_path / "table-9.2").exists()


def _fake(profile: str, vm: bool):
    from irqlab import Summary

    data = {
        "profile": profile, "throughput_qps": 0.0, "requests_completed": 0,
        "latency_us": {k: None for k in ("mean", "p50", "p95", "p99", "p999")},
        "cpu_pct": {"user": 0.0, "system": 0.0, "softirq": 0.0, "irq": 0.0, "idle": 100.0},
        "cycles_per_query": 0.0,
    }
    if vm:
        data["vm"] = {
            "kind": "passthrough", "vm_exits_per_s": 0.0, "virtual_irqs_per_s": 0.0, "halts_per_s": 0.0,
            "halt_poll_success_pct": 0.0,
            "host_cpu_pct": {"user": 0.0, "system": 0.0, "softirq": 0.0, "irq": 0.0, "idle": 100.0},
        }
    return Summary(data)


def test_vm_claims_and_text_without_throughput():
    # Runs that completed nothing: no exception, no "nan", and the claims
    # that need a throughput ratio do not hold.
    from irqlab.reproduce.report import vm_text

    loads = (100_000, 300_000)
    setup = VM_SETUPS[0]
    r = ThesisResult(
        closed={p: _fake(p, False) for p in PROFILES},
        open={(p, q): _fake(p, False) for p in PROFILES for q in loads},
        vm={setup.key: VmResult(setup, {p: _fake(p, True) for p in PROFILES},
                                {(p, q): _fake(p, True) for p in PROFILES for q in loads})},
    )
    checks = vm_checks(r)
    assert not any(c.holds for c in checks if c.id in ("P1", "P2", "P3"))
    assert all(c.status and not c.repeats for c in checks)
    text = vm_text(r, checks)
    assert "nan" not in text.lower() and f"Table {setup.table}" in text


def test_cli_reports_the_vm_tables_and_claims(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "irqlab", "reproduce", "thesis", "--out", str(out),
         "--closed-duration", "0.02", "--open-duration", "0.01", "--quiet"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    checks_title = "The thesis's VM claims (§4.5–4.6), checked on the simulation (BM = bare metal, QPS = closed loop)"
    for setup in VM_SETUPS:
        table = f"Table {setup.table} ({setup.label}, closed loop): irqlab; thesis unavailable"
        figure = f"Figure {setup.figure} ({setup.label}, open loop)"
        start = lines.index(table)
        assert lines[start + 1].split()[:3] == ["profile", "QPS", "vs"] and "exits/s" in lines[start + 1]
        rows = lines[start + 2 : start + 2 + len(setup.profiles)]
        assert [r.split()[0] for r in rows] == list(setup.profiles)
        assert all(r.endswith("unavailable") for r in rows)
        assert any(line.startswith(figure) for line in lines)
        assert table in md and figure in md
        assert html.count(f"<h3>{table}</h3>") == 1  # a part of the VM section, under its own heading
        assert f"Study {setup.table_study}" in html and f"Study {setup.figure_study}" in html
        for name in (f"{setup.table_study}.csv", f"{setup.figure_study}.csv", f"{setup.figure_study}a-p95.png",
                     f"{setup.figure_study}b-p99.png", f"{setup.figure_study}c-cpu.png",
                     f"{setup.table_study}/results.parquet", f"{setup.figure_study}/results.parquet"):
            assert (out / name).is_file(), name
    # The claims, after the tables, each with its verdict, numbers and
    # status; SR-IOV's repeat passthrough's (the model has no source for a
    # difference) and are not counted.
    [title_at] = [i for i, line in enumerate(lines) if line.startswith(checks_title + ": ")]
    assert title_at > lines.index("Table 4.5 (SR-IOV, closed loop): irqlab; thesis unavailable")
    claims = [line for line in lines[title_at + 1 :] if line.startswith("  [")]
    for setup in VM_SETUPS:
        ids = ("P1", "P2", "P3", "P4", "P5", "P6") if setup.claims == "passthrough" else ("V3", "V6", "V8", "P5", "P6")
        for claim in ids:
            assert any(f"] {claim} {setup.label}: " in line for line in claims), (claim, setup.key)
    sriov = [line for line in claims if " SR-IOV: " in line]
    assert sriov and all(line.endswith("[repeats full passthrough, not counted]") for line in sriov)
    assert f"; {len(sriov)} more repeat full passthrough's numbers run for run and are not counted" in lines[title_at]
    assert any(line.endswith("[by construction]") and "P5 full passthrough" in line for line in claims)
    assert any(line.endswith("[prediction]") and "P1 full passthrough" in line for line in claims)
    # P4 repeats Figure 4.1's claims with their statuses: F3 holds by construction.
    assert any(line.endswith("[by construction]") and "P4 full passthrough" in line and "busy-wait uses >= 99 %" in line
               for line in claims)
    assert checks_title in md and checks_title.replace("'", "&#x27;") in html
    assert "does not hold" in html or "holds" in html
    summaries = json.loads((out / "summaries.json").read_text())
    assert sorted(summaries["vm"]) == sorted(s.key for s in VM_SETUPS) and summaries["vm_checks"]


def test_cli_json_and_a_missing_scenario_file_is_skipped(tmp_path):
    # A copy of scenarios/thesis without sriov.toml, as the working
    # directory: passthrough is run, SR-IOV skipped with a message.
    shutil.copytree(THESIS, tmp_path / "scenarios" / "thesis")
    (tmp_path / "scenarios" / "thesis" / "sriov.toml").unlink()
    out = tmp_path / "out"
    args = [sys.executable, "-m", "irqlab", "reproduce", "thesis", "--out", str(out),
            "--closed-duration", "0.02", "--open-duration", "0.01", "--quiet", "--no-plots"]
    proc = subprocess.run(args + ["--json"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [v["setup"] for v in report["vm"]] == ["virtio-aligned", "virtio-packed", "passthrough"]
    vm = report["vm"][2]
    assert (vm["setup"], vm["table"], vm["figure"], vm["thesis"]) == ("passthrough", "4.4", "4.4", "unavailable")
    assert [r["profile"] for r in vm["table_rows"]] == list(PROFILES)
    row = vm["table_rows"][0]
    for key in ("qps", "cycles_per_query", "user", "system", "softirq", "host_busy_pct", "vm_exits_per_s",
                "virtual_irqs_per_s"):
        assert isinstance(row[key], (int, float)) and not math.isnan(row[key]), key
    assert len(vm["figure_rows"]) == 9 * len(PROFILES) and "host_cpu_pct" in vm["figure_rows"][0]
    assert {c["setup"] for c in report["vm_checks"]} == {"virtio-aligned", "virtio-packed", "passthrough"}
    assert {c["id"] for c in report["vm_checks"] if c["setup"] == "passthrough"} == {"P1", "P2", "P3", "P4", "P5", "P6"}
    assert all(isinstance(c["holds"], bool) and c["detail"] for c in report["vm_checks"])
    assert all("id" not in c for c in report["checks"])  # the bare-metal claims as before
    [message] = report["vm_skipped"]
    assert message.startswith("Table 4.5 and Figure 4.5 (SR-IOV) skipped") and "sriov.toml does not exist" in message
    assert not (out / "table-4.5").exists()
    md = (out / "report.md").read_text()
    assert "Table 4.4 (full passthrough" in md and "Table 4.5 (SR-IOV" not in md and message in md
    assert message in (out / "report.html").read_text()
    # In the terminal, too.
    proc = subprocess.run(args + ["--resume"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"skipped: {message}" in proc.stdout.splitlines()


def test_a_setup_that_repeats_another_run_for_run_is_not_counted():
    from irqlab.reproduce.claim import CONSTRUCTION, PREDICTION, ShapeCheck, tally
    from irqlab.reproduce.thesis import repeated_setups

    pt, sr = VM_SETUPS[2], VM_SETUPS[3]

    def runs(setup, qps):
        closed = {p: _fake(p, True) for p in PROFILES}
        for s in closed.values():
            s._data["throughput_qps"] = qps
        return VmResult(setup, closed, {(p, 100_000): _fake(p, True) for p in PROFILES})

    base = ThesisResult(closed={p: _fake(p, False) for p in PROFILES})
    same = ThesisResult(closed=base.closed, vm={pt.key: runs(pt, 5.0), sr.key: runs(sr, 5.0)})
    assert repeated_setups(same) == {sr.key: pt.label}
    checks = vm_checks(same)
    assert {c.repeats for c in checks if c.setup == sr.key} == {pt.label}
    assert {c.repeats for c in checks if c.setup == pt.key} == {""}
    # One number that differs makes it evidence of its own.
    differs = ThesisResult(closed=base.closed, vm={pt.key: runs(pt, 5.0), sr.key: runs(sr, 6.0)})
    assert repeated_setups(differs) == {}
    # The tally counts by status and leaves the repeats out.
    t = tally([
        ShapeCheck("a", True, "", "P1", "x", PREDICTION), ShapeCheck("b", False, "", "P5", "x", CONSTRUCTION),
        ShapeCheck("c", True, "", "P1", "y", PREDICTION, "X"),
    ])
    assert t == "1 of 2 hold (1 of 1 predictions, 0 of 1 by construction); 1 more repeat X's numbers run for run and are not counted"
