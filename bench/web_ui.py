"""The web UI at scale: how long after a keystroke the search page shows results and
suggestions, and how long an entity page takes, in headless Chromium against `lodestar serve`
holding N datasets (4 MCPs each, as bench.read_models ingests them); then the lineage
explorer's time to first render at 10, 100 and 1,000 nodes (bench/web_ui_lineage.py).

    .venv/bin/python -m bench.web_ui [--datasets 100000] [--workers 2] [--queries 100] [--lineage-rounds 10]

A sample is the time in the page from the input event of the last character typed to the
results (or suggestions) for that text being on screen: the page's debounce, the request and
the rendering. Target: results within 200 ms of typing.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import Page, sync_playwright

from bench.datasets import WORDS, dataset_urn, generate
from bench.read_models import ingest, percentiles, request_bodies
from bench.web_ui_lineage import time_first_render, write_neighbourhoods
from tests.support.processes import TOKEN, ServeProcess

# Types `text` as the last keystroke of a query and resolves with the ms until `kind` is on screen.
TYPE_AND_WAIT = """([text, kind]) => new Promise((resolve) => {
  const input = document.getElementById("q");
  const done = (event) => {
    if (event.detail.kind !== kind || event.detail.query !== text) return;
    window.removeEventListener("lodestar:rendered", done);
    resolve(performance.now() - start);
  };
  window.addEventListener("lodestar:rendered", done);
  input.value = text;
  const start = performance.now();
  input.dispatchEvent(new Event("input"));
})"""


def typed(rng: random.Random) -> str:
    """What someone has typed so far: a word and the start of another."""
    first, second = rng.choice(WORDS), rng.choice(WORDS)
    return f"{first} {second[:rng.randrange(2, len(second) + 1)]}"


def time_search_and_entity(page: Page, datasets: int, queries: int, rng: random.Random) -> None:
    """Print the search page's keystroke times and the entity page's (page signed in, on search)."""
    page.wait_for_selector(".result")
    for kind in ("results", "suggestions"):
        samples = [page.evaluate(TYPE_AND_WAIT, [typed(rng) if kind == "results" else rng.choice(WORDS)[:3]
                                                 + rng.choice("aeiou"), kind]) / 1000
                   for _ in range(queries)]
        print(f"search page: keystroke -> {kind:<11}  {percentiles(samples)}   (target < 200 ms)")
    samples = []
    for _ in range(queries // 4):
        i = rng.randrange(datasets)
        start = time.perf_counter()
        page.evaluate("hash => { location.hash = hash; }", f"#/entity/{quote(dataset_urn(i), safe='')}")
        page.wait_for_function("name => document.querySelector('h1')?.textContent === name"
                               " && document.querySelector('table.schema')", arg=f"{WORDS[i % len(WORDS)]}_{i}")
        samples.append(time.perf_counter() - start)
    print(f"entity page: open -> metadata and schema  {percentiles(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--lineage-rounds", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(5)
    workers = ("--workers", str(args.workers))
    with tempfile.TemporaryDirectory() as tmp, ServeProcess(Path(tmp) / "data", None, *workers) as serve:
        mcps = generate(args.datasets * 4)
        _, elapsed = ingest(serve, request_bodies(mcps)) if mcps else (None, 0.0)
        roots = write_neighbourhoods(serve)
        print(f"setup: {args.datasets} datasets ({len(mcps)} MCPs) indexed in {elapsed:.1f} s, lineage "
              f"neighbourhoods of {', '.join(map(str, roots))} datasets; lodestar serve --workers {args.workers}; "
              "Debian's Chromium, headless, 1280x800")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(serve.url + "/")
            page.fill("#token", TOKEN)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_selector("#q")
            if args.datasets:
                time_search_and_entity(page, args.datasets, args.queries, rng)
            time_first_render(page, roots, args.lineage_rounds)
            browser.close()


if __name__ == "__main__":
    main()
