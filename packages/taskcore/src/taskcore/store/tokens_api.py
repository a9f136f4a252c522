"""The bearer-token interface: tokens are stored only as SHA-256 hashes of their secret."""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["TokenRecord", "TokenStore"]


@attrs.frozen(kw_only=True)
class TokenRecord:
    """A credential bound to one workspace, tier and autonomy level.

    ``secret_hash`` is the SHA-256 (hex) of the secret part; the secret itself is never stored.
    ``tier`` is ``agent``, ``member`` or ``admin``.
    """

    token_id: str
    name: str
    workspace: str
    tier: str
    autonomy: int
    secret_hash: str
    created_at_ms: int
    revoked_at_ms: int | None = None


class TokenStore(Protocol):
    """Create, find, list and revoke tokens."""

    def insert(self, record: TokenRecord) -> None:
        """Store a new token record."""
        ...

    def get(self, token_id: str) -> TokenRecord | None:
        """Return the token with ``token_id``, revoked or not, or ``None``."""
        ...

    def list(self, *, workspace: str | None = None) -> tuple[TokenRecord, ...]:
        """Return every token (of one workspace), oldest first."""
        ...

    def revoke(self, token_id: str, at_ms: int) -> bool:
        """Mark the token revoked; return whether it was live before."""
        ...

    def page(
        self, workspace: str, *, after: TokenRecord | None, include_revoked: bool, limit: int
    ) -> tuple[TokenRecord, ...]:
        """Return up to ``limit`` tokens of ``workspace``, oldest first, after ``after``.

        ``include_revoked=False`` leaves revoked tokens out.
        """
        ...
