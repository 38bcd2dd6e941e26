"""Where webhooks may deliver: http(s) URLs whose host resolves to public addresses only.

A webhook's URL is chosen by whoever registers it, and the dispatcher POSTs signed changes to
it from inside the deployment's network; so by default a URL is refused when its host resolves
to any address that is not public: loopback, private (RFC 1918, unique local), link-local
(cloud metadata services at 169.254.169.254), multicast, unspecified, reserved, shared
(100.64.0.0/10) or documentation ranges. IPv4 in any notation the resolver accepts (hex,
decimal, octal: `0x7f000001`, `2130706433`, `0177.0.0.1`) is checked as the address it
resolves to, and an IPv6 address that embeds an IPv4 one (IPv4-mapped, 6to4, NAT64) as that
IPv4 address too.

The operator may allow networks with the setting `LODESTAR_WEBHOOK_ALLOW_PRIVATE` (or
`--webhook-allow-private`): `all` (or `1`, `true`, `yes`) allows every address, otherwise a
comma-separated list of CIDRs (`10.0.0.0/8,127.0.0.1/32`) allows the addresses in them.

The rules hold when a webhook is registered and again at each delivery: the host is resolved,
every address checked, and the connection made to a checked address (`resolve`), so a name that
resolves differently later (DNS rebinding) reaches no refused address.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

ALLOW_ENV = "LODESTAR_WEBHOOK_ALLOW_PRIVATE"
_ALL = ("all", "1", "true", "yes")
_NONE = ("", "0", "false", "no")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class AddressRefused(ValueError):
    """A webhook URL (or one of its host's addresses) the rules refuse; the message says why."""


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (IPv4-mapped, 6to4, NAT64), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def kind_of(address: IPAddress) -> str | None:
    """What makes an address non-public ('loopback', 'private', ...), or None for a public one."""
    for kind in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "non-public"


@dataclass(frozen=True)
class AddressRules:
    """The networks the operator allows besides public addresses (`allowed`); `everything`:
    every address is allowed."""

    allowed: tuple[IPNetwork, ...] = ()
    everything: bool = False

    @classmethod
    def parse(cls, text: str | None, source: str = ALLOW_ENV) -> AddressRules:
        """The rules a setting's value says (see the module docstring); ValueError names `source`."""
        value = (text or "").strip().lower()
        if value in _NONE:
            return cls()
        if value in _ALL:
            return cls(everything=True)
        networks = []
        for part in value.split(","):
            try:
                networks.append(ipaddress.ip_network(part.strip(), strict=False))
            except ValueError:
                raise ValueError(f"{source}: {part.strip()!r} is not a CIDR (e.g. 10.0.0.0/8);"
                                 f" give CIDRs separated by commas, or 'all'") from None
        return cls(tuple(networks))

    def refusal(self, address: IPAddress) -> str | None:
        """Why an address is refused, or None when it is allowed."""
        if self.everything:
            return None
        reached = _embedded_ipv4(address) or address  # an IPv6 address carrying an IPv4 one reaches that
        kind = kind_of(reached)
        if kind is None or any(reached in network for network in self.allowed):
            return None
        shown = address if reached == address else f"{address} ({reached})"
        article = "an" if kind[0] in "aeiou" else "a"
        return f"{shown} is {article} {kind} address (allow it with {ALLOW_ENV})"

    def check_url(self, url: object) -> None:
        """Refuse (AddressRefused) a URL that is not http(s), or whose host does not resolve or
        resolves to any refused address."""
        parts, port = target(url)
        self.resolve(parts.hostname or "", port)

    def resolve(self, host: str, port: int) -> list[IPAddress]:
        """The addresses of `host`, each allowed (else AddressRefused): connect to one of these."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, ValueError) as err:  # ValueError: e.g. a label too long, a NUL
            raise AddressRefused(f"host {host!r} does not resolve: {getattr(err, 'strerror', None) or err}") from None
        addresses: list[IPAddress] = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if (why := self.refusal(address)) is not None:
                raise AddressRefused(f"host {host!r}: {why}")
            if address not in addresses:
                addresses.append(address)
        return addresses


def _http_url(url: object) -> SplitResult:
    """The parts of an http(s) URL with a host (else AddressRefused)."""
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        _ = parts.port if parts is not None else None  # a port that is no number raises here
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused(f"{url!r} is not an http(s) URL")
    return parts


def target(url: object) -> tuple[SplitResult, int]:
    """An http(s) URL's parts and port (else AddressRefused)."""
    parts = _http_url(url)
    return parts, parts.port or (443 if parts.scheme == "https" else 80)
