"""The field-level lineage seed's pipeline File -> Parser -> Name-Concatenator -> IdGenerator ->
Store as `fieldOperations` values, for tests."""

from __future__ import annotations

from typing import Any

from tests.support.builders import dataset_urn

FILE = dataset_urn("/data/customers.csv", platform="file")
STORE = dataset_urn("default.Store", platform="cdap")


def read(name: str, source: str, *outputs: str, description: str = "") -> dict[str, Any]:
    return {"name": name, "type": "READ", "source": source, "outputs": list(outputs), "description": description}


def transform(name: str, inputs: list[tuple[str, str]], *outputs: str, description: str = "") -> dict[str, Any]:
    return {"name": name, "type": "TRANSFORM", "description": description,
            "inputs": [{"origin": o, "field": f} for o, f in inputs], "outputs": list(outputs)}


def write(name: str, destination: str, inputs: list[tuple[str, str]], description: str = "") -> dict[str, Any]:
    return {"name": name, "type": "WRITE", "destination": destination, "description": description,
            "inputs": [{"origin": o, "field": f} for o, f in inputs]}


def pipeline_operations(source: str = FILE, destination: str = STORE) -> list[dict[str, Any]]:
    """The seed's operations: read body, parse it, concat the names, drop them, create id, write."""
    return [
        read("read", source, "body", description="read the file to generate the body field"),
        transform("parse", [("read", "body")], "first_name", "last_name", "age", "city", "state",
                  description="parsed body field"),
        transform("concat", [("parse", "first_name"), ("parse", "last_name")], "name",
                  description="concatenate first_name and last_name fields"),
        transform("dropFirstName", [("parse", "first_name")], description="delete first_name"),
        transform("dropLastName", [("parse", "last_name")], description="delete last_name"),
        transform("create", [("concat", "name")], "id", description="generated unique id"),
        write("write", destination, [("create", "id"), ("concat", "name"), ("parse", "age"),
                                     ("parse", "city"), ("parse", "state")], description="write to the store"),
    ]
