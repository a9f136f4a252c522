"""SQLite implementation of :class:`~taskcore.store.journal_api.JournalStore`.

The unresolved-task index is partial: it holds only tasks whose attempt is unresolved
(``claimed`` or ``cancelled``), so the prior-subject check before a claim reads one index
range, however many tasks are retained.
"""

from __future__ import annotations

from typing import Any

import apsw

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.journal_api import (
    AssertionRecord,
    AttemptRecord,
    RequestRecord,
    TaskRecord,
    TransitionRecord,
)
from taskcore.store.sqlite import Component, Migration
from taskcore.store.tables import Table

__all__ = [
    "ASSERTIONS",
    "ATTEMPTS",
    "COMPONENT",
    "REQUESTS",
    "TASKS",
    "TRANSITIONS",
    "SqliteJournalStore",
]

COMPONENT = Component(
    "journal",
    (
        Migration(
            1,
            """
            CREATE TABLE journal_task (
                task_id TEXT PRIMARY KEY,
                task_digest TEXT NOT NULL,
                subject_seq INTEGER NOT NULL,
                repository_id TEXT NOT NULL,
                profile_id TEXT NOT NULL,
                change_id TEXT NOT NULL,
                step_id TEXT NOT NULL,
                plan_index INTEGER NOT NULL,
                body BLOB NOT NULL,
                state TEXT NOT NULL
                    CHECK (state IN ('pending', 'claimed', 'finished', 'cancelled')),
                next_fence INTEGER NOT NULL CHECK (next_fence >= 1),
                current_attempt_id TEXT,
                completion TEXT,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX journal_task_subject ON journal_task(subject_seq, plan_index);
            CREATE INDEX journal_task_unresolved
                ON journal_task(repository_id, change_id, profile_id, step_id, subject_seq)
                WHERE state IN ('claimed', 'cancelled');
            CREATE TABLE journal_attempt (
                attempt_id TEXT PRIMARY KEY,
                task_id TEXT NOT NULL REFERENCES journal_task(task_id),
                fence INTEGER NOT NULL CHECK (fence >= 1),
                attempt_digest TEXT NOT NULL,
                body BLOB NOT NULL,
                owner_id TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                state TEXT NOT NULL
                    CHECK (state IN ('leased', 'finished', 'cancelled', 'replaced')),
                lease_expires_at_ms INTEGER NOT NULL,
                superseded_by_fence INTEGER
                    CHECK (superseded_by_fence IS NULL OR superseded_by_fence > fence),
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                UNIQUE (task_id, fence)
            ) STRICT;
            CREATE TABLE journal_assertion (
                attempt_id TEXT PRIMARY KEY REFERENCES journal_attempt(attempt_id),
                task_id TEXT NOT NULL,
                request_id TEXT NOT NULL,
                trust_class TEXT NOT NULL,
                outcome TEXT NOT NULL,
                body BLOB NOT NULL,
                observation_digest TEXT,
                registration_id TEXT,
                registration_epoch INTEGER,
                completes INTEGER NOT NULL CHECK (completes IN (0, 1)),
                retained_at_ms INTEGER NOT NULL
            ) STRICT;
            CREATE TABLE journal_request (
                owner_id TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                request_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                request_digest TEXT NOT NULL,
                repository_id TEXT NOT NULL,
                profile_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                attempt_id TEXT,
                outcome BLOB NOT NULL,
                recorded_at_ms INTEGER NOT NULL,
                PRIMARY KEY (owner_id, agent_id, request_id)
            ) STRICT;
            CREATE TABLE journal_transition (
                seq INTEGER PRIMARY KEY,
                at_ms INTEGER NOT NULL,
                task_id TEXT NOT NULL,
                attempt_id TEXT,
                event TEXT NOT NULL,
                from_state TEXT NOT NULL,
                to_state TEXT NOT NULL,
                fence INTEGER,
                owner_id TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                request_id TEXT
            ) STRICT;
            CREATE INDEX journal_transition_task ON journal_transition(task_id, seq);
            """,
        ),
        # Retention: oldest-first ranges for the sweep of idempotency rows and transitions.
        Migration(
            2,
            """
            CREATE INDEX journal_request_recorded ON journal_request(recorded_at_ms);
            CREATE INDEX journal_transition_at ON journal_transition(at_ms);
            """,
        ),
    ),
)

TASKS: Table[TaskRecord] = Table("journal_task", TaskRecord, key=("task_id",))
ATTEMPTS: Table[AttemptRecord] = Table("journal_attempt", AttemptRecord, key=("attempt_id",))
ASSERTIONS: Table[AssertionRecord] = Table(
    "journal_assertion", AssertionRecord, key=("attempt_id",)
)
REQUESTS: Table[RequestRecord] = Table(
    "journal_request", RequestRecord, key=("owner_id", "agent_id", "request_id")
)
TRANSITIONS: Table[TransitionRecord] = Table(
    "journal_transition", TransitionRecord, key=("seq",), generated=("seq",)
)

# The columns an update without the row's earlier version writes (identity never changes).
_TASK_MUTABLE = ("state", "next_fence", "current_attempt_id", "completion", "updated_at_ms")
_ATTEMPT_MUTABLE = ("state", "lease_expires_at_ms", "superseded_by_fence", "updated_at_ms")


_MISSING = object()


class SqliteJournalStore:
    """Journal rows in the ``journal_*`` tables.

    A task, attempt or idempotency row read by its key is memoised for the rest of the
    transaction (or seeded by :mod:`taskcore.store.callrows`); any write through this store
    forgets them. Every write to the ``journal_*`` tables goes through this store.
    """

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn
        self._memo: dict[tuple[Any, ...], Any] = {}

    def reset(self) -> None:
        """Start a new transaction: forget the rows memoised."""
        self._memo.clear()

    def seed(self, key: tuple[Any, ...], row: Any) -> None:
        """Remember a row read for this store (``taskcore.store.callrows``) under ``key``."""
        self._memo[key] = row

    def _one(self, key: tuple[Any, ...], sql: str, args: tuple[Any, ...]) -> Any:
        """One row by its key: memoised for the rest of the transaction (writes forget it)."""
        row = self._memo.get(key, _MISSING)
        if row is _MISSING:
            row = self._memo[key] = self._conn.execute(sql, args).fetchone()
        return row

    def _update(
        self, table: Table[Any], record: Any, before: Any | None, mutable: tuple[str, ...]
    ) -> None:
        self._memo.clear()
        if before is None:
            statement = table.update_columns(record, mutable)
        else:
            found = table.update(before, record)
            if found is None:
                return
            statement = found
        self._conn.execute(*statement)
        if self._conn.changes() != 1:
            raise TaskError(ErrorCode.INTERNAL, f"the {table.name} row to update does not exist")

    # -- tasks ---------------------------------------------------------------------------
    def insert_task(self, record: TaskRecord) -> bool:
        """Insert a task; return ``False`` if a task with that ID already exists."""
        self._memo.clear()
        self._conn.execute(*TASKS.insert(record, suffix="ON CONFLICT(task_id) DO NOTHING"))
        return bool(self._conn.changes() == 1)

    def get_task(self, task_id: str) -> TaskRecord | None:
        """Return the task or ``None``."""
        row = self._one(("task", task_id), f"{TASKS.select()} WHERE task_id = ?", (task_id,))
        return None if row is None else TASKS.from_row(row)

    def tasks_of_subject(self, subject_seq: int) -> tuple[TaskRecord, ...]:
        """Return the tasks of one subject in plan order."""
        rows = self._conn.execute(
            f"{TASKS.select()} WHERE subject_seq = ? ORDER BY plan_index", (subject_seq,)
        ).fetchall()
        return tuple(TASKS.from_row(r) for r in rows)

    def update_task(self, record: TaskRecord, *, before: TaskRecord | None = None) -> None:
        """Write a task's changed columns (since ``before``), else its mutable columns."""
        self._update(TASKS, record, before, _TASK_MUTABLE)

    def unresolved_prior_task(
        self,
        *,
        repository_id: str,
        change_id: str,
        profile_id: str,
        step_id: str,
        before_subject_seq: int,
        scan_limit: int,
    ) -> str | None:
        """Return the newest older task of that key whose attempt is unresolved, or ``None``.

        The partial index holds unresolved tasks only, so at most ``scan_limit`` retained
        identities are examined and in practice one index probe answers.
        """
        row = self._conn.execute(
            "SELECT task_id FROM journal_task INDEXED BY journal_task_unresolved "
            "WHERE repository_id = ? AND change_id = ? AND profile_id = ? AND step_id = ? "
            "AND subject_seq < ? AND state IN ('claimed', 'cancelled') "
            "ORDER BY subject_seq DESC LIMIT ?",
            (repository_id, change_id, profile_id, step_id, before_subject_seq, scan_limit),
        ).fetchone()
        return None if row is None else str(row[0])

    def count_tasks(self) -> int:
        """Count every retained task."""
        row = self._conn.execute("SELECT COUNT(*) FROM journal_task").fetchone()
        return int(row[0]) if row else 0

    # -- attempts ------------------------------------------------------------------------
    def insert_attempt(self, record: AttemptRecord) -> None:
        """Insert an attempt (one per task and fence; a duplicate fence is an error)."""
        self._memo.clear()
        try:
            self._conn.execute(*ATTEMPTS.insert(record))
        except apsw.ConstraintError:
            raise TaskError(
                ErrorCode.CONFLICT, f"fence {record.fence} of this task already has an attempt"
            ) from None

    def get_attempt(self, attempt_id: str) -> AttemptRecord | None:
        """Return the attempt or ``None``."""
        row = self._one(
            ("attempt", attempt_id), f"{ATTEMPTS.select()} WHERE attempt_id = ?", (attempt_id,)
        )
        return None if row is None else ATTEMPTS.from_row(row)

    def attempts_of_task(self, task_id: str) -> tuple[AttemptRecord, ...]:
        """Return every attempt of a task, by fence."""
        rows = self._conn.execute(
            f"{ATTEMPTS.select()} WHERE task_id = ? ORDER BY fence", (task_id,)
        ).fetchall()
        return tuple(ATTEMPTS.from_row(r) for r in rows)

    def update_attempt(self, record: AttemptRecord, *, before: AttemptRecord | None = None) -> None:
        """Write an attempt's changed columns (since ``before``), else its mutable columns."""
        self._update(ATTEMPTS, record, before, _ATTEMPT_MUTABLE)

    # -- retained results ----------------------------------------------------------------
    def insert_assertion(self, record: AssertionRecord) -> None:
        """Retain a result (one per attempt)."""
        self._memo.clear()
        try:
            self._conn.execute(*ASSERTIONS.insert(record))
        except apsw.ConstraintError:
            raise TaskError(
                ErrorCode.CONFLICT, "this attempt already has a retained result"
            ) from None

    def get_assertion(self, attempt_id: str) -> AssertionRecord | None:
        """Return the retained result of an attempt or ``None``."""
        row = self._conn.execute(
            f"{ASSERTIONS.select()} WHERE attempt_id = ?", (attempt_id,)
        ).fetchone()
        return None if row is None else ASSERTIONS.from_row(row)

    # -- idempotency ---------------------------------------------------------------------
    def get_request(self, owner_id: str, agent_id: str, request_id: str) -> RequestRecord | None:
        """Return the request bound to this owner, agent and ID, or ``None``."""
        row = self._one(
            ("request", owner_id, agent_id, request_id),
            f"{REQUESTS.select()} WHERE owner_id = ? AND agent_id = ? AND request_id = ?",
            (owner_id, agent_id, request_id),
        )
        return None if row is None else REQUESTS.from_row(row)

    def insert_request(self, record: RequestRecord) -> None:
        """Bind a request ID to its request and outcome."""
        self._memo.clear()
        try:
            self._conn.execute(*REQUESTS.insert(record))
        except apsw.ConstraintError:
            raise TaskError(
                ErrorCode.IDEMPOTENCY_CONFLICT, "this request ID is already bound"
            ) from None

    # -- transition log ------------------------------------------------------------------
    def append_transition(self, record: TransitionRecord) -> int:
        """Append a transition; return its sequence number."""
        self._conn.execute(*TRANSITIONS.insert(record))
        return int(self._conn.last_insert_rowid())

    def transitions_of_task(self, task_id: str) -> tuple[TransitionRecord, ...]:
        """Return the transitions of one task, oldest first."""
        rows = self._conn.execute(
            f"{TRANSITIONS.select()} WHERE task_id = ? ORDER BY seq", (task_id,)
        ).fetchall()
        return tuple(TRANSITIONS.from_row(r) for r in rows)

    # -- retention -----------------------------------------------------------------------
    def prune_requests(self, before_ms: int, *, limit: int) -> int:
        """Delete up to ``limit`` idempotency rows recorded before ``before_ms``.

        A row of a task that is still ``claimed`` (its attempt may be retried) is kept.
        """
        self._memo.clear()
        self._conn.execute(
            "DELETE FROM journal_request WHERE rowid IN (SELECT q.rowid FROM journal_request q "
            "WHERE q.recorded_at_ms < ? AND NOT EXISTS (SELECT 1 FROM journal_task t "
            "WHERE t.task_id = q.task_id AND t.state = 'claimed') "
            "ORDER BY q.recorded_at_ms LIMIT ?)",
            (before_ms, limit),
        )
        return int(self._conn.changes())

    def prune_transitions(self, before_ms: int, *, limit: int) -> int:
        """Delete up to ``limit`` transition rows before ``before_ms`` of tasks not ``claimed``."""
        self._conn.execute(
            "DELETE FROM journal_transition WHERE seq IN (SELECT r.seq FROM journal_transition r "
            "WHERE r.at_ms < ? AND NOT EXISTS (SELECT 1 FROM journal_task t "
            "WHERE t.task_id = r.task_id AND t.state = 'claimed') ORDER BY r.at_ms LIMIT ?)",
            (before_ms, limit),
        )
        return int(self._conn.changes())

    # -- health --------------------------------------------------------------------------
    def integrity_errors(self) -> tuple[str, ...]:
        """Run a full integrity check of the journal file; return its complaints (none: ok)."""
        rows = self._conn.execute("PRAGMA integrity_check").fetchall()
        found = tuple(str(r[0]) for r in rows)
        return () if found == ("ok",) else found
