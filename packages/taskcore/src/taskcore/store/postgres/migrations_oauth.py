"""The PostgreSQL DDL of the ``oauth`` component (the twin of ``store/sqlite_oauth.py``).

Kept beside :mod:`taskcore.store.postgres.migrations`, which lists it in ``COMPONENTS``, so
that module stays readable; the rules there (``BIGINT``, ``TEXT COLLATE "C"``) apply.
"""

from __future__ import annotations

from taskcore.store.sqlite import Component, Migration

__all__ = ["OAUTH"]

OAUTH = Component(
    "oauth",
    (
        Migration(
            1,
            """
            CREATE TABLE oauth_client (
                client_id TEXT COLLATE "C" PRIMARY KEY,
                kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('registered', 'metadata')),
                name TEXT COLLATE "C" NOT NULL,
                metadata_json TEXT COLLATE "C" NOT NULL,
                secret_hash TEXT COLLATE "C",
                created_at_ms BIGINT NOT NULL,
                refreshed_at_ms BIGINT NOT NULL
            );
            CREATE TABLE oauth_request (
                request_id TEXT COLLATE "C" PRIMARY KEY,
                client_id TEXT COLLATE "C" NOT NULL,
                client_name TEXT COLLATE "C" NOT NULL,
                redirect_uri TEXT COLLATE "C" NOT NULL,
                redirect_uri_explicit BIGINT NOT NULL,
                scope TEXT COLLATE "C" NOT NULL,
                resource TEXT COLLATE "C" NOT NULL,
                issuer TEXT COLLATE "C" NOT NULL,
                code_challenge TEXT COLLATE "C" NOT NULL,
                state TEXT COLLATE "C",
                created_at_ms BIGINT NOT NULL,
                expires_at_ms BIGINT NOT NULL,
                status TEXT COLLATE "C" NOT NULL
                    CHECK (status IN ('pending', 'approved', 'denied', 'used')),
                decided_by TEXT COLLATE "C",
                decided_at_ms BIGINT,
                grant_id TEXT COLLATE "C",
                code_id TEXT COLLATE "C" UNIQUE,
                code_hash TEXT COLLATE "C",
                code_expires_at_ms BIGINT
            );
            CREATE INDEX oauth_request_pending ON oauth_request(status, created_at_ms);
            CREATE INDEX oauth_request_expiry ON oauth_request(expires_at_ms);
            CREATE TABLE oauth_grant (
                grant_id TEXT COLLATE "C" PRIMARY KEY,
                client_id TEXT COLLATE "C" NOT NULL,
                client_name TEXT COLLATE "C" NOT NULL,
                workspace TEXT COLLATE "C" NOT NULL,
                tier TEXT COLLATE "C" NOT NULL CHECK (tier IN ('agent', 'member', 'admin')),
                autonomy BIGINT NOT NULL CHECK (autonomy >= 0),
                scope TEXT COLLATE "C" NOT NULL,
                resource TEXT COLLATE "C" NOT NULL,
                granted_by TEXT COLLATE "C" NOT NULL,
                created_at_ms BIGINT NOT NULL,
                revoked_at_ms BIGINT,
                revoked_reason TEXT COLLATE "C"
            );
            CREATE INDEX oauth_grant_workspace ON oauth_grant(workspace, created_at_ms);
            CREATE INDEX oauth_grant_client ON oauth_grant(client_id);
            CREATE TABLE oauth_token (
                token_id TEXT COLLATE "C" PRIMARY KEY,
                kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('access', 'refresh')),
                grant_id TEXT COLLATE "C" NOT NULL,
                secret_hash TEXT COLLATE "C" NOT NULL,
                scope TEXT COLLATE "C" NOT NULL,
                issued_at_ms BIGINT NOT NULL,
                expires_at_ms BIGINT NOT NULL,
                rotated_at_ms BIGINT,
                revoked_at_ms BIGINT
            );
            CREATE INDEX oauth_token_grant ON oauth_token(grant_id);
            """,
        ),
    ),
)
