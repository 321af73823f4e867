"""Pins the shapes of the thesis reproduction (issue: Table 4.1 and Figure 4.1).

These tests run the simulator on the thesis scenario with short durations
and check the thesis's claims, not exact numbers, so that a later change
cannot silently break them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab.reproduce.thesis import (
    CAI_KARSTEN,
    PROFILES,
    TABLE_4_1,
    cai_karsten_rows,
    run_thesis,
    shape_checks,
    table_4_1_rows,
)

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "thesis" / "bare-metal.toml"

pytestmark = pytest.mark.needs_run


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("thesis")
    return run_thesis(
        SCENARIO, closed_duration_s=0.3, open_duration_s=0.3, loads=(100_000, 300_000, 500_000), out=out, quiet=True
    )


def test_table_4_1_within_tolerances(result):
    for row in table_4_1_rows(result):
        if row["metric"] in ("qps", "cycles_per_query"):
            assert abs(row["deviation"]) <= 10.0, row
        else:
            assert abs(row["deviation"]) <= 8.0, row


def test_throughput_order(result):
    q = {p: result.closed[p].throughput_qps for p in PROFILES}
    assert q["no-coalescing"] < q["adaptive-coalescing"] < q["irq-suspend"] <= q["busy-wait"]
    assert q["irq-suspend"] >= 0.97 * q["busy-wait"]


def test_polling_profiles_have_no_softirq_time(result):
    for p in ("irq-suspend", "busy-wait"):
        c = result.closed[p].cpu_pct
        assert c.softirq + c.irq <= 3.0, (p, c)


#: Claims the model misses, each documented in docs/calibration.md ("What
#: the disruption model changed"): at 300k QPS irq-suspend's p99 is about
#: 26 % above busy-wait's under the disruption model (22.6 % under the
#: fixed costs before it), past the check's 25 %.
KNOWN_MISSES = ("300k QPS: irq-suspend's p99 within 25 % of busy-wait's",)


def test_every_thesis_claim_holds_but_the_documented_misses(result):
    failed = [f"{c.claim}: {c.detail}" for c in shape_checks(result) if not c.holds]
    unexplained = [f for f in failed if not f.startswith(KNOWN_MISSES)]
    assert not unexplained, "\n".join(unexplained)


def test_paper_values_are_table_4_1():
    # The comparison column is the thesis's Table 4.1, nothing else.
    assert TABLE_4_1["irq-suspend"]["qps"] == 958_737
    assert TABLE_4_1["no-coalescing"]["softirq"] == 34


def test_cli_writes_table_and_plots(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "irqlab", "reproduce", "thesis", "--out", str(out),
         "--closed-duration", "0.05", "--open-duration", "0.02", "--quiet"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Table 4.1" in proc.stdout and "thesis" in proc.stdout
    for name in ("table-4.1.csv", "figure-4.1.csv", "explanations.csv", "summaries.json", "report.md",
                 "report.html", "figure-4.1a-p95.png", "figure-4.1b-p99.png", "figure-4.1c-cpu.png", "table-4.1.png",
                 "table-4.1/results.parquet", "figure-4.1/results.parquet", "figure-4.1/study.toml",
                 "cai-karsten.csv", "cai-karsten/results.parquet"):
        f = out / name
        assert f.is_file() and f.stat().st_size > 0, name
    assert (out / "figure-4.1b-p99.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"report: {out / 'report.html'}" in proc.stdout
    html = (out / "report.html").read_text()
    assert "Table 4.1" in html and "claims" in html and "http://" not in html and "https://" not in html
    # The second measurement beside Table 4.1, in all three outputs.
    title = "Cai & Karsten (SIGMETRICS 2024), 8 cores: a prediction, not a fit"
    stdout_lines = proc.stdout.splitlines()
    start = stdout_lines.index(title)
    assert start > stdout_lines.index("Table 4.1 (closed loop, memcached 8 cores): irqlab vs thesis")
    table = stdout_lines[start + 1 : start + 2 + len(CAI_KARSTEN)]
    assert table[0].split()[:3] == ["configuration", "their", "QPS"]
    for line, c in zip(table[1:], CAI_KARSTEN):
        assert line.startswith(c.name) and f"{c.qps:,}" in line and c.profile in line, line
    assert "a judgement" in proc.stdout
    assert html.count(title.replace("&", "&amp;")) == 2  # the contents and the heading
    for c in CAI_KARSTEN:
        assert f'<td class="text">{c.profile}</td>' in html and f"<td>{c.qps:,}</td>" in html
    assert "Study cai-karsten" in html
    assert title in (out / "report.md").read_text()
    # The leave-one-out predictions, after Table 4.1 and before Cai & Karsten.
    loo = "Out of sample: each profile predicted by the fit that left it out"
    assert stdout_lines.index("Table 4.1 (closed loop, memcached 8 cores): irqlab vs thesis") < stdout_lines.index(loo) < start
    rows = stdout_lines[stdout_lines.index(loo) + 3 : stdout_lines.index(loo) + 7]
    assert sorted(r.split()[0] for r in rows) == sorted(PROFILES)
    assert loo in html and loo in (out / "report.md").read_text()
    assert (out / "leave-one-out.csv").is_file() and (out / "leave-one-out" / "predictions.json").is_file()


def test_each_profile_is_predicted_by_the_fit_that_left_it_out(result):
    from irqlab.reproduce.thesis import TABLE_4_1

    assert sorted(p.fit.holdout for p in result.holdout) == sorted(PROFILES)
    for p in result.holdout:
        assert p.fit.holdout not in p.fit.fitted_on
        table_run = result.closed[p.fit.holdout]
        # Table 4.1's run of the profile, but for the fit's constants.
        assert p.summary.seed == table_run.seed and p.summary.profile == p.fit.holdout
        assert p.summary.throughput_qps != table_run.throughput_qps
        published = TABLE_4_1[p.fit.holdout]["qps"]
        assert p.errors["qps_pct"] == pytest.approx(100 * (p.summary.throughput_qps / published - 1))
    assert result.holdout_procedure["starts"] >= 1


def test_claims_read_the_store(result):
    # The result is what the results stores hold: one closed-loop row per
    # profile, one open-loop row per profile and load, nothing else.
    from irqlab import results

    table_dir, figure_dir, cai_karsten_dir, *vm_dirs = result.directories
    assert cai_karsten_dir.name == "cai-karsten"
    assert [d.name for d in vm_dirs] == [f"{k}-4.{n}" for n in (2, 3, 4, 5) for k in ("table", "figure")]
    table, figure = results.load(table_dir), results.load(figure_dir)
    assert sorted(table["profile"]) == sorted(PROFILES)
    assert len(figure) == 3 * len(PROFILES) and set(figure["load.qps"]) == {100_000, 300_000, 500_000}
    row = table[table["profile"] == "busy-wait"].iloc[0]
    assert result.closed["busy-wait"].throughput_qps == row["throughput_qps"]
    assert result.closed["busy-wait"].seed == row["seed"] != 1  # derived from the base seed and the point


def test_cai_karsten_is_a_prediction_from_the_store(result):
    # Their published numbers, the mapped profiles, irqlab's QPS as the store
    # holds it, and ratios each to its own vanilla; no simulated number is pinned.
    from irqlab import results

    store = results.load(result.directories[2])
    assert sorted(store["profile"]) == sorted(c.profile for c in CAI_KARSTEN)
    rows = cai_karsten_rows(result)
    assert [r["configuration"] for r in rows] == ["vanilla", "IRQ batching", "IRQ suspension", "kernel polling"]
    assert [r["their_qps"] for r in rows] == [724_000, 847_000, 967_000, 947_000]
    vanilla = rows[0]
    assert vanilla["profile"] == "adaptive-coalescing"
    assert vanilla["their_ratio_to_vanilla"] == vanilla["irqlab_ratio_to_vanilla"] == 1.0
    for r in rows:
        sim = float(store[store["profile"] == r["profile"]]["throughput_qps"].iloc[0])
        assert r["irqlab_qps"] == sim > 0
        assert r["error_pct"] == pytest.approx(100 * (sim / r["their_qps"] - 1))
        assert r["their_ratio_to_vanilla"] == pytest.approx(r["their_qps"] / 724_000)
        assert r["irqlab_ratio_to_vanilla"] == pytest.approx(sim / vanilla["irqlab_qps"])
    # Same scenario, seed and duration as Table 4.1: vanilla's run is Table 4.1's adaptive-coalescing run.
    assert vanilla["irqlab_qps"] == result.closed["adaptive-coalescing"].throughput_qps


def test_cai_karsten_study_file_lists_the_four_mapped_profiles():
    from irqlab.reproduce.thesis import cai_karsten_study, thesis_studies
    from irqlab.study import build_study, load_study_file

    spec = load_study_file(ROOT / "scenarios" / "thesis" / "cai-karsten.study.toml")
    study = build_study(spec.pop("scenario"), **spec)
    assert study.name == "cai-karsten"
    assert study.profiles == ("adaptive-coalescing", "irq-batching", "irq-suspend", "kernel-polling")
    assert study.profiles == tuple(c.profile for c in CAI_KARSTEN)
    table, _ = thesis_studies()
    assert not study.axes and study.duration_s == table.duration_s and study.seed == table.seed
    assert study.seeds == table.seeds and study.overrides == table.overrides
    assert study.scenario_text == table.scenario_text
    # The command line's changes reach it as they reach Table 4.1.
    short = cai_karsten_study(closed_duration_s=0.2, seed=7, overrides=("load.depth=2",))
    assert (short.duration_s, short.seed) == (0.2, 7) and "load.depth=2" in short.overrides


def test_study_files_are_the_thesis_grid():
    from irqlab.reproduce.thesis import FIGURE_4_1_LOADS, thesis_studies

    table, figure = thesis_studies()
    assert table.profiles == figure.profiles == PROFILES
    assert not table.axes and table.duration_s == 1.0
    assert [a.field for a in figure.axes] == ["load.qps"] and figure.axes[0].values == FIGURE_4_1_LOADS
    assert figure.duration_s == 0.5


def test_cli_resume_keeps_finished_runs_and_default_starts_afresh(tmp_path):
    out = tmp_path / "out"
    # --no-vm: the VM studies run through the same loop; three reproductions
    # of them would only make this test slower.
    args = [sys.executable, "-m", "irqlab", "reproduce", "thesis", "--out", str(out),
            "--closed-duration", "0.02", "--open-duration", "0.01", "--quiet", "--no-plots", "--json", "--no-vm"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert first.returncode == 0
    assert json.loads(first.stdout)["vm"] == [] and not (out / "table-4.4").exists()
    journal = out / "figure-4.1" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    assert len(lines) == 36
    # --resume: nothing to run again, the journal is unchanged.
    assert subprocess.run(args + ["--resume"], capture_output=True, text=True, timeout=600, cwd=ROOT).returncode == 0
    assert journal.read_text().splitlines() == lines
    # Without it, the reproduction runs everything again.
    assert subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT).returncode == 0
    again = journal.read_text().splitlines()
    assert len(again) == 36 and again != lines  # same runs, new wall times


def test_cli_rejects_bad_durations(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irqlab", "reproduce", "thesis", "--out", str(tmp_path), "--open-duration", "-1"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("irqlab: error: --open-duration must be")


def test_cli_with_runs_too_short_to_complete_anything(tmp_path):
    # A microsecond per run: (almost) no request completes. The reproduction
    # still ends normally: status 0, no traceback, only warnings on stderr.
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "irqlab", "reproduce", "thesis", "--out", str(out), "--closed-duration", "0.000001",
         "--open-duration", "0.000001", "--no-plots", "--quiet", "--json"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert all(line.startswith("irqlab: warning: ") for line in proc.stderr.splitlines()), proc.stderr
    report = json.loads(proc.stdout)
    assert report["checks"]
    assert [row["profile"] for row in report["cai_karsten"]] == [c.profile for c in CAI_KARSTEN]
    assert report["vm"] and report["vm_checks"]
    assert (out / "report.md").is_file()


@pytest.mark.parametrize("null", [None, 0.0])
def test_shape_checks_and_text_without_latency(null):
    # Made-up summaries of runs that completed nothing: latency null (the
    # core's report) or 0 (before it), throughput 0. No exception, claims that
    # need a latency or a throughput ratio do not hold.
    from irqlab import Summary
    from irqlab.reproduce.report import figure_4_1_text
    from irqlab.reproduce.thesis import ThesisResult

    def nothing(profile):
        return Summary({
            "profile": profile, "throughput_qps": 0.0, "requests_completed": 0,
            "latency_us": {k: null for k in ("mean", "p50", "p95", "p99", "p999")},
            "cpu_pct": {"user": 0.0, "system": 0.0, "softirq": 0.0, "irq": 0.0, "idle": 100.0},
        })

    loads = (100_000, 300_000)
    r = ThesisResult(closed={p: nothing(p) for p in PROFILES}, open={(p, q): nothing(p) for p in PROFILES for q in loads})
    checks = shape_checks(r)
    assert not any(c.holds for c in checks if "p99" in c.claim)
    text = figure_4_1_text(r)
    if null is None:
        assert "\u2014" in text and "nan" not in text
    # Cai & Karsten's table: no throughput, so no error and no ratio, and no "nan".
    from irqlab.reproduce.report import cai_karsten_text

    r.cai_karsten = {c.profile: nothing(c.profile) for c in CAI_KARSTEN}
    text = cai_karsten_text(r)
    assert "nan" not in text.lower() and "\u2014" in text


def test_declaration():
    from irqlab.reproduce import thesis
    from irqlab.reproduce.thesis_paper import PAPER
    from reproduction import check_declaration

    check_declaration(PAPER, thesis)
    # Table 4.1 is what the costs were fitted on: only its claims are fits.
    assert [c.id for c in PAPER.claims if c.status == "fit"] == ["T1", "T2", "T3"]
