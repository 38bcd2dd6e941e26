"""The `lodestar` command: serve, gms, ingest, get, search, lineage, mcl-processor, check, restore-indices.

Errors are one line on stderr and a non-zero exit; never a traceback.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from gms.tracing import configure_logging
from ingest.backends.errors import BackendError, BackendUnavailable
from ingest.files import ProposalFileError, read_proposal_file
from ingest.rest import LodestarError
from lodestar import file_permissions
from lodestar.cli import metadata as metadata_cli
from lodestar.cli.common import (
    DEFAULT_SERVER,
    CliError,
    Local,
    add_webhook_address_option,
    client_of,
    config_of,
    default_data_dir,
)
from lodestar.cli.failed import register as register_failed
from lodestar.cli.pipeline import register as register_pipeline
from lodestar.cli.replay import register as register_replay
from lodestar.cli.tail import register as register_tail
from lodestar.cli.webhooks import register as register_webhooks
from schemas.registry import default_registry

# The example metadata: `examples/` in a checkout, copied into this package by a wheel's build (setup.py).
_PACKAGED_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_CHECKOUT_EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES_DIR = _PACKAGED_EXAMPLES if _PACKAGED_EXAMPLES.is_dir() else _CHECKOUT_EXAMPLES


def cmd_serve(args: argparse.Namespace) -> int:
    """GMS with its background work: everything (serve) or only the MCP consumer (gms)."""
    from lodestar.api.access_log import access_log_options
    from lodestar.api.auth import TOKEN_FILE, admin_token
    from lodestar.assembly import open_gms
    from lodestar.server import Roles, ServeError, serve_one, serve_workers

    if args.workers < 1:
        raise CliError("--workers must be at least 1")
    roles = Roles.ALL if args.command == "serve" else Roles.MCP_CONSUMER
    roles &= ~Roles.WEBHOOKS if args.no_webhooks else Roles.ALL
    data_dir = Path(args.data_dir)
    config = config_of(args)
    try:
        access_log = access_log_options(args.access_log)
    except OSError as err:
        raise CliError(f"cannot open the access log {args.access_log}: {err.strerror or err}") from None
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        file_permissions.tighten(data_dir)
        token, created = admin_token(data_dir, _given_admin_token(args))
        if os.environ.get(ADMIN_PASSWORD_ENV):
            _ensure_password_admin(config, data_dir, os.environ[ADMIN_PASSWORD_ENV])
        if args.examples:
            gms = open_gms(config, data_dir)
            try:
                _load_examples(gms)
            finally:
                gms.close()
    except OSError as err:
        raise CliError(f"cannot use data directory {data_dir}: {err}") from None
    except BackendError as err:
        raise CliError(str(err)) from None
    stores = "embedded stores" if config.embedded else \
        f"{config.event_log} log, {config.aspect_store} store, {config.read_models} read models"
    print(f"Lodestar GMS on http://{args.host}:{args.port} (data: {data_dir}, {stores}, workers: {args.workers})",
          flush=True)
    # A token the operator chose or one stored before is never printed: service logs keep stdout.
    print(f"admin token (new): {token}" if created else f"admin token: in {data_dir / TOKEN_FILE}", flush=True)
    try:
        if args.workers == 1:
            serve_one(data_dir, args.host, args.port, token, config, roles, access_log)
            return 0
        return serve_workers(data_dir, args.host, args.port, token, args.workers, config, roles, access_log)
    except ServeError as err:
        raise CliError(str(err)) from None


def _given_admin_token(args: argparse.Namespace) -> str | None:
    """The admin token --admin-token gives, or the one in the --admin-token-file; None: neither."""
    if args.admin_token_file is None:
        return args.admin_token
    if args.admin_token is not None:
        raise CliError("give --admin-token or --admin-token-file, not both")
    try:
        token = Path(args.admin_token_file).read_text().strip()
    except (OSError, UnicodeDecodeError) as err:
        why = getattr(err, "strerror", None) or err
        raise CliError(f"cannot read the admin token file {args.admin_token_file}: {why}") from None
    if not token or any(c.isspace() for c in token):
        raise CliError(f"the admin token file {args.admin_token_file} must hold one token (no spaces), not"
                       f" {'nothing' if not token else 'several words'}")
    return token


ADMIN_PASSWORD_ENV = "LODESTAR_ADMIN_PASSWORD"
PASSWORD_ADMIN = "datahub"  # the admin DataHub's clients sign in as (urn:li:corpuser:datahub)


def _ensure_password_admin(config, data_dir: Path, password: str) -> None:
    """At a start with LODESTAR_ADMIN_PASSWORD: the `datahub` principal, with every privilege on
    the instance and that password, unless it has a password already (never overwritten)."""
    from gms.access.accounts import AccountError, Accounts
    from lodestar.assembly import open_gms

    gms = open_gms(config, data_dir)
    try:
        made = Accounts(gms).ensure_admin(PASSWORD_ADMIN, password)
    except AccountError as err:
        raise CliError(f"{ADMIN_PASSWORD_ENV}: {err}") from None
    finally:
        gms.close()
    if made:
        print(f"admin principal {PASSWORD_ADMIN} created with the password of {ADMIN_PASSWORD_ENV}", flush=True)


def _load_examples(gms) -> None:
    from ingest.proposal import ProposalError, parse_proposal
    from lodestar.api.auth import ADMIN

    registry = gms.registry
    counts: Counter[str] = Counter()
    for path in sorted(EXAMPLES_DIR.glob("*.json")):
        parsed = []
        for item in read_proposal_file(path, registry):
            try:
                parsed.append(parse_proposal(item))
            except ProposalError as err:
                parsed.append(err)
        for result in gms.apply(parsed, ADMIN):
            counts[result.status] += 1
            if result.failure is not None:
                raise CliError(f"example {path.name}: {result.failure.message}")
    print(f"examples loaded: {dict(counts)}", flush=True)


def cmd_ingest(args: argparse.Namespace) -> int:
    registry = default_registry()
    proposals = []
    for name in args.files:
        proposals.extend(read_proposal_file(Path(name), registry))
    client = client_of(args)
    counts: Counter[str] = Counter()
    failures: list[str] = []
    columns = (TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("ingest", total=len(proposals))
        for start in range(0, len(proposals), args.batch_size):
            batch = proposals[start:start + args.batch_size]
            for offset, result in enumerate(client.propose(batch)):
                counts[result["status"]] += 1
                if result["status"] == "failed":
                    item = batch[offset]
                    failures.append(f"proposal {start + offset} ({item.get('entityUrn')} {item.get('aspectName')}): "
                                    f"{result.get('message')}")
            progress.advance(task, len(batch))
    for line in failures[:20]:
        print(f"failed: {line}", file=sys.stderr)
    if len(failures) > 20:
        print(f"... and {len(failures) - 20} more failures", file=sys.stderr)
    summary = ", ".join(f"{counts[s]} {s}" for s in ("applied", "noop", "dropped", "failed"))
    print(f"{len(proposals)} proposals: {summary}")
    return 1 if failures else 0


def cmd_get(args: argparse.Namespace) -> int:
    client = client_of(args)
    if args.aspect:
        body = client.aspect(args.urn, args.aspect, args.version)
    elif args.version is not None:
        raise CliError("--version needs --aspect")
    else:
        body = client.entity(args.urn)
    print(json.dumps(body, indent=2, sort_keys=True))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    query = urlencode({"query": args.query, "count": args.count, "start": args.start,
                       **({"types": args.types} if args.types else {})})
    body = client_of(args).call("GET", f"/v1/search?{query}")
    print(f"{body['total']} result(s)")
    for hit in body["results"]:
        description = f"  {hit['description']}" if hit.get("description") else ""
        print(f"{hit['entityType']:<20} {hit['urn']}{description}")
    return 0


def cmd_lineage(args: argparse.Namespace) -> int:
    route = "/v1/lineage/fields" if args.fields else "/v1/lineage"
    query = urlencode({"urn": args.urn, "direction": args.direction, "maxHops": args.max_hops})
    body = client_of(args).call("GET", f"{route}?{query}")
    for edge in body["edges"]:
        via = f" ({edge['via']})" if edge.get("via") else ""
        print(f"{edge['source']} -[{edge['type']}]-> {edge['destination']}{via}")
    print(f"{len(body['nodes'])} node(s), {len(body['edges'])} edge(s)")
    return 0


def cmd_mcl_processor(args: argparse.Namespace) -> int:
    with Local(Path(args.data_dir), config_of(args)) as local:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        print(f"MCL processor on {args.data_dir}", flush=True)
        try:
            local.processor.run(local.gms.log, stop)
        except KeyboardInterrupt:
            stop.set()
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    with Local(Path(args.data_dir), config_of(args)) as local:
        report = local.processor.check(local.gms.store, examples=args.examples)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(f"{report.aspects} aspects checked: {sum(report.counts.values())} difference(s)")
        for (model, kind), count in sorted(report.counts.items()):
            print(f"  {model:<10} {kind:<8} {count}")
        for example in report.examples:
            print(f"  e.g. {example.model} {example.kind}: {example.urn} {example.aspect or ''} {example.detail}")
    return 0 if report.ok else 1


def cmd_restore(args: argparse.Namespace) -> int:
    with Local(Path(args.data_dir), config_of(args)) as local:
        columns = (TextColumn("restoring"), TextColumn("{task.completed} aspects"), TextColumn("{task.speed}/s"))
        with Progress(*columns, transient=True, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task("restore", total=None)
            done = local.processor.restore(
                local.gms.store, args.urn_like, args.aspect,
                progress=lambda count: progress.update(task, completed=count),
                timeseries_log=None if args.aspect or args.urn_like else local.gms.log)
    print(f"restored {done} aspects and points")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lodestar", description="Lodestar metadata platform")
    sub = parser.add_subparsers(dest="command", required=True)

    def client_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--server", help=f"GMS address (env LODESTAR_SERVER, default {DEFAULT_SERVER})")
        p.add_argument("--token", help="bearer token (env LODESTAR_TOKEN, else the data directory's admin token)")
        p.add_argument("--data-dir", default=str(default_data_dir()),
                       help="data directory (env LODESTAR_DATA_DIR, default ~/.lodestar)")

    def config_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", help="lodestar.yml choosing adapters and endpoints (env LODESTAR_CONFIG;"
                                        " default: lodestar.yml in the data directory, if any)")

    for name, text in (("serve", "run GMS, the MCP consumer, the MCL processor and webhook delivery (all in one)"),
                       ("gms", "run GMS and the MCP consumer, without the MCL processor and webhook delivery")):
        serve = sub.add_parser(name, help=text)
        serve.add_argument("--data-dir", default=str(default_data_dir()))
        serve.add_argument("--host", default="127.0.0.1")
        serve.add_argument("--port", type=int, default=8080)
        serve.add_argument("--access-log", default=os.environ.get("LODESTAR_ACCESS_LOG", "-"), metavar="WHERE",
                           help="one JSON line per request: '-' stderr (default), a file to append to, or 'off'"
                                " (env LODESTAR_ACCESS_LOG)")
        serve.add_argument("--admin-token", help="admin bearer token (default: stored in the data directory, "
                                                 "created on first start); other local users see it in `ps`:"
                                                 " prefer --admin-token-file")
        serve.add_argument("--admin-token-file", default=os.environ.get("LODESTAR_ADMIN_TOKEN_FILE"), metavar="PATH",
                           help="read the admin bearer token from this file (env LODESTAR_ADMIN_TOKEN_FILE)")
        serve.add_argument("--examples", action="store_true", help="load the example metadata on start")
        serve.add_argument("--workers", type=int, default=1,
                           help="GMS processes sharing the port and the data directory (default 1)")
        serve.add_argument("--no-webhooks", action="store_true", help="leave webhook delivery to `lodestar webhooks`")
        add_webhook_address_option(serve)
        config_option(serve)
        serve.set_defaults(func=cmd_serve)

    ingest = sub.add_parser("ingest", help="send proposal files (Lodestar or DataHub JSON) to GMS")
    ingest.add_argument("files", nargs="+", metavar="FILE")
    ingest.add_argument("--batch-size", type=int, default=500)
    client_options(ingest)
    ingest.set_defaults(func=cmd_ingest)

    get = sub.add_parser("get", help="print an entity, or one aspect of it")
    get.add_argument("urn")
    get.add_argument("--aspect")
    get.add_argument("--version", type=int)
    client_options(get)
    get.set_defaults(func=cmd_get)

    search = sub.add_parser("search", help="search metadata (query language: docs/cdap-metadata-and-search.md)")
    search.add_argument("query")
    search.add_argument("--types", help="entity types, comma-separated")
    search.add_argument("--count", type=int, default=20)
    search.add_argument("--start", type=int, default=0)
    client_options(search)
    search.set_defaults(func=cmd_search)
    metadata_cli.add_commands(sub, client_options, search, client_of)  # tag, property, access; CDAP search

    lineage = sub.add_parser("lineage", help="trace lineage from an entity (or a schemaField with --fields)")
    lineage.add_argument("urn")
    lineage.add_argument("--direction", choices=("upstream", "downstream", "both"), default="both")
    lineage.add_argument("--max-hops", type=int, default=3)
    lineage.add_argument("--fields", action="store_true", help="field-level lineage from a schemaField URN")
    client_options(lineage)
    lineage.set_defaults(func=cmd_lineage)

    def data_dir_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", default=str(default_data_dir()))
        config_option(p)

    processor = sub.add_parser("mcl-processor", help="run the MCL processor alone")
    data_dir_option(processor)
    processor.set_defaults(func=cmd_mcl_processor)

    check = sub.add_parser("check", help="compare the read models with the aspect store (exit 1 on differences)")
    check.add_argument("--examples", type=int, default=10)
    check.add_argument("--json", action="store_true")
    data_dir_option(check)
    check.set_defaults(func=cmd_check)

    restore = sub.add_parser("restore-indices", help="rebuild the read models from the aspect store")
    restore.add_argument("--urn-like", help="only URNs matching this SQL LIKE pattern")
    restore.add_argument("--aspect", help="only this aspect")
    data_dir_option(restore)
    restore.set_defaults(func=cmd_restore)
    register_tail(sub)
    register_failed(sub)
    register_replay(sub)
    register_webhooks(sub)
    register_pipeline(sub, client_options)
    return parser


def main(argv: list[str] | None = None) -> int:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 <pid>`: every thread's stack on stderr
    file_permissions.restrict()  # what any command creates (data directory, databases, logs) is its user's only
    configure_logging(getattr(logging, os.environ.get("LODESTAR_LOG_LEVEL", "WARNING").upper(), logging.WARNING))
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (CliError, LodestarError, ProposalFileError) as err:
        print(f"lodestar: error: {err}", file=sys.stderr)
        return err.status if isinstance(err, CliError) else 1
    except KeyboardInterrupt:
        return 130
    except BackendError as err:  # a backend that stops answering mid-command: one line, not a traceback
        what = "did not answer" if isinstance(err, BackendUnavailable) else "failed"
        print(f"lodestar: error: a backend {what}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
