"""The entity page in Chromium against a real `lodestar serve --examples`, with a DataHub-style
dataset written by DataHub's own REST emitter: the header (platform, breadcrumbs, owners,
domain, terms, tags, deprecation, links), the schema tree, the lineage summary, field pages
built from the schema, a program's runs, the timeline and schema diff, and edits."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from datahub.emitter.mce_builder import make_schema_field_urn
from playwright.sync_api import Browser, Page, Route, expect

from ingest.rest import RestClient
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import mcp
from tests.support.lineage_fixtures import program, propose_and_index, run
from tests.support.processes import TOKEN, ServeProcess
from tests.support.shop_orders import EMAIL, ORDERS, emit_shop_orders
from tests.support.ui import assert_fits, shot, signed_in

NAME = make_schema_field_urn(ORDERS, "customer.name")
BUILDER = "urn:li:dataJob:(urn:li:dataFlow:(cdap,PurchaseHistory,default),PurchaseHistoryBuilder)"


def entity_url(server: ServeProcess, urn: str) -> str:
    return f"{server.url}/#/entity/{quote(urn, safe='')}"


def encoded(urn: str) -> str:
    """A URN as the pages' links encode it (encodeURIComponent keeps parentheses)."""
    return quote(urn, safe="()")


@pytest.fixture(scope="module")
def orders(server: ServeProcess) -> str:
    return emit_shop_orders(server)


def version(server: ServeProcess, urn: str, aspect: str) -> int:
    status, body = server.client().request("GET", f"/v1/entities/{quote(urn, safe='')}/aspects/{aspect}")
    return body["version"] if status == 200 else -1


def stored(server: ServeProcess, urn: str, aspect: str) -> dict:
    return server.client().request("GET", f"/v1/entities/{quote(urn, safe='')}/aspects/{aspect}")[1]["value"]


def test_the_header_of_a_datahub_dataset(page: Page, server: ServeProcess, orders: str) -> None:
    page.goto(entity_url(server, orders))
    head = page.locator(".entity-head")
    expect(head.locator("h1")).to_have_text("orders")
    expect(head.locator(".badge").first).to_have_text("dataset")
    expect(head.get_by_role("img", name="hive platform").first).to_be_visible()
    expect(head.get_by_label("Breadcrumbs").locator("li")).to_have_text(["hive", "shop"])
    expect(head.get_by_label("Owners")).to_contain_text("alice · technical owner")
    expect(head.locator(".facts")).to_contain_text("sales")
    expect(head.get_by_label("Glossary terms")).to_have_text(re.compile("Revenue"))
    expect(head.get_by_label("DataHub tags")).to_have_text(re.compile("gold"))
    expect(head.locator(".deprecated")).to_contain_text("Deprecated: Use shop.orders_v2")
    expect(head.get_by_role("link", name="Orders runbook")).to_have_attribute("href", "https://wiki.example.com/orders")
    expect(head.locator(".description")).to_have_text("Every order placed in the shop.")
    related = page.locator("section", has=page.get_by_role("heading", name="Upstream and downstream"))
    expect(related.get_by_label("Upstream").get_by_role("link")).to_have_text(["raw_orders"])
    expect(related.get_by_label("Downstream")).to_contain_text("None")
    related.get_by_role("link", name="raw_orders").click()
    expect(page.locator("h1")).to_have_text("raw_orders")
    expect(page.locator("section", has=page.get_by_role("heading", name="Upstream and downstream"))
           .get_by_label("Downstream").get_by_role("link")).to_have_text(["orders"])
    page.go_back()
    expect(page.locator("h1")).to_have_text("orders")
    expect(page.get_by_role("link", name="Open lineage")).to_have_attribute("href", f"#/lineage/{encoded(orders)}")
    assert_fits(page, 1280, "a DataHub dataset's page")


def test_the_schema_as_a_tree_with_a_filter_markers_and_lineage(page: Page, server: ServeProcess, orders: str) -> None:
    page.goto(entity_url(server, orders))
    schema = page.locator("section.schema-card")
    expect(schema.locator("h2")).to_have_text("Schema (6 fields)")  # schema first: before the lineage summary
    assert page.evaluate("document.querySelector('.schema-card').compareDocumentPosition("
                         "document.querySelector('.related')) & Node.DOCUMENT_POSITION_FOLLOWING")
    rows = schema.locator("tbody tr")
    email = schema.locator("tr[data-path='customer.email']")
    expect(email).to_have_attribute("aria-level", "2")  # nested under customer, shown by its own name
    expect(email.locator("th")).to_have_text("email")
    expect(email).to_contain_text("Where receipts go")
    expect(email.locator(".tag")).to_have_text(["pii"])
    expect(email.locator(".marker")).to_have_text(["nullable"])
    expect(schema.locator("tr[data-path='id'] .marker.key")).to_have_text(["key"])
    expect(schema.locator("tr[data-path='total'] code")).to_have_text("decimal(10,2)")
    marker = email.get_by_role("link", name="Lineage of field customer.email")
    expect(marker).to_have_attribute("href", f"#/field/{encoded(EMAIL)}")  # fineGrainedLineages: has lineage
    expect(page.locator(".schema-card[data-lineage=checked] .lineage-marker")).to_have_count(1)  # only that one
    schema.get_by_label("Filter fields").fill("receipts")
    expect(rows.locator("visible=true")).to_have_count(2)  # the match and its parent
    expect(schema.locator("tr[data-path='customer']")).to_be_visible()
    schema.get_by_label("Filter fields").fill("")
    expect(rows.locator("visible=true")).to_have_count(6)
    schema.get_by_role("button", name="Expand or collapse customer").click()
    expect(email).to_be_hidden()
    expect(schema.locator("tr[data-path='customer.name']")).to_be_hidden()
    expect(rows.locator("visible=true")).to_have_count(4)
    schema.get_by_role("button", name="Expand or collapse customer").click()
    expect(email).to_be_visible()
    shot(page, "entity-datahub")


def test_every_field_has_a_page_built_from_the_schema(page: Page, server: ServeProcess, orders: str) -> None:
    page.goto(entity_url(server, orders))
    page.locator("tr[data-path='customer.name'] th").get_by_role("link", name="name").click()
    expect(page).to_have_url(re.compile(re.escape(encoded(NAME))))
    head = page.locator(".entity-head")
    expect(head.locator("h1")).to_have_text("customer.name")
    expect(head.locator(".badge").first).to_have_text("field")
    expect(head.locator(".badge.type")).to_have_text("string")
    expect(head.get_by_label("Breadcrumbs")).to_contain_text("orders")
    card = page.locator("section.schema-card")
    expect(card.locator("h2")).to_have_text("Field in the dataset's schema")
    expect(card.locator("tbody tr")).to_have_count(1)
    expect(card.locator(".marker")).to_have_text(["nullable"])
    expect(head.get_by_role("link", name="Field lineage")).to_have_attribute("href", f"#/field/{encoded(NAME)}")
    head.get_by_role("link", name="Dataset").click()
    expect(page.locator("h1")).to_have_text("orders")
    page.goto(entity_url(server, make_schema_field_urn(ORDERS, "no_such_field")))
    expect(page.locator("h1")).to_have_text("Not found")


def test_a_bad_address_shows_a_page_of_its_own(page: Page, server: ServeProcess) -> None:
    page.goto(entity_url(server, "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchases,PROD)"))
    expect(page.locator("h1")).to_have_text("purchases")
    page.goto(f"{server.url}/#/entity/%E0%A4%A")  # cannot be percent-decoded: the old page must go
    expect(page.locator("h1")).to_have_text("Not a valid URN")
    expect(page.locator(".problem")).to_contain_text("%E0%A4%A")
    page.goto(f"{server.url}/#/entity/{quote('urn:li:dataset:(urn:li:dataPlatform:hive,nowhere.none,PROD)', safe='')}")
    expect(page.locator("h1")).to_have_text("Not found")
    page.goto(f"{server.url}/#/entity/garbage")
    expect(page.locator("h1")).to_have_text("Not a valid URN")


def test_only_http_and_mailto_links_of_metadata_are_clickable(page: Page, server: ServeProcess) -> None:
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,shop.hostile_links,PROD)"
    stamp = {"time": 0, "actor": "urn:li:corpuser:mallory"}
    links = [("https://wiki.example.com/ok", "Runbook"), ("mailto:owners@example.com", "Mail the owners"),
             ("javascript:document.title='owned'", "Harmless docs"), (" JavaScript:alert(1)", "Spaced"),
             ("data:text/html,<script>alert(1)</script>", "Data URL"), ("/ui/relative", "Relative")]
    propose_and_index(server.client(), [mcp(urn, "institutionalMemory", {"elements": [
        {"url": url, "description": text, "createStamp": stamp} for url, text in links]})])
    page.goto(entity_url(server, urn))
    head = page.locator(".entity-head")
    expect(head.get_by_role("link", name="Runbook")).to_have_attribute("href", "https://wiki.example.com/ok")
    expect(head.get_by_role("link", name="Mail the owners")).to_have_attribute("href", "mailto:owners@example.com")
    inert = head.locator(".links .inert-link")
    expect(inert).to_have_count(4)  # shown, as text
    expect(inert.first).to_contain_text("Harmless docs javascript:document.title='owned'")
    expect(head.locator(".links a")).to_have_count(2)
    title = page.title()
    inert.first.click()
    expect(page).to_have_title(title)  # nothing ran
    expect(head.locator("h1")).to_have_text("hostile_links")


def test_a_program_lists_its_runs_in_one_request_and_links_to_its_lineage(page: Page, server: ServeProcess) -> None:
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url.removeprefix(server.url)))
    page.goto(entity_url(server, BUILDER))
    runs = page.locator("section.runs-card tbody tr")
    expect(runs).to_have_count(2)
    page.wait_for_load_state("networkidle")
    api_calls = [url for url in asked if url.startswith("/v")]
    assert [url for url in api_calls if url.startswith("/v1/runs")] == [
        f"/v1/runs?program={quote(BUILDER, safe='')}&count=100"], api_calls  # the runs in one, none run by run
    assert not [url for url in api_calls if "dataProcessInstance" in url], api_calls  # nothing asked run by run
    aspects = len(server.client().call("GET", f"/v1/entities/{quote(BUILDER, safe='')}")["aspects"])
    assert len(api_calls) <= 4 + aspects, api_calls  # entity, metadata, privileges, runs; each aspect's versions
    expect(runs.nth(0)).to_have_text(re.compile(r"283-88wedfk-09wrff\s*SUCCESS\s*2015-09-03 21:55:00 UTC\s*10 min 0 s"))
    expect(runs.nth(1)).to_have_text(re.compile(r"283-99sd032-adsf90\s*SUCCESS\s*2015-09-03 20:55:00 UTC\s*10 min 0 s"))
    expect(page.get_by_role("link", name="Open lineage")).to_have_attribute("href", f"#/lineage/{encoded(BUILDER)}")
    runs.nth(1).get_by_role("link").click()
    expect(page.locator("h1")).to_have_text("283-99sd032-adsf90")


def test_a_program_whose_runs_touch_no_dataset_lists_them(page: Page, server: ServeProcess) -> None:
    job = program("Cleaner", app="Housekeeping")
    propose_and_index(server.client(), [mcp(job, "dataJobInfo", {"name": "Cleaner", "type": {"string": "worker"},
                                                                  "customProperties": {}}),
                                        *run("cleaner-1", job, 1_700_000_000, 1_700_000_090)])
    page.goto(entity_url(server, job))
    runs = page.locator("section.runs-card tbody tr")
    expect(runs).to_have_text([re.compile(r"cleaner-1\s*SUCCESS\s*2023-11-14 22:13:20 UTC\s*1 min 30 s")])


def test_the_timeline_and_the_schema_diff(page: Page, server: ServeProcess, orders: str) -> None:
    page.goto(entity_url(server, orders))
    timeline = page.locator("section", has=page.get_by_role("heading", name="Timeline"))
    entries = timeline.locator(".timeline-entry")
    aspects = len(server.client().request("GET", f"/v1/entities/{quote(orders, safe='')}")[1]["aspects"])
    expect(entries).to_have_count(aspects + 1)  # every version of every aspect: schemaMetadata has two
    newest = timeline.locator("details[open]")
    expect(newest).to_have_count(1)  # the latest change (not a creation) is open, with its diff
    expect(newest.locator("summary")).to_contain_text("schemaMetadata v2")
    expect(newest.locator(".diff li").first).to_be_visible()
    timeline.get_by_label("Aspect").select_option("schemaMetadata")
    expect(entries).to_have_count(2)
    expect(entries.locator("summary")).to_contain_text(["schemaMetadata v2", "schemaMetadata v1 · created"])
    diff = page.locator("section", has=page.get_by_role("heading", name="Schema versions (2)")).locator("tbody tr")
    expect(diff).to_have_text([re.compile(r"total\s*type changed\s*double\s*decimal\(10,2\)"),
                               re.compile(r"currency\s*added\s*string")])
    page.get_by_label("To schema version").select_option("1")
    expect(page.locator(".schema-diff")).to_contain_text("No difference")
    page.get_by_label("From schema version").select_option("2")  # backwards: what v2 added is removed
    expect(diff.filter(has_text="currency")).to_contain_text("removed")


def test_datahub_tags_are_user_scope_on_the_page_the_facet_and_the_cards(page: Page, server: ServeProcess,
                                                                         orders: str) -> None:
    page.goto(f"{server.url}/#/search?q=tags:gold")
    expect(page.locator(".result-link")).to_have_text(["orders"])
    chip = page.locator(".result .tag", has_text="gold")
    expect(chip).to_have_class(re.compile(r"\buser\b"))
    scope = page.get_by_role("region", name="Scope")
    expect(scope.get_by_role("button", name=re.compile("^USER")).locator(".n")).to_have_text("1")
    expect(scope.get_by_role("button", name=re.compile("^SYSTEM")).locator(".n")).to_have_text("0")
    page.locator(".result-link").click()
    expect(page.locator(".scope-user")).to_contain_text("gold")
    expect(page.locator(".scope-system")).not_to_contain_text("gold")


def test_a_page_of_results_is_one_request_and_logs_no_error(page: Page, server: ServeProcess, orders: str) -> None:
    requests: list[str] = []
    console: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda message: message.type == "error" and console.append(message.text))
    page.goto(f"{server.url}/#/search?q=*")  # most results carry no tags
    expect(page.locator(".result-link")).to_have_count(10)
    with page.expect_response(lambda response: "/v1/search" in response.url):  # after what the first page asked
        page.get_by_role("button", name="Next →").click()
    expect(page.locator(".result-link")).to_have_count(10)
    page.goto(f"{server.url}/#/search?q=tags:gold")
    expect(page.locator(".result .tag")).to_have_text(["gold"])  # the tags come with the results
    asked = [re.sub(r"\?.*", "", url.removeprefix(server.url)) for url in requests if "/v" in url]
    assert set(asked) == {"/v1/search"}, asked  # the pages, and the scope facet's counts of `tags:gold`
    assert console == []


def add_in(page: Page, label: str, value: str, choice: str | None = None) -> None:
    """Fill one of the header's add forms (its input labelled `label`) and submit it."""
    form = page.locator(".entity-head form.add", has=page.get_by_label(label, exact=True))
    form.get_by_label(label, exact=True).fill(value)
    if choice:
        form.locator("select").select_option(choice)
    form.get_by_role("button", name="Add").click()


def edit_field(page: Page, opener: str, box: str, value: str) -> None:
    """Open a field's inline editor (the button named `opener`), type `value` into `box`, submit."""
    page.get_by_role("button", name=opener).click()
    page.get_by_role("textbox", name=box).fill(value)
    page.get_by_role("textbox", name=box).press("Enter")


def describe(page: Page, text: str) -> None:
    page.get_by_role("button", name="Edit description", exact=True).click()
    page.get_by_label("Description", exact=True).fill(text)
    page.get_by_role("button", name="Save description").click()


def test_edits_are_one_proposal_each_and_the_page_shows_the_new_version(page: Page, server: ServeProcess,
                                                                        orders: str) -> None:
    page.goto(entity_url(server, orders))
    head = page.locator(".entity-head")
    name_row = page.locator("tr[data-path='customer.name']")
    edits = [
        ("globalTags", lambda: add_in(page, "DataHub tag", "reviewed"),
         lambda: expect(head.get_by_label("DataHub tags")).to_contain_text("reviewed")),
        ("globalTags", lambda: head.get_by_role("button", name="Remove DataHub tag gold").click(),
         lambda: expect(head.get_by_label("DataHub tags")).not_to_contain_text("gold")),
        ("glossaryTerms", lambda: add_in(page, "Glossary term", "Finance"),
         lambda: expect(head.get_by_label("Glossary terms")).to_contain_text("Finance")),
        ("ownership", lambda: add_in(page, "Owner", "bob", "DATA_STEWARD"),
         lambda: expect(head.get_by_label("Owners")).to_contain_text("bob · data steward")),
        ("editableDatasetProperties", lambda: describe(page, "Orders, one row each."),
         lambda: expect(head.locator(".description")).to_have_text("Orders, one row each.")),
        ("editableSchemaMetadata",
         lambda: edit_field(page, "Edit description of customer.name", "Description of customer.name", "Full name"),
         lambda: expect(name_row).to_contain_text("Full name")),
        ("editableSchemaMetadata",
         lambda: edit_field(page, "Add tag to customer.name", "New tag for customer.name", "pii"),
         lambda: expect(name_row.locator(".tag")).to_have_text([re.compile("^pii")])),
    ]
    for aspect, act, shown in edits:
        before = version(server, orders, aspect)
        act()
        shown()
        assert version(server, orders, aspect) == max(before, 0) + 1, f"{aspect}: one new version per edit"
    assert stored(server, orders, "globalTags")["tags"] == [{"tag": "urn:li:tag:reviewed"}]
    assert [t["urn"] for t in stored(server, orders, "glossaryTerms")["terms"]] == [
        "urn:li:glossaryTerm:Revenue", "urn:li:glossaryTerm:Finance"]
    assert {"owner": "urn:li:corpuser:bob", "type": "DATA_STEWARD"} in stored(server, orders, "ownership")["owners"]
    assert stored(server, orders, "editableDatasetProperties")["description"] == "Orders, one row each."
    [info] = stored(server, orders, "editableSchemaMetadata")["editableSchemaFieldInfo"]
    assert info["fieldPath"] == "customer.name" and info["description"] == "Full name"
    assert info["globalTags"] == {"tags": [{"tag": "urn:li:tag:pii"}]}
    # the page shows the new version
    expect(page.locator(".timeline-entry").first).to_contain_text("editableSchemaMetadata v2")
    shot(page, "entity-edited")


def test_a_refused_edit_is_explained_in_place(browser: Browser, server: ServeProcess, orders: str) -> None:
    writer = principal_with_grants(server, "editor", [("instance", ["READ"]), (orders, ["WRITE"])])
    page, errors = signed_in(browser, server, writer)
    page.goto(entity_url(server, orders))
    head = page.locator(".entity-head")
    expect(head.get_by_label("DataHub tag", exact=True)).to_be_visible()  # WRITE: the controls are offered
    revoke = f"/v1/access/grants?principal=editor&resource={quote(orders, safe='')}"
    status, _ = server.client().request("DELETE", revoke)
    assert status == 200
    before = stored(server, orders, "globalTags")
    head.get_by_label("DataHub tag", exact=True).fill("sneaky")
    head.locator("form.add", has=page.get_by_label("DataHub tag", exact=True)).get_by_role("button", name="Add").click()
    alert = head.get_by_role("alert")
    expect(alert).to_contain_text("Your token may not change the tags here (403")
    expect(alert).to_contain_text("WRITE")
    assert stored(server, orders, "globalTags") == before
    page.context.close()
    assert errors == []


def test_escape_closes_the_suggestions_and_keeps_the_query(page: Page) -> None:
    box = page.locator("#q")
    box.press_sequentially("purch", delay=30)
    expect(page.locator("#suggestions [role=option]").first).to_be_visible()
    expect(page.locator(".result-link").first).to_have_text("purchases")
    page.keyboard.press("Escape")
    expect(page.locator("#suggestions")).to_be_hidden()
    expect(box).to_have_attribute("aria-expanded", "false")
    expect(box).to_have_value("purch")
    expect(page).to_have_url(re.compile(r"q=purch"))
    expect(page.locator(".result-link").first).to_have_text("purchases")


def test_sign_out_and_the_search_hint_only_once_signed_in(browser: Browser, server: ServeProcess) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(server.url + "/")
    expect(page.locator("#token")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
    expect(page.locator("#keys-hint")).to_be_hidden()
    page.locator("body").press("/")
    expect(page.locator("#token")).to_be_visible()  # "/" leads nowhere before sign-in
    page.fill("#token", TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.locator("#keys-hint")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#token")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
    expect(page.locator("#principal")).to_be_hidden()
    page.context.close()


def test_a_reader_sees_the_header_without_edit_controls(browser: Browser, server: ServeProcess, orders: str) -> None:
    reader = principal_with_grants(server, "header-reader", [("instance", ["READ"])])
    page, errors = signed_in(browser, server, reader)
    page.goto(entity_url(server, orders))
    head = page.locator(".entity-head")
    expect(head.get_by_label("Owners")).to_contain_text("alice")
    expect(head.locator("form, button.remove")).to_have_count(0)
    expect(page.locator(".schema-card .field-edit")).to_have_count(0)
    expect(head.locator(".read-only")).to_be_visible()
    assert RestClient(server.url, reader).request("GET", f"/v1/ui/privileges?urn={quote(orders, safe='')}")[1][
        "privileges"] == ["READ"]
    page.context.close()
    assert errors == []


def test_a_page_left_while_loading_does_not_replace_the_next(page: Page, server: ServeProcess, orders: str) -> None:
    held: list[Route] = []
    entity = f"/v1/entities/{encoded(orders)}"
    page.route(lambda url: url.endswith(entity), lambda route: held.append(route))  # answered once the next page shows
    page.goto(entity_url(server, orders))
    expect(page.get_by_text("Loading…")).to_be_visible()
    page.goto(f"{server.url}/#/search?q=purchases")
    expect(page.locator(".result-link").first).to_have_text("purchases")
    assert held, "the entity page asked for its entity"
    # once the late page has rendered, its timeline asks for versions
    with page.expect_request(lambda request: "/versions" in request.url):
        for route in held:
            route.continue_()
    expect(page.locator(".entity-head")).to_have_count(0)
    expect(page.locator("#q")).to_have_value("purchases")


def test_the_page_fits_a_narrow_window(browser: Browser, server: ServeProcess, orders: str) -> None:
    page, errors = signed_in(browser, server, TOKEN, width=420)
    page.goto(entity_url(server, orders))
    expect(page.locator(".timeline-entry").first).to_be_visible()
    expect(page.locator(".schema-card[data-lineage=checked] .lineage-marker")).to_have_count(1)
    assert_fits(page, 420, "a DataHub dataset's page")
    shot(page, "entity-narrow")
    page.context.close()
    assert errors == []


def test_cdap_field_lineage_marks_fields_and_the_container_is_a_breadcrumb(page: Page, server: ServeProcess) -> None:
    store = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.Store,PROD)"
    page.goto(entity_url(server, store))
    markers = page.locator("table.schema .lineage-marker")
    expect(markers).to_have_count(5)  # every Store field is written by the pipeline's field operations
    crumbs = page.get_by_label("Breadcrumbs").locator("li")
    expect(crumbs).to_have_text(["cdap", "namespace default"])  # the container chain
    markers.first.click()
    expect(page).to_have_url(re.compile(r"#/field/urn%3Ali%3AschemaField"))
    page.goto(entity_url(server, "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchases,PROD)"))
    expect(page.locator(".schema-card[data-lineage=checked]")).to_be_visible()
    expect(page.locator("table.schema .lineage-marker")).to_have_count(0)  # purchases' fields have none
    page.get_by_label("Breadcrumbs").get_by_role("link", name="default").click()
    expect(page.locator(".entity-head .badge").first).to_have_text("namespace")


def test_an_edit_made_meanwhile_is_not_overwritten(page: Page, server: ServeProcess, orders: str) -> None:
    page.goto(entity_url(server, orders))
    expect(page.locator(".entity-head").get_by_label("DataHub tag", exact=True)).to_be_visible()
    meanwhile = {"tags": [{"tag": "urn:li:tag:meanwhile"}]}
    assert server.client().propose([mcp(orders, "globalTags", meanwhile)])[0]["status"] == "applied"
    add_in(page, "DataHub tag", "mine")
    expect(page.locator(".entity-head").get_by_role("alert")).to_contain_text(
        "Someone changed the tags since this page loaded; reload and try again")
    assert stored(server, orders, "globalTags") == meanwhile
