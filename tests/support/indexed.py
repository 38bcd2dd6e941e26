"""Proposals through a real embedded GMS, indexed by a real MCL processor into read models:
the harness most read-model tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gms.service import Gms
from gms.write_path import Result
from ingest.proposal import Proposal
from mcl_processor.processor import GROUP, TOPICS, MclProcessor
from tests.support.readmodels import ModelsFactory, sqlite_models

ACTOR = "urn:li:corpuser:tester"


class Indexed:
    """An embedded GMS and an MCL processor on the same data directory, writing the read models
    `models` builds (default: the embedded ones). `write` applies proposals and then indexes
    every MCL they produced, as the consumer group does."""

    def __init__(self, data_dir: Path, models: ModelsFactory = sqlite_models):
        self.data_dir = data_dir
        self.build_models = models
        self.gms = Gms.embedded(data_dir)
        self.models = models(data_dir)
        self.processor = MclProcessor(self.gms.registry, self.gms.codec, self.models)

    @property
    def search(self):
        return self.models.search

    @property
    def lineage(self):
        return self.models.lineage

    def write(self, *proposals: Proposal) -> list[Result]:
        results = self.gms.apply(list(proposals), ACTOR)
        assert all(r.failure is None for r in results), [r.to_json() for r in results if r.failure]
        self.index()
        return results

    def index(self) -> int:
        consumer = self.gms.log.consumer(GROUP, TOPICS)
        done = 0
        while records := consumer.poll(1000, 0):
            self.processor.process(records)
            consumer.commit(records)
            done += len(records)
        return done

    def reopen_models(self) -> None:
        self.models.close()
        self.models = self.build_models(self.data_dir)
        self.processor = MclProcessor(self.gms.registry, self.gms.codec, self.models)

    def names(self, query: str, **kwargs: Any) -> list[str | None]:
        return [hit.name for hit in self.search.query(query, count=100, **kwargs).hits]

    def close(self) -> None:
        self.models.close()
        self.gms.close()


def schema(name: str, *fields: str) -> dict[str, Any]:
    return {"schemaName": name, "platform": "urn:li:dataPlatform:hive", "version": 0, "hash": "",
            "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
            "fields": [{"fieldPath": f, "nativeDataType": "string",
                        "type": {"type": {"com.linkedin.schema.StringType": {}}}} for f in fields]}


class IndexedByModels:
    """The `indexed` harness on the read models the subclass's `models_factory` builds."""

    @pytest.fixture
    def indexed(self, models_factory: ModelsFactory, tmp_path: Path):
        harness = Indexed(tmp_path / "data", models_factory)
        yield harness
        harness.close()
