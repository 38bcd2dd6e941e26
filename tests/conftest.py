"""Shared fixtures: an embedded GMS, and a live HTTP server on a free port."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gms.service import Gms, Limits
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from schemas.registry import EntityRegistry, default_registry
from tests.support.server import LiveServer, start_server

# The contract test cases every adapter passes assert as test modules do: pytest shows the values.
pytest.register_assert_rewrite("tests.contracts")

# Fixtures shared by several folders: the real servers, the distributed stack, a private Kafka broker.
pytest_plugins = ["tests.support.backends", "tests.support.stack", "tests.support.private_kafka"]


@pytest.fixture(scope="session")
def registry() -> EntityRegistry:
    return default_registry()


@pytest.fixture
def gms(tmp_path: Path) -> Iterator[Gms]:
    service = Gms.embedded(tmp_path / "data")
    yield service
    service.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """A live server with the MCL processor running beside it, as `lodestar serve` runs them."""
    service = Gms.embedded(tmp_path / "data", Limits(max_aspect_bytes=64 * 1024, max_request_bytes=1024 * 1024))
    read_models = SqliteReadModels.in_data_dir(tmp_path / "data", service.registry)
    processor = MclProcessor(service.registry, service.codec, read_models)
    stop = threading.Event()
    indexing = threading.Thread(target=processor.run, args=(service.log, stop, 0.05), daemon=True)
    indexing.start()
    live, thread = start_server(service, read_models, processor)
    yield live
    thread.stop()
    stop.set()
    indexing.join(10)
    read_models.close()
    service.close()
