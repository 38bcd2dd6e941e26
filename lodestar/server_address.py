"""The address a running server serves on, kept in its data directory (`server.url`, one line)
so that a client on the same data directory finds it on whatever port it was started on, and a
shell reads it with `cat`. The server writes it once it listens and removes it when it stops
cleanly; a server that was killed leaves it behind, naming an address nothing answers on."""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterator
from pathlib import Path

ADDRESS_FILE = "server.url"
_ANY = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # a wildcard listener is reached on loopback


def url_of(host: str, port: int) -> str:
    """The http URL a local client reaches a server listening on host:port at."""
    host = _ANY.get(host, host)
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    return f"http://{host}:{port}"


def published_url(data_dir: Path) -> str | None:
    """The URL the data directory's server published; None when there is none (or it is empty)."""
    try:
        url = (data_dir / ADDRESS_FILE).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return url or None


@contextlib.contextmanager
def published(data_dir: Path, host: str, port: int) -> Iterator[str]:
    """Write the address of a server listening on host:port into data_dir while the block runs;
    the URL. Removed at the end unless another server replaced it meanwhile (or this is a forked
    child leaving the block: only the process that wrote it removes it)."""
    url = url_of(host, port)
    path = data_dir / ADDRESS_FILE
    staged = path.with_name(f".{ADDRESS_FILE}.{os.getpid()}")
    staged.write_text(url + "\n")
    os.replace(staged, path)  # a reader sees the old address or the new one, never half of one
    writer = os.getpid()
    try:
        yield url
    finally:
        if os.getpid() == writer and published_url(data_dir) == url:
            path.unlink(missing_ok=True)
