"""CDAP-syntax search on the embedded search index: what the CDAP terms cost at indexing, and
query latencies of CDAP's search forms next to the native search.

    .venv/bin/python -m bench.cdap_search [DATASETS]      # default 10,000 datasets

Each dataset has the four aspects of bench/datasets.py (properties, a 20-field schema, tags,
lineage), its key aspect, and USER metadata (a tag and two properties).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.datasets import WORDS, dataset_mcps
from mcl_processor.changes import AspectChange, ChangeBatch
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.search import cdap
from mcl_processor.search.cdap import HIDDEN, RESOURCE, All, any_of, parse, system
from mcl_processor.search.document import Analyzer
from schemas.registry import default_registry

QUERIES = 200


def aspects(i: int, rng: random.Random) -> list[tuple[str, str, Any]]:
    """(urn, aspect, value) of dataset i: the benchmark's four aspects, its key and USER metadata."""
    out = [(m["entityUrn"], m["aspectName"], m["aspect"]["json"]) for m in dataset_mcps(i, rng)]
    urn = out[0][0]
    name = urn.split(",")[1]
    out.append((urn, "datasetKey", {"platform": "urn:li:dataPlatform:hive", "name": name, "origin": "PROD"}))
    out.append((urn, "userScopeMetadata", {"tags": [f"team-{i % 13}"], "properties": {
        "steward": f"person-{i % 101}", "domain": WORDS[i % len(WORDS)]}}))
    return out


def analysis_cost(items: list[tuple[str, str, Any]]) -> tuple[float, float, int, int]:
    """Seconds to analyse every value with and without CDAP terms, and the meta tokens of each."""
    registry = default_registry()
    from mcl_processor.annotations import annotations_of

    annotations = annotations_of(registry)
    analyzers = {name: Analyzer(annotations[name]) for name in {a for _, a, _ in items}}
    timings, tokens = [], []
    for with_terms in (True, False):
        original = cdap.terms
        if not with_terms:
            cdap.terms = lambda aspect, value: set()  # type: ignore[assignment]
        try:
            started = time.perf_counter()
            fragments = [analyzers[a].fragment(v) for _, a, v in items]
            timings.append(time.perf_counter() - started)
            tokens.append(sum(len(f.meta.split()) for f in fragments))
        finally:
            cdap.terms = original  # type: ignore[assignment]
    return timings[0], timings[1], tokens[0], tokens[1]


def index(data_dir: Path, items: list[tuple[str, str, Any]], with_terms: bool
          ) -> tuple[SqliteReadModels, float, int]:
    """Read models holding the items, the seconds it took, and the database's size."""
    models = SqliteReadModels.in_data_dir(data_dir)
    original = cdap.terms
    if not with_terms:
        cdap.terms = lambda aspect, value: set()  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        for start in range(0, len(items), 6000):
            chunk = items[start:start + 6000]
            changes = tuple(AspectChange(urn, "dataset", aspect, 1, value) for urn, aspect, value in chunk)
            with models.transaction():
                models.apply(ChangeBatch(changes=changes))
        elapsed = time.perf_counter() - started
    finally:
        cdap.terms = original  # type: ignore[assignment]
    size = sum(f.stat().st_size for f in data_dir.iterdir())
    return models, elapsed, size


def latency(run: Callable[[int], object]) -> tuple[float, float]:
    times = []
    for n in range(QUERIES):
        started = time.perf_counter()
        run(n)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def main(count: int) -> None:
    rng = random.Random(7)
    items = [item for i in range(count) for item in aspects(i, rng)]
    with_terms, without, tokens_with, tokens_without = analysis_cost(items[: 6 * min(count, 5000)])
    print(f"analysis of {min(count, 5000)} datasets (6 aspects each): {with_terms:.2f} s with CDAP terms,"
          f" {without:.2f} s without: x{with_terms / without:.2f}; meta tokens {tokens_with:,} vs {tokens_without:,}")
    with tempfile.TemporaryDirectory() as tmp:
        plain = index(Path(tmp) / "plain", items, with_terms=False)
        models = index(Path(tmp) / "cdap", items, with_terms=True)
        print(f"indexing {count:,} datasets ({len(items):,} aspect versions): {models[1]:.1f} s with CDAP terms,"
              f" {plain[1]:.1f} s without: x{models[1] / plain[1]:.2f}; {len(items) / models[1]:,.0f} versions/s;"
              f" database {models[2] / 1e6:.0f} MB vs {plain[2] / 1e6:.0f} MB")
        plain[0].close()
        models = models[0]
        search = models.search
        hidden = system(HIDDEN, "true")
        readable = any_of(RESOURCE, [f"urn:li:dataset:(urn:li:dataPlatform:hive,{items[6 * i][0].split(',')[1]},PROD)"
                                     for i in range(0, count, max(1, count // 50))])
        forms: list[tuple[str, Callable[[int], object]]] = [
            ("cdap term", lambda n: search.select(parse(WORDS[n % len(WORDS)]), hidden, 0, 10)),
            ("cdap prefix", lambda n: search.select(parse(WORDS[n % len(WORDS)][:3] + "*"), hidden, 0, 10)),
            ("cdap key:value", lambda n: search.select(parse(f"steward:person-{n % 101}"), hidden, 0, 10)),
            ("cdap tags:x", lambda n: search.select(parse(f"tags:team-{n % 13}"), hidden, 0, 10)),
            ("cdap field:TYPE", lambda n: search.select(parse(f"{WORDS[n % 11]}_{n % 20}:string"), hidden, 0, 10)),
            ("cdap * readable 50", lambda n: search.select(All((parse("*"), readable)), hidden, n % 40, 10)),
            ("native term", lambda n: search.query(WORDS[n % len(WORDS)], count=10)),
            ("native key:value", lambda n: search.query(f"steward:person-{n % 101}", count=10)),
        ]
        for name, run in forms:
            p50, p99 = latency(run)
            print(f"{name:<22} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms")
        models.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
