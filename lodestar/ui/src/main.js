// The single-page app: a hash router over the search, entity, lineage and field pages.

import "./app.css"; // esbuild bundles it, with the stylesheets the pages import, into dist/app.css
import { session } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import { entityPage } from "./entity.js";
import { fieldPage } from "./fields.js";
import { lineagePage } from "./lineage.js";
import { privileges } from "./permissions.js";
import { invalidUrnPage } from "./problem.js";
import { searchPage } from "./search.js";

const main = document.getElementById("main");

// A route's URN, percent-decoded; null when the address cannot be decoded.
function urnOf(raw) {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}

// A page for a URN: "Not a valid URN" when the address does not decode to one.
const urnRoute = (page) => (view, m, q) => {
  const urn = urnOf(m[1]);
  return urn === null ? invalidUrnPage(view, m[1]) : page(view, urn, q);
};

const ROUTES = [
  [/^#\/entity\/(.+)$/, urnRoute(entityPage)],
  [/^#\/lineage\/(.+)$/, urnRoute(lineagePage)],
  [/^#\/field\/(.+)$/, urnRoute(fieldPage)],
  [/^#\/search$/, (view, m, q) => searchPage(view, q)],
];

// What only a signed-in user has: Sign out, the "/" hint.
function showSignedIn(yes) {
  for (const id of ["signout", "keys-hint", "principal"]) document.getElementById(id).hidden = !yes;
}

function route() {
  showSignedIn(Boolean(session.token));
  if (!session.token) return loginPage();
  const hash = location.hash || "#/search";
  const [path, queryString] = hash.split("?");
  const query = new URLSearchParams(queryString || "");
  for (const [pattern, render] of ROUTES) {
    const match = pattern.exec(path);
    if (match) {
      // each visit renders into a view of its own: a page still loading when the address
      // changes fills a detached view, never the page shown after it
      const view = h("div", { class: "view" });
      replace(main, view);
      Promise.resolve().then(() => render(view, match, query)).catch((err) => replace(view, errorBox(err)));
      return;
    }
  }
  location.hash = "#/search";
}

function loginPage() {
  const input = h("input", { type: "password", id: "token", autocomplete: "current-password", required: true });
  const status = h("p", { role: "status" });
  const form = h(
    "form",
    { class: "login card", onsubmit: submit },
    h("h1", {}, "Sign in to Lodestar"),
    h("label", { for: "token" }, "Access token"),
    input,
    h("p", { class: "hint" }, "The admin token is printed by lodestar serve and kept in the data directory (admin.token)."),
    h("button", { type: "submit" }, "Sign in"),
    status,
  );
  async function submit(event) {
    event.preventDefault();
    session.token = input.value.trim();
    try {
      await showPrincipal();
      route();
    } catch (err) {
      session.token = null;
      replace(status, errorBox(err));
    }
  }
  replace(main, form);
  input.focus();
}

async function showPrincipal() {
  const { principal } = await privileges();
  document.getElementById("principal").textContent = principal.replace("urn:li:corpuser:", "");
}

document.getElementById("signout").addEventListener("click", () => {
  session.token = null;
  document.getElementById("principal").textContent = "";
  route();
});
window.addEventListener("lodestar:unauthorized", () => {
  if (document.querySelector(".login")) return; // the sign-in form shows the refusal itself
  session.token = null;
  route();
});
window.addEventListener("hashchange", route);
document.addEventListener("keydown", (event) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName);
  if (event.key === "/" && !typing && session.token) {
    event.preventDefault();
    if (!location.hash.startsWith("#/search")) location.hash = "#/search";
    else document.getElementById("q")?.focus();
  }
});
if (session.token) showPrincipal().catch(() => {});
route();
