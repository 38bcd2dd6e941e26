"""The web UI end to end: headless Chromium (Debian's, driven by Playwright) against a real
`lodestar serve --examples` process. Screenshots of each page go to test-artifacts/ui/; with
LODESTAR_UI_DOCS=1 those the README shows are copied into docs/ui/ as well."""

from __future__ import annotations

import re
from urllib.parse import quote

from playwright.sync_api import Browser, Page, expect

from ingest.rest import RestClient
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import mcp
from tests.support.processes import TOKEN, ServeProcess
from tests.support.ui import assert_fits, shot, signed_in

PURCHASES = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchases,PROD)"
STORE_ID = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:cdap,default.Store,PROD),id)"
FREQUENT = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.frequentCustomers,PROD)"
STORE = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.Store,PROD)"
RUN = "urn:li:dataProcessInstance:283-99sd032-adsf90"


def test_the_ui_files_need_no_token_and_the_api_still_does(server: ServeProcess) -> None:
    anonymous = RestClient(server.url)
    for path in ("/", "/ui/app.js", "/ui/app.css"):
        assert anonymous.request("GET", path)[0] == 200, path
    status, body = anonymous.request("GET", "/ui/missing.js")
    assert status == 404 and "missing.js" in body["message"]
    assert anonymous.request("GET", "/ui/%2e%2e%2fui.py")[0] == 404
    assert anonymous.request("GET", "/v1/search?query=*")[0] == 401


def test_a_wrong_token_is_refused_and_the_page_asks_again(browser: Browser, server: ServeProcess) -> None:
    page = browser.new_page()
    page.goto(server.url + "/")
    page.fill("#token", "not-the-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("invalid bearer token")
    expect(page.locator("#q")).to_have_count(0)
    page.close()


def test_search_with_autocomplete_and_keyboard_then_open_a_dataset(page: Page) -> None:
    page.locator("#q").press_sequentially("purch", delay=30)
    suggestions = page.locator("#suggestions [role=option]")
    expect(suggestions.first).to_be_visible()
    expect(page.locator("#suggestions")).to_contain_text("purchases")
    expect(page.locator(".result-link").first).to_have_text("purchases")  # "purch" is searched as a prefix
    shot(page, "search-autocomplete")
    page.keyboard.press("Escape")
    page.locator("#q").fill("purchases")
    page.keyboard.press("Enter")
    first = page.locator(".result").first
    expect(first.locator(".result-link")).to_have_text("purchases")
    expect(first).to_contain_text("dataset")
    expect(first).to_contain_text("cdap")
    expect(first.locator(".tag")).to_contain_text(["sales"])
    expect(first.locator(".why")).to_contain_text("name: purchases")
    expect(first.locator(".description")).to_have_text("One row per purchase, written by PurchaseFlow.")
    expect(page.locator(".facets")).to_contain_text("Type")
    assert_fits(page, 1280, "the search page")
    shot(page, "search")
    page.locator("#q").focus()
    page.keyboard.press("ArrowDown")  # from the box to the first result
    expect(page.locator(".result-link").first).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("purchases")
    user = page.locator(".scope-user")
    system = page.locator(".scope-system")
    expect(user).to_contain_text("sales")
    expect(user).to_contain_text("owner")
    expect(system).to_contain_text("entity-name")
    expect(system).not_to_contain_text("sales")
    expect(page.locator("table.schema")).to_contain_text("purchaseTime")
    assert_fits(page, 1280, "the entity page")
    shot(page, "entity-opened")


def test_tag_and_field_suggestions_become_tags_and_schema_filters(page: Page) -> None:
    box = page.locator("#q")
    box.press_sequentially("mark", delay=30)
    tag = page.locator("#suggestions [role=option]", has_text="marketing")
    expect(tag.locator(".kind")).to_have_text("tag")
    page.keyboard.press("ArrowDown")
    expect(tag).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Enter")
    expect(box).to_have_value("tags:marketing")
    expect(page).to_have_url(re.compile(r"q=tags%3Amarketing"))
    expect(page.locator(".result-link")).to_have_text(["frequentCustomers"])
    box.fill("")
    box.press_sequentially("purchaseT", delay=30)
    field = page.locator("#suggestions [role=option]", has_text="purchaseTime")
    expect(field.locator(".kind")).to_have_text("field")
    field.click()  # the mouse picks one too
    expect(box).to_have_value("schema:purchaseTime")
    expect(page.locator(".result-link")).to_have_text(["purchases"])
    expect(page.locator(".result .why")).to_contain_text("fieldPaths: purchaseTime")


def test_the_keyboard_moves_through_results_and_back_to_the_box(page: Page, server: ServeProcess) -> None:
    page.goto(f"{server.url}/#/entity/{quote(PURCHASES, safe='')}")
    expect(page.locator("h1")).to_have_text("purchases")
    page.keyboard.press("/")  # from any page: to the search box
    expect(page).to_have_url(re.compile(r"#/search"))
    box = page.locator("#q")
    expect(box).to_be_focused()
    expect(box).to_have_value("")
    box.fill("tags:sales")
    page.keyboard.press("Enter")
    links = page.locator(".result-link")
    expect(links).to_have_count(5)
    page.keyboard.press("ArrowDown")
    expect(links.nth(0)).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("j")
    expect(links.nth(2)).to_be_focused()
    page.keyboard.press("k")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(links.nth(0)).to_be_focused()
    page.keyboard.press("ArrowUp")  # from the first result back up to the box
    expect(box).to_be_focused()
    for _ in range(6):
        page.keyboard.press("ArrowDown")  # into the results, then it stays on the last one
    expect(links.nth(4)).to_be_focused()
    page.keyboard.press("/")  # on the search page: back to the box, nothing typed
    expect(box).to_be_focused()
    expect(box).to_have_value("tags:sales")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    second = links.nth(1).inner_text()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text(second)


def test_the_timeline_shows_each_version_with_what_it_changed(page: Page, server: ServeProcess) -> None:
    client = server.client()
    first = client.aspect(FREQUENT, "datasetProperties")["value"]
    second = {**first, "description": "Purchases per customer, refreshed nightly.",
              "customProperties": {"namespace": "default", "retention": "90 days"}}  # datasetType removed
    third = {**second, "customProperties": {"namespace": "default", "retention": "30 days"}}
    for value in (second, third):
        assert client.propose([mcp(FREQUENT, "datasetProperties", value)])[0]["status"] == "applied"
    page.goto(f"{server.url}/#/entity/{quote(FREQUENT, safe='')}")
    timeline = page.locator("section", has=page.get_by_role("heading", name="Timeline"))
    newest = timeline.locator("details[open]")  # the latest change opens with what it changed
    expect(newest.locator("summary")).to_contain_text("datasetProperties v3 · 1 change by admin")
    expect(newest.locator(".diff li")).to_have_text(['/customProperties/retention changed "90 days" → "30 days"'])
    timeline.get_by_label("Aspect").select_option("datasetProperties")
    entries = timeline.locator(".timeline-entry")
    expect(entries.locator("summary")).to_contain_text(["v3 · 1 change", "v2 · 3 changes", "v1 · created"])
    entries.nth(1).locator("summary").click()
    second_diff = entries.nth(1).locator(".diff")
    expect(second_diff.locator(".diff-changed")).to_have_text([
        '/description changed "Number of purchases per customer (a key/value table keyed by customer)."'
        ' → "Purchases per customer, refreshed nightly."'])
    expect(second_diff.locator(".diff-added")).to_have_text(['/customProperties/retention added → "90 days"'])
    expect(second_diff.locator(".diff-removed")).to_have_text(
        ['/customProperties/datasetType removed "co.cask.cdap.api.dataset.lib.KeyValueTable"'])
    shot(page, "entity")
    timeline.get_by_label("Aspect").select_option("userScopeMetadata")  # one version: its creation only
    expect(entries.locator("summary")).to_contain_text(["userScopeMetadata v1 · created"])
    timeline.get_by_label("Aspect").select_option("")
    aspects = len(client.request("GET", f"/v1/entities/{quote(FREQUENT, safe='')}")[1]["aspects"])
    expect(entries).to_have_count(aspects + 2)  # every version of every aspect


def test_a_facet_narrows_the_results_and_paging_moves_through_them(page: Page, server: ServeProcess) -> None:
    page.goto(server.url + "/#/search?q=*")
    count = page.locator(".count")
    expect(count).to_contain_text(re.compile(r"^1–10 of \d+"))
    total = int(count.inner_text().split(" of ")[1])
    page.click("text=Next →")
    expect(count).to_have_text(f"11–20 of {total}")
    page.locator(".facet", has_text="Type").locator("button", has_text="program").click()
    expect(count).to_have_text("1–4 of 4")
    expect(page.locator(".result .badge").filter(has_text="program")).to_have_count(4)
    page.locator(".facet", has_text="Type").locator("button", has_text="program").click()  # off again
    expect(count).to_have_text(f"1–10 of {total}")
    page.locator(".facet", has_text="Tags").locator("button", has_text="sales").click()
    expect(count).to_have_text("1–5 of 5")
    expect(page.locator("#q")).to_have_value("tags:sales")
    expect(page.locator(".result .tag", has_text="sales")).to_have_count(5)


def test_every_metadata_key_is_listed_and_finds_what_carries_it(page: Page, server: ServeProcess) -> None:
    page.goto(server.url + "/#/search?q=*")
    keys = page.get_by_role("region", name="Metadata keys")
    owner = keys.locator("button", has_text="owner")
    expect(owner).to_be_visible()
    expect(keys).to_contain_text("classification")  # a USER key of a field
    carrying = int(owner.locator(".n").inner_text())
    owner.click()
    expect(page.locator("#q")).to_have_value("owner:*")
    expect(page.locator(".count")).to_have_text(f"1–{carrying} of {carrying}")
    page.locator("#q").fill("")
    page.locator("#q").press_sequentially("classif", delay=30)
    expect(page.locator("#suggestions li").first).to_contain_text("classification")  # the list for all of "classif"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#q")).to_have_value("classification:*")
    expect(page.locator(".result-link")).to_have_text(["id"])
    # the live search of the typed text, due 50 ms after the last key, is dropped by the pick: the
    # address keeps the chosen query (it was put back to the typed text when Enter came before it)
    page.locator("#q").fill("")
    page.locator("#q").press_sequentially("classifi")
    expect(page.locator("#suggestions li").first).to_contain_text("classification")
    # one more key that keeps "classification" first in the list, whether or not the list of the
    # new text has come (one for text no key starts with emptied it first on a loaded machine);
    # Enter picks from it, usually before the live search of the typed text is due
    page.locator("#q").press("c")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator(".result-link")).to_have_text(["id"])
    expect(page.locator("#q")).to_have_value("classification:*")
    assert "q=classification" in page.evaluate("location.hash")


def test_add_and_remove_a_user_tag(page: Page, server: ServeProcess) -> None:
    page.goto(f"{server.url}/#/entity/{quote(PURCHASES, safe='')}")
    user = page.locator(".scope-user")
    expect(user).to_contain_text("sales")
    page.fill("input[name=tag]", "reviewed")
    page.click("text=Add tag")
    expect(user.locator(".tag", has_text="reviewed")).to_be_visible()
    stored = server.client().request("GET", f"/v1/entities/{quote(PURCHASES, safe='')}/aspects/userScopeMetadata")[1]
    assert stored["value"]["tags"] == ["sales", "reviewed"]
    newest = page.locator(".timeline details[open]")  # the timeline opens the new version's diff
    expect(newest.locator("summary")).to_contain_text("userScopeMetadata v2")
    expect(newest.locator(".diff")).to_contain_text('/tags[] added → "reviewed"')
    expect(page.locator(".scope-system")).not_to_contain_text("reviewed")
    shot(page, "entity-tag-added")
    page.get_by_role("button", name="Remove tag reviewed").click()
    expect(user.locator(".tag", has_text="reviewed")).to_have_count(0)
    stored = server.client().request("GET", f"/v1/entities/{quote(PURCHASES, safe='')}/aspects/userScopeMetadata")[1]
    assert stored["value"]["tags"] == ["sales"]
    assert stored["version"] == 3


def test_set_and_remove_a_user_property_and_a_refused_tag(page: Page, server: ServeProcess) -> None:
    page.goto(f"{server.url}/#/entity/{quote(PURCHASES, safe='')}")
    user = page.locator(".scope-user")
    page.fill("input[name=key]", "steward")
    page.fill("input[name=value]", "Ada Lovelace")
    page.click("text=Set property")
    expect(user.locator("tr", has_text="steward")).to_contain_text("Ada Lovelace")
    expect(page.locator(".scope-system")).not_to_contain_text("steward")
    page.get_by_role("button", name="Remove property steward").click()
    expect(user.locator("tr", has_text="steward")).to_have_count(0)
    page.fill("input[name=tag]", "not$ok")
    page.click("text=Add tag")
    expect(user.get_by_role("alert")).to_contain_text("not$ok")
    stored = server.client().request("GET", f"/v1/entities/{quote(PURCHASES, safe='')}/aspects/userScopeMetadata")[1]
    assert stored["value"]["tags"] == ["sales"] and "steward" not in stored["value"]["properties"]


def test_an_application_lists_its_programs(page: Page, server: ServeProcess) -> None:
    page.goto(f"{server.url}/#/entity/{quote('urn:li:dataFlow:(cdap,PurchaseHistory,default)', safe='')}")
    programs = page.locator("section", has=page.get_by_role("heading", name="Programs"))
    expect(programs.locator("li a")).to_have_text(["PurchaseFlow", "PurchaseHistoryBuilder", "PurchaseHistoryService"])
    programs.get_by_role("link", name="PurchaseHistoryBuilder").click()
    expect(page.locator("h1")).to_have_text("PurchaseHistoryBuilder")
    expect(page.locator(".card", has_text="Reads")).to_contain_text("purchases")


def test_readers_see_no_edit_controls_and_writers_only_where_granted(browser: Browser, server: ServeProcess) -> None:
    reader = principal_with_grants(server, "reader", [("instance", ["READ"])])
    writer = principal_with_grants(server, "writer",
                                   [("instance", ["READ"]), ("default/datasets/purchases", ["WRITE"])])
    page, errors = signed_in(browser, server, reader)
    expect(page.locator("#principal")).to_have_text("reader")
    page.goto(f"{server.url}/#/entity/{quote(PURCHASES, safe='')}")
    user = page.locator(".scope-user")
    expect(user).to_contain_text("sales")
    expect(user.locator(".read-only")).to_be_visible()
    expect(page.locator("input[name=tag], input[name=key], button.remove")).to_have_count(0)
    shot(page, "entity-read-only")
    page.context.close()
    page, more = signed_in(browser, server, writer)
    page.goto(f"{server.url}/#/entity/{quote(PURCHASES, safe='')}")
    expect(page.locator("input[name=tag]")).to_be_visible()
    expect(page.get_by_role("button", name="Remove tag sales")).to_be_visible()
    page.goto(f"{server.url}/#/entity/{quote(PURCHASES.replace('purchases', 'history'), safe='')}")
    expect(page.locator(".scope-user .read-only")).to_be_visible()
    expect(page.locator("input[name=tag], button.remove")).to_have_count(0)
    page.context.close()
    assert errors + more == []
    answer = RestClient(server.url, writer).request("GET", f"/v1/ui/privileges?urn={quote(PURCHASES, safe='')}")
    assert answer == (200, {"principal": "urn:li:corpuser:writer", "urn": PURCHASES, "privileges": ["READ", "WRITE"]})
    assert RestClient(server.url, writer).request("GET", "/v1/ui/privileges?urn=")[0] == 400


def test_the_scope_facet_counts_each_scope_and_the_platform_facet(page: Page, server: ServeProcess) -> None:
    page.goto(server.url + "/#/search?q=tags:sales")
    count = page.locator(".count")
    expect(count).to_have_text("1–5 of 5")  # USER tags
    scope = page.get_by_role("region", name="Scope")
    user = scope.get_by_role("button", name=re.compile("^USER"))
    system = scope.get_by_role("button", name=re.compile("^SYSTEM"))
    expect(user.locator(".n")).to_have_text("5")
    expect(system.locator(".n")).to_have_text("0")
    system.click()
    expect(page).to_have_url(re.compile(r"scope=SYSTEM"))
    expect(system).to_have_attribute("aria-pressed", "true")
    expect(count).to_have_text("No results")
    expect(user.locator(".n")).to_have_text("5")  # the other scope still counted, to go back to
    user.click()
    expect(page).to_have_url(re.compile(r"scope=USER"))
    expect(count).to_have_text("1–5 of 5")
    expect(user).to_have_attribute("aria-pressed", "true")
    expect(system).to_have_attribute("aria-pressed", "false")
    user.click()  # off again: both scopes
    expect(page).not_to_have_url(re.compile(r"scope="))
    expect(user).to_have_attribute("aria-pressed", "false")
    page.locator("#q").fill("entity-name:purchases")  # a SYSTEM property
    page.keyboard.press("Enter")
    expect(count).to_have_text("1–1 of 1")
    expect(user.locator(".n")).to_have_text("0")
    expect(system.locator(".n")).to_have_text("1")
    page.locator("#q").fill("*")  # no filter the scope applies to: every result in either scope
    page.keyboard.press("Enter")
    expect(count).to_contain_text(re.compile(r"^1–10 of \d+"))
    total = count.inner_text().split(" of ")[1]
    expect(user.locator(".n")).to_have_text(total)
    expect(system.locator(".n")).to_have_text(total)
    page.locator(".facet", has_text="Platform").locator("button", has_text="file").click()
    expect(page.locator("#q")).to_have_value("platform:file")
    expect(count).to_have_text("1–1 of 1")
    expect(page.locator(".result-link")).to_have_text(["customers.csv"])
    expect(page.locator(".result .badge.platform")).to_have_text(["file"])
    expect(system.locator(".n")).to_have_text("1")  # platform is SYSTEM metadata
    expect(user.locator(".n")).to_have_text("0")


def test_a_field_page_and_a_run_page(page: Page, server: ServeProcess) -> None:
    page.goto(f"{server.url}/#/entity/{quote(STORE, safe='')}")
    id_row = page.locator("table.schema tbody tr", has_text="id").first
    expect(id_row.locator(".tag.user")).to_have_text(["PII"])  # the field entity's own USER tag
    id_row.get_by_role("link", name="id", exact=True).click()
    expect(page.locator(".entity-head .badge").first).to_contain_text("field", ignore_case=True)
    expect(page.locator(".scope-user")).to_contain_text("PII")
    expect(page.locator(".scope-user")).to_contain_text("classification")
    expect(page.locator(".scope-system")).to_contain_text("operations")
    expect(page.locator(".scope-system")).not_to_contain_text("PII")
    assert_fits(page, 1280, "a field's page")
    shot(page, "field")
    page.get_by_role("link", name="Field lineage").click()
    expect(page.locator("h1")).to_contain_text("Field lineage of Store.id")
    page.go_back()
    page.get_by_role("link", name="Dataset").click()
    expect(page.locator("h1")).to_have_text("Store")
    page.goto(f"{server.url}/#/entity/{quote(RUN, safe='')}")
    expect(page.locator("h1")).to_have_text("283-99sd032-adsf90")
    card = page.locator("section.card", has=page.get_by_role("heading", name="Run", exact=True))
    expect(card).to_contain_text("PurchaseHistoryBuilder")  # its program
    expect(card.get_by_role("rowheader", name="program", exact=True)).to_have_count(1)  # not again from CDAP's copy
    expect(card).to_contain_text("BATCH_SCHEDULED")
    events = card.locator("table", has=page.get_by_role("columnheader", name="result")).locator("tbody tr")
    expect(events).to_have_count(2)
    expect(events.filter(has_text="STARTED")).to_contain_text("2015-09-03 20:55:00 UTC")
    expect(events.filter(has_text="COMPLETE")).to_contain_text("SUCCESS")
    expect(card.locator("h3", has_text="Inputs")).to_be_visible()
    expect(card).to_contain_text("purchases")
    assert_fits(page, 1280, "a run's page")
    shot(page, "run")


def test_narrow_window(browser: Browser, server: ServeProcess) -> None:
    context = browser.new_context(viewport={"width": 420, "height": 800})
    page = context.new_page()
    page.goto(server.url + "/")
    page.fill("#token", TOKEN)
    page.get_by_role("button", name="Sign in").click()
    page.locator("#q").fill("purchases")
    page.keyboard.press("Enter")
    expect(page.locator(".result").first).to_be_visible()
    assert_fits(page, 420, "the search page")
    shot(page, "search-narrow")
    pages = [(f"#/entity/{quote(PURCHASES, safe='')}", "purchases", "table.schema", None),
             (f"#/lineage/{quote(PURCHASES, safe='')}", "Lineage of purchases", "table.relations tbody tr",
              "lineage-narrow"),
             (f"#/field/{quote(STORE_ID, safe='')}", "Field lineage of Store.id", "table.field-edges tbody tr",
              "field-lineage-narrow"),
             (f"#/entity/{quote(RUN, safe='')}", "283-99sd032-adsf90", "section.card h3 >> text=Inputs", None),
             (f"#/entity/{quote(STORE_ID, safe='')}", "id", ".scope-user .tag", None)]
    for hash_, heading, content, name in pages:
        page.goto(f"{server.url}/{hash_}")
        expect(page.locator("h1")).to_contain_text(heading)
        expect(page.locator(content).first).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert_fits(page, 420, hash_)
        if name:
            shot(page, name)
    context.close()
