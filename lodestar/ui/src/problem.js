// Pages for a URL that names nothing: not a URN, or a URN with nothing behind it.

import { h, replace } from "./dom.js";

// `what` is the text the URL held, `expected` what it should have been (e.g. "a dataset URN").
export function invalidUrnPage(main, what, expected = "a URN") {
  replace(main, h("section", { class: "card problem", role: "alert" },
    h("h1", {}, "Not a valid URN"),
    h("p", {}, "The address names ", h("code", { class: "urn" }, what || "(nothing)"), `, which is not ${expected}`,
      " (urn:li:<type>:<id>, e.g. urn:li:dataset:(urn:li:dataPlatform:hive,db.table,PROD))."),
    h("p", {}, h("a", { href: "#/search" }, "Search instead"))));
}

export function notFoundPage(main, urn) {
  replace(main, h("section", { class: "card problem", role: "alert" },
    h("h1", {}, "Not found"),
    h("p", {}, "Nothing is known about ", h("code", { class: "urn" }, urn), ": no metadata and no lineage."),
    h("p", {}, h("a", { href: "#/search" }, "Search instead"))));
}
