// A time window (UTC) in the URL as CDAP's seconds (`start`, `end`), and its form.

import { h } from "./dom.js";

const toInput = (seconds) => new Date(seconds * 1000).toISOString().slice(0, 16);
const fromInput = (text) => Math.floor(Date.parse(`${text}:00Z`) / 1000);

// {start, end} in seconds: from the beginning to now unless the query says otherwise.
export function windowOf(query) {
  const start = Number(query.get("start") || 0);
  const end = query.get("end") ? Number(query.get("end")) : Math.floor(Date.now() / 1000);
  return { start, end };
}

// The window's inputs and any `extra` ones; submitting calls go(URLSearchParams) with the
// window set (empty inputs: the default) and each extra input's value under its name.
export function windowForm(query, go, ...extra) {
  const start = h("input", { type: "datetime-local", id: "window-start", value: query.get("start") ? toInput(Number(query.get("start"))) : "" });
  const end = h("input", { type: "datetime-local", id: "window-end", value: query.get("end") ? toInput(Number(query.get("end"))) : "" });
  return h("form", { class: "inline window", onsubmit: (e) => {
    e.preventDefault();
    const params = new URLSearchParams(query);
    for (const [name, input] of [["start", start], ["end", end]]) {
      if (input.value) params.set(name, String(fromInput(input.value)));
      else params.delete(name);
    }
    for (const input of extra.filter((x) => x.name)) params.set(input.name, input.value);
    go(params);
  } },
  h("label", { for: "window-start" }, "From (UTC)"), start,
  h("label", { for: "window-end" }, "To (UTC)"), end,
  extra.map((x) => (x.id ? [h("label", { for: x.id }, x.title), x] : x)),
  h("button", { type: "submit" }, "Show"));
}
