"""The read models on the distributed stack: search and timeseries in OpenSearch, the lineage
graph and the run-lineage tables in Cassandra. There is no transaction across them: each model's version checks make a
batch applied again (after a crash before the offsets were committed) change nothing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait

from ingest.backends import Endpoints
from mcl_processor.annotations import annotations_of
from mcl_processor.changes import ChangeBatch
from mcl_processor.lineage.cassandra import CassandraLineageGraph
from mcl_processor.opensearch.indices import client_for
from mcl_processor.readmodels import Preparer, ReadModels
from mcl_processor.runs.cassandra import CassandraRunLineage
from mcl_processor.runs.facts import run_facts_of
from mcl_processor.search.opensearch import OpenSearchSearchIndex
from mcl_processor.timeseries.opensearch import OpenSearchTimeseriesStore
from schemas.registry import EntityRegistry


class DistributedReadModels(ReadModels):
    search: OpenSearchSearchIndex
    lineage: CassandraLineageGraph
    timeseries: OpenSearchTimeseriesStore
    runs: CassandraRunLineage

    def __init__(self, search: OpenSearchSearchIndex, lineage: CassandraLineageGraph,
                 timeseries: OpenSearchTimeseriesStore, runs: CassandraRunLineage):
        self.search, self.lineage, self.timeseries, self.runs = search, lineage, timeseries, runs
        self._searching = ThreadPoolExecutor(1, thread_name_prefix="search-writes")

    @classmethod
    def connect(cls, endpoints: Endpoints, registry: EntityRegistry, keyspace: str, index_prefix: str, *,
                replication_factor: int = 1, replicas: int = 0) -> DistributedReadModels:
        """Read models on the OpenSearch and Cassandra of `endpoints` (indices `<index_prefix>_*`
        with `replicas` replicas, lineage tables in `keyspace`, created with `replication_factor`
        if absent). Raises BackendUnavailable naming a server that does not answer."""
        annotations = annotations_of(registry)
        client = client_for(endpoints)
        try:
            client.info()
            replication = {"class": "SimpleStrategy", "replication_factor": replication_factor}
            lineage = CassandraLineageGraph.connect(endpoints, keyspace, annotations, replication=replication)
        except BaseException:
            client.close()
            raise
        return cls(OpenSearchSearchIndex(client, annotations, index_prefix, replicas=replicas), lineage,
                   OpenSearchTimeseriesStore(client, index_prefix, replicas=replicas),
                   CassandraRunLineage(lineage.session, keyspace, run_facts_of(registry), replication=replication))

    def apply_changes(self, batch: ChangeBatch) -> set[str]:
        """As ReadModels does, but OpenSearch's writes go on while Cassandra's are made: each
        waits on its server's round trips, so a batch takes about the longer of the two."""
        searched = self._searching.submit(self.search.apply, batch)
        try:
            moved = self.lineage.apply(batch)
            self.runs.apply(batch)
        finally:
            wait([searched])
        searched.result()
        return moved

    def preparer(self) -> Preparer:
        return self.search.preparer()

    def close(self) -> None:
        self._searching.shutdown()
        self.lineage.close()
        self.search.client.close()
