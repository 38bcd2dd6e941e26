// Tiny DOM helpers: h() builds elements, text is always set as text (never parsed as HTML).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// `fn` called `ms` after the last call; `.cancel()` drops a call still waiting.
export function debounce(fn, ms) {
  let timer;
  const later = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  later.cancel = () => clearTimeout(timer);
  return later;
}

export function formatTime(ms) {
  if (ms === undefined || ms === null || ms === "") return "";
  const date = new Date(Number(ms));
  return isNaN(date) ? String(ms) : date.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function errorBox(err) {
  return h("p", { class: "error", role: "alert" }, err.message || String(err));
}

const LINK_SCHEMES = new Set(["http:", "https:", "mailto:"]);

// A link to a URL from metadata, opened in a new tab: clickable only for an absolute http(s) or
// mailto URL; any other (javascript:, data:, a relative path...) is shown as text, never followed.
export function externalLink(url, text) {
  let parsed = null;
  try {
    parsed = new URL(String(url));
  } catch {
    parsed = null;
  }
  if (parsed && LINK_SCHEMES.has(parsed.protocol)) {
    return h("a", { href: parsed.href, rel: "noopener noreferrer", target: "_blank" }, text || url);
  }
  return h("span", { class: "inert-link", title: "Not a link: only http(s) and mailto URLs open" },
    text && text !== url ? `${text} ` : "", h("code", {}, String(url)));
}
