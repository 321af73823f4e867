"""Debian's Chromium, headless, driven by Selenium through the system
chromedriver, for the browser tests: a 1280-px window, the console logged.

Nothing is downloaded: the driver and the browser are the system's, given by
path, so that Selenium Manager never runs. Without them the test is skipped,
saying so; `make setup` run as root installs the Debian packages chromium and
chromium-driver (tools/system-packages.sh), and .ci/run fails without them.
"""

from __future__ import annotations

import shutil
from typing import Iterator

import pytest

#: The window's width: a laptop's browser.
WIDTH_PX = 1280


def chromium(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """A fixture's body: yields the driver, quits it after."""
    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver_path is None:
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver_path)) if p is None)
        pytest.skip(f"{missing} not on PATH (Debian packages chromium and chromium-driver: make setup as root installs "
                    "them); the report is not checked in a browser")
    # Selenium must never fetch a driver or a browser.
    monkeypatch.setenv("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={WIDTH_PX},1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()
