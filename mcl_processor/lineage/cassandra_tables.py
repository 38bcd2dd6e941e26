"""The tables of the Cassandra lineage graph and the statements on them.

| table | primary key | for |
|---|---|---|
| `lineage_edges_by_source` | ((source), destination, type, via, owner) | downstream walks |
| `lineage_edges_by_destination` | ((destination), source, type, via, owner) | upstream walks |
| `lineage_field_edges_by_source`, `..._by_destination` | the same | field-level walks |
| `lineage_contributions` | ((owner), via, kind, source, destination, type) | what each (urn, aspect) contributed |
| `lineage_versions` | ((urn), aspect) + version, live, removed | version checks, soft-delete status |
| `lineage_entities` | ((bucket), urn) | the entities with a live traced aspect, in order |

An edge row names its owner (the entity that declared it) and `via` (the aspect), so the
same edge declared twice is two rows and each declaration is removed on its own.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping

from cassandra.cluster import Session
from cassandra.query import PreparedStatement

from ingest.backends import SCHEMA_TIMEOUT
from mcl_processor.lineage.contributions import ENTITY, FIELD

BUCKETS = 16  # partitions of lineage_entities, read together and merged by `urns`
EDGE_TABLES = {ENTITY: "lineage_edges", FIELD: "lineage_field_edges"}
SIDES = {"downstream": "by_source", "upstream": "by_destination"}  # the table a walk reads per side
TABLES = (*(f"{t}_{by}" for t in EDGE_TABLES.values() for by in SIDES.values()),
          "lineage_contributions", "lineage_versions", "lineage_entities")
DEFAULT_REPLICATION: Mapping[str, str | int] = {"class": "SimpleStrategy", "replication_factor": 1}
_KEYSPACE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")
_EDGE_KEY = "source, destination, type, via, owner"


def check_keyspace(name: str) -> str:
    if not _KEYSPACE.fullmatch(name):
        raise ValueError(f"not a keyspace name (letters, digits, _; at most 48): {name!r}")
    return name


def bucket(urn: str) -> int:
    return zlib.crc32(urn.encode()) % BUCKETS


def create_schema(session: Session, keyspace: str, replication: Mapping[str, str | int]) -> None:
    """The keyspace and tables, when absent."""
    options = ", ".join(f"'{k}': '{v}'" for k, v in replication.items())
    statements = [f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {{{options}}}"]
    for table in EDGE_TABLES.values():
        statements += [
            f"CREATE TABLE IF NOT EXISTS {keyspace}.{table}_by_source (source text, destination text, type text, "
            "via text, owner text, PRIMARY KEY ((source), destination, type, via, owner))",
            f"CREATE TABLE IF NOT EXISTS {keyspace}.{table}_by_destination (destination text, source text, "
            "type text, via text, owner text, PRIMARY KEY ((destination), source, type, via, owner))"]
    statements += [
        f"CREATE TABLE IF NOT EXISTS {keyspace}.lineage_contributions (owner text, via text, kind text, source text, "
        "destination text, type text, PRIMARY KEY ((owner), via, kind, source, destination, type))",
        f"CREATE TABLE IF NOT EXISTS {keyspace}.lineage_versions (urn text, aspect text, version bigint, "
        "live boolean, removed boolean, PRIMARY KEY ((urn), aspect))",
        f"CREATE TABLE IF NOT EXISTS {keyspace}.lineage_entities (bucket int, urn text, PRIMARY KEY ((bucket), urn))"]
    for statement in statements:  # one at a time: concurrent schema changes may disagree
        session.execute(statement, timeout=SCHEMA_TIMEOUT)


class Statements:
    """The prepared statements, in the keyspace. Edge rows are bound as (source, destination,
    type, via, owner) whatever the table's key order; reads take a list of partition keys."""

    def __init__(self, session: Session, keyspace: str):
        def prepare(cql: str) -> PreparedStatement:
            return session.prepare(cql.replace("{ks}", keyspace))

        self.edges: dict[str, dict[str, PreparedStatement]] = {}  # kind -> side -> edges of a list of nodes
        self.insert_edge: dict[str, list[PreparedStatement]] = {}  # kind -> both tables
        self.delete_edge: dict[str, list[PreparedStatement]] = {}
        self.edge_exists: dict[str, list[PreparedStatement]] = {}
        for kind, table in EDGE_TABLES.items():
            self.edges[kind] = {side: prepare(f"SELECT source, destination, type, via FROM {{ks}}.{table}_{by} "
                                              f"WHERE {'source' if by == 'by_source' else 'destination'} IN ?")
                                for side, by in SIDES.items()}
            tables = [f"{{ks}}.{table}_{by}" for by in SIDES.values()]
            key = " AND ".join(f"{c} = ?" for c in _EDGE_KEY.split(", "))
            self.insert_edge[kind] = [prepare(f"INSERT INTO {t} ({_EDGE_KEY}) VALUES (?, ?, ?, ?, ?)") for t in tables]
            self.delete_edge[kind] = [prepare(f"DELETE FROM {t} WHERE {key}") for t in tables]
            self.edge_exists[kind] = [prepare(f"SELECT owner FROM {t} WHERE {key}") for t in tables]
        contribution = "owner = ? AND via = ? AND kind = ? AND source = ? AND destination = ? AND type = ?"
        self.contributions = prepare(
            "SELECT owner, via, kind, source, destination, type FROM {ks}.lineage_contributions WHERE owner IN ?")
        self.insert_contribution = prepare("INSERT INTO {ks}.lineage_contributions "
                                           "(owner, via, kind, source, destination, type) VALUES (?, ?, ?, ?, ?, ?)")
        self.delete_contribution = prepare(f"DELETE FROM {{ks}}.lineage_contributions WHERE {contribution}")
        self.delete_contributions = prepare("DELETE FROM {ks}.lineage_contributions WHERE owner = ?")
        self.versions = prepare("SELECT urn, aspect, version, live, removed FROM {ks}.lineage_versions WHERE urn IN ?")
        self.status = prepare("SELECT urn, removed FROM {ks}.lineage_versions WHERE urn IN ?")
        self.write_version = prepare(
            "INSERT INTO {ks}.lineage_versions (urn, aspect, version, live, removed) VALUES (?, ?, ?, ?, ?)")
        self.delete_versions = prepare("DELETE FROM {ks}.lineage_versions WHERE urn = ?")
        self.list_entity = prepare("INSERT INTO {ks}.lineage_entities (bucket, urn) VALUES (?, ?)")
        self.unlist_entity = prepare("DELETE FROM {ks}.lineage_entities WHERE bucket = ? AND urn = ?")
        self.entities = prepare("SELECT urn FROM {ks}.lineage_entities WHERE bucket = ? AND urn > ? LIMIT ?")
