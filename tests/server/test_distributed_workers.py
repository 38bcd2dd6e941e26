"""`lodestar serve --workers 2` on Kafka, Cassandra and OpenSearch names nobody made yet: the
keyspace, tables, topics and indices are made once, before the processes that serve start
(Cassandra does not make one table safely when several clients create it at once), and the
workers then write and search through them."""

from __future__ import annotations

from pathlib import Path

from ingest.backends import Endpoints, cassandra_session
from mcl_processor.distributed import DistributedReadModels
from schemas.registry import default_registry
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, mcp
from tests.support.datahub_clients import indexed, searched
from tests.support.processes import ServeProcess


def test_serve_with_workers_on_names_nobody_made_yet_starts_writes_and_searches(
        tmp_path: Path, endpoints: Endpoints, kafka_bootstrap: str, cassandra_endpoints: Endpoints,
        opensearch_url: str) -> None:
    run = unique_name("fresh")
    env = {"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_ASPECT_STORE": "cassandra", "LODESTAR_READ_MODELS": "distributed",
           "LODESTAR_KAFKA_PREFIX": f"{run}.", "LODESTAR_CASSANDRA_KEYSPACE": run, "LODESTAR_OPENSEARCH_PREFIX": run,
           "LODESTAR_KAFKA_BOOTSTRAP": kafka_bootstrap, "LODESTAR_CASSANDRA_HOSTS": ",".join(endpoints.cassandra_hosts),
           "LODESTAR_OPENSEARCH_URL": opensearch_url}
    session = cassandra_session(endpoints, request_timeout=60)
    assert run not in session.cluster.metadata.keyspaces
    urns = [dataset_urn(f"freshworkers.t{i}") for i in range(6)]
    try:
        with ServeProcess(tmp_path / "data", env, "--workers", "2") as serve:
            client = serve.client()
            results = client.propose([mcp(urn, "datasetProperties", {"description": "made on fresh names"})
                                      for urn in urns])
            assert [r["status"] for r in results] == ["applied"] * len(urns)
            indexed(client)
            assert searched(client, "freshworkers") == set(urns)
            output = serve.output()
        assert "lodestar: error" not in output and "Traceback" not in output, output
    finally:
        models = DistributedReadModels.connect(endpoints, default_registry(), keyspace=run, index_prefix=run)
        models.search.drop()
        models.timeseries.drop()
        models.close()
        session.execute(f'DROP KEYSPACE IF EXISTS "{run}"', timeout=120)
        session.cluster.shutdown()
        drop_kafka_names(kafka_bootstrap, f"{run}.")
