"""GMS and the read models assembled from a Config: the adapter of each port, opened.

The embedded default keeps everything in the data directory (aspects and topics in
`lodestar.db`, read models in `readmodels.db`). Any port may instead use its distributed
adapter; the data directory then still holds the admin token and this instance's id.

Opening raises ingest.backends.errors.BackendError (BackendUnavailable when a backend does not
answer), naming the backend, as every adapter does.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from gms.external_registry import ExternalSchemaRegistry
from gms.service import DATABASE, Gms, Limits
from gms.store import AspectStore
from ingest.eventlog import EventLog
from lodestar.config import Config
from mcl_processor.readmodels import ReadModels
from schemas.registry import EntityRegistry

INSTANCE_FILE = "instance.id"


def instance_id(data_dir: Path) -> str:
    """This installation's stable id (made on first use), the root of its producer ids."""
    path = data_dir / INSTANCE_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(uuid.uuid4().hex + "\n")
    return path.read_text().strip()


def open_gms(config: Config, data_dir: Path, limits: Limits | None = None, process: str = "main") -> Gms:
    """GMS on the configured aspect store and event log. `process` names this process among
    those sharing the data directory (e.g. a worker), so each has a producer id of its own."""
    if config.event_log == "sqlite" and config.aspect_store == "sqlite":
        return Gms.embedded(data_dir, limits or _limits(config), config.kafka_wire_format,
                            _external_registry(config))
    data_dir.mkdir(parents=True, exist_ok=True)
    log_ = open_event_log(config, data_dir)
    try:
        store = open_store(config, data_dir, process)
    except BaseException:
        log_.close()
        raise
    return Gms(store, log_, limits=limits or _limits(config), wire_format=config.kafka_wire_format,
               schema_registry=_external_registry(config))


def _external_registry(config: Config) -> ExternalSchemaRegistry | None:
    """The registry `kafka.schema_registry_url` names (None: Lodestar's own)."""
    if config.schema_registry_url is None:
        return None
    return ExternalSchemaRegistry(config.schema_registry_url, config.schema_registry_token)


def _limits(config: Config) -> Limits:
    sizes = {key: getattr(config, key) for key in ("max_aspect_bytes", "max_request_bytes")
             if getattr(config, key) is not None}
    return Limits(metadata_max_length=config.metadata_max_length, **sizes)


def open_event_log(config: Config, data_dir: Path) -> EventLog:
    if config.event_log == "kafka":
        from ingest.eventlog.kafka import KafkaEventLog

        return KafkaEventLog.from_endpoints(config.endpoints, prefix=config.kafka_prefix,
                                            session_timeout_ms=config.kafka_session_timeout_ms,
                                            replication=config.kafka_replication_factor or -1,
                                            min_insync_replicas=config.kafka_min_insync_replicas)
    from ingest.eventlog.sqlite import SqliteEventLog

    return SqliteEventLog(data_dir / DATABASE)


def open_store(config: Config, data_dir: Path, process: str) -> AspectStore:
    """The configured aspect store (for its MCLs, the configured event log gets them through the
    outbox); `process` as for open_gms."""
    if config.aspect_store == "cassandra":
        from gms.store.cassandra import CassandraAspectStore

        return CassandraAspectStore.connect(config.endpoints, config.cassandra_keyspace,
                                            producer_id=f"{instance_id(data_dir)}-{process}",
                                            lease_ttl=config.cassandra_lease_ttl,
                                            replication_factor=config.cassandra_replication_factor)
    from gms.store.sqlite import SqliteAspectStore

    return SqliteAspectStore(data_dir / DATABASE)  # its MCLs go through the outbox to the configured log


def open_read_models(config: Config, data_dir: Path, registry: EntityRegistry) -> ReadModels:
    """The read models on the configured adapters."""
    if config.read_models == "distributed":
        from mcl_processor.distributed import DistributedReadModels

        return DistributedReadModels.connect(config.endpoints, registry, keyspace=config.cassandra_keyspace,
                                             index_prefix=config.opensearch_prefix,
                                             replication_factor=config.cassandra_replication_factor,
                                             replicas=config.opensearch_replicas)
    from mcl_processor.embedded import SqliteReadModels

    return SqliteReadModels.in_data_dir(data_dir, registry)
