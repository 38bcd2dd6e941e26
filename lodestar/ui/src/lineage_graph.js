// The lineage explorer's graph: cytoscape.js, laid out in layers left to right
// (lineage_layout.js: nodes sized to their columns, so open ones never overlap, and nodes already
// placed stay put as others come and go), columns drawn inside their dataset's box, a + or −
// beside each node that can expand or collapse a hop, zoom that never starts below a readable size.

import cytoscape from "cytoscape";
import { showing } from "./graph.js";
import { layered } from "./lineage_layout.js";

const FONT = 13; // px, a node's label at zoom 1
const READABLE_ZOOM = 0.85; // labels render at 11 px or more from here
const NODE_W = 210;
const HEAD_H = 54;
const ROW_H = 24;
const COL_W = NODE_W - 16;
const RANK_SEP = 90; // room for an edge's label ("write · 2 runs") between two columns
const HANDLE = 26; // px, the + / − beside a node
const ARC = 60; // px, how far an edge past a column bends away from the boxes in it

const STYLE = [
  { selector: "node", style: {
    label: "data(label)", "font-size": FONT, "text-valign": "center", "text-halign": "center", "text-wrap": "wrap",
    "text-max-width": NODE_W - 56, "text-margin-x": 14, "text-margin-y": "data(shift)", "line-height": 1.25,
    width: NODE_W, height: "data(h)", shape: "round-rectangle", "background-color": "#eff6ff", "border-width": 1,
    "border-color": "#1d4ed8", color: "#0f172a", "background-image": "data(icon)", "background-width": 24,
    "background-height": 24, "background-position-x": 10, "background-position-y": HEAD_H / 2 - 12,
    "background-fit": "none", "background-clip": "none", "background-image-containment": "over" } },
  { selector: "node[kind = 'job']", style: { "background-color": "#fef3c7", "border-color": "#b45309" } },
  { selector: "node[?root]", style: { "border-width": 3, "font-weight": "bold" } },
  { selector: "node[kind = 'column']", style: {
    label: "data(label)", width: COL_W, height: ROW_H - 4, shape: "rectangle", "font-size": 12, "text-margin-x": 0,
    "text-margin-y": 0, "text-max-width": COL_W - 8, "background-color": "#f0fdf4", "border-color": "#86efac",
    "background-image": "none", "font-weight": "normal" } },
  { selector: "node[kind = 'handle']", style: {
    label: "data(label)", width: HANDLE, height: HANDLE, shape: "ellipse", "font-size": FONT, "font-weight": "bold",
    "text-margin-x": 0, "text-margin-y": 0, "text-max-width": 60, "background-image": "none", "background-color": "#fff",
    "border-width": 1.5, "border-color": "#1d4ed8", color: "#1d4ed8" } },
  { selector: "node:selected", style: { "border-width": 3, "border-color": "#be123c" } },
  { selector: "edge", style: {
    width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#64748b",
    "target-arrow-color": "#64748b", label: "data(label)", "font-size": 11, "text-background-color": "#fff",
    "text-background-opacity": 0.9, "text-background-padding": 2 } },
  // an edge past a column arcs over it, not through the boxes there
  { selector: "edge.long", style: { "curve-style": "unbundled-bezier", "control-point-distances": -ARC, "control-point-weights": 0.5 } },
  { selector: "edge[!declared]", style: { "line-style": "dashed", "line-color": "#b45309", "target-arrow-color": "#b45309" } },
  { selector: "edge[?column]", style: { width: 1.5, "line-color": "#16a34a", "target-arrow-color": "#16a34a", "line-style": "solid" } },
  { selector: ".faded", style: { opacity: 0.25 } },
  { selector: "node.related", style: { "background-color": "#bbf7d0", "border-color": "#15803d", "border-width": 2 } },
  { selector: "node.picked", style: { "background-color": "#4ade80", "border-color": "#14532d", "border-width": 3 } },
  { selector: "edge.related", style: { width: 3, "line-color": "#15803d", "target-arrow-color": "#15803d", "z-index": 10 } },
];

const AUX = new Set(["column", "handle"]); // drawn inside or beside a node, never laid out
const MAIN = (el) => (el.isNode() ? !AUX.has(el.data("kind")) : !el.data("column"));
const edgeId = (e) => `e\n${e.source}\n${e.target}`;

// A graph in `container` centred on `root`; onTap(data of the node) on a click or tap.
export function explorerGraph(container, root, onTap) {
  const cy = cytoscape({ container, style: STYLE, minZoom: 0.05, maxZoom: 2, autoungrabify: true });
  cy.on("tap", "node", (event) => onTap(event.target.data()));
  showing(cy);
  const columns = new Map(); // dataset -> [{id, label}] while expanded
  const placed = new Map(); // id -> {x, y} of the nodes laid out so far

  function setSize(node) {
    const count = columns.get(node.id())?.length || 0;
    const h = count ? HEAD_H + count * ROW_H + 8 : HEAD_H;
    node.data({ h, shift: count ? HEAD_H / 2 - h / 2 : 0 });
  }

  function placeColumns() {
    for (const [dataset, list] of columns) {
      const node = cy.getElementById(dataset);
      const { x, y } = node.position();
      const top = y - node.data("h") / 2 + HEAD_H;
      list.forEach((c, i) => cy.getElementById(c.id).position({ x, y: top + i * ROW_H + ROW_H / 2 }));
    }
  }

  // The + or − of each node that has one, on its top corner: the upstream one on the left, the
  // downstream one on the right (clear of the edges, which meet the box's sides lower down, and
  // of their labels).
  function placeHandles() {
    cy.nodes("[kind = 'handle']").forEach((handle) => {
      const node = cy.getElementById(handle.data("of"));
      const { x, y } = node.position();
      handle.position({ x: x + (NODE_W / 2) * (handle.data("side") === "up" ? -1 : 1), y: y - node.data("h") / 2 });
    });
  }

  const graph = {
    cy,
    // The nodes [{id, label, kind, icon, root}] and edges [{source, target, label, declared}] now
    // shown: the ones gone are removed (with their columns), new ones added, the rest stay.
    setLineage(nodes, edges) {
      const wanted = new Set(nodes.map((n) => n.id));
      const lines = new Set(edges.map(edgeId));
      cy.batch(() => {
        const gone = cy.nodes().filter((n) => MAIN(n) && !wanted.has(n.id()));
        gone.forEach((n) => {
          columns.delete(n.id());
          placed.delete(n.id());
        });
        cy.nodes().filter((n) => n.data("kind") === "column" && !wanted.has(n.data("dataset"))).remove();
        cy.nodes("[kind = 'handle']").remove(); // setHandles() puts back those that are still wanted
        gone.remove();
        cy.edges().filter((e) => MAIN(e) && !lines.has(e.id())).remove();
        cy.add([
          ...nodes.filter((n) => cy.getElementById(n.id).empty()).map((n) => ({ group: "nodes", data: { ...n, h: HEAD_H, shift: 0 } })),
          ...edges.filter((e) => cy.getElementById(edgeId(e)).empty()).map((e) => ({ group: "edges", data: { id: edgeId(e), ...e } })),
        ]);
        edges.forEach((e) => cy.getElementById(edgeId(e)).data(e));
      });
    },
    // The + / − controls: [{id, side, open, hidden}] (lineage_expand.js frontier()).
    setHandles(controls) {
      cy.batch(() => {
        cy.nodes("[kind = 'handle']").remove();
        cy.add(controls.map((c) => ({ group: "nodes", data: {
          id: `handle:${c.side}:${c.id}`, kind: "handle", of: c.id, side: c.side, open: c.open,
          label: c.open ? "−" : `+${c.hidden}`, name: "" } })));
        placeHandles();
      });
    },
    // Show a dataset's columns inside its box (list: [{id, label}]), or hide them (null).
    setColumns(dataset, list) {
      const node = cy.getElementById(dataset);
      if (node.empty()) return;
      cy.batch(() => {
        cy.nodes().filter((n) => n.data("kind") === "column" && n.data("dataset") === dataset).remove();
        if (list && list.length) {
          columns.set(dataset, list);
          cy.add(list.map((c) => ({ group: "nodes", data: { ...c, kind: "column", dataset, h: ROW_H - 4 } })));
        } else {
          columns.delete(dataset);
        }
        setSize(node);
      });
    },
    // Column edges between the columns drawn: [{source, target, label}].
    setColumnEdges(edges) {
      cy.batch(() => {
        cy.edges("[?column]").remove();
        const drawn = edges.filter((e) => cy.getElementById(e.source).nonempty() && cy.getElementById(e.target).nonempty());
        cy.add(drawn.map((e) => ({ group: "edges", data: { id: `c\n${e.source}\n${e.target}`, ...e, column: true, declared: true, label: "" } })));
      });
    },
    // Nodes placed before stay; new ones take free places by their neighbours.
    layout() {
      const main = cy.nodes().filter(MAIN);
      const positions = layered(root, main.map((n) => ({ id: n.id(), h: n.data("h") })),
        cy.edges().filter(MAIN).map((e) => ({ source: e.data("source"), target: e.data("target") })),
        { width: NODE_W, rankSep: RANK_SEP, kept: placed });
      cy.batch(() => {
        main.forEach((n) => n.position(positions.get(n.id())));
        positions.forEach((p, id) => placed.set(id, p));
        cy.edges().filter(MAIN).forEach((e) => e.toggleClass("long",
          Math.abs(e.source().position().x - e.target().position().x) > 1.5 * (NODE_W + RANK_SEP)));
        placeColumns();
        placeHandles();
      });
    },
    // The focused node and its neighbours fitted, but never below a readable zoom (then centred
    // on them, or on the focus if that would leave it out of view). The box is the nodes' own
    // (their labels are inside them), so no label is measured for it.
    focusView() {
      const focus = cy.getElementById(root);
      const box = { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
      focus.closedNeighborhood().nodes().filter(MAIN).forEach((n) => {
        const { x, y } = n.position();
        const h = n.data("h");
        Object.assign(box, { x1: Math.min(box.x1, x - NODE_W / 2), x2: Math.max(box.x2, x + NODE_W / 2),
          y1: Math.min(box.y1, y - h / 2), y2: Math.max(box.y2, y + h / 2) });
      });
      const fit = Math.min((cy.width() - 60) / (box.x2 - box.x1), (cy.height() - 60) / (box.y2 - box.y1));
      const zoom = Math.max(READABLE_ZOOM, Math.min(cy.maxZoom(), fit));
      const centre = (x, y) => cy.viewport({ zoom, pan: { x: cy.width() / 2 - x * zoom, y: cy.height() / 2 - y * zoom } });
      centre((box.x1 + box.x2) / 2, (box.y1 + box.y2) / 2);
      const { x, y } = focus.renderedPosition();
      if (x < 0 || y < 0 || x > cy.width() || y > cy.height()) centre(focus.position().x, focus.position().y);
    },
    fitAll: () => cy.fit(cy.elements(), 30),
    zoomBy(factor) {
      cy.zoom({ level: cy.zoom() * factor, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
    },
    // Fit these nodes (ids) in view, at a readable zoom or closer (then centred on them).
    show(ids) {
      const eles = cy.collection(ids.map((id) => cy.getElementById(id)).filter((n) => n.nonempty()));
      cy.fit(eles, 40);
      if (cy.zoom() < READABLE_ZOOM) {
        cy.zoom(READABLE_ZOOM);
        cy.center(eles);
      }
    },
    // Bring a node into view at a readable zoom and select it.
    reveal(id) {
      const node = cy.getElementById(id);
      cy.elements().unselect();
      node.select();
      cy.zoom(Math.max(cy.zoom(), READABLE_ZOOM));
      cy.center(node);
    },
    // Nodes whose name (else label) contains `text` (any case), main nodes first.
    find(text) {
      const needle = text.trim().toLowerCase();
      const hits = cy.nodes("[kind != 'handle']").filter((n) => (n.data("name") || n.data("label")).toLowerCase().includes(needle));
      return [...hits.filter(MAIN), ...hits.filter((n) => !MAIN(n))].map((n) => n.id());
    },
    // Highlight a column, the columns related to it and the edges between them; null clears.
    highlight(picked, related) {
      cy.batch(() => {
        cy.elements().removeClass("faded related picked");
        if (!picked) return;
        const columnsDrawn = cy.nodes("[kind = 'column']");
        const keep = columnsDrawn.filter((c) => related.has(c.id()) || c.id() === picked);
        columnsDrawn.difference(keep).addClass("faded");
        keep.addClass("related");
        cy.getElementById(picked).removeClass("related").addClass("picked");
        const edges = cy.edges("[?column]");
        const on = edges.filter((e) => keep.contains(e.source()) && keep.contains(e.target()));
        on.addClass("related");
        edges.difference(on).addClass("faded");
      });
    },
  };
  return graph;
}
