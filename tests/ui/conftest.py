"""Fixtures of the web UI tests: a `lodestar serve --examples` process per module, one Chromium,
and a page signed in as the admin that fails the test on any script error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.processes import TOKEN, ServeProcess
from tests.support.ui import CHROMIUM, signed_in

expect.set_options(timeout=15_000)  # pages answer slower on a loaded machine; a real failure still fails


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with ServeProcess(tmp_path_factory.mktemp("ui"), None, "--examples") as process:
        yield process


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, server: ServeProcess) -> Iterator[Page]:
    page, errors = signed_in(browser, server, TOKEN)
    yield page
    page.context.close()
    assert errors == [], f"script errors on the page: {errors}"
