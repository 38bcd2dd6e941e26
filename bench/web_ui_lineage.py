"""The lineage explorer's time to first render for neighbourhoods of 10, 100 and 1,000 datasets
(tests/support/lineage_neighbourhood.py: two hops each way, opened with `up=2&down=2` so every
node is drawn). A sample runs in the page from setting the address to the second animation
frame after the graph is laid out: the two lineage requests and the run-lineage one, merging,
the layered layout, fitting, the edges table and the first paint of the canvas; the page's
performance marks split out the requests and the layout. Sizes alternate, round after round,
each opened from a page without a graph (so the one before is torn down outside the sample).
Target: under 1 s for 100 nodes."""

from __future__ import annotations

from urllib.parse import quote

from playwright.sync_api import Page

from bench.read_models import percentiles
from ingest.rest import RestClient
from tests.support.lineage_neighbourhood import neighbourhood, upstream_lineage
from tests.support.processes import TOKEN, ServeProcess
from tests.support.waiting import await_

SIZES = (10, 100, 1000)
FIRST_RENDER = """async ([hash, n]) => {
  performance.clearMarks();
  const start = performance.now();
  location.hash = hash;
  await new Promise((resolve) => {
    const drawn = () => document.querySelector(`#lineage-graph[data-rendered="${n}"]`);
    const check = () => (drawn() ? resolve() : requestAnimationFrame(check));
    check();
  });
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const total = performance.now() - start;
  const at = (name) => performance.getEntriesByName(name)[0].startTime;
  return [total, at("lineage:answered") - at("lineage:asked"), at("lineage:laid-out") - at("lineage:added")];
}"""


def write_neighbourhoods(serve: ServeProcess) -> dict[int, str]:
    """Each size's neighbourhood written and in the lineage graph; size -> root URN."""
    client = RestClient(serve.url, TOKEN)
    roots = {}
    for n in SIZES:
        root, upstream_of = neighbourhood(n, prefix=f"n{n}")
        status, body = client.request("POST", "/v1/proposals", {"proposals": upstream_lineage(upstream_of),
                                                                "waitForIndex": True})
        assert status == 200, body
        await_(lambda root=root, n=n: len(client.request("GET", f"/v1/lineage?urn={quote(root, safe='')}&maxHops=2")[1]
                                          ["nodes"]) == n, f"the {n}-node neighbourhood", timeout=120)
        roots[n] = root
    return roots


def time_first_render(page: Page, roots: dict[int, str], rounds: int) -> None:
    """Print each size's time to first render (page signed in, 1280x800)."""
    samples: dict[int, list[list[float]]] = {n: [] for n in roots}
    for _ in range(rounds):
        for n, root in roots.items():
            page.evaluate("location.hash = '#/lineage/not-a-urn'")
            page.wait_for_selector("text=Not a valid URN")
            samples[n].append(page.evaluate(FIRST_RENDER, [f"#/lineage/{quote(root, safe='')}?up=2&down=2", n]))
    for n, runs in samples.items():
        total, requests, layout = ([run[i] / 1000 for run in runs] for i in range(3))
        print(f"lineage explorer: open -> first render, {n:>4} nodes  {percentiles(total)}   (target < 1 s at 100)\n"
              f"    of which requests {percentiles(requests)}, layout {percentiles(layout)}")
