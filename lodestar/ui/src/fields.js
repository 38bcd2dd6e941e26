// Field-level lineage for a time window, in the two views of the field-lineage design, from
// CDAP's field-lineage API (v3): simple (each source field -> the field, the operations on the
// edge) and detailed (every intermediate field, one operation per edge).

import { call } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import { entityLink } from "./entity.js";
import { drawGraph } from "./graph.js";
import { windowForm, windowOf } from "./timewindow.js";
import { fieldDataset, fieldUrn, shortName } from "./urns.js";

const DIRECTIONS = ["incoming", "outgoing"];
const label = (datasetUrn, field) => `${shortName(datasetUrn)}.${field}`;

function endpointPath(urn) {
  const dataset = fieldDataset(urn);
  return `/v3/namespaces/default/endpoints/${encodeURIComponent(dataset)}/fields/${encodeURIComponent(shortName(urn))}/lineage`;
}

export async function fieldPage(main, urn, query) {
  const view = query.get("view") === "detailed" ? "detailed" : "simple";
  const direction = DIRECTIONS.includes(query.get("direction")) ? query.get("direction") : "incoming";
  const { start, end } = windowOf(query);
  const link = (v, d) => {
    const params = new URLSearchParams(query);
    params.set("view", v);
    params.set("direction", d);
    return `#/field/${encodeURIComponent(urn)}?${params}`;
  };
  const canvas = h("div", { class: "graph", id: "field-graph", role: "img", "aria-label": `Field lineage of ${shortName(urn)}` });
  const table = h("div", { class: "scroll" });
  const dataset = fieldDataset(urn);
  replace(main,
    h("header", { class: "entity-head" },
      h("h1", {}, "Field lineage of ", entityLink(urn, label(dataset, shortName(urn)))),
      h("p", {}, "Field of ", entityLink(dataset)),
      h("nav", { class: "actions", "aria-label": "Views" },
        ["simple", "detailed"].map((v) => h("a", { class: v === view ? "button" : "button secondary", href: link(v, direction),
          "aria-current": v === view ? "page" : null }, v === "simple" ? "Simple view" : "Detailed view")),
        DIRECTIONS.map((d) => h("a", { class: d === direction ? "button" : "button secondary", href: link(view, d),
          "aria-current": d === direction ? "true" : null }, d))),
      windowForm(query, (params) => (location.hash = `#/field/${encodeURIComponent(urn)}?${params}`))),
    canvas, h("section", { class: "card" }, h("h2", {}, view === "simple" ? "Source and destination fields" : "Operations"), table));
  try {
    const path = view === "simple" ? `${endpointPath(urn)}/simple` : endpointPath(urn);
    const data = await call("GET", path, { query: { start, end, direction } });
    const { nodes, edges } = view === "simple" ? simpleGraph(urn, data) : detailedGraph(urn, data);
    if (!edges.length) canvas.append(h("p", { class: "hint empty" }, "No field lineage in this window."));
    drawGraph(canvas, nodes, edges, (node) => node.field && node.field !== urn
      && (location.hash = link(view, direction).replace(encodeURIComponent(urn), encodeURIComponent(node.field))));
    replace(table, h("table", { class: "relations field-edges" },
      h("thead", {}, h("tr", {}, ["From", "Operation", "To"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, edges.map((e) => h("tr", {}, h("td", {}, nodeCell(nodes, e.source)), h("td", {}, e.label.replace(/\n/g, ", ")),
        h("td", {}, nodeCell(nodes, e.target)))))));
  } catch (err) {
    replace(canvas, errorBox(err));
  }
}

function nodeCell(nodes, id) {
  const node = nodes.find((n) => n.id === id);
  return node.field ? entityLink(node.field, node.label) : node.label;
}

// Simple: {"edges": [{"from": {urn, field}, "to": {urn, field}, "operations": [...]}]}.
function simpleGraph(root, data) {
  const nodes = new Map([[root, { id: root, field: root, label: label(fieldDataset(root), shortName(root)), kind: "field", root: true }]]);
  const endOf = (end) => {
    const id = fieldUrn(end.urn, end.field);
    if (!nodes.has(id)) nodes.set(id, { id, field: id, label: label(end.urn, end.field), kind: "field" });
    return id;
  };
  const edges = data.edges.map((e) => ({ source: endOf(e.from), target: endOf(e.to), label: e.operations.join("\n") }));
  return { nodes: [...nodes.values()], edges };
}

// Detailed: {"nodes": [{id, label, sourceEndPoint?, destinationEndPoint?}], "connections": [{from, to, operation}]};
// a node at an endpoint is a dataset's field, the others are fields the operations made on the way.
function detailedGraph(root, data) {
  const nodes = data.nodes.map((n) => {
    const end = n.sourceEndPoint || n.destinationEndPoint;
    if (!end) return { id: n.id, label: n.label, kind: "intermediate" };
    const field = fieldUrn(end.urn, n.label);
    return { id: n.id, field, label: label(end.urn, n.label), kind: "field", root: field === root };
  });
  const edges = data.connections.map((c) => ({ source: c.from, target: c.to, label: c.operation }));
  return { nodes, edges };
}
