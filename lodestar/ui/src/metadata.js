// USER and SYSTEM metadata of an entity through CDAP's v3 metadata API (by URN): one record
// per scope, and USER tags and properties added and removed one at a time.

import { call } from "./api.js";

const base = (urn) => `/v3/urns/${encodeURIComponent(urn)}/metadata`;

// {USER: {tags, properties}, SYSTEM: {tags, properties}}
export async function scoped(urn, signal) {
  const records = await call("GET", base(urn), { signal });
  const out = { USER: { tags: [], properties: {} }, SYSTEM: { tags: [], properties: {} } };
  for (const record of records) out[record.scope] = { tags: record.tags || [], properties: record.properties || {} };
  return out;
}

// DataHub's globalTags of an entity (shown with the USER tags: people add them).
export function globalTags(entity) {
  const stored = entity.aspects?.globalTags;
  return stored && !stored.deleted ? (stored.value.tags || []).map((t) => t.tag.replace(/^urn:li:tag:/, "")) : [];
}

export const userMetadata = {
  addTag: (urn, tag) => call("POST", `${base(urn)}/tags`, { body: [tag] }),
  removeTag: (urn, tag) => call("DELETE", `${base(urn)}/tags/${encodeURIComponent(tag)}`),
  setProperty: (urn, key, value) => call("POST", `${base(urn)}/properties`, { body: { [key]: value } }),
  removeProperty: (urn, key) => call("DELETE", `${base(urn)}/properties/${encodeURIComponent(key)}`),
};
