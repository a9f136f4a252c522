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
        Migration(
            5,
            # Issue 25 (events): the audit table is the event log. An event says how the call
            # moved its task's status and carries its W3C trace context; a task's trace (the
            # traceparent of the first call that named it with one) is kept beside the log so
            # the task's later calls join that trace.
            """
            ALTER TABLE audit_event ADD COLUMN status_before TEXT;
            ALTER TABLE audit_event ADD COLUMN status_after TEXT;
            ALTER TABLE audit_event ADD COLUMN traceparent TEXT;
            CREATE TABLE audit_task_trace (
                workspace TEXT NOT NULL,
                task_id TEXT NOT NULL,
                traceparent TEXT NOT NULL,
                at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, task_id)
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX audit_task_trace_at ON audit_task_trace(at_ms);
            """,
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

    def append_last(self, event: AuditEvent) -> None:
        """Append ``event`` as the transaction's last write (here: at once)."""
        self._conn.execute(*EVENTS.insert(event))

    def after(
        self, after_seq: int, *, up_to: int, limit: int, workspace: str | None = None
    ) -> tuple[AuditEvent, ...]:
        """Events with ``after_seq < seq <= up_to``, oldest first, at most ``limit``."""
        if workspace is None:
            rows = self._conn.execute(
                f"{EVENTS.select()} WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                (after_seq, up_to, limit),
            )
        else:
            rows = self._conn.execute(
                f"{EVENTS.select()} WHERE workspace = ? AND seq > ? AND seq <= ? "
                "ORDER BY seq LIMIT ?",
                (workspace, after_seq, up_to, limit),
            )
        return tuple(EVENTS.from_row(r) for r in rows)

    def newest_seq(self) -> int:
        """The highest committed ``seq`` (0 when none)."""
        row = self._conn.execute("SELECT max(seq) FROM audit_event").fetchone()
        return 0 if row is None or row[0] is None else int(row[0])

    def oldest_seq(self) -> int | None:
        """The lowest ``seq`` still held, or ``None``."""
        row = self._conn.execute("SELECT min(seq) FROM audit_event").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def settled(self, after_seq: int, limit: int) -> tuple[tuple[int, ...], int, int]:
        """Visible seqs after ``after_seq``; SQLite's single writer commits them in order."""
        rows = self._conn.execute(
            "SELECT seq FROM audit_event WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit)
        )
        return tuple(int(r[0]) for r in rows), 0, 0

    def task_trace(self, workspace: str, task_id: str) -> str | None:
        """The trace recorded for a task, or ``None``."""
        row = self._conn.execute(
            "SELECT traceparent FROM audit_task_trace WHERE workspace = ? AND task_id = ?",
            (workspace, task_id),
        ).fetchone()
        return None if row is None else str(row[0])

    def put_task_trace(self, workspace: str, task_id: str, traceparent: str, at_ms: int) -> None:
        """Record a task's trace unless it has one."""
        self._conn.execute(
            "INSERT INTO audit_task_trace (workspace, task_id, traceparent, at_ms) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (workspace, task_id) DO NOTHING",
            (workspace, task_id, traceparent, at_ms),
        )

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
        most ``limit`` rows, by the table's own key. The newest event is never deleted: an
        ``INTEGER PRIMARY KEY`` would hand its id out again, and event ids (the stream's
        ``Last-Event-ID``) must only grow. Task traces older than ``before_ms`` go too.
        """
        self._conn.execute(
            "DELETE FROM audit_event WHERE seq IN (SELECT seq FROM "
            "(SELECT seq, at_ms FROM audit_event ORDER BY seq LIMIT ?) AS head "
            "WHERE at_ms < ? AND seq < coalesce((SELECT min(seq) FROM "
            "(SELECT seq, at_ms FROM audit_event ORDER BY seq LIMIT ?) AS head2 "
            "WHERE at_ms >= ?), 9223372036854775807) "
            "AND seq < (SELECT max(seq) FROM audit_event))",
            (limit, before_ms, limit, before_ms),
        )
        deleted = int(self._conn.changes())
        self._conn.execute(
            "DELETE FROM audit_task_trace WHERE (workspace, task_id) IN (SELECT workspace, "
            "task_id FROM audit_task_trace WHERE at_ms < ? LIMIT ?)",
            (before_ms, limit),
        )
        return deleted
