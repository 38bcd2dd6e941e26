// Field-level lineage, in the two views of the field-lineage design: simple (each source
// field -> the field, the operations on the edge) and detailed (every intermediate field, one
// operation per edge).

import { api } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import { entityLink } from "./entity.js";
import { drawGraph } from "./graph.js";
import { fieldDataset, shortName } from "./urns.js";

const label = (urn) => `${shortName(fieldDataset(urn) || urn)}.${shortName(urn)}`;

// The ends of every path through `edges` (source -> destination) that reaches `root`
// (incoming) or leaves it (outgoing), with the operations met along the way, in path order.
export function simpleView(root, edges, incoming) {
  const next = new Map();
  for (const e of edges) {
    const [from, to] = incoming ? [e.destination, e.source] : [e.source, e.destination];
    if (!next.has(from)) next.set(from, new Map());
    next.get(from).set(to, e.type);
  }
  const ends = new Map();
  const walk = (node, ops, seen) => {
    const out = [...(next.get(node) || new Map())].filter(([to]) => !seen.has(to));
    if (!out.length && node !== root) {
      const all = ends.get(node) || [];
      for (const op of ops) if (!all.includes(op)) all.push(op);
      ends.set(node, all);
    }
    for (const [to, type] of out) {
      const stepOps = (type || "").split(",").map((s) => s.trim()).filter(Boolean);
      walk(to, incoming ? [...stepOps, ...ops] : [...ops, ...stepOps], new Set([...seen, to]));
    }
  };
  walk(root, [], new Set([root]));
  return [...ends].map(([field, ops]) => (incoming ? { source: field, target: root, ops } : { source: root, target: field, ops }));
}

export async function fieldPage(main, urn, query) {
  const view = query.get("view") === "detailed" ? "detailed" : "simple";
  const direction = ["incoming", "outgoing", "both"].includes(query.get("direction")) ? query.get("direction") : "incoming";
  const link = (v, d) => `#/field/${encodeURIComponent(urn)}?view=${v}&direction=${d}`;
  const canvas = h("div", { class: "graph", id: "field-graph", role: "img", "aria-label": `Field lineage of ${label(urn)}` });
  const table = h("div", { class: "scroll" });
  const dataset = fieldDataset(urn);
  replace(main,
    h("header", { class: "entity-head" },
      h("h1", {}, "Field lineage of ", entityLink(urn, label(urn))),
      dataset && h("p", {}, "Field of ", entityLink(dataset)),
      h("nav", { class: "actions", "aria-label": "Views" },
        ["simple", "detailed"].map((v) => h("a", { class: v === view ? "button" : "button secondary", href: link(v, direction),
          "aria-current": v === view ? "page" : null }, v === "simple" ? "Simple view" : "Detailed view")),
        ["incoming", "outgoing", "both"].map((d) => h("a", { class: d === direction ? "button" : "button secondary", href: link(view, d),
          "aria-current": d === direction ? "true" : null }, d)))),
    canvas, h("section", { class: "card" }, h("h2", {}, "Edges"), table));
  try {
    const { nodes, edges } = view === "simple" ? await simpleGraph(urn, direction) : await detailedGraph(urn, direction);
    if (!edges.length) canvas.append(h("p", { class: "hint empty" }, "No field lineage recorded for this field."));
    drawGraph(canvas, nodes, edges, (node) => node.id !== urn && node.id.startsWith("urn:") && (location.hash = `#/field/${encodeURIComponent(node.id)}?view=${view}&direction=${direction}`));
    replace(table, h("table", { class: "relations field-edges" },
      h("thead", {}, h("tr", {}, ["From", "Operations", "To"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, edges.map((e) => h("tr", {}, h("td", {}, nodeText(nodes, e.source)), h("td", {}, e.label.replace(/\n/g, ", ")),
        h("td", {}, nodeText(nodes, e.target)))))));
  } catch (err) {
    replace(canvas, errorBox(err));
  }
}

function nodeText(nodes, id) {
  const node = nodes.find((n) => n.id === id);
  return id.startsWith("urn:li:schemaField:") ? entityLink(id, node.label) : node.label;
}

async function simpleGraph(urn, direction) {
  const paths = [];
  for (const incoming of [true, false]) {
    if (direction === (incoming ? "outgoing" : "incoming")) continue;
    const graph = await api.fieldLineage(urn, incoming ? "upstream" : "downstream", 10);
    paths.push(...simpleView(urn, graph.edges, incoming));
  }
  const ids = new Set([urn, ...paths.flatMap((p) => [p.source, p.target])]);
  return {
    nodes: [...ids].map((id) => ({ id, label: label(id), kind: "field", root: id === urn })),
    edges: paths.map((p) => ({ source: p.source, target: p.target, label: p.ops.join("\n") })),
  };
}

// The detailed graph needs each run's field operations (their intermediate fields); the native
// field lineage knows only the fields of datasets, so without them the detailed view draws
// every recorded hop between dataset fields with its operations, one edge per operation chain.
async function detailedGraph(urn, direction) {
  const edges = new Map();
  for (const incoming of [true, false]) {
    if (direction === (incoming ? "outgoing" : "incoming")) continue;
    const graph = await api.fieldLineage(urn, incoming ? "upstream" : "downstream", 10);
    for (const e of graph.edges) edges.set(`${e.source}\u0000${e.destination}`, e);
  }
  const ids = new Set([urn, ...[...edges.values()].flatMap((e) => [e.source, e.destination])]);
  return {
    nodes: [...ids].map((id) => ({ id, label: label(id), kind: "field", root: id === urn })),
    edges: [...edges.values()].map((e) => ({ source: e.source, target: e.destination, label: (e.type || "").split(",").join("\n") })),
  };
}
