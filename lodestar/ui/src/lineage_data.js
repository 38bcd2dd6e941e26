// Dataset lineage for a time window from CDAP's lineage API (v3): relations between datasets
// and programs, each with the runs (running during the window) that made it.

import { call } from "./api.js";

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

// A run as the run-lineage tables see it: {run, program, start, end, status, accesses, ...}.
export async function runInfo(urn) {
  return call("GET", `/v1/runs/${encodeURIComponent(urn)}`);
}
