// A structural diff of two JSON values: the paths added, removed and changed; and a schema's
// diff field by field.

import { fieldType } from "./schema.js";

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function diff(before, after, path = "") {
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  if (before === undefined) return [{ path: path || "/", kind: "added", after }];
  if (after === undefined) return [{ path: path || "/", kind: "removed", before }];
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => diff(before[k], after[k], `${path}/${k}`));
  }
  if (Array.isArray(before) && Array.isArray(after) && before.every((v) => !isObject(v)) && after.every((v) => !isObject(v))) {
    const removed = before.filter((v) => !after.includes(v)).map((v) => ({ path: `${path}[]`, kind: "removed", before: v }));
    const added = after.filter((v) => !before.includes(v)).map((v) => ({ path: `${path}[]`, kind: "added", after: v }));
    return removed.length || added.length ? [...removed, ...added] : [{ path: path || "/", kind: "changed", before, after }];
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const n = Math.max(before.length, after.length);
    return Array.from({ length: n }, (_, i) => diff(before[i], after[i], `${path}/${i}`)).flat();
  }
  return [{ path: path || "/", kind: "changed", before, after }];
}

// What changed between two versions of a schemaMetadata value, field by field: fields added,
// removed, and those whose type, nullability or description changed.
export function schemaDiff(before, after) {
  const index = (schema) => new Map((schema?.fields || []).map((f) => [f.fieldPath, f]));
  const a = index(before);
  const b = index(after);
  const out = [];
  for (const [path, f] of b) {
    const old = a.get(path);
    if (!old) out.push({ field: path, kind: "added", after: fieldType(f) });
    else {
      if (fieldType(old) !== fieldType(f)) out.push({ field: path, kind: "type changed", before: fieldType(old), after: fieldType(f) });
      if (Boolean(old.nullable) !== Boolean(f.nullable)) out.push({ field: path, kind: "nullable changed", before: Boolean(old.nullable), after: Boolean(f.nullable) });
      if ((old.description || "") !== (f.description || "")) out.push({ field: path, kind: "description changed", before: old.description || "", after: f.description || "" });
    }
  }
  for (const [path, f] of a) if (!b.has(path)) out.push({ field: path, kind: "removed", before: fieldType(f) });
  return out;
}
