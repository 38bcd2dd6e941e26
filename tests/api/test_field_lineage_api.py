"""Field-level lineage over time (CDAP's v3 field lineage API) on the seeds' examples: the
File -> Parser -> Name-Concatenator -> IdGenerator -> Store pipeline (example 20), first_name
and last_name forward to name and then id, the Person/HR/Skills -> Employee multi-level
mapping, identical operation sets grouped across programs, windows, and the 400s."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.support.builders import mcp
from tests.support.field_lineage_examples import FILE, STORE, read, transform, write
from tests.support.lineage_fixtures import cdap, example, program, propose_and_index, run

RUN_START = 1528707600  # example 20's run
WINDOW = f"start={RUN_START - 60}&end={RUN_START + 60}"
STORE_FIELDS = "/v3/namespaces/default/datasets/Store/lineage/fields"
FILE_FIELDS = f"/v3/namespaces/default/datasets/{quote(FILE, safe='')}/lineage/fields"
PIPELINE = "urn:li:dataJob:(urn:li:dataFlow:(cdap,CustomerPipeline,default),DataPipelineWorkflow)"


@pytest.fixture
def pipeline(server):
    client = server.client()
    propose_and_index(client, example("20-field-lineage-pipeline.json"))
    return client


def test_fields_with_lineage_and_the_current_schema(pipeline):
    assert pipeline.call("GET", f"{STORE_FIELDS}?{WINDOW}") == [
        {"name": n, "lineage": True} for n in ("age", "city", "id", "name", "state")]
    propose_and_index(pipeline, [mcp(STORE, "schemaMetadata", {
        "schemaName": "Store", "platform": "urn:li:dataPlatform:cdap", "version": 1, "hash": "",
        "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
        "fields": [{"fieldPath": f, "nativeDataType": "string",
                    "type": {"type": {"com.linkedin.schema.StringType": {}}}} for f in ("id", "name", "zip")]})])
    current = pipeline.call("GET", f"{STORE_FIELDS}?{WINDOW}&includeCurrent=true&prefix=")
    assert {"name": "zip", "lineage": False} in current and {"name": "id", "lineage": True} in current
    assert pipeline.call("GET", f"{STORE_FIELDS}?{WINDOW}&prefix=na") == [{"name": "name", "lineage": True}]
    assert pipeline.call("GET", f"{FILE_FIELDS}?{WINDOW}") == [{"name": "body", "lineage": True}]
    assert pipeline.call("GET", f"{STORE_FIELDS}?start={RUN_START + 1}&end={RUN_START + 60}") == []


def test_id_traces_back_to_body_through_parse_concat_and_create(pipeline):
    summary = pipeline.call("GET", f"{STORE_FIELDS}/id?{WINDOW}&direction=incoming")
    assert summary["incoming"] == [{"namespace": "file", "dataset": "/data/customers.csv", "urn": FILE,
                                    "fields": ["body"]}]
    assert "outgoing" not in summary
    details = pipeline.call("GET", f"{STORE_FIELDS}/id/operations?{WINDOW}&direction=incoming")
    (group,) = details["incoming"]
    assert [op["name"] for op in group["operations"]] == ["read", "parse", "concat", "create", "write"]
    assert group["operations"][0]["inputs"] == {"endPoint": {"namespace": "file", "name": "/data/customers.csv",
                                                             "urn": FILE}}
    assert group["operations"][2]["inputs"] == {"fields": [{"origin": "parse", "name": "first_name"},
                                                           {"origin": "parse", "name": "last_name"}]}
    assert group["programs"] == [{"program": {"namespace": "default", "application": "CustomerPipeline",
                                              "type": "workflow", "id": "DataPipelineWorkflow"},
                                  "urn": PIPELINE, "lastExecutedTimeInSeconds": RUN_START}]
    age = pipeline.call("GET", f"{STORE_FIELDS}/age/operations?{WINDOW}&direction=incoming")
    assert [op["name"] for op in age["incoming"][0]["operations"]] == ["read", "parse", "write"]


def test_the_detailed_graph_and_the_simple_view_of_id(pipeline):
    graph = pipeline.call("GET", f"/v3/namespaces/default/endpoints/Store/fields/id/lineage?{WINDOW}"
                                 "&direction=backward")
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert set(nodes) == {"read.body", "parse.first_name", "parse.last_name", "concat.name", "create.id"}
    assert nodes["read.body"]["sourceEndPoint"]["urn"] == FILE and nodes["read.body"]["label"] == "body"
    assert nodes["create.id"]["destinationEndPoint"] == {"namespace": "default", "name": "Store", "urn": STORE}
    assert {(c["from"], c["to"], c["operation"]) for c in graph["connections"]} == {
        ("read.body", "parse.first_name", "parse"), ("read.body", "parse.last_name", "parse"),
        ("parse.first_name", "concat.name", "concat"), ("parse.last_name", "concat.name", "concat"),
        ("concat.name", "create.id", "create")}
    assert {op["name"] for op in graph["operations"]} == {"read", "parse", "concat", "create", "write"}
    simple = pipeline.call("GET", f"/v3/namespaces/default/endpoints/Store/fields/id/lineage/simple?{WINDOW}"
                                  "&direction=backward")
    assert simple["edges"] == [{"from": {"namespace": "file", "name": "/data/customers.csv", "urn": FILE,
                                         "field": "body"},
                                "to": {"namespace": "default", "name": "Store", "urn": STORE, "field": "id"},
                                "operations": ["parse", "concat", "create"]}]


def test_body_forward_and_first_and_last_name_forward_to_name_then_id(pipeline):
    outgoing = pipeline.call("GET", f"{FILE_FIELDS}/body?{WINDOW}&direction=outgoing")["outgoing"]
    assert outgoing == [{"namespace": "default", "dataset": "Store", "urn": STORE,
                         "fields": ["age", "city", "id", "name", "state"]}]
    forward = pipeline.call("GET", f"{FILE_FIELDS}/body/operations?{WINDOW}&direction=outgoing")["outgoing"]
    assert {"dropFirstName", "dropLastName"} <= {op["name"] for op in forward[0]["operations"]}
    people = cdap("People")
    propose_and_index(pipeline, run("names-run", program("Names"), RUN_START, RUN_START + 10, operations=[
        read("read", people, "first_name", "last_name", "employee/name"),
        transform("concat", [("read", "first_name"), ("read", "last_name")], "name"),
        transform("create", [("concat", "name")], "id"),
        write("write", cdap("Directory"), [("concat", "name"), ("create", "id"), ("read", "employee/name")])]))
    both = pipeline.call("GET", f"/v3/namespaces/default/datasets/People/lineage/fields/first_name?{WINDOW}"
                                "&direction=both")
    assert both["outgoing"] == [{"namespace": "default", "dataset": "Directory", "urn": cdap("Directory"),
                                 "fields": ["id", "name"]}] and both["incoming"] == []
    graph = pipeline.call("GET", f"/v3/namespaces/default/endpoints/People/fields/last_name/lineage?{WINDOW}"
                                 "&direction=forward")
    assert {(c["from"], c["to"]) for c in graph["connections"]} == {
        ("read.last_name", "concat.name"), ("concat.name", "create.id")}
    nested = pipeline.call("GET", f"/v3/namespaces/default/datasets/Directory/lineage/fields/"
                                  f"{quote('employee/name', safe='')}?{WINDOW}&direction=incoming")
    assert nested["incoming"][0]["fields"] == ["employee/name"]


def test_person_hr_and_skills_to_employee_on_several_levels(server):
    client = server.client()
    person, hr, skills, employee, raw = (cdap(n) for n in ("Person", "HR", "Skills", "Employee", "PersonRaw"))
    propose_and_index(client, run("employee-run", program("Employees"), 2000, 2100, operations=[
        read("readPerson", person, "id", "first_name", "last_name"),
        read("readHr", hr, "id", "department"), read("readSkills", skills, "id", "skill"),
        transform("concat", [("readPerson", "first_name"), ("readPerson", "last_name")], "name"),
        write("write", employee, [("readPerson", "id"), ("concat", "name"), ("readHr", "department"),
                                  ("readSkills", "skill")])])
        + run("person-run", program("People"), 1500, 1600, operations=[
            read("read", raw, "pid", "first", "last"),
            transform("rename", [("read", "pid")], "id"),
            write("write", person, [("rename", "id"), ("read", "first"), ("read", "last")])]))

    def mappings(query):
        body = client.call("GET", f"/v3/namespaces/default/endpoints/Employee/fields/lineage?{query}")
        return {(m["source"]["name"], m["destination"]["name"]): {(f["from"], f["to"]) for f in m["fieldmap"]}
                for m in body}

    one = mappings("start=1000&end=3000&level=1")
    assert one == {("Person", "Employee"): {("id", "id"), ("first_name", "name"), ("last_name", "name")},
                   ("HR", "Employee"): {("department", "department")}, ("Skills", "Employee"): {("skill", "skill")}}
    two = mappings("start=1000&end=3000&level=2")
    assert two == one | {("PersonRaw", "Person"): {("pid", "id"), ("first", "first"), ("last", "last")}}
    assert mappings("start=1800&end=3000&level=2") == one  # Person was not written in this window
    forward = client.call("GET", "/v3/namespaces/default/endpoints/PersonRaw/fields/lineage?start=1000&end=3000"
                                 "&level=2")
    assert {(m["source"]["name"], m["destination"]["name"]) for m in forward} == {
        ("PersonRaw", "Person"), ("Person", "Employee")}


def test_identical_operations_are_grouped_across_programs_and_runs(server):
    client = server.client()
    source, target = cdap("src"), cdap("dst")
    ops = [read("r", source, "a"), transform("t", [("r", "a")], "b"), write("w", target, [("t", "b")])]
    changed = [dict(op) for op in ops]
    changed[1]["description"] = "another transform"
    propose_and_index(client, run("one", program("A"), 100, 110, operations=ops)
                      + run("two", program("B"), 200, 210, operations=list(reversed(ops)))
                      + run("three", program("A"), 300, 310, operations=ops)
                      + run("four", program("C"), 400, 410, operations=changed))
    groups = client.call("GET", "/v3/namespaces/default/datasets/dst/lineage/fields/b/operations?start=0&end=1000"
                                "&direction=incoming")["incoming"]
    assert [{p["program"]["id"]: p["lastExecutedTimeInSeconds"] for p in g["programs"]} for g in groups] == [
        {"C": 400}, {"A": 300, "B": 200}]
    first_two = client.call("GET", "/v3/namespaces/default/datasets/dst/lineage/fields/b/operations?start=0&end=250"
                                   "&direction=incoming")["incoming"]
    assert [[p["program"]["id"] for p in g["programs"]] for g in first_two] == [["B", "A"]]


@pytest.mark.parametrize(("path", "message"), [
    (f"{STORE_FIELDS}/id?{WINDOW}", "direction: is required"),
    (f"{STORE_FIELDS}/id/operations?{WINDOW}&direction=sideways", "direction: invalid value 'sideways'"),
    ("/v3/namespaces/default/endpoints/Store/fields/id/lineage?" + WINDOW + "&direction=incomingg",
     "direction: invalid value 'incomingg'"),
    (f"{STORE_FIELDS}?start=10&end=5", "start (10 -> 10) must not be after end (5 -> 5)"),
    (f"{STORE_FIELDS}/id?end=5&direction=both", "start: is required"),
    ("/v3/namespaces/default/endpoints/Store/fields/lineage?start=1&end=2&level=0", "level: invalid level (0)"),
])
def test_bad_parameters_are_400_with_a_reason(server, path, message):
    status, body = server.client().request("GET", path)
    assert status == 400 and message in body["message"], body


def test_field_operations_feed_the_field_lineage_graph(pipeline):
    """A run's field operations become schemaField edges, typed by the transforms on the way."""
    field_urn = f"urn:li:schemaField:({STORE},id)"
    body = pipeline.call("GET", f"/v1/lineage/fields?urn={quote(field_urn, safe='')}&direction=upstream")
    assert {(e["source"], e["type"]) for e in body["edges"] if e["via"] == "fieldOperations"} == {
        (f"urn:li:schemaField:({FILE},body)", "parse,concat,create")}
    age = f"urn:li:schemaField:({STORE},age)"
    body = pipeline.call("GET", f"/v1/lineage/fields?urn={quote(age, safe='')}&direction=upstream")
    assert {(e["source"], e["type"]) for e in body["edges"] if e["via"] == "fieldOperations"} == {
        (f"urn:li:schemaField:({FILE},body)", "parse")}
