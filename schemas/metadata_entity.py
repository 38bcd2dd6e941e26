"""CDAP metadata entities and URNs: one reversible rule.

A metadata entity is an ordered list of key/value pairs with a type (the last key, or the key
before a trailing `version`, unless given). The pairs CDAP uses for its own entities map to
the URNs of `examples/README.md`:

    namespace=ns                                   urn:li:container:ns
    namespace=ns,application=app                   urn:li:dataFlow:(cdap,app,ns)
    namespace=ns,application=app,version=v         urn:li:dataFlow:(cdap,app@v,ns)
    ...,application=app[,version=v],type=t,program=p
                                                   urn:li:dataJob:(<the application's URN>,p)
    namespace=ns,dataset=ds  (or stream=s)         urn:li:dataset:(urn:li:dataPlatform:cdap,ns.ds,PROD)
    <a dataset or stream>,field=f                  urn:li:schemaField:(<the dataset's URN>,f)
    urn=<any URN>                                  that URN (entities outside CDAP's names)

Anything else is a custom entity, `urn:li:customEntity:(<parent>,<type>,<details>)`: parent is
the URN of the longest leading pairs that form one of the entities above (or `instance` when
none do), details the remaining pairs as `key=value` joined by `/`, with `%`, `/`, `=`, `,`,
`(` and `)` percent-encoded. So `namespace=ns,dataset=fs,file=part01` is
`urn:li:customEntity:(urn:li:dataset:(urn:li:dataPlatform:cdap,ns.fs,PROD),file,file=part01)` and
`database=db,table=t` is `urn:li:customEntity:(instance,table,database=db/table=t)`.

Back from a URN, what the URN does not hold comes from the store through a `Hint`: the type of
a program (its `dataJobInfo.type`) and whether a dataset is a stream (`subTypes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from schemas.urns import Urn, UrnError

PLATFORM = "urn:li:dataPlatform:cdap"
ORCHESTRATOR = "cdap"
ORIGIN = "PROD"
INSTANCE = "instance"
URN_KEY = "urn"
DATA_KEYS = ("dataset", "stream")
ACCESS_ENTITY_TYPES = frozenset({"accessToken", "accessGrants", "accessCredentials"})
_DETAIL_ENCODE = {"%": "%25", "/": "%2F", "=": "%3D", ",": "%2C", "(": "%28", ")": "%29"}

#: What a URN does not say, read from the store: a program's type, "stream" for a stream.
Hint = Callable[[str], str | None]


class EntityError(ValueError):
    """A metadata entity or URN that cannot be mapped; the message says why."""


@dataclass(frozen=True, slots=True)
class MetadataEntity:
    """CDAP's MetadataEntity: ordered key/value pairs and a type."""

    details: tuple[tuple[str, str], ...]
    type: str

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]], type_: str | None = None) -> MetadataEntity:
        """An entity from pairs; raises EntityError for no pairs, an empty key or value, or a
        key given twice."""
        details = tuple((str(k), str(v)) for k, v in pairs)
        if not details:
            raise EntityError("a metadata entity needs at least one key=value pair")
        seen: set[str] = set()
        for key, value in details:
            if not key or not value:
                raise EntityError(f"empty key or value in {key}={value}")
            if key in seen:
                raise EntityError(f"key {key!r} appears twice")
            seen.add(key)
        keys = [k for k, _ in details]
        default = keys[-2] if keys[-1] == "version" and len(keys) > 1 else keys[-1]
        return cls(details, type_ or default)

    def get(self, key: str) -> str | None:
        return next((v for k, v in self.details if k == key), None)

    def keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.details)

    def to_json(self) -> dict[str, Any]:
        """CDAP's JSON form: {"details": {key: value, ...}, "type": ...} (details in order)."""
        return {"details": dict(self.details), "type": self.type}

    def __str__(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.details)


def _dataset_urn(ns: str, name: str) -> str:
    return f"urn:li:dataset:({PLATFORM},{ns}.{name},{ORIGIN})"


def _app_urn(ns: str, app: str, version: str | None) -> str:
    flow = f"{app}@{version}" if version else app
    return f"urn:li:dataFlow:({ORCHESTRATOR},{flow},{ns})"


def _known_urn(details: Sequence[tuple[str, str]], type_: str) -> str | None:
    """The URN of pairs that form one of CDAP's own entities of type `type_`, else None."""
    keys = tuple(k for k, _ in details)
    values = dict(details)
    ns = values.get("namespace")
    if keys == (URN_KEY,):
        return str(Urn.parse(values[URN_KEY]))
    if not keys or keys[0] != "namespace" or "@" in (values.get("application") or "") or "." in ns \
            or any(ch in value for ch in ",()" for _, value in details):
        return None  # such names have no URN of their own: they make a custom entity
    if keys == ("namespace",) and type_ == "namespace":
        return f"urn:li:container:{ns}"
    if keys[:2] == ("namespace", "application"):
        rest = keys[2:]
        version = values.get("version") if rest[:1] == ("version",) else None
        rest = rest[1:] if version else rest
        app = _app_urn(ns, values["application"], version)  # type: ignore[arg-type]
        if not rest and type_ == "application":
            return app
        if rest in (("type", "program"), ("program",)) and type_ == "program":
            return f"urn:li:dataJob:({app},{values['program']})"
        return None
    if len(keys) >= 2 and keys[1] in DATA_KEYS:
        data = _dataset_urn(ns, values[keys[1]])  # type: ignore[arg-type]
        if keys[2:] == () and type_ == keys[1]:
            return data
        if keys[2:] == ("field",) and type_ == "field":
            return f"urn:li:schemaField:({data},{values['field']})"
    return None


def _canonical_type(details: Sequence[tuple[str, str]]) -> str:
    return MetadataEntity.of(details).type if details[-1][0] != "program" else "program"


def to_urn(entity: MetadataEntity) -> str:
    """The URN of a metadata entity (see the module docstring)."""
    try:
        known = _known_urn(entity.details, entity.type)
    except UrnError as err:
        raise EntityError(f"{URN_KEY}: {err}") from None
    if known is not None:
        return known
    for cut in range(len(entity.details) - 1, 0, -1):
        head = entity.details[:cut]
        parent = _known_urn(head, _canonical_type(head))
        if parent is not None:
            break
    else:
        parent, cut = INSTANCE, 0
    detail = "/".join(f"{_encode(k)}={_encode(v)}" for k, v in entity.details[cut:])
    return f"urn:li:customEntity:({parent},{_encode(entity.type)},{detail})"


def from_urn(urn: str, hint: Hint | None = None) -> MetadataEntity:
    """The metadata entity of a URN; raises EntityError for a malformed URN."""
    try:
        parsed = Urn.parse(urn)
    except UrnError as err:
        raise EntityError(str(err)) from None
    hint = hint or (lambda _urn: None)
    pairs = _cdap_pairs(parsed, hint)
    if pairs is not None:
        return MetadataEntity.of(pairs, _canonical_type(pairs))
    if parsed.entity_type == "customEntity" and len(parsed.parts) == 3:
        parent, type_, detail = parsed.parts
        head: list[tuple[str, str]] = []
        if parent != INSTANCE:
            head = list(from_urn(parent, hint).details)
        tail = [tuple(_decode(x) for x in item.split("=", 1)) for item in detail.split("/")]
        if any(len(pair) != 2 for pair in tail):
            raise EntityError(f"{urn!r}: details must be key=value pairs joined by '/'")
        return MetadataEntity.of([*head, *tail], _decode(type_))  # type: ignore[list-item]
    return MetadataEntity.of([(URN_KEY, str(parsed))], parsed.entity_type)


def _cdap_pairs(urn: Urn, hint: Hint) -> list[tuple[str, str]] | None:
    """The pairs of a URN of one of CDAP's own entities, else None."""
    kind, parts = urn.entity_type, urn.parts
    if kind == "container" and len(parts) == 1:
        return [("namespace", parts[0])]
    if kind == "dataFlow" and len(parts) == 3 and parts[0] == ORCHESTRATOR:
        app, _, version = parts[1].partition("@")
        pairs = [("namespace", parts[2]), ("application", app)]
        return pairs + [("version", version)] if version else pairs
    if kind == "dataJob" and len(parts) == 2:
        app = _cdap_pairs(Urn.parse(parts[0]), hint)
        if app is None:
            return None
        program_type = hint(str(urn))
        return app + ([("type", program_type)] if program_type else []) + [("program", parts[1])]
    if kind == "dataset" and len(parts) == 3 and parts[0] == PLATFORM and parts[2] == ORIGIN and "." in parts[1]:
        ns, _, name = parts[1].partition(".")
        return [("namespace", ns), ("stream" if hint(str(urn)) == "stream" else "dataset", name)]
    if kind == "schemaField" and len(parts) == 2:
        data = _cdap_pairs(Urn.parse(parts[0]), hint)
        return None if data is None else data + [("field", parts[1])]
    return None


PROGRAM_TYPES = {"flows": "flow", "mapreduce": "mapreduce", "spark": "spark", "workflows": "workflow",
                 "services": "service", "workers": "worker"}
_COLLECTIONS = {"apps": "application", "datasets": "dataset", "streams": "stream"}


def from_path(path: str, type_: str | None = None) -> MetadataEntity:
    """An entity from a CDAP REST path below /v3/namespaces/: `ns`, `ns/apps/app[/versions/v]
    [/<program type>/p]`, `ns/datasets/ds`, `ns/streams/s`, each followed by any number of
    `key/value` segments (`ns/datasets/ds/field/empname`). Raises EntityError."""
    segments = [s for s in path.strip("/").split("/")]
    if not segments or not all(segments):
        raise EntityError(f"{path!r}: empty path segment")
    pairs = [("namespace", segments[0])]
    rest = segments[1:]
    if rest and rest[0] in _COLLECTIONS:
        if len(rest) < 2:
            raise EntityError(f"{path!r}: {rest[0]} needs a name after it")
        pairs.append((_COLLECTIONS[rest[0]], rest[1]))
        rest = rest[2:]
        if pairs[-1][0] == "application":
            if rest[:1] == ["versions"] and len(rest) >= 2:
                pairs.append(("version", rest[1]))
                rest = rest[2:]
            if rest and rest[0] in PROGRAM_TYPES and len(rest) >= 2:
                pairs += [("type", PROGRAM_TYPES[rest[0]]), ("program", rest[1])]
                rest = rest[2:]
    if len(rest) % 2:
        raise EntityError(f"{path!r}: {rest[-1]!r} has no value after it (custom entities are key/value segments)")
    pairs += [(rest[i], rest[i + 1]) for i in range(0, len(rest), 2)]
    return MetadataEntity.of(pairs, type_ or ("program" if pairs[-1][0] == "program" else None))


def resource_chain(urn: str) -> list[str]:
    """The resources whose grants decide about `urn`, nearest first, ending with the instance."""
    try:
        parsed = Urn.parse(urn)
    except UrnError:
        return [urn, INSTANCE]  # whoever may read or write everything may learn it is malformed
    kind, parts = parsed.entity_type, parsed.parts
    if kind in ACCESS_ENTITY_TYPES:
        return [INSTANCE]
    if kind == "schemaField":
        return resource_chain(parts[0])
    if kind == "customEntity":
        return [INSTANCE] if parts[0] == INSTANCE else resource_chain(parts[0])
    if kind == "dataJob":
        return [urn, *resource_chain(parts[0])]
    if kind == "dataFlow" and len(parts) == 3 and parts[0] == "cdap":
        app, _, version = parts[1].partition("@")
        versions = [f"urn:li:dataFlow:(cdap,{app},{parts[2]})"] if version else []
        return [urn, *versions, f"urn:li:container:{parts[2]}", INSTANCE]
    if kind == "dataset" and len(parts) == 3 and parts[0] == PLATFORM and "." in parts[1]:
        return [urn, f"urn:li:container:{parts[1].partition('.')[0]}", INSTANCE]
    return [urn, INSTANCE]


def parse_pairs(text: str, type_: str | None = None) -> MetadataEntity:
    """An entity from `key=value,key=value` text (values may not hold commas)."""
    pairs = []
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise EntityError(f"{item!r} is not key=value")
        pairs.append((key.strip(), value.strip()))
    return MetadataEntity.of(pairs, type_)


def _encode(text: str) -> str:
    return "".join(_DETAIL_ENCODE.get(ch, ch) for ch in text)


def _decode(text: str) -> str:
    return unquote(text)
