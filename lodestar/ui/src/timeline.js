// An entity's timeline: every version of every aspect, newest first, each opening to what it
// changed from the version before; and for a dataset, a diff of two schema versions by field.

import { api } from "./api.js";
import { diff, schemaDiff } from "./diff.js";
import { errorBox, formatTime, h, replace } from "./dom.js";

const when = (v) => v.systemMetadata?.aspectModified?.time ?? v.systemMetadata?.lastObserved ?? 0;
const who = (v) => (v.systemMetadata?.aspectModified?.actor || "").replace(/^urn:li:corpuser:/, "");

function changeList(changes) {
  if (!changes.length) return h("p", { class: "hint" }, "No difference");
  return h("ul", {}, changes.map((c) => h("li", { class: `diff-${c.kind}` },
    h("code", {}, c.path), ` ${c.kind}`,
    c.before !== undefined && h("span", { class: "before" }, ` ${JSON.stringify(c.before)}`),
    c.after !== undefined && h("span", { class: "after" }, ` → ${JSON.stringify(c.after)}`))));
}

// [{aspect, version, time, actor, deleted, changes}] of all aspects, newest first.
async function entries(urn, aspects) {
  const all = await Promise.all(aspects.map(async (aspect) => {
    const { versions } = await api.versions(urn, aspect);
    return versions.map((v, i) => {
      const before = i > 0 && !versions[i - 1].deleted ? versions[i - 1].value : undefined;
      return { aspect, version: v.version, time: when(v), actor: who(v), deleted: v.deleted, first: i === 0,
        value: v.value, changes: diff(before, v.deleted ? undefined : v.value) };
    });
  }));
  return all.flat().sort((a, b) => b.time - a.time || b.version - a.version || a.aspect.localeCompare(b.aspect));
}

function entryItem(e, open) {
  const what = e.deleted ? "deleted" : e.first ? "created" : `${e.changes.length} change${e.changes.length === 1 ? "" : "s"}`;
  return h("li", { class: "timeline-entry", dataset: { aspect: e.aspect } }, h("details", { open },
    h("summary", {}, h("span", { class: "when" }, formatTime(e.time)), " ", h("b", {}, e.aspect), ` v${e.version} · ${what}`,
      e.actor && h("span", { class: "hint" }, ` by ${e.actor}`)),
    h("div", { class: "diff" }, e.first && !e.deleted ? h("pre", {}, JSON.stringify(e.value, null, 2)) : changeList(e.changes))));
}

// The "Timeline" card: an aspect filter over the entries; the newest change (not a creation) opens.
export function timelineSection(urn, entity) {
  const aspects = Object.keys(entity.aspects || {}).sort();
  const select = h("select", { id: "timeline-aspect", "aria-label": "Aspect" },
    h("option", { value: "" }, `All aspects (${aspects.length})`), aspects.map((a) => h("option", { value: a }, a)));
  const list = h("ol", { class: "timeline" }, h("li", { class: "hint" }, "Loading…"));
  entries(urn, aspects).then((found) => {
    const newest = found.find((e) => !e.first);
    const render = () => replace(list, found.filter((e) => !select.value || e.aspect === select.value)
      .map((e) => entryItem(e, e === newest && (!select.value || e.aspect === select.value))));
    select.addEventListener("change", render);
    render();
  }).catch((err) => replace(list, errorBox(err)));
  return h("section", { class: "card", "aria-labelledby": "timeline-title" },
    h("div", { class: "card-head" }, h("h2", { id: "timeline-title" }, "Timeline"), select), list);
}

// The "Schema versions" card of a dataset whose schema has more than one version.
export function schemaVersionsSection(urn, entity) {
  const stored = entity.aspects?.schemaMetadata;
  if (!stored || stored.version < 2) return null;
  const body = h("div", { class: "schema-diff" }, h("p", { class: "hint" }, "Loading…"));
  api.versions(urn, "schemaMetadata").then(({ versions }) => {
    const options = () => versions.map((v) => h("option", { value: v.version }, `v${v.version} · ${formatTime(when(v))}`));
    const from = h("select", { id: "schema-from", "aria-label": "From schema version" }, options());
    const to = h("select", { id: "schema-to", "aria-label": "To schema version" }, options());
    from.value = String(versions[versions.length - 2].version);
    to.value = String(versions[versions.length - 1].version);
    const out = h("div", {});
    const render = () => {
      const value = (select) => versions.find((v) => String(v.version) === select.value);
      const [a, b] = [value(from), value(to)];
      const changes = schemaDiff(a.deleted ? null : a.value, b.deleted ? null : b.value);
      replace(out, changes.length ? h("table", { class: "schema-changes" },
        h("thead", {}, h("tr", {}, ["Field", "Change", "Before", "After"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, changes.map((c) => h("tr", { class: `diff-${c.kind.split(" ")[0]}` }, h("td", {}, h("code", {}, c.field)),
          h("td", {}, c.kind), h("td", {}, c.before === undefined ? "" : String(c.before)),
          h("td", {}, c.after === undefined ? "" : String(c.after))))))
        : h("p", { class: "hint" }, "No difference"));
    };
    from.addEventListener("change", render);
    to.addEventListener("change", render);
    replace(body, h("p", { class: "inline" }, "Compare ", from, " → ", to), out);
    render();
  }).catch((err) => replace(body, errorBox(err)));
  return h("section", { class: "card", "aria-labelledby": "schema-versions-title" },
    h("h2", { id: "schema-versions-title" }, `Schema versions (${stored.version})`), body);
}
