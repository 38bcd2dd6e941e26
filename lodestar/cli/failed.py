"""`lodestar failed`: the queued proposals that failed when GMS applied them, from the
FailedMetadataChangeProposal_v1 topic (what an `async` request or the MCP topic let through
its checks, then a precondition, a conflict or a lost privilege refused)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

from ingest import topics
from ingest.eventlog import EventLog, LogRecord
from lodestar.cli.tail import open_log, reports_errors

PAGE = 1000


def failed_proposals(log_: EventLog, last: int) -> list[dict[str, Any]]:
    """The `last` failed proposals of each partition, oldest first, decoded."""
    from schemas.events import EventDecodeError, default_codec

    codec = default_codec()
    out: list[dict[str, Any]] = []
    for partition in range(log_.partitions(topics.FAILED_MCP)):
        end = log_.end_offset(topics.FAILED_MCP, partition)
        offset = max(log_.first_offset(topics.FAILED_MCP, partition), end - last)
        while offset < end:
            records = log_.read(topics.FAILED_MCP, partition, offset, min(PAGE, end - offset))
            if not records:
                break
            out += [_entry(codec, record, EventDecodeError) for record in records]
            offset = records[-1].offset + 1
    out.sort(key=lambda entry: (entry["timestamp"], entry["partition"], entry["offset"]))
    return out


def _entry(codec: Any, record: LogRecord, unreadable: type[Exception]) -> dict[str, Any]:
    entry: dict[str, Any] = {"topic": record.topic, "partition": record.partition, "offset": record.offset,
                             "timestamp": record.timestamp_ms, "urn": record.key, "aspect": None}
    try:
        _, failed = codec.decode(record.value)
    except unreadable as err:
        return {**entry, "reason": f"(this record cannot be decoded: {err})"}
    mcp = failed.get("mcp") or {}
    return {**entry, "urn": mcp.get("entityUrn") or record.key, "aspect": mcp.get("aspectName"),
            "changeType": mcp.get("changeType"), "reason": failed.get("error")}


@reports_errors
def cmd_failed(args: argparse.Namespace) -> int:
    from lodestar.cli.common import CliError

    if args.last < 1:
        raise CliError("--last must be at least 1")
    log_ = open_log(args)
    try:
        entries = failed_proposals(log_, args.last)
    finally:
        log_.close()
    for entry in entries:
        if args.json:
            sys.stdout.write(orjson.dumps(entry).decode() + "\n")
            continue
        when = datetime.fromtimestamp(entry["timestamp"] / 1000, UTC).isoformat(timespec="seconds")
        print(f"{when.replace('+00:00', 'Z')} {entry['topic']}/{entry['partition']}@{entry['offset']}"
              f" {entry['urn']} {entry['aspect'] or '-'}: {entry['reason']}")
    if not args.json:
        print(f"{len(entries)} failed proposal(s)", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    """Add `lodestar failed` to the CLI's subcommands."""
    from lodestar.cli.common import default_data_dir

    failed = sub.add_parser("failed", help="list queued proposals that failed when applied"
                                           f" (topic {topics.FAILED_MCP})")
    failed.add_argument("--last", type=int, default=100, help="at most this many per partition, the newest"
                                                              " (default 100)")
    failed.add_argument("--json", action="store_true", help="one JSON object per line")
    failed.add_argument("--data-dir", default=str(default_data_dir()))
    failed.add_argument("--config", help="lodestar.yml choosing adapters and endpoints")
    failed.set_defaults(func=cmd_failed)
