"""``irqlab reproduce iaps``: the IAPS paper's claims (D1-D10) on made-up
tables shaped as the paper describes (each holds, and fails when its shape
is spoiled), the study files, and the command end to end on short runs."""

from __future__ import annotations

import dataclasses
import math

import pytest

from irqlab.reproduce import iaps_checks as C
from irqlab.reproduce.iaps_checks import IAPS, RFS, RPS, RSS, Point
from reproduction import BAD_FLAGS, bad_flag, check_declaration, end_to_end, irqlab

NS = (1, 2, 4, 8, 16, 32)
IDS = [f"D{i}" for i in range(1, 11)]


def _paper_table() -> dict[tuple[str, int], Point]:
    """A table with the shapes §IV describes (made-up numbers)."""
    gbps = {
        RSS: (30, 45, 51, 51, 51, 51),
        RPS: (30, 45, 51, 49, 46, 44),
        RFS: (30, 45, 51, 50.5, 49, 44.1),
        IAPS: (30, 45, 51.5, 51, 50.5, 46),
    }
    drops = {RSS: (0,) * 6, RPS: (10, 10, 20, 5000, 9000, 20000), RFS: (10, 10, 20, 100, 8000, 20000),
             IAPS: (10, 10, 20, 50, 200, 25000)}
    ppi = {RSS: (math.nan,) * 6, RPS: (2, 2, 2, 2, 2, 2.5), RFS: (2, 2, 2, 2, 2, 2.5), IAPS: (1.5, 3, 4, 5, 7, 10)}
    cases = {n: c for n, c in zip(NS, ((60, 5, 35), (50, 20, 30), (40, 35, 25), (30, 50, 20), (29, 55, 16), (30, 60, 10)))}
    t = {}
    for s in (RSS, RPS, RFS, IAPS):
        for i, n in enumerate(NS):
            c = cases[n] if s == IAPS else (math.nan,) * 3
            t[(s, n)] = Point(gbps=gbps[s][i], drops=drops[s][i], ring_drops=drops[s][i], backlog_drops=0,
                              packets_per_ipi=ppi[s][i], ipis_per_s=1.0, frames_per_gro_packet=10,
                              previous_busy_pct=c[0], new_busy_pct=c[1], no_busy_pct=c[2], seeds=10)
    return t


def _checks(t) -> dict[str, C.ShapeCheck]:
    return {c.id: c for c in C.all_checks(t)}


def _set(t, s, n, **fields):
    t[(s, n)] = dataclasses.replace(t[(s, n)], **fields)


def test_every_claim_holds_on_a_table_shaped_as_the_paper_says():
    checks = _checks(_paper_table())
    assert list(checks) == IDS
    for c in checks.values():
        assert c.holds, f"{c.id}: {c.detail}"


def _d1(t): _set(t, RPS, 8, gbps=53)          # RPS peaks at 8
def _d2(t): _set(t, RSS, 32, gbps=45)         # RSS falls at 32
def _d3(t): _set(t, IAPS, 16, gbps=49)        # IAPS below 50 at 16
def _d4(t): _set(t, IAPS, 8, drops=24000)     # IAPS's drops spike first
def _d5(t): _set(t, RPS, 32, drops=30000)     # RPS drops most at 32
def _d6(t): _set(t, IAPS, 32, gbps=60)        # a gain far above a few percent
def _d7(t): _set(t, IAPS, 8, packets_per_ipi=1); _set(t, IAPS, 16, packets_per_ipi=1)  # below at two counts
def _d8(t): _set(t, IAPS, 32, packets_per_ipi=20)   # 8x, not near 4x
def _d9(t): _set(t, IAPS, 32, new_busy_pct=0, previous_busy_pct=90)  # new busy core falls at the end
def _d10(t): _set(t, IAPS, 16, previous_busy_pct=10)  # no plateau after eight


@pytest.mark.parametrize("claim, spoil", [(f"D{i}", f) for i, f in enumerate(
    (_d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10), start=1)])
def test_each_claim_fails_when_its_shape_is_not_there(claim, spoil):
    t = _paper_table()
    spoil(t)
    c = _checks(t)[claim]
    assert not c.holds, c.detail


def test_claims_without_the_runs_they_need_do_not_hold():
    t = {k: v for k, v in _paper_table().items() if k[1] != 32}
    checks = _checks(t)
    for i in ("D1", "D2", "D5", "D6", "D8"):
        assert not checks[i].holds and "cannot be checked" in checks[i].detail, i


def test_study_files_are_the_papers_figure():
    from irqlab.reproduce import iaps
    from irqlab.study.spec import load_study_file

    sw = load_study_file(iaps.iaps_dir() / "figure-2.study.toml")
    axes = {a.field: tuple(a.values) for a in sw["axes"]}
    assert axes == {"steering.scheme": ("rps", "rfs", "iaps"), "bulk.streams": NS}
    assert sw["seeds"] == 10, "the paper's means are over ten runs"
    rss = load_study_file(iaps.iaps_dir() / "figure-2-rss.study.toml")
    assert {a.field: tuple(a.values) for a in rss["axes"]} == {"bulk.streams": NS}
    assert "nic.queues=8" in [o.replace(" ", "") for o in rss["overrides"]]
    resolved = sw["scenario"].resolved()
    assert resolved["cpu"]["app_cores"] == 8 and resolved["nic"]["queues"] == 1


def test_declaration():
    from irqlab.reproduce import iaps

    check_declaration(iaps.PAPER, C)
    assert [c.id for c in iaps.PAPER.claims] == IDS


@pytest.mark.needs_run
def test_cli_end_to_end_on_short_runs(tmp_path):
    from irqlab.reproduce import iaps

    report = end_to_end(iaps.PAPER, tmp_path / "out", "--duration", "0.01", "--seeds", "2")
    assert "rx_frame_cycles" in report["fitted"]
    rows = report["figure_2"]
    assert {(r["scheme"], r["connections"]) for r in rows} == {(s, n) for s in ("RSS", "RPS", "RFS", "IAPS") for n in NS}
    assert all(r["seeds"] == 2 for r in rows)
    assert all(0 < r["throughput_gbps"] < 60 for r in rows)
    shares = report["figure_3"]
    assert [r["connections"] for r in shares] == list(NS)
    for r in shares:
        total = r["previous_core_busy_pct"] + r["new_busy_core_pct"] + r["no_busy_core_pct"]
        assert abs(total - 100) < 1e-6


@pytest.mark.parametrize("flags, start", BAD_FLAGS)
def test_bad_flags_give_one_sentence_and_exit_2(tmp_path, flags, start):
    from irqlab.reproduce import iaps

    bad_flag(iaps.PAPER, tmp_path / "o", flags, start)


def test_irqlab_run_shows_the_streams_and_the_steering(tmp_path):
    from irqlab.reproduce import iaps

    proc = irqlab("run", str(iaps.default_scenario()), "--set", "steering.scheme=iaps", "--set", "bulk.streams=8",
                   "--duration", "0.01")
    assert proc.returncode == 0, proc.stderr
    lines = {line.split("  ")[0]: line for line in proc.stdout.splitlines()}
    assert "Gbit/s" in lines["throughput"] and "segments/s" in lines["throughput"]
    for label in ("streams", "frames/gro packet", "tcp losses", "core busy (%)", "steering", "ipis/s", "steered",
                  "iaps cases (%)"):
        assert label in lines, (label, proc.stdout)
    assert "previous core busy" in lines["iaps cases (%)"]
    # No steering section without a scheme; a memcached run shows neither.
    plain = irqlab("run", str(iaps.default_scenario()), "--set", "steering.scheme=none", "--set",
                   "cpu.task_placement=pinned", "--set", "nic.rx_buffer_reuse=always", "--duration", "0.01")
    assert plain.returncode == 0, plain.stderr
    labels = {line.split("  ")[0] for line in plain.stdout.splitlines()}
    assert "streams" in labels and "steering" not in labels
    assert "reader migrations" not in labels, "pinned readers print no placement lines"
    assert "new rx pages" not in labels, "reused buffers print no allocation line"


def test_irqlab_run_shows_the_new_pages_of_split_page_buffers():
    from irqlab.reproduce import iaps

    proc = irqlab("run", str(iaps.default_scenario()), "--set", "nic.rx_buffer_reuse=split-page", "--set",
                  "costs.copy_cycles_per_kib=2000", "--set", "steering.scheme=rfs", "--set", "bulk.streams=8",
                  "--duration", "0.02")
    assert proc.returncode == 0, proc.stderr
    lines = {line.split("  ")[0]: line for line in proc.stdout.splitlines()}
    pct = float(lines["new rx pages"].split()[-4])
    assert 0 < pct < 100, lines["new rx pages"]
    bad = irqlab("run", str(iaps.default_scenario()), "--set", "nic.rx_buffer_reuse=sometimes")
    assert bad.returncode != 0 and "nic.rx_buffer_reuse" in bad.stderr and "Traceback" not in bad.stderr


def test_irqlab_run_shows_where_the_scheduler_put_the_readers():
    from irqlab.reproduce import iaps

    proc = irqlab("run", str(iaps.default_scenario()), "--set", "cpu.task_placement=fair", "--set",
                  "steering.scheme=rfs", "--set", "bulk.streams=16", "--duration", "0.01")
    assert proc.returncode == 0, proc.stderr
    lines = {line.split("  ")[0]: line for line in proc.stdout.splitlines()}
    assert "/s" in lines["reader migrations"], proc.stdout
    shares = [float(cell.split(":")[1]) for cell in lines["reader time (%)"].split()[3:]]
    assert len(shares) == 8 and abs(sum(shares) - 100) <= 4, lines["reader time (%)"]
    bad = irqlab("run", str(iaps.default_scenario()), "--set", "cpu.task_placement=everywhere")
    assert bad.returncode != 0 and "cpu.task_placement" in bad.stderr and "Traceback" not in bad.stderr
