"""SQLite implementation of :class:`~taskcore.store.audit_api.AuditStore`."""

from __future__ import annotations

from typing import Any

import apsw

from taskcore.store.audit_api import AuditEvent, AuditQuery
from taskcore.store.sqlite import Component, Migration
from taskcore.store.tables import Table

__all__ = ["COMPONENT", "EVENTS", "SqliteAuditStore"]

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
        # The task a call named (its trail is one index range) and the retention sweep's
        # oldest-first range.
        Migration(
            2,
            """
            ALTER TABLE audit_event ADD COLUMN subject TEXT;
            CREATE INDEX audit_event_subject ON audit_event(workspace, subject, seq)
                WHERE subject IS NOT NULL;
            CREATE INDEX audit_event_at ON audit_event(at_ms);
            """,
        ),
        Migration(
            3,
            # How many calls one event stands for (aggregated refusals); 1 for every other.
            "ALTER TABLE audit_event ADD COLUMN calls INTEGER NOT NULL DEFAULT 1",
        ),
        Migration(
            4,
            # Every call writes an audit row, so every index here is a page in every commit.
            # The retention sweep was the only reader of at_ms order; it now deletes the
            # oldest rows in the order they were written (seq, the table's own key).
            "DROP INDEX audit_event_at",
        ),
    ),
)

EVENTS: Table[AuditEvent] = Table("audit_event", AuditEvent, key=("seq",), generated=("seq",))


class SqliteAuditStore:
    """Audit events in the ``audit_event`` table."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def append(self, event: AuditEvent) -> int:
        """Append ``event``; return its sequence number."""
        self._conn.execute(*EVENTS.insert(event))
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
        return self.page(AuditQuery(workspace=workspace), limit=limit)

    def page(self, query: AuditQuery, *, limit: int) -> tuple[AuditEvent, ...]:
        """Return up to ``limit`` events matching ``query``, newest first."""
        clauses = ["workspace = ?"]
        args: list[Any] = [query.workspace]
        for column, value in (
            ("actor", query.actor),
            ("operation", query.operation),
            ("outcome", query.outcome),
            ("subject", query.subject),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        if query.since_ms is not None:
            clauses.append("at_ms >= ?")
            args.append(query.since_ms)
        if query.until_ms is not None:
            clauses.append("at_ms < ?")
            args.append(query.until_ms)
        if query.before_seq is not None:
            clauses.append("seq < ?")
            args.append(query.before_seq)
        args.append(limit)
        sql = f"{EVENTS.select()} WHERE {' AND '.join(clauses)} ORDER BY seq DESC LIMIT ?"
        return tuple(EVENTS.from_row(r) for r in self._conn.execute(sql, args))

    def prune(self, before_ms: int, *, limit: int) -> int:
        """Delete up to ``limit`` of the oldest events before ``before_ms``; return the count.

        Oldest in the order written: the run of events from the first one (by ``seq``) up to
        the first not older than ``before_ms``. Rows are written with the clock's time, so
        this is the same set unless the clock stepped back; then older rows behind a newer one
        wait for it (never is a row at or after ``before_ms`` deleted). Each batch reads at
        most ``limit`` rows, by the table's own key.
        """
        self._conn.execute(
            "DELETE FROM audit_event WHERE seq IN (SELECT seq FROM "
            "(SELECT seq, at_ms FROM audit_event ORDER BY seq LIMIT ?) AS head "
            "WHERE at_ms < ? AND seq < coalesce((SELECT min(seq) FROM "
            "(SELECT seq, at_ms FROM audit_event ORDER BY seq LIMIT ?) AS head2 "
            "WHERE at_ms >= ?), 9223372036854775807))",
            (limit, before_ms, limit, before_ms),
        )
        return int(self._conn.changes())
