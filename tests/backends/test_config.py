"""Configuration: lodestar.yml and environment variables select each port's adapter and endpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from gms.service import Limits
from ingest.backends import Endpoints
from lodestar.assembly import _limits
from lodestar.config import Config, ConfigError
from lodestar.webhook_addresses import AddressRules


def test_defaults_are_the_embedded_stores(tmp_path):
    config = Config.load(data_dir=tmp_path, env={})
    assert config.embedded
    assert config.endpoints == Endpoints()


def test_the_file_in_the_data_directory_selects_adapters_and_endpoints(tmp_path):
    (tmp_path / "lodestar.yml").write_text(
        "event_log: kafka\naspect_store: cassandra\nread_models: distributed\n"
        "kafka: {bootstrap: 'k1:9092,k2:9092', prefix: prod.}\n"
        "cassandra: {hosts: [c1, 'c2:9142'], keyspace: meta}\nopensearch: {url: 'http://os:9200', prefix: idx}\n")
    config = Config.load(data_dir=tmp_path, env={})
    assert (config.event_log, config.aspect_store, config.read_models) == ("kafka", "cassandra", "distributed")
    assert not config.embedded
    assert config.endpoints == Endpoints("k1:9092,k2:9092", ("c1", "c2:9142"), "http://os:9200")
    assert config.endpoints.cassandra_contact_points() == (["c1", "c2"], 9142)
    assert (config.kafka_prefix, config.cassandra_keyspace, config.opensearch_prefix) == ("prod.", "meta", "idx")


def test_environment_variables_override_the_file(tmp_path):
    path = tmp_path / "other.yml"
    path.write_text("event_log: kafka\ncassandra: {keyspace: meta}\n")
    config = Config.load(path, env={"LODESTAR_EVENT_LOG": "sqlite", "LODESTAR_ASPECT_STORE": "cassandra",
                                    "LODESTAR_CASSANDRA_HOSTS": "a, b", "LODESTAR_OPENSEARCH_PREFIX": "t1"})
    assert (config.event_log, config.aspect_store, config.cassandra_keyspace) == ("sqlite", "cassandra", "meta")
    assert config.endpoints.cassandra_hosts == ("a", "b")
    assert config.opensearch_prefix == "t1"
    assert Config.load(env={"LODESTAR_CONFIG": str(path)}).event_log == "kafka"


def test_the_kafka_session_timeout_comes_from_the_file_or_the_environment(tmp_path):
    path = tmp_path / "lodestar.yml"
    path.write_text("kafka: {session_timeout_ms: 10000}\n")
    assert Config.load(env={}).kafka_session_timeout_ms == 45_000
    assert Config.load(path, env={}).kafka_session_timeout_ms == 10_000
    assert Config.load(path, env={"LODESTAR_KAFKA_SESSION_TIMEOUT_MS": "6000"}).kafka_session_timeout_ms == 6000


def test_the_mcl_wire_format_comes_from_the_file_or_the_environment(tmp_path):
    path = tmp_path / "lodestar.yml"
    path.write_text("kafka: {wire_format: confluent}\n")
    assert Config.load(env={}).kafka_wire_format == "lodestar"
    assert Config.load(path, env={}).kafka_wire_format == "confluent"
    assert Config.load(path, env={"LODESTAR_KAFKA_WIRE_FORMAT": "lodestar"}).kafka_wire_format == "lodestar"


def test_an_external_schema_registry_comes_from_the_file_or_the_environment(tmp_path):
    path = tmp_path / "lodestar.yml"
    path.write_text("kafka: {schema_registry_url: 'http://registry:8081'}\n")
    assert Config.load(env={}).schema_registry_url is None
    assert Config.load(path, env={}).schema_registry_url == "http://registry:8081"
    env = {"LODESTAR_SCHEMA_REGISTRY_URL": "https://lodestar:8080/schema-registry/api"}
    assert Config.load(path, env=env).schema_registry_url == "https://lodestar:8080/schema-registry/api"
    token = Config.load(path, env={"LODESTAR_SCHEMA_REGISTRY_TOKEN": "s3cret"})
    assert token.schema_registry_token == "s3cret" and "s3cret" not in repr(token)


def test_the_cassandra_lease_ttl_comes_from_the_file_or_the_environment(tmp_path):
    path = tmp_path / "lodestar.yml"
    path.write_text("cassandra: {lease_ttl: 30}\n")
    assert Config.load(env={}).cassandra_lease_ttl == 10
    assert Config.load(path, env={}).cassandra_lease_ttl == 30
    assert Config.load(path, env={"LODESTAR_CASSANDRA_LEASE_TTL": "3"}).cassandra_lease_ttl == 3


def test_replication_settings_come_from_the_file_or_the_environment(tmp_path):
    single = Config.load(env={})
    assert (single.kafka_replication_factor, single.kafka_min_insync_replicas, single.cassandra_replication_factor,
            single.opensearch_replicas) == (None, None, 1, 0)
    path = tmp_path / "lodestar.yml"
    path.write_text("kafka: {replication_factor: 3, min_insync_replicas: 2}\ncassandra: {replication_factor: 3}\n"
                    "opensearch: {replicas: 1}\n")
    cluster = Config.load(path, env={})
    assert (cluster.kafka_replication_factor, cluster.kafka_min_insync_replicas, cluster.cassandra_replication_factor,
            cluster.opensearch_replicas) == (3, 2, 3, 1)
    changed = Config.load(path, env={"LODESTAR_OPENSEARCH_REPLICAS": "0", "LODESTAR_KAFKA_MIN_INSYNC_REPLICAS": "1",
                                     "LODESTAR_CASSANDRA_REPLICATION_FACTOR": "5"})
    assert (changed.kafka_min_insync_replicas, changed.cassandra_replication_factor, changed.opensearch_replicas) \
        == (1, 5, 0)


def test_the_metadata_length_limit_comes_from_the_environment():
    assert Config.load(env={}).metadata_max_length == 50
    assert Config.load(env={"LODESTAR_METADATA_MAX_LENGTH": "120"}).metadata_max_length == 120


def test_the_size_limits_come_from_the_environment():
    assert _limits(Config.load(env={})) == Limits()
    config = Config.load(env={"LODESTAR_MAX_ASPECT_BYTES": "1024", "LODESTAR_MAX_REQUEST_BYTES": "65536"})
    assert _limits(config) == Limits(max_aspect_bytes=1024, max_request_bytes=65536)


def test_webhook_addresses_are_public_only_unless_the_environment_allows_networks():
    assert Config.load(env={}).webhook_addresses == AddressRules()
    allowed = Config.load(env={"LODESTAR_WEBHOOK_ALLOW_PRIVATE": "10.0.0.0/8, 127.0.0.1/32"}).webhook_addresses
    assert [str(network) for network in allowed.allowed] == ["10.0.0.0/8", "127.0.0.1/32"]
    assert Config.load(env={"LODESTAR_WEBHOOK_ALLOW_PRIVATE": "all"}).webhook_addresses.everything


@pytest.mark.parametrize("text, env, message", [
    ("event_log: rabbit\n", {}, "event_log must be one of sqlite, kafka, not 'rabbit'"),
    ("evnt_log: kafka\n", {}, "unknown setting(s) evnt_log"),
    ("- a\n- b\n", {}, "expected a mapping of settings, found list"),
    ("kafka: [1]\n", {}, "kafka must be a mapping, found list"),
    ("event_log: [\n", {}, "not valid YAML"),
    ("cassandra: {keyspace: Meta-Data}\n", {}, "cassandra_keyspace 'Meta-Data' must be lowercase"),
    ("", {"LODESTAR_READ_MODELS": "elastic"}, "the environment: read_models must be one of sqlite, distributed"),
    ("kafka: {session_timeout_ms: soon}\n", {}, "kafka.session_timeout_ms must be a positive number of milliseconds"),
    ("", {"LODESTAR_KAFKA_SESSION_TIMEOUT_MS": "0"},
     "the environment: LODESTAR_KAFKA_SESSION_TIMEOUT_MS must be a positive number of milliseconds, not '0'"),
    ("kafka: {wire_format: avro}\n", {}, "kafka.wire_format must be one of lodestar, confluent, not 'avro'"),
    ("", {"LODESTAR_KAFKA_WIRE_FORMAT": "Confluent"},
     "the environment: kafka.wire_format must be one of lodestar, confluent, not 'Confluent'"),
    ("kafka: {schema_registry_url: 'registry:8081'}\n", {},
     "kafka.schema_registry_url must be an http:// or https:// URL, not 'registry:8081'"),
    ("", {"LODESTAR_SCHEMA_REGISTRY_URL": "ftp://registry"},
     "the environment: kafka.schema_registry_url must be an http:// or https:// URL, not 'ftp://registry'"),
    ("cassandra: {lease_ttl: 2.5}\n", {}, "cassandra.lease_ttl must be a positive number of seconds, not 2.5"),
    ("", {"LODESTAR_CASSANDRA_LEASE_TTL": "1"},
     "the environment: cassandra.lease_ttl must be at least 2 seconds (Cassandra counts a TTL in whole seconds),"
     " not 1"),
    ("", {"LODESTAR_CASSANDRA_LEASE_TTL": "-1"},
     "the environment: LODESTAR_CASSANDRA_LEASE_TTL must be a positive number of seconds, not '-1'"),
    ("", {"LODESTAR_METADATA_MAX_LENGTH": "long"},
     "the environment: LODESTAR_METADATA_MAX_LENGTH must be a positive number of characters, not 'long'"),
    ("", {"LODESTAR_METADATA_MAX_LENGTH": "0"}, "LODESTAR_METADATA_MAX_LENGTH must be a positive number"),
    ("", {"LODESTAR_MAX_ASPECT_BYTES": "4MB"},
     "the environment: LODESTAR_MAX_ASPECT_BYTES must be a positive number of bytes, not '4MB'"),
    ("", {"LODESTAR_WEBHOOK_ALLOW_PRIVATE": "intranet"},
     "the environment: LODESTAR_WEBHOOK_ALLOW_PRIVATE: 'intranet' is not a CIDR (e.g. 10.0.0.0/8)"),
    ("cassandra: {replication_factor: 0}\n", {}, "cassandra.replication_factor must be a whole number of at least 1"),
    ("opensearch: {replicas: one}\n", {}, "opensearch.replicas must be a whole number of at least 0, not 'one'"),
    ("", {"LODESTAR_KAFKA_REPLICATION_FACTOR": "-1"},
     "the environment: LODESTAR_KAFKA_REPLICATION_FACTOR must be a whole number of at least 1, not '-1'"),
    ("kafka: {replication_factor: 2, min_insync_replicas: 3}\n", {},
     "kafka.min_insync_replicas (3) exceeds kafka.replication_factor (2): no write could succeed"),
])
def test_bad_settings_say_what_and_where(tmp_path, text, env, message):
    path = tmp_path / "lodestar.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        Config.load(path, env=env)
    assert message in str(raised.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="cannot read .*nope.yml"):
        Config.load(tmp_path / "nope.yml", env={})


def test_the_compose_file_runs_lodestar_commands_on_settings_the_configuration_accepts():
    import yaml

    from lodestar.cli.main import build_parser

    compose = Path(__file__).resolve().parents[2] / "deploy" / "docker-compose.yml"
    services = yaml.safe_load(compose.read_text())["services"]
    for name in ("gms", "mcl-processor"):
        args = build_parser().parse_args(services[name]["command"])
        assert args.command == name
        config = Config.load(env=services[name]["environment"])
        assert (config.event_log, config.aspect_store, config.read_models) == ("kafka", "cassandra", "distributed")
        assert config.endpoints.kafka_bootstrap == "kafka:19092"
