"""The fieldOperations aspect: CDAP's validation rules and messages, checksums, and GMS rejecting
a bad aspect with a 4xx naming the problem."""

from __future__ import annotations

import pytest

from schemas.field_operations import (
    FieldOperationsError,
    accumulated,
    checksum,
    operations_from_json,
    per_destination,
    validate,
)
from tests.support.builders import mcp
from tests.support.field_lineage_examples import FILE, STORE, pipeline_operations, read, transform, write

RUN = "urn:li:dataProcessInstance:run-1"


def ops(*operations):
    return operations_from_json({"operations": list(operations)})


def test_the_pipeline_is_valid_and_sorted_topologically():
    shuffled = list(reversed(pipeline_operations()))
    order = [op.name for op in validate(ops(*shuffled))]
    assert order.index("read") < order.index("parse") < order.index("concat") < order.index("create")
    assert order.index("create") < order.index("write") and order.index("parse") < order.index("dropFirstName")


def test_reordered_operations_have_the_same_checksum_and_changed_ones_another():
    forward, backward = ops(*pipeline_operations()), ops(*reversed(pipeline_operations()))
    assert checksum(forward) == checksum(backward)
    changed = pipeline_operations()
    changed[1]["description"] = "parsed the body field differently"
    assert checksum(ops(*changed)) != checksum(forward)


@pytest.mark.parametrize(("operations", "message"), [
    ([write("w", STORE, [("r", "a")])], "Field level lineage requires at least one operation of type 'READ'."),
    ([read("r", FILE, "a")], "Field level lineage requires at least one operation of type 'WRITE'."),
    ([read("r", FILE, "a"), read("r", FILE, "b"), write("w", STORE, [("r", "a")])],
     "All operations provided for creating field level lineage info must have unique names. "
     "Operation name 'r' is repeated."),
    ([read("r", FILE, "a"), write("w", STORE, [("r", "a"), ("parse", "b"), ("concat", "c")])],
     "No operation is associated with the origins '['concat', 'parse']'."),
    ([read("r", FILE, "a"), transform("t1", [("t2", "b")], "c"), transform("t2", [("t1", "c")], "b"),
      write("w", STORE, [("t1", "c")])],
     "Cycle detected in the operations ['t1', 't2', 'w']."),
    ([{"name": "r", "type": "READ", "outputs": ["a"]}, write("w", STORE, [("r", "a")])],
     "Source endpoint cannot be null for the read operation 'r'."),
    ([read("r", FILE, "a"), {"name": "w", "type": "WRITE", "inputs": [{"origin": "r", "field": "a"}]}],
     "Destination endpoint cannot be null for the write operation 'w'."),
])
def test_cdap_rules_and_messages(operations, message):
    with pytest.raises(FieldOperationsError) as caught:
        validate(ops(*operations))
    assert str(caught.value) == message


OTHER = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.Other,PROD)"
TWO_DESTINATIONS = [read("r", FILE, "a", "b"), transform("t", [("r", "a")], "c"), transform("drop b", [("r", "b")]),
                    write("w1", STORE, [("r", "a")]), write("w2", OTHER, [("t", "c")]),
                    transform("unused", [("r", "a")], "x")]


def test_operations_accumulated_per_destination_are_those_that_lead_there_with_their_drops():
    operations = ops(*TWO_DESTINATIONS)
    assert accumulated(operations) == {STORE: ("r", "drop b", "w1"), OTHER: ("r", "t", "drop b", "w2")}
    assert accumulated(operations, lambda destination, op: destination == OTHER) == {
        STORE: ("r", "w1"), OTHER: ("r", "t", "drop b", "w2")}
    no_read = ops(*TWO_DESTINATIONS, transform("made", [], "k"), write("w3", FILE, [("made", "k")]))
    assert FILE not in accumulated(no_read)  # nothing read leads there


@pytest.mark.parametrize(("destinations", "message"), [
    ({STORE: ["r", "w9"]}, f"The operations for destination '{STORE}' name operations the run does not have: "
                           "['w9']."),
    ({STORE: ["r", "w2"]}, f"The operations for destination '{STORE}' do not write it."),
    ({OTHER: ["r", "w2"]}, f"The operations for destination '{OTHER}': No operation is associated with the "
                           "origins '['t']'."),
])
def test_operations_per_destination_keep_cdaps_rules_on_their_own(destinations, message):
    with pytest.raises(FieldOperationsError) as caught:
        per_destination(ops(*TWO_DESTINATIONS), destinations)
    assert str(caught.value) == message


def test_gms_rejects_operations_per_destination_that_break_the_rules(server):
    client = server.client()
    value = {"operations": TWO_DESTINATIONS, "destinations": [{"destination": OTHER, "operations": ["r", "w2"]}]}
    status, body = client.request("POST", "/v1/proposals", {"proposals": [mcp(RUN, "fieldOperations", value)]})
    assert status == 400
    assert body["results"][0]["message"] == (f"aspect fieldOperations: The operations for destination '{OTHER}': "
                                             "No operation is associated with the origins '['t']'.")
    assert server.gms.store.entity(RUN) == []


def test_gms_rejects_a_bad_aspect_with_400_naming_the_problem_and_stores_nothing(server):
    client = server.client()
    bad = {"operations": [read("r", FILE, "a")]}
    status, body = client.request("POST", "/v1/proposals", {"proposals": [mcp(RUN, "fieldOperations", bad)]})
    assert status == 400
    assert body["results"][0]["message"] == (
        "aspect fieldOperations: Field level lineage requires at least one operation of type 'WRITE'.")
    assert server.gms.store.entity(RUN) == []
    status, body = client.request("POST", "/v1/proposals", {"proposals": [
        mcp(RUN, "fieldOperations", {"operations": [{**read("r", FILE, "a"), "type": "DELETE"}]})]})
    assert status == 400 and "field 'operations[0].type': 'DELETE' is not one of READ, TRANSFORM, WRITE" in (
        body["results"][0]["message"])


def test_gms_stores_valid_operations_with_nested_field_paths(server):
    client = server.client()
    operations = {"operations": [read("r", FILE, "employee/name", "employee/id"),
                                 write("w", STORE, [("r", "employee/name")])]}
    status, body = client.request("POST", "/v1/proposals", {"proposals": [mcp(RUN, "fieldOperations", operations)]})
    assert status == 200, body
    status, stored = client.request("GET", f"/v1/entities/{RUN}/aspects/fieldOperations")
    assert status == 200, stored
    assert stored["value"]["operations"][0]["outputs"] == ["employee/name", "employee/id"]
