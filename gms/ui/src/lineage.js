// The lineage view: a dataset's lineage for a time window and depth; a program lists its runs
// in the window, a run shows its metadata.

import { api } from "./api.js";
import { errorBox, formatTime, h, replace } from "./dom.js";
import { entityLink } from "./entity.js";
import { drawGraph } from "./graph.js";
import { datasetLineage, inWindow } from "./lineage_data.js";
import { scoped } from "./metadata.js";
import { entityType, shortName, typeLabel } from "./urns.js";

// <input type="datetime-local"> values are read and shown as UTC.
const toInput = (ms) => new Date(ms).toISOString().slice(0, 16);
const fromInput = (text) => (text ? Date.parse(`${text}:00Z`) : null);

export async function lineagePage(main, urn, query) {
  const levels = Math.max(1, Math.min(10, Number(query.get("levels") || 3)));
  const startMs = query.get("start") ? Number(query.get("start")) * 1000 : 0;
  const endMs = query.get("end") ? Number(query.get("end")) * 1000 : Date.now();
  const start = h("input", { type: "datetime-local", id: "window-start", value: startMs ? toInput(startMs) : "" });
  const end = h("input", { type: "datetime-local", id: "window-end", value: query.get("end") ? toInput(endMs) : "" });
  const depth = h("input", { type: "number", id: "levels", min: 1, max: 10, value: levels });
  const canvas = h("div", { class: "graph", id: "lineage-graph", role: "img", "aria-label": `Lineage graph of ${shortName(urn)}` });
  const panel = h("aside", { class: "panel card", "aria-live": "polite" }, h("p", { class: "hint" }, "Click a program to list its runs in the window."));
  const table = h("div", { class: "scroll" });
  replace(main,
    h("header", { class: "entity-head" }, h("h1", {}, "Lineage of ", entityLink(urn, shortName(urn))),
      h("form", { class: "inline window", onsubmit: (e) => {
        e.preventDefault();
        const params = new URLSearchParams({ levels: depth.value });
        if (start.value) params.set("start", String(Math.floor(fromInput(start.value) / 1000)));
        if (end.value) params.set("end", String(Math.floor(fromInput(end.value) / 1000)));
        location.hash = `#/lineage/${encodeURIComponent(urn)}?${params}`;
      } },
      h("label", { for: "window-start" }, "From (UTC)"), start,
      h("label", { for: "window-end" }, "To (UTC)"), end,
      h("label", { for: "levels" }, "Levels"), depth,
      h("button", { type: "submit" }, "Show"))),
    h("div", { class: "lineage-layout" }, canvas, panel),
    h("section", { class: "card" }, h("h2", {}, "Relations"), table));

  const { relations, runs } = await datasetLineage(urn, startMs, endMs, levels);
  const nodes = new Map([[urn, { id: urn, label: shortName(urn), kind: "dataset", root: true }]]);
  for (const r of relations) {
    nodes.set(r.data, nodes.get(r.data) || { id: r.data, label: shortName(r.data), kind: "dataset", root: r.data === urn });
    nodes.set(r.program, { id: r.program, label: shortName(r.program), kind: "program" });
  }
  const edges = relations.map((r) => ({
    source: r.access === "read" ? r.data : r.program,
    target: r.access === "read" ? r.program : r.data,
    label: r.runs.length ? `${r.access} · ${r.runs.length} run${r.runs.length > 1 ? "s" : ""}` : r.access,
  }));
  if (!relations.length) canvas.append(h("p", { class: "hint empty" }, "No lineage in this window."));
  drawGraph(canvas, [...nodes.values()], edges, (node) => {
    if (node.kind === "program") showProgram(panel, node.id, relations, runs, startMs, endMs);
    else showDataset(panel, node.id, urn);
  });
  replace(table, h("table", { class: "relations" },
    h("thead", {}, h("tr", {}, ["Dataset", "Access", "Program", "Runs"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, relations.map((r) => h("tr", {}, h("td", {}, entityLink(r.data)), h("td", {}, r.access),
      h("td", {}, h("button", { class: "link", onclick: () => showProgram(panel, r.program, relations, runs, startMs, endMs) }, shortName(r.program))),
      h("td", {}, r.runs.length))))));
}

function showDataset(panel, dataset, root) {
  replace(panel, h("h2", {}, shortName(dataset)), h("p", {}, entityLink(dataset, "Open dataset")),
    dataset !== root && h("p", {}, h("a", { href: `#/lineage/${encodeURIComponent(dataset)}` }, "Lineage of this dataset")));
}

function showProgram(panel, program, relations, runs, startMs, endMs) {
  const ids = [...new Set(relations.filter((r) => r.program === program).flatMap((r) => r.runs))];
  const list = ids.map((id) => runs[id]).filter((run) => inWindow(run, startMs, endMs)).sort((a, b) => b.start - a.start);
  const detail = h("div", { class: "run-detail" });
  replace(panel,
    h("h2", {}, "Program ", shortName(program)), h("p", {}, entityLink(program, "Open program")),
    h("h3", {}, `Runs in the window (${list.length})`),
    list.length ? h("ul", { class: "runs" }, list.map((run) => h("li", {},
      h("button", { class: "run", onclick: () => showRun(detail, run) }, shortName(run.urn)),
      ` ${formatTime(run.start)} → ${run.end ? formatTime(run.end) : "running"} · ${run.status}`)))
      : h("p", { class: "hint" }, "No runs recorded in the window."),
    detail);
}

async function showRun(detail, run) {
  replace(detail, h("p", { class: "hint" }, "Loading…"));
  try {
    const [entity, md] = await Promise.all([api.entity(run.urn), scoped(run.urn)]);
    const props = entity.aspects?.dataProcessInstanceProperties?.value || {};
    const io = (aspect, key) => entity.aspects?.[aspect]?.value?.[key] || [];
    const row = (k, v) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, v));
    replace(detail, h("h3", {}, "Run ", shortName(run.urn)),
      h("table", { class: "props run-metadata" }, h("tbody", {},
        row("program", run.program ? entityLink(run.program) : ""),
        row("started", formatTime(run.start)), row("ended", run.end ? formatTime(run.end) : "running"), row("status", run.status),
        row("type", props.type || ""),
        Object.entries(props.customProperties || {}).map(([k, v]) => row(k, v)),
        row("reads", io("dataProcessInstanceInput", "inputs").map((u) => [entityLink(u), " "])),
        row("writes", io("dataProcessInstanceOutput", "outputs").map((u) => [entityLink(u), " "])),
        ["USER", "SYSTEM"].map((scope) => [
          md[scope].tags.length > 0 && row(`${scope} tags`, md[scope].tags.join(", ")),
          Object.entries(md[scope].properties).map(([k, v]) => row(`${scope} ${k}`, v))]))),
      h("p", {}, entityLink(run.urn, `Open ${typeLabel(entityType(run.urn))} page`)));
  } catch (err) {
    replace(detail, errorBox(err));
  }
}
