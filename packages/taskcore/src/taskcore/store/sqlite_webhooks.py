"""SQLite implementation of :class:`~taskcore.store.webhooks_api.WebhookStore`.

The component ``webhooks``; its PostgreSQL twin is in ``store/postgres/migrations_events.py``.
"""

from __future__ import annotations

from typing import cast

import apsw

from taskcore.store.sqlite import Component, Migration, opt_int
from taskcore.store.tables import Table
from taskcore.store.webhooks_api import DeliveryRecord, EndpointRecord

__all__ = ["COMPONENT", "DELIVERIES", "ENDPOINTS", "SqliteWebhookStore"]

COMPONENT = Component(
    "webhooks",
    (
        Migration(
            1,
            """
            CREATE TABLE webhook_endpoint (
                endpoint_id TEXT PRIMARY KEY,
                workspace TEXT NOT NULL,
                url TEXT NOT NULL,
                events TEXT NOT NULL,
                secret TEXT NOT NULL,
                allow_private INTEGER NOT NULL CHECK (allow_private IN (0, 1)),
                description TEXT NOT NULL,
                from_seq INTEGER NOT NULL,
                created_at_ms INTEGER NOT NULL,
                removed_at_ms INTEGER
            ) STRICT;
            CREATE INDEX webhook_endpoint_workspace ON webhook_endpoint(workspace, created_at_ms);
            CREATE TABLE webhook_delivery (
                seq INTEGER PRIMARY KEY,
                endpoint_id TEXT NOT NULL REFERENCES webhook_endpoint(endpoint_id),
                workspace TEXT NOT NULL,
                message_id TEXT NOT NULL,
                event_seq INTEGER,
                event_type TEXT NOT NULL,
                body TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('queued', 'delivered', 'dead')),
                attempts INTEGER NOT NULL CHECK (attempts >= 0),
                next_attempt_at_ms INTEGER NOT NULL,
                deadline_at_ms INTEGER NOT NULL,
                last_error TEXT,
                last_http_status INTEGER,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                UNIQUE (endpoint_id, message_id)
            ) STRICT;
            CREATE INDEX webhook_delivery_due ON webhook_delivery(next_attempt_at_ms)
                WHERE status = 'queued';
            CREATE INDEX webhook_delivery_workspace ON webhook_delivery(workspace, seq);
            CREATE TABLE webhook_cursor (
                name TEXT PRIMARY KEY,
                after_seq INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT;
            """,
        ),
    ),
)

ENDPOINTS: Table[EndpointRecord] = Table("webhook_endpoint", EndpointRecord, key=("endpoint_id",))
DELIVERIES: Table[DeliveryRecord] = Table(
    "webhook_delivery", DeliveryRecord, key=("seq",), generated=("seq",)
)
_FANOUT = "fanout"


class SqliteWebhookStore:
    """Webhook rows in the ``webhook_*`` tables."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    # -- endpoints ------------------------------------------------------------------------
    def put_endpoint(self, record: EndpointRecord) -> None:
        """Insert a new endpoint."""
        self._conn.execute(*ENDPOINTS.insert(record))

    def get_endpoint(self, endpoint_id: str) -> EndpointRecord | None:
        """One endpoint, or ``None``."""
        row = self._conn.execute(
            f"{ENDPOINTS.select()} WHERE endpoint_id = ?", (endpoint_id,)
        ).fetchone()
        return None if row is None else ENDPOINTS.from_row(row)

    def endpoints(self, workspace: str | None, *, live_only: bool) -> tuple[EndpointRecord, ...]:
        """Endpoints of one workspace (or all), oldest first."""
        clauses, args = ["1 = 1"], []
        if workspace is not None:
            clauses.append("workspace = ?")
            args.append(workspace)
        if live_only:
            clauses.append("removed_at_ms IS NULL")
        rows = self._conn.execute(
            f"{ENDPOINTS.select()} WHERE {' AND '.join(clauses)} "
            "ORDER BY created_at_ms, endpoint_id",
            args,
        ).fetchall()
        return tuple(ENDPOINTS.from_row(r) for r in rows)

    def remove_endpoint(self, endpoint_id: str, now_ms: int) -> bool:
        """Mark an endpoint removed and its queued deliveries dead."""
        self._conn.execute(
            "UPDATE webhook_endpoint SET removed_at_ms = ? "
            "WHERE endpoint_id = ? AND removed_at_ms IS NULL",
            (now_ms, endpoint_id),
        )
        if not self._conn.changes():
            return False
        self._conn.execute(
            "UPDATE webhook_delivery SET status = 'dead', last_error = 'endpoint_removed', "
            "updated_at_ms = ? WHERE endpoint_id = ? AND status = 'queued'",
            (now_ms, endpoint_id),
        )
        return True

    # -- deliveries -----------------------------------------------------------------------
    def enqueue(self, record: DeliveryRecord) -> int | None:
        """Insert a delivery unless the endpoint already has its message."""
        self._conn.execute(
            *DELIVERIES.insert(record, suffix="ON CONFLICT (endpoint_id, message_id) DO NOTHING")
        )
        if not self._conn.changes():
            return None
        return int(self._conn.last_insert_rowid())

    def get_delivery(self, seq: int) -> DeliveryRecord | None:
        """One delivery, or ``None``."""
        row = self._conn.execute(f"{DELIVERIES.select()} WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else DELIVERIES.from_row(row)

    def due(self, now_ms: int, limit: int) -> tuple[DeliveryRecord, ...]:
        """Queued deliveries whose next attempt is due, oldest first."""
        rows = self._conn.execute(
            f"{DELIVERIES.select()} WHERE status = 'queued' AND next_attempt_at_ms <= ? "
            "ORDER BY next_attempt_at_ms, seq LIMIT ?",
            (now_ms, limit),
        ).fetchall()
        return tuple(DELIVERIES.from_row(r) for r in rows)

    def next_due_at(self) -> int | None:
        """The earliest next attempt of a queued delivery, or ``None``."""
        row = self._conn.execute(
            "SELECT min(next_attempt_at_ms) FROM webhook_delivery WHERE status = 'queued'"
        ).fetchone()
        return None if row is None else opt_int(row[0])

    def update_delivery(
        self,
        seq: int,
        *,
        status: str,
        attempts: int,
        next_attempt_at_ms: int,
        deadline_at_ms: int,
        last_error: str | None,
        last_http_status: int | None,
        now_ms: int,
    ) -> None:
        """Record an attempt's outcome (or a lease while the delivery is being sent)."""
        self._conn.execute(
            "UPDATE webhook_delivery SET status = ?, attempts = ?, next_attempt_at_ms = ?, "
            "deadline_at_ms = ?, last_error = ?, last_http_status = ?, updated_at_ms = ? "
            "WHERE seq = ?",
            (
                status,
                attempts,
                next_attempt_at_ms,
                deadline_at_ms,
                last_error,
                last_http_status,
                now_ms,
                seq,
            ),
        )

    def deliveries(
        self,
        workspace: str | None,
        *,
        endpoint_id: str | None,
        status: str | None,
        limit: int,
    ) -> tuple[DeliveryRecord, ...]:
        """The newest deliveries (filtered), newest first."""
        clauses, args = ["1 = 1"], []
        for column, value in (
            ("workspace", workspace),
            ("endpoint_id", endpoint_id),
            ("status", status),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        rows = self._conn.execute(
            f"{DELIVERIES.select()} WHERE {' AND '.join(clauses)} ORDER BY seq DESC LIMIT ?",
            (*args, limit),
        ).fetchall()
        return tuple(DELIVERIES.from_row(r) for r in rows)

    def delivery_counts(self, endpoint_id: str) -> dict[str, int]:
        """How many deliveries of the endpoint are in each status."""
        rows = self._conn.execute(
            "SELECT status, count(*) FROM webhook_delivery WHERE endpoint_id = ? GROUP BY status",
            (endpoint_id,),
        ).fetchall()
        counts = dict.fromkeys(("queued", "delivered", "dead"), 0)
        for status, n in rows:
            counts[str(status)] = int(cast("int", n))
        return counts

    # -- the fan-out cursor ---------------------------------------------------------------
    def cursor(self) -> int | None:
        """The last event id the fan-out handled, or ``None``."""
        row = self._conn.execute(
            "SELECT after_seq FROM webhook_cursor WHERE name = ?", (_FANOUT,)
        ).fetchone()
        return None if row is None else int(row[0])

    def move_cursor(self, before: int | None, after: int, now_ms: int) -> bool:
        """Compare-and-set the cursor."""
        if before is None:
            self._conn.execute(
                "INSERT INTO webhook_cursor (name, after_seq, updated_at_ms) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO NOTHING",
                (_FANOUT, after, now_ms),
            )
        else:
            self._conn.execute(
                "UPDATE webhook_cursor SET after_seq = ?, updated_at_ms = ? "
                "WHERE name = ? AND after_seq = ?",
                (after, now_ms, _FANOUT, before),
            )
        return bool(self._conn.changes())
