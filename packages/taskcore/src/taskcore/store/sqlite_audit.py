"""SQLite implementation of :class:`~taskcore.store.audit_api.AuditStore`."""

from __future__ import annotations

import apsw

from taskcore.store.audit_api import AuditEvent
from taskcore.store.sqlite import Component, Migration

__all__ = ["COMPONENT", "SqliteAuditStore"]

COMPONENT = Component(
    "audit",
    (
        Migration(
            1,
            """
            CREATE TABLE audit_event (
                seq INTEGER PRIMARY KEY,
                at_ms INTEGER NOT NULL,
                actor TEXT NOT NULL,
                workspace TEXT NOT NULL,
                operation TEXT NOT NULL,
                input_digest TEXT NOT NULL,
                outcome TEXT NOT NULL
            ) STRICT;
            CREATE INDEX audit_event_workspace ON audit_event(workspace, seq);
            """,
        ),
        Migration(
            2,
            # How many calls one event stands for (aggregated refusals); 1 for every other.
            "ALTER TABLE audit_event ADD COLUMN calls INTEGER NOT NULL DEFAULT 1",
        ),
    ),
)


class SqliteAuditStore:
    """Audit events in the ``audit_event`` table."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def append(self, event: AuditEvent) -> int:
        """Append ``event``; return its sequence number."""
        self._conn.execute(
            "INSERT INTO audit_event"
            "(at_ms, actor, workspace, operation, input_digest, outcome, calls) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                event.at_ms,
                event.actor,
                event.workspace,
                event.operation,
                event.input_digest,
                event.outcome,
                event.calls,
            ),
        )
        return int(self._conn.last_insert_rowid())

    def count(self, *, workspace: str | None = None, operation: str | None = None) -> int:
        """Count the calls events stand for (the sum of ``calls``), optionally filtered."""
        sql = "SELECT COALESCE(SUM(calls), 0) FROM audit_event WHERE 1=1"
        args: list[str] = []
        if workspace is not None:
            sql += " AND workspace = ?"
            args.append(workspace)
        if operation is not None:
            sql += " AND operation = ?"
            args.append(operation)
        row = self._conn.execute(sql, args).fetchone()
        return int(row[0]) if row else 0

    def recent(self, *, workspace: str, limit: int) -> tuple[AuditEvent, ...]:
        """Return the newest ``limit`` events of ``workspace``, newest first."""
        rows = self._conn.execute(
            "SELECT seq, at_ms, actor, workspace, operation, input_digest, outcome, calls "
            "FROM audit_event WHERE workspace = ? ORDER BY seq DESC LIMIT ?",
            (workspace, limit),
        ).fetchall()
        return tuple(
            AuditEvent(
                seq=int(r[0]),  # type: ignore[arg-type]
                at_ms=int(r[1]),  # type: ignore[arg-type]
                actor=str(r[2]),
                workspace=str(r[3]),
                operation=str(r[4]),
                input_digest=str(r[5]),
                outcome=str(r[6]),
                calls=int(r[7]),  # type: ignore[arg-type]
            )
            for r in rows
        )
