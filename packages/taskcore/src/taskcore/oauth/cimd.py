"""Client ID metadata documents (CIMD): a client ID that is the HTTPS URL of its metadata.

This server fetches the document the URL names.

Fetching is an outbound request chosen by whoever calls ``/authorize``, so it is bounded:

* the URL must be ``https`` with a path, no fragment, no user or password, no dot segments
  (the CIMD draft's rules) and at most :data:`~taskcore.limits.OAUTH_TEXT_MAX_CHARS`;
* its host is resolved once and every address must be public (``ipaddress.is_global``):
  never loopback, private, link-local, shared or reserved space unless the operator allowed
  it (``agent-task serve --oauth-allow-private-client-urls``); the connection goes to the
  address that was checked (no second lookup a rebinding DNS server could answer
  differently), with TLS verified against the host name;
* redirects are not followed; the answer must be ``200`` with at most
  :data:`~taskcore.limits.OAUTH_CLIENT_METADATA_MAX_BYTES` of JSON, all within
  :data:`~taskcore.limits.OAUTH_CLIENT_METADATA_TIMEOUT_SECONDS`;
* the document must name itself (``client_id`` equal to the URL), list ``redirect_uris``,
  and use no client authentication but ``none`` (this server holds no client keys).

>>> check_metadata_url("https://app.example/oauth/client.json")
'app.example'
>>> check_metadata_url("http://app.example/c.json")
Traceback (most recent call last):
taskcore.errors.TaskError: a client ID metadata document URL must be https with a path
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from taskcore.errors import ErrorCode, TaskError
from taskcore.jsontext import parse_json
from taskcore.limits import (
    OAUTH_CLIENT_METADATA_MAX_BYTES,
    OAUTH_CLIENT_METADATA_TIMEOUT_SECONDS,
    OAUTH_TEXT_MAX_CHARS,
)

__all__ = ["check_metadata_url", "fetch_metadata_document", "is_metadata_url", "public_address"]


def is_metadata_url(client_id: str) -> bool:
    """Whether a ``client_id`` is a metadata document URL (it starts with ``https://``)."""
    return client_id.startswith("https://")


def _bad(message: str) -> TaskError:
    return TaskError(ErrorCode.INVALID_VALUE, message)


def check_metadata_url(url: str) -> str:
    """Check a metadata document URL; return its host."""
    parts = urlsplit(url)
    if (
        len(url) > OAUTH_TEXT_MAX_CHARS
        or parts.scheme != "https"
        or not parts.hostname
        or parts.path in ("", "/")
    ):
        raise _bad("a client ID metadata document URL must be https with a path")
    segments = parts.path.split("/")
    if parts.fragment or parts.username or parts.password or "." in segments or ".." in segments:
        raise _bad("a client ID metadata document URL has no fragment, credentials or dot segments")
    return parts.hostname


def public_address(address: str) -> bool:
    """Whether an IP address is globally routable (not loopback, private, link-local ...).

    >>> public_address("127.0.0.1"), public_address("10.1.2.3"), public_address("8.8.8.8")
    (False, False, True)
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(ip.is_global) and not ip.is_multicast


def _resolve(host: str, port: int, allow_private: bool) -> str:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise TaskError(
            ErrorCode.SERVICE_UNREACHABLE, f"cannot resolve the client metadata host {host[:128]!r}"
        ) from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise TaskError(ErrorCode.SERVICE_UNREACHABLE, f"{host[:128]!r} has no address")
    if not allow_private and not all(public_address(a) for a in addresses):
        raise TaskError(
            ErrorCode.FORBIDDEN,
            f"the client metadata host {host[:128]!r} resolves to a private address; this "
            "server fetches only public ones (an operator may allow private ones with "
            "'agent-task serve --oauth-allow-private-client-urls')",
        )
    return addresses[0]


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to one already-checked address, TLS verified against the URL's host name."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address
        self._tls = ssl.create_default_context()

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def fetch_metadata_document(
    url: str,
    *,
    allow_private: bool = False,
    timeout: float = OAUTH_CLIENT_METADATA_TIMEOUT_SECONDS,
    max_bytes: int = OAUTH_CLIENT_METADATA_MAX_BYTES,
) -> dict[str, Any]:
    """Fetch and check the metadata document at ``url``; return it as a JSON object.

    Raises ``INVALID_VALUE`` for a URL or document that breaks the rules above,
    ``FORBIDDEN`` for a private address, ``SERVICE_UNREACHABLE`` when it cannot be fetched.
    """
    host = check_metadata_url(url)
    parts = urlsplit(url)
    port = parts.port or 443
    deadline = time.monotonic() + timeout
    address = _resolve(host, port, allow_private)
    conn = _PinnedHTTPS(host, port, address, timeout=max(0.1, deadline - time.monotonic()))
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request("GET", target, headers={"Accept": "application/json"})
        response = conn.getresponse()
        if response.status != 200:
            raise TaskError(
                ErrorCode.SERVICE_UNREACHABLE,
                f"the client metadata document answered HTTP {response.status}, not 200",
            )
        body = bytearray()
        while len(body) <= max_bytes:
            if time.monotonic() > deadline:
                raise TimeoutError
            chunk = response.read(min(16_384, max_bytes + 1 - len(body)))
            if not chunk:
                break
            body.extend(chunk)
    except (OSError, http.client.HTTPException):
        raise TaskError(
            ErrorCode.SERVICE_UNREACHABLE,
            f"cannot fetch the client metadata document from {host[:128]!r} within {timeout:g} s",
        ) from None
    finally:
        conn.close()
    if len(body) > max_bytes:
        raise _bad(f"the client metadata document is over {max_bytes} bytes")
    document = parse_json(bytes(body), max_bytes=max_bytes)
    return check_document(url, document)


def check_document(url: str, document: Any) -> dict[str, Any]:
    """Check a fetched metadata document against the URL it came from; return it.

    >>> doc = {"client_id": "https://a.example/c", "redirect_uris": ["http://127.0.0.1/cb"]}
    >>> check_document("https://a.example/c", doc)["client_id"]
    'https://a.example/c'
    >>> check_document("https://b.example/c", doc)
    Traceback (most recent call last):
    taskcore.errors.TaskError: the metadata document's client_id is not its own URL
    """
    if not isinstance(document, dict):
        raise _bad("the client metadata document is not a JSON object")
    if document.get("client_id") != url:
        raise _bad("the metadata document's client_id is not its own URL")
    uris = document.get("redirect_uris")
    if (
        not isinstance(uris, list)
        or not uris
        or not all(isinstance(u, str) and 0 < len(u) <= OAUTH_TEXT_MAX_CHARS for u in uris)
    ):
        raise _bad("the client metadata document must list redirect_uris")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise _bad(
            f"token_endpoint_auth_method {str(method)[:64]!r} is not supported for a metadata "
            "document client; use 'none' (PKCE protects the code)"
        )
    for secret_field in ("client_secret", "client_secret_expires_at"):
        if secret_field in document:
            raise _bad(f"a client metadata document must not hold {secret_field}")
    return dict(document)
