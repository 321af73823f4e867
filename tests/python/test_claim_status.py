"""Every paper's claims say what their verdict tells: the status a claim is
declared with (prediction, fit, by construction) reaches its check and
every report of it, and the headline counts by status."""

from irqlab.reproduce.claim import CONSTRUCTION, FIT, PREDICTION, ShapeCheck, claim
from irqlab.reproduce.claims import claim_row, claims_section, claims_text


@claim("X1", "the first words", tolerance="T", status=FIT)
def _x1(value, *, claim):
    return ShapeCheck(claim, value > 0, f"value {value}", "X1")


@claim("X2", "the second words", tolerance="T", status=PREDICTION)
def _x2(value, *, claim):
    # A check may know better for its own case (a VM check of a part that
    # holds by construction): its status wins.
    return ShapeCheck(claim, value > 0, f"value {value}", "X2", status=CONSTRUCTION)


@claim("X3", "the third words", tolerance="T", status=PREDICTION)
def _x3(value, *, claim):
    return ShapeCheck(claim, value > 0, f"value {value}", "X3")


def test_a_check_carries_its_declared_status_into_every_report():
    a, b, c = _x1(1), _x2(-1), _x3(2)
    assert (a.status, b.status, c.status) == (FIT, CONSTRUCTION, PREDICTION)
    lines = claims_text("Claims", [a, b, c]).splitlines()
    assert lines[0] == "Claims: 2 of 3 hold (1 of 1 predictions, 1 of 1 fits, 0 of 1 by construction)"
    assert lines[1] == '  [ok] X1: "the first words" [fit]'
    assert '  [NO] X2: "the second words" [by construction]' in lines
    assert claim_row(a)["status"] == FIT and claim_row(b, {})["status"] == CONSTRUCTION
    title, body = claims_section("Claims", [a, b, c], "Intro.", [])
    assert title == "Claims"
    assert body.startswith("<p>2 of 3 hold (1 of 1 predictions, 1 of 1 fits, 0 of 1 by construction). Intro.</p>")
    assert "<b>X1 holds</b> [fit]: &ldquo;the first words&rdquo;" in body


def test_the_itr_paper_s_anchor_is_a_fit_and_its_same_maximum_holds_by_construction():
    from irqlab.reproduce import itr_checks

    status = {c.id: c.status for c in itr_checks.CLAIMS}
    assert status["C4"] == FIT and status["C8"] == CONSTRUCTION
    assert sum(s == PREDICTION for s in status.values()) == len(status) - 2


def test_the_report_groups_claims_by_status_and_counts_each_group() -> None:
    from irqlab.reproduce.claim import CONSTRUCTION, FIT, PREDICTION, ShapeCheck
    from irqlab.reproduce.claims import claims_section

    checks = [
        ShapeCheck("a", True, "d", "X1", status=PREDICTION),
        ShapeCheck("b", False, "d", "X2", status=FIT),
        ShapeCheck("c", False, "d", "X3", status=PREDICTION),
        ShapeCheck("e", True, "d", "X4", status=CONSTRUCTION),
    ]
    _title, body = claims_section("t", checks, "intro", [])
    headings = [h.split("</h3>")[0] for h in body.split("<h3>")[1:]]
    assert headings == ["Predictions (numbers the model was not fitted to): 1 of 2 hold",
                        "Fits (claims a constant of the model was chosen to meet): 0 of 1 hold",
                        "By construction (claims that follow from how the model is written): 1 of 1 hold"]
    # Each group in the paper's order: X1 before X3, both before X2.
    assert body.index("X1 ") < body.index("X3 ") < body.index("X2 ") < body.index("X4 ")
    # One status: one list, no headings.
    _title, single = claims_section("t", checks[:1], "intro", [])
    assert "<h3>" not in single and single.count('<ul class="claims">') == 1
