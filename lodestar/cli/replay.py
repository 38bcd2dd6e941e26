"""`lodestar replay`: re-read an MCL topic into the read models (backfill), see mcl_processor.replay."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ingest.faults import crash_point
from lodestar.cli.tail import parse_time, reports_errors
from mcl_processor.rebuild import Rebuild, StagedModels
from mcl_processor.replay import TOPICS, Checkpoint, Filters, Plan, Replay, make_plan, remaining
from mcl_processor.restore import restore
from mcl_processor.staging import staging_name
from mcl_processor.workers import default_workers
from schemas.registry import default_registry


def _checked(args: argparse.Namespace) -> None:
    from lodestar.cli.common import CliError

    if args.start and args.from_offset is not None:
        raise CliError("give --from or --from-offset, not both")
    if args.end and args.to_offset is not None:
        raise CliError("give --to or --to-offset, not both")
    for option in ("from_offset", "to_offset", "batch_size"):
        value = getattr(args, option)
        if value is not None and value < (1 if option == "batch_size" else 0):
            raise CliError(f"--{option.replace('_', '-')} must be {'positive' if option == 'batch_size' else '>= 0'}")
    if args.aspect:
        spec = default_registry().aspect(args.aspect)
        if spec is None:
            raise CliError(f"--aspect: unknown aspect {args.aspect!r}")
        if spec.is_timeseries != (args.topic == "timeseries"):
            raise CliError(f"--aspect: {args.aspect} is a {'timeseries' if spec.is_timeseries else 'versioned'}"
                           f" aspect, not on the {args.topic} topic")
    if args.into:
        if args.urn_like:
            raise CliError("--into replaces whole models: it cannot be combined with --urn-like")
        if args.aspect and args.topic == "versioned":
            raise CliError("--into with --topic versioned rebuilds the whole search index: it cannot be combined"
                           " with --aspect")
        try:
            staging_name(args.into)
        except ValueError as err:
            raise CliError(f"--into: {err}") from None


def _request_key(args: argparse.Namespace) -> str:
    request = [args.topic, args.start, args.from_offset, args.end, args.to_offset, args.aspect, args.urn_like,
               args.into]
    return hashlib.sha256(json.dumps(request).encode()).hexdigest()[:16]


def _millis(text: str | None, option: str) -> int | None:
    return None if text is None else int(parse_time(text, option).timestamp() * 1000)


def _bar(topic: str) -> Progress:
    return Progress(TextColumn(f"replaying {topic}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]:>9,.0f} events/s"), TimeRemainingColumn(),
                    disable=not sys.stderr.isatty())


@reports_errors
def cmd_replay(args: argparse.Namespace) -> int:
    from lodestar.cli.common import Local, config_of

    _checked(args)
    topic = TOPICS[args.topic]
    checkpoint = Checkpoint(Path(args.data_dir) / "replay" / f"{_request_key(args)}.json")
    if args.restart:
        checkpoint.remove()
    with Local(Path(args.data_dir), config_of(args)) as local:
        log_ = local.gms.log
        into = args.into
        rebuild = Rebuild(local.read_models, topic, into, [args.aspect] if args.aspect else None) if into else None
        resumed = checkpoint.load()
        target = _staging(rebuild, resumed is not None, args.restart) if rebuild else None
        if resumed:
            plan, positions = resumed
            print(f"resuming: {sum(positions[p] - plan.starts[p] for p in plan.starts):,} of {plan.total:,} events"
                  " were replayed before", flush=True)
        else:
            plan = make_plan(log_, topic, _millis(args.start, "--from"), args.from_offset,
                             _millis(args.end, "--to"), args.to_offset)
            positions = dict(plan.starts)
        if plan.truncated:
            held = ", ".join(f"partition {p} from offset {o}" for p, o in sorted(plan.truncated.items()))
            print(f"the requested start is older than what {topic} still holds ({held}): older records are past"
                  " its retention", file=sys.stderr, flush=True)
            if args.topic == "versioned":
                print("restoring the versioned read models from the aspect store instead", file=sys.stderr, flush=True)
                ends = {part: log_.end_offset(topic, part) for part in plan.starts}
                done = restore(target or local.read_models, local.processor.decoder, local.gms.store, args.urn_like,
                               args.aspect)
                print(f"restored {done} aspects from the aspect store")
                if target is None:
                    checkpoint.remove()
                    return 0
                plan = Plan(topic, dict(ends), dict(ends))  # then what was appended since, and the switch
                positions = dict(plan.starts)
            else:
                print("timeseries points older than that are lost (the topic is their only copy); replaying what it"
                      " holds", file=sys.stderr, flush=True)
        replay = Replay(log_, local.processor, local.gms.store, Filters(args.aspect, args.urn_like), target,
                        args.batch_size, default_workers())
        started, events = time.monotonic(), 0
        with _bar(topic) as bar:
            task = bar.add_task("replay", total=plan.total, completed=plan.total - remaining(plan, positions),
                                rate=0.0)

            def advanced(positions: dict[int, int], count: int) -> None:
                nonlocal events
                checkpoint.save(plan, positions)
                crash_point("replay-after-checkpoint")
                events += count
                bar.update(task, total=plan.total, advance=count, rate=events / max(1e-9, time.monotonic() - started))

            applied = replay.rebuild(plan, positions, advanced, rebuild) if rebuild else replay.run(plan, positions,
                                                                                                  advanced)
        checkpoint.remove()
    seconds = time.monotonic() - started
    print(f"replayed {events:,} events of {topic} ({applied:,} applied) in {seconds:.1f} s:"
          f" {events / max(seconds, 1e-9):,.0f} events/s" + (f"; readers now use {into}" if into else ""))
    return 0


def _staging(rebuild: Rebuild, resumed: bool, restart: bool) -> StagedModels | None:
    """The read models a rebuild writes until its switch (None: a resumed rebuild that switched
    already). Refuses the name of an unfinished rebuild of another request, and a name the
    live model is kept under now."""
    from lodestar.cli.common import CliError

    name, live = rebuild.name, rebuild.live_model
    if not resumed and not restart and live.building(name):
        raise CliError(f"--into {name}: an unfinished rebuild into {name} exists: run its command again to"
                       " resume it, add --restart to start it over, or choose another name")
    if resumed and live.switched(name):
        return None
    try:
        return rebuild.staging(fresh=not resumed)
    except ValueError as err:
        raise CliError(f"--into: {err}") from None


def register(sub: Any) -> None:
    """Add `lodestar replay` to the CLI's subcommands."""
    from lodestar.cli.common import default_data_dir

    replay = sub.add_parser("replay", help="re-read an MCL topic into the read models (backfill)")
    replay.add_argument("--topic", choices=sorted(TOPICS), required=True)
    replay.add_argument("--from", dest="start", help="from this ISO-8601 time (when the MCL was logged)")
    replay.add_argument("--from-offset", type=int, help="from this offset in every partition")
    replay.add_argument("--to", dest="end", help="up to this ISO-8601 time (default: the end when it starts)")
    replay.add_argument("--to-offset", type=int, help="up to this offset (not included) in every partition")
    replay.add_argument("--aspect", help="only this aspect")
    replay.add_argument("--urn-like", help="only URNs matching this SQL LIKE pattern")
    replay.add_argument("--into", metavar="NAME", help=(
        "build a fresh model NAME (lowercase letters and digits), then switch readers to it atomically: the"
        " timeseries model, or with --topic versioned the search index (the lineage graph and run lineage are"
        " replayed in place: their writes are idempotent and version-guarded)"))
    replay.add_argument("--batch-size", type=int, default=5000, help="records per batch and checkpoint")
    replay.add_argument("--restart", action="store_true", help="forget a checkpoint of this request; start over")
    replay.add_argument("--data-dir", default=str(default_data_dir()))
    replay.add_argument("--config", help="lodestar.yml choosing adapters and endpoints")
    replay.set_defaults(func=cmd_replay)
