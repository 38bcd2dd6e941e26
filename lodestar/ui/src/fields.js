// Field-level lineage for a time window, in the two views of the field-lineage design, from
// CDAP's field-lineage API (v3): simple (each source field -> the field, the operations on the
// edge) and detailed (every intermediate field, one operation per edge). The simple view adds
// the declared field edges one hop away (fineGrainedLineages, whatever the window); the lineage
// explorer shows a column's lineage across hops.

import { api, call } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import { invalidUrnPage } from "./problem.js";
import { entityLink } from "./entity.js";
import { drawGraph } from "./graph.js";
import { windowForm, windowOf } from "./timewindow.js";
import { entityType, fieldDataset, fieldUrn, isUrn, shortName } from "./urns.js";

const DIRECTIONS = ["incoming", "outgoing"];
const label = (datasetUrn, field) => `${shortName(datasetUrn)}.${field}`;

function endpointPath(urn) {
  const dataset = fieldDataset(urn);
  return `/v3/namespaces/default/endpoints/${encodeURIComponent(dataset)}/fields/${encodeURIComponent(shortName(urn))}/lineage`;
}

export async function fieldPage(main, urn, query) {
  if (!isUrn(urn) || entityType(urn) !== "schemaField") return invalidUrnPage(main, urn, "a field (schemaField) URN");
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
  const status = h("p", { class: "hint", role: "status" });
  const dataset = fieldDataset(urn);
  replace(main,
    h("header", { class: "entity-head" },
      h("h1", {}, "Field lineage of ", entityLink(urn, label(dataset, shortName(urn)))),
      h("p", {}, "Field of ", entityLink(dataset), " · ",
        h("a", { href: `#/lineage/${encodeURIComponent(dataset)}?${new URLSearchParams({ column: urn })}` }, "Column lineage in the explorer")),
      h("nav", { class: "actions", "aria-label": "Views" },
        ["simple", "detailed"].map((v) => h("a", { class: v === view ? "button" : "button secondary", href: link(v, direction),
          "aria-current": v === view ? "page" : null }, v === "simple" ? "Simple view" : "Detailed view")),
        DIRECTIONS.map((d) => h("a", { class: d === direction ? "button" : "button secondary", href: link(view, d),
          "aria-current": d === direction ? "true" : null }, d))),
      windowForm(query, (params) => (location.hash = `#/field/${encodeURIComponent(urn)}?${params}`))),
    status, canvas, h("section", { class: "card" }, h("h2", {}, view === "simple" ? "Source and destination fields" : "Operations"), table));
  try {
    const path = view === "simple" ? `${endpointPath(urn)}/simple` : endpointPath(urn);
    const [data, declared] = await Promise.all([call("GET", path, { query: { start, end, direction } }),
      view === "simple" ? api.fieldLineage(urn, direction === "incoming" ? "upstream" : "downstream", 1) : null]);
    const { nodes, edges } = view === "simple" ? simpleGraph(urn, data, declared) : detailedGraph(urn, data);
    if (!edges.length) {
      replace(status, view === "simple" ? "No field lineage: none declared, and none from runs in this window."
        : "No field operations of runs in this window.");
    }
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

// Simple: {"edges": [{"from": {urn, field}, "to": {urn, field}, "operations": [...]}]}, then the
// declared edges (`/v1/lineage/fields`), each labelled with the aspect that declared it.
function simpleGraph(root, data, declared) {
  const nodes = new Map([[root, { id: root, field: root, label: label(fieldDataset(root), shortName(root)), kind: "field", root: true }]]);
  const endOf = (end) => {
    const id = fieldUrn(end.urn, end.field);
    if (!nodes.has(id)) nodes.set(id, { id, field: id, label: label(end.urn, end.field), kind: "field" });
    return id;
  };
  const edges = data.edges.map((e) => ({ source: endOf(e.from), target: endOf(e.to), label: e.operations.join("\n") }));
  const byPair = new Map(edges.map((e) => [`${e.source}\n${e.target}`, e]));
  for (const d of declared.edges.filter((e) => e.via !== "fieldOperations")) { // runs' edges: the window decides
    const key = `${endOf(fieldEnd(d.source))}\n${endOf(fieldEnd(d.destination))}`;
    if (!byPair.has(key)) byPair.set(key, { source: endOf(fieldEnd(d.source)), target: endOf(fieldEnd(d.destination)), label: "" });
    const edge = byPair.get(key);
    if (!edge.label.split("\n").includes(d.via)) edge.label = edge.label ? `${edge.label}\n${d.via}` : d.via;
  }
  return { nodes: [...nodes.values()], edges: [...byPair.values()] };
}

// {urn, field} of a schemaField URN, as the v3 answers name a field's end.
function fieldEnd(field) {
  const urn = fieldDataset(field);
  return { urn, field: field.slice("urn:li:schemaField:(".length + urn.length + 1, -1) };
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
