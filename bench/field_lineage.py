"""Field-lineage query latency over many runs, on the embedded default, in one run.

    .venv/bin/python -m bench.field_lineage [--pipelines 100] [--runs 100] [--workers 2]

100 pipelines in 25 chains of 4 (each pipeline reads the dataset the one before it writes),
each run 100 times a day apart: 10,000 runs, each with properties, job, inputs, outputs, its
field operations (read, parse, concat, two drops, create, write over 8 fields; one run in ten
with a reworded transform, so a dataset has two operation sets) and two run events, sent
through `lodestar serve` over HTTP. Then, over HTTP, p50/p99 of 200 queries each over the
whole 100 days: a field's summary, its operations, and the multi-level fieldmap 3 levels deep
from the last dataset of a chain.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from urllib.parse import quote

from bench.read_models import QUERIES, ingest, percentiles, timed_gets
from tests.support.processes import ServeProcess

DAY_S = 86_400
START_S = 1_700_000_000
CHAIN = 4


def dataset(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:cdap,default.bench_{i},PROD)"


def source_of(pipeline: int) -> str:
    """Pipelines 4k..4k+3 form a chain: the first reads raw_<k>, the others the one before."""
    if pipeline % CHAIN == 0:
        return f"urn:li:dataset:(urn:li:dataPlatform:cdap,default.raw_{pipeline // CHAIN},PROD)"
    return dataset(pipeline - 1)


def operations(pipeline: int, variant: bool) -> list[dict]:
    source, destination = source_of(pipeline), dataset(pipeline)

    def inputs(*pairs: tuple[str, str]) -> list[dict]:
        return [{"origin": o, "field": f} for o, f in pairs]

    return [
        {"name": "read", "type": "READ", "source": source, "outputs": ["body", "ts"]},
        {"name": "parse", "type": "TRANSFORM", "inputs": inputs(("read", "body")),
         "outputs": ["first_name", "last_name", "age", "city", "state"],
         "description": "parsed the body again" if variant else "parsed body field"},
        {"name": "concat", "type": "TRANSFORM", "inputs": inputs(("parse", "first_name"), ("parse", "last_name")),
         "outputs": ["name"]},
        {"name": "dropFirst", "type": "TRANSFORM", "inputs": inputs(("parse", "first_name"))},
        {"name": "dropLast", "type": "TRANSFORM", "inputs": inputs(("parse", "last_name"))},
        {"name": "create", "type": "TRANSFORM", "inputs": inputs(("concat", "name")), "outputs": ["id"]},
        {"name": "write", "type": "WRITE", "destination": destination,
         "inputs": inputs(("create", "id"), ("concat", "name"), ("parse", "age"), ("parse", "city"),
                          ("parse", "state"), ("read", "body"), ("read", "ts"))},
    ]


def mcp(urn: str, aspect: str, value: dict) -> dict:
    return {"entityType": "dataProcessInstance", "entityUrn": urn, "changeType": "UPSERT", "aspectName": aspect,
            "aspect": {"json": value}}


def run_mcps(pipeline: int, n: int) -> list[dict]:
    urn = f"urn:li:dataProcessInstance:bench-{pipeline}-{n}"
    job = f"urn:li:dataJob:(urn:li:dataFlow:(cdap,Bench{pipeline},default),Workflow)"
    start_ms = (START_S + n * DAY_S + pipeline * 60) * 1000
    return [
        mcp(urn, "dataProcessInstanceProperties", {"name": urn, "created": {"time": start_ms,
                                                                           "actor": "urn:li:corpuser:bench"}}),
        mcp(urn, "dataProcessInstanceRelationships", {"parentTemplate": job, "upstreamInstances": []}),
        mcp(urn, "dataProcessInstanceInput", {"inputs": [source_of(pipeline)]}),
        mcp(urn, "dataProcessInstanceOutput", {"outputs": [dataset(pipeline)]}),
        mcp(urn, "fieldOperations", {"operations": operations(pipeline, n % 10 == 9)}),
        mcp(urn, "dataProcessInstanceRunEvent", {"timestampMillis": start_ms, "status": "STARTED"}),
        mcp(urn, "dataProcessInstanceRunEvent", {"timestampMillis": start_ms + 600_000, "status": "COMPLETE",
                                                 "result": {"type": "SUCCESS", "nativeResultType": "COMPLETED"}}),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipelines", type=int, default=100)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    mcps = [m for n in range(args.runs) for p in range(args.pipelines) for m in run_mcps(p, n)]
    window = f"start={START_S - DAY_S}&end={START_S + (args.runs + 1) * DAY_S}"
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp, ServeProcess(Path(tmp) / "data", None, "--workers",
                                                            str(args.workers)) as serve:
        accepted, elapsed = ingest(serve, mcps)
        print(f"ingest + indexing  {args.pipelines * args.runs} runs, {len(mcps)} MCPs  {elapsed:7.1f} s"
              f"  {len(mcps) / elapsed:9,.0f} MCP/s   (all accepted after {accepted:.1f} s)")

        client = serve.client()
        summary = client.call("GET", f"/v3/namespaces/default/datasets/bench_{CHAIN - 1}/lineage/fields/id?{window}"
                                     "&direction=incoming")
        assert [d["dataset"] for d in summary["incoming"]] == [f"bench_{CHAIN - 2}"], summary
        levels = client.call("GET", f"/v3/namespaces/default/endpoints/bench_{CHAIN - 1}/fields/lineage?{window}"
                                    "&level=3")
        assert len(levels) == 3, levels  # the chain's three pipelines before it

        def field_path(suffix: str) -> list[str]:
            return [f"/v3/namespaces/default/datasets/bench_{rng.randrange(args.pipelines)}/lineage/fields/"
                    f"{rng.choice(['id', 'name', 'age'])}{suffix}?{window}&direction=incoming"
                    for _ in range(QUERIES)]

        print(f"summary (incoming)           {percentiles(timed_gets(serve, field_path('')))}   (target p99 < 50 ms)")
        print(f"operations (incoming)        {percentiles(timed_gets(serve, field_path('/operations')))}"
              "   (target p99 < 50 ms)")
        chains = args.pipelines // CHAIN
        ends = [f"/v3/namespaces/default/endpoints/{quote(dataset(rng.randrange(chains) * CHAIN + CHAIN - 1), safe='')}"
                f"/fields/lineage?{window}&level=3" for _ in range(QUERIES)]
        print(f"multi-level fieldmap, 3 levels {percentiles(timed_gets(serve, ends))}   (target p99 < 50 ms)")


if __name__ == "__main__":
    main()
