"""What the `lodestar` command's modules share: the user-facing error, the data directory,
the REST client and configuration of the common options, and the stores opened locally."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.rest import RestClient
from lodestar.server_address import ADDRESS_FILE, published_url

if TYPE_CHECKING:
    from lodestar.config import Config

DEFAULT_SERVER = "http://127.0.0.1:8080"


class CliError(Exception):
    """A user-facing error: printed as one line; exit status `status` (1, or 2 for a setup
    that cannot work as installed)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def default_data_dir() -> Path:
    return Path(os.environ.get("LODESTAR_DATA_DIR") or Path.home() / ".lodestar")


def client_of(args: argparse.Namespace) -> RestClient:
    """A REST client for the server of `server_of` and --token, LODESTAR_TOKEN or the data
    directory's admin token."""
    token = args.token or os.environ.get("LODESTAR_TOKEN")
    if token is None:
        token_file = Path(args.data_dir) / "admin.token"
        if token_file.exists():
            token = token_file.read_text().strip()
    server, hint = server_of(args)
    return RestClient(server, token, unreachable_hint=hint)


def server_of(args: argparse.Namespace) -> tuple[str, str | None]:
    """The server to ask: --server, else LODESTAR_SERVER, else the address the data directory's
    server published (lodestar.server_address), else DEFAULT_SERVER; and, for a published
    address, what to say if nothing answers there."""
    if given := args.server or os.environ.get("LODESTAR_SERVER"):
        return given, None
    address_file = Path(args.data_dir) / ADDRESS_FILE
    if (url := published_url(Path(args.data_dir))) is None:
        return DEFAULT_SERVER, None
    return url, (f"the address is from {address_file}, which the server of that data directory writes when"
                 " it starts and removes when it stops; one that was killed leaves it behind: start the"
                 " server again, or give --server or LODESTAR_SERVER")


def config_of(args: argparse.Namespace) -> Config:
    """The configuration of --config and --data-dir (and --webhook-allow-private); a bad file is
    a CliError, and so (status 2) an adapter whose client library is not installed: said before
    any process is forked."""
    from lodestar.config import Config, ConfigError, webhook_addresses

    try:
        config = Config.load(Path(args.config) if args.config else None, Path(args.data_dir))
        if getattr(args, "webhook_allow_private", None) is not None:
            config = replace(config, webhook_addresses=webhook_addresses(args.webhook_allow_private,
                                                                         "--webhook-allow-private"))
    except ConfigError as err:
        raise CliError(str(err)) from None
    if missing := config.missing_clients():
        raise CliError("; ".join(missing), status=2)
    return config


def add_webhook_address_option(parser: argparse.ArgumentParser) -> None:
    """--webhook-allow-private: the non-public addresses webhook URLs may point to."""
    parser.add_argument("--webhook-allow-private", nargs="?", const="all", metavar="CIDRS",
                        help="let webhook URLs point to non-public addresses: these comma-separated CIDRs, or all"
                             " (no value); default: public addresses only (env LODESTAR_WEBHOOK_ALLOW_PRIVATE)")


class Local:
    """The configured stores of a data directory, opened by a command that works on them directly."""

    def __init__(self, data_dir: Path, config: Config | None = None):
        from ingest.backends.errors import BackendError
        from lodestar.assembly import open_gms, open_read_models
        from lodestar.config import Config
        from mcl_processor.processor import MclProcessor

        config = config or Config()
        try:
            self.gms = open_gms(config, data_dir, process="tool")
            try:
                self.read_models = open_read_models(config, data_dir, self.gms.registry)
            except BaseException:
                self.gms.close()
                raise
        except BackendError as err:
            raise CliError(str(err)) from None
        self.processor = MclProcessor(self.gms.registry, self.gms.mcl_reader, self.read_models)

    def __enter__(self) -> Local:
        return self

    def __exit__(self, *exc: object) -> None:
        self.read_models.close()
        self.gms.close()
