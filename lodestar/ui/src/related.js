// The upstream/downstream summary of an entity page: what `/v1/lineage` finds within two hops
// each way (datasets and programs; runs are left to the explorer), nearest first, as links.

import { api } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import { platformIcon } from "./platforms.js";
import { platform, shortName, typeLabel } from "./urns.js";

const SHOWN = 8;

function side(title, nodes, link) {
  return h("div", { class: "related-side", "aria-label": title },
    h("h3", {}, `${title} (${nodes.length})`),
    nodes.length ? h("ul", { class: "related-list" }, nodes.slice(0, SHOWN).map((n) => h("li", {},
      platformIcon(platform(n.urn)), link(n.urn, shortName(n.urn)), " ", h("span", { class: "hint" }, typeLabel(n.entityType)),
      n.hops > 1 && h("span", { class: "hint" }, ` · ${n.hops} hops`))),
    nodes.length > SHOWN && h("li", { class: "hint" }, `and ${nodes.length - SHOWN} more in the lineage explorer`))
      : h("p", { class: "hint" }, "None"));
}

// The "Lineage" card: upstream and downstream lists and a link to the explorer.
export function relatedSection(urn, link, explorerHref) {
  const body = h("div", { class: "related" }, h("p", { class: "hint" }, "Loading…"));
  api.lineage(urn, "both", 2).then((data) => {
    const nodes = data.nodes.filter((n) => n.hops > 0 && n.entityType !== "dataProcessInstance")
      .sort((a, b) => a.hops - b.hops || shortName(a.urn).localeCompare(shortName(b.urn)));
    replace(body, side("Upstream", nodes.filter((n) => n.direction === "upstream"), link),
      side("Downstream", nodes.filter((n) => n.direction === "downstream"), link));
  }).catch((err) => replace(body, errorBox(err)));
  return h("section", { class: "card", "aria-labelledby": "related-title" },
    h("div", { class: "card-head" }, h("h2", { id: "related-title" }, "Upstream and downstream"),
      h("a", { class: "button secondary", href: explorerHref }, "Open lineage")), body);
}
