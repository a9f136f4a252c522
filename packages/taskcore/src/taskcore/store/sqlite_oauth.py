"""SQLite implementation of :class:`~taskcore.store.oauth_api.OAuthStore` (component ``oauth``).

The statements are plain SQL both backends share (the PostgreSQL store subclasses this one
unchanged); its DDL twin is ``OAUTH`` in :mod:`taskcore.store.postgres.migrations`.
"""

from __future__ import annotations

import apsw

from taskcore.store.oauth_api import (
    OAuthClientRecord,
    OAuthGrantRecord,
    OAuthRequestRecord,
    OAuthTokenRecord,
)
from taskcore.store.sqlite import Component, Migration
from taskcore.store.tables import Table

__all__ = ["CLIENTS", "COMPONENT", "GRANTS", "REQUESTS", "TOKENS", "SqliteOAuthStore"]

COMPONENT = Component(
    "oauth",
    (
        Migration(
            1,
            """
            CREATE TABLE oauth_client (
                client_id TEXT PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('registered', 'metadata')),
                name TEXT NOT NULL,
                metadata_json TEXT NOT NULL,
                secret_hash TEXT,
                created_at_ms INTEGER NOT NULL,
                refreshed_at_ms INTEGER NOT NULL
            ) STRICT;
            CREATE TABLE oauth_request (
                request_id TEXT PRIMARY KEY,
                client_id TEXT NOT NULL,
                client_name TEXT NOT NULL,
                redirect_uri TEXT NOT NULL,
                redirect_uri_explicit INTEGER NOT NULL,
                scope TEXT NOT NULL,
                resource TEXT NOT NULL,
                issuer TEXT NOT NULL,
                code_challenge TEXT NOT NULL,
                state TEXT,
                created_at_ms INTEGER NOT NULL,
                expires_at_ms INTEGER NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
                decided_by TEXT,
                decided_at_ms INTEGER,
                grant_id TEXT,
                code_id TEXT UNIQUE,
                code_hash TEXT,
                code_expires_at_ms INTEGER
            ) STRICT;
            CREATE INDEX oauth_request_pending ON oauth_request(status, created_at_ms);
            CREATE INDEX oauth_request_expiry ON oauth_request(expires_at_ms);
            CREATE TABLE oauth_grant (
                grant_id TEXT PRIMARY KEY,
                client_id TEXT NOT NULL,
                client_name TEXT NOT NULL,
                workspace TEXT NOT NULL,
                tier TEXT NOT NULL CHECK (tier IN ('agent', 'member', 'admin')),
                autonomy INTEGER NOT NULL CHECK (autonomy >= 0),
                scope TEXT NOT NULL,
                resource TEXT NOT NULL,
                granted_by TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                revoked_at_ms INTEGER,
                revoked_reason TEXT
            ) STRICT;
            CREATE INDEX oauth_grant_workspace ON oauth_grant(workspace, created_at_ms);
            CREATE INDEX oauth_grant_client ON oauth_grant(client_id);
            CREATE TABLE oauth_token (
                token_id TEXT PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
                grant_id TEXT NOT NULL,
                secret_hash TEXT NOT NULL,
                scope TEXT NOT NULL,
                issued_at_ms INTEGER NOT NULL,
                expires_at_ms INTEGER NOT NULL,
                rotated_at_ms INTEGER,
                revoked_at_ms INTEGER
            ) STRICT;
            CREATE INDEX oauth_token_grant ON oauth_token(grant_id);
            """,
        ),
    ),
)

CLIENTS: Table[OAuthClientRecord] = Table("oauth_client", OAuthClientRecord, key=("client_id",))
REQUESTS: Table[OAuthRequestRecord] = Table(
    "oauth_request", OAuthRequestRecord, key=("request_id",)
)
GRANTS: Table[OAuthGrantRecord] = Table("oauth_grant", OAuthGrantRecord, key=("grant_id",))
TOKENS: Table[OAuthTokenRecord] = Table("oauth_token", OAuthTokenRecord, key=("token_id",))


class SqliteOAuthStore:
    """The ``oauth_*`` tables."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    # -- clients ---------------------------------------------------------------------------
    def insert_client(self, record: OAuthClientRecord) -> None:
        """Store a new client."""
        self._conn.execute(*CLIENTS.insert(record))

    def get_client(self, client_id: str) -> OAuthClientRecord | None:
        """The client with ``client_id``, or ``None``."""
        row = self._conn.execute(f"{CLIENTS.select()} WHERE client_id = ?", (client_id,)).fetchone()
        return None if row is None else CLIENTS.from_row(row)

    def replace_client(self, record: OAuthClientRecord) -> None:
        """Store a client's refreshed metadata (same ``client_id``)."""
        self._conn.execute(
            *CLIENTS.update_columns(record, ("name", "metadata_json", "refreshed_at_ms"))
        )

    def count_clients(self) -> int:
        """How many clients are stored."""
        row = self._conn.execute("SELECT count(*) FROM oauth_client").fetchone()
        return int(row[0]) if row else 0

    def drop_unused_clients(self, created_before_ms: int) -> int:
        """Delete registered clients without any grant created before the time; how many."""
        self._conn.execute(
            "DELETE FROM oauth_client WHERE kind = 'registered' AND created_at_ms < ? "
            "AND client_id NOT IN (SELECT client_id FROM oauth_grant)",
            (created_before_ms,),
        )
        return int(self._conn.changes())

    # -- authorization requests ------------------------------------------------------------
    def insert_request(self, record: OAuthRequestRecord) -> None:
        """Store a new authorization request."""
        self._conn.execute(*REQUESTS.insert(record))

    def get_request(self, request_id: str) -> OAuthRequestRecord | None:
        """The request with ``request_id``, or ``None``."""
        row = self._conn.execute(
            f"{REQUESTS.select()} WHERE request_id = ?", (request_id,)
        ).fetchone()
        return None if row is None else REQUESTS.from_row(row)

    def request_by_code(self, code_id: str) -> OAuthRequestRecord | None:
        """The request whose code has ``code_id``, or ``None``."""
        row = self._conn.execute(f"{REQUESTS.select()} WHERE code_id = ?", (code_id,)).fetchone()
        return None if row is None else REQUESTS.from_row(row)

    def update_request(self, before: OAuthRequestRecord, after: OAuthRequestRecord) -> bool:
        """Write ``after`` if the row still has ``before``'s status (compare-and-set)."""
        columns = REQUESTS.changed(before, after)
        if not columns:
            return True
        sql, args = REQUESTS.update_columns(
            after, columns, where="status = ?", params=(before.status,)
        )
        self._conn.execute(sql, args)
        return int(self._conn.changes()) == 1

    def pending_requests(self, now_ms: int, limit: int) -> tuple[OAuthRequestRecord, ...]:
        """Pending requests not expired at ``now_ms``, oldest first."""
        rows = self._conn.execute(
            f"{REQUESTS.select()} WHERE status = 'pending' AND expires_at_ms > ? "
            "ORDER BY created_at_ms, request_id LIMIT ?",
            (now_ms, limit),
        )
        return tuple(REQUESTS.from_row(r) for r in rows)

    def count_pending(self, now_ms: int) -> int:
        """Pending requests not expired at ``now_ms``."""
        row = self._conn.execute(
            "SELECT count(*) FROM oauth_request WHERE status = 'pending' AND expires_at_ms > ?",
            (now_ms,),
        ).fetchone()
        return int(row[0]) if row else 0

    def prune_requests(self, before_ms: int) -> int:
        """Delete requests (and their codes) that expired before ``before_ms``; how many."""
        self._conn.execute(
            "DELETE FROM oauth_request WHERE expires_at_ms < ? "
            "AND (code_expires_at_ms IS NULL OR code_expires_at_ms < ?)",
            (before_ms, before_ms),
        )
        return int(self._conn.changes())

    # -- grants and tokens -----------------------------------------------------------------
    def insert_grant(self, record: OAuthGrantRecord) -> None:
        """Store a new grant."""
        self._conn.execute(*GRANTS.insert(record))

    def get_grant(self, grant_id: str) -> OAuthGrantRecord | None:
        """The grant with ``grant_id``, or ``None``."""
        row = self._conn.execute(f"{GRANTS.select()} WHERE grant_id = ?", (grant_id,)).fetchone()
        return None if row is None else GRANTS.from_row(row)

    def list_grants(
        self, *, workspace: str | None, include_revoked: bool
    ) -> tuple[OAuthGrantRecord, ...]:
        """Grants (of one workspace), oldest first."""
        clauses, args = [], []
        if workspace is not None:
            clauses.append("workspace = ?")
            args.append(workspace)
        if not include_revoked:
            clauses.append("revoked_at_ms IS NULL")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._conn.execute(
            f"{GRANTS.select()}{where} ORDER BY created_at_ms, grant_id", args
        )
        return tuple(GRANTS.from_row(r) for r in rows)

    def revoke_grant(self, grant_id: str, at_ms: int, reason: str) -> bool:
        """Revoke a grant and every token of it; return whether the grant was live."""
        self._conn.execute(
            "UPDATE oauth_grant SET revoked_at_ms = ?, revoked_reason = ? "
            "WHERE grant_id = ? AND revoked_at_ms IS NULL",
            (at_ms, reason, grant_id),
        )
        live = int(self._conn.changes()) == 1
        self._conn.execute(
            "UPDATE oauth_token SET revoked_at_ms = ? WHERE grant_id = ? AND revoked_at_ms IS NULL",
            (at_ms, grant_id),
        )
        return live

    def insert_token(self, record: OAuthTokenRecord) -> None:
        """Store a new access or refresh token."""
        self._conn.execute(*TOKENS.insert(record))

    def get_token(self, token_id: str) -> OAuthTokenRecord | None:
        """The token with ``token_id``, or ``None``."""
        row = self._conn.execute(f"{TOKENS.select()} WHERE token_id = ?", (token_id,)).fetchone()
        return None if row is None else TOKENS.from_row(row)

    def rotate_token(self, token_id: str, at_ms: int) -> bool:
        """Mark a live refresh token exchanged; ``False`` if it already was (reuse)."""
        self._conn.execute(
            "UPDATE oauth_token SET rotated_at_ms = ? WHERE token_id = ? AND kind = 'refresh' "
            "AND rotated_at_ms IS NULL AND revoked_at_ms IS NULL",
            (at_ms, token_id),
        )
        return int(self._conn.changes()) == 1
