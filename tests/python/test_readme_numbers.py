"""The README's claim counts come from a run (issue 62, item 14): each
paper's section says "With the model as it is, N of M claims hold (h of n
predictions, ...)", and this test runs the paper's reproduction as `make
demo` does (default durations and seeds, no plots) and checks the counts
and their split against what `irqlab reproduce index` would print for it.

A change to the model that moves a count fails here until the README says
the new count. The thesis's section gives no count (its reproduction takes
minutes), so it is not run here.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO, irqlab
from irqlab.reproduce.index import tally_of

#: The papers whose README section states a count, in `make demo`'s order;
#: together about a minute of simulation on two cores.
PAPERS = ("cover-letter", "itr", "iaps", "vic", "sriov")


def _section(readme: str, paper: str) -> str:
    """The README's section (from its heading to the next one) that shows
    the paper's reproduce command, whitespace collapsed."""
    command = f"irqlab reproduce {paper} --out"
    sections = re.split(r"\n(?=#{2,3} )", readme)
    found = [s for s in sections if command in s]
    assert len(found) == 1, f"README.md has {len(found)} sections showing `{command}`"
    return " ".join(found[0].split())


def test_every_section_with_a_count_is_checked_here():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    stated = {p for p in ("thesis", *PAPERS) if "With the model as it is," in _section(readme, p)}
    assert stated == set(PAPERS)


@pytest.mark.needs_run
@pytest.mark.parametrize("paper", PAPERS)
def test_readme_states_the_count_a_run_gives(tmp_path, paper):
    out = tmp_path / paper
    result = irqlab("reproduce", paper, "--out", str(out), "--no-plots", timeout=900)
    assert result.returncode == 0, result.stderr
    checks = json.loads((out / "summaries.json").read_text(encoding="utf-8"))["checks"]
    tally = tally_of(checks)
    section = _section((REPO / "README.md").read_text(encoding="utf-8"), paper)
    stated = re.findall(r"With the model as it is, (\d+) of (\d+) claims? holds?", section)
    assert stated, f"README.md's {paper} section states no count ('With the model as it is, N of M claims hold')"
    assert [(int(h), int(n)) for h, n in stated] == [(tally.held, tally.counted)], (
        f"README.md's {paper} section says {stated}; the run gives: {tally.sentence()}")
    for status, (held, checked) in tally.by_status.items():
        part = f"{held} of {checked} {status if status == 'by construction' else status + 's'}"
        assert part in section, f"README.md's {paper} section lacks '{part}' (the run gives: {tally.sentence()})"
