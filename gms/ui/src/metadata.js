// USER and SYSTEM metadata of an entity (CDAP's scopes: the userScopeMetadata and
// systemScopeMetadata aspects; DataHub's globalTags count as USER tags), and USER writes.

import { api } from "./api.js";

const USER_ASPECT = "userScopeMetadata";
const SYSTEM_ASPECT = "systemScopeMetadata";

function value(entity, aspect) {
  const stored = entity.aspects?.[aspect];
  return stored && !stored.deleted ? stored.value || {} : {};
}

function tagName(tag) {
  return tag.replace(/^urn:li:tag:/, "");
}

export function scopedTags(entity) {
  const global = (value(entity, "globalTags").tags || []).map((t) => tagName(t.tag));
  return {
    USER: [...(value(entity, USER_ASPECT).tags || []), ...global],
    SYSTEM: value(entity, SYSTEM_ASPECT).tags || [],
  };
}

export function scoped(entity) {
  const user = value(entity, USER_ASPECT);
  const system = value(entity, SYSTEM_ASPECT);
  return {
    USER: { tags: user.tags || [], properties: user.properties || {} },
    SYSTEM: { tags: system.tags || [], properties: system.properties || {} },
    globalTags: (value(entity, "globalTags").tags || []).map((t) => tagName(t.tag)),
  };
}

// Writes the entity's USER metadata changed by `change` (a function of {tags, properties}),
// conditioned on the version read, so a concurrent change fails (412) instead of being lost.
export async function updateUser(urn, entity, change) {
  const stored = entity.aspects?.[USER_ASPECT];
  const current = stored && !stored.deleted ? stored.value : { tags: [], properties: {} };
  const next = change({ tags: [...(current.tags || [])], properties: { ...(current.properties || {}) } });
  const version = stored ? stored.version : -1;
  return api.propose(
    [{ entityUrn: urn, changeType: "UPSERT", aspectName: USER_ASPECT, aspect: { json: next } }],
    { "If-Version-Match": String(version) },
  );
}
