// A program's runs in the lineage window, and one run's metadata, in the explorer's side panel.

import { api } from "./api.js";
import { errorBox, formatTime, h, replace } from "./dom.js";
import { entityLink } from "./entity.js";
import { runInfo } from "./lineage_data.js";
import { scoped } from "./metadata.js";
import { shortName } from "./urns.js";

// A run's custom properties that the rows above already show (CDAP writes them there too).
const SHOWN_RUN_FIELDS = new Set(["program", "status"]);

// relations: the window's [{data, program, access, runs}]; focus moves the focus to the first
// run; extra (an element or null) goes under the program's link.
export async function showProgram(panel, program, relations, focus, extra) {
  const ids = [...new Set(relations.filter((r) => r.program === program).flatMap((r) => r.runs))];
  const list = h("ul", { class: "runs" });
  const detail = h("div", { class: "run-detail" });
  replace(panel, h("h2", {}, "Program ", shortName(program)), h("p", {}, entityLink(program, "Open program")), extra,
    h("h3", {}, `Runs in the window (${ids.length})`), list, detail);
  try {
    const runs = (await Promise.all(ids.map(runInfo))).sort((a, b) => b.start - a.start);
    replace(list, runs.map((run) => h("li", {},
      h("button", { class: "run", onclick: () => showRun(detail, run) }, shortName(run.run)),
      ` ${formatTime(run.start)} → ${run.end ? formatTime(run.end) : "running"} · ${run.status}`)));
    if (focus) list.querySelector("button.run")?.focus();
  } catch (err) {
    replace(list, errorBox(err));
  }
}

async function showRun(detail, run) {
  replace(detail, h("p", { class: "hint" }, "Loading…"));
  try {
    const [entity, md] = await Promise.all([api.entity(run.run), scoped(run.run)]);
    const props = entity.aspects?.dataProcessInstanceProperties?.value || {};
    const row = (k, v) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, v));
    replace(detail, h("h3", {}, "Run ", shortName(run.run)),
      h("table", { class: "props run-metadata" }, h("tbody", {},
        row("program", run.program ? entityLink(run.program) : ""),
        row("started", formatTime(run.start)), row("ended", run.end ? formatTime(run.end) : "running"), row("status", run.status),
        row("type", props.type || ""),
        Object.entries(props.customProperties || {}).filter(([k]) => !SHOWN_RUN_FIELDS.has(k)).map(([k, v]) => row(k, v)),
        row("accesses", run.accesses.map((a) => h("div", {}, entityLink(a.dataset), ` ${a.access}`))),
        ["USER", "SYSTEM"].map((scope) => [
          md[scope].tags.length > 0 && row(`${scope} tags`, md[scope].tags.join(", ")),
          Object.entries(md[scope].properties).map(([k, v]) => row(`${scope} ${k}`, v))]))),
      h("p", {}, entityLink(run.run, "Open run page")));
  } catch (err) {
    replace(detail, errorBox(err));
  }
}
