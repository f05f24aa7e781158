"""Fixtures of the browser test: Chromium (or a skip that says how to install it), JupyterLab, a page."""
from __future__ import annotations

import pytest

from labpage import CHROMIUM_FLAGS, chromium

INSTALL_CHROMIUM = ("Chromium is not installed, so the browser test is skipped. Install it with "
                    "`sudo apt-get install chromium` (Debian, Ubuntu), or point DELIVERYLAB_CHROMIUM at a "
                    "Chromium or Chrome binary. The course never downloads a browser.")


@pytest.fixture(scope="session")
def chromium_path():
    path = chromium()
    if path is None:
        pytest.skip(INSTALL_CHROMIUM)
    return path


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_FLAGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    context.close()
