// Drawing a lineage graph: cytoscape.js laid out left to right by dagre.

import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";

cytoscape.use(dagre);

const STYLE = [
  { selector: "node", style: { label: "data(label)", "font-size": 12, "text-valign": "center", "text-halign": "center",
    "text-wrap": "wrap", "text-max-width": 140, width: 150, height: 40, shape: "round-rectangle",
    "background-color": "#dbeafe", "border-width": 1, "border-color": "#1d4ed8", color: "#0f172a" } },
  { selector: "node[kind = 'program']", style: { shape: "round-tag", "background-color": "#fde68a", "border-color": "#b45309" } },
  { selector: "node[kind = 'field']", style: { "background-color": "#dcfce7", "border-color": "#15803d" } },
  { selector: "node[kind = 'intermediate']", style: { "background-color": "#f8fafc", "border-style": "dashed", "border-color": "#15803d" } },
  { selector: "node[?root]", style: { "border-width": 3, "font-weight": "bold" } },
  { selector: "node:selected", style: { "border-width": 4, "border-color": "#be123c" } },
  { selector: "edge", style: { width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#64748b",
    "target-arrow-color": "#64748b", label: "data(label)", "font-size": 11, "text-wrap": "wrap",
    "text-background-color": "#fff", "text-background-opacity": 0.9, "text-background-padding": 2 } },
];

// nodes: [{id, label, kind, root}]; edges: [{source, target, label}]. onTap(node data) on click.
export function drawGraph(container, nodes, edges, onTap) {
  const cy = cytoscape({
    container,
    elements: [
      ...nodes.map((n) => ({ data: n })),
      ...edges.map((e, i) => ({ data: { id: `e${i}`, ...e } })),
    ],
    style: STYLE,
    layout: { name: "dagre", rankDir: "LR", nodeSep: 30, rankSep: 90, edgeSep: 10 },
    maxZoom: 1.25,
  });
  if (onTap) cy.on("tap", "node", (event) => onTap(event.target.data()));
  return showing(cy);
}

// The graph now on the page: the one before is destroyed (its renderer and listeners would
// otherwise live on), and it is window.lodestarGraph, for people and tests alike (cy.nodes()).
export function showing(cy) {
  if (window.lodestarGraph && window.lodestarGraph !== cy) window.lodestarGraph.destroy();
  window.lodestarGraph = cy;
  return cy;
}
