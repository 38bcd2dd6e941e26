// The explorer's layered layout, left to right: the root in the middle column, what is upstream
// to its left and downstream to its right, one column per edge of the longest path from the root
// on that side. Placed once, in each column by the average position of its neighbours nearer the
// root; later, nodes already placed stay where they are and new ones take the free place nearest
// their neighbours. Boxes in a column never overlap.

import { adjacency } from "./lineage_expand.js";

const GAP = 24; // px between boxes in a column
const PASSES = 50; // of the longest-path relaxation (a cycle stops it there)

// Columns: Map id -> integer (root 0, upstream negative, downstream positive).
function columns(root, ids, edges) {
  const col = new Map([[root, 0]]);
  const next = adjacency(edges);
  const queue = [root];
  while (queue.length) {
    const id = queue.shift();
    const c = col.get(id);
    for (const [side, step] of [["down", 1], ["up", -1]]) {
      if (c * step < 0) continue; // each side walks away from the root
      for (const n of next[side].get(id) || []) {
        if (col.has(n)) continue;
        col.set(n, c + step);
        queue.push(n);
      }
    }
  }
  for (let pass = 0, moved = true; moved && pass < PASSES; pass++) {
    moved = false;
    for (const { source, target } of edges) {
      const s = col.get(source);
      const t = col.get(target);
      if (s > 0 && t > 0 && t <= s) col.set(target, s + 1);
      else if (s < 0 && t < 0 && s >= t) col.set(source, t - 1);
      else continue;
      moved = true;
    }
  }
  ids.filter((id) => !col.has(id)).forEach((id) => col.set(id, 0));
  return col;
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

// ids by their column: Map column -> [ids].
function byColumn(ids, col) {
  const out = new Map();
  for (const id of ids) (out.get(col.get(id)) || out.set(col.get(id), []).get(col.get(id))).push(id);
  return out;
}

// The y of a box of height h nearest `want` where it overlaps none of `taken` ([top, bottom]).
function freePlace(taken, want, h) {
  const fits = (y) => taken.every(([top, bottom]) => y + h / 2 + GAP <= top || y - h / 2 - GAP >= bottom);
  const candidates = [want, ...taken.flatMap(([top, bottom]) => [top - GAP - h / 2, bottom + GAP + h / 2])];
  return candidates.filter(fits).reduce((best, y) => (Math.abs(y - want) < Math.abs(best - want) ? y : best), Infinity);
}

// Positions {x, y} by id for nodes [{id, h}] and edges [{source, target}]; `kept` holds the
// positions of nodes placed before (kept where they are while their column is the same).
export function layered(root, nodes, edges, { width, rankSep, kept = new Map() }) {
  const ids = nodes.map((n) => n.id);
  const height = new Map(nodes.map((n) => [n.id, n.h]));
  const col = columns(root, ids, edges);
  const x = (id) => col.get(id) * (width + rankSep);
  const neighbours = new Map(ids.map((id) => [id, []]));
  for (const e of edges) {
    neighbours.get(e.source)?.push(e.target);
    neighbours.get(e.target)?.push(e.source);
  }
  const pos = new Map();
  for (const id of ids) {
    const before = kept.get(id);
    if (before && before.x === x(id)) pos.set(id, before);
  }
  const fresh = byColumn(ids.filter((id) => !pos.has(id)), col);
  const order = [...fresh.keys()].sort((a, b) => Math.abs(a) - Math.abs(b) || a - b); // outward from the root
  for (const c of order) {
    const inner = (id) => neighbours.get(id).filter((n) => pos.has(n) && Math.abs(col.get(n)) <= Math.abs(c)).map((n) => pos.get(n).y);
    const want = new Map(fresh.get(c).map((id) => [id, inner(id).length ? mean(inner(id)) : 0]));
    const column = fresh.get(c).sort((a, b) => want.get(a) - want.get(b) || (a < b ? -1 : 1));
    const taken = ids.filter((id) => pos.has(id) && col.get(id) === c).map((id) => [pos.get(id).y - height.get(id) / 2, pos.get(id).y + height.get(id) / 2]);
    if (!taken.length) { // a new column: stacked, centred on where its neighbours are
      const total = column.reduce((sum, id) => sum + height.get(id), 0) + GAP * (column.length - 1);
      let top = mean([...want.values()]) - total / 2;
      for (const id of column) {
        pos.set(id, { x: x(id), y: top + height.get(id) / 2 });
        top += height.get(id) + GAP;
      }
      continue;
    }
    for (const id of column) {
      const y = freePlace(taken, want.get(id), height.get(id));
      pos.set(id, { x: x(id), y });
      taken.push([y - height.get(id) / 2, y + height.get(id) / 2]);
    }
  }
  return separated(pos, height, col);
}

// Boxes that grew (a dataset showing its columns) push the ones below them down.
function separated(pos, height, col) {
  for (const list of byColumn([...pos.keys()], col).values()) {
    list.sort((a, b) => pos.get(a).y - pos.get(b).y);
    let bottom = -Infinity;
    for (const id of list) {
      const h = height.get(id);
      if (pos.get(id).y - h / 2 < bottom + GAP) pos.set(id, { x: pos.get(id).x, y: bottom + GAP + h / 2 });
      bottom = pos.get(id).y + h / 2;
    }
  }
  return pos;
}
