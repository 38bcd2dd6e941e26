"""The write path's cost per MCP, in instructions (callgrind) or CPU seconds, on a fixed input.

    .venv/bin/python -m bench.write_path_cost [--mcps 8000] [--batch 1000] [--callgrind] [--parts]
                                              [--source generated|datahub-file]

Runs what `POST /v1/proposals` runs on the writer thread (decoding the body, parsing,
validating, authorizing as the admin, applying to an embedded GMS in a scratch directory,
answering) on request bodies of --batch MCPs, in one process, without HTTP. The MCPs are the
realistic generator's (bench/datasets.py) or, with `--source datahub-file`, as DataHub's SDK
and file sink write them (bench/datahub_file.py).

Without --callgrind this prints the CPU seconds per MCP after a first WARM_UP requests (noisy
on a busy machine). With --callgrind the run goes twice under `valgrind --tool=callgrind`,
once whole and once (--dry) only up to the end of the warm-up requests; the difference of
their instruction counts per MCP after those is printed, which a loaded machine does not move
(hash seeds fixed). `--keep DIR` keeps the callgrind profiles there. With `--parts` it also prints
where the CPU goes, by the steps named in PARTS (timed around each call).
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

from bench.callgrind import instructions
from bench.datahub_file import datahub_file_mcps
from bench.datasets import generate
from bench.parts import timed_parts
from gms import write_path
from gms.access import SUPERUSER
from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore, SqliteBatch
from gms.validation import ProposalValidator
from lodestar.api import native
from lodestar.api.auth import TokenAuth
from lodestar.api.context import Api
from lodestar.api.native import _answer_proposals
from mcl_processor.embedded import SqliteReadModels

SOURCES = {"generated": generate, "datahub-file": datahub_file_mcps}
WARM_UP = 2  # requests applied before counting
# The steps timed by --parts: (owner, attribute, label); an indented label is inside the one above.
PARTS = (
    (native, "decode_json", "request body decoded (JSON)"),
    (native, "parse_all", "proposals parsed"),
    (Gms, "apply", "applied: checked, versioned, written and committed"),
    (ProposalValidator, "validate", "  validated against the aspects' schemas"),
    (Gms, "authorize_change", "  authorized"),
    (SqliteBatch, "_read_wanted", "  current versions read"),
    (write_path._Application, "_system_metadata", "  system metadata stamped"),
    (write_path._Application, "_mcl", "  MCLs encoded (Avro)"),
    (SqliteBatch, "insert", "  versions kept for the batch's writes"),
    (SqliteBatch, "flush", "  versions written (SQLite)"),
    (SqliteAspectStore, "_write_events", "  MCLs appended to the log (SQLite)"),
)


def bodies(mcps: int, batch: int, source: str) -> list[bytes]:
    """The request bodies: --batch MCPs each."""
    items = SOURCES[source](mcps)
    return [json.dumps({"proposals": items[i:i + batch]}).encode() for i in range(0, len(items), batch)]


def run(requests: list[bytes], dry: bool, spent: Counter[str] | None = None) -> tuple[int, float]:
    """(MCPs applied after the warm-up, CPU seconds they took). Given `spent`, the CPU seconds of
    each of PARTS after the warm-up are added to it."""
    with tempfile.TemporaryDirectory() as tmp:
        gms = Gms.embedded(Path(tmp) / "gms")
        api = Api(gms, TokenAuth(), SqliteReadModels.in_data_dir(Path(tmp) / "models", gms.registry))
        try:
            counted, started = 0, 0.0
            for number, raw in enumerate(requests):
                if number == WARM_UP:
                    if dry:
                        break
                    started = time.process_time()
                gc.disable()  # as on the writer thread: the request's objects are freed before a collection
                with timed_parts(PARTS, spent) if spent is not None and number >= WARM_UP else nullcontext():
                    answer = _answer_proposals(api, raw, SUPERUSER, {})
                assert not isinstance(answer, BaseException) and answer[0] == 200, answer
                counted += len(answer[1]["results"]) if number >= WARM_UP else 0
                del answer
                gc.enable()
            return counted, time.process_time() - started
        finally:
            api.read_models.close()
            gms.close()


def callgrind(requests: Path, dry: bool, out: Path) -> int:
    """Instructions of a `run` of the bodies in `requests` (pickled) in a child process under callgrind."""
    return instructions("bench.write_path_cost", ["--child", str(requests)] + (["--dry"] if dry else []), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcps", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=1000, help="MCPs per request")
    parser.add_argument("--source", choices=SOURCES, default="generated", help="where the MCPs come from")
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind")
    parser.add_argument("--parts", action="store_true", help="also print where the CPU goes (without --callgrind)")
    parser.add_argument("--keep", type=Path, help="keep the callgrind profiles in this (new) directory")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # the run under callgrind, of these bodies
    parser.add_argument("--dry", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run(pickle.loads(args.child.read_bytes()), args.dry)
        return
    if args.mcps <= WARM_UP * args.batch:
        parser.error(f"--mcps must be more than the {WARM_UP} warm-up requests of --batch {args.batch} MCPs")
    requests = bodies(args.mcps, args.batch, args.source)
    setup = f"{args.mcps} {args.source} MCPs in requests of {args.batch}"
    if not args.callgrind:
        spent: Counter[str] | None = Counter() if args.parts else None
        mcps, cpu = run(requests, dry=False, spent=spent)
        print(f"{setup}: {cpu / mcps * 1e6:,.0f} us CPU per MCP")
        if spent is not None:
            for _, _, label in PARTS:
                print(f"  {label:60} {spent[label] / mcps * 1e6:6,.0f} us")
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=args.keep is None)
        saved = Path(tmp) / "requests.pickle"
        saved.write_bytes(pickle.dumps(requests))
        base = callgrind(saved, True, out / "callgrind.dry.out")
        total = callgrind(saved, False, out / "callgrind.out")
    mcps, _ = run(requests, dry=False)  # (counted again, natively)
    print(f"{setup}: {(total - base) / mcps:,.0f} instructions per MCP ({total:,} - {base:,} to start and warm up)")


if __name__ == "__main__":
    main()
