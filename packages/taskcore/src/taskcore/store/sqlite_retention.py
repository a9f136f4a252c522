"""SQLite implementation of :class:`~taskcore.store.retention_api.RetentionStore`."""

from __future__ import annotations

import apsw

from taskcore.store.retention_api import RetentionRun
from taskcore.store.sqlite import Component, Migration
from taskcore.store.tables import Table

__all__ = ["COMPONENT", "RUNS", "SqliteRetentionStore"]

COMPONENT = Component(
    "retention",
    (
        Migration(
            1,
            """
            CREATE TABLE retention_run (
                name TEXT PRIMARY KEY,
                holder TEXT,
                lease_expires_at_ms INTEGER,
                last_finished_at_ms INTEGER,
                last_report_json TEXT
            ) STRICT;
            """,
        ),
    ),
)


RUNS: Table[RetentionRun] = Table("retention_run", RetentionRun, key=("name",))


class SqliteRetentionStore:
    """The ``retention_run`` table."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def acquire(self, name: str, holder: str, *, now_ms: int, lease_ms: int) -> bool:
        """Take the lease unless another holder's is live."""
        self._conn.execute(
            "INSERT INTO retention_run(name, holder, lease_expires_at_ms) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, "
            "lease_expires_at_ms = excluded.lease_expires_at_ms "
            "WHERE retention_run.holder IS NULL OR retention_run.holder = excluded.holder "
            "OR retention_run.lease_expires_at_ms <= ?",
            (name, holder, now_ms + lease_ms, now_ms),
        )
        return int(self._conn.changes()) == 1

    def finish(self, name: str, holder: str, *, now_ms: int, report_json: str) -> None:
        """Release the lease and keep the report."""
        self._conn.execute(
            "UPDATE retention_run SET holder = NULL, lease_expires_at_ms = NULL, "
            "last_finished_at_ms = ?, last_report_json = ? WHERE name = ? AND holder = ?",
            (now_ms, report_json, name, holder),
        )

    def get(self, name: str) -> RetentionRun | None:
        """Return the state of sweep ``name``, or ``None``."""
        row = self._conn.execute(f"{RUNS.select()} WHERE name = ?", (name,)).fetchone()
        return None if row is None else RUNS.from_row(row)
