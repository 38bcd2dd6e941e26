// Which part of the lineage pool the explorer shows: the root, and for each node expanded
// upstream ("up") or downstream ("down") its neighbours one hop that way, a hop counted between
// datasets (a job between two is no hop of its own, as in DataHub's explorer). Expansions are
// keys "up:<urn>" / "down:<urn>"; a node only expands on the side it was reached from.

import { entityType } from "./urns.js";

const FREE_HOP = new Set(["dataJob", "dataFlow"]);
const SIDES = ["up", "down"];

// Next nodes each way from the pool's edges: {up: Map id -> [ids], down: Map id -> [ids]}.
export function adjacency(edges) {
  const adj = { up: new Map(), down: new Map() };
  const link = (map, from, to) => (map.get(from) || map.set(from, []).get(from)).push(to);
  for (const e of edges) {
    link(adj.down, e.source, e.target);
    link(adj.up, e.target, e.source);
  }
  return adj;
}

// The nodes one hop from `id` toward `side`: through any jobs, up to the first other node on each path.
function oneHop(adj, id, side) {
  const found = new Set();
  const queue = [id];
  while (queue.length) {
    for (const next of adj[side].get(queue.shift()) || []) {
      if (next === id || found.has(next)) continue;
      found.add(next);
      if (FREE_HOP.has(entityType(next))) queue.push(next);
    }
  }
  return found;
}

// The nodes shown, each with the sides it was reached from (the root: both): Map id -> Set.
export function shownNodes(root, adj, expanded) {
  const sides = new Map([[root, new Set(SIDES)]]);
  const queue = [root];
  while (queue.length) {
    const id = queue.shift();
    for (const side of SIDES) {
      if (!sides.get(id).has(side) || !expanded.has(`${side}:${id}`)) continue;
      for (const n of oneHop(adj, id, side)) {
        if (sides.get(n)?.has(side)) continue;
        if (!sides.has(n)) sides.set(n, new Set());
        sides.get(n).add(side);
        queue.push(n); // again if it was there already: it may expand on this side too
      }
    }
  }
  return sides;
}

// The expansions that show every node within `hops` of the root on `side`.
export function expandedWithin(root, adj, side, hops) {
  const expanded = new Set();
  let frontier = [root];
  for (let i = 0; i < hops && frontier.length; i++) {
    frontier.forEach((id) => expanded.add(`${side}:${id}`));
    frontier = [...new Set(frontier.flatMap((id) => [...oneHop(adj, id, side)]))]
      .filter((id) => !expanded.has(`${side}:${id}`) && !FREE_HOP.has(entityType(id)));
  }
  return expanded;
}

// Expansions of nodes still shown (collapsing a node drops what it alone had expanded beyond it).
export function prune(root, adj, expanded) {
  const shown = shownNodes(root, adj, expanded);
  return new Set([...expanded].filter((key) => {
    const [side, ...rest] = key.split(":");
    return shown.get(rest.join(":"))?.has(side);
  }));
}

// Each shown node's controls: [{id, side, open, hidden}]: `open` for an expanded node (it can
// collapse), else `hidden` nodes one hop further (it can expand). And the count of nodes one hop
// beyond the shown ones on each side: {up, down}.
export function frontier(adj, shown, expanded) {
  const controls = [];
  const beyond = { up: new Set(), down: new Set() };
  for (const [id, sides] of shown) {
    for (const side of sides) {
      const next = oneHop(adj, id, side);
      if (!next.size) continue;
      if (expanded.has(`${side}:${id}`)) {
        controls.push({ id, side, open: true, hidden: 0 });
        continue;
      }
      const hidden = [...next].filter((n) => !shown.has(n));
      hidden.forEach((n) => beyond[side].add(n));
      if (hidden.length) controls.push({ id, side, open: false, hidden: hidden.length });
    }
  }
  return { controls, more: { up: beyond.up.size, down: beyond.down.size } };
}
