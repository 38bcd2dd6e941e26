"""The README's screenshots, regenerated: `.venv/bin/python -m tests.ui.screenshots` starts
`lodestar serve --examples` in a temporary directory, adds shop.orders as DataHub's emitter
writes it, and saves search, entity, lineage and column lineage pages from headless Chromium
(1280x800) into docs/screenshots/."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import Page, expect, sync_playwright

from tests.support.processes import TOKEN, ServeProcess
from tests.support.shop_orders import ORDERS, emit_shop_orders
from tests.support.ui import CHROMIUM, click_node

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
STORE = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.Store,PROD)"
PURCHASES = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchases,PROD)"
def show_column(page: Page) -> None:
    """Open Store's columns in the explorer and pick `name`: its upstream columns light up."""
    click_node(page, STORE)
    page.get_by_role("button", name="Show columns").click()
    page.locator(".column-list").get_by_role("button", name="name", exact=True).click()
    expect(page.locator(".panel .column-upstream").first).to_be_visible()


# name -> (the page's address after the server's URL, what shows once it is drawn, what to do then)
SHOTS: dict[str, tuple[str, str, Callable[[Page], None] | None]] = {
    "search": ("/#/search?q=*", ".result .tag", None),
    "entity": (f"/#/entity/{quote(ORDERS, safe='')}", ".timeline-entry", None),
    "lineage": (f"/#/lineage/{quote(PURCHASES, safe='')}", "table", None),
    "column-lineage": (f"/#/lineage/{quote(STORE, safe='')}", "table", show_column),
}


def take(page: Page, url: str, ready: str, then: Callable[[Page], None] | None, path: Path) -> None:
    page.goto(url)
    expect(page.locator(ready).first).to_be_visible(timeout=30_000)
    page.wait_for_load_state("networkidle")
    if then:
        then(page)
    page.screenshot(path=str(path))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, ServeProcess(Path(tmp) / "data", None, "--examples") as server, \
            sync_playwright() as playwright:
        emit_shop_orders(server)
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        page.goto(server.url + "/")
        page.fill("#token", TOKEN)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#q")).to_be_visible()
        for name, (address, ready, then) in SHOTS.items():
            take(page, server.url + address, ready, then, OUT / f"{name}.png")
            print(OUT / f"{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
