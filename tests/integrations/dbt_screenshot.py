"""docs/integrations.md's screenshot, regenerated: `.venv/bin/python -m tests.integrations.dbt_screenshot`
builds the dbt project of dbt_project/ in a temporary directory, sends its run to a fresh
`lodestar serve` by `dbt-ol run`, and saves the lineage explorer of the
mart table with its columns, `revenue` picked, from headless Chromium (1280x800) into
docs/screenshots/dbt-lineage.png."""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import expect, sync_playwright

from tests.support.dbt_project import build_project, dbt_ol_run, duckdb
from tests.support.integrations import settled
from tests.support.processes import TOKEN, ServeProcess
from tests.support.tool_venvs import ROOT
from tests.support.ui import CHROMIUM, click_node

OUT = ROOT / "docs" / "screenshots" / "dbt-lineage.png"
REVENUE = duckdb("main.customer_revenue")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, ServeProcess(Path(tmp) / "data") as server, \
            sync_playwright() as playwright:
        project = build_project(Path(tmp) / "dbt")
        dbt_ol_run(project, server)
        settled(server)
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        page.goto(server.url + "/")
        page.fill("#token", TOKEN)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#q")).to_be_visible()
        page.goto(f"{server.url}/#/lineage/{quote(REVENUE, safe='')}")
        expect(page.locator("table").first).to_be_visible(timeout=30_000)
        page.wait_for_load_state("networkidle")
        click_node(page, REVENUE)
        page.get_by_role("button", name="Show columns").click()
        page.locator(".column-list").get_by_role("button", name="revenue", exact=True).click()
        expect(page.locator(".panel .column-upstream").first).to_be_visible()
        page.screenshot(path=str(OUT))
        browser.close()
        print(OUT)


if __name__ == "__main__":
    main()
