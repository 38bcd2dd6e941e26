// A dataset's schema as a tree: DataHub's schemaMetadata with editableSchemaMetadata over it
// (edited descriptions, tags and terms), nested fields under their parent, a filter, type,
// key and nullable markers, and a "lineage" marker on the fields that have field lineage.

import { api, call } from "./api.js";
import { append, h, replace } from "./dom.js";
import { applyEdit, setFieldDescription, setFieldTag } from "./edits.js";
import { scoped } from "./metadata.js";
import { fieldUrn } from "./urns.js";

const TAG = /^urn:li:tag:/;
const TERM = /^urn:li:glossaryTerm:/;
const MAX_PROBED = 100; // fields whose lineage is asked one by one (the rest: from the dataset's aspects)

// "[version=2.0].[type=struct].address.[type=string].city" -> "address.city" (DataHub's v2 field paths).
export function simplePath(fieldPath) {
  return fieldPath.replace(/\[[^\]]*\]\.?/g, "").replace(/\.$/, "") || fieldPath;
}

export function fieldType(field) {
  return field.nativeDataType || Object.keys(field.type?.type || {})[0]?.split(".").pop() || "";
}

// The dataset's fields merged with their edits: [{fieldPath, path, name, depth, parent, type,
// childCount, nullable, key, description, tags, editedTags, terms}], in the schema's order.
export function schemaFields(entity) {
  const aspect = (name) => (entity.aspects?.[name] && !entity.aspects[name].deleted ? entity.aspects[name].value : null);
  const schema = aspect("schemaMetadata");
  const edits = new Map((aspect("editableSchemaMetadata")?.editableSchemaFieldInfo || []).map((i) => [i.fieldPath, i]));
  const keys = new Set(schema?.primaryKeys || []);
  const fields = (schema?.fields || []).map((f) => ({ fieldPath: f.fieldPath, path: simplePath(f.fieldPath), raw: f }));
  const byPath = new Set(fields.map((f) => f.path));
  const parentOf = (path) => {
    const cut = path.lastIndexOf(".");
    return cut > 0 && byPath.has(path.slice(0, cut)) ? path.slice(0, cut) : null;
  };
  const depth = (path) => (parentOf(path) ? depth(parentOf(path)) + 1 : 0);
  const children = new Map();
  for (const f of fields) children.set(parentOf(f.path), (children.get(parentOf(f.path)) || 0) + 1);
  return fields.map(({ fieldPath, path, raw }) => {
    const edit = edits.get(fieldPath) || {};
    const parent = parentOf(path);
    const names = (list, pattern, key) => (list || []).map((t) => t[key].replace(pattern, ""));
    return {
      fieldPath, path, parent, name: parent ? path.slice(parent.length + 1) : path, depth: depth(path),
      childCount: children.get(path) || 0,
      type: fieldType(raw), nullable: Boolean(raw.nullable), key: keys.has(fieldPath) || Boolean(raw.isPartOfKey),
      partitionKey: Boolean(raw.isPartitioningKey), description: edit.description || raw.description || "",
      edited: Boolean(edit.description), tags: names(raw.globalTags?.tags, TAG, "tag"),
      editedTags: names(edit.globalTags?.tags, TAG, "tag"),
      terms: [...names(raw.glossaryTerms?.terms, TERM, "urn"), ...names(edit.glossaryTerms?.terms, TERM, "urn")],
    };
  });
}

// The field paths with field lineage: the dataset's own fineGrainedLineages, CDAP's field
// lineage of its runs, then `/v1/lineage/fields` asked for the remaining fields.
async function fieldsWithLineage(urn, entity, fields) {
  const found = new Set();
  const prefix = `urn:li:schemaField:(${urn},`;
  for (const fine of entity.aspects?.upstreamLineage?.value?.fineGrainedLineages || []) {
    for (const f of fine.downstreams || []) if (f.startsWith(prefix)) found.add(f.slice(prefix.length, -1));
  }
  try {
    const cdap = await call("GET", `/v3/namespaces/default/datasets/${encodeURIComponent(urn)}/lineage/fields`,
      { query: { start: 0, end: "now" } });
    cdap.filter((f) => f.lineage).forEach((f) => found.add(f.name));
  } catch {
    // not a dataset CDAP's field lineage knows: the other sources still count
  }
  const rest = fields.filter((f) => !found.has(f.fieldPath)).slice(0, MAX_PROBED);
  await Promise.all(rest.map(async (f) => {
    const data = await api.fieldLineage(fieldUrn(urn, f.fieldPath), "both", 1).catch(() => ({ edges: [] }));
    if (data.edges.length) found.add(f.fieldPath);
  }));
  return found;
}

const chip = (text, cls, title) => h("span", { class: `tag ${cls}`, title }, text);

// The "Schema" card (or, with `only`, the card of that one field path). `ctx`: {urn (the dataset),
// entity, rights, actor, reload, link(urn, text), fieldHref(urn)}.
export function schemaSection(ctx, only = null) {
  const fields = schemaFields(ctx.entity).filter((f) => !only || f.fieldPath === only);
  if (!fields.length) return null;
  const status = h("p", { role: "status", class: "status" });
  const rows = fields.map((f) => fieldRow(ctx, f, status));
  const byPath = new Map(rows.map((r) => [r.field.path, r]));
  const collapsed = new Set();
  const hiddenByParent = (r) => {
    for (let p = r.field.parent; p; p = byPath.get(p)?.field.parent) if (collapsed.has(p)) return true;
    return false;
  };
  const filter = h("input", { type: "search", class: "field-filter", placeholder: "Filter fields", "aria-label": "Filter fields" });
  const count = h("span", { class: "hint" });
  function apply() {
    const text = filter.value.trim().toLowerCase();
    const matching = new Set();
    for (const r of rows) {
      const f = r.field;
      const hay = [f.path, f.description, f.type, ...f.tags, ...f.editedTags, ...f.terms, ...r.extraTags].join(" ").toLowerCase();
      if (!text || hay.includes(text)) {
        for (let p = f.path; p; p = byPath.get(p)?.field.parent) matching.add(p); // a match keeps its ancestors shown
      }
    }
    let shown = 0;
    for (const r of rows) {
      r.row.hidden = !matching.has(r.field.path) || (!text && hiddenByParent(r));
      if (!r.row.hidden) shown++;
    }
    count.textContent = text ? `${shown} of ${rows.length} fields` : "";
  }
  filter.addEventListener("input", apply);
  for (const r of rows) {
    r.toggle?.addEventListener("click", () => {
      const open = collapsed.has(r.field.path);
      if (open) collapsed.delete(r.field.path);
      else collapsed.add(r.field.path);
      r.toggle.setAttribute("aria-expanded", String(open));
      r.toggle.textContent = open ? "▾" : "▸";
      apply();
    });
    if (r.toggle) r.toggle.setAttribute("aria-expanded", "true");
  }
  const card = h("section", { class: "card schema-card", "aria-labelledby": "schema-title" });
  fieldsWithLineage(ctx.urn, ctx.entity, fields).then((found) => {
    rows.forEach((r) => found.has(r.field.fieldPath) && r.lineage.append(h("a", { class: "lineage-marker",
      href: ctx.fieldHref(r.urn), "aria-label": `Lineage of field ${r.field.path}` }, "has lineage")));
    card.dataset.lineage = "checked"; // every field's lineage is known now
  });
  // Field entities carry their own USER/SYSTEM tags: filled in as they arrive.
  rows.slice(0, MAX_PROBED).forEach(async (r) => {
    try {
      const md = await scoped(r.urn);
      r.extraTags.push(...md.USER.tags, ...md.SYSTEM.tags);
      r.tags.append(...md.USER.tags.map((t) => chip(t, "user", "USER")), ...md.SYSTEM.tags.map((t) => chip(t, "system", "SYSTEM")));
    } catch {
      // the row keeps the schema's tags
    }
  });
  return append(card, [
    h("div", { class: "card-head" }, h("h2", { id: "schema-title" }, only ? "Field in the dataset's schema" : `Schema (${fields.length} fields)`),
      !only && [filter, count]),
    status,
    h("div", { class: "scroll" }, h("table", { class: "schema" },
      h("thead", {}, h("tr", {}, ["Field", "Type", "Description", "Tags and terms", "Lineage"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((r) => r.row))))]);
}

function fieldRow(ctx, f, status) {
  const urn = fieldUrn(ctx.urn, f.fieldPath);
  const write = (request, what) => applyEdit(status, what, request, ctx.reload);
  const toggle = f.childCount ? h("button", { class: "toggle", "aria-label": `Expand or collapse ${f.path}` }, "▾") : null;
  const tags = h("span", { class: "tags" },
    f.tags.map((t) => chip(t, "user", "DataHub tag")),
    f.editedTags.map((t) => h("span", { class: "tag user", title: "DataHub tag" }, t,
      ctx.rights.write && h("button", { class: "remove", "aria-label": `Remove tag ${t} from ${f.path}`,
        onclick: () => write(() => setFieldTag(ctx.urn, ctx.entity, f.fieldPath, t, false, ctx.actor), `the tags of ${f.path}`) }, "×"))),
    f.terms.map((t) => chip(t, "term", "glossary term")));
  const description = h("td", { class: "field-description" }, f.description);
  const lineage = h("td", {});
  const markers = [f.key && h("span", { class: "marker key", title: "part of the key" }, "key"),
    f.partitionKey && h("span", { class: "marker key", title: "partitioning key" }, "partition"),
    f.nullable && h("span", { class: "marker", title: "may be null" }, "nullable")];
  const editor = ctx.rights.write && h("span", { class: "field-edit" },
    h("button", { class: "link", "aria-label": `Edit description of ${f.path}`, onclick: () => {
      const input = h("input", { value: f.description, "aria-label": `Description of ${f.path}` });
      replace(description, h("form", { class: "inline", onsubmit: (e) => {
        e.preventDefault();
        write(() => setFieldDescription(ctx.urn, ctx.entity, f.fieldPath, input.value.trim(), ctx.actor), `the description of ${f.path}`);
      } }, input, h("button", { type: "submit" }, "Save")));
      input.focus();
    } }, "edit"),
    h("button", { class: "link", "aria-label": `Add tag to ${f.path}`, onclick: (e) => {
      const input = h("input", { "aria-label": `New tag for ${f.path}`, required: true });
      e.target.replaceWith(h("form", { class: "inline", onsubmit: (ev) => {
        ev.preventDefault();
        write(() => setFieldTag(ctx.urn, ctx.entity, f.fieldPath, input.value.trim(), true, ctx.actor), `the tags of ${f.path}`);
      } }, input, h("button", { type: "submit" }, "Add")));
      input.focus();
    } }, "+ tag"));
  const row = h("tr", { "data-path": f.path, "aria-level": f.depth + 1 },
    h("th", { scope: "row", style: `padding-left:${8 + f.depth * 18}px` }, toggle, ctx.link(urn, f.name)),
    h("td", {}, h("code", {}, f.type), " ", markers),
    description, h("td", {}, tags, editor), lineage);
  return { field: f, urn, row, toggle, tags, lineage, extraTags: [] };
}
