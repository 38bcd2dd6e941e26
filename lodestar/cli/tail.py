"""`lodestar tail`: print metadata changes as they happen (one line each, or JSON lines)."""

from __future__ import annotations

import argparse
import functools
import sys
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ingest import topics
from ingest.eventlog import EventLog
from ingest.subscribe import Change, Start, subscribe
from schemas.registry import default_registry, load_named_types

TOPICS = {"versioned": (topics.MCL_VERSIONED,), "timeseries": (topics.MCL_TIMESERIES,),
          "all": (topics.MCL_VERSIONED, topics.MCL_TIMESERIES)}


def reports_errors(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command whose CliError is printed as one line with its exit status (as lodestar.cli.main.main
    does; also when `python -m lodestar.cli.main` loaded lodestar.cli.main twice, as __main__ and as
    lodestar.cli.main)."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        from lodestar.cli.common import CliError

        try:
            return command(args)
        except CliError as err:
            print(f"lodestar: error: {err}", file=sys.stderr)
            return err.status
    return run


def parse_time(text: str, option: str) -> datetime:
    """An ISO-8601 time (UTC unless it says otherwise); raises CliError naming the option."""
    from lodestar.cli.common import CliError

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"{option}: {text!r} is not an ISO-8601 time (e.g. 2026-11-23T06:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def open_log(args: argparse.Namespace) -> EventLog:
    """The configured event log of the data directory (which must exist for the embedded one)."""
    from gms.service import DATABASE
    from ingest.backends.errors import BackendError
    from lodestar.assembly import open_event_log
    from lodestar.cli.common import CliError, config_of

    config = config_of(args)
    data_dir = Path(args.data_dir)
    if config.event_log == "sqlite" and not (data_dir / DATABASE).exists():
        raise CliError(f"no embedded event log in {data_dir} (no {DATABASE}); is --data-dir right?")
    try:
        return open_event_log(config, data_dir)
    except BackendError as err:
        raise CliError(str(err)) from None


def schema_lookup(args: argparse.Namespace) -> tuple[Callable[[int], str | None], Callable[[], None]]:
    """Where Confluent-framed MCLs' writer schemas are found: --schema-registry's URL, else the
    configured external registry (`kafka.schema_registry_url`), else the registry kept in the
    configured aspect store; and what closes it."""
    from gms.schema_registry import schema_lookup as stored_schemas
    from ingest.backends.errors import BackendError
    from ingest.schema_lookup import registry_lookup
    from lodestar.assembly import open_store
    from lodestar.cli.common import CliError, config_of

    config = config_of(args)
    url = args.schema_registry or config.schema_registry_url
    if url:
        return registry_lookup(url), lambda: None
    try:
        store = open_store(config, Path(args.data_dir), "tail")
    except BackendError as err:
        raise CliError(str(err)) from None
    return stored_schemas(store), store.close


def check_filters(args: argparse.Namespace) -> None:
    """Entity types, aspects and change types must be known: a typo would silently match nothing."""
    from lodestar.cli.common import CliError

    registry = default_registry()
    change_types = load_named_types()["com.linkedin.events.metadata.ChangeType"]["symbols"]
    for name in args.entity_type or ():
        if registry.entity(name) is None:
            raise CliError(f"--entity-type: unknown entity type {name!r}")
    for name in args.aspect or ():
        if registry.aspect(name) is None:
            raise CliError(f"--aspect: unknown aspect {name!r}")
    for name in args.change_type or ():
        if name.upper() not in change_types:
            raise CliError(f"--change-type: {name!r} is not one of {', '.join(change_types)}")


def line_of(change: Change) -> str:
    when = datetime.fromtimestamp(change.timestamp_ms / 1000, UTC).isoformat(timespec="milliseconds")
    version = f" v{change.version}" if change.version is not None else ""
    return f"{when.replace('+00:00', 'Z')} {change.change_type:<6} {change.urn} {change.aspect}{version}"


@reports_errors
def cmd_tail(args: argparse.Namespace) -> int:
    check_filters(args)
    start: Start = args.start if args.start in ("committed", "earliest", "latest") else \
        parse_time(args.start, "--from")
    if args.group is None and start == "committed":
        start = "latest"
    with ExitStack() as closing:
        log_ = open_log(args)
        closing.callback(log_.close)
        lookup, close_lookup = schema_lookup(args)
        closing.callback(close_lookup)
        options: dict[str, Any] = {
            "entity_types": args.entity_type or (), "aspects": args.aspect or (),
            "change_types": args.change_type or (), "urn_pattern": args.urn_like, "start": start,
            "topics": TOPICS[args.topic], "auto_commit": args.group is not None,
            "commit_interval": args.commit_interval, "schema_registry": lookup}
        try:
            with subscribe(log_, args.group or f"lodestar-tail-{uuid.uuid4().hex}", **options) as subscription:
                out = sys.stdout
                for change in subscription:
                    out.write(orjson.dumps(change.to_json()).decode() if args.json else line_of(change))
                    out.write("\n")
                    out.flush()
        except BrokenPipeError:
            sys.stdout = None  # type: ignore[assignment]  # the reader left (`| head`): nothing more to say
    return 0


def register(sub: Any) -> None:
    """Add `lodestar tail` to the CLI's subcommands."""
    from lodestar.cli.common import default_data_dir

    tail = sub.add_parser("tail", help="print metadata changes as they happen (MCLs)")
    tail.add_argument("--group", help="consumer group: resume where it left off and commit what was printed"
                                      " (default: a group of its own, from the latest change, no commits)")
    tail.add_argument("--from", dest="start", default="committed",
                      help="committed (default), earliest, latest, or an ISO-8601 time")
    tail.add_argument("--entity-type", action="append", help="only this entity type (repeatable)")
    tail.add_argument("--aspect", action="append", help="only this aspect (repeatable)")
    tail.add_argument("--change-type", action="append", help="only this change type (repeatable)")
    tail.add_argument("--urn-like", help="only URNs matching this SQL LIKE pattern (%% any run, _ one character)")
    tail.add_argument("--topic", choices=sorted(TOPICS), default="all", help="which MCL topic (default all)")
    tail.add_argument("--json", action="store_true", help="one JSON object per line")
    tail.add_argument("--commit-interval", type=float, default=1.0, metavar="SECONDS",
                      help="with --group: commit what was printed this often, and on exit (default 1)")
    tail.add_argument("--schema-registry", metavar="URL",
                      help="where the writer schemas of Confluent-framed MCLs are (a schema registry's URL;"
                           " default: the configured one, else the registry kept in the aspect store)")
    tail.add_argument("--data-dir", default=str(default_data_dir()))
    tail.add_argument("--config", help="lodestar.yml choosing adapters and endpoints")
    tail.set_defaults(func=cmd_tail)
