// Lineage for the explorer from every source, merged into one graph: the lineage graph
// (`/v1/lineage`: upstreamLineage, dataJobInputOutput and the registry's other lineage
// relationships, as they are now) and CDAP's run lineage (v3: which programs' runs read or wrote
// a dataset during a time window). Columns come from a dataset's schema and field lineage
// (`/v1/lineage/fields`: fineGrainedLineages and the field operations of runs).

import { api, call } from "./api.js";
import { entityType, fieldDataset, fieldUrn } from "./urns.js";

const runUrn = (id) => `urn:li:dataProcessInstance:${id}`;
// A run is drawn as its program's edge (with the window's runs on it), not as a node.
const RUN = "dataProcessInstance";
// A hop is counted between datasets: a job between two adds none (as in DataHub's explorer).
const FREE_HOP = new Set(["dataJob", "dataFlow"]);
const MAX_HOPS = 100; // what /v1/lineage allows

// Relations between datasets and programs in [start, end) (seconds), each with its runs:
// [{data, program, access, runs: [run urn]}], data and program as URNs.
async function datasetLineage(urn, start, end, levels) {
  const data = await call("GET", `/v3/namespaces/default/datasets/${encodeURIComponent(urn)}/lineage`,
    { query: { start, end, levels, collapse: "run" } });
  const relations = [];
  for (const r of data.relations) {
    for (const access of r.accesses) {
      relations.push({ data: data.data[r.data].urn, program: data.programs[r.program].urn, access, runs: r.runs.map(runUrn) });
    }
  }
  return relations;
}

// A run as the run-lineage tables see it: {run, program, start, end, status, accesses, ...}.
export async function runInfo(urn) {
  return call("GET", `/v1/runs/${encodeURIComponent(urn)}`);
}

const NO_WALK = { nodes: [], edges: [] };

// The lineage of `root`, `up` hops upstream and `down` downstream, run edges from the window:
// {nodes: [{id, type, side, hops}], edges: [{source, target, types: [...], runs: [...], access}],
//  relations (the window's, for a program's runs), more: {up, down} (nodes one hop further)}.
export async function explorerLineage(root, { up, down, start, end }) {
  const walk = (direction, hops) => (hops >= 0 ? api.lineage(root, direction, Math.min(MAX_HOPS, 2 * (hops + 1))) : NO_WALK);
  const [upstream, downstream, relations] = await Promise.all([
    walk("upstream", up), walk("downstream", down),
    entityType(root) === "dataset" ? datasetLineage(root, start, end, Math.max(up, down) + 1) : [],
  ]);
  const edges = new Map();
  const edgeOf = (source, target) => {
    const key = `${source}\n${target}`;
    if (!edges.has(key)) edges.set(key, { source, target, types: new Set(), runs: new Set(), access: new Set() });
    return edges.get(key);
  };
  for (const e of [...upstream.edges, ...downstream.edges]) {
    if (entityType(e.source) === RUN || entityType(e.destination) === RUN) continue;
    edgeOf(e.source, e.destination).types.add(e.via);
  }
  for (const r of relations) {
    const [source, target] = r.access === "write" ? [r.program, r.data] : [r.data, r.program];
    const edge = edgeOf(source, target);
    edge.access.add(r.access);
    r.runs.forEach((run) => edge.runs.add(run));
  }
  const all = [...edges.values()];
  const upHops = distances(root, all, "target", "source");
  const downHops = distances(root, all, "source", "target");
  const within = (id) => id === root || upHops.get(id) <= up || downHops.get(id) <= down;
  const nodes = [...new Set([root, ...upHops.keys(), ...downHops.keys()])].filter(within).map((id) => ({
    id, type: entityType(id), hops: Math.min(upHops.get(id) ?? Infinity, downHops.get(id) ?? Infinity),
    side: id === root ? "root" : upHops.get(id) <= up ? "upstream" : "downstream",
  }));
  const kept = new Set(nodes.map((n) => n.id));
  const beyond = (hops, limit) => [...hops.entries()].filter(([id, d]) => d === limit + 1 && !kept.has(id)).length;
  return {
    nodes,
    edges: all.filter((e) => kept.has(e.source) && kept.has(e.target))
      .map((e) => ({ ...e, types: [...e.types], runs: [...e.runs], access: [...e.access] })),
    relations: relations.filter((r) => kept.has(r.data) && kept.has(r.program)),
    more: { up: beyond(upHops, up), down: beyond(downHops, down) },
  };
}

// Hops from root to every node reached by following edges from `from` to `to` (0-1 BFS: a step
// onto a job costs nothing).
function distances(root, edges, from, to) {
  const next = new Map();
  for (const e of edges) {
    if (!next.has(e[from])) next.set(e[from], []);
    next.get(e[from]).push(e[to]);
  }
  const hops = new Map([[root, 0]]);
  const queue = [root];
  while (queue.length) {
    const id = queue.shift();
    for (const n of next.get(id) || []) {
      const d = hops.get(id) + (FREE_HOP.has(entityType(n)) ? 0 : 1);
      if (hops.has(n) && hops.get(n) <= d) continue;
      hops.set(n, d);
      if (d === hops.get(id)) queue.unshift(n);
      else queue.push(n);
    }
  }
  hops.delete(root);
  return hops;
}

// Field edges from /v1/lineage/fields, one per pair of schemaField URNs, with what declared it
// (and its operations, if any): {source, target, types: ["upstreamLineage: parse,concat", ...]}.
function addFieldEdges(into, answer) {
  for (const e of answer.edges) {
    const key = `${e.source}\n${e.destination}`;
    if (!into.has(key)) into.set(key, { source: e.source, target: e.destination, types: new Set() });
    into.get(key).types.add(e.type && e.type !== "DownstreamOf" ? `${e.via}: ${e.type}` : e.via);
  }
}

// A dataset's columns and their field edges one hop each way:
// {columns: [fieldPath], edges: [{source, target, types}]}. Columns come from the schema and
// from the dataset's fields that field lineage names (a dataset without a schema still has them).
export async function datasetColumns(urn) {
  let schemaFields = [];
  try {
    const entity = await api.entity(urn);
    schemaFields = (entity.aspects?.schemaMetadata?.value?.fields || []).map((f) => f.fieldPath);
  } catch (err) {
    if (err.status !== 404) throw err;
  }
  const edges = new Map();
  const answers = await Promise.all(schemaFields.map((f) => api.fieldLineage(fieldUrn(urn, f), "both", 1)));
  answers.forEach((answer) => addFieldEdges(edges, answer));
  const list = [...edges.values()].map((e) => ({ ...e, types: [...e.types] }));
  const named = list.flatMap((e) => [e.source, e.target]).filter((f) => fieldDataset(f) === urn)
    .map((f) => f.slice(urn.length + "urn:li:schemaField:(".length + 1, -1));
  return { columns: [...new Set([...schemaFields, ...named])], edges: list };
}

// Everything upstream and downstream of a column, over any number of hops:
// {upstream: Set, downstream: Set, edges: [{source, target, types}]}.
export async function columnLineage(field) {
  const answer = await api.fieldLineage(field, "both", MAX_HOPS);
  const edges = new Map();
  addFieldEdges(edges, answer);
  const side = (s) => new Set(answer.nodes.filter((n) => n.direction === s).map((n) => n.urn));
  return { upstream: side("upstream"), downstream: side("downstream"), edges: [...edges.values()].map((e) => ({ ...e, types: [...e.types] })) };
}
