// The entity page: a header in DataHub's terms (platform, type, breadcrumbs, owners, domain,
// glossary terms, tags, deprecation, links), then for a dataset its schema first, the lineage
// summary, USER and SYSTEM metadata (CDAP's scopes), a program's runs, a run's details, and the
// entity's timeline. A field without an entity of its own is shown from its dataset's schema.

import { api, ApiError } from "./api.js";
import { errorBox, externalLink, formatTime, h, replace } from "./dom.js";
import { applyEdit, setDescription, setOwner, setTag, setTerm } from "./edits.js";
import { scoped, userMetadata } from "./metadata.js";
import { privileges } from "./permissions.js";
import { platformIcon } from "./platforms.js";
import { relatedSection } from "./related.js";
import { runsSection } from "./runs.js";
import { schemaFields, schemaSection } from "./schema.js";
import { schemaVersionsSection, timelineSection } from "./timeline.js";
import { invalidUrnPage, notFoundPage } from "./problem.js";
import { entityType, fieldDataset, fieldUrn, isUrn, parts, platform, shortName, typeLabel } from "./urns.js";

const href = (urn) => `#/entity/${encodeURIComponent(urn)}`;
export const entityLink = (urn, text) => h("a", { href: href(urn) }, text || shortName(urn));
const lineageHref = (urn) => `#/lineage/${encodeURIComponent(urn)}`;
const fieldHref = (urn) => `#/field/${encodeURIComponent(urn)}`;
const OWNER_TYPES = ["TECHNICAL_OWNER", "BUSINESS_OWNER", "DATA_STEWARD", "NONE"];

function aspectValue(entity, name) {
  const stored = entity.aspects?.[name];
  return stored && !stored.deleted ? stored.value : null;
}

function displayName(entity) {
  for (const aspect of ["editableDatasetProperties", "datasetProperties", "dataFlowInfo", "dataJobInfo", "dataProcessInstanceProperties",
    "containerProperties", "schemafieldInfo", "dataPlatformInfo", "glossaryTermInfo", "tagProperties", "domainProperties"]) {
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

// The entity (a field without one of its own: an empty entity) or null when there is none.
async function load(urn) {
  try {
    return await api.entity(urn);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    return entityType(urn) === "schemaField" ? { urn, entityType: "schemaField", aspects: {} } : null;
  }
}

export async function entityPage(main, urn) {
  if (!isUrn(urn)) return invalidUrnPage(main, urn);
  replace(main, h("p", { class: "hint" }, "Loading…"));
  const dataset = fieldDataset(urn);
  const [entity, md, held, parent] = await Promise.all([load(urn), scoped(urn).catch(() => null), privileges(urn),
    dataset ? load(dataset) : null]);
  const field = dataset && parent && schemaFields(parent).find((f) => fieldUrn(dataset, f.fieldPath) === urn);
  if (!entity || (dataset && !field && !Object.keys(entity.aspects).length)) return notFoundPage(main, urn);
  const rights = { write: held.privileges.includes("WRITE"), remove: held.privileges.some((p) => p === "WRITE" || p === "ADMIN") };
  const ctx = { urn, entity, rights, actor: held.principal, reload: () => entityPage(main, urn), link: entityLink, fieldHref };
  const type = entity.entityType || entityType(urn);
  replace(main,
    header(ctx, type, dataset, field),
    h("div", { class: "entity-layout" },
      h("div", { class: "entity-main" },
        field && schemaSection({ ...ctx, urn: dataset, entity: parent }, field.fieldPath),
        type === "dataset" && schemaSection(ctx),
        type === "dataset" && relatedSection(urn, entityLink, lineageHref(urn)),
        type === "dataJob" && jobSection(ctx),
        type === "dataProcessInstance" && runSection(urn, entity),
        type === "dataFlow" && programsSection(urn),
        md && metadataSections(ctx, md)),
      h("div", { class: "entity-side" }, type === "dataset" && schemaVersionsSection(urn, entity),
        Object.keys(entity.aspects).length > 0 && timelineSection(urn, entity), allMetadataSection(entity))));
}

function breadcrumbs(urn, type, entity) {
  const crumbs = h("ol", { class: "breadcrumbs", "aria-label": "Breadcrumbs" });
  const p = platform(urn);
  const add = (...node) => crumbs.append(h("li", {}, ...node));
  if (p) add(platformIcon(p), h("a", { href: `#/search?q=${encodeURIComponent(`platform:${p}`)}` }, p));
  const tail = [];
  if (type === "schemaField") tail.push(entityLink(fieldDataset(urn)));
  if (type === "dataJob") tail.push(entityLink(parts(urn)[0]));
  const parent = aspectValue(entity, "dataProcessInstanceRelationships")?.parentTemplate;
  if (type === "dataProcessInstance" && parent) tail.push(entityLink(parent));
  const container = aspectValue(entity, "container")?.container;
  if (container) {
    // the container chain, outermost first, filled in as each container is read
    const chain = h("li", { class: "containers" });
    crumbs.append(chain);
    (async () => {
      const found = [];
      for (let at = container; at && found.length < 6; ) {
        const c = await api.entity(at).catch(() => null);
        found.unshift(entityLink(at, c ? displayName(c) : shortName(at)));
        at = c && aspectValue(c, "container")?.container;
      }
      chain.replaceWith(...found.map((link) => h("li", {}, h("span", { class: "hint" }, "namespace "), link)));
    })();
  } else if (type === "dataset") {
    // no container: the namespace is the name's prefix (db.schema.table, /dir/file)
    const name = parts(urn)[1] || "";
    const segments = name.includes("/") ? name.split("/").filter(Boolean) : name.split(".");
    segments.slice(0, -1).forEach((s) => add(h("span", {}, s)));
  }
  tail.forEach((link) => add(link));
  return crumbs;
}

function chipList(label, items, cls, remove) {
  return h("ul", { class: "chips", "aria-label": label }, items.map(([text, key]) => h("li", { class: `tag ${cls}` }, text,
    remove && h("button", { class: "remove", "aria-label": `Remove ${label.replace(/s$/, "")} ${text}`, title: "Remove",
      onclick: () => remove(key ?? text) }, "×"))));
}

// An inline "add" form: one text input (and an optional select), submitted as one edit.
function addForm(label, onAdd, choices) {
  const input = h("input", { "aria-label": label, placeholder: label.toLowerCase(), required: true });
  const select = choices && h("select", { "aria-label": `${label} type` }, choices.map((c) => h("option", { value: c }, c)));
  return h("form", { class: "inline add", onsubmit: (e) => {
    e.preventDefault();
    onAdd(input.value.trim(), select?.value);
  } }, input, select, h("button", { type: "submit", class: "secondary" }, "Add"));
}

function header(ctx, type, dataset, field) {
  const { urn, entity, rights } = ctx;
  const status = h("div", { role: "status", class: "status" });
  const edit = (what, request) => (...args) => applyEdit(status, what, () => request(...args), ctx.reload);
  const tags = (aspectValue(entity, "globalTags")?.tags || []).map((t) => [t.tag.replace(/^urn:li:tag:/, ""), t.tag]);
  const terms = (aspectValue(entity, "glossaryTerms")?.terms || []).map((t) => [t.urn.replace(/^urn:li:glossaryTerm:/, ""), t.urn]);
  const owners = (aspectValue(entity, "ownership")?.owners || []).map((o) => [
    `${o.owner.replace(/^urn:li:corp(user|Group):/, "")}${o.type && o.type !== "NONE" ? ` · ${o.type.toLowerCase().replace(/_/g, " ")}` : ""}`, o.owner]);
  const domains = aspectValue(entity, "domains")?.domains || [];
  const links = aspectValue(entity, "institutionalMemory")?.elements || [];
  const deprecation = aspectValue(entity, "deprecation");
  const text = field ? field.description : description(entity);
  const canDescribe = rights.write && type === "dataset";
  const descriptionBlock = h("div", { class: "description-block" }, text ? h("p", { class: "description" }, text) : h("p", { class: "hint" }, "No description"),
    canDescribe && h("button", { class: "link", onclick: () => {
      const area = h("textarea", { "aria-label": "Description", rows: 3 }, text || "");
      replace(descriptionBlock, h("form", { class: "edit-description", onsubmit: (e) => {
        e.preventDefault();
        edit("the description", () => setDescription(urn, entity, area.value.trim(), ctx.actor))();
      } }, area, h("div", { class: "inline" }, h("button", { type: "submit" }, "Save description"),
        h("button", { type: "button", class: "secondary", onclick: () => ctx.reload() }, "Cancel"))));
      area.focus();
    } }, "Edit description"));
  const taggable = type !== "schemaField"; // a field's tags are edited in its dataset's schema (below)
  const facts = h("dl", { class: "facts" },
    h("dt", {}, "Owners"), h("dd", {}, owners.length ? chipList("Owners", owners, "owner",
      rights.remove && edit("the owners", (key) => setOwner(urn, entity, key, null, false, ctx.actor))) : h("span", { class: "hint" }, "None"),
    rights.write && addForm("Owner", edit("the owners", (name, ownerType) => setOwner(urn, entity, name, ownerType, true, ctx.actor)), OWNER_TYPES)),
    h("dt", {}, "Domain"), h("dd", {}, domains.length ? domains.map((d) => entityLink(d, shortName(d))) : h("span", { class: "hint" }, "None")),
    h("dt", {}, "Glossary terms"), h("dd", {}, terms.length ? chipList("Glossary terms", terms, "term",
      rights.remove && edit("the glossary terms", (key) => setTerm(urn, entity, key, false, ctx.actor))) : h("span", { class: "hint" }, "None"),
    rights.write && addForm("Glossary term", edit("the glossary terms", (name) => setTerm(urn, entity, name, true, ctx.actor)))),
    taggable && [h("dt", {}, "Tags"), h("dd", {}, tags.length ? chipList("DataHub tags", tags, "user",
      rights.remove && edit("the tags", (key) => setTag(urn, entity, key, false))) : h("span", { class: "hint" }, "None"),
    rights.write && addForm("DataHub tag", edit("the tags", (name) => setTag(urn, entity, name, true))))],
    links.length > 0 && [h("dt", {}, "Links"), h("dd", {}, h("ul", { class: "links" }, links.map((l) =>
      h("li", {}, externalLink(l.url, l.description)))))]);
  return h("header", { class: "entity-head" },
    breadcrumbs(urn, type, entity),
    h("div", { class: "title" }, platformIcon(platform(urn)), h("h1", {}, field ? field.path : displayName(entity)),
      h("span", { class: "badge" }, typeLabel(type)), field && h("code", { class: "badge type" }, field.type)),
    h("nav", { class: "actions", "aria-label": "Views" },
      type === "dataset" && h("a", { class: "button", href: lineageHref(urn) }, "Lineage"),
      type === "dataJob" && h("a", { class: "button", href: lineageHref(urn) }, "Lineage"),
      type === "schemaField" && h("a", { class: "button", href: fieldHref(urn) }, "Field lineage"),
      dataset && h("a", { class: "button secondary", href: href(dataset) }, "Dataset")),
    deprecation?.deprecated && h("p", { class: "deprecated", role: "note" }, h("b", {}, "Deprecated"),
      deprecation.note ? `: ${deprecation.note}` : "",
      deprecation.decommissionTime ? ` (decommissioned ${formatTime(deprecation.decommissionTime)})` : "",
      deprecation.replacement && [" — use ", entityLink(deprecation.replacement)]),
    descriptionBlock,
    h("code", { class: "urn" }, urn),
    facts, status,
    !rights.write && h("p", { class: "hint read-only" }, "Read-only: your token may not change this entity."));
}

function metadataSections(ctx, md) {
  const { urn, rights } = ctx;
  const status = h("p", { role: "status", class: "status" });
  const write = (request, what) => applyEdit(status, what, request, ctx.reload);
  const global = (aspectValue(ctx.entity, "globalTags")?.tags || []).map((t) => t.tag.replace(/^urn:li:tag:/, ""));
  const userTags = h("ul", { class: "chips", "aria-label": "USER tags" },
    md.USER.tags.map((tag) => h("li", { class: "tag user" }, tag,
      rights.remove && h("button", { class: "remove", "aria-label": `Remove tag ${tag}`, title: "Remove",
        onclick: () => write(() => userMetadata.removeTag(urn, tag), "the USER tags") }, "×"))),
    global.map((tag) => h("li", { class: "tag user datahub", title: "DataHub tag (globalTags), USER scope" }, tag)));
  const tagInput = h("input", { name: "tag", placeholder: "new tag", "aria-label": "New USER tag", required: true });
  const keyInput = h("input", { name: "key", placeholder: "key", "aria-label": "New property key", required: true });
  const valueInput = h("input", { name: "value", placeholder: "value", "aria-label": "New property value", required: true });
  const user = h("section", { class: "card scope-user", "aria-labelledby": "user-title" },
    h("h2", { id: "user-title" }, "USER metadata ", h("span", { class: "hint" }, "business metadata people add")),
    h("h3", {}, "Tags"),
    md.USER.tags.length || global.length ? userTags : h("p", { class: "hint" }, "No tags"),
    rights.write && h("form", { class: "inline", onsubmit: (e) => {
      e.preventDefault();
      write(() => userMetadata.addTag(urn, tagInput.value.trim()), "the USER tags");
    } }, tagInput, h("button", { type: "submit" }, "Add tag")),
    h("h3", {}, "Properties"),
    propertyTable(md.USER.properties, rights.remove && ((key) => write(() => userMetadata.removeProperty(urn, key), "the USER properties"))),
    rights.write && h("form", { class: "inline", onsubmit: (e) => {
      e.preventDefault();
      write(() => userMetadata.setProperty(urn, keyInput.value.trim(), valueInput.value), "the USER properties");
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

function jobSection(ctx) {
  const io = aspectValue(ctx.entity, "dataJobInputOutput") || {};
  const info = aspectValue(ctx.entity, "dataJobInfo") || {};
  return [h("section", { class: "card" }, h("div", { class: "card-head" }, h("h2", {}, "Program"),
    h("a", { class: "button secondary", href: lineageHref(ctx.urn) }, "Open lineage")),
  h("p", {}, "Type: ", typeof info.type === "object" ? Object.values(info.type)[0] : info.type || ""),
  urnList("Reads", io.inputDatasets), urnList("Writes", io.outputDatasets)),
  runsSection(ctx.urn, (run) => entityLink(run))];
}

function programsSection(urn) {
  const list = h("ul", {}, h("li", { class: "hint" }, "Loading…"));
  api.search(`dataFlow:"${urn}"`, { types: "dataJob", count: 100, sort: "name" })
    .then((data) => replace(list, data.results.length ? data.results.map((hit) => h("li", {}, entityLink(hit.urn, hit.name),
      hit.description && h("span", { class: "hint" }, ` ${hit.description}`))) : h("li", { class: "hint" }, "No programs")))
    .catch((err) => replace(list, errorBox(err)));
  return h("section", { class: "card" }, h("h2", {}, "Programs"), list);
}

function allMetadataSection(entity) {
  return h("section", { class: "card" }, h("details", {}, h("summary", {}, `All metadata (${Object.keys(entity.aspects || {}).length} aspects)`),
    Object.entries(entity.aspects || {}).sort().map(([name, a]) => h("div", {}, h("h3", {}, `${name} v${a.version}`),
      h("pre", {}, JSON.stringify(a.value, null, 2))))));
}
