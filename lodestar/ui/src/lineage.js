// The lineage explorer: every kind of lineage around one entity in one graph (declared edges
// always, run edges from the time window), one hop each way to start; each node at the edge
// expands one more hop upstream or downstream (its + beside it, or its panel), and collapses
// what it expanded (−), the rest of the graph staying where it is. A dataset opens to its
// columns, and a column lights up its upstream and downstream columns across hops. The same
// edges are listed in tables under the graph.

import "./lineage.css";
import { api } from "./api.js";
import { h, replace } from "./dom.js";
import { entityLink } from "./entity.js";
import { platformIcon } from "./icons.js";
import { adjacency, expandedWithin, frontier, prune, shownNodes } from "./lineage_expand.js";
import { explorerGraph } from "./lineage_graph.js";
import { askAround, columnLineage, datasetColumns, lineagePool } from "./lineage_data.js";
import { showProgram } from "./lineage_runs.js";
import { invalidUrnPage, notFoundPage } from "./problem.js";
import { windowForm, windowOf } from "./timewindow.js";
import { entityType, fieldDataset, fieldUrn, isUrn, platform, shortName, typeLabel } from "./urns.js";

const MAX_HOPS = 10;
const JOBS = new Set(["dataJob", "dataFlow"]);
const DIRECTION = { up: "upstream", down: "downstream" };
const EXPANSION = /^(up|down):(urn:li:.+)$/;

const hopsOf = (query, name) => Math.max(0, Math.min(MAX_HOPS, Number.parseInt(query.get(name) ?? "1", 10) || 0));
const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const pageLink = (urn, params) => `#/lineage/${encodeURIComponent(urn)}${params.toString() ? `?${params}` : ""}`;
const columnName = (field) => field.slice(fieldDataset(field).length + "urn:li:schemaField:(".length + 1, -1);

function edgeLabel(e) {
  if (!e.runs.size) return "";
  return `${[...e.access].join("/")} · ${plural(e.runs.size, "run")}`;
}

// The pool filled for the address: `open` (the expansions, as the page last wrote them) or
// `up`/`down` hops around the root (default 1 each); answers the expansions.
async function opened(pool, urn, query, span) {
  if (query.has("open")) {
    const keys = query.getAll("open").filter((k) => EXPANSION.test(k));
    await Promise.all([askAround(pool, urn, { upstream: 1, downstream: 1 }, span),
      ...keys.map((k) => k.match(EXPANSION)).map(([, side, id]) => askAround(pool, id, { [DIRECTION[side]]: 1 }, span))]);
    return prune(urn, adjacency(pool.edges.values()), new Set(keys));
  }
  const up = hopsOf(query, "up");
  const down = hopsOf(query, "down");
  await askAround(pool, urn, { upstream: up, downstream: down }, span);
  const adj = adjacency(pool.edges.values());
  return new Set([...expandedWithin(urn, adj, "up", up), ...expandedWithin(urn, adj, "down", down)]);
}

export async function lineagePage(main, urn, query) {
  if (!isUrn(urn)) return invalidUrnPage(main, urn);
  if (entityType(urn) === "schemaField") {
    location.replace(pageLink(fieldDataset(urn), new URLSearchParams({ column: urn })));
    return undefined;
  }
  const span = windowOf(query); // the time window
  const status = h("p", { class: "hint", id: "lineage-status", role: "status" }, "Loading…");
  const canvas = h("div", { class: "graph explorer", id: "lineage-graph", role: "img", "aria-label": `Lineage graph of ${shortName(urn)}` });
  const toolbar = h("div", { class: "graph-tools", role: "toolbar", "aria-label": "Graph view" });
  const panel = h("aside", { class: "panel card", "aria-live": "polite", hidden: true }); // opens beside the graph on a click
  const layout = h("div", { class: "lineage-layout closed" }, h("div", { class: "graph-frame" }, toolbar, canvas), panel);
  const edgeTable = h("div", { class: "scroll" });
  const columnTable = h("div", { class: "scroll" });
  const findInput = h("input", { type: "search", id: "find-node", placeholder: "Find a node", list: "lineage-nodes", "aria-label": "Find a node" });
  const nodeList = h("datalist", { id: "lineage-nodes" });
  replace(main,
    h("header", { class: "entity-head" }, h("h1", {}, "Lineage of ", entityLink(urn, shortName(urn))),
      h("div", { class: "explorer-controls" },
        h("form", { class: "inline find", onsubmit: (e) => { e.preventDefault(); find(); } }, findInput, nodeList,
          h("button", { type: "submit", class: "secondary" }, "Find"))),
      windowForm(query, (params) => (location.hash = pageLink(urn, params))),
      h("p", { class: "hint" }, "The time window filters the edges made by runs (dashed); declared lineage (solid) always shows."
        + " + beside a node shows one more hop that way, − hides what it showed."
        + " Click a dataset for its columns, a column for its column lineage, a program for its runs in the window.")),
    status,
    layout,
    h("section", { class: "card" }, h("h2", {}, "Edges"), edgeTable),
    h("section", { class: "card", id: "column-edges" }, h("h2", {}, "Column edges"), columnTable));

  // The graph is made while the requests run: cytoscape's first frame draws every element into
  // its texture layers at once, so that frame is of the empty graph, and the first frame with the
  // lineage draws only what is in view (the layers are made in later idle frames).
  const graph = explorerGraph(canvas, urn, (node) => tapped(node));
  performance.mark("lineage:asked"); // marks for bench/web_ui_lineage.py: requests, then layout and drawing
  const pool = lineagePool();
  let expanded = await opened(pool, urn, query, span);
  performance.mark("lineage:answered");
  if (!pool.edges.size && !(await exists(urn))) {
    graph.cy.destroy();
    return notFoundPage(main, urn);
  }
  const state = { columns: new Map(), fieldEdges: new Map(), picked: null, related: null };
  const view = { shown: new Map(), edges: [], controls: [] }; // what draw() last showed

  // Shows what the expansions reach: nodes, edges, the + / − controls, the status line and the tables.
  function draw() {
    const adj = adjacency(pool.edges.values());
    view.shown = shownNodes(urn, adj, expanded);
    view.edges = [...pool.edges.values()].filter((e) => view.shown.has(e.source) && view.shown.has(e.target));
    const { controls, more } = frontier(adj, view.shown, expanded);
    view.controls = controls;
    for (const d of state.columns.keys()) if (!view.shown.has(d)) state.columns.delete(d);
    graph.setLineage([...view.shown.keys()].map((id) => nodeData(id, urn)), view.edges.map((e) => ({
      source: e.source, target: e.target, label: edgeLabel(e), declared: e.types.size > 0 })));
    performance.mark("lineage:added");
    graph.layout();
    graph.setHandles(controls);
    performance.mark("lineage:laid-out");
    canvas.dataset.rendered = String(view.shown.size);
    replace(nodeList, [...view.shown.keys()].map((id) => h("option", { value: shortName(id) })));
    const runEdges = view.edges.filter((e) => e.runs.size).length;
    replace(status, view.edges.length
      ? `${plural(view.shown.size, "node")}, ${plural(view.edges.length, "edge")} (${runEdges} with runs in the window)`
        + `${more.up ? ` · ${more.up} more upstream` : ""}${more.down ? ` · ${more.down} more downstream` : ""}.`
      : "No lineage: nothing declared, and no runs in this window.");
    replace(edgeTable, edgesTable(view.edges, (id) => nodeCell(id)));
  }

  // Expands `id` one hop toward `side`, or collapses what its expansion showed.
  async function toggle(id, side) {
    const key = `${side}:${id}`;
    if (expanded.has(key)) {
      expanded.delete(key);
      expanded = prune(urn, adjacency(pool.edges.values()), expanded);
    } else {
      await askAround(pool, id, { [DIRECTION[side]]: 1 }, span);
      expanded.add(key);
    }
    draw();
    redrawColumns();
    if (!panel.hidden && panel.dataset.node === id) tapped(graph.cy.getElementById(id).data()); // its panel again
  }

  draw();
  graph.focusView();
  replace(toolbar,
    h("button", { type: "button", class: "secondary", title: "Zoom in", "aria-label": "Zoom in", onclick: () => graph.zoomBy(1.25) }, "+"),
    h("button", { type: "button", class: "secondary", title: "Zoom out", "aria-label": "Zoom out", onclick: () => graph.zoomBy(0.8) }, "−"),
    h("button", { type: "button", class: "secondary", onclick: () => graph.fitAll() }, "Fit"),
    h("button", { type: "button", class: "secondary", onclick: () => graph.focusView() }, "Reset"));

  // The panel takes its place beside the graph the first time it shows something.
  const openPanel = () => {
    if (!panel.hidden) return;
    panel.hidden = false;
    layout.classList.remove("closed");
    graph.cy.resize();
  };
  const program = (id, focus = false) => {
    openPanel();
    panel.dataset.node = id;
    const relations = [...pool.relations.values()].filter((r) => view.shown.has(r.data) && view.shown.has(r.program))
      .map((r) => ({ ...r, runs: [...r.runs] }));
    return showProgram(panel, id, relations, focus, hopButtons(id));
  };

  // The panel's buttons for what the node's + / − do.
  function hopButtons(id) {
    const mine = view.controls.filter((c) => c.id === id);
    return mine.length ? h("p", { class: "hop-buttons" }, mine.map((c) => h("button", { type: "button", class: "secondary",
      onclick: () => toggle(id, c.side) }, c.open ? `Collapse ${DIRECTION[c.side]}` : `Expand ${DIRECTION[c.side]} (${c.hidden})`))) : null;
  }

  function nodeCell(id) {
    if (JOBS.has(entityType(id))) return h("button", { class: "link", onclick: () => program(id, true) }, shortName(id));
    return entityLink(id, shortName(id));
  }

  function find() {
    const hits = graph.find(findInput.value);
    if (!hits.length) return replace(status, `No node named like “${findInput.value}” in the graph.`);
    graph.reveal(hits[0]);
    replace(status, `Found ${plural(hits.length, "node")}; showing ${shortName(hits[0])}.`);
    return tapped(graph.cy.getElementById(hits[0]).data());
  }

  function tapped(node) {
    if (node.kind === "handle") return toggle(node.of, node.side);
    if (node.kind === "column") return pickColumn(node.id);
    if (node.kind === "job") return program(node.id);
    return showNode(node.id);
  }

  function syncUrl() {
    const params = new URLSearchParams(query);
    for (const name of ["columns", "open", "up", "down"]) params.delete(name);
    for (const key of expanded.size ? expanded : [""]) params.append("open", key);
    for (const d of state.columns.keys()) params.append("columns", d);
    if (state.picked) params.set("column", state.picked);
    else params.delete("column");
    history.replaceState(null, "", pageLink(urn, params));
    [...query.keys()].forEach((name) => query.delete(name)); // the time window's form starts from it
    params.forEach((value, name) => query.append(name, value));
  }

  function columnsOf(dataset) {
    const named = [...state.fieldEdges.values()].flatMap((e) => [e.source, e.target]).filter((f) => fieldDataset(f) === dataset);
    const all = [...new Set([...state.columns.get(dataset).map((c) => fieldUrn(dataset, c)), ...named])];
    return all.map((id) => ({ id, name: columnName(id), label: clip(columnName(id), 30) }));
  }

  function redrawColumns() {
    for (const d of state.columns.keys()) graph.setColumns(d, columnsOf(d));
    graph.setColumnEdges([...state.fieldEdges.values()]);
    graph.highlight(state.picked, state.related || new Set());
    replace(columnTable, columnEdgesTable(graph.cy.edges("[?column]").map((e) => state.fieldEdges.get(`${e.data("source")}\n${e.data("target")}`)), pickColumn));
    syncUrl();
  }

  async function openColumns(datasets) {
    const wanted = datasets.filter((d) => view.shown.has(d) && !state.columns.has(d));
    const answers = await Promise.all(wanted.map(datasetColumns));
    wanted.forEach((d, i) => {
      state.columns.set(d, answers[i].columns);
      for (const e of answers[i].edges) state.fieldEdges.set(`${e.source}\n${e.target}`, e);
    });
    return wanted.length;
  }

  async function toggleColumns(dataset) {
    if (state.columns.has(dataset)) {
      state.columns.delete(dataset);
      graph.setColumns(dataset, null);
    } else {
      await openColumns([dataset]);
    }
    redrawColumns();
    graph.layout();
    graph.reveal(dataset);
    showNode(dataset);
  }

  async function pickColumn(field) {
    const lineage = await columnLineage(field);
    for (const e of lineage.edges) state.fieldEdges.set(`${e.source}\n${e.target}`, e);
    const related = new Set([...lineage.upstream, ...lineage.downstream]);
    await openColumns([fieldDataset(field), ...[...related].map(fieldDataset)]);
    Object.assign(state, { picked: field, related });
    redrawColumns();
    graph.layout();
    graph.show([field, ...related]);
    showColumn(field, lineage);
  }

  function showNode(id) {
    openPanel();
    panel.dataset.node = id;
    const type = entityType(id);
    const open = state.columns.has(id);
    const list = open ? columnsOf(id) : [];
    replace(panel, h("h2", {}, h("img", { class: "platform-icon", src: platformIcon(platform(id)), alt: "" }), " ", shortName(id)),
      h("p", { class: "hint" }, `${typeLabel(type)} · ${platform(id) || "no platform"}`),
      h("p", {}, entityLink(id, `Open ${typeLabel(type)}`)),
      id !== urn && h("p", {}, h("a", { href: pageLink(id, new URLSearchParams()) }, "Lineage of this one")),
      hopButtons(id),
      type === "dataset" && h("p", {}, h("button", { type: "button", class: "secondary", onclick: () => toggleColumns(id) },
        open ? "Hide columns" : "Show columns")),
      open && h("ul", { class: "column-list" }, list.map((c) => h("li", {},
        h("button", { type: "button", class: "link", onclick: () => pickColumn(c.id) }, columnName(c.id))))));
  }

  function showColumn(field, lineage) {
    openPanel();
    panel.dataset.node = field;
    const item = (f) => h("li", {}, view.shown.has(fieldDataset(f))
      ? h("button", { type: "button", class: "link", onclick: () => pickColumn(f) }, `${shortName(fieldDataset(f))}.${columnName(f)}`)
      : h("a", { href: pageLink(fieldDataset(f), new URLSearchParams({ column: f })) }, `${shortName(fieldDataset(f))}.${columnName(f)}`));
    const side = (title, set) => [h("h3", {}, `${title} (${set.size})`), set.size ? h("ul", { class: `column-${title.toLowerCase()}` }, [...set].sort().map(item)) : h("p", { class: "hint" }, "None.")];
    replace(panel, h("h2", {}, "Column ", `${shortName(fieldDataset(field))}.${columnName(field)}`),
      h("p", {}, entityLink(field, "Open field"), " · ", h("button", { type: "button", class: "link", onclick: clearColumn }, "Clear highlight")),
      side("Upstream", lineage.upstream), side("Downstream", lineage.downstream));
  }

  function clearColumn() {
    Object.assign(state, { picked: null, related: null });
    redrawColumns();
    replace(panel, h("p", { class: "hint" }, "Highlight cleared."));
  }

  const asked = query.getAll("columns").filter(isUrn);
  const column = query.get("column");
  if (column && isUrn(column) && entityType(column) === "schemaField") await pickColumn(column);
  if (asked.length && await openColumns(asked)) {
    redrawColumns();
    graph.layout();
    graph.focusView();
  }
  return undefined;
}

async function exists(urn) {
  try {
    await api.entity(urn);
    return true;
  } catch (err) {
    if (err.status === 404) return false;
    throw err;
  }
}

function nodeData(id, root) {
  const type = entityType(id);
  const kind = JOBS.has(type) ? "job" : type === "dataset" ? "dataset" : "other";
  return { id, kind, root: id === root, icon: platformIcon(platform(id)), name: shortName(id),
    label: `${clip(shortName(id), 22)}\n${typeLabel(type)} · ${platform(id) || "–"}` };
}

function edgesTable(edges, cell) {
  return h("table", { class: "relations" },
    h("thead", {}, h("tr", {}, ["From", "Declared by", "Runs in the window", "To"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, edges.map((e) => h("tr", {}, h("td", {}, cell(e.source)), h("td", {}, [...e.types].join(", ") || "–"),
      h("td", {}, e.runs.size ? `${[...e.access].join("/")} · ${e.runs.size}` : "–"), h("td", {}, cell(e.target))))));
}

// "parse,concat (fieldOperations, upstreamLineage)": the operations, then what declared the edge.
function fieldEdgeLabel(e) {
  const ops = [...new Set(e.types.map((t) => t.split(": ")[1]).filter(Boolean))];
  const vias = [...new Set(e.types.map((t) => t.split(": ")[0]))];
  return ops.length ? `${ops.join("; ")} (${vias.join(", ")})` : vias.join(", ");
}

function columnEdgesTable(edges, pick) {
  if (!edges.length) return h("p", { class: "hint" }, "Show a dataset's columns, or click a column, to list its column edges here.");
  const cell = (f) => h("button", { type: "button", class: "link", onclick: () => pick(f) }, `${shortName(fieldDataset(f))}.${columnName(f)}`);
  return h("table", { class: "relations column-edges" },
    h("thead", {}, h("tr", {}, ["From", "Declared by", "To"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, edges.map((e) => h("tr", {}, h("td", {}, cell(e.source)), h("td", {}, fieldEdgeLabel(e)), h("td", {}, cell(e.target))))));
}
