"""SQLite implementation of :class:`~taskcore.store.tokens_api.TokenStore`."""

from __future__ import annotations

from typing import Any

import apsw

from taskcore.store.sqlite import Component, Migration
from taskcore.store.tables import Table
from taskcore.store.tokens_api import TokenRecord

__all__ = ["COMPONENT", "TOKENS", "SqliteTokenStore"]

COMPONENT = Component(
    "tokens",
    (
        Migration(
            1,
            """
            CREATE TABLE token (
                token_id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                workspace TEXT NOT NULL,
                tier TEXT NOT NULL CHECK (tier IN ('agent', 'member', 'admin')),
                autonomy INTEGER NOT NULL CHECK (autonomy >= 0),
                secret_hash TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                revoked_at_ms INTEGER
            ) STRICT;
            """,
        ),
    ),
)

TOKENS: Table[TokenRecord] = Table("token", TokenRecord, key=("token_id",))

_MISSING = object()


class SqliteTokenStore:
    """Tokens in the ``token`` table."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn
        self._memo: dict[tuple[Any, ...], Any] = {}

    def reset(self) -> None:
        """Start a new transaction: forget the rows memoised."""
        self._memo.clear()

    def seed(self, key: tuple[Any, ...], row: Any) -> None:
        """Remember a token row read for this store (``taskcore.store.callrows``)."""
        self._memo[key] = row

    def insert(self, record: TokenRecord) -> None:
        """Store a new token record."""
        self._memo.clear()
        self._conn.execute(*TOKENS.insert(record))

    def get(self, token_id: str) -> TokenRecord | None:
        """Return the token with ``token_id``, revoked or not, or ``None``.

        Memoised for the rest of the transaction (the front door's live check and the
        workflow guard both read it); a write through this store forgets it.
        """
        row = self._memo.get((token_id,), _MISSING)
        if row is _MISSING:
            row = self._memo[(token_id,)] = self._conn.execute(
                f"{TOKENS.select()} WHERE token_id = ?",
                (token_id,),
            ).fetchone()
        return None if row is None else TOKENS.from_row(row)

    def list(self, *, workspace: str | None = None) -> tuple[TokenRecord, ...]:
        """Return every token (of one workspace), oldest first."""
        if workspace is None:
            rows = self._conn.execute(f"{TOKENS.select()} ORDER BY created_at_ms, token_id")
        else:
            rows = self._conn.execute(
                f"{TOKENS.select()} WHERE workspace = ? ORDER BY created_at_ms, token_id",
                (workspace,),
            )
        return tuple(TOKENS.from_row(r) for r in rows)

    def revoke(self, token_id: str, at_ms: int) -> bool:
        """Mark the token revoked; return whether it was live before."""
        self._memo.clear()
        self._conn.execute(
            "UPDATE token SET revoked_at_ms = ? WHERE token_id = ? AND revoked_at_ms IS NULL",
            (at_ms, token_id),
        )
        return self._conn.changes() == 1

    def page(
        self, workspace: str, *, after: TokenRecord | None, include_revoked: bool, limit: int
    ) -> tuple[TokenRecord, ...]:
        """Return up to ``limit`` tokens of ``workspace``, oldest first, after ``after``."""
        clauses = ["workspace = ?"]
        args: list[Any] = [workspace]
        if not include_revoked:
            clauses.append("revoked_at_ms IS NULL")
        if after is not None:
            clauses.append("(created_at_ms > ? OR (created_at_ms = ? AND token_id > ?))")
            args.extend((after.created_at_ms, after.created_at_ms, after.token_id))
        args.append(limit)
        rows = self._conn.execute(
            f"{TOKENS.select()} WHERE {' AND '.join(clauses)} "
            "ORDER BY created_at_ms, token_id LIMIT ?",
            args,
        )
        return tuple(TOKENS.from_row(r) for r in rows)
