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
from taskcore.store.sqlite import Component, Migration, opt_int, opt_str

__all__ = ["COMPONENT", "SqliteJournalStore"]

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

_TASK_COLUMNS = (
    "task_id, task_digest, subject_seq, repository_id, profile_id, change_id, step_id, "
    "plan_index, body, state, next_fence, current_attempt_id, completion, created_at_ms, "
    "updated_at_ms"
)
_ATTEMPT_COLUMNS = (
    "attempt_id, task_id, fence, attempt_digest, body, owner_id, agent_id, state, "
    "lease_expires_at_ms, superseded_by_fence, created_at_ms, updated_at_ms"
)
_ASSERTION_COLUMNS = (
    "attempt_id, task_id, request_id, trust_class, outcome, body, observation_digest, "
    "registration_id, registration_epoch, completes, retained_at_ms"
)
_REQUEST_COLUMNS = (
    "owner_id, agent_id, request_id, kind, request_digest, repository_id, profile_id, task_id, "
    "attempt_id, outcome, recorded_at_ms"
)
_TRANSITION_COLUMNS = (
    "seq, at_ms, task_id, attempt_id, event, from_state, to_state, fence, owner_id, agent_id, "
    "request_id"
)


def _task(row: Any) -> TaskRecord:
    return TaskRecord(
        task_id=str(row[0]),
        task_digest=str(row[1]),
        subject_seq=int(row[2]),
        repository_id=str(row[3]),
        profile_id=str(row[4]),
        change_id=str(row[5]),
        step_id=str(row[6]),
        plan_index=int(row[7]),
        body=bytes(row[8]),
        state=str(row[9]),
        next_fence=int(row[10]),
        current_attempt_id=opt_str(row[11]),
        completion=opt_str(row[12]),
        created_at_ms=int(row[13]),
        updated_at_ms=int(row[14]),
    )


def _attempt(row: Any) -> AttemptRecord:
    return AttemptRecord(
        attempt_id=str(row[0]),
        task_id=str(row[1]),
        fence=int(row[2]),
        attempt_digest=str(row[3]),
        body=bytes(row[4]),
        owner_id=str(row[5]),
        agent_id=str(row[6]),
        state=str(row[7]),
        lease_expires_at_ms=int(row[8]),
        superseded_by_fence=opt_int(row[9]),
        created_at_ms=int(row[10]),
        updated_at_ms=int(row[11]),
    )


def _assertion(row: Any) -> AssertionRecord:
    return AssertionRecord(
        attempt_id=str(row[0]),
        task_id=str(row[1]),
        request_id=str(row[2]),
        trust_class=str(row[3]),
        outcome=str(row[4]),
        body=bytes(row[5]),
        observation_digest=opt_str(row[6]),
        registration_id=opt_str(row[7]),
        registration_epoch=opt_int(row[8]),
        completes=bool(row[9]),
        retained_at_ms=int(row[10]),
    )


def _request(row: Any) -> RequestRecord:
    return RequestRecord(
        owner_id=str(row[0]),
        agent_id=str(row[1]),
        request_id=str(row[2]),
        kind=str(row[3]),
        request_digest=str(row[4]),
        repository_id=str(row[5]),
        profile_id=str(row[6]),
        task_id=str(row[7]),
        attempt_id=opt_str(row[8]),
        outcome=bytes(row[9]),
        recorded_at_ms=int(row[10]),
    )


def _transition(row: Any) -> TransitionRecord:
    return TransitionRecord(
        seq=int(row[0]),
        at_ms=int(row[1]),
        task_id=str(row[2]),
        attempt_id=opt_str(row[3]),
        event=str(row[4]),
        from_state=str(row[5]),
        to_state=str(row[6]),
        fence=opt_int(row[7]),
        owner_id=str(row[8]),
        agent_id=str(row[9]),
        request_id=opt_str(row[10]),
    )


class SqliteJournalStore:
    """Journal rows in the ``journal_*`` tables."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    # -- tasks ---------------------------------------------------------------------------
    def insert_task(self, record: TaskRecord) -> bool:
        """Insert a task; return ``False`` if a task with that ID already exists."""
        self._conn.execute(
            f"INSERT INTO journal_task({_TASK_COLUMNS}) "  # noqa: S608 - constant
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(task_id) DO NOTHING",
            (
                record.task_id,
                record.task_digest,
                record.subject_seq,
                record.repository_id,
                record.profile_id,
                record.change_id,
                record.step_id,
                record.plan_index,
                record.body,
                record.state,
                record.next_fence,
                record.current_attempt_id,
                record.completion,
                record.created_at_ms,
                record.updated_at_ms,
            ),
        )
        return bool(self._conn.changes() == 1)

    def get_task(self, task_id: str) -> TaskRecord | None:
        """Return the task or ``None``."""
        row = self._conn.execute(
            f"SELECT {_TASK_COLUMNS} FROM journal_task WHERE task_id = ?",  # noqa: S608
            (task_id,),
        ).fetchone()
        return None if row is None else _task(row)

    def tasks_of_subject(self, subject_seq: int) -> tuple[TaskRecord, ...]:
        """Return the tasks of one subject in plan order."""
        rows = self._conn.execute(
            f"SELECT {_TASK_COLUMNS} FROM journal_task "  # noqa: S608 - constant
            "WHERE subject_seq = ? ORDER BY plan_index",
            (subject_seq,),
        ).fetchall()
        return tuple(_task(r) for r in rows)

    def update_task(self, record: TaskRecord) -> None:
        """Write the mutable columns of a task (state, fence, attempt, completion, time)."""
        self._conn.execute(
            "UPDATE journal_task SET state = ?, next_fence = ?, current_attempt_id = ?, "
            "completion = ?, updated_at_ms = ? WHERE task_id = ?",
            (
                record.state,
                record.next_fence,
                record.current_attempt_id,
                record.completion,
                record.updated_at_ms,
                record.task_id,
            ),
        )
        if self._conn.changes() != 1:
            raise TaskError(ErrorCode.INTERNAL, "the task to update does not exist")

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
        try:
            self._conn.execute(
                f"INSERT INTO journal_attempt({_ATTEMPT_COLUMNS}) "  # noqa: S608 - constant
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.attempt_id,
                    record.task_id,
                    record.fence,
                    record.attempt_digest,
                    record.body,
                    record.owner_id,
                    record.agent_id,
                    record.state,
                    record.lease_expires_at_ms,
                    record.superseded_by_fence,
                    record.created_at_ms,
                    record.updated_at_ms,
                ),
            )
        except apsw.ConstraintError:
            raise TaskError(
                ErrorCode.CONFLICT, f"fence {record.fence} of this task already has an attempt"
            ) from None

    def get_attempt(self, attempt_id: str) -> AttemptRecord | None:
        """Return the attempt or ``None``."""
        row = self._conn.execute(
            f"SELECT {_ATTEMPT_COLUMNS} FROM journal_attempt WHERE attempt_id = ?",  # noqa: S608
            (attempt_id,),
        ).fetchone()
        return None if row is None else _attempt(row)

    def attempts_of_task(self, task_id: str) -> tuple[AttemptRecord, ...]:
        """Return every attempt of a task, by fence."""
        rows = self._conn.execute(
            f"SELECT {_ATTEMPT_COLUMNS} FROM journal_attempt "  # noqa: S608 - constant
            "WHERE task_id = ? ORDER BY fence",
            (task_id,),
        ).fetchall()
        return tuple(_attempt(r) for r in rows)

    def update_attempt(self, record: AttemptRecord) -> None:
        """Write the mutable columns of an attempt (state, lease expiry, supersession, time)."""
        self._conn.execute(
            "UPDATE journal_attempt SET state = ?, lease_expires_at_ms = ?, "
            "superseded_by_fence = ?, updated_at_ms = ? WHERE attempt_id = ?",
            (
                record.state,
                record.lease_expires_at_ms,
                record.superseded_by_fence,
                record.updated_at_ms,
                record.attempt_id,
            ),
        )
        if self._conn.changes() != 1:
            raise TaskError(ErrorCode.INTERNAL, "the attempt to update does not exist")

    # -- retained results ----------------------------------------------------------------
    def insert_assertion(self, record: AssertionRecord) -> None:
        """Retain a result (one per attempt)."""
        try:
            self._conn.execute(
                f"INSERT INTO journal_assertion({_ASSERTION_COLUMNS}) "  # noqa: S608 - constant
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.attempt_id,
                    record.task_id,
                    record.request_id,
                    record.trust_class,
                    record.outcome,
                    record.body,
                    record.observation_digest,
                    record.registration_id,
                    record.registration_epoch,
                    int(record.completes),
                    record.retained_at_ms,
                ),
            )
        except apsw.ConstraintError:
            raise TaskError(
                ErrorCode.CONFLICT, "this attempt already has a retained result"
            ) from None

    def get_assertion(self, attempt_id: str) -> AssertionRecord | None:
        """Return the retained result of an attempt or ``None``."""
        row = self._conn.execute(
            f"SELECT {_ASSERTION_COLUMNS} FROM journal_assertion "  # noqa: S608 - constant
            "WHERE attempt_id = ?",
            (attempt_id,),
        ).fetchone()
        return None if row is None else _assertion(row)

    # -- idempotency ---------------------------------------------------------------------
    def get_request(self, owner_id: str, agent_id: str, request_id: str) -> RequestRecord | None:
        """Return the request bound to this owner, agent and ID, or ``None``."""
        row = self._conn.execute(
            f"SELECT {_REQUEST_COLUMNS} FROM journal_request "  # noqa: S608 - constant
            "WHERE owner_id = ? AND agent_id = ? AND request_id = ?",
            (owner_id, agent_id, request_id),
        ).fetchone()
        return None if row is None else _request(row)

    def insert_request(self, record: RequestRecord) -> None:
        """Bind a request ID to its request and outcome."""
        try:
            self._conn.execute(
                f"INSERT INTO journal_request({_REQUEST_COLUMNS}) "  # noqa: S608 - constant
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.owner_id,
                    record.agent_id,
                    record.request_id,
                    record.kind,
                    record.request_digest,
                    record.repository_id,
                    record.profile_id,
                    record.task_id,
                    record.attempt_id,
                    record.outcome,
                    record.recorded_at_ms,
                ),
            )
        except apsw.ConstraintError:
            raise TaskError(
                ErrorCode.IDEMPOTENCY_CONFLICT, "this request ID is already bound"
            ) from None

    # -- transition log ------------------------------------------------------------------
    def append_transition(self, record: TransitionRecord) -> int:
        """Append a transition; return its sequence number."""
        self._conn.execute(
            f"INSERT INTO journal_transition({_TRANSITION_COLUMNS}) "  # noqa: S608 - constant
            "VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.at_ms,
                record.task_id,
                record.attempt_id,
                record.event,
                record.from_state,
                record.to_state,
                record.fence,
                record.owner_id,
                record.agent_id,
                record.request_id,
            ),
        )
        return int(self._conn.last_insert_rowid())

    def transitions_of_task(self, task_id: str) -> tuple[TransitionRecord, ...]:
        """Return the transitions of one task, oldest first."""
        rows = self._conn.execute(
            f"SELECT {_TRANSITION_COLUMNS} FROM journal_transition "  # noqa: S608 - constant
            "WHERE task_id = ? ORDER BY seq",
            (task_id,),
        ).fetchall()
        return tuple(_transition(r) for r in rows)

    # -- retention -----------------------------------------------------------------------
    def prune_requests(self, before_ms: int, *, limit: int) -> int:
        """Delete up to ``limit`` idempotency rows recorded before ``before_ms``.

        A row of a task that is still ``claimed`` (its attempt may be retried) is kept.
        """
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
