// The entity page: USER and SYSTEM metadata apart (USER editable in place by those who may),
// the schema with each field's tags and lineage, run details, and every aspect's history.

import { api } from "./api.js";
import { diff } from "./diff.js";
import { errorBox, formatTime, h, replace } from "./dom.js";
import { globalTags, scoped, userMetadata } from "./metadata.js";
import { editRights } from "./permissions.js";
import { entityType, fieldDataset, fieldUrn, platform, shortName, typeLabel } from "./urns.js";

const href = (urn) => `#/entity/${encodeURIComponent(urn)}`;
export const entityLink = (urn, text) => h("a", { href: href(urn) }, text || shortName(urn));

function aspectValue(entity, name) {
  const stored = entity.aspects?.[name];
  return stored && !stored.deleted ? stored.value : null;
}

function displayName(entity) {
  for (const aspect of ["datasetProperties", "dataFlowInfo", "dataJobInfo", "dataProcessInstanceProperties",
    "containerProperties", "schemafieldInfo", "dataPlatformInfo"]) {
    const name = aspectValue(entity, aspect)?.name;
    if (name) return name;
  }
  return shortName(entity.urn);
}

function description(entity) {
  for (const aspect of ["editableDatasetProperties", "datasetProperties", "dataFlowInfo", "dataJobInfo", "containerProperties"]) {
    const text = aspectValue(entity, aspect)?.description;
    if (text) return text;
  }
  return null;
}

export async function entityPage(main, urn) {
  replace(main, h("p", { class: "hint" }, "Loading…"));
  const [entity, md, rights] = await Promise.all([api.entity(urn), scoped(urn), editRights(urn)]);
  const type = entity.entityType || entityType(urn);
  const dataset = fieldDataset(urn);
  const actions = h(
    "nav",
    { class: "actions", "aria-label": "Views" },
    type === "dataset" && h("a", { class: "button", href: `#/lineage/${encodeURIComponent(urn)}` }, "Lineage"),
    type === "schemaField" && h("a", { class: "button", href: `#/field/${encodeURIComponent(urn)}` }, "Field lineage"),
    dataset && h("a", { class: "button secondary", href: href(dataset) }, "Dataset"),
  );
  const text = description(entity);
  replace(
    main,
    h(
      "header",
      { class: "entity-head" },
      h("h1", {}, displayName(entity)),
      h("p", {}, h("span", { class: "badge" }, typeLabel(type)), platform(urn) && h("span", { class: "badge platform" }, platform(urn)),
        h("code", { class: "urn" }, urn)),
      text && h("p", { class: "description" }, text),
      actions,
    ),
    h("div", { class: "entity-layout" },
      h("div", { class: "entity-main" },
        metadataSections(urn, md, globalTags(entity), rights, () => entityPage(main, urn)),
        type === "dataset" && schemaSection(urn, entity),
        type === "dataProcessInstance" && runSection(urn, entity),
        type === "dataJob" && jobSection(entity),
        type === "dataFlow" && programsSection(urn)),
      h("div", { class: "entity-side" }, historySection(urn, entity), allMetadataSection(entity))),
  );
}

function metadataSections(urn, md, global, rights, reload) {
  const status = h("p", { role: "status", class: "status" });
  async function write(request) {
    try {
      await request;
      await reload();
    } catch (err) {
      replace(status, errorBox(err));
    }
  }
  const userTags = h("ul", { class: "chips", "aria-label": "USER tags" },
    md.USER.tags.map((tag) => h("li", { class: "tag user" }, tag,
      rights.remove && h("button", { class: "remove", "aria-label": `Remove tag ${tag}`, title: "Remove",
        onclick: () => write(userMetadata.removeTag(urn, tag)) }, "×"))),
    global.map((tag) => h("li", { class: "tag user", title: "globalTags" }, tag)));
  const tagInput = h("input", { name: "tag", placeholder: "new tag", "aria-label": "New USER tag", required: true });
  const keyInput = h("input", { name: "key", placeholder: "key", "aria-label": "New property key", required: true });
  const valueInput = h("input", { name: "value", placeholder: "value", "aria-label": "New property value", required: true });
  const user = h("section", { class: "card scope-user", "aria-labelledby": "user-title" },
    h("h2", { id: "user-title" }, "USER metadata ", h("span", { class: "hint" }, "business metadata people add")),
    h("h3", {}, "Tags"),
    md.USER.tags.length || global.length ? userTags : h("p", { class: "hint" }, "No tags"),
    rights.write && h("form", { class: "inline", onsubmit: (e) => {
      e.preventDefault();
      write(userMetadata.addTag(urn, tagInput.value.trim()));
    } }, tagInput, h("button", { type: "submit" }, "Add tag")),
    h("h3", {}, "Properties"),
    propertyTable(md.USER.properties, rights.remove && ((key) => write(userMetadata.removeProperty(urn, key)))),
    rights.write && h("form", { class: "inline", onsubmit: (e) => {
      e.preventDefault();
      write(userMetadata.setProperty(urn, keyInput.value.trim(), valueInput.value));
    } }, keyInput, valueInput, h("button", { type: "submit" }, "Set property")),
    !rights.write && h("p", { class: "hint read-only" }, "Read-only: your token may not add metadata to this entity."),
    status);
  const system = h("section", { class: "card scope-system", "aria-labelledby": "system-title" },
    h("h2", { id: "system-title" }, "SYSTEM metadata ", h("span", { class: "hint" }, "kept by the platform and programs")),
    h("h3", {}, "Tags"),
    md.SYSTEM.tags.length ? h("ul", { class: "chips", "aria-label": "SYSTEM tags" }, md.SYSTEM.tags.map((t) => h("li", { class: "tag system" }, t)))
      : h("p", { class: "hint" }, "No tags"),
    h("h3", {}, "Properties"),
    propertyTable(md.SYSTEM.properties, null));
  return [user, system];
}

function propertyTable(properties, remove) {
  const keys = Object.keys(properties).sort();
  if (!keys.length) return h("p", { class: "hint" }, "No properties");
  return h("table", { class: "props" },
    h("tbody", {}, keys.map((key) => h("tr", {},
      h("th", { scope: "row" }, key),
      h("td", {}, propertyValue(key, properties[key])),
      remove && h("td", { class: "narrow" }, h("button", { class: "remove", "aria-label": `Remove property ${key}`,
        onclick: () => remove(key) }, "×"))))));
}

function propertyValue(key, value) {
  if (key.endsWith("-time") && /^\d{12,}$/.test(value)) return `${formatTime(value)} (${value})`;
  if (value.length > 120) return h("details", {}, h("summary", {}, `${value.slice(0, 60)}…`), h("code", {}, value));
  return value;
}

function fieldType(field) {
  return field.nativeDataType || Object.keys(field.type?.type || {})[0]?.split(".").pop() || "";
}

function schemaSection(urn, entity) {
  const fields = aspectValue(entity, "schemaMetadata")?.fields || [];
  if (!fields.length) return null;
  const rows = fields.map((field) => {
    const tags = h("span", { class: "tags" }, (field.globalTags?.tags || []).map((t) => h("span", { class: "tag user" }, t.tag.replace("urn:li:tag:", ""))));
    const fUrn = fieldUrn(urn, field.fieldPath);
    return {
      fUrn, tags,
      row: h("tr", {},
        h("th", { scope: "row" }, entityLink(fUrn, field.fieldPath)),
        h("td", {}, fieldType(field)),
        h("td", {}, field.description || ""),
        h("td", {}, tags),
        h("td", {}, h("a", { href: `#/field/${encodeURIComponent(fUrn)}`, "aria-label": `Lineage of field ${field.fieldPath}` }, "lineage"))),
    };
  });
  // Field entities carry their own USER/SYSTEM tags: filled in as they arrive.
  rows.slice(0, 100).forEach(async ({ fUrn, tags }) => {
    try {
      const md = await scoped(fUrn);
      tags.append(...md.USER.tags.map((t) => h("span", { class: "tag user" }, t)), ...md.SYSTEM.tags.map((t) => h("span", { class: "tag system" }, t)));
    } catch {
      // the row keeps the schema's tags
    }
  });
  return h("section", { class: "card" }, h("h2", {}, `Schema (${fields.length} fields)`),
    h("div", { class: "scroll" }, h("table", { class: "schema" },
      h("thead", {}, h("tr", {}, ["Field", "Type", "Description", "Tags", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((r) => r.row)))));
}

function urnList(title, urns) {
  return urns?.length ? [h("h3", {}, title), h("ul", {}, urns.map((u) => h("li", {}, entityLink(u))))] : [];
}

function runSection(urn, entity) {
  const props = aspectValue(entity, "dataProcessInstanceProperties") || {};
  const parent = aspectValue(entity, "dataProcessInstanceRelationships")?.parentTemplate;
  const events = h("tbody", {});
  api.timeseries(urn, "dataProcessInstanceRunEvent").then((data) => replace(events, data.points.map((p) =>
    h("tr", {}, h("td", {}, formatTime(p.timestampMillis)), h("td", {}, p.status), h("td", {}, p.result?.type || ""))))).catch(() => {});
  return h("section", { class: "card" }, h("h2", {}, "Run"),
    h("table", { class: "props" }, h("tbody", {},
      h("tr", {}, h("th", { scope: "row" }, "program"), h("td", {}, parent ? entityLink(parent) : "")),
      h("tr", {}, h("th", { scope: "row" }, "type"), h("td", {}, props.type || "")),
      h("tr", {}, h("th", { scope: "row" }, "created"), h("td", {}, formatTime(props.created?.time))),
      Object.entries(props.customProperties || {}).filter(([k]) => k !== "program")  // CDAP's copy of the row above
        .map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, v))))),
    h("h3", {}, "Run events"),
    h("table", { class: "props" }, h("thead", {}, h("tr", {}, h("th", {}, "time"), h("th", {}, "status"), h("th", {}, "result"))), events),
    urnList("Inputs", aspectValue(entity, "dataProcessInstanceInput")?.inputs),
    urnList("Outputs", aspectValue(entity, "dataProcessInstanceOutput")?.outputs));
}

function jobSection(entity) {
  const io = aspectValue(entity, "dataJobInputOutput") || {};
  const info = aspectValue(entity, "dataJobInfo") || {};
  return h("section", { class: "card" }, h("h2", {}, "Program"),
    h("p", {}, "Type: ", typeof info.type === "object" ? Object.values(info.type)[0] : info.type || ""),
    urnList("Reads", io.inputDatasets), urnList("Writes", io.outputDatasets));
}

function programsSection(urn) {
  const list = h("ul", {}, h("li", { class: "hint" }, "Loading…"));
  api.search(`dataFlow:"${urn}"`, { types: "dataJob", count: 100, sort: "name" })
    .then((data) => replace(list, data.results.length ? data.results.map((hit) => h("li", {}, entityLink(hit.urn, hit.name),
      hit.description && h("span", { class: "hint" }, ` ${hit.description}`))) : h("li", { class: "hint" }, "No programs")))
    .catch((err) => replace(list, errorBox(err)));
  return h("section", { class: "card" }, h("h2", {}, "Programs"), list);
}

function historySection(urn, entity) {
  const aspects = Object.entries(entity.aspects || {}).filter(([, a]) => a.version > 1).map(([name, a]) => [name, a.version]);
  const names = Object.keys(entity.aspects || {}).sort();
  const select = h("select", { id: "history-aspect", "aria-label": "Aspect" }, names.map((n) =>
    h("option", { value: n }, `${n} (v${entity.aspects[n].version})`)));
  const body = h("div", { class: "history" });
  async function show() {
    const data = await api.versions(urn, select.value);
    const versions = data.versions;
    const older = h("select", { id: "history-from", "aria-label": "From version" }, versions.map((v) => h("option", { value: v.version }, `v${v.version}`)));
    const newer = h("select", { id: "history-to", "aria-label": "To version" }, versions.map((v) => h("option", { value: v.version }, `v${v.version}`)));
    older.value = String(versions[Math.max(0, versions.length - 2)].version);
    newer.value = String(versions[versions.length - 1].version);
    const out = h("div", { class: "diff" });
    const render = () => {
      const a = versions.find((v) => String(v.version) === older.value);
      const b = versions.find((v) => String(v.version) === newer.value);
      const changes = diff(a.deleted ? undefined : a.value, b.deleted ? undefined : b.value);
      replace(out, changes.length ? h("ul", {}, changes.map((c) => h("li", { class: `diff-${c.kind}` },
        h("code", {}, c.path), ` ${c.kind}`,
        c.before !== undefined && h("span", { class: "before" }, ` ${JSON.stringify(c.before)}`),
        c.after !== undefined && h("span", { class: "after" }, ` → ${JSON.stringify(c.after)}`)))) : h("p", { class: "hint" }, "No difference"));
    };
    older.addEventListener("change", render);
    newer.addEventListener("change", render);
    replace(body,
      h("ol", { class: "versions" }, versions.map((v) => h("li", {}, `v${v.version} `,
        formatTime(v.systemMetadata?.aspectModified?.time ?? v.systemMetadata?.lastObserved), " ",
        v.systemMetadata?.aspectModified?.actor || "", v.deleted ? " (deleted)" : ""))),
      versions.length > 1 ? [h("p", { class: "inline" }, "Diff ", older, " → ", newer), out]
        : h("p", { class: "hint" }, "One version: nothing to compare yet."));
    if (versions.length > 1) render();
  }
  select.addEventListener("change", () => show().catch((err) => replace(body, errorBox(err))));
  const changed = aspects.sort((a, b) => b[1] - a[1])[0];
  select.value = changed ? changed[0] : names.includes("userScopeMetadata") ? "userScopeMetadata" : names[0];
  show().catch((err) => replace(body, errorBox(err)));
  return h("section", { class: "card", "aria-labelledby": "history-title" }, h("h2", { id: "history-title" }, "Version history"), select, body);
}

function allMetadataSection(entity) {
  return h("section", { class: "card" }, h("details", {}, h("summary", {}, `All metadata (${Object.keys(entity.aspects || {}).length} aspects)`),
    Object.entries(entity.aspects || {}).sort().map(([name, a]) => h("div", {}, h("h3", {}, `${name} v${a.version}`),
      h("pre", {}, JSON.stringify(a.value, null, 2))))));
}
