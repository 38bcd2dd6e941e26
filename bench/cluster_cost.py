"""The distributed write path and end-to-end indexing on the clusters of deploy/cluster.sh against
the single-node servers of deploy/servers.sh on the same machine, and what replication costs.

    .venv/bin/python -m bench.cluster_cost [--datasets 1000] [--rounds 2] [--warmup-datasets 250]
                                           [--workers 2]

Three stacks, each `lodestar gms --workers W` and `lodestar mcl-processor` (bench.real_stack's
`split` setup) on names of their own, fed the same MCPs (4 per dataset, bench/datasets.py) over
HTTP in batches of 1,000, timed until everything is searchable (bench.real_stack.ingest):

* `single RF1`: the servers of deploy/servers.sh (one node of each), topics, keyspace and
  indices with one copy;
* `cluster RF3`: the clusters (3 Kafka brokers, 3 Cassandra nodes, 3 OpenSearch nodes, 2 with data), topics
  with 3 replicas (min.insync.replicas 2), keyspace with 3 (QUORUM and SERIAL), indices with 1
  replica: `deploy/cluster.sh env`;
* `cluster RF1`: the same clusters, topics and keyspace with 1 replica, indices with none: the
  clusters' cost without replication's.

A round runs the three one after the other (the order reversed every other round, so none
always goes first); a warm-up round first, printed, not counted. For each run: MCP/s applied by
GMS (until every POST was answered `applied`) and indexed end to end (until `waitForIndex`); CPU
seconds per 1,000 MCPs of gms (its workers included), mcl-processor (its decode workers
included) and each engine's JVMs (every node's, read from /proc/<pid>/stat: a server's figure
includes whatever else used it meanwhile); the cores all of these used on average; how busy
the machine's cores were (/proc/stat: other work included); the load average at the end.
Then the ratios: cluster RF3 / single, cluster RF1 / single, RF3 / RF1. Figures only, never
asserted; on a shared 2-core machine they move between runs. Everything made is deleted at the
end, also on failure. The clusters are held (tests.support.cluster.exclusive) so that no test
stops a node meanwhile.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.datasets import generate
from bench.real_stack import Names, Servers, drop_everything, lodestar_run, setups
from ingest.backends import Endpoints
from tests.support.cluster import exclusive, running_cluster

PROCESSES = ("gms", "mcl-processor", "kafka", "cassandra", "opensearch")


@dataclass(frozen=True)
class Target:
    """A stack to measure: where its servers are and how many copies it keeps."""

    label: str
    endpoints: Endpoints
    replication: int
    servers: Servers


@dataclass(frozen=True)
class Figures:
    applied: float  # MCP/s until every POST was answered
    indexed: float  # MCP/s until all was searchable
    cpu: dict[str, float]  # CPU seconds per 1,000 MCPs, by process (PROCESSES, each engine all its nodes)
    cores: float  # CPU seconds of those processes per second of the run
    busy: float  # share of the machine's cores busy meanwhile (any process)
    load: float  # 1-minute load average at the end

    def values(self) -> list[float]:
        return [self.applied, self.indexed, *(self.cpu.get(p, 0.0) for p in PROCESSES), sum(self.cpu.values())]


def busy_share(before: Any, after: Any) -> float:
    """The share of CPU time not idle (nor waiting on I/O) between two psutil.cpu_times()."""
    spent = {field: getattr(after, field) - getattr(before, field) for field in after._fields}
    total = sum(spent.values()) - spent.get("guest", 0) - spent.get("guest_nice", 0)  # counted in user
    return 1 - (spent["idle"] + spent.get("iowait", 0)) / total if total else 0.0


def measure(target: Target, mcps: list[dict[str, Any]], workers: int, workdir: Path, cleanup: ExitStack) -> Figures:
    names = Names()
    cleanup.callback(drop_everything, target.endpoints, names)
    before = psutil.cpu_times()
    run = lodestar_run(setups(workers)["split"], "lodestar", mcps, target.endpoints, names, workdir, target.servers,
                       target.replication)
    busy = busy_share(before, psutil.cpu_times())
    return Figures(len(mcps) / run.accepted, len(mcps) / run.elapsed,
                   {name: 1000 * seconds / len(mcps) for name, seconds in run.cpu.items()},
                   sum(run.cpu.values()) / run.elapsed, busy, os.getloadavg()[0])


HEADER = (f"{'':<28}{'applied':>9}{'indexed':>9}   CPU s per 1,000 MCPs: {'gms':>6}{'mcl-proc':>9}{'kafka':>7}"
          f"{'cassandra':>10}{'opensearch':>11}{'all':>7}   {'cores':>5}{'busy':>6}{'load':>6}")


def row(label: str, values: list[float], ratio: bool = False, tail: str = "") -> str:
    rates = "".join(f"{v:>9.2f}" if ratio else f"{v:>9,.0f}" for v in values[:2])
    cpu = "".join(f"{v:>{w}.2f}" for v, w in zip(values[2:], (6, 9, 7, 10, 11, 7), strict=True))
    return f"{label:<28}{rates}   {'':<22}{cpu}   {tail}"


def report(label: str, mcps: int, figures: dict[str, Figures]) -> None:
    print(f"{label}: {mcps:,} MCPs a stack; MCP/s applied by GMS and indexed end to end", flush=True)
    print(HEADER)
    for name, f in figures.items():
        print(row(name, f.values(), tail=f"{f.cores:>5.2f}{100 * f.busy:>5.0f}%{f.load:>6.1f}"))
    for a, b in (("cluster RF3", "single RF1"), ("cluster RF1", "single RF1"), ("cluster RF3", "cluster RF1")):
        ratios = [x / y if y else float("nan") for x, y in zip(figures[a].values(), figures[b].values(), strict=True)]
        print(row(f"ratio {a.replace('cluster ', '')} / {b.replace('cluster ', '')}", ratios, ratio=True))
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=1000, help="4 MCPs each, a measured round's per stack")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup-datasets", type=int, default=250, help="the warm-up round's (0: none)")
    parser.add_argument("--workers", type=int, default=2, help="GMS request workers (and client connections)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the cleanup below runs
    single = Endpoints.from_env()
    with exclusive():
        cluster = running_cluster().endpoints
        if cluster == single:
            sys.exit("the LODESTAR_* endpoints name the clusters: unset them to measure the single-node servers")
        targets = [Target("single RF1", single, 1, Servers(single)),
                   Target("cluster RF3", cluster, 3, Servers(cluster)),
                   Target("cluster RF1", cluster, 1, Servers(cluster))]
        print(f"{os.cpu_count()} CPUs for the servers, Lodestar and this client (shared with other work); single:"
              f" Kafka {single.kafka_bootstrap}, Cassandra {','.join(single.cassandra_hosts)}, OpenSearch"
              f" {single.opensearch_url}; cluster: Kafka {cluster.kafka_bootstrap}, Cassandra"
              f" {','.join(cluster.cassandra_hosts)}, OpenSearch {cluster.opensearch_url}", flush=True)
        for target in targets:
            nodes = ", ".join(f"{engine} {sum(n.startswith(engine + '@') for n in target.servers.nodes)}"
                              for engine in PROCESSES[2:])
            print(f"{target.label}: JVMs found by their listening addresses: {nodes}", flush=True)
        print(f"setup: {setups(args.workers)['split'].description}; load average {os.getloadavg()[0]:.1f}\n",
              flush=True)
        rounds = [("warm-up", generate(args.warmup_datasets * 4))] if args.warmup_datasets else []
        rounds += [(f"round {n}", generate(args.datasets * 4)) for n in range(1, args.rounds + 1)]
        with tempfile.TemporaryDirectory() as tmp:
            for n, (label, mcps) in enumerate(rounds):
                with ExitStack() as cleanup:  # each round's names are dropped before the next
                    order = targets if n % 2 == 0 else targets[::-1]
                    figures = {t.label: measure(t, mcps, args.workers, Path(tmp), cleanup) for t in order}
                report(label, len(mcps), {t.label: figures[t.label] for t in targets})


if __name__ == "__main__":
    main()
