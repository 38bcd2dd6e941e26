"""Helpers for driving the web UI in headless Chromium (Debian's, through Playwright): signing
in, screenshots, what the lineage graph drew, and layout checks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.support.processes import ServeProcess

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "ui"
README_SHOTS = {"search", "search-autocomplete", "entity", "entity-read-only", "run", "field", "lineage-run",
                "lineage-columns", "lineage-100", "field-lineage-simple", "field-lineage-detailed",
                "search-narrow"}  # docs/ui/<name>.png


def signed_in(browser: Browser, server: ServeProcess, token: str, width: int = 1280,
              height: int = 800) -> tuple[Page, list[str]]:
    """A new page signed in with `token`, and the list its script errors (and what the
    Content-Security-Policy blocked) are collected in."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.on("console", lambda message: errors.append(message.text)  # what the UI's policy blocked
            if "Content Security Policy" in message.text else None)
    page.goto(server.url + "/")
    page.fill("#token", token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#q")).to_be_visible()
    return page, errors


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("LODESTAR_UI_DOCS") == "1" and name in README_SHOTS:
        shutil.copyfile(path, DOCS / path.name)


def assert_fits(page: Page, width: int, where: str) -> None:
    """The page does not scroll sideways; else the message names what sticks out."""
    wide = page.evaluate("""w => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > w + 1)
        .map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}px`)
        .slice(0, 12)""", width)
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{where} is wider than {width}px: {wide}"


def click_node(page: Page, urn: str) -> None:
    """A real mouse click where the graph drew the node."""
    x, y = page.evaluate("id => { const p = window.lodestarGraph.getElementById(id).renderedPosition();"
                         " return [p.x, p.y]; }", urn)
    box = page.locator(".graph canvas").last.bounding_box()
    page.mouse.click(box["x"] + x, box["y"] + y)
