// Who the signed-in principal is and what it may do to an entity (READ, WRITE, ADMIN), so the
// pages offer only the controls that work.

import { call } from "./api.js";

export async function privileges(urn) {
  return call("GET", "/v1/ui/privileges", { query: { urn } });
}

// {write: may add USER metadata, remove: may remove it}
export async function editRights(urn) {
  const held = new Set((await privileges(urn)).privileges);
  return { write: held.has("WRITE"), remove: held.has("WRITE") || held.has("ADMIN") };
}
