"""Reliability figures: crash safety under SIGKILL, fuzzing, and memory over a soak at full rate.

    .venv/bin/python -m bench.reliability [--entities 10900] [--kills 20] [--stack-entities 10900]
        [--stack-kills 20] [--fuzz-examples 200] [--soak-seconds 600] [--soak-warmup 300] [--skip-stack]
        [--cluster [--cluster-entities 2000] [--cluster-kills 4] [--cluster-rolling-entities 100]
                   [--cluster-scenarios faults,rolling]]

1. Crash safety, embedded (tests/support/fault_injection.py, run_embedded): about 100,000 MCPs (UPSERT,
   PATCH and DELETE chains, each step conditioned on the version before it; timeseries points)
   over REST into `lodestar serve --workers 2`, its process group SIGKILLed `--kills` times at
   random moments spread over the run; then versions, MCLs, timeseries points and `lodestar check`.
2. The same on Kafka, Cassandra and OpenSearch (run_distributed): the MCPs appended to the MCP
   topic for two `lodestar gms` and two `lodestar mcl-processor` processes, a random one killed
   and restarted each time (needs the servers of deploy/; --skip-stack leaves it out).
3. Fuzzing (tests/support/fuzz.py): schemathesis over every operation of /openapi.json, valid and invalid
   data, `--fuzz-examples` cases per operation and mode, against a live embedded server.
4. Soak (bench/soak.py, which prints the figures over time): `lodestar serve --workers 2` fed new
   datasets by 4 clients as fast as it takes them (429s waited out as Retry-After says) for
   `--soak-seconds`; the resident memory of all its processes is sampled every 10 s, and its
   slope after `--soak-warmup` seconds gives the verdict (flat: under 2 MiB/min).

5. With --cluster, only this: the distributed run on the clusters of deploy/cluster.sh (topics,
   keyspace with 3 replicas, indices with 1), once per fault: Kafka brokers (the MCL topic's
   leader, then the MCP topic's, ...), Cassandra nodes, the OpenSearch node that is not the
   manager, each SIGKILLed `--cluster-kills` times during writes and started again at the next
   fault; then a gms or an mcl-processor killed instead; a third as many entities more written over
   REST meanwhile. A line per fault: MCPs acknowledged,
   lost, duplicates, seconds to converge after the last recovery. Then a rolling restart of
   every Kafka broker, Cassandra node and OpenSearch node, one at a time
   (tests/support/rolling_restart.py), `--cluster-rolling-entities` from the topic for each and
   a REST client writing throughout: a line per node, with the MCPs answered while it was down
   or rejoining and how long it took to be back. `--cluster-scenarios` picks either.

Figures only, never asserted. On a machine shared with other work they move between runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
from pathlib import Path

from bench.soak import MIB, soak
from gms.service import Gms, Limits
from ingest.backends import Endpoints
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from tests.support.fault_injection import RunReport, run_distributed, run_embedded
from tests.support.fuzz import fuzz
from tests.support.server import TOKEN as SERVER_TOKEN
from tests.support.server import start_server


def crash_embedded(entities: int, kills: int) -> RunReport:
    with tempfile.TemporaryDirectory(prefix="lodestar-reliability-") as root:
        return run_embedded(Path(root), entities, kills, note=lambda _: None)


def crash_distributed(entities: int, kills: int) -> RunReport:
    from tests.support.stack import Stack

    with tempfile.TemporaryDirectory(prefix="lodestar-reliability-stack-") as root:
        stack = Stack(Path(root), Endpoints.from_env())
        stack.note = lambda _: None  # type: ignore[method-assign]
        try:
            return run_distributed(stack, entities, kills)
        finally:
            stack.close()


def crash_cluster(entities: int, kills: int) -> None:
    from tests.support.cluster import FAULTS, running_cluster
    from tests.support.stack import Stack

    cluster = running_cluster()
    for label, fault in [*FAULTS.items(), ("a gms or an mcl-processor", None)]:
        with tempfile.TemporaryDirectory(prefix="lodestar-reliability-cluster-") as root:
            stack = Stack(Path(root), cluster.endpoints, replication=3)
            stack.note = lambda _: None  # type: ignore[method-assign]
            try:
                report = run_distributed(stack, entities, kills, fault=fault(cluster, stack) if fault else None,
                                         rest_entities=entities // 3)
            finally:
                stack.close()
        print(report.summary(f"cluster, {kills} x {label}"))
        for example in report.verdict.examples[:5]:
            print(f"    e.g. {example[:300]}")


def rolling_cluster(entities: int) -> None:
    from tests.support.cluster import NODES, rolling_restart, running_cluster
    from tests.support.rolling_restart import run_rolling
    from tests.support.stack import Stack

    cluster = running_cluster()
    with tempfile.TemporaryDirectory(prefix="lodestar-reliability-rolling-") as root:
        stack = Stack(Path(root), cluster.endpoints, replication=3)
        stack.note = lambda _: None  # type: ignore[method-assign]
        try:
            restarted = run_rolling(stack, rolling_restart(cluster, stack, NODES), len(NODES), entities)
        finally:
            stack.close()
    for node in restarted:
        print(f"cluster, rolling restart: {node.summary()}")
        for example in node.report.verdict.examples[:5]:
            print(f"    e.g. {example[:300]}")


def fuzz_embedded(examples: int):
    with tempfile.TemporaryDirectory(prefix="lodestar-fuzz-") as root:
        data = Path(root)
        gms = Gms.embedded(data, Limits(max_aspect_bytes=64 * 1024, max_request_bytes=1024 * 1024, max_batch=100))
        models = SqliteReadModels.in_data_dir(data, gms.registry)
        processor = MclProcessor(gms.registry, gms.codec, models)
        stop = threading.Event()
        indexing = threading.Thread(target=processor.run, args=(gms.log, stop, 0.05), daemon=True)
        indexing.start()
        live, thread = start_server(gms, models, processor)
        try:
            report = fuzz(live.url, SERVER_TOKEN, examples)
            processor.wait_until_caught_up(gms.log, 60)
            consistent = processor.check(gms.store).ok
        finally:
            thread.stop()
            stop.set()
            indexing.join(10)
            models.close()
            gms.close()
        return report, consistent


def _crash_lines(label: str, report: RunReport) -> None:
    verdict = report.verdict
    print(f"{label:<26} MCPs ingested {report.mcps:>8,}   kills survived {report.kills:>3}   "
          f"{report.seconds:7.1f} s   ({report.mcps / report.seconds:,.0f} MCP/s with the kills)   "
          f"delivered twice and applied once: {report.duplicates_absorbed}")
    print(f"{'':<26} proposals lost {verdict.lost}   MCLs duplicated {verdict.doubled_mcls} (topic), "
          f"{verdict.doubled_points} (read models)   MCLs missing {verdict.missing_mcls}   "
          f"divergences (lodestar check) {verdict.divergences}   versions checked {verdict.versions:,}")
    for example in verdict.examples[:5]:
        print(f"{'':<26} e.g. {example[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=10_900, help="about 9.2 MCPs each (100,000 by default)")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--stack-entities", type=int, default=10_900)
    parser.add_argument("--stack-kills", type=int, default=20)
    parser.add_argument("--skip-stack", action="store_true")
    parser.add_argument("--fuzz-examples", type=int, default=200)
    parser.add_argument("--soak-seconds", type=float, default=600)
    parser.add_argument("--soak-warmup", type=float, default=300)
    parser.add_argument("--cluster", action="store_true", help="only the faults on deploy/cluster.sh's clusters")
    parser.add_argument("--cluster-entities", type=int, default=2000)
    parser.add_argument("--cluster-kills", type=int, default=4)
    parser.add_argument("--cluster-rolling-entities", type=int, default=100, help="from the topic, per node restarted")
    parser.add_argument("--cluster-scenarios", default="faults,rolling", help="comma-separated: faults, rolling")
    args = parser.parse_args()
    os.environ.setdefault("LODESTAR_LOG_FORMAT", "json")
    if args.cluster:
        from tests.support.cluster import exclusive

        scenarios = args.cluster_scenarios.split(",")
        with exclusive():  # no cluster test stops a node meanwhile
            if "faults" in scenarios:
                crash_cluster(args.cluster_entities, args.cluster_kills)
            if "rolling" in scenarios:
                rolling_cluster(args.cluster_rolling_entities)
        return

    _crash_lines("crash safety (embedded)", crash_embedded(args.entities, args.kills))
    if not args.skip_stack:
        _crash_lines("crash safety (real stack)", crash_distributed(args.stack_entities, args.stack_kills))
    report, consistent = fuzz_embedded(args.fuzz_examples)
    statuses = ", ".join(f"{status}: {n}" for status, n in sorted(report.statuses.items()))
    print(f"{'fuzzing (schemathesis)':<26} cases tried {report.cases:,}   5xx seen {report.server_errors}   "
          f"other check failures {len(report.failures)}   read models equal the store: {consistent}   ({statuses})")
    report = soak(args.soak_seconds, warmup=args.soak_warmup)
    window = report.after_warmup() or report.samples[-1:]
    start, end = window[0], window[-1]
    print(f"{'soak at full rate':<26} {args.soak_seconds:.0f} s, {end.accepted:,} MCPs accepted "
          f"({end.accepted / end.seconds:,.0f} MCP/s, {end.refused:,} answered 429), all processes of lodestar serve "
          f"--workers 2 from {start.seconds:.0f} s:   RSS start {start.resident['total'] / MIB:,.0f} MiB end "
          f"{end.resident['total'] / MIB:,.0f} MiB ({report.slope('total') / MIB:+.2f} MiB/min)   of which anonymous "
          f"{start.resident['anonymous'] / MIB:,.0f} -> {end.resident['anonymous'] / MIB:,.0f} MiB "
          f"({report.slope('anonymous') / MIB:+.2f} MiB/min): {'flat' if report.flat() else 'GROWING'}")

if __name__ == "__main__":
    main()
