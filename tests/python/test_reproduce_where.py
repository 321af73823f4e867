"""A reproduction's warnings name the runs they are about (issue 62, item
17: five warnings during make demo named no scenario, profile or load).
Made-up summaries and frames; no simulation."""

from __future__ import annotations

import pandas

from irqlab.reproduce import cover_letter, itr, thesis, thesis_paper
from irqlab.reproduce import cover_letter_checks as C
from irqlab.reproduce.studies import warnings_of
from irqlab.reproduce.where import located
from irqlab.summary import Summary

VIRTIO = "the guest's virtio-net device has no interrupt coalescing"


def _summary(scenario: str, *warnings: str) -> Summary:
    return Summary({"scenario": scenario, "warnings": list(warnings), "drops": 0})


def test_a_few_runs_are_named_each_and_many_by_what_they_share():
    assert located([(("a", "p1", "closed loop"), "s"), (("a", "p2", "at 1,000 QPS"), "s"), ("b", "t")]) == [
        "a, p1, closed loop; a, p2, at 1,000 QPS: s", "b: t"]
    many = [(("setup", "study", f"p{i % 2}", f"at {q:,} QPS"), "s") for i, q in enumerate(range(1000, 9000, 1000))]
    assert located(many + [(("setup", "study", "p0", "closed loop"), "s")]) == [
        "9 runs: setup; study; p0 and p1; closed loop and at 1,000 to 8,000 QPS: s"]
    # The same run said twice is one run.
    assert located([("a", "s"), ("a", "s")]) == ["a: s"]


def test_thesis_warnings_name_the_setup_study_profile_and_load():
    guest = thesis.VM_SETUPS[0]
    r = thesis.ThesisResult(
        closed={"busy-wait": _summary("thesis-bare-metal", "no request completed in the measured 0.5 s")},
        open={("irq-suspend", 250_000): _summary("thesis-bare-metal", "the client could not offer load.qps (x)")},
        vm={guest.key: thesis.VmResult(setup=guest, closed={"busy-wait": _summary("thesis-virtio", VIRTIO)},
                                       open={("busy-wait", 50_000): _summary("thesis-virtio", VIRTIO)})})
    said = thesis_paper.warnings(r)
    assert said[0] == (f"bare metal (thesis-bare-metal), {thesis.TABLE_STUDY}, busy-wait, closed loop: no request "
                       "completed in the measured 0.5 s")
    assert said[1] == (f"bare metal (thesis-bare-metal), {thesis.FIGURE_STUDY}, irq-suspend, at 250,000 QPS: the "
                       "client could not offer load.qps (x)")
    assert said[2] == (f"{guest.label} guest (thesis-virtio), table-{guest.table}, busy-wait, closed loop; "
                       f"{guest.label} guest (thesis-virtio), figure-{guest.figure}, busy-wait, at 50,000 QPS: {VIRTIO}")
    assert len(said) == 3


def test_itr_warnings_name_the_figure_policy_and_load():
    r = itr.ItrResult()
    r.figures["figure-7"] = {("linear", 1_000_000): _summary("itr", "no request completed in the measured 1 s")}
    assert itr.warnings(r) == ["figure-7, itr.policy = linear, at 1,000,000 packets/s: no request completed in the "
                               "measured 1 s"]


def test_a_frames_warnings_name_the_study_profile_and_axes():
    frame = pandas.DataFrame({"profile": ["busy-wait", "busy-wait", "irq-suspend"], "load.qps": [1000.0, 2000.0, 1000.0],
                              "warnings": [["w1"], None, ["w1", "w2"]]})
    frame.attrs["axes"] = ["load.qps"]
    assert warnings_of(frame, "open-base") == ["open-base, busy-wait, load.qps = 1,000; open-base, irq-suspend, "
                                               "load.qps = 1,000: w1", "open-base, irq-suspend, load.qps = 1,000: w2"]


def test_the_cover_letters_saturated_points_name_their_studies_and_loads():
    frame = pandas.DataFrame({"profile": ["adaptive-coalescing"] * 2, "load.qps": [800_000.0, 1_000_000.0],
                              "warnings": [[f"the client could not offer load.qps ({q}/s; ...)"] for q in (8, 10)]})
    frame.attrs["axes"] = ["load.qps"]
    r = cover_letter.CoverLetterResult(cases=C.letter_shaped())
    r.warnings = warnings_of(frame, "open-base") + ["other"]
    said = cover_letter.warnings(r)
    assert said[0] == "other" and len(said) == 2
    assert "at 2 open-loop points (studies open-base, at 0.80-1.00M QPS): the simulated server" in said[1]
