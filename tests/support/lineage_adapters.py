"""The lineage-graph adapters under contract, and the harness that feeds them real MCLs.

A factory builds an adapter from the embedded read models and the annotations; factories
are picklable, so a child process (a crash test) builds the same adapter on the same data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from cassandra.cluster import Cluster, Session

from ingest.backends import Endpoints
from mcl_processor.annotations import Annotations, annotations_of
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.lineage import LineageGraph
from mcl_processor.lineage.cassandra import CassandraLineageGraph
from mcl_processor.lineage.sqlite import SqliteLineageGraph
from tests.support.backends import unique_name
from tests.support.indexed import Indexed

GraphFactory = Callable[[SqliteReadModels, Annotations], LineageGraph]


def sqlite_graph(models: SqliteReadModels, annotations: Annotations) -> LineageGraph:
    """The embedded adapter, in the read models' own database."""
    return SqliteLineageGraph(models.db, annotations)


@dataclass(frozen=True)
class CassandraGraph:
    """The Cassandra adapter in `keyspace` (one connection per process)."""

    endpoints: Endpoints
    keyspace: str

    def __call__(self, models: SqliteReadModels, annotations: Annotations) -> LineageGraph:
        return CassandraLineageGraph(cassandra_session(self.endpoints), self.keyspace, annotations)


def keyspace_fixture(prefix: str):
    """A class-scoped fixture `keyspace` (assign it in a test class): a keyspace name of its
    own, dropped after the class's tests."""
    def keyspace(cls: type, cassandra_endpoints: Endpoints) -> Iterator[str]:
        name = unique_name(prefix)
        yield name
        cassandra_session(cassandra_endpoints).execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=120)
    return pytest.fixture(scope="class")(classmethod(keyspace))


@cache
def cassandra_session(endpoints: Endpoints) -> Session:
    """A session for this process (the driver shuts its clusters down at exit)."""
    hosts, port = endpoints.cassandra_contact_points()
    return Cluster(hosts, port=port).connect()


class IndexedWith(Indexed):
    """`Indexed` (an embedded GMS whose MCLs the MCL processor applies to the read models),
    with the lineage graph `graphs` builds in place of the embedded one."""

    def __init__(self, data_dir: Path, graphs: GraphFactory):
        super().__init__(data_dir)
        self.graphs = graphs
        self._swap()

    def _swap(self) -> None:
        self.models.lineage = self.graphs(self.models, annotations_of(self.gms.registry))

    def reopen_models(self) -> None:
        super().reopen_models()
        self._swap()
