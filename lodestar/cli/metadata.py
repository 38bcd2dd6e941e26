"""`lodestar tag|property|principal|token|grant|revoke|grants`, and `lodestar search` with `--cdap`,
`--target`, `--scope` or `--namespace` (CDAP-syntax search; without them `lodestar search` is
the native /v1/search): metadata and access from the command line, over the REST API.

ENTITY is a URN or a CDAP path below /v3/namespaces/ (`default/datasets/myds/field/empname`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from ingest.rest import LodestarError, RestClient
from lodestar.metadata.client import MetadataClient

ClientOptions = Callable[[argparse.ArgumentParser], None]


def add_commands(sub: Any, client_options: ClientOptions, search: argparse.ArgumentParser,
                 rest: Callable[[argparse.Namespace], RestClient]) -> None:
    """Register the commands on `sub`; `search` (the native search command) gains --cdap,
    --target, --scope and --namespace, each of which switches it to CDAP-syntax search."""
    tag = sub.add_parser("tag", help="add, remove or list tags of an entity (URN or CDAP path)")
    tag_sub = tag.add_subparsers(dest="action", required=True)
    for action, text in (("add", "add tags"), ("remove", "remove tags (all when none is given)"), ("list", "list")):
        p = tag_sub.add_parser(action, help=text)
        p.add_argument("entity", metavar="ENTITY")
        if action != "list":
            p.add_argument("tags", nargs="+" if action == "add" else "*", metavar="TAG")
        p.add_argument("--scope", help="USER (default for changes) or SYSTEM; a list without it shows"
                       " each scope under its name")
        client_options(p)
        p.set_defaults(func=lambda args: _tag(MetadataClient("", rest=rest(args)), args))

    prop = sub.add_parser("property", help="set, remove or list properties of an entity (URN or CDAP path)")
    prop_sub = prop.add_subparsers(dest="action", required=True)
    for action, text in (("set", "set key=value pairs"), ("remove", "remove keys (all when none is given)"),
                         ("list", "list")):
        p = prop_sub.add_parser(action, help=text)
        p.add_argument("entity", metavar="ENTITY")
        if action != "list":
            p.add_argument("items", nargs="+" if action == "set" else "*", metavar="KEY=VALUE" if action == "set"
                           else "KEY")
        p.add_argument("--scope", help="USER (default for changes) or SYSTEM; a list without it shows"
                       " each scope under its name")
        client_options(p)
        p.set_defaults(func=lambda args: _property(MetadataClient("", rest=rest(args)), args))

    search.add_argument("--target", action="append", help="CDAP-syntax search of this entity type (repeatable):"
                        " dataset, stream, application, program, field, ... ")
    search.add_argument("--scope", help="CDAP-syntax search in USER or SYSTEM metadata only")
    search.add_argument("--namespace", help="CDAP-syntax search in one namespace (default: all)")
    search.add_argument("--cdap", action="store_true", help="CDAP-syntax search (implied by --target, --scope"
                        " and --namespace; without any of them QUERY is in /v1/search's language)")
    native = search.get_default("func")
    search.set_defaults(func=lambda args: _search(MetadataClient("", rest=rest(args)), args)
                        if args.cdap or args.target or args.scope or args.namespace else native(args))

    _access_commands(sub, client_options, rest)


def _access_commands(sub: Any, client_options: ClientOptions, rest: Callable[[argparse.Namespace], RestClient]
                     ) -> None:
    def command(name: str, text: str, run: Callable[[RestClient, argparse.Namespace], Any],
                *arguments: tuple[str, dict[str, Any]]) -> None:
        p = sub.add_parser(name, help=text)
        for flag, options in arguments:
            p.add_argument(flag, **options)
        client_options(p)
        p.set_defaults(func=lambda args: _print(run(rest(args), args)))

    principal = {"metavar": "PRINCIPAL"}
    command("principal", "add or remove a principal, or set its password (read from --password-file or"
            " standard input); needs ADMIN on the instance", _principal,
            ("action", {"choices": ("add", "remove", "set-password")}), ("name", principal),
            ("--password-file", {"help": "set-password: read the password from this file's first line"}))
    command("token", "create a token for a principal (printed once) or revoke one by its id",
            lambda r, a: r.call("POST", "/v1/access/tokens", {"principal": a.subject, "name": a.name})
            if a.action == "create" else r.call("DELETE", f"/v1/access/tokens/{a.subject}"),
            ("action", {"choices": ("create", "revoke")}),
            ("subject", {"metavar": "PRINCIPAL|ID"}), ("--name", {"help": "a label for the token"}))
    resource = {"metavar": "RESOURCE", "help": "instance, a URN or a CDAP path (default/datasets/ds)"}
    command("grant", "grant privileges (READ, WRITE, ADMIN) on a resource",
            lambda r, a: r.call("POST", "/v1/access/grants", {"principal": a.principal, "resource": a.resource,
                                                              "privileges": a.privileges}),
            ("principal", principal), ("resource", resource), ("privileges", {"nargs": "+", "metavar": "PRIVILEGE"}))
    command("revoke", "revoke privileges on a resource (all when none is given)",
            lambda r, a: r.call("DELETE", "/v1/access/grants?" + _query(principal=a.principal, resource=a.resource,
                                                                        privileges=",".join(a.privileges) or None)),
            ("principal", principal), ("resource", resource), ("privileges", {"nargs": "*", "metavar": "PRIVILEGE"}))
    command("grants", "list a principal's grants (default: one's own)",
            lambda r, a: r.call("GET", "/v1/access/grants?" + _query(principal=a.principal)),
            ("principal", {"nargs": "?", **principal}))


def _principal(rest: RestClient, args: argparse.Namespace) -> Any:
    if args.action == "add":
        return rest.call("POST", "/v1/access/principals", {"name": args.name})
    if args.action == "remove":
        return rest.call("DELETE", f"/v1/access/principals/{args.name}")
    return rest.call("PUT", f"/v1/access/principals/{args.name}/password", {"password": _read_password(args)})


def _read_password(args: argparse.Namespace) -> str:
    """The password of --password-file's first line, else of standard input (asked for on a
    terminal); never of the command line, where other users could read it."""
    try:
        if args.password_file:
            with open(args.password_file, encoding="utf-8") as handle:
                text = handle.readline()
        elif sys.stdin.isatty():
            text = getpass.getpass(f"password for {args.name}: ")
        else:
            text = sys.stdin.readline()
    except OSError as err:
        raise LodestarError(f"cannot read the password: {err.strerror or err}") from None
    password = text.rstrip("\r\n")
    if not password:
        raise LodestarError("no password given (on standard input or in --password-file)")
    return password


def _query(**params: str | None) -> str:
    return urlencode({k: v for k, v in params.items() if v is not None})


def _print(body: Any) -> int:
    print(json.dumps(body, indent=2))
    return 0


def _tag(client: MetadataClient, args: argparse.Namespace) -> int:
    if args.action == "add":
        client.add_tags(args.entity, *args.tags, scope=args.scope)
    elif args.action == "remove":
        client.remove_tags(args.entity, *args.tags, scope=args.scope)
    if args.action == "list" and not args.scope:
        _by_scope(client.tags_by_scope(args.entity), lambda tags: list(tags))
        return 0
    for tag in client.tags(args.entity, scope=args.scope or "USER"):  # after a change: the scope changed
        print(tag)
    return 0


def _by_scope(found: dict[str, Any], lines: Callable[[Any], list[str]]) -> None:
    """Each scope's items under its name (USER, then SYSTEM), indented; `(none)` for none."""
    for scope in ("USER", "SYSTEM"):
        print(f"{scope}:")
        for line in lines(found.get(scope) or {}) or ["(none)"]:
            print(f"  {line}")


def _property(client: MetadataClient, args: argparse.Namespace) -> int:
    if args.action == "set":
        pairs = {}
        for item in args.items:
            key, sep, value = item.partition("=")
            if not sep:
                raise LodestarError(f"{item!r} is not key=value")
            pairs[key] = value
        client.set_properties(args.entity, pairs, scope=args.scope)
    elif args.action == "remove":
        client.remove_properties(args.entity, *args.items, scope=args.scope)
    if args.action == "list" and not args.scope:
        _by_scope(client.properties_by_scope(args.entity), lambda props: [f"{k}={v}" for k, v in sorted(props.items())])
        return 0
    for key, value in sorted(client.properties(args.entity, scope=args.scope or "USER").items()):
        print(f"{key}={value}")
    return 0


def _search(client: MetadataClient, args: argparse.Namespace) -> int:
    body = client.search(args.query, args.namespace, args.target or (), args.scope, limit=args.count,
                         offset=args.start)
    print(f"{body['total']} result(s)")
    for result in body["results"]:
        entity = result["metadataEntity"]
        details = ",".join(f"{k}={v}" for k, v in entity["details"].items())
        print(f"{entity['type']:<12} {details}")
    return 0
