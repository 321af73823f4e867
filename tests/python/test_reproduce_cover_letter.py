"""``irqlab reproduce cover-letter``: the letter's claims (L1-L6) on its own
numbers (each holds, and fails when its shape is spoiled), the scenario and
the study files against the letter's knobs, and the command end to end on
short runs."""

from __future__ import annotations

import math

import pytest

from irqlab.reproduce import cover_letter_checks as C
from reproduction import bad_flag, check_declaration, end_to_end

IDS = [f"L{i}" for i in range(1, 7)]


def _checks(cases) -> dict[str, C.ShapeCheck]:
    return {c.id: c for c in C.all_checks(cases)}


def test_every_claim_holds_on_the_letters_own_numbers():
    checks = _checks(C.letter_shaped())
    assert list(checks) == IDS
    for c in checks.values():
        assert c.holds, f"{c.id}: {c.detail}"


def _scale(name: str, factor: float):
    def spoil(cases):
        cases[name].qps *= factor
    return spoil


def _ipc_low(cases):
    cases["fullbusy"].ipc = cases["base"].ipc  # no IPC gain from busy polling


def _open_cpu_low(cases):
    cases["napibusy"].open[200_000] = (30.0, math.nan)  # busy polling not keeping the core busy


@pytest.mark.parametrize("claim, spoil", [
    ("L1", _scale("defer10", 0.9)),  # deferral 10 % dearer than the letter's
    ("L2", _scale("fullbusy", 1.0 / 1.15)),  # busy polling's gain gone
    ("L3", _scale("suspend20", 0.93)),
    ("L4", _scale("defer50", 0.96)),  # defer50 below base, where the letter has it 3.8 % above
    ("L5", _ipc_low),
    ("L6", _open_cpu_low),
])
def test_each_claim_fails_when_its_shape_is_not_there(claim, spoil):
    cases = C.letter_shaped()
    spoil(cases)
    assert not _checks(cases)[claim].holds


def test_claims_without_their_runs_do_not_hold():
    checks = _checks({})
    for i in IDS:
        assert not checks[i].holds, i
    assert "not run" in checks["L1"].detail and "not run" in checks["L6"].detail


def test_the_ratio_is_relative_to_base():
    cases = C.letter_shaped()
    assert C.ratio(cases, "base") == 1.0
    assert C.ratio(cases, "fullbusy") == pytest.approx(1_247_536 / 1_037_654)
    cases["base"].qps *= 2
    assert C.ratio_error(cases, "fullbusy") == pytest.approx(-0.5)
    assert math.isnan(C.ratio({"fullbusy": C.Case(qps=1.0)}, "fullbusy"))


def test_the_order_allows_the_letters_spread():
    # defer200 and base are 0.3 % apart in the letter: either order is right.
    cases = C.letter_shaped()
    cases["defer200"].qps = cases["base"].qps * 0.99
    assert ("base", "defer200") not in C.misordered(cases) and ("defer200", "base") not in C.misordered(cases)
    assert _checks(cases)["L4"].holds


def test_the_study_files_are_the_letters_cases():
    """Each case's knobs as the letter's table gives them (§2.3), on the EPYC scenario."""
    from irqlab.reproduce import cover_letter
    from irqlab.study.spec import build_study, load_study_file

    want = {
        # case: (gro_flush_timeout, defer, irq_suspend_timeout, busy_poll_usecs, budget, prefer)
        "base": (0, 0, 0, 0, 0, False),
        "defer10": (10_000, 100, 0, 0, 0, False), "defer200": (200_000, 100, 0, 0, 0, False),
        "napibusy": (200_000, 100, 0, 64, 64, True), "fullbusy": (5_000_000, 100, 0, 1000, 64, True),
        "suspend0": (0, 0, 20_000_000, 0, 64, True), "suspend20": (20_000, 100, 20_000_000, 0, 64, True),
    }
    seen = {}
    for study in cover_letter.STUDIES:
        spec = load_study_file(cover_letter.cover_letter_dir() / f"{study}.study.toml")
        base = spec["scenario"].with_overrides(list(spec["overrides"]))
        s = build_study(spec.pop("scenario"), **spec)
        for point in s.points():
            r = base.with_profile(point.profile).with_overrides([f"{f}={v}" for f, v in point.knobs]).resolved()
            case = cover_letter.case_name(study, r["napi"]["gro_flush_timeout"])
            n, e = r["napi"], r["epoll"]
            seen[(study.split("-")[0], case)] = (
                n["gro_flush_timeout"], n["napi_defer_hard_irqs"], n["irq_suspend_timeout"],
                e["busy_poll_usecs"], e["busy_poll_budget"], e["prefer_busy_poll"])
            assert r["load"]["clients"] * r["load"]["threads_per_client"] * r["load"]["connections_per_thread"] == 4480
            assert r["coalesce"]["adaptive-rx"] and r["coalesce"]["rx-usecs"] == 8  # the NIC's defaults
    assert {c for loop, c in seen if loop == "closed"} == set(C.CASES)
    assert {c for loop, c in seen if loop == "open"} == set(C.LETTER_OPEN_CPU)
    for (loop, case), knobs in seen.items():
        if case in want:
            assert knobs == want[case], (loop, case)


def test_the_machine_description_keeps_the_thesiss_code():
    from irqlab.reproduce import cover_letter
    from irqlab.scenario import Scenario

    epyc = Scenario.load(cover_letter.default_scenario()).resolved()
    thesis = Scenario.load(cover_letter.cover_letter_dir().parent / "thesis" / "bare-metal.toml").resolved()
    assert epyc["costs"] == thesis["costs"] and epyc["app"]["service"] == thesis["app"]["service"]
    code = ("thread_code_bytes", "softirq_code_bytes", "hardirq_code_bytes", "flush_cycles", "costs_cpi")
    assert {k: epyc["microarch"][k] for k in code} == {k: thesis["microarch"][k] for k in code}
    assert epyc["cpu"]["freq_ghz"] == 2.0 and epyc["microarch"]["ipc_model"] == "disruption"


def test_declaration():
    from irqlab.reproduce import cover_letter
    from irqlab.reproduce.claim import PREDICTION

    check_declaration(cover_letter.PAPER, C)
    assert [c.id for c in cover_letter.PAPER.claims] == IDS
    assert all(c.status == PREDICTION for c in cover_letter.PAPER.claims)


def test_saturated_open_loop_points_are_warned_once():
    from irqlab.reproduce import cover_letter

    r = cover_letter.CoverLetterResult(cases=C.letter_shaped())
    r.warnings = [f"the client could not offer load.qps ({q}/s; ...)" for q in (800_000, 1_000_000)] + ["other"]
    said = cover_letter.warnings(r)
    assert said[0] == "other" and len(said) == 2 and "at 2 open-loop points" in said[1]


@pytest.mark.needs_run
def test_cli_end_to_end_on_short_runs(tmp_path):
    from irqlab.reproduce import cover_letter

    report = end_to_end(cover_letter.PAPER, tmp_path / "out", "--duration", "0.03")
    closed = {r["case"]: r for r in report["closed"]}
    assert list(closed) == list(C.CASES)
    assert all(r["qps"] > 0 and 0.3 < r["ipc"] < 1.5 for r in closed.values())
    assert closed["base"]["ratio"] == 1.0 and closed["base"]["letter_qps"] == 1_037_654
    # IRQ suspension takes the receive path out of softirq, as in the letter.
    assert closed["suspend20"]["softirq"] < 3.0 < closed["base"]["softirq"]
    assert len(report["open"]) == 6 * 5
    sens = {r["case"]: r for r in report["sensitivity"]}
    assert all(sens["base"][v] == 1.0 for v, _, _ in cover_letter.SENSITIVITY)
    assert (tmp_path / "out" / "sensitivity" / "boost-3.3ghz" / "closed-base" / "results.parquet").is_file()


@pytest.mark.parametrize("flags, start", [
    (("--duration", "-1"), "--duration"),
    (("--scenario", "/nonexistent.toml"), "--scenario"),
])
def test_bad_flags_give_one_sentence_and_exit_2(tmp_path, flags, start):
    from irqlab.reproduce import cover_letter

    bad_flag(cover_letter.PAPER, tmp_path / "o", flags, start)


def test_a_fixed_cost_scenario_is_refused(tmp_path):
    from irqlab.reproduce import cover_letter
    from reproduction import irqlab

    fixed = tmp_path / "fixed.toml"
    fixed.write_text(cover_letter.default_scenario().read_text().replace('ipc_model = "disruption"',
                                                                          'ipc_model = "fixed"')
                     .replace("costs_cpi = 1.116\n", "").replace("cpi_warm = 1.116\n", ""))
    proc = irqlab("reproduce", "cover-letter", "--out", str(tmp_path / "o"), "--scenario", str(fixed), timeout=60)
    assert proc.returncode == 2 and "microarch.ipc_model" in proc.stderr, proc.stderr


def test_the_html_tables_format_each_column_by_what_it_holds():
    from irqlab.reproduce import cover_letter

    html = cover_letter.html_table([{"case": "base", "qps": 612734.4, "ratio": 1.0, "user": 21.526,
                                     "cpu_pct": 41.0, "letter_ipc": math.nan}])
    for cell in ('<td class="text">base</td>', "<td>612,734</td>", "<td>1.000</td>", "<td>21.5</td>", "<td>41.0</td>", "<td>—</td>"):
        assert cell in html, cell
