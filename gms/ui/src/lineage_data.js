// Dataset lineage for a time window, as relations in CDAP's shape:
// {relations: [{data, program, access: "read"|"write", runs: [run urn]}], runs: {urn: run}},
// built from the native lineage walk: runs (dataProcessInstance) are kept when they were
// running during the window and folded into their program; a program without any recorded
// run contributes its declared inputs and outputs.

import { api } from "./api.js";

async function runInfo(urn) {
  const [entity, events] = await Promise.all([
    api.entity(urn),
    api.timeseries(urn, "dataProcessInstanceRunEvent").catch(() => ({ points: [] })),
  ]);
  const props = entity.aspects?.dataProcessInstanceProperties?.value || {};
  const started = events.points.find((p) => p.status === "STARTED");
  const ended = events.points.find((p) => p.status === "COMPLETE");
  return {
    urn,
    program: entity.aspects?.dataProcessInstanceRelationships?.value?.parentTemplate || null,
    start: started?.timestampMillis ?? props.created?.time ?? null,
    end: ended?.timestampMillis ?? null,
    status: ended?.result?.type || props.customProperties?.status || (ended ? "COMPLETE" : "RUNNING"),
  };
}

// Whether a run was running at some time in [startMs, endMs].
export function inWindow(run, startMs, endMs) {
  if (run.start === null) return false;
  return run.start <= endMs && (run.end === null || run.end >= startMs);
}

export async function datasetLineage(urn, startMs, endMs, levels) {
  const graph = await api.lineage(urn, "both", 2 * levels);
  const kind = new Map(graph.nodes.map((n) => [n.urn, n.entityType]));
  const runUrns = graph.nodes.filter((n) => n.entityType === "dataProcessInstance").map((n) => n.urn);
  const runs = Object.fromEntries((await Promise.all(runUrns.map(runInfo))).map((r) => [r.urn, r]));
  const programsWithRuns = new Set(Object.values(runs).map((r) => r.program));
  const grouped = new Map();
  function add(data, program, access, run) {
    const key = `${data}\u0000${program}\u0000${access}`;
    if (!grouped.has(key)) grouped.set(key, { data, program, access, runs: [] });
    if (run) grouped.get(key).runs.push(run);
  }
  for (const edge of graph.edges) {
    const [source, target] = [edge.source, edge.destination];
    const read = kind.get(source) === "dataset";
    const [data, other] = read ? [source, target] : [target, source];
    if (kind.get(data) !== "dataset") continue;
    const access = read ? "read" : "write";
    if (kind.get(other) === "dataProcessInstance") {
      const run = runs[other];
      if (run?.program && inWindow(run, startMs, endMs)) add(data, run.program, access, other);
    } else if (kind.get(other) === "dataJob" && !programsWithRuns.has(other)) {
      add(data, other, access, null);
    }
  }
  return { relations: reachable(urn, [...grouped.values()], levels), runs };
}

// The relations within `levels` dataset-to-dataset steps of the root, up- and downstream.
function reachable(root, relations, levels) {
  const kept = new Set();
  for (const upstream of [true, false]) {
    let frontier = new Set([root]);
    const seen = new Set([root]);
    for (let level = 0; level < levels && frontier.size; level++) {
      const programs = new Set();
      for (const r of relations) {
        if (frontier.has(r.data) && r.access === (upstream ? "write" : "read")) {
          programs.add(r.program);
          kept.add(r);
        }
      }
      const next = new Set();
      for (const r of relations) {
        if (programs.has(r.program) && r.access === (upstream ? "read" : "write")) {
          kept.add(r);
          if (!seen.has(r.data)) next.add(r.data);
          seen.add(r.data);
        }
      }
      frontier = next;
    }
  }
  return relations.filter((r) => kept.has(r));
}
