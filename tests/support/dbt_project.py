"""The dbt project of tests/integrations/dbt_project/ built in a folder of its own, and its two
ways into Lodestar: `dbt-ol run` (OpenLineage) and DataHub's `dbt` source. Used by
tests/integrations/test_dbt.py and tests/integrations/dbt_screenshot.py."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support.integrations import datahub_ingest, run_tool, tool_env
from tests.support.processes import TOKEN, ServeProcess
from tests.support.tool_venvs import ROOT

PROJECT = ROOT / "tests" / "integrations" / "dbt_project"
MODELS = ("stg_customers", "stg_orders", "stg_payments", "customer_revenue")
NAMESPACE = "shop"  # the OpenLineage namespace of the dbt jobs


def duckdb(table: str) -> str:
    """The warehouse table, as dbt-ol's `duckdb://<path>` + `shop.<schema>.<table>` and DataHub's
    dbt source with `target_platform: duckdb` both name it."""
    return f"urn:li:dataset:(urn:li:dataPlatform:duckdb,shop.{table},PROD)"


def dbt_node(table: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:dbt,shop.{table},PROD)"


def job(model: str) -> str:
    return f"urn:li:dataJob:(urn:li:dataFlow:(openlineage,{NAMESPACE},PROD),shop.main.shop.{model})"


@dataclass
class Project:
    """The dbt project built in `home`: seeds loaded, models run and tested (`dbt seed`,
    `dbt build`), docs generated (manifest.json, catalog.json; run_results.json of the build)."""

    home: Path
    env: dict[str, str]

    def dbt(self, *args: str, **extra: str) -> str:
        return run_tool("dbt", args[0], *args[1:], env={**self.env, **extra}, cwd=self.home / "project")

    @property
    def target(self) -> Path:
        return self.home / "target"


def build_project(home: Path) -> Project:
    shutil.copytree(PROJECT, home / "project")
    env = tool_env(home / "home", SHOP_DUCKDB_PATH=str(home / "shop.duckdb"), DBT_TARGET_PATH=str(home / "target"),
                   DBT_LOG_PATH=str(home / "logs"), DBT_PROFILES_DIR=str(home / "project"),
                   DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    built = Project(home, env)
    built.dbt("dbt", "seed")  # the sources' tables: seeds come first, no model refs them
    built.dbt("dbt", "build", "--exclude", "resource_type:seed")
    shutil.copy(built.target / "run_results.json", home / "build_results.json")
    built.dbt("dbt", "docs", "generate")
    return built


def dbt_ol_run(project: Project, lodestar: ServeProcess) -> None:
    """`dbt-ol run` with the OpenLineage HTTP transport configured by the environment."""
    out = project.dbt("dbt-ol", "run", OPENLINEAGE_URL=lodestar.url, OPENLINEAGE_API_KEY=TOKEN,
                      OPENLINEAGE_NAMESPACE=NAMESPACE)
    assert "Emitted 10 OpenLineage events" in out, out[-4000:]


def datahub_dbt(project: Project, lodestar: ServeProcess, tmp: Path) -> None:
    """DataHub's dbt source on the project's artifacts, into `lodestar`."""
    recipe = tmp / "dbt.yml"
    recipe.write_text(f"""
source:
  type: dbt
  config:
    manifest_path: {project.target / 'manifest.json'}
    catalog_path: {project.target / 'catalog.json'}
    run_results_paths: [{project.home / 'build_results.json'}]
    target_platform: duckdb
    convert_urns_to_lowercase: false
sink:
  type: datahub-rest
  config:
    server: {lodestar.url}
    token: {TOKEN}
""")
    datahub_ingest(recipe, lodestar, tmp / "home")
