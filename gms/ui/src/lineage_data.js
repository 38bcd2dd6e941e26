// Dataset lineage for a time window from CDAP's lineage API (v3): relations between datasets
// and programs, each with the runs (running during the window) that made it.

import { api, call } from "./api.js";

const runUrn = (id) => `urn:li:dataProcessInstance:${id}`;

// {relations: [{data, program, access, runs: [run urn]}]}, data and program as URNs.
export async function datasetLineage(urn, start, end, levels) {
  const data = await call("GET", `/v3/namespaces/default/datasets/${encodeURIComponent(urn)}/lineage`,
    { query: { start, end, levels, collapse: "run" } });
  const relations = [];
  for (const r of data.relations) {
    for (const access of r.accesses) {
      relations.push({ data: data.data[r.data].urn, program: data.programs[r.program].urn, access, runs: r.runs.map(runUrn) });
    }
  }
  return { relations };
}

// A run's program, start, end and status, from its aspects and run events.
export async function runInfo(urn) {
  const [entity, events] = await Promise.all([
    api.entity(urn),
    api.timeseries(urn, "dataProcessInstanceRunEvent").catch(() => ({ points: [] })),
  ]);
  const props = entity.aspects?.dataProcessInstanceProperties?.value || {};
  const started = events.points.find((p) => p.status === "STARTED");
  const ended = events.points.find((p) => p.status === "COMPLETE");
  return {
    urn,
    entity,
    program: entity.aspects?.dataProcessInstanceRelationships?.value?.parentTemplate || null,
    start: started?.timestampMillis ?? props.created?.time ?? null,
    end: ended?.timestampMillis ?? null,
    status: ended?.result?.type || props.customProperties?.status || (ended ? "COMPLETE" : "RUNNING"),
  };
}
