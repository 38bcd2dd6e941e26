// Platform icons: a coloured tile with the platform's initials, as an SVG data URL (the graph
// draws it on a node; pages can use it as an <img>). Known platforms get their own colour, the
// others one derived from the name, so a platform always looks the same.

const COLOURS = {
  cdap: "#0f766e", file: "#64748b", hive: "#ca8a04", kafka: "#111827", spark: "#ea580c", mysql: "#0369a1",
  postgres: "#1e40af", snowflake: "#0ea5e9", bigquery: "#2563eb", s3: "#c2410c", dbt: "#f97316",
  airflow: "#0891b2", openlineage: "#7c3aed", hdfs: "#a16207", redshift: "#b91c1c", oracle: "#dc2626",
};

function colourOf(name) {
  if (COLOURS[name]) return COLOURS[name];
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.charCodeAt(0)) % 360;
  return `hsl(${hash}, 55%, 38%)`;
}

const initials = (name) => (name || "?").replace(/[^A-Za-z0-9]/g, "").slice(0, 2).replace(/^./, (c) => c.toUpperCase()) || "?";

const cache = new Map();

export function platformIcon(name) {
  const key = name || "";
  if (!cache.has(key)) {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24">`
      + `<rect width="24" height="24" rx="5" fill="${colourOf(key)}"/>`
      + `<text x="12" y="16.5" font-family="Arial,sans-serif" font-size="11" font-weight="700" fill="#fff" text-anchor="middle">${initials(key)}</text></svg>`;
    cache.set(key, `data:image/svg+xml;utf8,${encodeURIComponent(svg)}`);
  }
  return cache.get(key);
}
