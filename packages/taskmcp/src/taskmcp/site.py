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

import re
from collections.abc import Mapping, Sequence
from typing import Any

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
