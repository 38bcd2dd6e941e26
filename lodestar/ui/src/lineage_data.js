// Lineage for the explorer from every source, gathered into one pool of edges as the explorer
// asks around a node: the lineage graph (`/v1/lineage`: upstreamLineage, dataJobInputOutput and
// the registry's other lineage relationships, as they are now) and CDAP's run lineage
// (`/v1/lineage/runs`: which programs' runs read or wrote a dataset during a time window, from a
// dataset or a program). Columns come from a dataset's schema and field lineage
// (`/v1/lineage/fields`: fineGrainedLineages and the field operations of runs).

import { api, call } from "./api.js";
import { entityType, fieldDataset, fieldUrn } from "./urns.js";

// A run is drawn as its program's edge (with the window's runs on it), not as a node.
const RUN = "dataProcessInstance";
const RUN_ROOTS = new Set(["dataset", "dataJob"]); // what /v1/lineage/runs walks from
const MAX_HOPS = 100; // what /v1/lineage allows

// Everything asked so far: edges {source, target, types: Set, runs: Set, access: Set} by
// "source\ntarget", and the window's relations {data, program, access, runs: Set} by
// "data\nprogram\naccess".
export function lineagePool() {
  return { edges: new Map(), relations: new Map(), asked: new Set() };
}

function edgeOf(pool, source, target) {
  const key = `${source}\n${target}`;
  if (!pool.edges.has(key)) pool.edges.set(key, { source, target, types: new Set(), runs: new Set(), access: new Set() });
  return pool.edges.get(key);
}

// Adds to the pool the lineage around `urn`, `hops` dataset hops each way asked ({upstream: n,
// downstream: n}, and one more, so the nodes at the edge know what lies beyond them), and the
// run lineage of the window around it. Asks nothing twice.
export async function askAround(pool, urn, hops, { start, end }) {
  const key = `${JSON.stringify(hops)}:${urn}`;
  if (pool.asked.has(key)) return;
  pool.asked.add(key);
  const levels = Math.max(...Object.values(hops)) + 1;
  const [runs, ...walks] = await Promise.all([
    RUN_ROOTS.has(entityType(urn)) ? call("GET", "/v1/lineage/runs", { query: { urn, start, end, levels } }) : { relations: [] },
    // a job between two datasets is a hop of its own here
    ...Object.entries(hops).map(([direction, n]) => api.lineage(urn, direction, Math.min(MAX_HOPS, 2 * (n + 1)))),
  ]);
  for (const e of walks.flatMap((w) => w.edges)) {
    if (entityType(e.source) === RUN || entityType(e.destination) === RUN) continue;
    edgeOf(pool, e.source, e.destination).types.add(e.via);
  }
  for (const r of runs.relations.filter((x) => x.program)) {
    for (const access of r.accesses) {
      const [source, target] = access === "write" ? [r.program, r.data] : [r.data, r.program];
      const edge = edgeOf(pool, source, target);
      edge.access.add(access);
      r.runs.forEach((run) => edge.runs.add(run));
      const key = `${r.data}\n${r.program}\n${access}`;
      if (!pool.relations.has(key)) pool.relations.set(key, { data: r.data, program: r.program, access, runs: new Set() });
      r.runs.forEach((run) => pool.relations.get(key).runs.add(run));
    }
  }
}

// A run as the run-lineage tables see it: {run, program, start, end, status, accesses, ...}.
export async function runInfo(urn) {
  return call("GET", `/v1/runs/${encodeURIComponent(urn)}`);
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
