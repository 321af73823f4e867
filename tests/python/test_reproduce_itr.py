"""The ITR paper's reproduction (`irqlab reproduce itr`): the claim checks
C1–C13 on made-up runs where each must hold and where it must fail, the
four study files, and the command end to end on short runs.

No simulated number is pinned here: the end-to-end tests check that the
reproduction runs, writes its files and lists its claims, not what the
simulation says about them.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from irqlab import Summary
from irqlab.reproduce import itr_checks as C
from irqlab.reproduce.itr_checks import IXGBE, LINEAR, OFF
from reproduction import check_declaration, end_to_end, irqlab

IDS = [f"C{n}" for n in range(1, 14)]

# -- made-up runs ------------------------------------------------------------------

GRID = [20_000, 50_000] + [100_000 * i for i in range(1, 21)] + [2_050_000, 2_100_000, 2_150_000, 2_200_000, 2_500_000]
CAPACITY = 2_100_000
GHZ = 3.3


def _paper_world() -> dict[tuple[str, int], dict]:
    """Runs shaped as the paper describes them (every claim holds), as
    editable dicts: no ITR's CPU linear to 100 %, its IRQ rate peaking at 0.5
    Mpps and falling to 0 at 2.1 Mpps, its latency lowest at 100 % CPU;
    overload at 2.1 Mpps with 2300 µs; ixgbe's 60 µs plateau dropping near
    overload, its CPU linear; the linear ITR close to no ITR's latency at a
    CPU load between; below 0.1 Mpps all three the same."""
    runs: dict[tuple[str, int], dict] = {}
    for q in GRID:
        m = q / 1e6
        over = q > CAPACITY
        thr = min(q, CAPACITY)
        drops = int((q - CAPACITY) * 0.2) if over else 0
        off_busy = min(100.0, 140.0 * m)
        off_irq = 0.9 * q if q <= 500_000 else max(0.0, 450_000 * (2.1 - m) / 1.6)
        off_lat = 8.0 - 3.0 * min(m, 0.8) / 0.8 + 1.2 * max(m - 0.8, 0.0) / 1.25
        polling = off_irq <= 0.1 * 450_000 and m > 0.5 and not over
        low = q < 100_000
        if q >= CAPACITY:
            off_lat = 2300.0 if over else 200.0
        x_lat = off_lat if low or q >= CAPACITY else (30.0 if q == 100_000 else (off_lat + 0.5 if polling else 60.0))
        x_busy = off_busy if low else (8.0 if q == 100_000 else min(100.0, 5.0 + 45.0 * m))
        x_irq = off_irq if low else (20_000.0 if q == 100_000 else (8000.0 if not polling and not over else 100.0))
        y_lat = off_lat if low or q >= CAPACITY else off_lat + (0.5 if polling else 3.0)
        y_busy = off_busy if low else (x_busy if polling or over else (x_busy + off_busy) / 2)
        y_irq = off_irq if low else 50_000.0
        regimes = ((OFF, off_lat, off_busy, off_irq), (IXGBE, x_lat, x_busy, x_irq), (LINEAR, y_lat, y_busy, y_irq))
        for p, lat, busy, irq in regimes:
            if over:
                busy = 100.0
            cycles = busy / 100.0 * GHZ * 1e9 / thr
            runs[(p, q)] = {
                "offered_qps": float(q), "throughput_qps": float(thr),
                "latency_us": {"mean": lat, "p50": lat, "p95": lat, "p99": lat, "p999": lat},
                "cpu_pct": {"user": 0.0, "system": 0.0, "softirq": busy / 2, "irq": busy / 2, "idle": 100.0 - busy},
                "irqs_per_s": irq, "packets_per_irq": thr / irq if irq else 0.0,
                "cycles_per_query": cycles, "load_latency_product": cycles * lat,
                "drops": drops, "drops_by_site": {"ring": drops, "socket": 0, "qdisc": 0},
                "warnings": [],
            }
    return runs


def _summaries(world: dict, policies: tuple[str, ...], top: int = 10**9) -> dict[tuple[str, int], Summary]:
    return {k: Summary(copy.deepcopy(v)) for k, v in world.items() if k[0] in policies and k[1] <= top}


def _figures(world: dict) -> tuple:
    return (
        _summaries(world, (OFF,)),
        _summaries(world, (OFF, IXGBE)),
        _summaries(world, (OFF, IXGBE, LINEAR)),
        _summaries(world, (IXGBE, LINEAR), top=2_100_000),
    )


def _checks(world: dict) -> dict[str, C.ShapeCheck]:
    return {c.id: c for c in C.checks(*_figures(world))}


def _set(world: dict, policy: str, loads, **fields) -> None:
    """Change fields of ``policy``'s runs at ``loads`` (``latency``: every
    latency field; ``busy``: idle = 100 − busy; keeping P_ll consistent)."""
    for q in loads:
        run = world[(policy, q)]
        if "latency" in fields:
            run["latency_us"] = {k: fields["latency"] for k in run["latency_us"]}
        if "busy" in fields:
            run["cpu_pct"]["idle"] = 100.0 - fields["busy"]
            run["cycles_per_query"] = fields["busy"] / 100.0 * GHZ * 1e9 / run["throughput_qps"]
        for key in ("irqs_per_s", "throughput_qps", "drops"):
            if key in fields:
                run[key] = fields[key]
        run["load_latency_product"] = run["cycles_per_query"] * run["latency_us"]["mean"]


def _between(lo: float, hi: float) -> list[int]:
    return [q for q in GRID if lo <= q <= hi]


def test_every_claim_holds_on_runs_shaped_as_the_paper_says():
    checks = _checks(_paper_world())
    assert list(checks) == IDS
    failing = [f"{c.id}: {c.detail}" for c in checks.values() if not c.holds]
    assert not failing, "\n".join(failing)
    # Each detail carries the numbers and the tolerance.
    assert "2.1 Mpps ± 2%" in checks["C4"].detail and "FITTED" not in checks["C4"].detail
    assert "60 µs ± 25%" in checks["C6"].detail


def _c1(w):  # concave CPU: sqrt-shaped below 100 %
    for q in _between(20_000, 700_000):
        _set(w, OFF, [q], busy=min(98.0, 120.0 * math.sqrt(q / 1e6)))


def _c2(w):  # the interrupt rate peaks at 1.0 Mpps
    _set(w, OFF, [1_000_000], irqs_per_s=600_000.0)


def _c3(w):  # latency before overload grows 4x
    _set(w, OFF, [2_050_000], latency=20.0)


def _c4(w):  # overload at 1.9 Mpps
    for p in (OFF, IXGBE, LINEAR):
        _set(w, p, _between(2_000_000, 2_500_000), throughput_qps=1_900_000.0, drops=5000)


def _c5(w):  # overload latency 500 µs
    _set(w, OFF, _between(2_150_000, 2_500_000), latency=500.0)


def _c6(w):  # plateau at 120 µs
    _set(w, IXGBE, _between(200_000, 1_900_000), latency=120.0)


def _c7(w):  # no drop before overload
    _set(w, IXGBE, [2_000_000, 2_050_000], latency=60.0)


def _c8(w):  # ixgbe forwards at most 1.8 Mpps
    _set(w, IXGBE, _between(1_800_000, 2_500_000), throughput_qps=1_800_000.0, drops=5000)


def _c9(w):  # ixgbe's CPU above no ITR's at 0.3 Mpps
    _set(w, IXGBE, [300_000], busy=60.0)


def _c10(w):  # ixgbe throttles at 0.05 Mpps
    _set(w, IXGBE, [50_000], latency=20.0, irqs_per_s=20_000.0)


def _c11(w):  # the linear ITR's latency is ixgbe's
    for q in _between(100_000, 1_900_000):
        _set(w, LINEAR, [q], latency=w[(IXGBE, q)]["latency_us"]["mean"])


def _c12(w):  # the linear ITR's CPU above no ITR's at 0.2 Mpps
    _set(w, LINEAR, [200_000], busy=w[(OFF, 200_000)]["cpu_pct"]["softirq"] * 2 + 10.0)


def _c13(w):  # the linear ITR's P_ll above ixgbe's at 1.0 Mpps
    _set(w, LINEAR, [1_000_000], latency=200.0)


@pytest.mark.parametrize(
    "claim, spoil",
    [("C1", _c1), ("C2", _c2), ("C3", _c3), ("C4", _c4), ("C5", _c5), ("C6", _c6), ("C7", _c7), ("C8", _c8),
     ("C9", _c9), ("C10", _c10), ("C11", _c11), ("C12", _c12), ("C13", _c13)],
)
def test_each_claim_fails_when_its_shape_is_not_there(claim, spoil):
    world = _paper_world()
    spoil(world)
    check = _checks(world)[claim]
    assert not check.holds, check.detail
    assert "FAILS" in check.detail


RESOLVED = {
    "cpu": {"freq_ghz": GHZ},
    "costs": {"hardirq_cycles": 2700, "softirq_entry_cycles": 1350, "forward_packet_cycles": 1238,
              "tx_clean_cycles": 300},
    "nic": {"rx-ring-size": 512, "rx_packet_buffer_bytes": 524288},
    "load": {"frame_bytes": 60},
    "itr": {"max_rate": 100000, "min_rate": 8000, "rho_max_pps": 2100000},
}


@pytest.mark.parametrize("claim, spoil", [("C1", _c1), ("C2", _c2), ("C3", _c3), ("C5", _c5), ("C7", _c7),
                                          ("C10", _c10), ("C11", _c11)])
def test_a_failing_claim_is_explained_from_the_runs(claim, spoil):
    from irqlab.reproduce import itr_explain

    world = _paper_world()
    assert all(itr_explain.explain(c, _summaries(world, (OFF, IXGBE, LINEAR)), RESOLVED) is None
               for c in _checks(world).values()), "a claim that holds needs no explanation"
    spoil(world)
    check = _checks(world)[claim]
    why = itr_explain.explain(check, _summaries(world, (OFF, IXGBE, LINEAR)), RESOLVED)
    assert why and "nan" not in why, why
    if claim == "C5":
        # The buffers as the scenario sizes them: 512 + 524288 // 64 frames.
        assert "8,704 frames" in why, why


def test_claims_without_the_runs_they_need_do_not_hold():
    # No runs at all, and runs that forwarded nothing (no latency): every
    # claim is reported as not holding, none raises.
    empty = C.checks({}, {}, {}, {})
    assert [c.id for c in empty] == IDS and not any(c.holds for c in empty)
    assert all(c.detail.startswith("not checked:") for c in empty)
    world = _paper_world()
    for run in world.values():
        run["latency_us"] = {k: None for k in run["latency_us"]}
        run["throughput_qps"] = 0.0
        run["load_latency_product"] = 0.0
    checks = C.checks(*_figures(world))
    for c in checks:
        if c.id not in ("C1", "C2", "C9", "C12"):  # CPU and interrupts need no latency
            assert not c.holds, (c.id, c.detail)
        assert "nan" not in c.detail.lower(), (c.id, c.detail)


def test_the_fit_is_named_in_the_anchor_claim():
    world = _paper_world()
    c4 = C.checks(*_figures(world), fitted="FITTED: costs.forward_packet_cycles = 1238")[3]
    assert c4.id == "C4" and c4.detail.endswith("FITTED: costs.forward_packet_cycles = 1238")


def test_overload_is_drops_or_the_regime_capacity():
    runs = _summaries(_paper_world(), (OFF,))
    assert C.capacity(runs, OFF) == CAPACITY
    assert not C.overloaded(runs, OFF, 2_050_000)
    assert C.overloaded(runs, OFF, 2_100_000)  # at capacity, no drop yet
    assert C.overloaded(runs, OFF, 2_150_000)
    # A grid that stops short of overload has none.
    short = {k: v for k, v in runs.items() if k[1] <= 1_000_000}
    assert C.capacity(short, OFF) == math.inf and C.pre_overload(short, OFF) == sorted(q for _, q in short)


def test_line_fit():
    slope, intercept, r2, worst, at = C.line_fit([0, 1, 2, 3], [1, 3, 5, 7])
    assert (slope, intercept, r2, worst) == pytest.approx((2.0, 1.0, 1.0, 0.0))
    slope, intercept, r2, worst, at = C.line_fit([0, 1, 2, 3, 4], [0, 0, 10, 0, 0])
    assert r2 < 0.1 and at == 2 and worst == pytest.approx(8.0)


# -- the study files ------------------------------------------------------------------


def test_study_files_are_the_papers_figures():
    from irqlab.reproduce.itr import FIGURE_7_MAX_PPS, FIGURES, itr_studies

    studies = {s.name: s for s in itr_studies()}
    assert list(studies) == list(FIGURES) == ["figure-3", "figure-5", "figure-8", "figure-7"]
    for name, study in studies.items():
        fields = [a.field for a in study.axes]
        assert fields == ["itr.policy", "load.qps"], name
        assert study.axes[0].values == FIGURES[name]
        loads = study.axes[1].values
        assert list(loads) == sorted(loads) and min(loads) == 20_000
        assert study.seeds == 1 and study.duration_s == 0.2 and study.profiles == (None,)
    full = studies["figure-3"].axes[1].values
    assert max(full) == 2_500_000 and {2_050_000, 2_100_000, 2_150_000} <= set(full)
    assert studies["figure-5"].axes[1].values == studies["figure-8"].axes[1].values == full
    assert studies["figure-7"].axes[1].values == tuple(q for q in full if q <= FIGURE_7_MAX_PPS)
    # A run shared by two figures has the same key and seed in both.
    keys = {name: {p.key: p.seed for p in s.points()} for name, s in studies.items()}
    shared = set(keys["figure-3"]) & set(keys["figure-8"])
    assert len(shared) == len(full)
    assert all(keys["figure-3"][k] == keys["figure-8"][k] for k in shared)
    assert set(keys["figure-7"]) <= set(keys["figure-8"])


def test_command_line_changes_reach_every_study(tmp_path):
    from irqlab.reproduce.itr import default_scenario, itr_studies

    studies = itr_studies(default_scenario(), duration_s=0.05, seed=7, loads=(100_000, 2_500_000),
                          overrides=("cpu.wakeup_latency_ns=0",))
    for s in studies:
        assert (s.duration_s, s.seed) == (0.05, 7) and "cpu.wakeup_latency_ns=0" in s.overrides
    assert [s.axes[1].values for s in studies] == [(100_000, 2_500_000)] * 3 + [(100_000,)]


# -- the command ---------------------------------------------------------------------------


_irqlab = irqlab


def test_declaration():
    from irqlab.reproduce import itr

    check_declaration(itr.PAPER, C)
    assert [c.id for c in itr.PAPER.claims] == IDS


@pytest.mark.needs_run
def test_cli_end_to_end_on_short_runs(tmp_path):
    from irqlab.reproduce import itr

    out = tmp_path / "out"
    # Every point of the four figures, 10 ms each (after the scenario's warm-up).
    report = end_to_end(itr.PAPER, out, "--duration", "0.01")
    assert "forward_packet_cycles" in report["fitted"]
    assert report["shared_runs"]["pairs"] > 0 and report["shared_runs"]["mismatched"] == []
    assert set(report["figures"]) == {"figure-3", "figure-5", "figure-8", "figure-7"}
    assert {row["itr_policy"] for row in report["figures"]["figure-8"]} == {"off", "ixgbe", "linear"}
    assert all(row["offered_pps"] <= 2_100_000 for row in report["figure_7_pll"])
    assert sorted(Path(f).name for f in report["files"] if f.endswith(".png")) == [
        "figure-3.png", "figure-5.png", "figure-7.png", "figure-8.png"]
    for n in (3, 5, 8, 7):
        assert (out / f"figure-{n}" / "scenario.toml").is_file()
    html = (out / "report.html").read_text()
    assert "Study figure-7" in html and "forward_packet_cycles" in html
    md = (out / "report.md").read_text()
    assert "## Figure 7: comparison of the load-latency products" in md and "forward_packet_cycles" in md


@pytest.mark.parametrize(
    "flags, start",
    [
        (["--duration", "-1"], "irqlab: error: --duration must be"),
        (["--duration", "soon"], "irqlab: error: --duration must be"),
        (["--jobs", "0"], "irqlab: error: --jobs must be a whole number"),
        (["--seed", "x"], "irqlab: error: --seed must be a whole number"),
        (["--scenario", "no/such/file.toml"], "irqlab: error: --scenario no/such/file.toml is not a file"),
        (["--loads", "1"], "irqlab: error: unrecognized arguments: --loads 1"),
    ],
)
def test_bad_flags_give_one_sentence_and_exit_2(tmp_path, flags, start):
    proc = _irqlab("reproduce", "itr", "--out", str(tmp_path / "out"), *flags, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(start), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "figure-3").exists()


def test_out_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    proc = _irqlab("reproduce", "itr", "--out", str(f), timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith(f"irqlab: error: --out {f} exists and is not a directory")
