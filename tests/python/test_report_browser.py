"""The HTML report in a real browser: Debian's Chromium, headless, driven by
Selenium through the system chromedriver.

The report must render completely from the one file: every image decoded,
every table filled, nothing in the console at SEVERE level, and no request
for anything that is not the file itself or an inlined ``data:`` URI. A
screenshot is left in ``tests/python/artifacts/report.png``.

Nothing is downloaded: the driver and the browser are the system's, given by
path, so that Selenium Manager never runs. Without them the test is skipped,
saying so; `make setup` run as root installs the Debian packages chromium and
chromium-driver (tools/system-packages.sh), and .ci/run fails without them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chromium import chromium
from conftest import HERE, REPO
from irqlab.scenario import Scenario
from irqlab.study import Axis, build_study, sweep
from irqlab.study.report import write_report

pytestmark = pytest.mark.needs_run

ARTIFACTS = HERE / "artifacts"
THESIS = REPO / "scenarios" / "thesis" / "bare-metal.toml"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 profiles × 3 loads × 2 seeds, plus a study whose points partly fail."""
    base = tmp_path_factory.mktemp("browser")
    scenario = Scenario.load(THESIS)
    grid = build_study(
        scenario,
        name="grid",
        profiles=["busy-wait", "no-coalescing"],
        axes=[Axis("load.qps", (100_000, 200_000, 300_000))],
        seeds=2,
        duration_s=0.02,
    )
    failing = build_study(
        scenario, name="failing", profiles=["irq-suspend"], axes=[Axis("cpu.app_cores", (4, 0))], duration_s=0.02
    )
    sweep(grid, base / "grid", jobs=2, progress=False)
    sweep(failing, base / "failing", jobs=2, progress=False)
    return write_report(
        base / "grid",
        base / "report.html",
        sections_before=[("Claims", "<table><thead><tr><th>claim</th></tr></thead><tbody><tr><td>holds</td></tr></tbody></table>")],
        extra_dirs=[base / "failing"],
    )


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    yield from chromium(monkeypatch)


def test_report_renders_in_chromium(report: Path, browser) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    browser.get(report.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert browser.title == "irqlab studies grid, failing"

    # Every figure decoded, at the size its attributes give.
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight,"
        " i.getAttribute('width'), i.getAttribute('height'), i.alt])"
    )
    assert len(images) == 3 + 3, images  # default figures: throughput, p99, CPU per study
    for complete, width, height, width_attr, height_attr, alt in images:
        assert complete and width > 0 and height > 0
        assert (str(width), str(height)) == (width_attr, height_attr)
        assert alt

    # Every table has rows: the caller's, results of both studies, the failed runs.
    tables = browser.find_elements(By.TAG_NAME, "table")
    assert len(tables) == 4
    for table in tables:
        assert table.find_elements(By.CSS_SELECTOR, "tbody tr"), table.get_attribute("outerHTML")[:200]
    failed = browser.find_element(By.CSS_SELECTOR, "table.failed-runs")
    assert len(failed.find_elements(By.CSS_SELECTOR, "tbody tr")) == 1
    assert "must be between 1 and 1024" in failed.text
    assert "Claims" in browser.find_element(By.TAG_NAME, "h2").text

    # Nothing fetched but the file and inlined data.
    resources = browser.execute_script(
        "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
        ".map(e => e.name)"
    )
    assert resources, "the page itself is a navigation entry"
    for name in resources:
        assert name.startswith(("file:", "data:")), name

    # No errors in the console (a Content-Security-Policy violation would be one).
    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe

    ARTIFACTS.mkdir(exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(max(int(height), 800), 8000))
    assert browser.save_screenshot(str(ARTIFACTS / "report.png"))
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000
