// The lineage explorer: every kind of lineage around one entity in one graph (declared edges
// always, run edges from the time window), one hop each way to start, expanded and collapsed a
// hop at a time; a dataset opens to its columns, and a column lights up its upstream and
// downstream columns across hops. The same edges are listed in tables under the graph.

import "./lineage.css";
import { api } from "./api.js";
import { h, replace } from "./dom.js";
import { entityLink } from "./entity.js";
import { platformIcon } from "./icons.js";
import { explorerGraph } from "./lineage_graph.js";
import { columnLineage, datasetColumns, explorerLineage } from "./lineage_data.js";
import { showProgram } from "./lineage_runs.js";
import { invalidUrnPage, notFoundPage } from "./problem.js";
import { windowForm, windowOf } from "./timewindow.js";
import { entityType, fieldDataset, fieldUrn, isUrn, platform, shortName, typeLabel } from "./urns.js";

const MAX_HOPS = 10;
const JOBS = new Set(["dataJob", "dataFlow"]);

const hopsOf = (query, name) => Math.max(0, Math.min(MAX_HOPS, Number.parseInt(query.get(name) ?? "1", 10) || 0));
const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const pageLink = (urn, params) => `#/lineage/${encodeURIComponent(urn)}${params.toString() ? `?${params}` : ""}`;
const columnName = (field) => field.slice(fieldDataset(field).length + "urn:li:schemaField:(".length + 1, -1);

function edgeLabel(e) {
  if (!e.runs.length) return "";
  return `${e.access.join("/")} · ${plural(e.runs.length, "run")}`;
}

export async function lineagePage(main, urn, query) {
  if (!isUrn(urn)) return invalidUrnPage(main, urn);
  if (entityType(urn) === "schemaField") {
    location.replace(pageLink(fieldDataset(urn), new URLSearchParams({ column: urn })));
    return undefined;
  }
  const up = hopsOf(query, "up");
  const down = hopsOf(query, "down");
  const { start, end } = windowOf(query);
  const go = (change) => {
    const params = new URLSearchParams(query);
    change(params);
    location.hash = pageLink(urn, params);
  };
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
        hopControl("Upstream", "up", up, go), hopControl("Downstream", "down", down, go),
        h("form", { class: "inline find", onsubmit: (e) => { e.preventDefault(); find(); } }, findInput, nodeList,
          h("button", { type: "submit", class: "secondary" }, "Find"))),
      windowForm(query, (params) => (location.hash = pageLink(urn, params))),
      h("p", { class: "hint" }, "The time window filters the edges made by runs (dashed); declared lineage (solid) always shows."
        + " Click a dataset for its columns, a column for its column lineage, a program for its runs in the window.")),
    status,
    layout,
    h("section", { class: "card" }, h("h2", {}, "Edges"), edgeTable),
    h("section", { class: "card", id: "column-edges" }, h("h2", {}, "Column edges"), columnTable));

  performance.mark("lineage:asked"); // marks for bench/web_ui_lineage.py: requests, then layout and drawing
  const data = await explorerLineage(urn, { up, down, start, end });
  performance.mark("lineage:answered");
  if (!data.edges.length && !(await exists(urn))) return notFoundPage(main, urn);
  const state = { columns: new Map(), fieldEdges: new Map(), picked: null, related: null };
  const nodeIds = new Set(data.nodes.map((n) => n.id));
  const graph = explorerGraph(canvas, urn, (node) => tapped(node));
  graph.setLineage(data.nodes.map((n) => nodeData(n, urn)), data.edges.map((e) => ({
    source: e.source, target: e.target, label: edgeLabel(e), declared: e.types.length > 0 })));
  performance.mark("lineage:added");
  graph.layout();
  performance.mark("lineage:laid-out");
  graph.focusView();
  canvas.dataset.rendered = String(data.nodes.length);
  replace(toolbar,
    h("button", { type: "button", class: "secondary", title: "Zoom in", "aria-label": "Zoom in", onclick: () => graph.zoomBy(1.25) }, "+"),
    h("button", { type: "button", class: "secondary", title: "Zoom out", "aria-label": "Zoom out", onclick: () => graph.zoomBy(0.8) }, "−"),
    h("button", { type: "button", class: "secondary", onclick: () => graph.fitAll() }, "Fit"),
    h("button", { type: "button", class: "secondary", onclick: () => graph.focusView() }, "Reset"));
  replace(nodeList, data.nodes.map((n) => h("option", { value: shortName(n.id) })));
  const runEdges = data.edges.filter((e) => e.runs.length).length;
  replace(status, data.edges.length
    ? `${plural(data.nodes.length, "node")}, ${plural(data.edges.length, "edge")} (${runEdges} with runs in the window)`
      + `${data.more.up ? ` · ${data.more.up} more upstream` : ""}${data.more.down ? ` · ${data.more.down} more downstream` : ""}.`
    : "No lineage: nothing declared, and no runs in this window.");
  replace(edgeTable, edgesTable(data.edges, (id) => nodeCell(id)));
  for (const b of main.querySelectorAll("button[data-more]")) b.disabled = !data.more[b.dataset.more];

  // The panel takes its place beside the graph the first time it shows something.
  const openPanel = () => {
    if (!panel.hidden) return;
    panel.hidden = false;
    layout.classList.remove("closed");
    graph.cy.resize();
  };
  const program = (id, focus = false) => {
    openPanel();
    return showProgram(panel, id, data.relations, focus);
  };

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
    if (node.kind === "column") return pickColumn(node.id);
    if (node.kind === "job") return program(node.id);
    return showNode(node.id);
  }

  function syncUrl() {
    const params = new URLSearchParams(query);
    params.delete("columns");
    for (const d of state.columns.keys()) params.append("columns", d);
    if (state.picked) params.set("column", state.picked);
    else params.delete("column");
    history.replaceState(null, "", pageLink(urn, params));
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
    const wanted = datasets.filter((d) => nodeIds.has(d) && !state.columns.has(d));
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
    const type = entityType(id);
    const open = state.columns.has(id);
    const list = open ? columnsOf(id) : [];
    replace(panel, h("h2", {}, h("img", { class: "platform-icon", src: platformIcon(platform(id)), alt: "" }), " ", shortName(id)),
      h("p", { class: "hint" }, `${typeLabel(type)} · ${platform(id) || "no platform"}`),
      h("p", {}, entityLink(id, `Open ${typeLabel(type)}`)),
      id !== urn && h("p", {}, h("a", { href: pageLink(id, new URLSearchParams()) }, "Lineage of this one")),
      type === "dataset" && h("p", {}, h("button", { type: "button", class: "secondary", onclick: () => toggleColumns(id) },
        open ? "Hide columns" : "Show columns")),
      open && h("ul", { class: "column-list" }, list.map((c) => h("li", {},
        h("button", { type: "button", class: "link", onclick: () => pickColumn(c.id) }, columnName(c.id))))));
  }

  function showColumn(field, lineage) {
    openPanel();
    const item = (f) => h("li", {}, nodeIds.has(fieldDataset(f))
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

function nodeData(n, root) {
  const kind = JOBS.has(n.type) ? "job" : n.type === "dataset" ? "dataset" : "other";
  return { id: n.id, kind, root: n.id === root, icon: platformIcon(platform(n.id)), name: shortName(n.id),
    label: `${clip(shortName(n.id), 22)}\n${typeLabel(n.type)} · ${platform(n.id) || "–"}` };
}

function hopControl(title, name, value, go) {
  const set = (n) => go((p) => p.set(name, String(n)));
  return h("div", { class: "hops", role: "group", "aria-label": `${title} hops` },
    h("span", {}, `${title}: `, h("output", { id: `hops-${name}` }, value), ` hop${value === 1 ? "" : "s"}`),
    h("button", { type: "button", class: "secondary", "aria-label": `One hop fewer ${title.toLowerCase()}`, disabled: value === 0,
      onclick: () => set(value - 1) }, "−"),
    h("button", { type: "button", class: "secondary", "aria-label": `One hop more ${title.toLowerCase()}`, "data-more": name,
      disabled: value === MAX_HOPS, onclick: () => set(value + 1) }, "+"));
}

function edgesTable(edges, cell) {
  return h("table", { class: "relations" },
    h("thead", {}, h("tr", {}, ["From", "Declared by", "Runs in the window", "To"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, edges.map((e) => h("tr", {}, h("td", {}, cell(e.source)), h("td", {}, e.types.join(", ") || "–"),
      h("td", {}, e.runs.length ? `${e.access.join("/")} · ${e.runs.length}` : "–"), h("td", {}, cell(e.target))))));
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
