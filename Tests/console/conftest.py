"""Fixtures for the console's browser tests: the real push-server binary (console enabled, plain HTTP on
127.0.0.1) against the strict mock APNs, driven through Debian's Chromium by Selenium with Debian's chromedriver.

Screenshots go to $CONSOLE_SCREENSHOTS (default `.build/console-screenshots`); docs/console/ keeps one of each.
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk"))

from harness import INSTANCE_ID, ROOT, SECRET, Mock, Server, write_apns_key  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
SHOTS = Path(os.environ.get("CONSOLE_SCREENSHOTS", ROOT / ".build" / "console-screenshots"))


@pytest.fixture(scope="module")
def console_env(tmp_path_factory):
    """Mock APNs plus a server with the console enabled; both stop at module end."""
    directory = tmp_path_factory.mktemp("console")
    p8, pub = write_apns_key(directory)
    mock = Mock(directory, pub)
    server = Server(directory, mock, p8, overrides={"console": {"enabled": True}})
    yield server, mock
    server.stop()
    mock.stop()


@pytest.fixture(scope="module")
def driver():
    # Imported here so that collecting the other test folders never needs Selenium.
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,800",
                "--lang=en-US", "--disable-extensions", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--metrics-recording-only"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path skips Selenium Manager, which would try the internet.
    service = Service(CHROMEDRIVER, log_output=str(SHOTS.parent / "chromedriver.log") if SHOTS.parent.exists() else None)
    drv = webdriver.Chrome(service=service, options=options)
    try:
        yield drv
    finally:
        drv.quit()


@pytest.fixture(scope="session")
def shots():
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


__all__ = ["INSTANCE_ID", "SECRET"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test item, so the `page` fixture can tell a failed test at teardown."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)
