// Reading Lodestar URNs: the entity type, a short name, the platform, a field's dataset.

export function entityType(urn) {
  const match = /^urn:li:([A-Za-z]+):/.exec(urn);
  return match ? match[1] : "";
}

// The top-level comma-separated parts of "urn:li:type:(a,b,c)" (nested parentheses kept).
export function parts(urn) {
  const body = urn.slice(urn.indexOf(":", 7) + 1);
  if (!body.startsWith("(")) return [body];
  const out = [];
  let depth = 0;
  let current = "";
  for (const ch of body.slice(1, -1)) {
    if (ch === "," && depth === 0) {
      out.push(current);
      current = "";
      continue;
    }
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    current += ch;
  }
  out.push(current);
  return out;
}

export function platform(urn) {
  const type = entityType(urn);
  const p = parts(urn);
  if (type === "dataset") return p[0].replace("urn:li:dataPlatform:", "");
  if (type === "dataFlow") return p[0];
  if (type === "dataJob" || type === "schemaField") return platform(p[0]);
  if (type === "dataPlatform") return p[0];
  return "";
}

export function shortName(urn) {
  const type = entityType(urn);
  const p = parts(urn);
  if (type === "dataset") return p[1].includes("/") ? p[1].split("/").pop() : p[1].split(".").pop();
  if (type === "dataFlow") return p[1];
  if (type === "dataJob" || type === "schemaField") return p[1];
  return p[p.length - 1];
}

export function fieldDataset(urn) {
  return entityType(urn) === "schemaField" ? parts(urn)[0] : null;
}

export function fieldUrn(datasetUrn, fieldPath) {
  return `urn:li:schemaField:(${datasetUrn},${fieldPath})`;
}

export const TYPE_LABELS = {
  dataset: "dataset",
  dataFlow: "application",
  dataJob: "program",
  dataProcessInstance: "run",
  schemaField: "field",
  container: "namespace",
  dataPlatform: "platform",
  corpuser: "user",
  tag: "tag",
};

export function typeLabel(type) {
  return TYPE_LABELS[type] || type;
}

// Whether text reads as a URN: "urn:li:<type>:<id>", its parentheses balanced.
export function isUrn(text) {
  if (typeof text !== "string" || !/^urn:li:[A-Za-z]+:\S/.test(text)) return false;
  let depth = 0;
  for (const ch of text) {
    depth += ch === "(" ? 1 : ch === ")" ? -1 : 0;
    if (depth < 0) return false;
  }
  return depth === 0;
}
