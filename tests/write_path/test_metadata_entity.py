"""The metadata entity <-> URN rule (schemas/metadata_entity.py)."""

from __future__ import annotations

import pytest

from schemas.metadata_entity import EntityError, MetadataEntity, from_path, from_urn, parse_pairs, to_urn

DS = "urn:li:dataset:(urn:li:dataPlatform:cdap,ns.ds,PROD)"


def _hint(urn: str) -> str | None:
    return "mapreduce" if urn.startswith("urn:li:dataJob:") else ("stream" if ",ns.events," in urn else None)


@pytest.mark.parametrize(("pairs", "type_", "urn"), [
    ("namespace=ns", None, "urn:li:container:ns"),
    ("namespace=ns,application=app", None, "urn:li:dataFlow:(cdap,app,ns)"),
    ("namespace=ns,application=app,version=1.0.0", None, "urn:li:dataFlow:(cdap,app@1.0.0,ns)"),
    ("namespace=ns,application=app,type=mapreduce,program=p", None, "urn:li:dataJob:(urn:li:dataFlow:(cdap,app,ns),p)"),
    ("namespace=ns,application=app,version=2,type=mapreduce,program=p", None,
     "urn:li:dataJob:(urn:li:dataFlow:(cdap,app@2,ns),p)"),
    ("namespace=ns,dataset=ds", None, DS),
    ("namespace=ns,stream=events", None, "urn:li:dataset:(urn:li:dataPlatform:cdap,ns.events,PROD)"),
    ("namespace=ns,dataset=ds,field=empname", None, f"urn:li:schemaField:({DS},empname)"),
    ("namespace=ns,dataset=ds,file=part01", None, f"urn:li:customEntity:({DS},file,file=part01)"),
    ("namespace=ns,dataset=ds,partition=p1,file=part01", None,
     f"urn:li:customEntity:({DS},file,partition=p1/file=part01)"),
    ("database=db,table=t", None, "urn:li:customEntity:(instance,table,database=db/table=t)"),
    ("namespace=ns,database=db,table=t", None, "urn:li:customEntity:(urn:li:container:ns,table,database=db/table=t)"),
    ("namespace=ns,dataset=ds,field=f", "column", f"urn:li:customEntity:({DS},column,field=f)"),
    ("namespace=ns,dataset=ds", "fileset", "urn:li:customEntity:(urn:li:container:ns,fileset,dataset=ds)"),
])
def test_entities_map_to_urns_and_back(pairs, type_, urn):
    entity = parse_pairs(pairs, type_)
    assert to_urn(entity) == urn
    assert from_urn(urn, _hint) == entity


def test_the_type_is_the_last_key_or_the_application_before_a_version():
    assert parse_pairs("database=db,table=t").type == "table"
    assert parse_pairs("namespace=ns,application=app,version=1").type == "application"
    assert parse_pairs("namespace=ns,dataset=ds,field=f", "field").type == "field"


def test_special_characters_in_custom_values_survive_the_round_trip():
    entity = MetadataEntity.of([("namespace", "ns"), ("dataset", "fs"), ("file", "a/b=c,(d)%e")])
    urn = to_urn(entity)
    assert "," not in urn.split(",file,")[1].rstrip(")")
    assert from_urn(urn) == entity


def test_names_that_break_a_urn_make_a_custom_entity():
    entity = parse_pairs("namespace=n.s,dataset=ds")
    assert to_urn(entity) == "urn:li:customEntity:(instance,dataset,namespace=n.s/dataset=ds)"
    assert from_urn(to_urn(entity)) == entity


def test_urns_outside_cdap_are_the_urn_entity():
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,shop.orders,PROD)"
    entity = from_urn(urn)
    assert entity.details == (("urn", urn),) and entity.type == "dataset"
    assert to_urn(entity) == urn
    field = f"urn:li:schemaField:({urn},id)"
    assert to_urn(from_urn(field)) == field


def test_a_program_without_its_type_hint_still_maps_to_the_same_urn():
    urn = "urn:li:dataJob:(urn:li:dataFlow:(cdap,app,ns),p)"
    entity = from_urn(urn)
    assert entity.details == (("namespace", "ns"), ("application", "app"), ("program", "p"))
    assert to_urn(entity) == urn


@pytest.mark.parametrize(("path", "pairs"), [
    ("default", "namespace=default"),
    ("default/datasets/myds/field/empname", "namespace=default,dataset=myds,field=empname"),
    ("default/streams/s", "namespace=default,stream=s"),
    ("default/apps/A/versions/1.0/mapreduce/p", "namespace=default,application=A,version=1.0,type=mapreduce,program=p"),
    ("default/apps/A/services/svc", "namespace=default,application=A,type=service,program=svc"),
    ("default/datasets/fs/partition/2020/file/part01", "namespace=default,dataset=fs,partition=2020,file=part01"),
])
def test_cdap_rest_paths(path, pairs):
    assert from_path(path) == parse_pairs(pairs, "program" if "program=" in pairs else None)


@pytest.mark.parametrize(("bad", "says"), [
    ("default/datasets", "needs a name"), ("default/datasets/x/field", "has no value"), ("default//x", "empty"),
])
def test_bad_paths_say_why(bad, says):
    with pytest.raises(EntityError, match=says):
        from_path(bad)


def test_bad_entities_say_why():
    with pytest.raises(EntityError, match="twice"):
        parse_pairs("namespace=a,namespace=b")
    with pytest.raises(EntityError, match="empty"):
        parse_pairs("namespace=")
    with pytest.raises(EntityError, match="not key=value"):
        parse_pairs("namespace")
    with pytest.raises(EntityError):
        from_urn("urn:li:dataset:(unclosed")
