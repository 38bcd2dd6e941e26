// The lineage view: a dataset's lineage for a time window and depth; a program lists its runs
// in the window, a run shows its metadata.

import { api } from "./api.js";
import { errorBox, formatTime, h, replace } from "./dom.js";
import { entityLink } from "./entity.js";
import { drawGraph } from "./graph.js";
import { datasetLineage, runInfo } from "./lineage_data.js";
import { scoped } from "./metadata.js";
import { windowForm, windowOf } from "./timewindow.js";
import { shortName } from "./urns.js";

// A run's custom properties that the rows above already show (CDAP writes them there too).
const SHOWN_RUN_FIELDS = new Set(["program", "status"]);

export async function lineagePage(main, urn, query) {
  const levels = Math.max(1, Math.min(10, Number(query.get("levels") || 3)));
  const { start, end } = windowOf(query);
  const depth = h("input", { type: "number", id: "levels", name: "levels", min: 1, max: 10, value: levels, title: "Levels" });
  const canvas = h("div", { class: "graph", id: "lineage-graph", role: "img", "aria-label": `Lineage graph of ${shortName(urn)}` });
  const panel = h("aside", { class: "panel card", "aria-live": "polite" }, h("p", { class: "hint" }, "Click a program to list its runs in the window."));
  const table = h("div", { class: "scroll" });
  replace(main,
    h("header", { class: "entity-head" }, h("h1", {}, "Lineage of ", entityLink(urn, shortName(urn))),
      windowForm(query, (params) => (location.hash = `#/lineage/${encodeURIComponent(urn)}?${params}`), depth)),
    h("div", { class: "lineage-layout" }, canvas, panel),
    h("section", { class: "card" }, h("h2", {}, "Relations"), table));

  const { relations } = await datasetLineage(urn, start, end, levels);
  const nodes = new Map([[urn, { id: urn, label: shortName(urn), kind: "dataset", root: true }]]);
  for (const r of relations) {
    nodes.set(r.data, nodes.get(r.data) || { id: r.data, label: shortName(r.data), kind: "dataset" });
    nodes.set(r.program, { id: r.program, label: shortName(r.program), kind: "program" });
  }
  const edges = relations.map((r) => ({
    source: r.access === "write" ? r.program : r.data,
    target: r.access === "write" ? r.data : r.program,
    label: `${r.access} · ${r.runs.length} run${r.runs.length === 1 ? "" : "s"}`,
  }));
  if (!relations.length) canvas.append(h("p", { class: "hint empty" }, "No lineage in this window."));
  const program = (id, focus = false) => showProgram(panel, id, relations, focus);
  drawGraph(canvas, [...nodes.values()], edges, (node) => (node.kind === "program" ? program(node.id) : showDataset(panel, node.id, urn)));
  replace(table, h("table", { class: "relations" },
    h("thead", {}, h("tr", {}, ["Dataset", "Access", "Program", "Runs"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, relations.map((r) => h("tr", {}, h("td", {}, entityLink(r.data)), h("td", {}, r.access),
      // by keyboard: Tab to a program here, Enter lists its runs and moves the focus to the first one
      h("td", {}, h("button", { class: "link", onclick: () => program(r.program, true) }, shortName(r.program))),
      h("td", {}, r.runs.length))))));
}

function showDataset(panel, dataset, root) {
  replace(panel, h("h2", {}, shortName(dataset)), h("p", {}, entityLink(dataset, "Open dataset")),
    dataset !== root && h("p", {}, h("a", { href: `#/lineage/${encodeURIComponent(dataset)}` }, "Lineage of this dataset")));
}

async function showProgram(panel, program, relations, focus) {
  const ids = [...new Set(relations.filter((r) => r.program === program).flatMap((r) => r.runs))];
  const list = h("ul", { class: "runs" });
  const detail = h("div", { class: "run-detail" });
  replace(panel, h("h2", {}, "Program ", shortName(program)), h("p", {}, entityLink(program, "Open program")),
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
