"""How contract tests build read models on each adapter set.

A contract class holds the tests every adapter passes; a subclass per adapter set mixes in
`OnSqlite`, `OnOpenSearch` or `OnTheDistributedStack`, whose class-scoped fixture
`models_factory` builds read models on a data directory. OpenSearch read models get index
prefixes of their own (one per data directory) and their indices are deleted when the class's
tests are done; the distributed ones' Cassandra tables go in one keyspace per data directory,
dropped then too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ingest.backends import Endpoints, cassandra_session
from mcl_processor.annotations import annotations_of
from mcl_processor.distributed import DistributedReadModels
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.lineage.sqlite import SqliteLineageGraph
from mcl_processor.opensearch.indices import client_for
from mcl_processor.readmodels import Preparer, ReadModels
from mcl_processor.readmodels_db import FILE_NAME, Database
from mcl_processor.runs.facts import run_facts_of
from mcl_processor.runs.sqlite import SqliteRunLineage
from mcl_processor.search.opensearch import OpenSearchSearchIndex
from mcl_processor.timeseries.opensearch import OpenSearchTimeseriesStore
from schemas.registry import default_registry
from tests.support.backends import unique_name

ModelsFactory = Callable[[Path], ReadModels]


def sqlite_models(data_dir: Path) -> ReadModels:
    return SqliteReadModels.in_data_dir(data_dir)


class OpenSearchModels(ReadModels):
    """Search and timeseries on OpenSearch. The lineage graph, which these contracts do not
    test, stays on SQLite in the data directory (its distributed adapter is another's)."""

    search: OpenSearchSearchIndex
    timeseries: OpenSearchTimeseriesStore

    def __init__(self, data_dir: Path, factory: OpenSearchFactory, prefix: str):
        annotations = annotations_of(default_registry())
        data_dir.mkdir(parents=True, exist_ok=True)
        self.db = Database(data_dir / FILE_NAME)
        self.search = OpenSearchSearchIndex(factory.client, annotations, prefix)
        self.lineage = SqliteLineageGraph(self.db, annotations)
        self.timeseries = OpenSearchTimeseriesStore(factory.client, prefix)
        self.runs = SqliteRunLineage(self.db, run_facts_of(default_registry()))

    def preparer(self) -> Preparer:
        return self.search.preparer()

    def close(self) -> None:
        self.db.close()


class _ModelsWithNames(ABC):
    """Builds read models whose OpenSearch indices (and tables, if any) have names of their own,
    one per data directory (reopening keeps them); `drop` deletes the indices."""

    def __init__(self) -> None:
        self.names: dict[Path, str] = {}
        self.built: list[OpenSearchModels | DistributedReadModels] = []

    def __call__(self, data_dir: Path) -> ReadModels:
        models = self.build(data_dir, self.names.setdefault(data_dir, unique_name("lodestar_test")))
        self.built.append(models)
        return models

    @abstractmethod
    def build(self, data_dir: Path, name: str) -> OpenSearchModels | DistributedReadModels: ...

    def drop(self) -> None:
        for models in self.built:
            models.search.drop()
            models.timeseries.drop()


class OpenSearchFactory(_ModelsWithNames):
    """Builds OpenSearchModels on one shared client."""

    def __init__(self, url: str):
        super().__init__()
        self.client = client_for(Endpoints(opensearch_url=url))

    def build(self, data_dir: Path, name: str) -> OpenSearchModels:
        return OpenSearchModels(data_dir, self, name)

    def drop(self) -> None:
        super().drop()
        self.client.close()


class DistributedFactory(_ModelsWithNames):
    """Builds DistributedReadModels, with a Cassandra keyspace per data directory."""

    def __init__(self, endpoints: Endpoints):
        super().__init__()
        self.endpoints = endpoints

    def build(self, data_dir: Path, name: str) -> DistributedReadModels:
        return DistributedReadModels.connect(self.endpoints, default_registry(), keyspace=name, index_prefix=name)

    def drop(self) -> None:
        super().drop()
        session = cassandra_session(self.endpoints)  # the models' own are closed with them
        try:
            for name in self.names.values():
                session.execute(f'DROP KEYSPACE IF EXISTS "{name}"')
        finally:
            session.cluster.shutdown()


class OnSqlite:
    """The embedded adapters: SQLite (FTS5)."""

    @pytest.fixture(scope="class")
    @classmethod
    def models_factory(cls) -> Iterator[ModelsFactory]:
        yield sqlite_models


class OnOpenSearch:
    """The distributed search and timeseries adapters, on the OpenSearch of `opensearch_url`."""

    @pytest.fixture(scope="class")
    @classmethod
    def models_factory(cls, opensearch_url: str) -> Iterator[ModelsFactory]:
        factory = OpenSearchFactory(opensearch_url)
        yield factory
        factory.drop()


class OnTheDistributedStack:
    """The distributed adapters together (`DistributedReadModels`): OpenSearch and Cassandra."""

    @pytest.fixture(scope="class")
    @classmethod
    def models_factory(cls, endpoints: Endpoints, cassandra_endpoints: Endpoints, opensearch_url: str
                       ) -> Iterator[ModelsFactory]:
        factory = DistributedFactory(endpoints)
        yield factory
        factory.drop()
