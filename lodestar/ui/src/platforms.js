// A platform's icon as an element for the pages (the same tile the lineage graph draws).

import { h } from "./dom.js";
import { platformIcon as iconUrl } from "./icons.js";

export function platformIcon(platform) {
  if (!platform) return null;
  return h("img", { class: "platform-icon", src: iconUrl(platform), alt: `${platform} platform`, title: platform, width: 20, height: 20 });
}
