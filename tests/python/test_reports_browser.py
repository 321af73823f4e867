"""Every paper's report and the index over them, as ``make demo`` writes
them, in headless Chromium at 1280 px (tests/python/chromium.py): no page
scrolls sideways (a wide table scrolls inside its own box), every image
loads, every link of the index resolves to a report that loads, and nothing
is logged at SEVERE level. The reproductions run at tiny durations: the
layout, not the numbers, is under test. Screenshots of the index and of the
vIC report are left in ``tests/python/artifacts/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from chromium import WIDTH_PX, chromium
from conftest import HERE, irqlab
from irqlab.reproduce.index import PAPERS

pytestmark = pytest.mark.needs_run

ARTIFACTS = HERE / "artifacts"

#: Each reproduction's flags for a run of seconds, not minutes.
TINY = {
    "thesis": ("--closed-duration", "0.02", "--open-duration", "0.01", "--no-vm"),
    "cover-letter": ("--duration", "0.01"),
    "itr": ("--duration", "0.01"),
    "iaps": ("--duration", "0.01", "--seeds", "1"),
    "vic": ("--duration", "0.01", "--seeds", "1"),
    "sriov": ("--duration", "0.01", "--seeds", "1"),
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The five papers' reproductions and the index, as make demo lays them out."""
    out = tmp_path_factory.mktemp("demo") / "irqlab-out"
    for e in PAPERS:
        proc = irqlab("reproduce", e.name, "--out", str(out / e.subdir if e.subdir else out), "--quiet",
                      *TINY[e.name], timeout=600)
        assert proc.returncode == 0, proc.stderr
        # plotstyle's warning for a figure that breaks the style names its
        # file ("figure NAME.png: ..."); a warning about the runs of a study
        # named figure-5 is not one.
        assert not re.search(r"warning: figure \S+\.(png|svg): ", proc.stderr), proc.stderr
    proc = irqlab("reproduce", "index", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == f"index: {out / 'index.html'}"
    assert [line.split(":")[0] for line in lines[:-1]] == [e.name for e in PAPERS]
    return out


@pytest.fixture(scope="module")
def browser(monkeypatch_module):  # type: ignore[no-untyped-def]
    yield from chromium(monkeypatch_module)


@pytest.fixture(scope="module")
def monkeypatch_module():  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def _check_page(browser, url: str) -> None:  # type: ignore[no-untyped-def]
    browser.get(url)
    assert browser.execute_script("return document.readyState") == "complete"
    assert browser.title, url
    width = browser.execute_script("return window.innerWidth")
    assert width == WIDTH_PX or width > 1000, width
    scroll, client = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert scroll <= client, f"{url} scrolls sideways: {scroll} px of content in {client} px"
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt])")
    assert images, f"{url} has no image"
    for complete, natural, alt in images:
        assert complete and natural > 0, (url, alt)
    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, (url, severe)


def _screenshot(browser, name: str) -> None:  # type: ignore[no-untyped-def]
    ARTIFACTS.mkdir(exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(WIDTH_PX, min(max(int(height), 800), 3000))
    assert browser.save_screenshot(str(ARTIFACTS / name))
    browser.set_window_size(WIDTH_PX, 1000)


def test_index_and_every_report_read_in_chromium(demo: Path, browser) -> None:  # type: ignore[no-untyped-def]
    index = demo / "index.html"
    _check_page(browser, index.as_uri())
    _screenshot(browser, "index.png")
    links = browser.execute_script("return Array.from(document.links).map(a => a.href)")
    targets = list(dict.fromkeys(unquote(urlparse(h).path) for h in links))
    # One report per paper, each linked from its card.
    assert sorted(targets) == sorted(str((demo / e.subdir if e.subdir else demo) / "report.html") for e in PAPERS)
    for target in targets:
        assert Path(target).is_file(), target
        _check_page(browser, Path(target).as_uri())
        if target.endswith("vic/report.html"):
            _screenshot(browser, "report-vic.png")
