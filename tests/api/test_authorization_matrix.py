"""The authorization matrix: every route of the app (native, DataHub-compatible, CDAP v3, OpenLineage,
search, lineage, timeseries, runs, access, UI) called by anonymous, outsider (a token, no grant),
reader (READ on the instance), writer (READ and WRITE on the instance) and admin; and the proofs
that search (native and CDAP), autocomplete, lineage and entity reads reveal nothing a caller may
not read, not even through totals, facets, edges or a 404 that a 403 would hide. Token checks are constant-time."""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import requests

from gms.service import Gms
from lodestar.api import auth
from lodestar.api.app import create_app
from lodestar.api.auth import TokenAuth
from mcl_processor.embedded import SqliteReadModels
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import mcp, properties, proposal
from tests.support.metadata_fixtures import cdap_dataset, dataset_mcps
from tests.support.server import LiveServer

CUSTOMERS, SECRET = cdap_dataset("default", "customers"), cdap_dataset("sales", "secretleads")
FIELD = f"urn:li:schemaField:({CUSTOMERS},ssn)"
RUN = "urn:li:dataProcessInstance:run1"
JOB = "urn:li:dataJob:(urn:li:dataFlow:(cdap,App,default),Loader)"
WINDOW = "start=0&end=4102444800"
SR = "/schema-registry/api"  # the schema registry (Confluent's API)
q = quote


@dataclass(frozen=True)
class Call:
    """One request of the matrix; `kind` says who may make it: public (anyone), authenticated (any
    token), read (READ), write (WRITE), admin (ADMIN on the instance)."""

    kind: str
    method: str
    route: str  # the route's template, as the app registers it
    path: str
    body: Any = None


def matrix() -> list[Call]:
    ds = f"/v1/entities/{q(CUSTOMERS, safe='')}"
    v3 = "/v3/namespaces/default/datasets/customers/metadata"
    by_urn = f"/v3/urns/{q(CUSTOMERS, safe='')}/metadata"
    event = {"eventType": "COMPLETE", "eventTime": "2024-01-01T00:00:00Z",
             "run": {"runId": "3f1c1c0e-0000-4000-8000-000000000001"}, "job": {"namespace": "default", "name": "j"},
             "inputs": [], "outputs": [], "producer": "matrix"}
    return [
        Call("public", "GET", "/health", "/health"),
        Call("public", "GET", "/health/ready", "/health/ready"),
        Call("public", "GET", "/metrics", "/metrics"),
        Call("public", "GET", "/config", "/config"),
        Call("public", "GET", "/openapi.json", "/openapi.json"),
        Call("public", "GET", "/", "/"),
        Call("public", "GET", "/ui/{name}", "/ui/app.js"),
        Call("read", "GET", "/v1/entities/{urn}", ds),
        Call("read", "GET", "/v1/entities/{urn}/aspects/{aspect}", f"{ds}/aspects/datasetProperties"),
        Call("read", "GET", "/v1/entities/{urn}/aspects/{aspect}/versions", f"{ds}/aspects/datasetProperties/versions"),
        Call("authenticated", "GET", "/v1/search", "/v1/search?query=customers"),  # only what the caller may read
        Call("authenticated", "GET", "/v1/autocomplete", "/v1/autocomplete?query=cust"),
        Call("authenticated", "GET", "/v3/namespaces/{ns}/metadata/search",
             "/v3/namespaces/default/metadata/search?query=*"),
        Call("authenticated", "GET", "/v3/metadata/search", "/v3/metadata/search?query=customers"),
        Call("authenticated", "POST", "/api/graphql", "/api/graphql",  # reads only what the caller may read
             {"query": '{ searchAcrossEntities(input: {query: "customers"}) { total } }'}),
        Call("authenticated", "POST", "/api/v2/graphql", "/api/v2/graphql",  # the same, at DataHub frontend's path
             {"query": '{ searchAcrossEntities(input: {query: "customers"}) { total } }'}),
        Call("read", "GET", "/entities/{urn}", f"/entities/{q(CUSTOMERS, safe='')}"),
        Call("public", "GET", "/admin", "/admin"),
        Call("public", "POST", "/logIn", "/logIn", []),  # not credentials: 400 (wrong ones: 401)
        Call("public", "GET", "/logOut", "/logOut"),
        Call("public", "POST", "/signUp", "/signUp", []),
        Call("authenticated", "GET", "/openapi/operations/identity/user/urn", "/openapi/operations/identity/user/urn"),
        # the security audit log: any principal reads its own events, ADMIN every one
        Call("authenticated", "POST", "/openapi/v1/events/audit/search", "/openapi/v1/events/audit/search", {}),
        Call("public", "POST", "/resetNativeUserCredentials", "/resetNativeUserCredentials", []),
        Call("admin", "PUT", "/v1/access/principals/{name}/password", "/v1/access/principals/outsider/password",
             {"password": "a long enough password"}),
        Call("read", "GET", "/v1/lineage", f"/v1/lineage?urn={q(CUSTOMERS, safe='')}"),
        Call("read", "GET", "/v1/lineage/fields", f"/v1/lineage/fields?urn={q(FIELD, safe='')}"),
        Call("read", "GET", "/v1/timeseries/{urn}/{aspect}", f"/v1/timeseries/{q(CUSTOMERS, safe='')}/datasetProfile"),
        Call("read", "GET", "/v1/runs/{urn}", f"/v1/runs/{q(RUN, safe='')}"),
        Call("read", "GET", "/v1/runs", f"/v1/runs?program={q(JOB, safe='')}"),
        Call("read", "GET", "/v1/lineage/runs", f"/v1/lineage/runs?urn={q(CUSTOMERS, safe='')}&start=now-1d&end=now"),
        Call("read", "GET", "/v3/namespaces/{ns}/{tail}", v3),
        Call("read", "GET", "/v3/urns/{urn}/{tail}", by_urn),
        Call("read", "GET", "/v3/namespaces/{ns}/datasets/{name}/lineage",
             "/v3/namespaces/default/datasets/customers/lineage?start=now-1d&end=now"),
        Call("read", "GET", "/v3/namespaces/{ns}/streams/{name}/lineage",
             "/v3/namespaces/default/streams/clicks/lineage?start=now-1d&end=now"),
        Call("read", "GET", "/v3/namespaces/{ns}/datasets/{ds}/lineage/fields",
             f"/v3/namespaces/default/datasets/customers/lineage/fields?{WINDOW}"),
        Call("read", "GET", "/v3/namespaces/{ns}/datasets/{ds}/lineage/fields/{field}",
             f"/v3/namespaces/default/datasets/customers/lineage/fields/ssn?{WINDOW}&direction=both"),
        Call("read", "GET", "/v3/namespaces/{ns}/datasets/{ds}/lineage/fields/{field}/operations",
             f"/v3/namespaces/default/datasets/customers/lineage/fields/ssn/operations?{WINDOW}&direction=both"),
        Call("read", "GET", "/v3/namespaces/{ns}/endpoints/{endpoint}/fields/lineage",
             f"/v3/namespaces/default/endpoints/customers/fields/lineage?{WINDOW}&direction=both"),
        Call("read", "GET", "/v3/namespaces/{ns}/endpoints/{endpoint}/fields/{field}/lineage",
             f"/v3/namespaces/default/endpoints/customers/fields/ssn/lineage?{WINDOW}&direction=incoming"),
        Call("read", "GET", "/v3/namespaces/{ns}/endpoints/{endpoint}/fields/{field}/lineage/simple",
             f"/v3/namespaces/default/endpoints/customers/fields/ssn/lineage/simple?{WINDOW}&direction=incoming"),
        Call("authenticated", "GET", "/v1/ui/privileges", f"/v1/ui/privileges?urn={q(CUSTOMERS, safe='')}"),
        Call("read", "GET", "/aspects/{urn}", f"/aspects/{q(CUSTOMERS, safe='')}?aspect=datasetProperties"),
        Call("read", "GET", "/entitiesV2/{urn}", f"/entitiesV2/{q(CUSTOMERS, safe='')}"),
        Call("read", "GET", "/entitiesV2", f"/entitiesV2?ids=List({q(CUSTOMERS, safe='')})"),
        Call("read", "GET", "/openapi/relationships/v1/", f"/openapi/relationships/v1/?urn={q(CUSTOMERS, safe='')}"
             "&direction=INCOMING&relationshipTypes=DownstreamOf"),
        Call("read", "GET", "/openapi/relationships/v1", f"/openapi/relationships/v1?urn={q(CUSTOMERS, safe='')}"),
        Call("read", "GET", "/openapi/v2/timeline/v1/{urn}",
             f"/openapi/v2/timeline/v1/{q(CUSTOMERS, safe='')}?categories=TAG"),
        Call("authenticated", "GET", "/openapi/v1/registry/models/entity/specifications",
             "/openapi/v1/registry/models/entity/specifications"),
        Call("read", "POST", "/aspects", "/aspects?action=getTimeseriesAspectValues",
             {"urn": CUSTOMERS, "entity": "dataset", "aspect": "datasetProfile", "latestValue": True}),
        Call("authenticated", "POST", "/aspects", "/aspects?action=getCount", {"aspect": "datasetProperties"}),
        Call("authenticated", "POST", "/entities", "/entities?action=search", {"input": "*", "entity": "dataset"}),
        Call("authenticated", "POST", "/entities", "/entities?action=listUrns", {"entity": "dataset"}),
        Call("read", "POST", "/entities", "/entities?action=deleteReferences", {"urn": CUSTOMERS, "dryRun": True}),
        Call("authenticated", "GET", "/v1/access/grants", "/v1/access/grants"),
        Call("write", "POST", "/v1/proposals", "/v1/proposals",
             {"proposals": [mcp(CUSTOMERS, "datasetProperties", properties("by matrix"))]}),
        Call("write", "POST", "/aspects", "/aspects?action=ingestProposal",
             {"proposal": mcp(CUSTOMERS, "globalTags", {"tags": []})}),
        Call("write", "POST", "/v3/namespaces/{ns}/{tail}", f"{v3}/tags", ["matrix"]),
        Call("write", "POST", "/v3/urns/{urn}/{tail}", f"{by_urn}/properties", {"matrix": "yes"}),
        Call("write", "DELETE", "/v3/namespaces/{ns}/{tail}", f"{v3}/tags/matrix"),
        Call("write", "DELETE", "/v3/urns/{urn}/{tail}", f"{by_urn}/properties/matrix"),
        Call("write", "POST", "/v3/namespaces/{ns}/streams/{name}", "/v3/namespaces/default/streams/clicks?source=web"),
        Call("write", "POST", "/v3/namespaces/{ns}/streams/{name}/batch",
             "/v3/namespaces/default/streams/clicks/batch?source=web"),
        Call("write", "POST", "/v3/namespaces/{ns}/streams/{name}/async",
             "/v3/namespaces/default/streams/clicks/async?source=web"),
        Call("write", "POST", "/api/v1/lineage", "/api/v1/lineage", event),
        Call("write", "POST", "/openapi/openlineage/api/v1/lineage", "/openapi/openlineage/api/v1/lineage", event),
        Call("write", "DELETE", "/v1/entities/{urn}", ds),
        Call("write", "POST", "/entities", "/entities?action=delete", {"urn": cdap_dataset("default", "scratch")}),
        Call("write", "POST", "/aspects/", "/aspects/?action=ingestProposal",
             {"proposal": mcp(CUSTOMERS, "globalTags", {"tags": []})}),
        Call("write", "POST", "/entities/", "/entities/?action=delete", {"urn": cdap_dataset("default", "scratch")}),
        Call("write", "POST", "/usageStats", "/usageStats?action=batchIngest", {"buckets": [
            {"bucket": 0, "duration": "DAY", "resource": CUSTOMERS, "metrics": {"uniqueUserCount": 1}}]}),
        Call("write", "POST", "/usageStats/", "/usageStats/?action=batchIngest", {"buckets": [
            {"bucket": 1, "duration": "DAY", "resource": CUSTOMERS, "metrics": {"uniqueUserCount": 1}}]}),
        Call("authenticated", "POST", "/runs", "/runs?action=list", {}),
        Call("authenticated", "POST", "/runs/", "/runs/?action=describe", {"runId": "matrix"}),
        Call("write", "POST", "/runs", "/runs?action=rollback", {"runId": "matrix", "dryRun": True}),
        *openapi_entity_calls(),
        Call("admin", "POST", "/v1/access/principals", "/v1/access/principals", {"name": "newcomer"}),
        Call("admin", "POST", "/v1/access/tokens", "/v1/access/tokens", {"principal": "outsider"}),
        Call("admin", "POST", "/v1/access/grants", "/v1/access/grants",
             {"principal": "outsider", "resource": "sales", "privileges": ["READ"]}),
        Call("admin", "DELETE", "/v1/access/grants", "/v1/access/grants?principal=outsider&resource=sales"),
        Call("admin", "DELETE", "/v1/access/tokens/{id}", "/v1/access/tokens/" + "0" * 64),
        Call("admin", "DELETE", "/v1/access/principals/{name}", "/v1/access/principals/newcomer"),
        Call("admin", "POST", "/v1/webhooks", "/v1/webhooks", {"url": "http://127.0.0.1:9/hook"}),
        Call("admin", "GET", "/v1/webhooks", "/v1/webhooks"),
        Call("admin", "GET", "/v1/webhooks/{id}", "/v1/webhooks/0"),
        Call("admin", "GET", "/v1/webhooks/{id}/dead-letters", "/v1/webhooks/0/dead-letters"),
        Call("admin", "POST", "/v1/webhooks/{id}/rotate", "/v1/webhooks/0/rotate", {"graceSeconds": 0}),
        Call("admin", "DELETE", "/v1/webhooks/{id}", "/v1/webhooks/0"),
        Call("public", "GET", f"{SR}/subjects", f"{SR}/subjects"),
        Call("public", "POST", f"{SR}/subjects/{{subject}}", f"{SR}/subjects/orders-value", {"schema": '"string"'}),
        Call("public", "GET", f"{SR}/subjects/{{subject}}/versions", f"{SR}/subjects/orders-value/versions"),
        Call("write", "POST", f"{SR}/subjects/{{subject}}/versions", f"{SR}/subjects/orders-value/versions",
             {"schema": '"string"'}),
        Call("public", "GET", f"{SR}/subjects/{{subject}}/versions/{{version}}",
             f"{SR}/subjects/orders-value/versions/latest"),
        Call("public", "GET", f"{SR}/subjects/{{subject}}/versions/{{version}}/schema",
             f"{SR}/subjects/orders-value/versions/1/schema"),
        Call("public", "GET", f"{SR}/schemas/ids/{{id}}", f"{SR}/schemas/ids/1"),
        Call("public", "GET", f"{SR}/config", f"{SR}/config"),
        Call("write", "PUT", f"{SR}/config", f"{SR}/config", {"compatibility": "BACKWARD"}),
        Call("public", "GET", f"{SR}/config/{{subject}}", f"{SR}/config/orders-value"),
        Call("write", "PUT", f"{SR}/config/{{subject}}", f"{SR}/config/orders-value", {"compatibility": "NONE"}),
    ]


def openapi_entity_calls() -> list[Call]:
    """DataHub's OpenAPI entity routes (lodestar/api/datahub_openapi.py)."""
    v3, v2 = "/openapi/v3/entity/{type}", "/openapi/v2/entity/{type}"
    ds, scratch = q(CUSTOMERS, safe=""), q(cdap_dataset("default", "scratch"), safe="")
    tags = {"tags": [{"tag": "urn:li:tag:matrix"}]}
    patch = {"patch": [{"op": "add", "path": "/tags/urn:li:tag:matrix", "value": {"tag": "urn:li:tag:matrix"}}]}
    return [
        Call("read", "GET", v3 + "/{urn}", f"/openapi/v3/entity/dataset/{ds}"),
        Call("read", "GET", v3 + "/{urn}/{aspect}", f"/openapi/v3/entity/dataset/{ds}/datasetProperties"),
        Call("read", "POST", v3 + "/batchGet", "/openapi/v3/entity/dataset/batchGet", [{"urn": CUSTOMERS}]),
        Call("authenticated", "GET", v3, "/openapi/v3/entity/dataset?query=*"),  # only what the caller may read
        Call("write", "POST", v3, "/openapi/v3/entity/dataset", [{"urn": CUSTOMERS, "globalTags": {"value": tags}}]),
        Call("write", "PATCH", v3, "/openapi/v3/entity/dataset", [{"urn": CUSTOMERS, "globalTags": {"value": patch}}]),
        Call("write", "POST", v3 + "/{urn}/{aspect}", f"/openapi/v3/entity/dataset/{ds}/globalTags", {"value": tags}),
        Call("write", "PATCH", v3 + "/{urn}/{aspect}", f"/openapi/v3/entity/dataset/{ds}/globalTags", patch),
        Call("write", "DELETE", v3 + "/{urn}/{aspect}", f"/openapi/v3/entity/dataset/{ds}/globalTags"),
        Call("write", "DELETE", v3 + "/{urn}", f"/openapi/v3/entity/dataset/{scratch}"),
        Call("write", "POST", v2, "/openapi/v2/entity/dataset", [{"urn": CUSTOMERS, "aspects": {"globalTags": {
            "value": tags}}}]),
        Call("write", "POST", v2 + "/{urn}/{aspect}", f"/openapi/v2/entity/dataset/{ds}/globalTags", tags),
        Call("write", "PATCH", v2 + "/{urn}/{aspect}", f"/openapi/v2/entity/dataset/{ds}/globalTags", patch),
        Call("write", "DELETE", v2 + "/{urn}", f"/openapi/v2/entity/dataset/{scratch}"),
        Call("write", "POST", "/openapi/v2/platform/entities/v1/", "/openapi/v2/platform/entities/v1/",
             [mcp(CUSTOMERS, "globalTags", tags)]),
        Call("write", "POST", "/openapi/v2/platform/entities/v1", "/openapi/v2/platform/entities/v1",
             [mcp(CUSTOMERS, "globalTags", tags)]),
        Call("read", "GET", "/relationships", f"/relationships?urn={ds}&direction=OUTGOING&types=DownstreamOf"),
    ]


ALLOWED = {  # which kinds of call each principal may make
    "anonymous": {"public"},
    "outsider": {"public", "authenticated"},
    "reader": {"public", "authenticated", "read"},
    "writer": {"public", "authenticated", "read", "write"},
    "admin": {"public", "authenticated", "read", "write", "admin"},
}


@pytest.fixture
def principals(server: LiveServer) -> dict[str, str | None]:
    seeded = server.client().propose(dataset_mcps("default", "customers", fields=(("ssn", "string"),))
                                     + dataset_mcps("default", "scratch") + dataset_mcps("sales", "secretleads"))
    assert all(r["status"] == "applied" for r in seeded)
    return {"anonymous": None,
            "outsider": principal_with_grants(server, "outsider"),
            "reader": principal_with_grants(server, "reader", [("instance", ["READ"])]),
            "writer": principal_with_grants(server, "writer", [("instance", ["READ", "WRITE"])]),
            "admin": server.token}


def send(server: LiveServer, token: str | None, call: Call) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None if call.body is None else json.dumps(call.body)
    return requests.request(call.method, server.url + call.path, data=data, timeout=60,
                            headers={**headers, "Content-Type": "application/json"})


def test_the_matrix_covers_every_route_of_the_app(tmp_path):
    gms = Gms.embedded(tmp_path)
    models = SqliteReadModels.in_data_dir(tmp_path, gms.registry)
    try:
        app = create_app(gms, TokenAuth(), models)
        routes = {(r.method, r.resource.canonical) for r in app.router.routes() if r.method != "HEAD"}
    finally:
        models.close()
        gms.close()
    covered = {(call.method, call.route) for call in matrix()}
    assert routes - covered == set(), "routes without a row in the authorization matrix"


def test_every_route_answers_each_principal_as_its_privileges_allow(server: LiveServer, principals):
    wrong = []
    for who in ("anonymous", "outsider", "reader", "writer", "admin"):  # the writers' changes come last
        for call in matrix():
            response = send(server, principals[who], call)
            allowed = call.kind in ALLOWED[who]
            denied = 401 if principals[who] is None else 403
            if (allowed and response.status_code in (401, 403)) or response.status_code >= 500 \
                    or (not allowed and response.status_code != denied):
                wrong.append(f"{who} {call.method} {call.path}: {response.status_code} {response.text[:150]}")
    assert not wrong, f"{len(wrong)} wrong answer(s):\n" + "\n".join(wrong)


def test_refusals_reveal_nothing_search_autocomplete_and_lineage_show_only_what_may_be_read(server: LiveServer):
    admin = server.client()
    admin.propose(dataset_mcps("default", "customers", "shared table") + dataset_mcps("sales", "secretleads", "hidden")
                  + [mcp(CUSTOMERS, "upstreamLineage", {"upstreams": [{"dataset": SECRET, "type": "TRANSFORMED"}]})])
    admin.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
    namespace_reader = principal_with_grants(server, "nsreader", [("default", ["READ"])])
    headers = {"Authorization": f"Bearer {namespace_reader}"}

    def get(path: str) -> requests.Response:
        return requests.get(server.url + path, headers=headers, timeout=60)

    for path in (f"/v1/search?{urlencode({'query': 'secretleads'})}", "/v1/search?query=*",
                 "/v1/autocomplete?query=secret", "/v3/metadata/search?query=*&showHidden=true",
                 "/v3/metadata/search?query=secretleads", "/v3/namespaces/sales/metadata/search?query=*"):
        seen = get(path)  # the results, totals and facets of what the reader may read only
        assert seen.status_code == 200 and "secretleads" not in seen.text and "sales" not in seen.text, path
        if "total" in seen.json():
            assert seen.json()["total"] == len(seen.json()["results"]), path
    assert [s["text"] for s in get("/v1/autocomplete?query=cust").json()["suggestions"]] == ["customers"]
    assert get("/v3/metadata/search?query=secretleads").json()["total"] == 0
    existing, missing = get(f"/v1/entities/{q(SECRET, safe='')}"), \
        get(f"/v1/entities/{q(cdap_dataset('sales', 'nosuchtable'), safe='')}")
    assert (existing.status_code, missing.status_code) == (403, 403)  # a 404 would tell what exists
    assert existing.json()["message"].replace(SECRET, "X") == missing.json()["message"].replace(
        cdap_dataset("sales", "nosuchtable"), "X")
    for path in (f"/v1/lineage?urn={q(CUSTOMERS, safe='')}&direction=upstream&maxHops=3",
                 "/v3/namespaces/default/datasets/customers/lineage?start=now-1d&end=now&levels=3",
                 f"/v1/lineage/runs?urn={q(CUSTOMERS, safe='')}&start=now-1d&end=now&levels=3"):
        seen = get(path)
        assert seen.status_code == 200 and "secretleads" not in seen.text and "sales" not in seen.text.replace(
            "salesforce", "")
    everything = admin.call("GET", f"/v1/lineage?urn={q(CUSTOMERS, safe='')}&direction=upstream")
    assert "secretleads" in json.dumps(everything)  # the edge exists: the reader's view left it out


def test_tokens_are_stored_hashed_and_compared_in_constant_time(monkeypatch):
    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    tokens = TokenAuth()
    tokens.add("s3cret-token", "urn:li:corpuser:admin")
    assert "s3cret-token" not in repr(vars(tokens))
    assert tokens.principal("Bearer s3cret-token") == "urn:li:corpuser:admin"
    assert tokens.principal("Bearer s3cret-tokem") is None
    assert compared and all(len(a) == len(b) == 64 for a, b in compared)  # digests, never the tokens


CONTROLLED_RUN = "controlled-run"
CONTROLLED = {  # one entity of each access-controlled type (gms/access/controlled.py): (urn, aspect, value)
    "accessToken": ("urn:li:accessToken:" + "ab" * 32, "accessTokenInfo",
                    {"principal": "urn:li:corpuser:nobody", "revoked": True}),
    "accessGrants": ("urn:li:accessGrants:nobody", "accessGrantsInfo",
                     {"grants": [{"resource": "instance", "privileges": ["READ"]}]}),
    "webhook": ("urn:li:webhook:00aa11bb22cc33dd", "webhookInfo",
                {"url": "https://hooks.example.com/T0/s3cretpath", "secretFingerprint": "0011223344556677"}),
    "schemaRegistrySchema": ("urn:li:schemaRegistrySchema:9001", "schemaRegistrySchemaInfo",
                             {"schema": '"string"', "fingerprint": "s3cretpath"}),
    "schemaRegistrySubject": ("urn:li:schemaRegistrySubject:hiddensubject-value", "schemaRegistrySubjectVersions",
                              {"versions": [{"version": 1, "id": 9001}]}),
    "dataHubSecret": ("urn:li:dataHubSecret:hiddensecret", "dataHubSecretValue", {"name": "pw", "value": "s3cretpath"}),
    "dataHubAccessToken": ("urn:li:dataHubAccessToken:hiddentoken", "dataHubAccessTokenInfo",
                           {"name": "s3cretpath", "actorUrn": "urn:li:corpuser:admin",
                            "ownerUrn": "urn:li:corpuser:admin", "createdAt": 0}),
    "inviteToken": ("urn:li:inviteToken:hiddeninvite", "inviteToken", {"token": "s3cretpath"}),
    "dataHubConnection": ("urn:li:dataHubConnection:hiddenconnection", "dataHubConnectionDetails",
                          {"type": "JSON", "json": {"encryptedBlob": "s3cretpath"}}),
    "dataHubPolicy": ("urn:li:dataHubPolicy:hiddenpolicy", "dataHubPolicyInfo",
                      {"displayName": "s3cretpath", "description": "", "type": "PLATFORM", "state": "ACTIVE",
                       "privileges": [], "editable": True,
                       "actors": {"resourceOwners": False, "allUsers": True, "allGroups": False}}),
}


def controlled_calls(entity_type: str, urn: str, aspect: str, value: Any) -> tuple[list[Call], list[Call]]:
    """The routes of one access-controlled entity: (those that must refuse a non-admin with 403,
    those that must answer 200 without a trace of it)."""
    u = q(urn, safe="")
    write = mcp(urn, aspect, value)
    refused = [
        Call("admin", "POST", "write", "/v1/proposals", {"proposals": [write]}),
        Call("admin", "POST", "write async", "/v1/proposals", {"proposals": [write], "async": True}),
        Call("admin", "POST", "write DataHub", "/aspects?action=ingestProposal", {"proposal": write}),
        Call("admin", "POST", "write DataHub async", "/aspects?action=ingestProposalBatch",
             {"proposals": [write], "async": "true"}),
        Call("admin", "POST", "patch", "/v1/proposals", {"proposals": [mcp(urn, aspect, [], "PATCH")]}),
        Call("admin", "POST", "delete aspect", "/v1/proposals", {"proposals": [mcp(urn, aspect, change="DELETE")]}),
        Call("admin", "POST", "delete key aspect", "/v1/proposals",
             {"proposals": [mcp(urn, f"{entity_type}Key", change="DELETE")]}),
        Call("admin", "DELETE", "soft delete", f"/v1/entities/{u}"),
        Call("admin", "DELETE", "hard delete", f"/v1/entities/{u}?hard=true"),
        Call("admin", "POST", "hard delete DataHub", "/entities?action=delete", {"urn": urn}),
        Call("admin", "GET", "entity", f"/v1/entities/{u}"),
        Call("admin", "GET", "aspect", f"/v1/entities/{u}/aspects/{aspect}"),
        Call("admin", "GET", "versions", f"/v1/entities/{u}/aspects/{aspect}/versions"),
        Call("admin", "GET", "aspect DataHub", f"/aspects/{u}?aspect={aspect}"),
        Call("admin", "GET", "entitiesV2", f"/entitiesV2/{u}"),
        Call("admin", "GET", "entitiesV2 batch", f"/entitiesV2?ids=List({u})"),
        Call("admin", "GET", "timeline", f"/openapi/v2/timeline/v1/{u}?categories=TAG"),
        Call("admin", "GET", "relationships", f"/openapi/relationships/v1?urn={u}"),
        Call("admin", "POST", "runs rollback dry run", "/runs?action=rollback",
             {"runId": CONTROLLED_RUN, "dryRun": True}),
    ]
    unseen = [
        Call("authenticated", "POST", "listUrns", "/entities?action=listUrns", {"entity": entity_type}),
        Call("authenticated", "POST", "search DataHub", "/entities?action=search",
             {"input": "*", "entity": entity_type}),
        Call("authenticated", "GET", "search", f"/v1/search?query=*&types={entity_type}&includeRemoved=true"),
        Call("authenticated", "GET", "search v3", "/v3/metadata/search?query=*&showHidden=true&limit=1000"),
        Call("authenticated", "POST", "getCount", "/aspects?action=getCount", {"aspect": aspect}),
        Call("authenticated", "POST", "GraphQL entity", "/api/graphql",
             {"query": f'{{ entities(urns: ["{urn}"]) {{ urn }} }}'}),
        Call("authenticated", "POST", "GraphQL search", "/api/graphql",
             {"query": '{ searchAcrossEntities(input: {query: "*", count: 1000})'
                       ' { searchResults { entity { urn } } } }'}),
        Call("authenticated", "POST", "runs describe", "/runs?action=describe",
             {"runId": CONTROLLED_RUN, "includeAspect": True}),
    ]
    return refused, unseen


def test_access_controlled_entities_need_admin_on_the_instance_on_every_route(server: LiveServer, principals):
    seeded = server.gms.apply([proposal(urn, aspect, value, systemMetadata={"runId": CONTROLLED_RUN})
                               for urn, aspect, value in CONTROLLED.values()], auth.ADMIN)
    assert [r.failure for r in seeded] == [None] * len(CONTROLLED)
    server.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
    wrong = []
    for entity_type, (urn, aspect, value) in CONTROLLED.items():
        refused, unseen = controlled_calls(entity_type, urn, aspect, value)
        secret = urn.rpartition(":")[2]
        for who in ("outsider", "reader", "writer"):
            for call in refused:
                answer = send(server, principals[who], call)
                if answer.status_code != 403 or "s3cretpath" in answer.text:
                    wrong.append(f"{who} {call.route} {entity_type}: {answer.status_code} {answer.text[:150]}")
            for call in unseen:
                answer = send(server, principals[who], call)
                count = answer.json().get("value") if call.route == "getCount" and answer.ok else 0
                if answer.status_code != 200 or secret in answer.text or "s3cretpath" in answer.text or count:
                    wrong.append(f"{who} {call.route} {entity_type}: {answer.status_code} {answer.text[:150]}")
        for call in refused:  # the admin reads them (its writes are left out: they would change them)
            if call.method == "GET" and call.route not in ("timeline", "relationships"):
                answer = send(server, principals["admin"], call)
                if answer.status_code != 200:
                    wrong.append(f"admin {call.route} {entity_type}: {answer.status_code} {answer.text[:150]}")
        listed = send(server, principals["admin"], controlled_calls(entity_type, urn, aspect, value)[1][0])
        if urn not in listed.text:
            wrong.append(f"admin listUrns {entity_type}: {listed.text[:150]}")
    assert not wrong, f"{len(wrong)} wrong answer(s):\n" + "\n".join(wrong)
    for urn, aspect, value in CONTROLLED.values():
        assert server.gms.store.get(urn, aspect).value == value  # nothing changed


def test_a_principals_status_needs_admin_on_the_instance_on_every_route(server: LiveServer, principals):
    reader = "urn:li:corpuser:reader"
    u = q(reader, safe="")
    status = mcp(reader, "status", {"removed": True})
    calls = [
        Call("admin", "POST", "write", "/v1/proposals", {"proposals": [status]}),
        Call("admin", "POST", "write async", "/v1/proposals", {"proposals": [status], "async": True}),
        Call("admin", "POST", "write DataHub", "/aspects?action=ingestProposal", {"proposal": status}),
        Call("admin", "POST", "write DataHub async", "/aspects?action=ingestProposal",
             {"proposal": status, "async": "true"}),
        Call("admin", "POST", "delete status", "/v1/proposals",
             {"proposals": [mcp(reader, "status", change="DELETE")]}),
        Call("admin", "POST", "delete key aspect", "/v1/proposals",
             {"proposals": [mcp(reader, "corpUserKey", change="DELETE")]}),
        Call("admin", "DELETE", "soft delete", f"/v1/entities/{u}"),
        Call("admin", "DELETE", "hard delete", f"/v1/entities/{u}?hard=true"),
        Call("admin", "POST", "hard delete DataHub", "/entities?action=delete", {"urn": reader}),
    ]
    wrong = [f"writer {call.route}: {answer.status_code} {answer.text[:150]}" for call in calls
             if (answer := send(server, principals["writer"], call)).status_code != 403]
    assert not wrong, "\n".join(wrong)
    assert send(server, principals["reader"], Call("read", "GET", "", f"/v1/entities/{u}")).status_code == 200
    assert server.gms.store.get(reader, "status").value == {"removed": False}
