"""Prometheus metrics of a Lodestar process, served at /metrics.

Counted where it happens, each component declaring its own: proposals by outcome and reason
(`gms/metrics.py`: every path into GMS.apply), MCL batches indexed and how long the read models
took (`mcl_processor/metrics.py`), HTTP responses by status (here). Read from the event log at
each scrape: the end offset and the committed offsets of every partition of the MCP and MCL
topics, the MCL processor's lag, and the proposals that failed after they were queued (the end
offsets of FailedMetadataChangeProposal_v1). With several processes on one port (`serve --workers N`),
`use_directory` makes every process write its counts to files there and /metrics sums them
(prometheus_client's multiprocess mode).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest, values
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector

from ingest import topics
from ingest.eventlog import EventLog

CONTENT_TYPE = CONTENT_TYPE_LATEST
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"

HTTP_RESPONSES = Counter("lodestar_http_responses", "HTTP responses by method and status", ["method", "status"])


def use_directory(path: Path) -> None:
    """Multiprocess mode: this process and those it forks from now on write their metrics to
    files in path (emptied first); /metrics adds them up."""
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROCESS_ENV] = str(path)
    values.ValueClass = values.get_value_class()


class ProcessFilesCollector(MultiProcessCollector):
    """The counts every process wrote to the directory, but for the files still being made: a
    process creates its file empty and sizes it next, and prometheus_client fails reading an
    empty one (a scrape racing a worker's first count answered 500)."""

    def collect(self) -> Iterable[Metric]:
        return self.merge([name for name in glob.glob(os.path.join(self._path, "*.db")) if _sized(name)],
                          accumulate=True)


def _sized(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except FileNotFoundError:
        return False


class LogCollector(Collector):
    """Offsets and lag of the MCP and MCL topics, read from the event log at each scrape."""

    def __init__(self, log: EventLog, groups: dict[str, tuple[str, ...]]):
        self._log = log
        self._groups = groups

    def collect(self) -> Iterator[Metric]:
        end = GaugeMetricFamily("lodestar_log_end_offset", "Next offset of each topic partition",
                                labels=["topic", "partition"])
        committed = GaugeMetricFamily("lodestar_consumer_committed_offset", "Offset each consumer group committed",
                                      labels=["group", "topic", "partition"])
        lag = GaugeMetricFamily("lodestar_consumer_lag", "Records of a partition its group has not committed"
                                " (group mcl-processor: the MCL lag)", labels=["group", "topic", "partition"])
        ends: dict[tuple[str, int], int] = {}
        for group, names in self._groups.items():
            for topic in names:
                for partition in range(self._log.partitions(topic)):
                    key = (topic, partition)
                    if key not in ends:
                        ends[key] = self._log.end_offset(topic, partition)
                        end.add_metric([topic, str(partition)], ends[key])
                    done = self._log.committed(group, topic, partition)
                    committed.add_metric([group, topic, str(partition)], done)
                    lag.add_metric([group, topic, str(partition)], max(0, ends[key] - done))
        failed = CounterMetricFamily("lodestar_failed_proposals", "Queued proposals that failed when applied,"
                                     f" appended to {topics.FAILED_MCP} (`lodestar failed` lists them), by partition",
                                     labels=["partition"])
        for partition in range(self._log.partitions(topics.FAILED_MCP)):
            failed.add_metric([str(partition)], self._log.end_offset(topics.FAILED_MCP, partition))
        yield from (end, committed, lag, failed)


def render(log: EventLog, groups: dict[str, tuple[str, ...]]) -> bytes:
    """The exposition text: this process's (or all processes') counters, then the log's offsets."""
    if os.environ.get(MULTIPROCESS_ENV):
        counted = CollectorRegistry()
        ProcessFilesCollector(counted)
    else:
        counted = REGISTRY
    offsets = CollectorRegistry(auto_describe=False)
    offsets.register(LogCollector(log, groups))
    return generate_latest(counted) + generate_latest(offsets)


def default_groups(platform_events: bool = False) -> dict[str, tuple[str, ...]]:
    """The consumer groups whose offsets /metrics shows; `platform_events`: with the platform-event
    publisher's (on Kafka)."""
    groups = {topics.MCP_GROUP: topics.PROPOSAL_TOPICS, topics.MCL_GROUP: topics.MCL_TOPICS}
    if platform_events:
        groups[topics.PLATFORM_EVENT_GROUP] = (topics.MCL_VERSIONED,)
    return groups
