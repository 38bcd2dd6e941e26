// The search page: a query box with autocomplete, results with why they matched, facets,
// paging; arrow keys move through suggestions and results.

import { api, call } from "./api.js";
import { debounce, errorBox, h, replace } from "./dom.js";
import { platform, typeLabel } from "./urns.js";

const PAGE = 10;
const FACETS = [
  ["entityType", "Type"],
  ["platform", "Platform"],
  ["tags", "Tags"],
  ["scope", "Scope"],
  ["keys", "Metadata keys"],
];
const SCOPES = ["USER", "SYSTEM"];
const SHOWN = 12;
let keepFocus = false;  // a query committed from the box: the page it opens focuses the box again

function searchHash(state) {
  const params = new URLSearchParams();
  if (state.q) params.set("q", state.q);
  if (state.types) params.set("types", state.types);
  if (state.scope) params.set("scope", state.scope);
  if (state.start) params.set("start", String(state.start));
  return `#/search?${params}`;
}

// A query with `key:value` added (or removed when present): facets are filters AND-ed with the text.
// While typing, the last word is still being written: it is searched as a prefix.
export function asTyped(query) {
  return /(^|\s)[^\s:"*]+$/.test(query) ? `${query}*` : query;
}

// Whether the query has a filter the scope applies to: `tags:x` or `key:value` (not `schema:x`),
// as mcl_processor/query_syntax.py parses them. Without one, every result matches in either scope.
const FILTER = /(?:^|\s)([A-Za-z][\w.-]*):(?:"[^"]*"|[^\s"]+)/g;
export function hasScopedFilter(query) {
  return [...query.matchAll(FILTER)].some((m) => !["schema", "field"].includes(m[1].toLowerCase()));
}

function toggleTerm(query, term) {
  const terms = query.split(/\s+/).filter(Boolean);
  const quoted = /\s/.test(term) ? `"${term}"` : term;
  const rest = terms.filter((t) => t !== quoted);
  return (rest.length === terms.length ? [...terms, quoted] : rest).join(" ");
}

// A result's tags as the search response carries them: USER (CDAP's USER tags, then DataHub's
// tags not among them, which search counts in the USER scope), then SYSTEM.
function tagChips(tags) {
  const of = (field) => tags.filter((t) => t.field === field).map((t) => t.value);
  const user = of("userTags");
  return h("span", { class: "tags" }, user.map((t) => h("span", { class: "tag user", title: "USER" }, t)),
    of("tags").filter((t) => !user.includes(t)).map((t) => h("span", { class: "tag user datahub", title: "USER (DataHub tag)" }, t)),
    of("systemTags").map((t) => h("span", { class: "tag system", title: "SYSTEM" }, t)));
}

// Tells listeners (the UI benchmark) that results or suggestions for `query` are on screen.
function announce(kind, query) {
  window.dispatchEvent(new CustomEvent("lodestar:rendered", { detail: { kind, query } }));
}

export function searchPage(main, query) {
  const state = {
    q: query.get("q") || "",
    types: query.get("types") || "",
    scope: query.get("scope") || "",
    start: Number(query.get("start") || 0),
  };
  const input = h("input", {
    id: "q",
    type: "search",
    value: state.q,
    placeholder: "Search names, tags, fields, key:value…",
    autocomplete: "off",
    role: "combobox",
    "aria-label": "Search",
    "aria-autocomplete": "list",
    "aria-controls": "suggestions",
    "aria-expanded": "false",
  });
  const suggestions = h("ul", { id: "suggestions", role: "listbox", class: "suggestions", hidden: true });
  const results = h("section", { class: "results", "aria-live": "polite" });
  const facets = h("aside", { class: "facets", "aria-label": "Facets" });
  replace(
    main,
    h(
      "form",
      { class: "searchbar", role: "search", onsubmit: (e) => (e.preventDefault(), commit(input.value)) },
      h("div", { class: "combo" }, input, suggestions),
      h("button", { type: "submit" }, "Search"),
    ),
    h("div", { class: "search-layout" }, facets, results),
  );
  if (!state.q || keepFocus) input.focus();
  keepFocus = false;

  let active = -1;
  let items = [];
  let suggestionRun = 0;
  let searchRun = 0;
  let searchAbort = null;

  function go(next) {
    Object.assign(state, next);
    if (next.q !== undefined && input.value.trim() !== next.q) input.value = next.q;
    history.replaceState(null, "", searchHash(state));
    runSearch();
  }
  function commit(text) {
    // a live search or suggestion still waiting for the typing to pause would put the typed
    // text back into the address, over the committed one
    liveSearch.cancel();
    suggest.cancel();
    closeSuggestions();
    keepFocus = document.activeElement === input;
    location.hash = searchHash({ ...state, q: text.trim(), start: 0 });
  }

  async function runSearch() {
    const run = ++searchRun;
    searchAbort?.abort();
    const controller = new AbortController();
    searchAbort = controller;
    const text = (state.live ? asTyped(state.q) : state.q) || "*";
    try {
      const data = await api.search(text, { types: state.types, scope: state.scope, start: state.start, count: PAGE },
        controller.signal);
      if (run === searchRun) {
        render(data, text, controller.signal);
        announce("results", state.q);
      }
    } catch (err) {
      if (err.name !== "AbortError" && run === searchRun) replace(results, errorBox(err));
    }
  }

  function render(data, text, signal) {
    const list = h("ol", { class: "result-list", start: state.start + 1 });
    list.append(...data.results.map((hit) => resultCard(hit)));
    const last = Math.min(state.start + PAGE, data.total);
    const about = data.totalEstimated ? "about " : ""; // past 10,000 hits the index may estimate the total
    replace(
      results,
      h("p", { class: "count" }, data.total ? `${state.start + 1}–${last} of ${about}${data.total}` : "No results"),
      list,
      h(
        "nav",
        { class: "pager", "aria-label": "Pages" },
        h("button", { disabled: state.start === 0, onclick: () => go({ start: Math.max(0, state.start - PAGE) }) }, "← Previous"),
        h("button", { disabled: last >= data.total, onclick: () => go({ start: state.start + PAGE }) }, "Next →"),
      ),
    );
    renderFacets({ ...data.facets, scope: scopeCounts(text, data.total, signal) }, data.facetsSampled);
  }

  function resultCard(hit) {
    const link = h("a", { class: "result-link", href: `#/entity/${encodeURIComponent(hit.urn)}` }, hit.name || hit.urn);
    const why = (hit.matches || []).slice(0, 3).map((m) => h("span", { class: "match" }, h("b", {}, m.field), ": ", m.value));
    return h(
      "li",
      { class: "result" },
      h("div", { class: "result-head" }, link, h("span", { class: "badge" }, typeLabel(hit.entityType)),
        platform(hit.urn) && h("span", { class: "badge platform" }, platform(hit.urn)), tagChips(hit.tags || [])),
      hit.description && h("p", { class: "description" }, hit.description),
      why.length > 0 && h("p", { class: "why" }, "matched ", why),
      h("p", { class: "urn" }, hit.urn),
    );
  }

  // How many results the query has in each scope: the total when it has no filter the scope
  // applies to, else one search per other scope for its total (count 1), after the page shows.
  function scopeCounts(text, total, signal) {
    return SCOPES.map((value) => {
      const known = !hasScopedFilter(text) || value === state.scope;
      const count = h("span", { class: "n" }, known ? total : "…");
      if (!known) {
        api.search(text, { types: state.types, scope: value, start: 0, count: 1 }, signal)
          .then((data) => replace(count, data.total))
          .catch((err) => err.name !== "AbortError" && replace(count, "?"));
      }
      return { value, count };
    });
  }

  function renderFacets(data, sampled) {
    const groups = FACETS.filter(([name]) => data[name]?.length).map(([name, title]) => {
      const values = data[name].map(({ value, count }) => {
        if (name === "scope") {
          const selected = state.scope === value;
          return h("li", {}, h("button", { class: selected ? "facet-value selected" : "facet-value", "aria-pressed": String(selected),
            title: `tags: and key:value filters look in ${value} metadata only`,
            onclick: () => go({ scope: selected ? "" : value, start: 0, live: false }) }, value, count));
        }
        const term = name === "keys" ? `${value}:*` : `${name}:${value}`;
        const selected = name === "entityType" ? state.types.split(",").includes(value) : state.q.split(/\s+/).includes(term);
        const toggle = () => (name === "entityType"
          ? go({ types: selected ? "" : value, start: 0 })
          : go({ q: toggleTerm(state.q === "*" && !selected ? "" : state.q, term), start: 0, live: false }));
        return h("li", {}, h("button", { class: selected ? "facet-value selected" : "facet-value", "aria-pressed": String(selected),
          onclick: toggle }, name === "entityType" ? typeLabel(value) : value, h("span", { class: "n" }, sampled ? `~${count}` : count)));
      });
      const list = h("ul", {}, values.slice(0, SHOWN));
      const more = values.length > SHOWN && h("button", { class: "link", onclick: () => {
        replace(list, values);
        more.remove();
      } }, `Show all ${values.length}`);
      return h("section", { class: "facet", "aria-label": title }, h("h3", {}, title), list, more);
    });
    replace(facets, groups);
  }

  // Autocomplete.
  const suggest = debounce(async () => {
    const text = input.value.trim().split(/\s+/).pop() || "";
    const run = ++suggestionRun;
    if (text.length < 1 || text.includes(":")) return closeSuggestions();
    try {
      const data = await api.autocomplete(text);
      if (run !== suggestionRun) return;
      const chosen = items[active];  // a refreshed list keeps the suggestion the arrow keys chose
      items = data.suggestions;
      replace(suggestions, items.map((s, i) =>
        h("li", { id: `suggestion-${i}`, role: "option", onmousedown: (e) => (e.preventDefault(), pick(i)) },
          s.text, h("span", { class: "kind" }, s.kind))));
      suggestions.hidden = items.length === 0;
      input.setAttribute("aria-expanded", String(!suggestions.hidden));
      const kept = chosen ? items.findIndex((s) => s.text === chosen.text && s.kind === chosen.kind) : -1;
      if (kept >= 0) highlight(kept);
      else {
        active = -1;
        input.removeAttribute("aria-activedescendant");
      }
      announce("suggestions", text);
    } catch {
      closeSuggestions();
    }
  }, 40);
  const liveSearch = debounce(() => go({ q: input.value.trim(), start: 0, live: true }), 50);

  function closeSuggestions() {
    suggestionRun++;
    suggestions.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  }
  function pick(i) {
    const s = items[i];
    const term = s.kind === "tag" ? `tags:${s.text}` : s.kind === "field" ? `schema:${s.text}`
      : s.kind === "key" ? `${s.text}:*` : /\s/.test(s.text) ? `"${s.text}"` : s.text;
    const words = input.value.trim().split(/\s+/);
    words[words.length - 1] = term;
    commit(words.join(" "));
  }
  function highlight(i) {
    active = i;
    [...suggestions.children].forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
    input.setAttribute("aria-activedescendant", `suggestion-${i}`);
  }

  input.addEventListener("input", () => {
    suggest();
    liveSearch();
  });
  input.addEventListener("blur", () => setTimeout(closeSuggestions, 100));
  input.addEventListener("keydown", (event) => {
    const open = !suggestions.hidden;
    if (event.key === "ArrowDown") {
      event.preventDefault();
      if (open) highlight(Math.min(active + 1, items.length - 1));
      else results.querySelector(".result-link")?.focus();
    } else if (event.key === "ArrowUp" && open) {
      event.preventDefault();
      highlight(Math.max(active - 1, 0));
    } else if (event.key === "Enter" && open && active >= 0) {
      event.preventDefault();
      pick(active);
    } else if (event.key === "Escape" && open) {
      event.preventDefault(); // a search box clears itself on Escape: here it only closes the suggestions
      closeSuggestions();
    }
  });
  results.addEventListener("keydown", (event) => {
    const links = [...results.querySelectorAll(".result-link")];
    const at = links.indexOf(document.activeElement);
    if (at < 0) return;
    if (event.key === "ArrowDown" || event.key === "j") {
      event.preventDefault();
      links[Math.min(at + 1, links.length - 1)].focus();
    } else if (event.key === "ArrowUp" || event.key === "k") {
      event.preventDefault();
      if (at === 0) input.focus();
      else links[at - 1].focus();
    }
  });
  runSearch();
}
