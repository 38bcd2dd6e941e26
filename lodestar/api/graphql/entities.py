"""Entities as GraphQL objects: the entity types served (DataHub's enum and object names for
Lodestar's entity types) and the fields of each, read from the latest aspects in the aspect
store (and from the URN for what the key holds).

An entity is an `EntityRef` (its URN); its aspects are read once per request (`Context.aspects`),
and only when the caller may read the entity: a reference the caller may not read shows its
URN and what the URN says (name, platform), every aspect-backed field null."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphql import GraphQLError

from gms.access import can_read
from lodestar.api.context import Api
from schemas.urns import Urn, UrnError

# Lodestar's entity type -> (DataHub's EntityType enum value, GraphQL object type)
ENTITY_TYPES: dict[str, tuple[str, str]] = {
    "dataset": ("DATASET", "Dataset"),
    "dataJob": ("DATA_JOB", "DataJob"),
    "dataFlow": ("DATA_FLOW", "DataFlow"),
    "chart": ("CHART", "Chart"),
    "dashboard": ("DASHBOARD", "Dashboard"),
    "container": ("CONTAINER", "Container"),
    "corpuser": ("CORP_USER", "CorpUser"),
    "corpGroup": ("CORP_GROUP", "CorpGroup"),
    "tag": ("TAG", "Tag"),
    "glossaryTerm": ("GLOSSARY_TERM", "GlossaryTerm"),
    "glossaryNode": ("GLOSSARY_NODE", "GlossaryNode"),
    "domain": ("DOMAIN", "Domain"),
    "dataPlatform": ("DATA_PLATFORM", "DataPlatform"),
    "dataProduct": ("DATA_PRODUCT", "DataProduct"),
    "schemaField": ("SCHEMA_FIELD", "SchemaFieldEntity"),
    "dataProcessInstance": ("DATA_PROCESS_INSTANCE", "DataProcessInstance"),
    "mlModel": ("MLMODEL", "MLModel"),
    "mlModelGroup": ("MLMODEL_GROUP", "MLModelGroup"),
    "mlFeature": ("MLFEATURE", "MLFeature"),
    "mlFeatureTable": ("MLFEATURE_TABLE", "MLFeatureTable"),
    "mlPrimaryKey": ("MLPRIMARY_KEY", "MLPrimaryKey"),
    "test": ("TEST", "Test"),
    "dataHubView": ("DATAHUB_VIEW", "DataHubView"),
    "structuredProperty": ("STRUCTURED_PROPERTY", "StructuredPropertyEntity"),
    "incident": ("INCIDENT", "Incident"),
    "assertion": ("ASSERTION", "Assertion"),
    "versionSet": ("VERSION_SET", "VersionSet"),
    "query": ("QUERY", "QueryEntity"),
}
TRANSIENT_TYPES = frozenset({"query"})  # nodes data goes through, not searched for by default
BY_ENUM = {enum: name for name, (enum, _) in ENTITY_TYPES.items()}
NOT_SEARCHABLE_ENUMS = frozenset({"DATA_PLATFORM_INSTANCE"})  # in the enum (a field's type), not an Entity
UNKNOWN_PLATFORM = "urn:li:dataPlatform:unknown"
MAX_PARENTS = 50  # containers followed up from an entity (a cycle stops there)


def entity_type_of(urn: str) -> str:
    return urn.removeprefix("urn:li:").partition(":")[0]


def enum_of(entity_type: str) -> str:
    return ENTITY_TYPES[entity_type][0]


def lodestar_type(name: str) -> str:
    """An entity type as a filter or `types` names it (DataHub's enum value, or Lodestar's own
    name), as Lodestar names it; raises GraphQLError for a type not served."""
    if name in BY_ENUM:
        return BY_ENUM[name]
    if name in ENTITY_TYPES:
        return name
    found = BY_ENUM.get(name.upper()) or next((t for t in ENTITY_TYPES if t.lower() == name.lower()), None)
    if found is None:
        raise GraphQLError(f"entity type {name!r} is not served by Lodestar's GraphQL API"
                           f" (served: {', '.join(sorted(BY_ENUM))})")
    return found


@dataclass(frozen=True, slots=True)
class EntityRef:
    """An entity in a GraphQL answer: fields are resolved from its URN and aspects on demand."""

    urn: str

    @property
    def entity_type(self) -> str:
        return entity_type_of(self.urn)


def ref(urn: Any) -> EntityRef | None:
    """A reference to a served entity, or None (no URN, or a type Lodestar does not serve)."""
    return EntityRef(urn) if isinstance(urn, str) and entity_type_of(urn) in ENTITY_TYPES else None


@dataclass
class Context:
    """One request's execution: the API, who asks (and what they may read), the event loop that
    runs writes, and the aspects read so far."""

    api: Api
    principal: str
    readable: frozenset[str] | None
    loop: asyncio.AbstractEventLoop
    _aspects: dict[str, dict[str, Any]] = field(default_factory=dict)
    _keys: dict[str, dict[str, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def may_read(self, urn: str) -> bool:
        return can_read(self.readable, urn)

    def aspects(self, urn: str) -> dict[str, Any]:
        """The latest live value of each aspect of the entity ({} when nothing is stored or the
        caller may not read it)."""
        with self._lock:
            found = self._aspects.get(urn)
        if found is None:
            found = {}
            if self.may_read(urn):
                found = {row.aspect: row.value for row in self.api.gms.store.entity(urn) if row.exists}
            with self._lock:
                self._aspects[urn] = found
        return found

    def forget(self, urn: str) -> None:
        """Drops the aspects read of an entity (it was just written): the next read is fresh."""
        with self._lock:
            self._aspects.pop(urn, None)

    def aspect(self, urn: str, name: str) -> Any:
        value = self.aspects(urn).get(name)
        return value if isinstance(value, dict) else None

    def key(self, urn: str) -> dict[str, str]:
        """The key aspect's fields, from the URN ({} for a URN that does not parse)."""
        found = self._keys.get(urn)
        if found is None:
            try:
                parsed = Urn.parse(urn)
                found = self.api.gms.registry.key_value(parsed)
            except (UrnError, KeyError, ValueError):
                found = {}
            self._keys[urn] = found
        return found


# -- shapes shared by many entity types -----------------------------------------------------

def custom_properties(urn: str, props: Any) -> list[dict[str, Any]] | None:
    if not isinstance(props, dict):
        return None
    return [{"key": k, "value": None if v is None else str(v), "associatedUrn": urn} for k, v in props.items()]


def global_tags(urn: str, value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    tags = [{"tag": EntityRef(t["tag"]), "associatedUrn": urn, "context": t.get("context")}
            for t in value.get("tags") or [] if isinstance(t, dict) and isinstance(t.get("tag"), str)]
    return {"tags": tags}


def glossary_terms(urn: str, value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    terms = [{"term": EntityRef(t["urn"]), "associatedUrn": urn, "context": t.get("context")}
             for t in value.get("terms") or [] if isinstance(t, dict) and isinstance(t.get("urn"), str)]
    return {"terms": terms}


def ownership(urn: str, value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    owners = []
    for owner in value.get("owners") or []:
        who = owner.get("owner") if isinstance(owner, dict) else None
        if isinstance(who, str) and entity_type_of(who) in ("corpuser", "corpGroup"):
            owners.append({"owner": EntityRef(who), "type": owner.get("type"), "associatedUrn": urn})
    return {"owners": owners}


_PROPERTIES: dict[str, tuple[str, dict[str, str]]] = {  # entity type -> (aspect, {GraphQL field: aspect field})
    "dataset": ("datasetProperties", {}),
    "chart": ("chartInfo", {"name": "title"}),
    "dashboard": ("dashboardInfo", {"name": "title"}),
    "dataFlow": ("dataFlowInfo", {}),
    "dataJob": ("dataJobInfo", {}),
    "container": ("containerProperties", {}),
    "corpuser": ("corpUserInfo", {}),
    "corpGroup": ("corpGroupInfo", {}),
    "tag": ("tagProperties", {}),
    "glossaryTerm": ("glossaryTermInfo", {"description": "definition"}),
    "glossaryNode": ("glossaryNodeInfo", {"description": "definition"}),
    "domain": ("domainProperties", {}),
    "dataPlatform": ("dataPlatformInfo", {}),
    "dataProduct": ("dataProductProperties", {}),
    "mlModel": ("mlModelProperties", {}),
    "mlModelGroup": ("mlModelGroupProperties", {}),
    "mlFeature": ("mlFeatureProperties", {}),
    "mlFeatureTable": ("mlFeatureTableProperties", {}),
    "mlPrimaryKey": ("mlPrimaryKeyProperties", {}),
    "dataProcessInstance": ("dataProcessInstanceProperties", {}),
}
_NAMED_BY_KEY = {"dataset": "name", "tag": "name", "glossaryTerm": "name", "glossaryNode": "name",
                 "corpGroup": "name", "mlModel": "name", "mlModelGroup": "name", "mlFeature": "name",
                 "mlFeatureTable": "name", "mlPrimaryKey": "name", "dataPlatform": "platformName",
                 "domain": "id", "corpuser": "username", "dataFlow": "flowId", "dataJob": "jobId",
                 "dataProduct": "id", "container": "guid", "test": "id"}


def key_name(ctx: Context, r: EntityRef) -> str:
    """What the key calls the entity (its name, id or username); the URN for a URN that does not parse."""
    field_name = _NAMED_BY_KEY.get(r.entity_type)
    return ctx.key(r.urn).get(field_name, r.urn) if field_name else r.urn


def properties(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    aspect_name, renames = _PROPERTIES.get(r.entity_type, (None, {}))
    value = ctx.aspect(r.urn, aspect_name) if aspect_name else None
    if value is None:
        return None
    out = dict(value)
    for name, source in renames.items():
        out[name] = value.get(source)
    if not out.get("name"):
        out["name"] = key_name(ctx, r)
    out["customProperties"] = custom_properties(r.urn, value.get("customProperties"))
    return out


def platform(r: EntityRef, ctx: Context) -> EntityRef:
    key = ctx.key(r.urn)
    kind = r.entity_type
    found: Any = None
    if kind in ("dataset", "mlModel", "mlModelGroup", "mlFeatureTable"):
        found = key.get("platform")
    elif kind in ("chart", "dashboard"):
        found = key.get("dashboardTool")
    elif kind == "dataFlow":
        found = key.get("orchestrator")
    if found is None:
        instance = ctx.aspect(r.urn, "dataPlatformInstance")
        found = instance.get("platform") if instance else None
    if found is None and kind == "container":
        custom = (ctx.aspect(r.urn, "containerProperties") or {}).get("customProperties") or {}
        found = custom.get("platform")
    if not found:
        found = UNKNOWN_PLATFORM
    return EntityRef(found if str(found).startswith("urn:li:dataPlatform:") else f"urn:li:dataPlatform:{found}")


def data_platform_instance(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "dataPlatformInstance")
    if value is None or not isinstance(value.get("platform"), str):
        return None
    instance = value.get("instance")
    instance_id = ctx.key(instance).get("instance") if isinstance(instance, str) else None
    return {"urn": instance, "type": "DATA_PLATFORM_INSTANCE", "platform": EntityRef(value["platform"]),
            "instanceId": instance_id}


def domain(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "domains")
    domains = [d for d in (value or {}).get("domains") or [] if isinstance(d, str)]
    return {"domain": EntityRef(domains[0]), "associatedUrn": r.urn} if domains else None


def container(r: EntityRef, ctx: Context) -> EntityRef | None:
    value = ctx.aspect(r.urn, "container")
    return ref(value.get("container")) if value else None


def parent_containers(r: EntityRef, ctx: Context) -> dict[str, Any]:
    chain: list[EntityRef] = []
    seen = {r.urn}
    current = container(r, ctx)
    while current is not None and current.urn not in seen and len(chain) < MAX_PARENTS:
        chain.append(current)
        seen.add(current.urn)
        current = container(current, ctx)
    return {"count": len(chain), "containers": chain}


_FIELD_TYPES = {"BYTES", "FIXED", "BOOLEAN", "STRING", "NUMBER", "DATE", "TIME", "ENUM", "NULL", "MAP", "ARRAY",
                "UNION"}


def _field_data_type(field_value: dict[str, Any]) -> str | None:
    kind = (field_value.get("type") or {}).get("type")
    if not isinstance(kind, dict) or not kind:
        return None
    name = next(iter(kind)).rsplit(".", 1)[-1].removesuffix("Type").upper()
    return "STRUCT" if name == "RECORD" else name if name in _FIELD_TYPES else None


def schema_field(field_urn: str, value: dict[str, Any]) -> dict[str, Any]:
    """A SchemaField record (of schemaMetadata or inputFields) as GraphQL shows it."""
    return {**value, "nullable": bool(value.get("nullable")), "recursive": bool(value.get("recursive")),
            "type": _field_data_type(value), "globalTags": global_tags(field_urn, value.get("globalTags")),
            "glossaryTerms": glossary_terms(field_urn, value.get("glossaryTerms")),
            "schemaFieldEntity": EntityRef(field_urn)}


def input_fields(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    """The schema fields a chart or dashboard is built from (its inputFields aspect)."""
    value = ctx.aspect(r.urn, "inputFields")
    if value is None:
        return None
    fields = []
    for f in value.get("fields") or []:
        urn = f.get("schemaFieldUrn") if isinstance(f, dict) else None
        if not isinstance(urn, str):
            continue
        inner = f.get("schemaField")
        fields.append({"schemaFieldUrn": urn,
                       "schemaField": schema_field(urn, inner) if isinstance(inner, dict) else None})
    return {"fields": fields}


def _documentation(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "documentation")
    if value is None:
        return None
    pieces = []
    for piece in value.get("documentations") or []:
        if not isinstance(piece, dict) or not isinstance(piece.get("documentation"), str):
            continue
        attribution = piece.get("attribution")
        if isinstance(attribution, dict):
            details = attribution.get("sourceDetail")
            attribution = {**attribution, "sourceDetail": [{"key": k, "value": v} for k, v in details.items()]
                           if isinstance(details, dict) else None}
        pieces.append({"documentation": piece["documentation"], "attribution": attribution})
    return {"documentations": pieces}


def schema_metadata(r: EntityRef, ctx: Context, version: int | None = None) -> dict[str, Any] | None:
    if version:
        if not ctx.may_read(r.urn):
            return None
        row = ctx.api.gms.store.get(r.urn, "schemaMetadata", int(version))
        value, stored_version = (row.value, row.version) if row is not None and row.exists else (None, None)
    else:
        value, stored_version = ctx.aspect(r.urn, "schemaMetadata"), None
    if not isinstance(value, dict):
        return None
    fields = []
    for f in value.get("fields") or []:
        if not isinstance(f, dict) or not isinstance(f.get("fieldPath"), str):
            continue
        fields.append(schema_field(f"urn:li:schemaField:({r.urn},{f['fieldPath']})", f))
    return {"name": value.get("schemaName") or "", "platformUrn": value.get("platform") or "",
            "version": value.get("version") or 0, "hash": value.get("hash"),
            "primaryKeys": value.get("primaryKeys"), "fields": fields, "aspectVersion": stored_version,
            "createdAt": lambda: (value.get("created") or {}).get("time") or _written_at(ctx, r.urn, version)}


def _written_at(ctx: Context, urn: str, version: Any) -> int | None:
    """When the schemaMetadata version read was written (its own `created` stamp is often 0)."""
    row = ctx.api.gms.store.get(urn, "schemaMetadata", int(version) if version else None)
    return row.modified_ms if row is not None and row.exists else None


# entity type -> the aspect of its edited properties (documentation written over the ingested one)
EDITABLE_PROPERTIES = {
    "dataset": "editableDatasetProperties", "container": "editableContainerProperties",
    "chart": "editableChartProperties", "dashboard": "editableDashboardProperties",
    "dataFlow": "editableDataFlowProperties", "dataJob": "editableDataJobProperties",
    "mlModel": "editableMlModelProperties", "mlModelGroup": "editableMlModelGroupProperties",
    "mlFeature": "editableMlFeatureProperties", "mlFeatureTable": "editableMlFeatureTableProperties",
    "mlPrimaryKey": "editableMlPrimaryKeyProperties", "corpGroup": "corpGroupEditableInfo",
}


def _editable_properties(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    aspect_name = EDITABLE_PROPERTIES.get(r.entity_type)
    return ctx.aspect(r.urn, aspect_name) if aspect_name else None


def editable_schema_metadata(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "editableSchemaMetadata")
    if value is None:
        return None
    infos = []
    for info in value.get("editableSchemaFieldInfo") or []:
        if not isinstance(info, dict) or not isinstance(info.get("fieldPath"), str):
            continue
        field_urn = f"urn:li:schemaField:({r.urn},{info['fieldPath']})"
        infos.append({"fieldPath": info["fieldPath"], "description": info.get("description"),
                      "globalTags": global_tags(field_urn, info.get("globalTags")),
                      "glossaryTerms": glossary_terms(field_urn, info.get("glossaryTerms"))})
    return {"editableSchemaFieldInfo": infos}


def institutional_memory(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "institutionalMemory")
    if value is None:
        return None
    elements = []
    for element in value.get("elements") or []:
        if not isinstance(element, dict) or not isinstance(element.get("url"), str):
            continue
        created = element.get("createStamp") if isinstance(element.get("createStamp"), dict) else None
        actor = (created or {}).get("actor")
        elements.append({"url": element["url"], "label": element.get("description") or "",
                         "description": element.get("description") or "", "created": created,
                         "author": EntityRef(actor) if isinstance(actor, str) and entity_type_of(actor) == "corpuser"
                         else None, "associatedUrn": r.urn})
    return {"elements": elements}


def test_results(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    """The metadata tests an entity passes and fails (its testResults aspect)."""
    value = ctx.aspect(r.urn, "testResults")
    if value is None:
        return None

    def results(name: str) -> list[dict[str, Any]]:
        return [{"test": EntityRef(x["test"]), "type": x.get("type")} for x in value.get(name) or []
                if isinstance(x, dict) and isinstance(x.get("test"), str) and entity_type_of(x["test"]) == "test"]
    return {"passing": results("passing"), "failing": results("failing")}


def _test_definition(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    definition = (ctx.aspect(r.urn, "testInfo") or {}).get("definition")
    return {"json": definition.get("json")} if isinstance(definition, dict) else None


def _view_definition(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    """A view's stored definition as GraphQL shows it: one conjunction is AND, else OR of single conditions."""
    definition = (ctx.aspect(r.urn, "dataHubViewInfo") or {}).get("definition")
    if not isinstance(definition, dict):
        return None
    ors = [c.get("and") or [] for c in (definition.get("filter") or {}).get("or") or [] if isinstance(c, dict)]
    conditions = [c for conjunction in ors for c in conjunction if isinstance(c, dict)]
    return {"entityTypes": [enum_of(t) for t in definition.get("entityTypes") or [] if t in ENTITY_TYPES],
            "filter": {"operator": "AND" if len(ors) <= 1 else "OR", "filters": [
                {"field": c.get("field"), "condition": c.get("condition"), "negated": c.get("negated"),
                 "values": c.get("values") or ([c["value"]] if c.get("value") is not None else [])}
                for c in conditions]}}


def _property_definition(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "propertyDefinition")
    return None if value is None else {**value, "immutable": bool(value.get("immutable"))}


def _status(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "status")
    return {"removed": bool(value.get("removed"))} if value is not None else None


def _sub_types(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "subTypes")
    return {"typeNames": value.get("typeNames") or []} if value is not None else None


def _exists(r: EntityRef, ctx: Context) -> bool | None:
    return bool(ctx.aspects(r.urn)) if ctx.may_read(r.urn) else None


def _input_output(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    value = ctx.aspect(r.urn, "dataJobInputOutput")
    if value is None:
        return None

    def refs(*names: str) -> list[EntityRef]:
        urns: list[str] = []
        for name in names:
            for item in value.get(name) or []:
                urn = item.get("destinationUrn") if isinstance(item, dict) else item
                if isinstance(urn, str) and urn not in urns:
                    urns.append(urn)
        return [EntityRef(u) for u in urns]
    return {"inputDatasets": refs("inputDatasets", "inputDatasetEdges"),
            "outputDatasets": refs("outputDatasets", "outputDatasetEdges"),
            "inputDatajobs": refs("inputDatajobs", "inputDatajobEdges")}


Resolver = Callable[..., Any]

# fields every entity type answers the same way (those its GraphQL type lacks are never asked)
COMMON: dict[str, Resolver] = {
    "urn": lambda r, ctx: r.urn,
    "type": lambda r, ctx: enum_of(r.entity_type),
    "exists": _exists,
    "properties": properties,
    "info": properties,
    "platform": platform,
    "dataPlatformInstance": data_platform_instance,
    "tags": lambda r, ctx: global_tags(r.urn, ctx.aspect(r.urn, "globalTags")),
    "globalTags": lambda r, ctx: global_tags(r.urn, ctx.aspect(r.urn, "globalTags")),
    "editableProperties": _editable_properties,
    "institutionalMemory": institutional_memory,
    "deprecation": lambda r, ctx: ctx.aspect(r.urn, "deprecation"),
    "glossaryTerms": lambda r, ctx: glossary_terms(r.urn, ctx.aspect(r.urn, "glossaryTerms")),
    "ownership": lambda r, ctx: ownership(r.urn, ctx.aspect(r.urn, "ownership")),
    "domain": domain,
    "container": container,
    "parentContainers": parent_containers,
    "subTypes": _sub_types,
    "status": _status,
    "name": lambda r, ctx: key_name(ctx, r),
    "origin": lambda r, ctx: ctx.key(r.urn).get("origin"),
}

# fields particular to one GraphQL object type
BY_TYPE: dict[tuple[str, str], Resolver] = {
    ("Dataset", "description"): lambda r, ctx: (ctx.aspect(r.urn, "datasetProperties") or {}).get("description"),
    ("Dataset", "editableSchemaMetadata"): editable_schema_metadata,
    ("Dataset", "schemaMetadata"): schema_metadata,
    ("Chart", "tool"): lambda r, ctx: ctx.key(r.urn).get("dashboardTool"),
    ("Chart", "chartId"): lambda r, ctx: ctx.key(r.urn).get("chartId"),
    ("Dashboard", "tool"): lambda r, ctx: ctx.key(r.urn).get("dashboardTool"),
    ("Dashboard", "dashboardId"): lambda r, ctx: ctx.key(r.urn).get("dashboardId"),
    ("DataFlow", "orchestrator"): lambda r, ctx: ctx.key(r.urn).get("orchestrator"),
    ("DataFlow", "flowId"): lambda r, ctx: ctx.key(r.urn).get("flowId"),
    ("DataFlow", "cluster"): lambda r, ctx: ctx.key(r.urn).get("cluster"),
    ("DataJob", "dataFlow"): lambda r, ctx: ref(ctx.key(r.urn).get("flow")),
    ("DataJob", "jobId"): lambda r, ctx: ctx.key(r.urn).get("jobId"),
    ("DataJob", "inputOutput"): _input_output,
    ("CorpUser", "username"): lambda r, ctx: ctx.key(r.urn).get("username"),
    ("CorpUser", "editableInfo"): lambda r, ctx: ctx.aspect(r.urn, "corpUserEditableInfo"),
    ("CorpUser", "editableProperties"): lambda r, ctx: ctx.aspect(r.urn, "corpUserEditableInfo"),
    ("Domain", "id"): lambda r, ctx: ctx.key(r.urn).get("id"),
    ("Tag", "description"): lambda r, ctx: (ctx.aspect(r.urn, "tagProperties") or {}).get("description"),
    ("GlossaryTerm", "hierarchicalName"): lambda r, ctx: key_name(ctx, r),
    ("DataPlatform", "displayName"): lambda r, ctx: (ctx.aspect(r.urn, "dataPlatformInfo") or {}).get("displayName"),
    ("SchemaFieldEntity", "fieldPath"): lambda r, ctx: ctx.key(r.urn).get("fieldPath"),
    ("SchemaFieldEntity", "parent"): lambda r, ctx: ref(ctx.key(r.urn).get("parent")),
    ("SchemaFieldEntity", "documentation"): _documentation,
    ("Chart", "inputFields"): input_fields,
    ("Dashboard", "inputFields"): input_fields,
    ("DataProcessInstance", "name"): lambda r, ctx: (
        ctx.aspect(r.urn, "dataProcessInstanceProperties") or {}).get("name"),
    ("DataProcessInstance", "mlTrainingRunProperties"): lambda r, ctx: ctx.aspect(r.urn, "mlTrainingRunProperties"),
    ("Dataset", "testResults"): test_results,
    ("Test", "name"): lambda r, ctx: (ctx.aspect(r.urn, "testInfo") or {}).get("name") or key_name(ctx, r),
    ("Test", "category"): lambda r, ctx: (ctx.aspect(r.urn, "testInfo") or {}).get("category"),
    ("Test", "description"): lambda r, ctx: (ctx.aspect(r.urn, "testInfo") or {}).get("description"),
    ("Test", "definition"): _test_definition,
    ("DataHubView", "viewType"): lambda r, ctx: (ctx.aspect(r.urn, "dataHubViewInfo") or {}).get("type"),
    ("DataHubView", "name"): lambda r, ctx: (ctx.aspect(r.urn, "dataHubViewInfo") or {}).get("name"),
    ("DataHubView", "description"): lambda r, ctx: (ctx.aspect(r.urn, "dataHubViewInfo") or {}).get("description"),
    ("DataHubView", "definition"): _view_definition,
    ("StructuredPropertyEntity", "definition"): _property_definition,
    ("QueryEntity", "properties"): lambda r, ctx: ctx.aspect(r.urn, "queryProperties"),
    ("MLFeature", "featureNamespace"): lambda r, ctx: ctx.key(r.urn).get("featureNamespace"),
    ("MLPrimaryKey", "featureNamespace"): lambda r, ctx: ctx.key(r.urn).get("featureNamespace"),
    ("VersionSet", "latestVersion"): lambda r, ctx: ref(
        (ctx.aspect(r.urn, "versionSetProperties") or {}).get("latest")),
}


def resolve_entity_field(r: EntityRef, ctx: Context, type_name: str, field_name: str, args: dict[str, Any]) -> Any:
    fn = BY_TYPE.get((type_name, field_name)) or COMMON.get(field_name)
    if fn is None:
        raise GraphQLError(f"{type_name}.{field_name} is not served by Lodestar")
    return fn(r, ctx, **args)


def graphql_type_of(value: Any) -> str | None:
    """The GraphQL object type of an entity (for the Entity interface and the OwnerType union)."""
    if isinstance(value, EntityRef) and value.entity_type in ENTITY_TYPES:
        return ENTITY_TYPES[value.entity_type][1]
    return None
