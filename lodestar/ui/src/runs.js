// A program's runs for its page, in one request: `/v1/runs?program=` answers the runs whose
// `parentTemplate` is the program, newest first, with their status and times.

import { call } from "./api.js";
import { errorBox, formatTime, h, replace } from "./dom.js";

const SHOWN = 100;

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
  const row = (run) => h("tr", {}, h("td", {}, runLink(run.run)),
    h("td", {}, h("span", { class: `status status-${(run.status || "").toLowerCase()}` }, run.status || "")),
    h("td", {}, formatTime(run.start)), h("td", {}, run.end ? duration(run.start, run.end) : "running"));
  call("GET", "/v1/runs", { query: { program, count: SHOWN } })
    .then(({ runs, total }) => {
      replace(more, `${runs.length} of ${total} runs shown`);
      more.hidden = total <= runs.length;
      replace(body, runs.length ? runs.map(row) : h("tr", {}, h("td", { colspan: 4, class: "hint" }, "No runs recorded")));
    })
    .catch((err) => replace(body, h("tr", {}, h("td", { colspan: 4 }, errorBox(err)))));
  return card;
}
