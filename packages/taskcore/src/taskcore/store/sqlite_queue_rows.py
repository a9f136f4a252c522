"""The queue's rows other than tasks, on SQLite: verbs, matters, gates, phases, ext rows.

:class:`QueueRows` is the part of :class:`~taskcore.store.sqlite_queue.SqliteQueueStore`
(which subclasses it) over the tables around ``queue_task``: the carrier-verb registry,
matters and their readers, approval gates, per-phase checkpoints and ext rows, and their
operator reads. Every statement names the workspace in its predicate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apsw

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.queue_api import (
    ApprovalGateRecord,
    ExtPatch,
    ExtRecord,
    MatterReaderRecord,
    MatterRecord,
    PhaseRecord,
    QueueCount,
    VerbRecord,
)
from taskcore.store.sqlite import opt_str
from taskcore.store.tables import Table

__all__ = ["EXTS", "GATES", "PHASES", "QueueRows", "is_unique"]

GATES: Table[ApprovalGateRecord] = Table(
    "queue_approval_gate", ApprovalGateRecord, key=("workspace", "gate_id")
)
EXTS: Table[ExtRecord] = Table("queue_task_ext", ExtRecord, key=("workspace", "agent_task_id"))
PHASES: Table[PhaseRecord] = Table(
    "queue_checkpoint", PhaseRecord, key=("workspace", "task_id", "phase_index")
)


def is_unique(exc: apsw.ConstraintError) -> bool:
    """Whether a constraint error is a unique (or primary) key's."""
    return "UNIQUE" in str(exc) or "PRIMARY KEY" in str(exc)


def _ignore(topic: str) -> None:
    """The default signal sink: a store used outside a transaction object signals nobody."""


class QueueRows:
    """The queue's rows around its tasks, on one apsw connection (inside a transaction).

    ``signal`` is the transaction's :meth:`~taskcore.store.storage.Transaction.signal`:
    what the store writes may make a task claimable, and waiters hear of it after commit.
    """

    def __init__(self, conn: apsw.Connection, signal: Callable[[str], None] = _ignore) -> None:
        self._conn = conn
        self._signal = signal

    def _one(self, sql: str, args: tuple[Any, ...]) -> Any:
        return self._conn.execute(sql, args).fetchone()

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
            if not is_unique(exc):
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
            if not is_unique(exc):
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
            if not is_unique(exc):
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
