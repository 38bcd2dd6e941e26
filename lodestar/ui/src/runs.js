// A program's runs for its page: found through the run lineage of the datasets it reads and
// writes (CDAP's v3 dataset lineage, all time), each run's status and times from `/v1/runs`.

import { call } from "./api.js";
import { errorBox, formatTime, h, replace } from "./dom.js";

const runUrn = (id) => `urn:li:dataProcessInstance:${id}`;

// The run URNs of `program` seen on the lineage of `datasets`.
async function runsOf(program, datasets) {
  const found = new Set();
  await Promise.all(datasets.map(async (dataset) => {
    const data = await call("GET", `/v3/namespaces/default/datasets/${encodeURIComponent(dataset)}/lineage`,
      { query: { start: 0, end: "now", levels: 1 } });
    for (const r of data.relations) {
      if (data.programs[r.program]?.urn === program) r.runs.forEach((id) => found.add(runUrn(id)));
    }
  }));
  return [...found];
}

function duration(start, end) {
  if (!start || !end) return "";
  const seconds = Math.round((end - start) / 1000);
  const parts = [[Math.floor(seconds / 3600), "h"], [Math.floor(seconds / 60) % 60, "min"], [seconds % 60, "s"]];
  return parts.filter(([n], i) => n || i === 2).map(([n, unit]) => `${n} ${unit}`).join(" ");
}

// The "Runs" card of a program: newest first, each linking to the run's page.
export function runsSection(program, datasets, runLink) {
  const body = h("tbody", {}, h("tr", {}, h("td", { colspan: 4, class: "hint" }, "Loading…")));
  const card = h("section", { class: "card runs-card", "aria-labelledby": "runs-title" },
    h("h2", { id: "runs-title" }, "Runs"),
    h("div", { class: "scroll" }, h("table", { class: "runs-table" },
      h("thead", {}, h("tr", {}, ["Run", "Status", "Start", "Duration"].map((t) => h("th", { scope: "col" }, t)))), body)));
  runsOf(program, datasets)
    .then((urns) => Promise.all(urns.map((urn) => call("GET", `/v1/runs/${encodeURIComponent(urn)}`))))
    .then((runs) => replace(body, runs.length ? runs.sort((a, b) => (b.start || 0) - (a.start || 0)).map((run) =>
      h("tr", {}, h("td", {}, runLink(run.run)), h("td", {}, h("span", { class: `status status-${(run.status || "").toLowerCase()}` }, run.status || "")),
        h("td", {}, formatTime(run.start)), h("td", {}, run.end ? duration(run.start, run.end) : "running")))
      : h("tr", {}, h("td", { colspan: 4, class: "hint" }, "No runs recorded"))))
    .catch((err) => replace(body, h("tr", {}, h("td", { colspan: 4 }, errorBox(err)))));
  return card;
}
