"""The lineage explorer end to end in headless Chromium against `lodestar serve --examples`:
every source of lineage in one graph (declared edges, and CDAP's runs in a time window) around a
dataset or a program, column lineage across hops (DataHub's fineGrainedLineages written by the
real `acryl-datahub` emitter, and the field operations of runs), expanding and collapsing one
node a hop at a time, a 100-node graph that stays readable and has no overlapping boxes, the
controls, the narrow window, and bad URLs."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from datahub.emitter.mce_builder import make_dataset_urn, make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.metadata.schema_classes import (
    DatasetLineageTypeClass,
    FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass,
    FineGrainedLineageUpstreamTypeClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StringTypeClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from playwright.sync_api import Browser, Page, expect

from ingest.rest import RestClient
from tests.support.builders import mcp
from tests.support.lineage_neighbourhood import neighbourhood, upstream_lineage
from tests.support.processes import TOKEN, ServeProcess
from tests.support.ui import assert_fits, click_node, shot, signed_in
from tests.support.waiting import await_

PURCHASES = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchases,PROD)"
STORE = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.Store,PROD)"
STORE_ID = f"urn:li:schemaField:({STORE},id)"
BODY = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:file,/data/customers.csv,PROD),body)"
BUILDER = "urn:li:dataJob:(urn:li:dataFlow:(cdap,PurchaseHistory,default),PurchaseHistoryBuilder)"
FLOW = "urn:li:dataJob:(urn:li:dataFlow:(cdap,PurchaseHistory,default),PurchaseFlow)"
FREQUENT = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.frequentCustomers,PROD)"
READABLE_PX = 11  # the smallest label size, in CSS pixels on screen, taken as readable
SERVICE = "urn:li:dataJob:(urn:li:dataFlow:(cdap,PurchaseHistory,default),PurchaseHistoryService)"
HISTORY = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.history,PROD)"
STREAM = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchaseStream,PROD)"
MAIN = '[kind != "column"][kind != "handle"]'  # the graph's nodes, not the columns in them nor the + and −


def lineage_url(server: ServeProcess, urn: str, query: str = "") -> str:
    return f"{server.url}/#/lineage/{quote(urn, safe='')}" + (f"?{query}" if query else "")


def graph(page: Page) -> dict[str, Any]:
    """What the explorer drew: node ids by kind, edges as (source, target, label, declared)."""
    return page.evaluate("""() => { const cy = window.lodestarGraph;
        const ids = (eles) => eles.map(n => n.id());
        return { nodes: ids(cy.nodes('[kind != "column"][kind != "handle"]')),
                 columns: ids(cy.nodes('[kind = "column"]')),
                 edges: cy.edges('[!column]').map(e => [e.source().id(), e.target().id(), e.data('label'),
                                                        !!e.data('declared')]),
                 columnEdges: cy.edges('[?column]').map(e => [e.source().id(), e.target().id()]),
                 related: cy.nodes('.related').map(n => n.id()), picked: cy.nodes('.picked').map(n => n.id()) }; }""")


def rendered(page: Page, n: int) -> None:
    expect(page.locator(f"#lineage-graph[data-rendered='{n}']")).to_have_count(1)


def test_every_source_in_one_graph_and_the_window_filters_only_run_edges(page: Page, server: ServeProcess) -> None:
    page.goto(lineage_url(server, PURCHASES))
    rendered(page, 6)
    drawn = graph(page)
    assert SERVICE not in drawn["nodes"]  # it reads history, one hop further
    edges = {(s, t): (label, declared) for s, t, label, declared in drawn["edges"]}
    assert edges[(STREAM, PURCHASES)] == ("", True)  # upstreamLineage: declared, no runs
    assert edges[(PURCHASES, BUILDER)] == ("read · 2 runs", True)  # dataJobInputOutput and two runs
    assert edges[(FLOW, FREQUENT)] == ("write · 1 run", False)  # a run's access alone
    row = page.locator("table.relations tbody tr", has_text="purchaseStream").filter(has_text="upstreamLineage")
    expect(row).to_have_count(1)
    expect(page.locator("table.relations tbody tr")).to_have_count(len(drawn["edges"]))
    node_label = page.evaluate("id => window.lodestarGraph.getElementById(id).data('label')", PURCHASES)
    assert node_label == "purchases\ndataset · cdap"  # the entity type and platform on the node
    icon = page.evaluate("id => window.lodestarGraph.getElementById(id).data('icon')", PURCHASES)
    assert icon.startswith("data:image/svg")
    page.fill("#window-start", "2015-09-03T20:52")
    page.fill("#window-end", "2015-09-03T21:00")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"start=1441313520&end=1441314000"))
    expect(page.locator("#lineage-status")).to_contain_text("with runs in the window")
    drawn = graph(page)
    edges = {(s, t): (label, declared) for s, t, label, declared in drawn["edges"]}
    assert (FLOW, FREQUENT) not in edges  # run-only: outside the window
    assert edges[(FLOW, PURCHASES)] == ("", True)  # declared: stays, without runs
    assert edges[(PURCHASES, BUILDER)] == ("read · 1 run", True)
    click_node(page, BUILDER)
    expect(page.locator(".panel")).to_contain_text("Runs in the window (1)")
    page.click("button.run >> text=283-99sd032-adsf90")
    run = page.locator(".run-metadata")
    expect(run).to_contain_text("2015-09-03 20:55:00 UTC")
    expect(run).to_contain_text("SUCCESS")
    for once in ("program", "status"):  # the run's own row, not again from its custom properties
        expect(run.get_by_role("rowheader", name=once, exact=True)).to_have_count(1)
    assert_fits(page, 1280, "the lineage page")
    shot(page, "lineage-run")


def test_a_program_as_the_root_has_its_run_edges_and_the_window_filters_them(page: Page, server: ServeProcess) -> None:
    page.goto(lineage_url(server, FLOW))
    rendered(page, 4)
    edges = {(s, t): (label, declared) for s, t, label, declared in graph(page)["edges"]}
    assert set(graph(page)["nodes"]) == {FLOW, STREAM, PURCHASES, FREQUENT}
    assert edges[(PURCHASES, FLOW)] == ("read · 1 run", False)  # its runs' accesses alone
    assert edges[(STREAM, FLOW)] == ("read · 2 runs", True)  # declared by dataJobInputOutput, and run twice
    assert edges[(FLOW, FREQUENT)] == ("write · 1 run", True)
    click_node(page, FLOW)
    expect(page.locator(".panel")).to_contain_text("Runs in the window (2)")
    page.goto(lineage_url(server, FLOW, "start=1441313520&end=1441314000"))  # 20:52 to 21:00: no run of it
    expect(page.locator("#lineage-status")).to_contain_text("(0 with runs in the window)")
    edges = {(s, t): (label, declared) for s, t, label, declared in graph(page)["edges"]}
    assert (PURCHASES, FLOW) not in edges and edges[(STREAM, FLOW)] == ("", True)


def test_the_edges_table_by_keyboard(page: Page, server: ServeProcess) -> None:
    page.goto(lineage_url(server, PURCHASES))
    relations = page.locator("table.relations")
    expect(relations).to_contain_text("PurchaseHistoryBuilder")
    page.locator("#window-end").focus()
    for _ in range(12):  # Tab from the form into the table, to a program's button
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('table.relations button')"):
            break
    program = relations.locator("button:focus").inner_text()
    page.keyboard.press("Enter")
    panel = page.locator(".panel")
    expect(panel.locator("h2")).to_have_text(f"Program {program}")
    expect(panel.locator("button.run").first).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".run-metadata")).to_contain_text(program)


def test_field_operations_of_runs_as_columns_and_on_the_field_page(page: Page, server: ServeProcess) -> None:
    store_name = f"urn:li:schemaField:({STORE},name)"
    page.goto(lineage_url(server, STORE))
    rendered(page, 3)
    click_node(page, STORE)
    page.get_by_role("button", name="Show columns").click()
    expect(page.locator(".column-list li")).to_have_count(5)
    drawn = graph(page)
    assert set(drawn["columns"]) >= {STORE_ID, store_name}
    page.locator(".column-list").get_by_role("button", name="name", exact=True).click()
    expect(page.locator(".panel h2")).to_have_text("Column Store.name")
    expect(page.locator(".panel .column-upstream")).to_have_text("customers.csv.body")
    drawn = graph(page)
    assert drawn["picked"] == [store_name] and drawn["related"] == [BODY]  # the source dataset opened too
    assert [BODY, store_name] in drawn["columnEdges"]
    expect(page).to_have_url(re.compile("column=" + re.escape(quote(store_name, safe=""))))
    expect(page.locator("table.column-edges")).to_contain_text("parse,concat (")
    shot(page, "lineage-columns")
    page.goto(f"{server.url}/#/field/{quote(STORE_ID, safe='')}")  # CDAP's views of the same field
    expect(page.locator("table.field-edges")).to_contain_text("parse, concat, create")
    shot(page, "field-lineage-simple")
    page.click("text=Detailed view")
    expect(page.locator("table.field-edges tbody tr")).to_have_count(5)
    shot(page, "field-lineage-detailed")
    page.fill("#window-end", "2015-01-01T00:00")  # before the pipeline's run
    page.get_by_role("button", name="Show").click()
    expect(page.locator("main [role=status]")).to_have_text("No field operations of runs in this window.")
    page.click("text=Simple view")  # the declared edge (fineGrainedLineages) stays whatever the window
    expect(page.locator("table.field-edges tbody tr")).to_have_count(1)
    expect(page.locator("table.field-edges")).to_contain_text("upstreamLineage")
    page.get_by_role("link", name="Column lineage in the explorer").click()
    expect(page.locator(".panel h2")).to_have_text("Column Store.id")


def _emit_datahub_lineage(server: ServeProcess) -> tuple[str, str, str, str]:
    """orders and customers (hive) -> enriched -> revenue, written the DataHub way: the REST
    emitter, upstreamLineage with fineGrainedLineages; revenue has no schema of its own."""
    orders, customers, enriched, revenue = (make_dataset_urn("hive", name) for name in
                                            ("raw.orders", "raw.customers", "staging.orders_enriched", "mart.revenue"))
    col = make_schema_field_urn

    def schema(name: str, fields: list[str]) -> SchemaMetadataClass:
        return SchemaMetadataClass(schemaName=name, platform="urn:li:dataPlatform:hive", version=0, hash="",
                                   platformSchema=OtherSchemaClass(rawSchema=""),
                                   fields=[SchemaFieldClass(fieldPath=f, nativeDataType="string",
                                                            type=SchemaFieldDataTypeClass(StringTypeClass()))
                                           for f in fields])

    def lineage(upstreams: list[str], fine: list[tuple[list[str], str]]) -> UpstreamLineageClass:
        return UpstreamLineageClass(
            upstreams=[UpstreamClass(dataset=u, type=DatasetLineageTypeClass.TRANSFORMED) for u in upstreams],
            fineGrainedLineages=[FineGrainedLineageClass(
                upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET, upstreams=ups,
                downstreamType=FineGrainedLineageDownstreamTypeClass.FIELD, downstreams=[down]) for ups, down in fine])

    emitter = DatahubRestEmitter(gms_server=server.url, token=TOKEN)
    try:
        for urn, aspect in [
            (orders, schema("orders", ["order_id", "amount", "customer_id"])),
            (customers, schema("customers", ["id", "country"])),
            (enriched, schema("orders_enriched", ["order_id", "amount", "country"])),
            (enriched, lineage([orders, customers], [([col(orders, "amount")], col(enriched, "amount")),
                                                     ([col(orders, "order_id")], col(enriched, "order_id")),
                                                     ([col(customers, "country"), col(orders, "customer_id")],
                                                      col(enriched, "country"))])),
            (revenue, lineage([enriched], [([col(enriched, "amount")], col(revenue, "total"))])),
        ]:
            emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect))
    finally:
        emitter.close()
    client = RestClient(server.url, TOKEN)
    await_(lambda: len(client.request("GET", f"/v1/lineage/fields?urn={quote(col(revenue, 'total'), safe='')}"
                                             "&direction=upstream&maxHops=5")[1]["edges"]) == 2,
           "the emitted field lineage in the lineage graph")
    return orders, customers, enriched, revenue


def test_datahub_lineage_from_the_emitter_in_the_dataset_and_the_column_view(page: Page, server: ServeProcess) -> None:
    orders, customers, enriched, revenue = _emit_datahub_lineage(server)
    page.goto(lineage_url(server, enriched))
    rendered(page, 4)
    drawn = graph(page)
    assert set(drawn["nodes"]) == {orders, customers, enriched, revenue}
    assert {(s, t) for s, t, _, _ in drawn["edges"]} == {(orders, enriched), (customers, enriched), (enriched, revenue)}
    expect(page.locator("table.relations")).to_contain_text("upstreamLineage")
    expect(page.locator("#lineage-status")).not_to_contain_text("No lineage")
    click_node(page, orders)
    page.get_by_role("button", name="Show columns").click()
    page.locator(".column-list").get_by_role("button", name="amount", exact=True).click()
    amount, total = make_schema_field_urn(enriched, "amount"), make_schema_field_urn(revenue, "total")
    expect(page.locator(".panel .column-downstream li")).to_have_count(2)  # two hops: enriched, then revenue
    drawn = graph(page)
    assert drawn["picked"] == [make_schema_field_urn(orders, "amount")]
    assert set(drawn["related"]) == {amount, total}  # revenue has no schema: its column comes from lineage
    assert set(map(tuple, drawn["columnEdges"])) >= {(make_schema_field_urn(orders, "amount"), amount), (amount, total)}
    faded = page.evaluate("id => window.lodestarGraph.getElementById(id).hasClass('faded')",
                          make_schema_field_urn(orders, "order_id"))
    assert faded
    page.goto(f"{server.url}/#/field/{quote(amount, safe='')}")  # the field page shows the declared edge too
    expect(page.locator("table.field-edges tbody tr")).to_have_count(1)
    expect(page.locator("table.field-edges")).to_contain_text("orders.amount")
    expect(page.locator("table.field-edges")).to_contain_text("upstreamLineage")


def _hundred(server: ServeProcess) -> tuple[str, dict[str, list[str]]]:
    """100 datasets around a root, two hops each way (tests/support/lineage_neighbourhood.py)."""
    root, upstream_of = neighbourhood(100)
    client = RestClient(server.url, TOKEN)
    status, body = client.request("POST", "/v1/proposals", {"proposals": upstream_lineage(upstream_of),
                                                            "waitForIndex": True})
    assert status == 200, body
    await_(lambda: len(client.request("GET", f"/v1/lineage?urn={quote(root, safe='')}&maxHops=2")[1]["nodes"]) == 100,
           "the 100-node neighbourhood in the lineage graph")
    return root, upstream_of


LAYOUT = """() => { const cy = window.lodestarGraph; const main = cy.nodes('[kind != "column"][kind != "handle"]');
    const boxes = main.map(n => n.boundingBox({ includeLabels: false }));
    let overlaps = 0;
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) overlaps++;
    }
    const ext = cy.extent();
    const inView = main.filter(n => { const p = n.position();
      return p.x > ext.x1 && p.x < ext.x2 && p.y > ext.y1 && p.y < ext.y2; });
    return { nodes: main.length, overlaps, fonts: main.map(n => parseFloat(n.renderedStyle('font-size'))),
             zoom: cy.zoom(), inView: inView.length }; }"""


def shown(page: Page) -> dict[str, tuple[float, float]]:
    """The graph's nodes and where they are."""
    return page.evaluate(f"""() => Object.fromEntries(window.lodestarGraph.nodes('{MAIN}')
        .map(n => [n.id(), [n.position().x, n.position().y]]))""")


def edge_pairs(page: Page) -> set[tuple[str, str]]:
    return {(s, t) for s, t, _, _ in graph(page)["edges"]}


def test_a_node_expands_and_collapses_one_hop_and_the_rest_stays_put(page: Page, server: ServeProcess) -> None:
    root, upstream_of = _hundred(server)
    page.goto(lineage_url(server, root))
    rendered(page, 41)  # one hop each way to start
    expect(page.locator("#lineage-status")).to_contain_text("30 more upstream · 29 more downstream")
    before, edges_before = shown(page), edge_pairs(page)
    first = upstream_of[root][0]  # upstream_level_one_000, which has two datasets upstream of it
    handle = f"handle:up:{first}"
    assert page.evaluate("id => window.lodestarGraph.getElementById(id).data('label')", handle) == "+2"
    assert page.evaluate("id => window.lodestarGraph.getElementById(id).nonempty()", f"handle:down:{first}") is False
    page.fill("#find-node", "upstream_level_one_000")
    page.get_by_role("button", name="Find").click()
    click_node(page, handle)  # a real click on its +
    rendered(page, 43)
    after = shown(page)
    assert set(after) - set(before) == set(upstream_of[first])  # exactly its upstream, nothing else
    assert {id_: after[id_] for id_ in before} == before  # every node already shown stays where it was
    assert edge_pairs(page) - edges_before == {(u, first) for u in upstream_of[first]}
    assert page.evaluate(LAYOUT)["overlaps"] == 0
    assert page.evaluate("id => window.lodestarGraph.getElementById(id).data('label')", handle) == "−"
    expect(page).to_have_url(re.compile("open=up%3A" + re.escape(quote(first, safe=""))))
    expect(page.locator("#lineage-status")).to_contain_text("28 more upstream · 29 more downstream")
    page.evaluate("document.querySelector('#lineage-graph').dataset.old = 'yes'")
    page.fill("#window-start", "2015-09-03T20:52")
    page.get_by_role("button", name="Show", exact=True).click()  # another window keeps the expansions
    expect(page.locator("#lineage-graph[data-rendered='43']:not([data-old])")).to_have_count(1)
    page.reload()  # and so does the address
    rendered(page, 43)
    assert set(shown(page)) == set(after)
    page.fill("#find-node", "upstream_level_one_000")  # its panel: the same by keyboard
    page.get_by_role("button", name="Find").click()
    page.locator(".panel").get_by_role("button", name="Collapse upstream").click()
    rendered(page, 41)
    assert set(shown(page)) == set(before) and edge_pairs(page) == edges_before
    page.locator(".panel").get_by_role("button", name="Expand upstream (2)").click()
    rendered(page, 43)
    page.fill("#find-node", "root_orders_summary")
    page.get_by_role("button", name="Find").click()
    page.locator(".panel").get_by_role("button", name="Collapse upstream").click()  # the root's upstream, and beyond
    rendered(page, 21)
    assert not set(shown(page)) & (set(upstream_of[root]) | set(upstream_of[first]))
    assert page.evaluate("id => window.lodestarGraph.getElementById(id).data('label')", f"handle:up:{root}") == "+20"


def test_a_100_node_graph_stays_readable_without_overlaps(page: Page, server: ServeProcess) -> None:
    root, upstream_of = _hundred(server)
    everything = set(upstream_of) | {u for ups in upstream_of.values() for u in ups}
    page.goto(lineage_url(server, root, "up=2&down=2"))
    rendered(page, 100)
    expect(page.locator("#lineage-status")).not_to_contain_text("more")  # nothing further
    layout = page.evaluate(LAYOUT)
    assert layout["nodes"] == 100 and layout["overlaps"] == 0, layout
    assert min(layout["fonts"]) >= READABLE_PX, layout  # every label readable at the default zoom
    assert set(shown(page)) == everything
    expect(page.locator("table.relations tbody tr")).to_have_count(99)
    shot(page, "lineage-100")
    page.get_by_role("button", name="Fit").click()  # everything in view, at whatever zoom that takes
    assert page.evaluate(LAYOUT)["inView"] == 100
    page.get_by_role("button", name="Zoom in").click()
    assert page.evaluate("window.lodestarGraph.zoom()") > page.evaluate(LAYOUT)["zoom"] / 1.25 * 1.01
    page.get_by_role("button", name="Reset").click()
    assert min(page.evaluate(LAYOUT)["fonts"]) >= READABLE_PX
    page.fill("#find-node", "downstream_level_two_028")
    page.get_by_role("button", name="Find").click()
    target = next(urn for urn in everything if "downstream_level_two_028" in urn)
    expect(page.locator("#lineage-status")).to_contain_text("showing downstream_level_two_028")
    assert page.evaluate("id => window.lodestarGraph.getElementById(id).selected()", target)
    x, y = page.evaluate("id => { const p = window.lodestarGraph.getElementById(id).renderedPosition();"
                         " return [p.x, p.y]; }", target)
    size = page.evaluate("[window.lodestarGraph.width(), window.lodestarGraph.height()]")
    assert 0 < x < size[0] and 0 < y < size[1]  # brought into view


def test_narrow_window_400px(browser: Browser, server: ServeProcess) -> None:
    page, errors = signed_in(browser, server, TOKEN, width=400)
    page.goto(lineage_url(server, PURCHASES))
    rendered(page, 6)
    expect(page.get_by_role("button", name="Fit")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert_fits(page, 400, "the lineage explorer")
    box = page.locator("#lineage-graph").bounding_box()
    assert box["width"] >= 300 and box["height"] >= 300
    assert min(page.evaluate(LAYOUT)["fonts"]) >= READABLE_PX
    shot(page, "lineage-narrow")
    page.context.close()
    assert errors == []


@pytest.mark.parametrize(("route", "what"), [("lineage", "garbage"), ("field", "garbage"),
                                             ("field", quote(PURCHASES, safe=""))])
def test_a_url_without_a_urn_says_so(page: Page, server: ServeProcess, route: str, what: str) -> None:
    page.goto(f"{server.url}/#/{route}/{what}")
    expect(page.locator("h1")).to_have_text("Not a valid URN")
    expect(page.get_by_role("alert")).to_contain_text("not a")
    expect(page.locator(".graph")).to_have_count(0)


def test_an_unknown_urn_is_not_found_and_no_lineage_is_said_above_the_graph(page: Page, server: ServeProcess) -> None:
    page.goto(lineage_url(server, "urn:li:dataset:(urn:li:dataPlatform:hive,nothing.here,PROD)"))
    expect(page.locator("h1")).to_have_text("Not found")
    page.goto(lineage_url(server, PURCHASES, "start=1000&end=2000"))  # declared lineage only
    rendered(page, 6)
    lonely = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.lonely,PROD)"
    answer = RestClient(server.url, TOKEN).propose([mcp(lonely, "datasetProperties", {"name": "lonely"})])
    assert answer[0]["status"] == "applied"
    page.goto(lineage_url(server, lonely))
    status = page.locator("#lineage-status")
    expect(status).to_have_text("No lineage: nothing declared, and no runs in this window.")
    expect(page.locator(".graph")).not_to_contain_text("No lineage")  # not drawn under the root node
    status_box, graph_box = status.bounding_box(), page.locator(".graph").bounding_box()
    assert status_box["y"] + status_box["height"] <= graph_box["y"]
