"""Which adapter each port uses, and where its servers are: `lodestar.yml` or environment.

```yaml
# lodestar.yml (every key optional; shown: the distributed stack)
event_log: kafka            # sqlite (default) | kafka
aspect_store: cassandra     # sqlite (default) | cassandra
read_models: distributed    # sqlite (default) | distributed: OpenSearch search and timeseries, Cassandra lineage
kafka: {bootstrap: "127.0.0.1:9092", prefix: "", session_timeout_ms: 45000, wire_format: lodestar}
cassandra: {hosts: ["127.0.0.1:9042"], keyspace: lodestar, lease_ttl: 10}
opensearch: {url: "http://127.0.0.1:9200", prefix: lodestar}
```

Replication (the defaults fit one node of each; docs/operations.md "Running on a cluster"):
`kafka.replication_factor` of the topics Lodestar creates (default: the brokers'
`default.replication.factor`) and their `kafka.min_insync_replicas` (default: the brokers');
`cassandra.replication_factor` of the keyspace when Lodestar creates it (default 1);
`opensearch.replicas`, each index's `number_of_replicas` (default 0). They apply to what Lodestar
creates; existing topics, keyspaces and indices keep theirs. Consistency is not a setting: every
write is acknowledged by all in-sync Kafka replicas (`acks=all`, idempotent producers) and Cassandra
reads and writes are QUORUM, lightweight transactions SERIAL, which is what the guarantees need.

`kafka.session_timeout_ms` is how long a consumer-group member may go unheard before its
partitions move to the others (a killed GMS or MCL processor is replaced after it; the broker
bounds it, by default to 6000..1800000).

`kafka.wire_format` is how MCLs are written to the MCL topics: `lodestar` (default: Avro
single-object encoding with Lodestar's schema) or `confluent` (DataHub's `MetadataChangeLog`
schema in Confluent's framing, the schema in Lodestar's registry, for DataHub's own consumers).
Every reader reads both (schemas/mcl_wire.py).

`kafka.schema_registry_url` names an external Confluent-compatible schema registry (Confluent's
Schema Registry, Apicurio's `/apis/ccompat/v7`, another Lodestar's `/schema-registry/api`):
Lodestar then registers the schemas it writes with (MCLs in the confluent format, platform
events) there and reads DataHub's records with the schemas found there, instead of in its own
registry (which `/schema-registry/api/` still serves). Unset: its own. `user:password@` in the
URL is sent as Basic authentication; `LODESTAR_SCHEMA_REGISTRY_TOKEN` (environment only) as a
Bearer token.

`cassandra.lease_ttl` (seconds, default 10) is how long a GMS's lease on its producer id
outlives its last renewal: a GMS that died is taken over by another (its pending MCLs
published) about this long after, and a restarted one waits up to this long for its own.

Environment variables override the file: `LODESTAR_EVENT_LOG`, `LODESTAR_ASPECT_STORE`,
`LODESTAR_READ_MODELS`, `LODESTAR_KAFKA_BOOTSTRAP`, `LODESTAR_KAFKA_PREFIX`,
`LODESTAR_KAFKA_SESSION_TIMEOUT_MS`, `LODESTAR_KAFKA_WIRE_FORMAT`, `LODESTAR_SCHEMA_REGISTRY_URL`,
`LODESTAR_CASSANDRA_HOSTS` (comma-separated),
`LODESTAR_CASSANDRA_KEYSPACE`, `LODESTAR_CASSANDRA_LEASE_TTL`, `LODESTAR_OPENSEARCH_URL`,
`LODESTAR_OPENSEARCH_PREFIX`, `LODESTAR_KAFKA_REPLICATION_FACTOR`, `LODESTAR_KAFKA_MIN_INSYNC_REPLICAS`,
`LODESTAR_CASSANDRA_REPLICATION_FACTOR`, `LODESTAR_OPENSEARCH_REPLICAS`. The file is `--config`, else
`LODESTAR_CONFIG`, else `lodestar.yml` in the data directory if it exists.

`LODESTAR_METADATA_MAX_LENGTH` (environment only; default 50, CDAP's) is the longest tag,
property key or value the v3 metadata API accepts. `LODESTAR_MAX_ASPECT_BYTES` (default 4 MiB:
an aspect's value, and what a JSON Patch may build) and `LODESTAR_MAX_REQUEST_BYTES` (default
64 MiB: a request body) bound writes (environment only; docs/access-control.md, Limits).

`LODESTAR_WEBHOOK_ALLOW_PRIVATE` (environment, or `--webhook-allow-private`) allows webhook URLs
to point to non-public addresses: `all`, or comma-separated CIDRs (lodestar.webhook_addresses;
unset: public addresses only).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ingest.backends import MIN_LEASE_TTL, Endpoints
from lodestar.webhook_addresses import ALLOW_ENV, AddressRules
from schemas.mcl_wire import LODESTAR, WIRE_FORMATS

CHOICES = {"event_log": ("sqlite", "kafka"), "aspect_store": ("sqlite", "cassandra"),
           "read_models": ("sqlite", "distributed")}
# The adapters' client libraries, by setting: (extra of pyproject.toml, module the adapter imports).
CLIENTS = {("event_log", "kafka"): (("kafka", "confluent_kafka"),),
           ("aspect_store", "cassandra"): (("cassandra", "cassandra"),),
           ("read_models", "distributed"): (("opensearch", "opensearchpy"), ("cassandra", "cassandra"))}
# The replication settings: (section of the file, key), each also LODESTAR_<SECTION>_<KEY>.
REPLICATION = (("kafka", "replication_factor"), ("kafka", "min_insync_replicas"), ("cassandra", "replication_factor"),
               ("opensearch", "replicas"))
FILE_NAME = "lodestar.yml"
_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")  # a keyspace, topic or index prefix


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the key and the source."""


@dataclass(frozen=True)
class Config:
    event_log: str = "sqlite"
    aspect_store: str = "sqlite"
    read_models: str = "sqlite"
    endpoints: Endpoints = field(default_factory=Endpoints)
    kafka_prefix: str = ""
    kafka_session_timeout_ms: int = 45_000
    kafka_wire_format: str = LODESTAR
    schema_registry_url: str | None = None  # an external registry instead of Lodestar's own
    schema_registry_token: str | None = field(default=None, repr=False)  # its Bearer token (environment only)
    cassandra_keyspace: str = "lodestar"
    cassandra_lease_ttl: int = 10
    opensearch_prefix: str = "lodestar"
    metadata_max_length: int = 50
    max_aspect_bytes: int | None = None  # None: GMS's default (gms.service.Limits)
    max_request_bytes: int | None = None
    webhook_addresses: AddressRules = field(default_factory=AddressRules)  # where webhook URLs may point
    kafka_replication_factor: int | None = None  # None: the brokers' default
    kafka_min_insync_replicas: int | None = None  # None: the brokers' default
    cassandra_replication_factor: int = 1
    opensearch_replicas: int = 0

    @property
    def embedded(self) -> bool:
        """Every port on SQLite in the data directory."""
        return (self.event_log, self.aspect_store, self.read_models) == ("sqlite", "sqlite", "sqlite")

    def missing_clients(self) -> list[str]:
        """What the chosen adapters need and this installation lacks: one line per setting,
        naming the extra that brings its client and the command that installs it."""
        missing = []
        for key in CHOICES:
            for extra, module in CLIENTS.get((key, getattr(self, key)), ()):
                if not _installed(module):
                    missing.append(f"{key}: {getattr(self, key)} needs the {module} client, which is not installed:"
                                   f" pip install 'lodestar[{extra}]'")
        return missing

    @classmethod
    def load(cls, path: Path | None = None, data_dir: Path | None = None,
             env: Mapping[str, str] | None = None) -> Config:
        """The file (see the module docstring for which), then the environment over it."""
        env = os.environ if env is None else env
        if path is None and env.get("LODESTAR_CONFIG"):
            path = Path(env["LODESTAR_CONFIG"])
        if path is None and data_dir is not None and (data_dir / FILE_NAME).exists():
            path = data_dir / FILE_NAME
        config = cls._from_file(path) if path is not None else cls()
        return config._with_env(env)

    @classmethod
    def _from_file(cls, path: Path) -> Config:
        try:
            raw = yaml.safe_load(path.read_text()) or {}
        except OSError as err:
            raise ConfigError(f"cannot read {path}: {err.strerror or err}") from None
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML: {err}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a mapping of settings, found {type(raw).__name__}")
        known = {*CHOICES, "kafka", "cassandra", "opensearch"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        kafka, cassandra, opensearch = (_section(raw, name, path) for name in ("kafka", "cassandra", "opensearch"))
        hosts = cassandra.get("hosts", list(Endpoints().cassandra_hosts))
        if isinstance(hosts, str):
            hosts = [hosts]
        endpoints = Endpoints(kafka_bootstrap=str(kafka.get("bootstrap", Endpoints().kafka_bootstrap)),
                              cassandra_hosts=tuple(str(h) for h in hosts),
                              opensearch_url=str(opensearch.get("url", Endpoints().opensearch_url)))
        values: dict[str, Any] = {key: str(raw[key]) for key in CHOICES if key in raw}
        values.update(_present(kafka_prefix=kafka.get("prefix"), kafka_wire_format=kafka.get("wire_format"),
                               schema_registry_url=kafka.get("schema_registry_url"),
                               cassandra_keyspace=cassandra.get("keyspace"),
                               opensearch_prefix=opensearch.get("prefix")))
        if kafka.get("session_timeout_ms") is not None:
            values["kafka_session_timeout_ms"] = _positive(kafka["session_timeout_ms"], "kafka.session_timeout_ms",
                                                           str(path), "milliseconds")
        if cassandra.get("lease_ttl") is not None:
            values["cassandra_lease_ttl"] = _positive(cassandra["lease_ttl"], "cassandra.lease_ttl", str(path),
                                                      "seconds")
        for section, key in REPLICATION:
            value = {"kafka": kafka, "cassandra": cassandra, "opensearch": opensearch}[section].get(key)
            if value is not None:
                values[f"{section}_{key}"] = _count(value, f"{section}.{key}", str(path), zero=key == "replicas")
        return cls(endpoints=endpoints, **values)._checked(str(path))

    def _with_env(self, env: Mapping[str, str]) -> Config:
        values: dict[str, Any] = {key: env[f"LODESTAR_{key.upper()}"] for key in CHOICES
                                  if env.get(f"LODESTAR_{key.upper()}")}
        values.update(_present(kafka_prefix=env.get("LODESTAR_KAFKA_PREFIX"),
                               kafka_wire_format=env.get("LODESTAR_KAFKA_WIRE_FORMAT"),
                               schema_registry_url=env.get("LODESTAR_SCHEMA_REGISTRY_URL"),
                               schema_registry_token=env.get("LODESTAR_SCHEMA_REGISTRY_TOKEN"),
                               cassandra_keyspace=env.get("LODESTAR_CASSANDRA_KEYSPACE"),
                               opensearch_prefix=env.get("LODESTAR_OPENSEARCH_PREFIX")))
        for key, unit in (("kafka_session_timeout_ms", "milliseconds"), ("cassandra_lease_ttl", "seconds"),
                          ("metadata_max_length", "characters"), ("max_aspect_bytes", "bytes"),
                          ("max_request_bytes", "bytes")):
            if env.get(f"LODESTAR_{key.upper()}"):
                values[key] = _positive(env[f"LODESTAR_{key.upper()}"], f"LODESTAR_{key.upper()}", "the environment",
                                        unit)
        if env.get(ALLOW_ENV):
            values["webhook_addresses"] = webhook_addresses(env[ALLOW_ENV], f"the environment: {ALLOW_ENV}")
        for section, key in REPLICATION:
            name = f"LODESTAR_{section.upper()}_{key.upper()}"
            if env.get(name):
                values[f"{section}_{key}"] = _count(env[name], name, "the environment", zero=key == "replicas")
        endpoints = Endpoints.from_env(env, base=self.endpoints)
        return replace(self, endpoints=endpoints, **values)._checked("the environment")

    def _checked(self, source: str) -> Config:
        if self.cassandra_lease_ttl < MIN_LEASE_TTL:
            raise ConfigError(f"{source}: cassandra.lease_ttl must be at least {MIN_LEASE_TTL} seconds"
                              f" (Cassandra counts a TTL in whole seconds), not {self.cassandra_lease_ttl}")
        for key, allowed in CHOICES.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"{source}: {key} must be one of {', '.join(allowed)}, not {getattr(self, key)!r}")
        for key in ("cassandra_keyspace", "opensearch_prefix"):
            if not _NAME.fullmatch(getattr(self, key)):
                raise ConfigError(f"{source}: {key} {getattr(self, key)!r} must be lowercase letters, digits and _,"
                                  " starting with a letter")
        if self.kafka_wire_format not in WIRE_FORMATS:
            raise ConfigError(f"{source}: kafka.wire_format must be one of {', '.join(WIRE_FORMATS)},"
                              f" not {self.kafka_wire_format!r}")
        if self.schema_registry_url is not None and not re.fullmatch(r"https?://[^/\s]+(/\S*)?",
                                                                     self.schema_registry_url):
            raise ConfigError(f"{source}: kafka.schema_registry_url must be an http:// or https:// URL,"
                              f" not {self.schema_registry_url!r}")
        if (self.kafka_min_insync_replicas is not None and self.kafka_replication_factor is not None
                and self.kafka_min_insync_replicas > self.kafka_replication_factor):
            raise ConfigError(f"{source}: kafka.min_insync_replicas ({self.kafka_min_insync_replicas}) exceeds"
                              f" kafka.replication_factor ({self.kafka_replication_factor}): no write could succeed")
        if self.kafka_prefix and not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", self.kafka_prefix):
            raise ConfigError(f"{source}: kafka prefix {self.kafka_prefix!r} may hold only letters, digits, . _ -")
        return self


def webhook_addresses(value: str, source: str) -> AddressRules:
    """The webhook address rules a setting's value says; ConfigError naming `source` if it is bad."""
    try:
        return AddressRules.parse(value, source)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def _section(raw: Mapping[str, Any], name: str, path: Path) -> dict[str, Any]:
    section = raw.get(name) or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: {name} must be a mapping, found {type(section).__name__}")
    return section


def _positive(value: Any, key: str, source: str, unit: str) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit() or int(value) < 1:
        raise ConfigError(f"{source}: {key} must be a positive number of {unit}, not {value!r}")
    return int(value)


def _count(value: Any, key: str, source: str, *, zero: bool) -> int:
    """A replica count: a whole number, at least 1 (0 too where `zero`)."""
    least = 0 if zero else 1
    if isinstance(value, bool) or not str(value).strip().isdigit() or int(value) < least:
        raise ConfigError(f"{source}: {key} must be a whole number of at least {least}, not {value!r}")
    return int(value)


def _present(**values: Any) -> dict[str, str]:
    return {key: str(value) for key, value in values.items() if value is not None and value != ""}


def _installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
