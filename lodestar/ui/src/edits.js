// Edits of DataHub aspects from the entity and field pages: each is one proposal of the whole
// aspect, made from the version the page shows (If-Version-Match), so a change made meanwhile
// by someone else is refused rather than overwritten. A refusal is explained in words.

import { api } from "./api.js";
import { h, replace } from "./dom.js";

const TAG = "urn:li:tag:";
const TERM = "urn:li:glossaryTerm:";
const USER = "urn:li:corpuser:";

// The value and version of an aspect as the page loaded it ({value: null, version: -1} when absent).
export function current(entity, aspect) {
  const stored = entity.aspects?.[aspect];
  return stored && !stored.deleted ? { value: stored.value, version: stored.version } : { value: null, version: -1 };
}

function propose(urn, aspect, version, value) {
  const entityType = /^urn:li:([A-Za-z]+):/.exec(urn)[1];
  return api.propose([{ entityType, entityUrn: urn, changeType: "UPSERT", aspectName: aspect,
    aspect: { value: JSON.stringify(value), contentType: "application/json" } }], { "If-Version-Match": String(version) });
}

const stamp = (actor) => ({ time: Date.now(), actor });
const without = (list, key, value) => (list || []).filter((item) => item[key] !== value);

export const tagUrn = (name) => (name.startsWith(TAG) ? name : `${TAG}${name}`);
export const termUrn = (name) => (name.startsWith(TERM) ? name : `${TERM}${name}`);
export const ownerUrn = (name) => (/^urn:li:corp(user|Group):/.test(name) ? name : `${USER}${name}`);

// DataHub tags (globalTags) and glossary terms (glossaryTerms) of an entity.
export function setTag(urn, entity, tag, add) {
  const { value, version } = current(entity, "globalTags");
  const tags = without(value?.tags, "tag", tagUrn(tag));
  return propose(urn, "globalTags", version, { ...value, tags: add ? [...tags, { tag: tagUrn(tag) }] : tags });
}

export function setTerm(urn, entity, term, add, actor) {
  const { value, version } = current(entity, "glossaryTerms");
  const terms = without(value?.terms, "urn", termUrn(term));
  return propose(urn, "glossaryTerms", version,
    { ...value, terms: add ? [...terms, { urn: termUrn(term) }] : terms, auditStamp: stamp(actor) });
}

export function setOwner(urn, entity, owner, type, add, actor) {
  const { value, version } = current(entity, "ownership");
  const owners = without(value?.owners, "owner", ownerUrn(owner));
  return propose(urn, "ownership", version,
    { ...value, owners: add ? [...owners, { owner: ownerUrn(owner), type }] : owners, lastModified: stamp(actor) });
}

// A dataset's description as people edit it (editableDatasetProperties), beside the one ingested.
export function setDescription(urn, entity, description, actor) {
  const { value, version } = current(entity, "editableDatasetProperties");
  return propose(urn, "editableDatasetProperties", version, { ...value, description, lastModified: stamp(actor) });
}

// One field's entry in the dataset's editableSchemaMetadata, changed by `change(info)`.
function editField(datasetUrn, dataset, fieldPath, change, actor) {
  const { value, version } = current(dataset, "editableSchemaMetadata");
  const infos = value?.editableSchemaFieldInfo || [];
  const info = infos.find((i) => i.fieldPath === fieldPath) || { fieldPath };
  const others = infos.filter((i) => i.fieldPath !== fieldPath);
  return propose(datasetUrn, "editableSchemaMetadata", version,
    { ...value, editableSchemaFieldInfo: [...others, change(info)], lastModified: stamp(actor) });
}

export function setFieldDescription(datasetUrn, dataset, fieldPath, description, actor) {
  return editField(datasetUrn, dataset, fieldPath, (info) => ({ ...info, description }), actor);
}

export function setFieldTag(datasetUrn, dataset, fieldPath, tag, add, actor) {
  return editField(datasetUrn, dataset, fieldPath, (info) => {
    const tags = without(info.globalTags?.tags, "tag", tagUrn(tag));
    return { ...info, globalTags: { tags: add ? [...tags, { tag: tagUrn(tag) }] : tags } };
  }, actor);
}

// What to tell the user when an edit is refused.
function explain(err, what) {
  if (err.status === 403) return `Your token may not change ${what} here (403: ${err.message}). Ask an admin for WRITE on this entity.`;
  if (err.status === 412) return `Someone changed ${what} since this page loaded; reload and try again (${err.message}).`;
  if (err.status === 400 || err.status === 422) return `Not saved: ${err.message}`;
  return err.message || String(err);
}

// Runs one edit, then `reload`s the page to show the new version; a refusal of `what` (e.g.
// "the tags") is explained in `status`, next to the control.
export async function applyEdit(status, what, request, reload) {
  try {
    await request();
    await reload();
  } catch (err) {
    replace(status, h("p", { class: "error", role: "alert" }, explain(err, what)));
  }
}
