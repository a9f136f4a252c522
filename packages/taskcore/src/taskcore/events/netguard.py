"""Outbound requests never reach a private address unless the operator allowed it.

A webhook URL names a host the service will connect to on its own initiative: without a
check, anyone who may add an endpoint could make the service probe its own loopback, the
cloud metadata address or the LAN (server-side request forgery). So an endpoint's host must
resolve to public addresses only, unless the operator said ``--allow-private-targets``. The
check is made twice: when the endpoint is added (a clear refusal for the operator), and at
every delivery on the addresses the name resolves to *then*, and the connection is made to
an address that passed (never a second lookup), so a name that changes its answer between
the check and the connection (DNS rebinding) reaches nothing it should not.

"Private" is everything that is not globally routable (:attr:`ipaddress.IPv4Address.is_global`
false: loopback, RFC 1918, link-local, carrier-grade NAT, documentation and benchmarking
ranges, unspecified, reserved) and multicast; an IPv4-mapped IPv6 address is judged by the
IPv4 address it carries.

>>> private("127.0.0.1"), private("10.1.2.3"), private("169.254.169.254"), private("8.8.8.8")
(True, True, True, False)
>>> private("::ffff:127.0.0.1"), private("fe80::1"), private("2606:4700::1111")
(True, True, False)
>>> check_url("ftp://example.com/")
Traceback (most recent call last):
taskcore.errors.TaskError: the webhook URL must be http:// or https://
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import WEBHOOK_URL_MAX_CHARS

__all__ = ["Resolver", "Target", "check_url", "private", "resolve_target"]

Resolver = Callable[[str, int], list[str]]
"""``(host, port) -> addresses`` (:func:`system_resolver` by default; tests inject one)."""


def private(address: str) -> bool:
    """Whether ``address`` is not a public unicast address (see the module docstring)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_multicast or not ip.is_global


def check_url(url: str) -> SplitResult:
    """Refuse a URL a webhook cannot use (``INVALID_VALUE``); return its parts.

    http or https, a host, no credentials in it, no fragment, at most
    :data:`~taskcore.limits.WEBHOOK_URL_MAX_CHARS` characters.
    """
    if len(url) > WEBHOOK_URL_MAX_CHARS:
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"the webhook URL is over {WEBHOOK_URL_MAX_CHARS} characters"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise TaskError(ErrorCode.INVALID_VALUE, "the webhook URL cannot be parsed") from None
    if parts.scheme not in ("http", "https"):
        raise TaskError(ErrorCode.INVALID_VALUE, "the webhook URL must be http:// or https://")
    if not parts.hostname:
        raise TaskError(ErrorCode.INVALID_VALUE, "the webhook URL has no host")
    if parts.username is not None or parts.password is not None:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "the webhook URL must not carry credentials; receivers check the signature",
        )
    if parts.fragment:
        raise TaskError(ErrorCode.INVALID_VALUE, "the webhook URL must not have a #fragment")
    if port == 0:
        raise TaskError(ErrorCode.INVALID_VALUE, "the webhook URL's port must not be 0")
    return parts


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to now (TCP), in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[str] = []
    for info in infos:
        address = str(info[4][0]).split("%", 1)[0]
        if address not in out:
            out.append(address)
    return out


class Target:
    """Where one request goes: the URL's parts and the vetted address to connect to."""

    __slots__ = ("address", "host", "parts", "port")

    def __init__(self, parts: SplitResult, address: str) -> None:
        self.parts = parts
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.address = address

    def __repr__(self) -> str:
        return f"Target({self.parts.scheme}://{self.host}:{self.port} via {self.address})"


def resolve_target(url: str, *, allow_private: bool, resolver: Resolver | None = None) -> Target:
    """Resolve ``url``'s host now and pick the address to connect to.

    Refused (``INVALID_VALUE``, message naming the reason, never the addresses' owner) when
    the name does not resolve, or when any address it resolves to is private and
    ``allow_private`` is false: a name with one public and one private answer is refused
    whole, since the connection could be steered to either.
    """
    parts = check_url(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = (resolver or system_resolver)(host, port)
    except (OSError, UnicodeError):
        addresses = []
    if not addresses:
        raise TaskError(ErrorCode.INVALID_VALUE, f"the webhook host {host!r} does not resolve")
    if not allow_private:
        for address in addresses:
            if private(address):
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    f"the webhook host {host!r} resolves to a private address; outbound "
                    "requests reach public addresses only unless the operator allows private "
                    "targets (--allow-private-targets)",
                )
    return Target(parts, addresses[0])
