"""Where this server is, as OAuth clients see it: the public base URL and the challenges.

Nothing here imports the ``mcp`` SDK, so the HTTP app can answer a 401 without loading it.

The base URL of a request is ``--public-url`` when the operator set one (a server behind
TLS, reached by name); otherwise the request's own origin when its ``Host`` is a loopback
name (``localhost``, ``127.0.0.1``, ``[::1]``), which is what a local client uses; otherwise
there is none, and OAuth is not offered on that host (bearer tokens still work).

>>> scope = {"scheme": "http", "headers": [(b"host", b"127.0.0.1:8787")]}
>>> public_base(scope, None)
'http://127.0.0.1:8787'
>>> public_base({"scheme": "http", "headers": [(b"host", b"evil.example")]}, None) is None
True
>>> public_base(scope, "https://tasks.example.com")
'https://tasks.example.com'
>>> resource_metadata_url("http://127.0.0.1:8787", "/mcp")
'http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from taskcore import ErrorCode, TaskError
from taskcore.hosting import LOOPBACK_HOSTS

__all__ = [
    "AS_PATHS",
    "AUTHORIZE_PATH",
    "LOOPBACK_HOSTS",
    "METADATA_PATH",
    "PROTECTED_RESOURCE_PATH",
    "REGISTER_PATH",
    "REVOKE_PATH",
    "TOKEN_PATH",
    "bearer_challenge",
    "check_site",
    "public_base",
    "resource_metadata_url",
]


AUTHORIZE_PATH = "/authorize"
TOKEN_PATH = "/token"  # noqa: S105 - a path, not a secret
REGISTER_PATH = "/register"
REVOKE_PATH = "/revoke"
METADATA_PATH = "/.well-known/oauth-authorization-server"
"""RFC 8414's well-known path for an issuer without a path."""
AS_PATHS = (METADATA_PATH, AUTHORIZE_PATH, TOKEN_PATH, REGISTER_PATH, REVOKE_PATH)
"""The authorization server's paths (the SDK's defaults, so clients that guess find them)."""

PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
"""RFC 9728's well-known path (the root form; ``+ resource path`` the per-resource form)."""

_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?")


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def public_base(scope: Mapping[str, Any], public_url: str | None) -> str | None:
    """The base URL OAuth uses for this request (see the module doc), or ``None``."""
    if public_url:
        return public_url
    host = (_header(scope, b"host") or "").strip().lower()
    match = _HOST.fullmatch(host)
    if match is None or match.group(1).strip("[]") not in LOOPBACK_HOSTS:
        return None
    scheme = "https" if scope.get("scheme") == "https" else "http"
    return f"{scheme}://{host}"


def resource_metadata_url(base: str, path: str) -> str:
    """The RFC 9728 metadata URL of the resource at ``base + path``."""
    return base + PROTECTED_RESOURCE_PATH + (path if path != "/" else "")


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bearer_challenge(
    base: str | None,
    path: str,
    scopes: Sequence[str],
    *,
    error: str | None = None,
    description: str | None = None,
) -> str:
    """A ``WWW-Authenticate`` value: ``Bearer`` with the resource metadata URL and scope.

    >>> bearer_challenge("http://h", "/mcp", ["a", "b"], error="insufficient_scope")
    'Bearer error="insufficient_scope", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", scope="a b"'
    """
    parts = []
    if error:
        parts.append(f"error={_quoted(error)}")
    if description:
        parts.append(f"error_description={_quoted(description[:200])}")
    if base is not None:
        parts.append(f"resource_metadata={_quoted(resource_metadata_url(base, path))}")
    if scopes:
        parts.append(f"scope={_quoted(' '.join(scopes))}")
    return "Bearer " + ", ".join(parts) if parts else "Bearer"


# -- DNS-rebinding protection -----------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _authority(text: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of ``host[:port]``: host lowercased, IPv6 without brackets, port or None."""
    match = _HOST.fullmatch(text.strip().lower())
    if match is None:
        return None
    return match.group(1).strip("[]"), int(match.group(2)[1:]) if match.group(2) else None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _origin(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of an ``http(s)`` origin, the port made explicit; else None."""
    parts = urlsplit(url.strip().lower())
    found = _authority(parts.netloc) if parts.scheme in _DEFAULT_PORTS else None
    if found is None:
        return None
    return found[0], found[1] if found[1] is not None else _DEFAULT_PORTS[parts.scheme]


def _same(host: tuple[str, int | None], other: tuple[str, int]) -> bool:
    # A Host without a port is the default port of whatever scheme the client used (a TLS
    # proxy in front may hand it on as plain HTTP), so only an explicit port must agree.
    return host[0] == other[0] and (host[1] is None or host[1] == other[1])


def check_site(scope: Mapping[str, Any], public_url: str | None) -> TaskError | None:
    """Why a request's ``Host`` or ``Origin`` is not this server's, or ``None`` when both are.

    DNS rebinding points a name the attacker controls at this server's address, so a page of
    that name reaches the server with ``Host: <their name>`` and ``Origin: <their page>``.
    Allowed hosts: the loopback names (``localhost``, ``127.0.0.1``, ``[::1]``, any port),
    the host of ``--public-url``, and IP literals (no name was resolved to reach them, so
    nothing was rebound: a server listening on a LAN address is reached this way). An
    ``Origin``, when it names a page, must be a loopback origin, the public URL's, or the
    request's own (same-origin pages: the board's forms); any other page is refused.

    >>> def scope(host, origin=None):
    ...     headers = [(b"host", host.encode())]
    ...     if origin:
    ...         headers.append((b"origin", origin.encode()))
    ...     return {"scheme": "http", "headers": headers}
    >>> check_site(scope("127.0.0.1:8787"), None) is None
    True
    >>> check_site(scope("evil.example"), None).code.value
    'HOST_NOT_ALLOWED'
    >>> check_site(scope("localhost:8787", "http://evil.example"), None).code.value
    'ORIGIN_NOT_ALLOWED'
    >>> public = "https://tasks.example.com"
    >>> check_site(scope("tasks.example.com", public), public) is None
    True
    >>> check_site(scope("tasks.example.com:8443"), public).code.value
    'HOST_NOT_ALLOWED'
    """
    public = _origin(public_url) if public_url else None
    raw_host = _header(scope, b"host")
    host = _authority(raw_host) if raw_host is not None else None
    if host is None:
        return TaskError(ErrorCode.HOST_NOT_ALLOWED, "send a Host header naming this server")
    if not (
        host[0] in LOOPBACK_HOSTS or _is_ip(host[0]) or (public is not None and _same(host, public))
    ):
        return TaskError(
            ErrorCode.HOST_NOT_ALLOWED,
            f"this server does not answer to the host {host[0][:64]!r}: use localhost, its "
            "address, or the name its operator set with --public-url",
        )
    origin = _header(scope, b"origin")
    if origin is None or origin.strip() == "null":
        # No page origin to judge: a browser sends "null" for a form of a page served with
        # Referrer-Policy: no-referrer (the board's own sign-in). A rebound page is still
        # refused by its Host, and a cross-site one carries no bearer and no board cookie
        # (SameSite=Strict).
        return None
    found = _origin(origin)
    if found is not None and (found[0] in LOOPBACK_HOSTS or found == public or _same(host, found)):
        return None
    return TaskError(
        ErrorCode.ORIGIN_NOT_ALLOWED,
        f"requests from the page {origin[:64]!r} are refused: only this server's own pages, "
        "loopback pages and its --public-url may call it from a browser",
    )
