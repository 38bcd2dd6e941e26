"""Authorization: principals, tokens and grants; CDAP's privileges on every kind of route."""

from __future__ import annotations

import re
import threading
import time
from urllib.parse import quote

import pytest

from gms.access import resource_chain
from gms.service import Gms
from ingest import topics
from lodestar.metadata.client import MetadataClient
from schemas.events import default_codec
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import mcp, proposal
from tests.support.metadata_fixtures import cdap_dataset, dataset_mcps

CUSTOMERS, ORDERS = cdap_dataset("default", "customers"), cdap_dataset("default", "orders")
SALES = cdap_dataset("sales", "leads")
DS, FIELD = "default/datasets/customers", "default/datasets/customers/field/ssn"
OTHER_FIELD = "default/datasets/orders/field/id"


@pytest.fixture
def world(server):
    """The admin, and principals: reader (READ on namespace default), writer (READ and WRITE on
    customers), remover (ADMIN on customers), outsider (nothing)."""
    results = server.client().propose(dataset_mcps("default", "customers", fields=(("ssn", "string"),))
                                      + dataset_mcps("default", "orders") + dataset_mcps("sales", "leads"))
    assert all(r["status"] == "applied" for r in results)
    admin = MetadataClient(server.url, server.token)
    admin.add_tags(DS, "seed")
    tokens = {
        "admin": server.token,
        "reader": principal_with_grants(server, "reader", [("default", ["READ"])]),
        "writer": principal_with_grants(server, "writer", [(DS, ["READ", "WRITE"])]),
        "remover": principal_with_grants(server, "remover", [(CUSTOMERS, ["ADMIN"])]),
        "outsider": principal_with_grants(server, "outsider"),
    }
    return server, {name: MetadataClient(server.url, token) for name, token in tokens.items()}


def _status(client: MetadataClient, method: str, path: str, body=None) -> int:
    return client.rest.request(method, path, body)[0]


@pytest.mark.parametrize(("who", "get", "add", "remove"), [
    ("admin", 200, 200, 200),
    ("reader", 200, 403, 403),
    ("writer", 200, 200, 200),
    ("remover", 403, 403, 200),
    ("outsider", 403, 403, 403),
])
@pytest.mark.parametrize("entity", [DS, FIELD])
def test_cdap_privileges_on_an_entity_and_on_a_field_of_it(world, who, get, add, remove, entity):
    _, clients = world
    client = clients[who]
    clients["admin"].add_tags(entity, "keep", "drop")
    assert _status(client, "GET", client.path(entity)) == get
    assert _status(client, "GET", client.path(entity, "tags")) == get
    assert _status(client, "POST", client.path(entity, "tags"), ["new"]) == add
    assert _status(client, "POST", client.path(entity, "properties"), {"k": "v"}) == add
    assert _status(client, "DELETE", client.path(entity, "tags", "drop")) == remove
    tags = clients["admin"].tags(entity, scope="USER")
    assert ("new" in tags) == (add == 200) and ("drop" in tags) == (remove != 200) and "keep" in tags


def test_field_metadata_needs_the_datasets_privilege(world):
    _, clients = world
    clients["admin"].add_tags(OTHER_FIELD, "x")
    assert _status(clients["writer"], "POST", clients["writer"].path(OTHER_FIELD, "tags"), ["pii"]) == 403
    assert _status(clients["writer"], "POST", clients["writer"].path(FIELD, "tags"), ["pii"]) == 200
    assert _status(clients["reader"], "GET", clients["reader"].path(OTHER_FIELD)) == 200
    assert _status(clients["reader"], "GET", clients["reader"].path("sales/datasets/leads")) == 403


def test_system_metadata_needs_admin_to_change(world):
    server, clients = world
    writer, remover, admin = clients["writer"], clients["remover"], clients["admin"]
    for entity in (DS, FIELD):
        status, answer = writer.rest.request("POST", writer.path(entity, "tags", scope="system"), ["checked"])
        assert status == 403 and "no ADMIN privilege" in answer["message"], answer
        assert _status(writer, "POST", writer.path(entity, "properties", scope="SYSTEM"), {"k": "v"}) == 403
        assert _status(writer, "POST", writer.path(entity, "tags", scope="user"), ["ok"]) == 200
        assert _status(remover, "POST", remover.path(entity, "tags", scope="system"), ["checked", "gone"]) == 200
        assert _status(writer, "DELETE", writer.path(entity, "tags", "gone", scope="system")) == 403
        assert _status(writer, "DELETE", writer.path(entity, scope="system")) == 403
        assert _status(writer, "GET", writer.path(entity, "tags", scope="system")) == 200
        assert _status(remover, "DELETE", remover.path(entity, "tags", "gone", scope="system")) == 200
        assert admin.tags(entity, scope="SYSTEM") == ["checked"]
    assert server.gms.store.get(CUSTOMERS, "systemScopeMetadata").value["tags"] == ["checked"]


def test_namespace_metadata_and_its_external_tables_are_checked_against_the_namespace(world):
    server, clients = world
    table = "default/database/db/table/t"
    clients["admin"].add_tags("default", "shared")
    clients["admin"].add_tags(table, "external")
    reader, writer, outsider = clients["reader"], clients["writer"], clients["outsider"]
    for entity in ("default", table):
        assert _status(reader, "GET", reader.path(entity, "tags")) == 200
        assert _status(reader, "POST", reader.path(entity, "tags"), ["x"]) == 403
        assert _status(writer, "POST", writer.path(entity, "tags"), ["x"]) == 403  # WRITE on a dataset only
        assert _status(outsider, "GET", outsider.path(entity)) == 403
    ns_writer = MetadataClient(server.url, principal_with_grants(server, "nswriter", [("default", ["READ", "WRITE"])]))
    for entity in ("default", table):
        assert _status(ns_writer, "POST", ns_writer.path(entity, "tags"), ["x"]) == 200
        assert clients["admin"].tags(entity, scope="USER")[-1] == "x"


def test_proposals_and_entity_reads_are_checked_as_the_caller(world):
    server, clients = world
    writer = clients["writer"].rest
    results = writer.propose([mcp(CUSTOMERS, "datasetProperties", {"name": "customers", "description": "mine"}),
                              mcp(ORDERS, "datasetProperties", {"name": "orders", "description": "not mine"})])
    assert results[0]["status"] == "applied"
    assert results[1]["status"] == "failed" and results[1]["error"] == "forbidden"
    assert "urn:li:corpuser:writer has no WRITE privilege" in results[1]["message"]
    assert server.gms.store.get(ORDERS, "datasetProperties").value["description"] == ""
    assert writer.request("GET", f"/v1/entities/{quote(CUSTOMERS, safe='')}")[0] == 200
    assert writer.request("GET", f"/v1/entities/{quote(ORDERS, safe='')}")[0] == 403
    assert writer.request("GET", f"/v1/entities/{quote(ORDERS, safe='')}/aspects/datasetProperties")[0] == 403
    assert clients["reader"].rest.request("DELETE", f"/v1/entities/{quote(ORDERS, safe='')}")[0] == 403
    assert server.gms.store.entity(ORDERS)
    user, system = (mcp(CUSTOMERS, aspect, {"tags": ["raw"], "properties": {}})
                    for aspect in ("userScopeMetadata", "systemScopeMetadata"))
    assert [r["status"] for r in writer.propose([user, system])] == ["applied", "failed"]  # SYSTEM needs ADMIN
    assert server.gms.store.get(CUSTOMERS, "systemScopeMetadata") is None
    assert clients["remover"].rest.propose([system])[0]["status"] == "applied"


def test_only_instance_admins_manage_principals_tokens_and_grants(world):
    server, clients = world
    for who in ("reader", "writer", "remover", "outsider"):
        rest = clients[who].rest
        assert rest.request("POST", "/v1/access/principals", {"name": f"by-{who}"})[0] == 403
        assert rest.request("POST", "/v1/access/tokens", {"principal": "outsider"})[0] == 403
        assert rest.request("POST", "/v1/access/grants", {"principal": who, "resource": "instance",
                                                          "privileges": ["READ"]})[0] == 403
        assert rest.request("GET", "/v1/access/grants?principal=admin")[0] == 403
        assert rest.request("GET", "/v1/access/grants")[0] == 200  # one's own
    # an instance ADMIN may, through the API and through raw proposals alike
    token = principal_with_grants(server, "security", [("instance", ["ADMIN"])])
    security = MetadataClient(server.url, token).rest
    answer = security.call("POST", "/v1/access/principals", {"name": "newcomer"})
    assert answer["principal"] == "urn:li:corpuser:newcomer"
    results = clients["writer"].rest.propose([mcp("urn:li:accessGrants:writer", "accessGrantsInfo",
                                                  {"grants": [{"resource": "instance", "privileges": ["READ"]}]})])
    assert results[0]["error"] == "forbidden"


def test_revoked_tokens_authenticate_no_one_and_removed_principals_are_refused(world):
    server, clients = world
    admin = server.client()
    created = admin.call("POST", "/v1/access/tokens", {"principal": "reader", "name": "ci"})
    assert re.fullmatch("[0-9a-f]{64}", created["token"])  # never taken for an option after --token
    assert len(created["id"]) == 64 and created["token"] not in str(server.gms.store.entity(
        f"urn:li:accessToken:{created['id']}"))
    second = MetadataClient(server.url, created["token"])
    assert _status(second, "GET", second.path(DS)) == 200
    admin.call("DELETE", f"/v1/access/tokens/{created['id']}")
    assert _status(second, "GET", second.path(DS)) == 401
    assert _status(clients["reader"], "GET", clients["reader"].path(DS)) == 200
    admin.call("DELETE", "/v1/access/principals/reader")
    assert _status(clients["reader"], "GET", clients["reader"].path(DS)) == 403
    assert admin.request("DELETE", "/v1/access/tokens/" + "0" * 64)[0] == 404


def test_grants_are_versioned_entities_and_revocable(world):
    server, clients = world
    admin = server.client()
    answer = admin.call("POST", "/v1/access/grants", {"principal": "outsider", "resource": "sales",
                                                      "privileges": ["read", "WRITE"]})
    assert answer["grants"] == [{"resource": "urn:li:container:sales", "privileges": ["READ", "WRITE"]}]
    assert _status(clients["outsider"], "GET", clients["outsider"].path("sales/datasets/leads")) == 200
    admin.call("DELETE", "/v1/access/grants?principal=outsider&resource=sales&privileges=READ")
    assert _status(clients["outsider"], "GET", clients["outsider"].path("sales/datasets/leads")) == 403
    history = server.gms.store.history("urn:li:accessGrants:outsider", "accessGrantsInfo")
    assert [v.system_metadata["aspectModified"]["actor"] for v in history] == ["urn:li:corpuser:admin"] * 2
    for bad, status in [({"principal": "outsider", "resource": "sales", "privileges": ["FLY"]}, 400),
                        ({"principal": "nobody", "resource": "sales", "privileges": ["READ"]}, 404),
                        ({"principal": "outsider", "resource": FIELD, "privileges": ["READ"]}, 400),
                        ({"principal": "outsider"}, 400)]:
        assert admin.request("POST", "/v1/access/grants", bad)[0] == status


def test_resource_chains():
    assert resource_chain(f"urn:li:schemaField:({CUSTOMERS},ssn)") == [CUSTOMERS, "urn:li:container:default",
                                                                         "instance"]
    assert resource_chain("urn:li:customEntity:(instance,table,database=db/table=t)") == ["instance"]
    assert resource_chain("urn:li:customEntity:(urn:li:container:default,table,database=db/table=t)") == [
        "urn:li:container:default", "instance"]  # an external table of a namespace
    assert resource_chain(f"urn:li:customEntity:({CUSTOMERS},file,file=part01)") == [
        CUSTOMERS, "urn:li:container:default", "instance"]  # a file of a fileset
    job = "urn:li:dataJob:(urn:li:dataFlow:(cdap,app@2,ns),p)"
    assert resource_chain(job) == [job, "urn:li:dataFlow:(cdap,app@2,ns)", "urn:li:dataFlow:(cdap,app,ns)",
                                   "urn:li:container:ns", "instance"]


def test_lineage_leaves_out_what_the_reader_may_not_read(world):
    server, clients = world
    server.client().propose([mcp(CUSTOMERS, "upstreamLineage", {"upstreams": [
        {"dataset": SALES, "type": "TRANSFORMED"}, {"dataset": ORDERS, "type": "TRANSFORMED"}]})])
    deadline = time.monotonic() + 10
    path = f"/v1/lineage?urn={quote(CUSTOMERS, safe='')}&direction=upstream"
    while len(server.client().call("GET", path)["nodes"]) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    seen = clients["reader"].rest.call("GET", path)
    assert {n["urn"] for n in seen["nodes"]} == {CUSTOMERS, ORDERS}
    assert [e["source"] for e in seen["edges"]] == [ORDERS]
    assert clients["outsider"].rest.request("GET", path)[0] == 403


def test_proposals_from_the_topic_are_checked_as_their_actor(gms: Gms):
    gms.authorize_consumed = True
    gms.apply([proposal("urn:li:corpuser:bot", "corpUserInfo", {"active": True}),
               proposal("urn:li:accessGrants:bot", "accessGrantsInfo",
                        {"grants": [{"resource": CUSTOMERS, "privileges": ["WRITE"]}]})], "urn:li:corpuser:admin")
    gms.enqueue([proposal(CUSTOMERS, "datasetProperties", {"description": "by bot"}),
                 proposal(ORDERS, "datasetProperties", {"description": "by bot"})], "urn:li:corpuser:bot")
    stop = threading.Event()
    consumer = threading.Thread(target=gms.consume_proposals, args=(stop, 0.05))
    consumer.start()
    try:
        deadline = time.monotonic() + 10
        while not gms.log.read(topics.FAILED_MCP):
            assert time.monotonic() < deadline, "the forbidden proposal was not parked"
            time.sleep(0.01)
    finally:
        stop.set()
        consumer.join(5)
    assert gms.store.get(CUSTOMERS, "datasetProperties").value["description"] == "by bot"
    assert gms.store.get(ORDERS, "datasetProperties") is None
    (failed,) = [default_codec().decode(r.value)[1] for r in gms.log.read(topics.FAILED_MCP)]
    assert failed["error"].startswith("forbidden: urn:li:corpuser:bot has no WRITE privilege")
