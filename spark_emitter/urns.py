"""The dataset URN rule: one entity per table or path, whichever job reads or writes it.

    urn:li:dataset:(urn:li:dataPlatform:<platform>,<name>,<env>)

- a table of the session catalog (`saveAsTable`, `insertInto`, CTAS, `INSERT`, `spark.table`):
  platform `spark.lodestar.catalogPlatform` (default `hive`), name `<database>.<table>`;
- a table of another catalog (DataSource V2): platform the catalog's name, name `<namespace>.<table>`
  (`<table>` when its identifier has no namespace), from the catalog and identifier Spark resolved,
  not from the table's `name()`;
- files by path (parquet, csv, json, orc, text, ...): platform from the path's scheme (`file`,
  `hdfs`, `s3` for s3/s3a/s3n, `gcs` for gs, `adls` for abfs[s]/wasb[s], else the scheme; delta,
  iceberg and hudi paths take the format's name), name the path without its scheme (`/data/x`,
  `bucket/key`) and without a trailing `/`;
- a JDBC table: platform the JDBC sub-protocol (`postgresql`, `mysql`, `derby`, ...), name the
  table as given to `dbtable`;
- an in-memory DataFrame (`createDataFrame`, `range`, an RDD): platform `spark`, name
  `<app name>.<view name>` when read through a temp view, else `<app name>.local_<hash>` (the
  first 8 hex digits of the SHA-1 of its comma-joined column names);
- a DataSource V2 table without a catalog (the `noop` sink, `format(...).save()` of a V2 source):
  platform `spark`, name the table's `name()`.

`<env>` is `spark.lodestar.env` (default `PROD`). Commas, parentheses and `%` in a name are
percent-encoded (`/out,1` is `/out%2C1`), as DataHub encodes URN parts. A V2 table of the session catalog
(`spark_catalog`) is the session catalog's `<database>.<table>`, so `writeTo` and `saveAsTable` of
one table are one entity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from schemas.urns import encode_part

SESSION_CATALOG = "spark_catalog"
_SCHEMES = {"file": "file", "hdfs": "hdfs", "s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "abfs": "adls",
            "abfss": "adls", "wasb": "adls", "wasbs": "adls", "dbfs": "dbfs"}
_TABLE_FORMATS = {"delta", "iceberg", "hudi"}


@dataclass(frozen=True)
class Dataset:
    """A dataset read or written: its URN's parts, its columns (name, Spark type) and properties."""

    platform: str
    name: str
    env: str
    schema: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    properties: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def urn(self) -> str:
        return dataset_urn(self.platform, self.name, self.env)


@dataclass(frozen=True)
class Naming:
    """The settings the rule depends on."""

    app_name: str
    env: str = "PROD"
    catalog_platform: str = "hive"

    def table(self, parts: list[str], catalog: str | None = None) -> tuple[str, str]:
        """(platform, name) of a catalog table given as identifier parts (catalog optional)."""
        parts = [p for p in parts if p]
        if catalog is None and len(parts) == 3:
            catalog, parts = parts[0], parts[1:]
        if catalog in (None, SESSION_CATALOG):
            if len(parts) == 1:
                parts = ["default", *parts]
            return self.catalog_platform, ".".join(parts)
        return catalog, ".".join(parts)

    def path(self, path: str, file_format: str | None = None) -> tuple[str, str]:
        """(platform, name) of files at `path`."""
        parts = urlsplit(path)
        scheme = parts.scheme.lower() or "file"
        name = (parts.netloc + parts.path) if scheme != "file" else parts.path
        name = name.rstrip("/") or "/"
        fmt = (file_format or "").lower()
        return (fmt if fmt in _TABLE_FORMATS else _SCHEMES.get(scheme, scheme)), name

    def jdbc(self, url: str, table: str) -> tuple[str, str]:
        """(platform, name) of a JDBC table."""
        rest = url.removeprefix("jdbc:")
        return rest.split(":", 1)[0].lower() or "jdbc", table

    def local(self, columns: list[str], view: str | None) -> tuple[str, str]:
        """(platform, name) of an in-memory relation."""
        if view:
            return "spark", f"{self.app_name}.{view}"
        digest = hashlib.sha1(",".join(columns).encode()).hexdigest()[:8]
        return "spark", f"{self.app_name}.local_{digest}"


def dataset_urn(platform: str, name: str, env: str) -> str:
    """Commas and parentheses in the name (a path `/out,1`) are percent-encoded, as DataHub does."""
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},{encode_part(name)},{env})"


def field_urn(dataset: str, field_path: str) -> str:
    return f"urn:li:schemaField:({dataset},{encode_part(field_path)})"
