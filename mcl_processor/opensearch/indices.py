"""The OpenSearch indices of the read models: a family of indices per model under a prefix.

A family (`<prefix>_<model>_<key>`, e.g. `lodestar_search_dataset`) creates each index on first
use with the settings and mappings its model gives (idempotently, so processes may race), and
never lets OpenSearch create one with dynamic mappings. Indices refresh only when told to: the
adapters refresh what a batch touched at its end, so readers see whole batches and, once a
batch is applied, all of it (the processor's `waitForIndex` contract).

Errors: a client of `client_for` raises BackendUnavailable when OpenSearch does not answer
(ingest.backends.opensearch); `bulk` raises BulkError, a BackendFailure, for items it refused.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any

import orjson
from opensearchpy import OpenSearch
from opensearchpy.exceptions import NotFoundError, RequestError, TransportError

from ingest.backends import Endpoints
from ingest.backends.errors import BackendFailure
from ingest.backends.opensearch import TranslatingTransport
from mcl_processor.staging import staging_name

DEFAULT_PREFIX = "lodestar"
BULK_BYTES = 8 * 1024 * 1024  # a bulk request stays well under OpenSearch's http.max_content_length
BULK_RESULTS = {"filter_path": "errors,items.*.status,items.*.error"}  # of each item only what bulk() returns
RESULT_WINDOW = 10_000  # OpenSearch's index.max_result_window: deeper pages continue with search_after
MISSING_OK = {"ignore_unavailable": "true", "allow_no_indices": "true"}
WHOLE_READ = {**MISSING_OK, "allow_partial_search_results": "false"}  # a shard failing fails the search
# A search failing on a shard that vanished runs again after each of these pauses, in seconds
# (see search(); the client's own retries are immediate). Measured on one node: searches fail
# for up to 54 ms after a switch, 129 ms with the machine busy; these wait 3.15 s in all.
SEARCH_RETRY_PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
_KEY = re.compile(r"[A-Za-z0-9]+")  # entity type and aspect names: nothing that means more in an index list


def client_for(endpoints: Endpoints, timeout: float = 60.0) -> OpenSearch:
    """A client of the configured OpenSearch (thread-safe; share one per process), raising
    BackendUnavailable when it does not answer (see TranslatingTransport)."""
    return OpenSearch(endpoints.opensearch_nodes, timeout=timeout, transport_class=TranslatingTransport)


class BulkError(BackendFailure):
    """Items of a bulk request failed for another reason than the caller accepts."""


class IndexFamily:
    """The indices `<prefix>_<model>_<key>` of one read model; `body(key)` gives an index's
    settings and mappings. A staging family (`staging(name)`) holds a rebuild in the indices
    `<prefix>_<model>-<name>_<key>`, which the live family's pattern does not match; `adopt`
    makes them the live family's, atomically (the live names become aliases of them). A
    staging family is read by nobody but its rebuild: it has no replicas, and what is written
    to it is refreshed only before it is read (a refresh per batch, making a segment each,
    would cost most of a bulk load's time)."""

    def __init__(self, client: OpenSearch, prefix: str, model: str, body: Callable[[str], Mapping[str, Any]],
                 shards: int = 1, replicas: int = 0, staging: str | None = None):
        self.client = client
        self.prefix, self.model = prefix, model
        self.base = f"{prefix}_{model}_" if staging is None else f"{prefix}_{model}-{staging_name(staging)}_"
        self._body = body
        self._shards, self._replicas = shards, 0 if staging else replicas
        self._ready: set[str] = set()
        self._unrefreshed: set[str] | None = None if staging is None else set()

    def staging(self, name: str) -> IndexFamily:
        """The staging family `name` (lowercase letters and digits) of this live family."""
        return IndexFamily(self.client, self.prefix, self.model, self._body, self._shards, self._replicas, name)

    @staticmethod
    def valid(key: str) -> bool:
        return _KEY.fullmatch(key) is not None

    def name(self, key: str) -> str:
        """The index of a key (an entity type or aspect name); raises ValueError for other text."""
        if not self.valid(key):
            raise ValueError(f"not an entity type or aspect name: {key!r}")
        return self.base + key.lower()

    @property
    def pattern(self) -> str:
        return self.base + "*"

    def ensure(self, keys: Iterable[str]) -> None:
        """Create the indices of these keys that do not exist yet."""
        for key in keys:
            name = self.name(key)
            if name in self._ready:
                continue
            body = dict(self._body(key))
            settings = {"number_of_shards": self._shards, "number_of_replicas": self._replicas,
                        "refresh_interval": "-1", **body.get("settings", {})}
            try:
                self.client.indices.create(index=name, body={**body, "settings": settings})
            except RequestError as err:
                if err.error == "invalid_index_name_exception" and "exists as alias" in str(err.info):
                    self._ready.add(name)  # a rebuilt index behind the name (see adopt)
                    continue
                if err.error != "resource_already_exists_exception":
                    raise
                # another process is creating it: wait until its shards have started
                self.client.cluster.health(index=name, params={"wait_for_status": "yellow",
                                                               "wait_for_no_initializing_shards": "true"})
                if "mappings" in body:  # made by an earlier version: add the fields it lacks (new facets)
                    self.client.indices.put_mapping(index=name, body=body["mappings"])
            self._ready.add(name)

    def existing(self) -> list[str]:
        """Names of the family's indices that exist."""
        try:
            return sorted(self.client.indices.get(index=self.pattern, params={"allow_no_indices": "true"}))
        except NotFoundError:
            return []

    def held_keys(self) -> set[str]:
        """The keys of the family's indices (whether the names are indices or aliases)."""
        try:
            found = self.client.indices.get_alias(index=self.pattern, params={"allow_no_indices": "true"})
        except NotFoundError:
            return set()
        return {name[len(self.base):] for index, info in found.items() for name in (index, *info.get("aliases", {}))
                if name.startswith(self.base)}

    def refresh(self, names: Iterable[str]) -> None:
        wanted = sorted(set(names))
        if wanted:
            self.client.indices.refresh(index=",".join(wanted), params=MISSING_OK)

    def written(self, names: Iterable[str]) -> None:
        """Make what was just written to these indices readable: now, or for a staging family
        before it is next read (`readable`)."""
        if self._unrefreshed is None:
            self.refresh(names)
        else:
            self._unrefreshed.update(names)

    def readable(self) -> None:
        """Before a read: refresh what a staging family was written since it was last read."""
        if self._unrefreshed:
            self.refresh(self._unrefreshed)
            self._unrefreshed.clear()

    def delete_where(self, query: Mapping[str, Any]) -> None:
        """Delete the family's documents matching `query`, gone for readers when this returns."""
        targets = self.existing()
        if targets:
            self.client.delete_by_query(index=",".join(targets), body={"query": query},
                                        params={**MISSING_OK, "refresh": "true", "conflicts": "proceed"})

    def adopt(self, staging: IndexFamily, keys: Iterable[str] | None = None) -> None:
        """Make the staging family's indices (of `keys`; None: all it has) this family's, in one
        atomic alias change: each live name becomes an alias of its staging index, and the
        index it named before (itself, or the one behind it) is deleted in the same step. A
        key given without a staging index is left empty. A staging family built without
        replicas gets this family's count first (and, if any, the switch waits for them)."""
        staged = {name[len(staging.base):]: name for name in staging.existing()}
        wanted = set(staged) if keys is None else {self.name(key)[len(self.base):] for key in keys}
        adopted = sorted(staged[key] for key in wanted if key in staged)
        if adopted and staging._replicas != self._replicas:
            self.client.indices.put_settings(index=",".join(adopted),
                                             body={"index": {"number_of_replicas": self._replicas}})
            if self._replicas:
                self.client.cluster.health(index=",".join(adopted), params={"wait_for_status": "green"})
        staging.refresh(adopted)
        actions: list[dict[str, Any]] = []
        for key in sorted(wanted):
            live = self.base + key
            actions += [{"remove_index": {"index": old}} for old in self._behind(live)]
            if key in staged:
                actions.append({"add": {"index": staged[key], "alias": live}})
        if actions:
            self.client.indices.update_aliases(body={"actions": actions})
        self._ready.clear()

    def adopted(self, name: str) -> bool:
        """Whether staging family `name` was adopted: the live names are aliases of its indices."""
        staging = self.staging(name)
        return any(staging.aliases(index) for index in staging.existing())

    def building(self, name: str) -> bool:
        """Whether staging family `name` has indices and none was adopted (a rebuild unfinished)."""
        return bool(self.staging(name).existing()) and not self.adopted(name)

    def aliases(self, index: str) -> list[str]:
        """The aliases naming an index."""
        try:
            return sorted(self.client.indices.get_alias(index=index).get(index, {}).get("aliases", {}))
        except NotFoundError:
            return []

    def _behind(self, name: str) -> list[str]:
        """The index a name stands for: itself, or the indices of the alias it is (none if neither)."""
        try:
            return sorted(self.client.indices.get(index=name))
        except NotFoundError:
            return []

    def drop(self) -> None:
        """Delete every index of the family, and of a live family its staging families' too
        (tests; uninstalling)."""
        staged: list[str] = []
        if self._unrefreshed is None:
            with suppress(NotFoundError):
                staged = list(self.client.indices.get(index=f"{self.prefix}_{self.model}-*",
                                                      params={"allow_no_indices": "true"}))
        for name in sorted({*self.existing(), *staged}):
            self.client.indices.delete(index=name, params={"ignore_unavailable": "true"})
        self._ready.clear()


Operation = tuple[Mapping[str, Any], Mapping[str, Any] | None]  # an action line and its source (none for deletes)


def bulk(client: OpenSearch, operations: Sequence[Operation], accept: frozenset[int] = frozenset()
         ) -> list[dict[str, Any]]:
    """Run bulk operations, in requests of about BULK_BYTES, and return the result of each
    (its status, and its error if it failed); raises BulkError when one failed with a status
    outside 2xx and `accept`."""
    items: list[dict[str, Any]] = []
    lines: list[bytes] = []
    size = 0
    for number, (action, source) in enumerate(operations, 1):
        lines.append(orjson.dumps(action))
        if source is not None:
            lines.append(orjson.dumps(source))
        size += len(lines[-1])
        if size >= BULK_BYTES or number == len(operations):
            response = client.bulk(body=b"\n".join(lines) + b"\n", params=BULK_RESULTS)
            items += [next(iter(item.values())) for item in response["items"]]
            lines, size = [], 0
    failed = [item for item in items if item["status"] >= 300 and item["status"] not in accept]
    if failed:
        raise BulkError(f"{len(failed)} of {len(items)} bulk operations failed, e.g. {failed[0]}")
    return items


def search(client: OpenSearch, indices: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """Search the indices as they are named at one moment. A switch to a rebuilt family deletes
    the indices the live names stood for, so a search that resolved the names just before can
    find a shard gone: it then fails whole (never answers with the hits of the other shards)
    with a 503 (after the client's own immediate retries) and runs again on the names as they
    are now, after each of SEARCH_RETRY_PAUSES (OpenSearch may take a while, on a busy node, to
    stop routing searches to the deleted indices)."""
    for pause in SEARCH_RETRY_PAUSES:
        try:
            return client.search(index=indices, body=body, params=WHOLE_READ)
        except TransportError as error:
            if error.status_code != 503:
                raise
        time.sleep(pause)
    return client.search(index=indices, body=body, params=WHOLE_READ)


def search_page(client: OpenSearch, indices: str, body: Mapping[str, Any], start: int, count: int
                ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first response (total, aggregations) and hits start..start+count of a search whose
    `sort` is a total order; pages past RESULT_WINDOW are reached with search_after (the hits
    before `start` are passed without their sources)."""
    if start + count <= RESULT_WINDOW:
        response = search(client, indices, {**body, "from": start, "size": count})
        return response, response["hits"]["hits"]
    first: dict[str, Any] | None = None
    hits: list[dict[str, Any]] = []
    after: list[Any] | None = None
    later = {key: value for key, value in body.items() if key != "aggs"} | {"track_total_hits": False}
    while len(hits) < count:
        skipping = start > 0
        request = dict(body if first is None else later)
        request["size"] = min(RESULT_WINDOW, start if skipping else count - len(hits))
        if skipping:
            request["_source"] = False
        if after is not None:
            request["search_after"] = after
        response = search(client, indices, request)
        first = first or response
        found = response["hits"]["hits"]
        if not found:
            break
        after = found[-1]["sort"]
        if skipping:
            start -= len(found)
        else:
            hits.extend(found)
    return first or {}, hits
