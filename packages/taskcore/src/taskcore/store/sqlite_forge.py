"""SQLite implementation of :class:`~taskcore.store.forge_api.ForgeStore`."""

from __future__ import annotations

from typing import Any

import apsw

from taskcore.store.forge_api import ForgeSettingsRecord, OutboxRecord
from taskcore.store.sqlite import Component, Migration, opt_int
from taskcore.store.tables import Table

__all__ = ["COMPONENT", "OUTBOX", "SETTINGS", "SqliteForgeStore"]

COMPONENT = Component(
    "forge",
    (
        Migration(
            1,
            """
            CREATE TABLE forge_settings (
                repository_id TEXT NOT NULL,
                profile_id TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('github', 'gitlab')),
                api_url TEXT NOT NULL,
                project TEXT NOT NULL,
                token_file TEXT NOT NULL,
                token_header TEXT NOT NULL CHECK (token_header IN ('bearer', 'private-token')),
                target_url TEXT,
                updated_at_ms INTEGER NOT NULL,
                PRIMARY KEY (repository_id, profile_id)
            ) STRICT;
            CREATE TABLE forge_outbox (
                seq INTEGER PRIMARY KEY,
                repository_id TEXT NOT NULL,
                profile_id TEXT NOT NULL,
                subject_seq INTEGER NOT NULL,
                change_id TEXT NOT NULL,
                commit_oid TEXT NOT NULL,
                revision TEXT NOT NULL,
                context TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('pending', 'success', 'failure', 'error')),
                cause TEXT NOT NULL,
                description TEXT NOT NULL,
                target_url TEXT,
                receipt_digest TEXT,
                kind TEXT NOT NULL,
                api_url TEXT NOT NULL,
                project TEXT NOT NULL,
                token_file TEXT NOT NULL,
                token_header TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN
                    ('queued', 'delivered', 'refused', 'given_up', 'superseded')),
                attempts INTEGER NOT NULL CHECK (attempts >= 0),
                next_attempt_at_ms INTEGER NOT NULL,
                last_error TEXT,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX forge_outbox_key
                ON forge_outbox(repository_id, profile_id, commit_oid, context, seq);
            CREATE INDEX forge_outbox_due ON forge_outbox(next_attempt_at_ms)
                WHERE status = 'queued';
            CREATE INDEX forge_outbox_state ON forge_outbox(state, seq);
            """,
        ),
    ),
)

SETTINGS: Table[ForgeSettingsRecord] = Table(
    "forge_settings", ForgeSettingsRecord, key=("repository_id", "profile_id")
)
OUTBOX: Table[OutboxRecord] = Table(
    "forge_outbox", OutboxRecord, key=("seq",), generated=("seq",), renamed={"commit": "commit_oid"}
)


_LATEST_OF_KEY = (
    "NOT EXISTS (SELECT 1 FROM forge_outbox AS newer WHERE newer.repository_id = "
    "forge_outbox.repository_id AND newer.profile_id = forge_outbox.profile_id AND "
    "newer.commit_oid = forge_outbox.commit_oid AND newer.context = forge_outbox.context "
    "AND newer.seq > forge_outbox.seq)"
)


class SqliteForgeStore:
    """Forge rows in the ``forge_*`` tables."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    # -- settings ------------------------------------------------------------------------
    def put_settings(self, record: ForgeSettingsRecord) -> None:
        """Insert or replace the settings of a repository's profile."""
        self._conn.execute(
            *SETTINGS.insert(
                record,
                suffix="ON CONFLICT(repository_id, profile_id) DO UPDATE SET kind = excluded.kind, "
                "api_url = excluded.api_url, project = excluded.project, "
                "token_file = excluded.token_file, token_header = excluded.token_header, "
                "target_url = excluded.target_url, updated_at_ms = excluded.updated_at_ms",
            )
        )

    def delete_settings(self, repository_id: str, profile_id: str) -> bool:
        """Remove the settings of a profile; return whether there were any."""
        self._conn.execute(
            "DELETE FROM forge_settings WHERE repository_id = ? AND profile_id = ?",
            (repository_id, profile_id),
        )
        return bool(self._conn.changes())

    def get_settings(self, repository_id: str, profile_id: str) -> ForgeSettingsRecord | None:
        """Return the settings of a profile, or ``None``."""
        row = self._conn.execute(
            f"{SETTINGS.select()} WHERE repository_id = ? AND profile_id = ?",
            (repository_id, profile_id),
        ).fetchone()
        return None if row is None else SETTINGS.from_row(row)

    # -- the outbox ----------------------------------------------------------------------
    def enqueue(self, record: OutboxRecord) -> int:
        """Write a status and supersede older queued rows of its key; return its ``seq``."""
        self._conn.execute(
            "UPDATE forge_outbox SET status = 'superseded', updated_at_ms = ? "
            "WHERE repository_id = ? AND profile_id = ? AND commit_oid = ? AND context = ? "
            "AND status = 'queued'",
            (
                record.created_at_ms,
                record.repository_id,
                record.profile_id,
                record.commit,
                record.context,
            ),
        )
        self._conn.execute(*OUTBOX.insert(record))
        return int(self._conn.last_insert_rowid())

    def latest(
        self, repository_id: str, profile_id: str, commit: str, context: str
    ) -> OutboxRecord | None:
        """The newest status written for a key, or ``None``."""
        row = self._conn.execute(
            f"{OUTBOX.select()} "
            "WHERE repository_id = ? AND profile_id = ? AND commit_oid = ? AND context = ? "
            "ORDER BY seq DESC LIMIT 1",
            (repository_id, profile_id, commit, context),
        ).fetchone()
        return None if row is None else OUTBOX.from_row(row)

    def get(self, seq: int) -> OutboxRecord | None:
        """One row by ``seq``, or ``None``."""
        row = self._conn.execute(
            f"{OUTBOX.select()} WHERE seq = ?",
            (seq,),
        ).fetchone()
        return None if row is None else OUTBOX.from_row(row)

    def due(self, now_ms: int, limit: int) -> tuple[OutboxRecord, ...]:
        """Queued rows whose next attempt is due, oldest first."""
        rows = self._conn.execute(
            f"{OUTBOX.select()} "
            "WHERE status = 'queued' AND next_attempt_at_ms <= ? ORDER BY seq LIMIT ?",
            (now_ms, limit),
        ).fetchall()
        return tuple(OUTBOX.from_row(r) for r in rows)

    def next_due_at(self) -> int | None:
        """The earliest next attempt of a queued row, or ``None``."""
        row = self._conn.execute(
            "SELECT min(next_attempt_at_ms) FROM forge_outbox WHERE status = 'queued'"
        ).fetchone()
        return None if row is None else opt_int(row[0])

    def update_delivery(
        self,
        seq: int,
        *,
        status: str,
        attempts: int,
        next_attempt_at_ms: int,
        last_error: str | None,
        now_ms: int,
    ) -> None:
        """Record a delivery attempt's outcome (or a lease while the row is being sent)."""
        self._conn.execute(
            "UPDATE forge_outbox SET status = ?, attempts = ?, next_attempt_at_ms = ?, "
            "last_error = ?, updated_at_ms = ? WHERE seq = ?",
            (status, attempts, next_attempt_at_ms, last_error, now_ms, seq),
        )

    def published_successes(
        self, repository_id: str | None, limit: int
    ) -> tuple[OutboxRecord, ...]:
        """Newest-first ``success`` rows still the latest status of their key."""
        where = "state = 'success' AND status IN ('queued', 'delivered')"
        args: tuple[Any, ...] = ()
        if repository_id is not None:
            where += " AND repository_id = ?"
            args = (repository_id,)
        rows = self._conn.execute(
            f"{OUTBOX.select()} WHERE {where} AND {_LATEST_OF_KEY} ORDER BY seq DESC LIMIT ?",
            (*args, limit),
        ).fetchall()
        return tuple(OUTBOX.from_row(r) for r in rows)

    def rows(self, repository_id: str | None, limit: int) -> tuple[OutboxRecord, ...]:
        """The newest rows, newest first."""
        if repository_id is None:
            rows = self._conn.execute(
                f"{OUTBOX.select()} ORDER BY seq DESC LIMIT ?",
                (limit,),
            ).fetchall()
        else:
            rows = self._conn.execute(
                f"{OUTBOX.select()} WHERE repository_id = ? ORDER BY seq DESC LIMIT ?",
                (repository_id, limit),
            ).fetchall()
        return tuple(OUTBOX.from_row(r) for r in rows)
