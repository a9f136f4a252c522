"""The PostgreSQL domain stores: the SQLite stores' statements, overridden where they differ.

Each class subclasses its SQLite twin and runs on a :class:`PgConnection` (which translates
placeholders and errors). What is PostgreSQL's own:

* ``claimNext`` (:meth:`PgQueueStore.best_claimable`) is one statement over both the ready
  set and the expired leases, ordered by the claim key, ``FOR UPDATE SKIP LOCKED``: a row
  another transaction is claiming is skipped, never claimed twice.
* The phase index (:meth:`PgQueueStore.next_phase_index`) is read under
  ``pg_advisory_xact_lock`` on the task, so two writers of one task take indexes in turn
  (the ``UNIQUE (task_id, phase_index)`` constraint stays the backstop).
* ``journal_request`` pruning selects by ``ctid``; the integrity check is PostgreSQL's own
  business (checksums, WAL), so it reports nothing.
* The collector's transfer and receipt sequence numbers (``max(seq) + 1``) are taken under an
  advisory transaction lock per table, so racing replicas never compute the same one.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import apsw

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.audit_api import AuditEvent
from taskcore.store.queue_api import TaskRecord
from taskcore.store.queueflow_api import ClaimContext, FlowRecord
from taskcore.store.sqlite_audit import EVENTS, SqliteAuditStore
from taskcore.store.sqlite_authority import SqliteAuthorityStore
from taskcore.store.sqlite_collector import SqliteCollectorStore
from taskcore.store.sqlite_forge import SqliteForgeStore
from taskcore.store.sqlite_journal import SqliteJournalStore
from taskcore.store.sqlite_oauth import SqliteOAuthStore
from taskcore.store.sqlite_queue import (
    _TASK_MUTABLE,
    _TASK_SELECT,
    TASKS,
    SqliteQueueStore,
    _task_update_sql,
    may_free,
)
from taskcore.store.sqlite_queue_rows import _ignore
from taskcore.store.sqlite_queue_sched import DUE, LAPSED_RETRY, not_paused
from taskcore.store.sqlite_queueflow import CLAIM_GATE, SqliteQueueFlowStore, flow_record
from taskcore.store.sqlite_retention import SqliteRetentionStore
from taskcore.store.sqlite_tokens import SqliteTokenStore
from taskcore.store.sqlite_webhooks import SqliteWebhookStore
from taskcore.store.wakeup import queue_topic

if TYPE_CHECKING:
    from taskcore.store.postgres.connection import PgConnection

__all__ = [
    "PgAuditStore",
    "PgAuthorityStore",
    "PgCollectorStore",
    "PgForgeStore",
    "PgJournalStore",
    "PgOAuthStore",
    "PgQueueFlowStore",
    "PgQueueStore",
    "PgRetentionStore",
    "PgTokenStore",
    "advisory_key",
]

_PHASE_LOCK_SPACE = 0x6167_746B  # "agtk": the high half of the per-task phase lock key


def advisory_key(space: int, name: str) -> int:
    """A signed 64-bit advisory lock key: ``space`` in the high half, crc32(name) below."""
    value = (space << 32) | zlib.crc32(name.encode("utf-8"))
    return value - (1 << 64) if value >= (1 << 63) else value


_CLAIM = (
    f"{_TASK_SELECT} WHERE workspace = ? AND autonomy_ceiling BETWEEN ? AND ? "
    # the ready set (due: store/sqlite_queue_sched.DUE) or a lapsed lease (LAPSED_RETRY)
    f"AND ((status = 'QUEUED' {DUE}) OR "
    f"(status = 'LEASED' AND lease_expires_at_ms <= ? {LAPSED_RETRY})) "
    "{paused}{verb}ORDER BY priority DESC, created_at_ms, seq LIMIT 1 FOR UPDATE SKIP LOCKED"
)


# -- queueflow: the flow gate (parents DONE, key under its limit) is the last condition ------
_FLOW_LIMIT_LOCK_SPACE = 0x6167_7466  # "agtf": a workspace's keyed claims take turns


def _claim_sql(by_verb: bool, paused: int, gated: bool = False) -> str:
    """PostgreSQL's ``claimNext`` statement (the scheduling fragments shared with SQLite's)."""
    skip = not_paused(("",) * paused)
    verb = "AND verb = ? " if by_verb else ""
    if gated:
        verb = f"{verb}{CLAIM_GATE} "
    return _CLAIM.format(paused=skip, verb=verb)


_CLAIM_FLOW_COLUMNS = "f.task_id, f.unique_key, f.concurrency_key, f.has_parents, f.gated"
_TASK_WIDTH = len(TASKS.columns)


def _claim_with_flow_sql(by_verb: bool, paused: int, gated: bool) -> str:
    """:func:`_claim_sql` with the found task's ``queueflow_task`` row joined (one statement).

    The row lock stays the claim's (``FOR UPDATE SKIP LOCKED`` inside the sub-select): the
    flow row is only read.
    """
    return (
        f"SELECT c.*, {_CLAIM_FLOW_COLUMNS} FROM ({_claim_sql(by_verb, paused, gated)}) c "  # noqa: S608
        "LEFT JOIN queueflow_task f ON f.workspace = c.workspace AND f.task_id = c.task_id"
    )


# An event's seq comes from a sequence, so concurrent writers (the shared writer lock) can
# commit seqs out of order. The reader (taskcore.events.log.Horizon) tells a gap an open
# transaction may still fill from a dead one by transaction ids, which needs every writer to
# hold its xid *before* it draws its seq: the CASE takes pg_current_xact_id() first.
_SEQ_AFTER_XID = (
    "CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval('audit_event_seq_seq') END"
)
_APPEND = (
    EVENTS.insert(
        AuditEvent(at_ms=0, actor="", workspace="", operation="", input_digest="", outcome="")
    )[0]
    .replace("INSERT INTO audit_event (", "INSERT INTO audit_event (seq, ", 1)
    .replace("VALUES (", f"VALUES ({_SEQ_AFTER_XID}, ", 1)
)
_SETTLED = (
    "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, "
    "pg_snapshot_xmax(pg_current_snapshot())::text, "
    "ARRAY(SELECT seq FROM audit_event WHERE seq > ? ORDER BY seq LIMIT ?)"
)


class PgAuditStore(SqliteAuditStore):
    """Audit events: the SQLite statements, but the seq is drawn after the xid is held."""

    def append(self, event: AuditEvent) -> int:
        """Append ``event``; return its sequence number."""
        self._conn.execute(_APPEND, EVENTS.insert(event)[1])
        return int(self._conn.last_insert_rowid())

    def append_last(self, event: AuditEvent) -> None:
        """Append ``event`` with the transaction's ``COMMIT`` (one round trip for both)."""
        cast("PgConnection", self._conn).defer(_APPEND, EVENTS.insert(event)[1])

    def settled(self, after_seq: int, limit: int) -> tuple[tuple[int, ...], int, int]:
        """Visible seqs after ``after_seq`` and the statement snapshot's ``(xmin, xmax)``."""
        row = self._conn.execute(_SETTLED, (after_seq, limit)).fetchone()
        if row is None:
            return (), 0, 0
        return tuple(int(s) for s in row[2]), int(row[0]), int(row[1])


class PgTokenStore(SqliteTokenStore):
    """Tokens (same statements; a shared write reads the row plainly, see below).

    A row-safe call (the shared writer lock) reads its token with no row lock. Every write
    of the ``token`` table (issue, revoke) runs in an exclusive write transaction: its
    :data:`~taskcore.store.postgres.storage.WRITER_LOCK` waits for every shared holder and
    keeps new ones out until it commits, and a shared writer takes its lock (the ``BEGIN``
    statement) before it reads the token in a later statement (``READ COMMITTED``: a fresh
    snapshot). So a revocation commits only after the calls in flight with that token, and
    every call whose transaction starts later sees it: what a ``FOR SHARE`` read gave, with
    no row lock (and no MultiXact when several workers share one token).
    """


def _claim_args(
    workspace: str,
    max_autonomy: int,
    autonomy: int,
    verb: str | None,
    now_ms: int,
    paused: tuple[str, ...],
    gated: bool,
) -> tuple[Any, ...]:
    """The parameters of :func:`_claim_sql` and :func:`_claim_with_flow_sql`, in order."""
    args: list[Any] = [workspace, autonomy, max_autonomy, now_ms, now_ms, now_ms, *paused]
    if verb is not None:
        args.append(verb)
    if gated:
        args.append(now_ms)
    return tuple(args)


_GET_LOCKED = f"{_TASK_SELECT} WHERE workspace = ? AND task_id = ? FOR UPDATE"


class PgQueueStore(SqliteQueueStore):
    """The queue: ``claimNext`` with ``SKIP LOCKED``, the phase index under a lock.

    In a shared writer (:attr:`PgConnection.row_locks`) a task read to be written
    (``get_task(..., for_update=True)``: ``checkpoint``, ``release``) is read ``FOR UPDATE``
    (a racing writer of the row waits for this one's commit, then reads what it wrote: the
    writers of a row take turns, as SQLite's writers do), and the claim's row is locked by
    its ``SKIP LOCKED`` read. The compare-and-set ``UPDATE`` of
    such a row cannot miss, so it is sent with the next statement or the ``COMMIT``
    (:meth:`PgConnection.defer_write`), one round trip fewer.
    """

    def __init__(self, conn: apsw.Connection, signal: Callable[[str], None] = _ignore) -> None:
        super().__init__(conn, signal)
        self._locked: dict[tuple[str, str], int] = {}
        """The tasks this transaction holds row-locked: ``(workspace, task_id)`` -> version."""

    def _lock(self, task: TaskRecord) -> TaskRecord:
        if cast("PgConnection", self._conn).row_locks:
            self._locked[(task.workspace, task.task_id)] = task.version
        return task

    def insert_task(self, task: TaskRecord, *, with_seq: bool = True) -> TaskRecord:
        """Insert a new task; without ``with_seq``, in a shared writer, with the next statement.

        Nobody reads the row back (its ``seq`` is left 0), so the plain ``INSERT`` goes with
        the transaction's next statement or its ``COMMIT`` (:meth:`PgConnection.defer_write`);
        a duplicate id still fails the call as ``ALREADY_EXISTS``.
        """
        if with_seq:
            return super().insert_task(task)
        conn = cast("PgConnection", self._conn)
        duplicate = TaskError(ErrorCode.ALREADY_EXISTS, "a task with this id exists")
        if not conn.defer_write(*TASKS.insert(task), duplicate=duplicate):
            return super().insert_task(task)
        if task.status == "QUEUED":
            self._signal(queue_topic(task.workspace))
        return task

    def read_ahead(self, workspace: str, task_id: str) -> None:
        """Send ``get_task(..., for_update=True)``'s read with the first statement (a hint)."""
        cast("PgConnection", self._conn).read_ahead(_GET_LOCKED, (workspace, task_id))

    def get_task(
        self, workspace: str, task_id: str, *, for_update: bool = False
    ) -> TaskRecord | None:
        """The task; ``for_update`` in a shared writer, row-locked (see the class)."""
        if not (for_update and cast("PgConnection", self._conn).row_locks):
            return super().get_task(workspace, task_id)
        row = self._one(_GET_LOCKED, (workspace, task_id))
        return None if row is None else self._lock(TASKS.from_row(row))

    def update_task(self, task: TaskRecord, *, before: TaskRecord | None = None) -> bool:
        """The compare-and-set update; deferred when this transaction holds the row locked."""
        key = (task.workspace, task.task_id)
        if before is None or self._locked.get(key) != before.version:
            written = super().update_task(task, before=before)
            if written and key in self._locked:
                self._locked[key] = task.version
            return written
        if (before.workspace, before.task_id, before.version + 1) != (*key, task.version):
            raise TaskError(ErrorCode.INTERNAL, "an update names another row or version")
        changed = tuple(c for c in _TASK_MUTABLE if getattr(task, c) != getattr(before, c))
        args = (*(getattr(task, c) for c in changed), task.workspace, task.task_id, before.version)
        sql = _task_update_sql(changed)
        if not cast("PgConnection", self._conn).defer_write(sql, args):
            return super().update_task(task, before=before)
        self._locked[key] = task.version
        if may_free(before, task):
            self._signal(queue_topic(task.workspace))
        return True

    def best_claimable(
        self,
        workspace: str,
        *,
        max_autonomy: int,
        autonomy: int,
        verb: str | None,
        now_ms: int,
        paused: tuple[str, ...] = (),
        gated: bool = False,
    ) -> TaskRecord | None:
        """Return (and row-lock) the task ``claimNext`` should take, or ``None``."""
        args = _claim_args(workspace, max_autonomy, autonomy, verb, now_ms, paused, gated)
        row = self._one(_claim_sql(verb is not None, len(paused), gated), args)
        return None if row is None else self._lock(TASKS.from_row(row))

    def claim_candidate(
        self,
        workspace: str,
        *,
        max_autonomy: int,
        autonomy: int,
        verb: str | None,
        now_ms: int,
        paused: tuple[str, ...] = (),
        gated: bool = False,
    ) -> tuple[TaskRecord | None, FlowRecord | None]:
        """:meth:`best_claimable` and the found task's flow row, in one statement."""
        args = _claim_args(workspace, max_autonomy, autonomy, verb, now_ms, paused, gated)
        row = self._one(_claim_with_flow_sql(verb is not None, len(paused), gated), args)
        if row is None:
            return None, None
        task = self._lock(TASKS.from_row(row))
        flow = row[_TASK_WIDTH:]
        return task, None if flow[0] is None else flow_record((task.workspace, *flow))

    def claim_opening(
        self,
        workspace: str,
        *,
        max_autonomy: int,
        autonomy: int,
        verb: str | None,
        now_ms: int,
    ) -> tuple[ClaimContext, TaskRecord | None, FlowRecord | None]:
        """The claim context and, unless gated, the claim with its flow row: one statement.

        The claim leaves out the paused verbs by a sub-select and takes no row of a gated
        workspace (the caller then serializes and claims through the gate); the context and
        the claim's search see one snapshot.
        """
        args: list[Any] = [workspace, workspace, workspace]
        args += (workspace, autonomy, max_autonomy, now_ms, now_ms, now_ms, workspace, workspace)
        if verb is not None:
            args.append(verb)
        row = self._one(_OPENING_BY_VERB if verb is not None else _OPENING, tuple(args))
        context = ClaimContext(
            paused=tuple(str(v) for v in row[0]), gated=bool(row[1]), keyed=bool(row[2])
        )
        if row[3] is None:
            return context, None, None
        task = self._lock(TASKS.from_row(row[3 : 3 + _TASK_WIDTH]))
        flow = row[3 + _TASK_WIDTH :]
        return context, task, None if flow[0] is None else flow_record((task.workspace, *flow))

    def next_phase_index(self, workspace: str, task_id: str) -> int:
        """One more than the highest phase index, read under the task's advisory lock."""
        self._one(
            "SELECT pg_advisory_xact_lock(?)",
            (advisory_key(_PHASE_LOCK_SPACE, f"{workspace}\x1f{task_id}".replace("\x00", "")),),
        )
        return super().next_phase_index(workspace, task_id)


_CLAIM_CONTEXT = (
    "SELECT ARRAY(SELECT verb FROM queue_paused_verb WHERE workspace = ? ORDER BY verb), "
    "EXISTS (SELECT 1 FROM queueflow_task WHERE workspace = ? AND gated = 1), "
    "EXISTS (SELECT 1 FROM queueflow_task WHERE workspace = ? AND gated = 1 "
    "AND concurrency_key IS NOT NULL)"
)
_SETTLE_ROW = (
    "SELECT f.workspace, f.task_id, f.unique_key, f.concurrency_key, f.has_parents, f.gated, "
    "EXISTS (SELECT 1 FROM queueflow_dep d WHERE d.workspace = v.ws AND d.parent_id = v.id) "
    "FROM (SELECT CAST(? AS TEXT) AS ws, CAST(? AS TEXT) AS id) v "
    "LEFT JOIN queueflow_task f ON f.workspace = v.ws AND f.task_id = v.id"
)


def _opening_sql(by_verb: bool) -> str:
    """:meth:`PgQueueStore.claim_opening`'s statement: the context, the ungated claim, its flow.

    The ``FOR UPDATE SKIP LOCKED`` stays inside the claim's sub-select; the gated test is
    uncorrelated (one test per statement: a gated workspace locks no row here).
    """
    claim = _CLAIM.format(
        paused=(
            "AND verb NOT IN (SELECT verb FROM queue_paused_verb WHERE workspace = ?) "
            "AND NOT EXISTS (SELECT 1 FROM queueflow_task WHERE workspace = ? AND gated = 1) "
        ),
        verb="AND verb = ? " if by_verb else "",
    )
    return (
        f"SELECT x.*, c.*, {_CLAIM_FLOW_COLUMNS} FROM ({_CLAIM_CONTEXT}) x "  # noqa: S608
        f"LEFT JOIN ({claim}) c ON TRUE "
        "LEFT JOIN queueflow_task f ON f.workspace = c.workspace AND f.task_id = c.task_id"
    )


_OPENING = _opening_sql(False)
_OPENING_BY_VERB = _opening_sql(True)


class PgQueueFlowStore(SqliteQueueFlowStore):
    """Queue flow rows: parents read ``FOR SHARE``, a workspace's limited claims in turn."""

    def parent_statuses(self, workspace: str, task_ids: tuple[str, ...]) -> dict[str, str]:
        """The parents' statuses, share-locked: a parent's end waits for this child's commit."""
        return self._statuses(workspace, task_ids, " FOR SHARE")

    def gates_claims(self, workspace: str) -> bool:
        """Whether any non-terminal task of the workspace has parents or a concurrency key."""
        row = self._one(
            "SELECT 1 FROM queueflow_task WHERE workspace = ? AND gated = 1 LIMIT 1",
            (workspace,),
        )
        return row is not None

    def claim_context(self, workspace: str) -> ClaimContext:
        """The paused verbs, whether claims are gated and whether one is keyed: one read."""
        row = self._one(_CLAIM_CONTEXT, (workspace, workspace, workspace))
        return ClaimContext(
            paused=tuple(str(v) for v in row[0]), gated=bool(row[1]), keyed=bool(row[2])
        )

    def settle_row(
        self, workspace: str, task_id: str, *, terminal: bool, children: bool
    ) -> tuple[FlowRecord | None, bool]:
        """:meth:`set_gated` and :meth:`has_children` in one read (after the task's update)."""
        if not children:
            return self.set_gated(workspace, task_id, terminal=terminal), False
        row = self._one(_SETTLE_ROW, (workspace, task_id))
        kids = bool(row[-1])
        if row[0] is None:
            return None, kids
        return self.regate(flow_record(row), terminal=terminal), kids

    def serialize_limited_claims(self, workspace: str, *, keyed: bool | None = None) -> None:
        """Take the workspace's keyed-claim advisory lock when a live task has a key.

        ``claimNext`` runs under the shared writer lock: two claimers of one key could each
        count the other's lease as not yet there. Taken before the claim's statement, the
        lock makes them take turns, and each one's count sees the previous one's commit.
        """
        if keyed is None:
            keyed = bool(
                self._one(
                    "SELECT 1 FROM queueflow_task WHERE workspace = ? AND gated = 1 "
                    "AND concurrency_key IS NOT NULL LIMIT 1",
                    (workspace,),
                )
            )
        if keyed:
            key = advisory_key(_FLOW_LIMIT_LOCK_SPACE, workspace.replace("\x00", ""))
            self._one("SELECT pg_advisory_xact_lock(?)", (key,))


class PgAuthorityStore(SqliteAuthorityStore):
    """Authority records (same statements)."""


class PgJournalStore(SqliteJournalStore):
    """The workflow journal; integrity is PostgreSQL's own."""

    def integrity_errors(self) -> tuple[str, ...]:
        """Nothing to report: PostgreSQL checks its pages itself (``data_checksums``)."""
        return ()


class PgCollectorStore(SqliteCollectorStore):
    """Collector records; sequence numbers taken under a per-table advisory lock."""

    def _next_seq(self, table: str) -> int:
        self._conn.execute("SELECT pg_advisory_xact_lock(?)", (advisory_key(0x7365_7100, table),))
        return super()._next_seq(table)


class PgRetentionStore(SqliteRetentionStore):
    """The retention lease (same statements)."""


class PgForgeStore(SqliteForgeStore):
    """Forge settings and the outbox (same statements)."""


class PgOAuthStore(SqliteOAuthStore):
    """OAuth clients, requests, grants and tokens: the SQLite statements as they are."""


class PgWebhookStore(SqliteWebhookStore):
    """Webhook endpoints, deliveries and the fan-out cursor (same statements)."""
