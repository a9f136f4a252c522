"""SQLite implementation of :class:`~taskcore.store.queue_api.QueueStore`.

Schema notes:

* ``queue_task`` carries the seed's terminal backstop as a ``CHECK``: ``finished_at_ms`` is
  set if and only if the status is ``DONE``, ``FAILED`` or ``CANCELLED``; and the lease
  lifecycle is all-or-nothing (a lease owner exactly when ``LEASED``).
* ``claimNext`` stays flat as the queue grows: the partial indexes ``queue_task_ready`` and
  ``queue_task_ready_verb`` hold only ``QUEUED`` rows, ordered by
  ``(workspace, [verb,] autonomy_ceiling, priority DESC, created_at_ms, seq)``, so the best
  task of one autonomy ceiling is the first index entry. Autonomy levels are ``0..3``, so the
  best admitted task is the best of at most four index probes, plus one probe of the
  ``LEASED`` rows whose lease expired (``queue_task_leases``, as many entries as workers).
  ``tests/taskcore/store/test_sqlite_queue.py`` pins the query plans.
* On SQLite the writer is serialized by ``BEGIN IMMEDIATE``; that is what PostgreSQL's
  ``FOR UPDATE SKIP LOCKED`` gives the seed: concurrent drainers each win a distinct task.
"""

from __future__ import annotations

import functools
from typing import Any

import apsw
import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.queue_api import (
    ApprovalGateRecord,
    ExtPatch,
    ExtRecord,
    MatterReaderRecord,
    MatterRecord,
    PhaseRecord,
    QueueCount,
    TaskRecord,
    VerbRecord,
)
from taskcore.store.sqlite import Component, Migration, opt_str
from taskcore.store.tables import Table

__all__ = ["COMPONENT", "EXTS", "GATES", "PHASES", "TASKS", "SqliteQueueStore"]

COMPONENT = Component(
    "queue",
    (
        Migration(
            1,
            """
            CREATE TABLE queue_task (
                seq INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                verb TEXT NOT NULL,
                payload_json TEXT,
                status TEXT NOT NULL CHECK (status IN
                    ('QUEUED', 'LEASED', 'ESCALATED', 'DONE', 'FAILED', 'CANCELLED')),
                priority INTEGER NOT NULL,
                autonomy_ceiling INTEGER NOT NULL CHECK (autonomy_ceiling BETWEEN 0 AND 3),
                depth INTEGER NOT NULL CHECK (depth BETWEEN 0 AND 5),
                parent_task_id TEXT,
                run_id TEXT,
                matter_id TEXT,
                matter_step_id TEXT,
                created_by TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                finished_at_ms INTEGER,
                lease_owner TEXT,
                lease_expires_at_ms INTEGER,
                heartbeat_at_ms INTEGER,
                lease_extensions INTEGER NOT NULL CHECK (lease_extensions >= 0),
                first_leased_at_ms INTEGER,
                fence INTEGER NOT NULL CHECK (fence >= 0),
                exercised_autonomy INTEGER,
                checkpoint_json TEXT,
                last_error TEXT,
                escalation_gate_id TEXT,
                version INTEGER NOT NULL,
                CHECK ((status IN ('DONE', 'FAILED', 'CANCELLED')) = (finished_at_ms IS NOT NULL)),
                CHECK ((status = 'LEASED') = (lease_owner IS NOT NULL)),
                CHECK ((lease_owner IS NULL) = (lease_expires_at_ms IS NULL)),
                CHECK ((lease_owner IS NULL) = (first_leased_at_ms IS NULL))
            ) STRICT;
            CREATE INDEX queue_task_ready ON queue_task
                (workspace, autonomy_ceiling, priority DESC, created_at_ms, seq)
                WHERE status = 'QUEUED';
            CREATE INDEX queue_task_ready_verb ON queue_task
                (workspace, verb, autonomy_ceiling, priority DESC, created_at_ms, seq)
                WHERE status = 'QUEUED';
            CREATE INDEX queue_task_leases ON queue_task (workspace, lease_expires_at_ms)
                WHERE status = 'LEASED';
            CREATE INDEX queue_task_workspace ON queue_task (workspace, seq);
            CREATE INDEX queue_task_status ON queue_task (workspace, status, seq);
            CREATE INDEX queue_task_matter ON queue_task (workspace, matter_id, seq);

            CREATE TABLE queue_verb (
                workspace TEXT NOT NULL,
                verb TEXT NOT NULL,
                description TEXT NOT NULL,
                registered_by TEXT NOT NULL,
                registered_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, verb)
            ) STRICT;

            CREATE TABLE queue_matter (
                workspace TEXT NOT NULL,
                matter_id TEXT NOT NULL,
                objective TEXT,
                created_by TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, matter_id)
            ) STRICT;

            CREATE TABLE queue_matter_reader (
                workspace TEXT NOT NULL,
                matter_id TEXT NOT NULL,
                reader TEXT NOT NULL,
                granted_by TEXT NOT NULL,
                granted_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, matter_id, reader),
                FOREIGN KEY (workspace, matter_id) REFERENCES queue_matter (workspace, matter_id)
            ) STRICT;

            CREATE TABLE queue_approval_gate (
                gate_id TEXT PRIMARY KEY,
                workspace TEXT NOT NULL,
                task_id TEXT NOT NULL REFERENCES queue_task (task_id),
                target_verb TEXT,
                input_hash TEXT,
                reason TEXT,
                status TEXT NOT NULL CHECK (status IN
                    ('PENDING', 'APPROVED', 'REJECTED', 'CONSUMED', 'VOIDED')),
                requested_by TEXT NOT NULL,
                requested_at_ms INTEGER NOT NULL,
                decided_by TEXT,
                decided_at_ms INTEGER,
                decision_note TEXT,
                consumed_by TEXT,
                consumed_at_ms INTEGER,
                consumed_fence INTEGER,
                version INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX queue_approval_gate_task ON queue_approval_gate (workspace, task_id);

            CREATE TABLE queue_checkpoint (
                seq INTEGER PRIMARY KEY,
                workspace TEXT NOT NULL,
                task_id TEXT NOT NULL REFERENCES queue_task (task_id),
                phase_index INTEGER NOT NULL CHECK (phase_index >= 0),
                phase_key TEXT NOT NULL,
                state_json TEXT NOT NULL,
                outputs_json TEXT NOT NULL,
                written_by TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                UNIQUE (task_id, phase_index)
            ) STRICT;
            CREATE INDEX queue_checkpoint_created ON queue_checkpoint (created_at_ms);

            CREATE TABLE queue_task_ext (
                agent_task_id TEXT PRIMARY KEY REFERENCES queue_task (task_id),
                workspace TEXT NOT NULL,
                title TEXT NOT NULL,
                prompt TEXT NOT NULL,
                source_type TEXT NOT NULL,
                source_id TEXT,
                source_matter_id TEXT,
                source_step_id TEXT,
                child_key TEXT,
                priority INTEGER NOT NULL,
                requires_human_review INTEGER NOT NULL CHECK (requires_human_review IN (0, 1)),
                waiting_for_children INTEGER NOT NULL CHECK (waiting_for_children IN (0, 1)),
                declared_child_keys_json TEXT NOT NULL,
                claim_token_hash TEXT CHECK (claim_token_hash IS NULL OR
                    (length(claim_token_hash) = 64 AND claim_token_hash NOT GLOB '*[^0-9a-f]*')),
                claimed_at_ms INTEGER,
                cost_usd REAL,
                duration_ms INTEGER,
                tool_call_count INTEGER,
                result_json TEXT,
                progress_text TEXT,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT;
            """,
        ),
        Migration(
            2,
            # Only matter tasks need an entry: listing a matter's tasks reads it, listing the
            # tasks outside any matter reads queue_task_workspace. One page fewer per create.
            """
            DROP INDEX queue_task_matter;
            CREATE INDEX queue_task_matter ON queue_task (workspace, matter_id, seq)
                WHERE matter_id IS NOT NULL;
            """,
        ),
        Migration(
            3,
            # Only settled tasks (escalated or terminal) need an entry: a listing by status
            # QUEUED reads queue_task_workspace (an expired lease is QUEUED too), one by LEASED
            # queue_task_leases, as they did before. One page fewer per create and per claim.
            # The predicate is written as ORs, the form SQLite's planner proves `status = ?`
            # (a bound settled status) implies.
            """
            DROP INDEX queue_task_status;
            CREATE INDEX queue_task_status ON queue_task (workspace, status, seq)
                WHERE status = 'ESCALATED' OR status = 'DONE' OR status = 'FAILED'
                    OR status = 'CANCELLED';
            """,
        ),
    ),
)

TASKS: Table[TaskRecord] = Table(
    "queue_task", TaskRecord, key=("workspace", "task_id"), generated=("seq",)
)
GATES: Table[ApprovalGateRecord] = Table(
    "queue_approval_gate", ApprovalGateRecord, key=("workspace", "gate_id")
)
EXTS: Table[ExtRecord] = Table("queue_task_ext", ExtRecord, key=("workspace", "agent_task_id"))
PHASES: Table[PhaseRecord] = Table(
    "queue_checkpoint", PhaseRecord, key=("workspace", "task_id", "phase_index")
)

_TASK_SELECT = TASKS.select()

# Columns an update may change (identity, workspace, lineage and creation never change).
_TASK_MUTABLE = (
    "payload_json",
    "status",
    "priority",
    "updated_at_ms",
    "finished_at_ms",
    "lease_owner",
    "lease_expires_at_ms",
    "heartbeat_at_ms",
    "lease_extensions",
    "first_leased_at_ms",
    "fence",
    "exercised_autonomy",
    "checkpoint_json",
    "last_error",
    "escalation_gate_id",
)


@functools.cache
def _task_update_sql(columns: tuple[str, ...]) -> str:
    """The compare-and-set ``UPDATE`` of ``columns`` (a subset of the mutable ones).

    >>> _task_update_sql(("status", "fence")).split(" WHERE ")[0]
    'UPDATE queue_task SET status = ?, fence = ?, version = version + 1'
    """
    sets = "".join(f"{c} = ?, " for c in columns)
    return (
        f"UPDATE queue_task SET {sets}version = version + 1 "  # noqa: S608 - constant names
        "WHERE workspace = ? AND task_id = ? AND version = ?"
    )


_TASK_UPDATE = _task_update_sql(_TASK_MUTABLE)
_ORDER = "ORDER BY priority DESC, created_at_ms, seq LIMIT 1"
_KEY = "priority, created_at_ms, seq"  # the claimNext ordering key, covered by the indexes
_READY_PROBE = (
    f"SELECT {_KEY} FROM queue_task INDEXED BY queue_task_ready "  # noqa: S608 - constant
    f"WHERE workspace = ? AND status = 'QUEUED' AND autonomy_ceiling = ? {_ORDER}"
)
_READY_VERB_PROBE = (
    f"SELECT {_KEY} FROM queue_task INDEXED BY queue_task_ready_verb "  # noqa: S608 - constant
    f"WHERE workspace = ? AND verb = ? AND status = 'QUEUED' AND autonomy_ceiling = ? {_ORDER}"
)
_LEASE_PROBE_WHERE = (
    f"SELECT {_KEY} FROM queue_task INDEXED BY queue_task_leases "  # noqa: S608 - constant
    "WHERE workspace = ? AND status = 'LEASED' AND lease_expires_at_ms <= ? "
    "AND autonomy_ceiling BETWEEN ? AND ?"
)
_LEASE_PROBE = f"{_LEASE_PROBE_WHERE} {_ORDER}"
_LEASE_VERB_PROBE = f"{_LEASE_PROBE_WHERE} AND verb = ? {_ORDER}"


@functools.cache
def _claim_sql(ceilings: int, by_verb: bool) -> str:
    """``claimNext``'s one statement: ``ceilings`` ready probes and the expired-lease probe.

    >>> _claim_sql(0, False).count("INDEXED BY")
    1
    >>> _claim_sql(3, True).count("INDEXED BY queue_task_ready_verb")
    3
    """
    ready = _READY_VERB_PROBE if by_verb else _READY_PROBE
    lease = _LEASE_VERB_PROBE if by_verb else _LEASE_PROBE
    # Constant fragments only; every value is a bound parameter.
    probes = [f"SELECT * FROM ({ready})"] * ceilings + [f"SELECT * FROM ({lease})"]  # noqa: S608
    union = " UNION ALL ".join(probes)
    return f"{_TASK_SELECT} WHERE seq = (SELECT seq FROM ({union}) {_ORDER})"  # noqa: S608


def _is_unique(exc: apsw.ConstraintError) -> bool:
    return "UNIQUE" in str(exc) or "PRIMARY KEY" in str(exc)


class SqliteQueueStore:
    """The queue tables on one apsw connection (inside the caller's transaction)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def _one(self, sql: str, args: tuple[Any, ...]) -> Any:
        return self._conn.execute(sql, args).fetchone()

    # -- tasks ------------------------------------------------------------------------------
    def insert_task(self, task: TaskRecord) -> TaskRecord:
        """Insert a new task; return it with its assigned ``seq``."""
        try:
            self._conn.execute(*TASKS.insert(task))
        except apsw.ConstraintError as exc:
            if not _is_unique(exc):
                raise  # a CHECK backstop tripped: a bug, never an input error
            raise TaskError(ErrorCode.ALREADY_EXISTS, "a task with this id exists") from None
        seq = int(self._conn.last_insert_rowid())
        return attrs.evolve(task, seq=seq)

    def get_task(self, workspace: str, task_id: str) -> TaskRecord | None:
        """Return the task of ``workspace`` with ``task_id``, or ``None``."""
        row = self._one(f"{_TASK_SELECT} WHERE workspace = ? AND task_id = ?", (workspace, task_id))
        return None if row is None else TASKS.from_row(row)

    def update_task(self, task: TaskRecord, *, before: TaskRecord | None = None) -> bool:
        """Write ``task`` if the row still has ``task.version``; bump the version.

        With ``before`` (the row as read in this transaction; ``task`` is then its next
        version, ``before.version + 1``) only the columns that differ are written, so SQLite
        rewrites only the indexes over those columns; without it every mutable column.
        """
        if before is None:
            values = tuple(getattr(task, c) for c in _TASK_MUTABLE)
            self._conn.execute(_TASK_UPDATE, (*values, task.workspace, task.task_id, task.version))
            return bool(self._conn.changes() == 1)
        if (before.workspace, before.task_id, before.version + 1) != (
            task.workspace,
            task.task_id,
            task.version,
        ):
            raise TaskError(ErrorCode.INTERNAL, "an update names another row or version")
        changed = tuple(c for c in _TASK_MUTABLE if getattr(task, c) != getattr(before, c))
        values = tuple(getattr(task, c) for c in changed)
        self._conn.execute(
            _task_update_sql(changed), (*values, task.workspace, task.task_id, before.version)
        )
        return bool(self._conn.changes() == 1)

    def best_claimable(
        self, workspace: str, *, max_autonomy: int, autonomy: int, verb: str | None, now_ms: int
    ) -> TaskRecord | None:
        """Return the task ``claimNext`` should take (see the protocol), or ``None``."""
        # One statement: a covering probe per autonomy ceiling (the ordering key only, each
        # one index search) and one for expired leases, the best key picked in SQL, and only
        # the winner's row fetched.
        ceilings = range(autonomy, max_autonomy + 1)
        args: list[Any] = []
        for ceiling in ceilings:
            args += [workspace, ceiling] if verb is None else [workspace, verb, ceiling]
        args += [workspace, now_ms, autonomy, max_autonomy]
        if verb is not None:
            args.append(verb)
        best = self._one(_claim_sql(len(ceilings), verb is not None), tuple(args))
        return None if best is None else TASKS.from_row(best)

    def list_tasks(
        self,
        workspace: str,
        *,
        status: str | None,
        matter_id: str | None,
        non_matter_only: bool,
        after_seq: int | None,
        limit: int,
        now_ms: int,
    ) -> tuple[TaskRecord, ...]:
        """Return up to ``limit`` tasks in insertion order (see the protocol)."""
        clauses = ["workspace = ?"]
        args: list[Any] = [workspace]
        if status == "QUEUED":
            clauses.append(
                "(status = 'QUEUED' OR (status = 'LEASED' AND lease_expires_at_ms <= ?))"
            )
            args.append(now_ms)
        elif status == "LEASED":
            clauses.append("status = 'LEASED' AND lease_expires_at_ms > ?")
            args.append(now_ms)
        elif status is not None:
            clauses.append("status = ?")
            args.append(status)
        if matter_id is not None:
            clauses.append("matter_id = ?")
            args.append(matter_id)
        elif non_matter_only:
            clauses.append("matter_id IS NULL")
        if after_seq is not None:
            clauses.append("seq > ?")
            args.append(after_seq)
        args.append(limit)
        sql = f"{_TASK_SELECT} WHERE {' AND '.join(clauses)} ORDER BY seq LIMIT ?"
        return tuple(TASKS.from_row(r) for r in self._conn.execute(sql, args))

    # -- carrier verbs ----------------------------------------------------------------------
    def get_verb(self, workspace: str, verb: str) -> VerbRecord | None:
        """Return the registered verb, or ``None``."""
        row = self._one(
            "SELECT workspace, verb, description, registered_by, registered_at_ms "
            "FROM queue_verb WHERE workspace = ? AND verb = ?",
            (workspace, verb),
        )
        if row is None:
            return None
        return VerbRecord(
            workspace=str(row[0]),
            verb=str(row[1]),
            description=str(row[2]),
            registered_by=str(row[3]),
            registered_at_ms=int(row[4]),
        )

    def insert_verb(self, record: VerbRecord) -> None:
        """Register a verb."""
        self._conn.execute(
            "INSERT INTO queue_verb (workspace, verb, description, registered_by, "
            "registered_at_ms) VALUES (?, ?, ?, ?, ?)",
            (
                record.workspace,
                record.verb,
                record.description,
                record.registered_by,
                record.registered_at_ms,
            ),
        )

    def list_verbs(self, workspace: str) -> tuple[VerbRecord, ...]:
        """Return the registered verbs of ``workspace``, sorted by name."""
        rows = self._conn.execute(
            "SELECT workspace, verb, description, registered_by, registered_at_ms "
            "FROM queue_verb WHERE workspace = ? ORDER BY verb",
            (workspace,),
        )
        return tuple(
            VerbRecord(
                workspace=str(r[0]),
                verb=str(r[1]),
                description=str(r[2]),
                registered_by=str(r[3]),
                registered_at_ms=int(r[4]),
            )
            for r in rows
        )

    # -- matters ----------------------------------------------------------------------------
    def insert_matter(self, record: MatterRecord) -> None:
        """Create a matter."""
        try:
            self._conn.execute(
                "INSERT INTO queue_matter (workspace, matter_id, objective, created_by, "
                "created_at_ms) VALUES (?, ?, ?, ?, ?)",
                (
                    record.workspace,
                    record.matter_id,
                    record.objective,
                    record.created_by,
                    record.created_at_ms,
                ),
            )
        except apsw.ConstraintError as exc:
            if not _is_unique(exc):
                raise
            raise TaskError(ErrorCode.ALREADY_EXISTS, "a matter with this id exists") from None

    def get_matter(self, workspace: str, matter_id: str) -> MatterRecord | None:
        """Return the matter, or ``None``."""
        row = self._one(
            "SELECT workspace, matter_id, objective, created_by, created_at_ms "
            "FROM queue_matter WHERE workspace = ? AND matter_id = ?",
            (workspace, matter_id),
        )
        if row is None:
            return None
        return MatterRecord(
            workspace=str(row[0]),
            matter_id=str(row[1]),
            objective=opt_str(row[2]),
            created_by=str(row[3]),
            created_at_ms=int(row[4]),
        )

    def add_reader(self, record: MatterReaderRecord) -> bool:
        """Grant read; return whether the grant is new."""
        self._conn.execute(
            "INSERT INTO queue_matter_reader (workspace, matter_id, reader, granted_by, "
            "granted_at_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                record.workspace,
                record.matter_id,
                record.reader,
                record.granted_by,
                record.granted_at_ms,
            ),
        )
        return bool(self._conn.changes() == 1)

    def remove_reader(self, workspace: str, matter_id: str, reader: str) -> bool:
        """Withdraw a grant; return whether one existed."""
        self._conn.execute(
            "DELETE FROM queue_matter_reader WHERE workspace = ? AND matter_id = ? AND reader = ?",
            (workspace, matter_id, reader),
        )
        return bool(self._conn.changes() == 1)

    def is_reader(self, workspace: str, matter_id: str, reader: str) -> bool:
        """Return whether ``reader`` holds a read grant on the matter."""
        row = self._one(
            "SELECT 1 FROM queue_matter_reader WHERE workspace = ? AND matter_id = ? "
            "AND reader = ?",
            (workspace, matter_id, reader),
        )
        return row is not None

    def list_readers(self, workspace: str, matter_id: str) -> tuple[str, ...]:
        """Return the readers of a matter, sorted."""
        rows = self._conn.execute(
            "SELECT reader FROM queue_matter_reader WHERE workspace = ? AND matter_id = ? "
            "ORDER BY reader",
            (workspace, matter_id),
        )
        return tuple(str(r[0]) for r in rows)

    # -- approval gates ---------------------------------------------------------------------
    def insert_gate(self, record: ApprovalGateRecord) -> None:
        """Store a new approval gate."""
        self._conn.execute(*GATES.insert(record))

    def get_gate(self, workspace: str, gate_id: str) -> ApprovalGateRecord | None:
        """Return the approval gate, or ``None``."""
        row = self._one(
            f"{GATES.select()} WHERE workspace = ? AND gate_id = ?",
            (workspace, gate_id),
        )
        return None if row is None else GATES.from_row(row)

    def update_gate(self, record: ApprovalGateRecord) -> bool:
        """Write the gate if it still has ``record.version``; bump the version."""
        self._conn.execute(
            "UPDATE queue_approval_gate SET status = ?, decided_by = ?, decided_at_ms = ?, "
            "decision_note = ?, consumed_by = ?, consumed_at_ms = ?, consumed_fence = ?, "
            "version = version + 1 WHERE workspace = ? AND gate_id = ? AND version = ?",
            (
                record.status,
                record.decided_by,
                record.decided_at_ms,
                record.decision_note,
                record.consumed_by,
                record.consumed_at_ms,
                record.consumed_fence,
                record.workspace,
                record.gate_id,
                record.version,
            ),
        )
        return bool(self._conn.changes() == 1)

    # -- per-phase checkpoints --------------------------------------------------------------
    def next_phase_index(self, workspace: str, task_id: str) -> int:
        """Return one more than the task's highest phase index (0 for the first)."""
        row = self._one(
            "SELECT MAX(phase_index) FROM queue_checkpoint WHERE workspace = ? AND task_id = ?",
            (workspace, task_id),
        )
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def insert_phase(self, record: PhaseRecord) -> None:
        """Append a phase checkpoint."""
        try:
            self._conn.execute(*PHASES.insert(record))
        except apsw.ConstraintError as exc:
            if not _is_unique(exc):
                raise
            raise TaskError(
                ErrorCode.CONFLICT, "another writer took this phase index; retry the write"
            ) from None

    def latest_phase(self, workspace: str, task_id: str) -> PhaseRecord | None:
        """Return the task's phase checkpoint with the highest index, or ``None``."""
        row = self._one(
            f"{PHASES.select()} "
            "WHERE workspace = ? AND task_id = ? ORDER BY phase_index DESC LIMIT 1",
            (workspace, task_id),
        )
        return None if row is None else PHASES.from_row(row)

    def clear_phases(self, workspace: str, task_id: str) -> int:
        """Delete every phase checkpoint of the task; return how many were deleted."""
        self._conn.execute(
            "DELETE FROM queue_checkpoint WHERE workspace = ? AND task_id = ?",
            (workspace, task_id),
        )
        return int(self._conn.changes())

    def prune_phases(self, before_ms: int, *, workspace: str | None) -> int:
        """Delete phase checkpoints created before ``before_ms`` in ``workspace`` (or all)."""
        if workspace is None:
            self._conn.execute("DELETE FROM queue_checkpoint WHERE created_at_ms < ?", (before_ms,))
        else:
            self._conn.execute(
                "DELETE FROM queue_checkpoint WHERE workspace = ? AND created_at_ms < ?",
                (workspace, before_ms),
            )
        return int(self._conn.changes())

    # -- ext rows ---------------------------------------------------------------------------
    def insert_ext(self, record: ExtRecord) -> None:
        """Store the ext row of a task."""
        try:
            self._conn.execute(*EXTS.insert(record))
        except apsw.ConstraintError as exc:
            if "FOREIGN KEY" in str(exc):
                raise TaskError(
                    ErrorCode.NOT_FOUND, "an ext row needs its task; create the task first"
                ) from None
            if not _is_unique(exc):
                raise
            raise TaskError(
                ErrorCode.ALREADY_EXISTS, "this task already has its ext row; update it instead"
            ) from None

    def get_ext(self, workspace: str, agent_task_id: str) -> ExtRecord | None:
        """Return the ext row of a task, or ``None``."""
        row = self._one(
            f"{EXTS.select()} WHERE workspace = ? AND agent_task_id = ?",
            (workspace, agent_task_id),
        )
        return None if row is None else EXTS.from_row(row)

    def set_waiting(
        self,
        workspace: str,
        agent_task_id: str,
        *,
        waiting: bool,
        declared_child_keys_json: str | None,
        now_ms: int,
    ) -> bool:
        """Flip ``waiting_for_children`` to ``waiting`` only if it is ``not waiting`` now."""
        self._conn.execute(
            "UPDATE queue_task_ext SET waiting_for_children = ?, "
            "declared_child_keys_json = COALESCE(?, declared_child_keys_json), "
            "updated_at_ms = ? WHERE workspace = ? AND agent_task_id = ? "
            "AND waiting_for_children = ?",
            (
                int(waiting),
                declared_child_keys_json,
                now_ms,
                workspace,
                agent_task_id,
                int(not waiting),
            ),
        )
        return bool(self._conn.changes() == 1)

    def patch_ext(self, workspace: str, agent_task_id: str, patch: ExtPatch, now_ms: int) -> bool:
        """Write the non-``None`` fields of ``patch``; return whether the row exists."""
        names = (
            "claim_token_hash",
            "claimed_at_ms",
            "cost_usd",
            "duration_ms",
            "tool_call_count",
            "result_json",
            "progress_text",
        )
        sets = [f"{n} = ?" for n in names if getattr(patch, n) is not None]
        values = [getattr(patch, n) for n in names if getattr(patch, n) is not None]
        sql = (
            "UPDATE queue_task_ext SET "  # noqa: S608 - constant column names
            + ", ".join([*sets, "updated_at_ms = ?"])
            + " WHERE workspace = ? AND agent_task_id = ?"
        )
        self._conn.execute(sql, (*values, now_ms, workspace, agent_task_id))
        return bool(self._conn.changes() == 1)

    # -- operator reads ---------------------------------------------------------------------
    def backlog(
        self,
        workspace: str,
        *,
        status: str | None,
        verb: str | None,
        matter_id: str | None,
        after: TaskRecord | None,
        limit: int,
        now_ms: int,
    ) -> tuple[TaskRecord, ...]:
        """Return up to ``limit`` tasks in drain order after ``after`` (see the protocol)."""
        clauses = ["workspace = ?"]
        args: list[Any] = [workspace]
        clauses, args = _status_clause(clauses, args, status, now_ms)
        if verb is not None:
            clauses.append("verb = ?")
            args.append(verb)
        if matter_id is not None:
            clauses.append("matter_id = ?")
            args.append(matter_id)
        if after is not None:
            clauses.append(
                "(priority < ? OR (priority = ? AND (created_at_ms > ? OR "
                "(created_at_ms = ? AND seq > ?))))"
            )
            args.extend(
                (
                    after.priority,
                    after.priority,
                    after.created_at_ms,
                    after.created_at_ms,
                    after.seq,
                )
            )
        args.append(limit)
        sql = (
            f"{_TASK_SELECT} WHERE {' AND '.join(clauses)} "
            "ORDER BY priority DESC, created_at_ms, seq LIMIT ?"
        )
        return tuple(TASKS.from_row(r) for r in self._conn.execute(sql, args))

    def list_gates(
        self,
        workspace: str,
        *,
        status: str | None,
        after: ApprovalGateRecord | None,
        limit: int,
    ) -> tuple[ApprovalGateRecord, ...]:
        """Return up to ``limit`` gates, oldest request first, after ``after``."""
        clauses = ["workspace = ?"]
        args: list[Any] = [workspace]
        if status is not None:
            clauses.append("status = ?")
            args.append(status)
        if after is not None:
            clauses.append("(requested_at_ms > ? OR (requested_at_ms = ? AND gate_id > ?))")
            args.extend((after.requested_at_ms, after.requested_at_ms, after.gate_id))
        args.append(limit)
        sql = (
            f"{GATES.select()} "
            f"WHERE {' AND '.join(clauses)} ORDER BY requested_at_ms, gate_id LIMIT ?"
        )
        return tuple(GATES.from_row(r) for r in self._conn.execute(sql, args))

    def phases(self, workspace: str, task_id: str, *, limit: int) -> tuple[PhaseRecord, ...]:
        """Return the task's newest ``limit`` phase checkpoints, newest first."""
        rows = self._conn.execute(
            f"{PHASES.select()} "
            "WHERE workspace = ? AND task_id = ? ORDER BY phase_index DESC LIMIT ?",
            (workspace, task_id, limit),
        )
        return tuple(PHASES.from_row(r) for r in rows)

    def depth(self, workspace: str | None, *, now_ms: int) -> tuple[QueueCount, ...]:
        """Count tasks by workspace and effective status (see the protocol)."""
        where, args = ("WHERE workspace = ?", [workspace]) if workspace is not None else ("", [])
        rows = self._conn.execute(
            "SELECT workspace, CASE WHEN status = 'LEASED' AND lease_expires_at_ms <= ? "  # noqa: S608 - constant names
            "THEN 'QUEUED' ELSE status END AS effective, COUNT(*), "
            "COUNT(*) FILTER (WHERE status = 'LEASED' AND lease_expires_at_ms <= ?) "
            f"FROM queue_task {where} GROUP BY workspace, effective "
            "ORDER BY workspace, effective",
            (now_ms, now_ms, *args),
        ).fetchall()
        out: list[QueueCount] = []
        expired: dict[str, int] = {}
        for row in rows:
            ws, status, count, lapsed = str(row[0]), str(row[1]), int(row[2] or 0), int(row[3] or 0)
            out.append(QueueCount(workspace=ws, status=status, count=count))
            if lapsed:
                expired[ws] = expired.get(ws, 0) + lapsed
        out.extend(
            QueueCount(workspace=ws, status="LEASE_EXPIRED", count=n)
            for ws, n in sorted(expired.items())
        )
        return tuple(out)

    def gate_counts(self, workspace: str | None) -> tuple[QueueCount, ...]:
        """Count approval gates by workspace and status."""
        where, args = ("WHERE workspace = ?", [workspace]) if workspace is not None else ("", [])
        rows = self._conn.execute(
            f"SELECT workspace, status, COUNT(*) FROM queue_approval_gate {where} "  # noqa: S608
            "GROUP BY workspace, status ORDER BY workspace, status",
            args,
        )
        return tuple(
            QueueCount(workspace=str(ws), status=str(st), count=int(n)) for ws, st, n in rows
        )


def _status_clause(
    clauses: list[str], args: list[Any], status: str | None, now_ms: int
) -> tuple[list[str], list[Any]]:
    if status == "QUEUED":
        clauses.append("(status = 'QUEUED' OR (status = 'LEASED' AND lease_expires_at_ms <= ?))")
        args.append(now_ms)
    elif status == "LEASED":
        clauses.append("status = 'LEASED' AND lease_expires_at_ms > ?")
        args.append(now_ms)
    elif status is not None:
        clauses.append("status = ?")
        args.append(status)
    return clauses, args
