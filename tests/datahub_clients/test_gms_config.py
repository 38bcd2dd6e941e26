"""GMS's `/config` as DataHub's clients read it."""

from __future__ import annotations

from importlib.metadata import version

import requests

from tests.support.server import LiveServer


def test_config_names_the_cli_version_managed_ingestion_would_run(server: LiveServer):
    config = requests.get(f"{server.url}/config", timeout=30).json()
    assert config["managedIngestion"] == {"enabled": False, "defaultCliVersion": version("acryl-datahub")}
    assert config["managedIngestion"]["defaultCliVersion"].count(".") >= 2
