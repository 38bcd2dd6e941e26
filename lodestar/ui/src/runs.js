// A program's runs for its page: the runs whose `parentTemplate` is the program (found by
// search), each run's status and times from `/v1/runs`.

import { api, call } from "./api.js";
import { errorBox, formatTime, h, replace } from "./dom.js";

const SHOWN = 100;

// Up to SHOWN of the runs of `program`, and how many it has.
async function runsOf(program) {
  const data = await api.search(`parentTemplate:"${program}"`, { types: "dataProcessInstance", start: 0, count: SHOWN });
  return { urns: data.results.map((hit) => hit.urn), total: data.total };
}

function duration(start, end) {
  if (!start || !end) return "";
  const seconds = Math.round((end - start) / 1000);
  const parts = [[Math.floor(seconds / 3600), "h"], [Math.floor(seconds / 60) % 60, "min"], [seconds % 60, "s"]];
  return parts.filter(([n], i) => n || i === 2).map(([n, unit]) => `${n} ${unit}`).join(" ");
}

// The "Runs" card of a program: newest first, each linking to the run's page.
export function runsSection(program, runLink) {
  const body = h("tbody", {}, h("tr", {}, h("td", { colspan: 4, class: "hint" }, "Loading…")));
  const more = h("p", { class: "hint", hidden: true });
  const card = h("section", { class: "card runs-card", "aria-labelledby": "runs-title" },
    h("h2", { id: "runs-title" }, "Runs"),
    h("div", { class: "scroll" }, h("table", { class: "runs-table" },
      h("thead", {}, h("tr", {}, ["Run", "Status", "Start", "Duration"].map((t) => h("th", { scope: "col" }, t)))), body)),
    more);
  runsOf(program)
    .then(({ urns, total }) => {
      replace(more, `${urns.length} of ${total} runs shown`);
      more.hidden = total <= urns.length;
      return Promise.all(urns.map((urn) => call("GET", `/v1/runs/${encodeURIComponent(urn)}`)));
    })
    .then((runs) => replace(body, runs.length ? runs.sort((a, b) => (b.start || 0) - (a.start || 0)).map((run) =>
      h("tr", {}, h("td", {}, runLink(run.run)), h("td", {}, h("span", { class: `status status-${(run.status || "").toLowerCase()}` }, run.status || "")),
        h("td", {}, formatTime(run.start)), h("td", {}, run.end ? duration(run.start, run.end) : "running")))
      : h("tr", {}, h("td", { colspan: 4, class: "hint" }, "No runs recorded"))))
    .catch((err) => replace(body, h("tr", {}, h("td", { colspan: 4 }, errorBox(err)))));
  return card;
}
