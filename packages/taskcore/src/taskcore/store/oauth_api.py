"""The OAuth store interface: clients, pending authorization requests, grants and tokens.

Secrets are never stored: a client secret, an authorization code, an access token and a
refresh token are each kept as the SHA-256 (hex) of their secret part, like bearer tokens
(:mod:`taskcore.auth`). :mod:`taskcore.oauth` holds every decision; this is rows only.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = [
    "OAuthClientRecord",
    "OAuthGrantRecord",
    "OAuthRequestRecord",
    "OAuthStore",
    "OAuthTokenRecord",
]


@attrs.frozen(kw_only=True)
class OAuthClientRecord:
    """A client: registered (RFC 7591) or known by its metadata document URL (CIMD).

    ``kind`` is ``registered`` or ``metadata``; ``metadata_json`` is the client metadata as
    registered or fetched (never a secret); ``secret_hash`` is the SHA-256 of a registered
    confidential client's secret, ``None`` for a public client. ``refreshed_at_ms`` is when a
    metadata document was last fetched (registration time otherwise).
    """

    client_id: str
    kind: str
    name: str
    metadata_json: str
    secret_hash: str | None
    created_at_ms: int
    refreshed_at_ms: int


@attrs.frozen(kw_only=True)
class OAuthRequestRecord:
    """An authorization request from ``/authorize``, waiting for a person's consent.

    ``status`` is ``pending``, ``approved`` (a code was issued: ``code_id``/``code_hash``),
    ``denied`` or ``used`` (its code was exchanged). ``issuer`` and ``resource`` are the
    authorization server and the protected resource (RFC 8707) the request was made for.
    """

    request_id: str
    client_id: str
    client_name: str
    redirect_uri: str
    redirect_uri_explicit: bool
    scope: str
    resource: str
    issuer: str
    code_challenge: str
    state: str | None
    created_at_ms: int
    expires_at_ms: int
    status: str
    decided_by: str | None = None
    decided_at_ms: int | None = None
    grant_id: str | None = None
    code_id: str | None = None
    code_hash: str | None = None
    code_expires_at_ms: int | None = None


@attrs.frozen(kw_only=True)
class OAuthGrantRecord:
    """What a person consented to: a client acting in one workspace at a tier and autonomy.

    Every access and refresh token issued from one consent belongs to its grant (the token
    family); revoking the grant revokes them all. ``resource`` is the MCP resource URL its
    tokens are bound to.
    """

    grant_id: str
    client_id: str
    client_name: str
    workspace: str
    tier: str
    autonomy: int
    scope: str
    resource: str
    granted_by: str
    created_at_ms: int
    revoked_at_ms: int | None = None
    revoked_reason: str | None = None


@attrs.frozen(kw_only=True)
class OAuthTokenRecord:
    """An access or refresh token (``kind``) of a grant.

    ``rotated_at_ms`` marks a refresh token already exchanged (presenting it again is reuse).
    """

    token_id: str
    kind: str
    grant_id: str
    secret_hash: str
    scope: str
    issued_at_ms: int
    expires_at_ms: int
    rotated_at_ms: int | None = None
    revoked_at_ms: int | None = None


class OAuthStore(Protocol):
    """Rows of the ``oauth`` component."""

    def insert_client(self, record: OAuthClientRecord) -> None:
        """Store a new client."""
        ...

    def get_client(self, client_id: str) -> OAuthClientRecord | None:
        """The client with ``client_id``, or ``None``."""
        ...

    def replace_client(self, record: OAuthClientRecord) -> None:
        """Store a client's refreshed metadata (same ``client_id``)."""
        ...

    def count_clients(self) -> int:
        """How many clients are stored."""
        ...

    def drop_unused_clients(self, created_before_ms: int) -> int:
        """Delete registered clients without any grant created before the time; how many."""
        ...

    def insert_request(self, record: OAuthRequestRecord) -> None:
        """Store a new authorization request."""
        ...

    def get_request(self, request_id: str) -> OAuthRequestRecord | None:
        """The request with ``request_id``, or ``None``."""
        ...

    def request_by_code(self, code_id: str) -> OAuthRequestRecord | None:
        """The request whose code has ``code_id``, or ``None``."""
        ...

    def update_request(self, before: OAuthRequestRecord, after: OAuthRequestRecord) -> bool:
        """Write ``after`` if the row still is ``before`` (compare-and-set on status)."""
        ...

    def pending_requests(self, now_ms: int, limit: int) -> tuple[OAuthRequestRecord, ...]:
        """Pending requests not expired at ``now_ms``, oldest first."""
        ...

    def count_pending(self, now_ms: int) -> int:
        """Pending requests not expired at ``now_ms``."""
        ...

    def prune_requests(self, before_ms: int) -> int:
        """Delete requests that expired before ``before_ms``; how many."""
        ...

    def insert_grant(self, record: OAuthGrantRecord) -> None:
        """Store a new grant."""
        ...

    def get_grant(self, grant_id: str) -> OAuthGrantRecord | None:
        """The grant with ``grant_id``, or ``None``."""
        ...

    def list_grants(
        self, *, workspace: str | None, include_revoked: bool
    ) -> tuple[OAuthGrantRecord, ...]:
        """Grants (of one workspace), oldest first."""
        ...

    def revoke_grant(self, grant_id: str, at_ms: int, reason: str) -> bool:
        """Revoke a grant and every token of it; return whether the grant was live."""
        ...

    def insert_token(self, record: OAuthTokenRecord) -> None:
        """Store a new access or refresh token."""
        ...

    def get_token(self, token_id: str) -> OAuthTokenRecord | None:
        """The token with ``token_id``, or ``None``."""
        ...

    def rotate_token(self, token_id: str, at_ms: int) -> bool:
        """Mark a live refresh token exchanged; ``False`` if it already was (reuse)."""
        ...
