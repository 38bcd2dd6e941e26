// The REST client: every call carries the user's bearer token; errors become ApiError with
// the server's code and message.

const TOKEN_KEY = "lodestar.token";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const session = {
  get token() {
    return localStorage.getItem(TOKEN_KEY);
  },
  set token(value) {
    if (value) localStorage.setItem(TOKEN_KEY, value);
    else localStorage.removeItem(TOKEN_KEY);
  },
};

const enc = encodeURIComponent;

export async function call(method, path, { query, body, headers, signal } = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) params.append(key, one);
  }
  const url = params.toString() ? `${path}?${params}` : path;
  const response = await fetch(url, {
    method,
    signal,
    headers: {
      Authorization: `Bearer ${session.token || ""}`,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      ...(headers || {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { message: text };
  }
  if (!response.ok) {
    if (response.status === 401) window.dispatchEvent(new CustomEvent("lodestar:unauthorized"));
    const failed = data?.results?.find((r) => r.status === "failed");  // a refused proposal says why in its result
    throw new ApiError(response.status, data?.error || failed?.error || "error", data?.message || failed?.message || response.statusText);
  }
  return data;
}

export const api = {
  search: (query, { types, start, count, scope, sort }, signal) =>
    call("GET", "/v1/search", { query: { query, types, start, count, scope, sort }, signal }),
  autocomplete: (query, signal) => call("GET", "/v1/autocomplete", { query: { query, limit: 8 }, signal }),
  entity: (urn) => call("GET", `/v1/entities/${enc(urn)}`),
  versions: (urn, aspect) => call("GET", `/v1/entities/${enc(urn)}/aspects/${enc(aspect)}/versions`),
  propose: (proposals, headers) => call("POST", "/v1/proposals", { body: { proposals, waitForIndex: true }, headers }),
  lineage: (urn, direction, maxHops) => call("GET", "/v1/lineage", { query: { urn, direction, maxHops } }),
  fieldLineage: (urn, direction, maxHops) =>
    call("GET", "/v1/lineage/fields", { query: { urn, direction, maxHops } }),
  timeseries: (urn, aspect) => call("GET", `/v1/timeseries/${enc(urn)}/${enc(aspect)}`),
};
