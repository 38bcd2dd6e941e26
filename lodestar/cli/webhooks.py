"""`lodestar webhooks`: deliver changes to the registered webhooks (see lodestar.webhook_delivery),
warning at start of each whose URL the address rules refuse (lodestar.webhook_addresses)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lodestar.cli.tail import reports_errors


@reports_errors
def cmd_webhooks(args: argparse.Namespace) -> int:
    from ingest.backends.errors import BackendError
    from lodestar.assembly import open_gms
    from lodestar.cli.common import CliError, config_of
    from lodestar.webhook_addresses import AddressRefused
    from lodestar.webhook_delivery import WebhookDispatcher

    if args.attempts < 1 or args.backoff < 0 or args.timeout <= 0:
        raise CliError("--attempts must be at least 1, --backoff at least 0 and --timeout above 0")
    config = config_of(args)
    try:
        gms = open_gms(config, Path(args.data_dir), process="webhooks")
    except BackendError as err:
        raise CliError(str(err)) from None
    try:
        dispatcher = WebhookDispatcher(gms, args.attempts, args.backoff, args.timeout,
                                       addresses=config.webhook_addresses)
        print(f"delivering changes to {len(dispatcher.hooks)} webhook(s) (data: {args.data_dir})", flush=True)
        for hook in dispatcher.hooks.values():
            try:
                dispatcher.addresses.check_url(hook.url)
            except AddressRefused as err:
                print(f"lodestar: warning: webhook {hook.id}: url: {err}; its changes will be dead letters until it"
                      " is registered anew (or the address allowed)", file=sys.stderr, flush=True)
        dispatcher.run()
        print(f"{dispatcher.delivered} delivered, {dispatcher.dead} dead letter(s)", flush=True)
    finally:
        gms.close()
    return 0


def register(sub: Any) -> None:
    """Add `lodestar webhooks` to the CLI's subcommands."""
    from lodestar.cli.common import add_webhook_address_option, default_data_dir

    hooks = sub.add_parser("webhooks", help="deliver changes to the registered webhooks (POST /v1/webhooks)")
    hooks.add_argument("--attempts", type=int, default=5, help="sends per change before it is a dead letter")
    hooks.add_argument("--backoff", type=float, default=0.5, help="seconds before the first retry (then doubling)")
    hooks.add_argument("--timeout", type=float, default=10.0, help="seconds a URL has to answer")
    hooks.add_argument("--data-dir", default=str(default_data_dir()))
    hooks.add_argument("--config", help="lodestar.yml choosing adapters and endpoints")
    add_webhook_address_option(hooks)
    hooks.set_defaults(func=cmd_webhooks)
