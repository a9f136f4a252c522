"""SQLite implementation of :class:`~taskcore.store.queue_api.QueueStore`: the task rows.

The store is composed by concern: this module holds the ``queue_task`` statements (insert,
the compare-and-set update, ``claimNext``'s probes, listings and the operator's task reads);
:mod:`taskcore.store.sqlite_queue_rows` the rows around tasks (verbs, matters, approval gates,
phases, ext rows); :mod:`taskcore.store.sqlite_queue_schema` the migrations (``COMPONENT``,
re-exported here for the journal's component list).

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
from taskcore.store.queue_api import QueueCount, TaskRecord
from taskcore.store.queueflow_api import ClaimContext, FlowRecord
from taskcore.store.sqlite_queue_rows import EXTS, GATES, PHASES, is_unique
from taskcore.store.sqlite_queue_sched import (
    DUE,
    EFFECTIVE_FAILED,
    EFFECTIVE_QUEUED,
    LAPSED_RETRY,
    NEXT_DUE_LEASE,
    NEXT_DUE_SCHEDULED,
    PausedVerbs,
    not_paused,
)
from taskcore.store.sqlite_queue_schema import COMPONENT
from taskcore.store.sqlite_queueflow import CLAIM_GATE, SqliteQueueFlowStore, flow_record
from taskcore.store.tables import Table
from taskcore.store.wakeup import queue_topic

__all__ = ["COMPONENT", "EXTS", "GATES", "PHASES", "TASKS", "SqliteQueueStore"]

TASKS: Table[TaskRecord] = Table(
    "queue_task", TaskRecord, key=("workspace", "task_id"), generated=("seq",)
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
    # scheduling and retries (queue migration 5)
    "run_at_ms",
    "attempt",
    "retry_delay_ms",
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
    "WHERE workspace = ? AND status = 'QUEUED' AND autonomy_ceiling = ? "
)
_READY_VERB_PROBE = (
    f"SELECT {_KEY} FROM queue_task INDEXED BY queue_task_ready_verb "  # noqa: S608 - constant
    "WHERE workspace = ? AND verb = ? AND status = 'QUEUED' AND autonomy_ceiling = ? "
)
_LEASE_PROBE_WHERE = (
    f"SELECT {_KEY} FROM queue_task INDEXED BY queue_task_leases "  # noqa: S608 - constant
    "WHERE workspace = ? AND status = 'LEASED' AND lease_expires_at_ms <= ? "
    "AND autonomy_ceiling BETWEEN ? AND ? "
)


# -- queueflow: the probes with the flow gate (issue 28: parents DONE, key under its limit) --
_ORDER_AT = len(_ORDER) + 1  # the probes end with " " + _ORDER: the gate goes before it


def _gated(probe: str) -> str:
    """``probe`` with :data:`CLAIM_GATE` before its ``ORDER BY`` (one more ``now_ms``)."""
    return f"{probe[:-_ORDER_AT]} {CLAIM_GATE} {_ORDER}"


@functools.cache
def _claim_probes(ceilings: int, by_verb: bool, paused: int = 0, gated: bool = False) -> str:
    """``claimNext``'s one read: ``ceilings`` ready probes and the expired-lease probe.

    Each probe is one index search and yields at most one ``(priority, created_at_ms, seq)``;
    the caller picks the best of these (at most ``ceilings + 1``) keys in process
    (:func:`_best_key`) and reads that task's row by ``seq``. Picking in SQL, over the union,
    costs a sorter and a nested sub-select: about twice the time, on every claim, inside the
    write lock. Each probe carries the scheduling fragments of
    :mod:`taskcore.store.sqlite_queue_sched` (due, lapsed-lease retry, ``paused`` paused
    verbs); gated (queueflow), the flow gate too.

    >>> _claim_probes(0, False).count("INDEXED BY")
    1
    >>> _claim_probes(3, True).count("INDEXED BY queue_task_ready_verb")
    3
    >>> _claim_probes(2, False, gated=True).count("queueflow_dep")
    3
    """
    skip = not_paused(("",) * paused)
    base = _READY_VERB_PROBE if by_verb else _READY_PROBE
    ready = f"{base}{DUE}{skip}{_ORDER}"
    verb = "AND verb = ? " if by_verb else ""
    lease = f"{_LEASE_PROBE_WHERE}{LAPSED_RETRY}{skip}{verb}{_ORDER}"
    if gated:  # queueflow: the flow gate last in each probe (its one now_ms last too)
        ready, lease = _gated(ready), _gated(lease)
    # Constant fragments only; every value is a bound parameter.
    probes = [f"SELECT * FROM ({ready})"] * ceilings + [f"SELECT * FROM ({lease})"]  # noqa: S608
    return " UNION ALL ".join(probes)


def _best_key(keys: list[Any]) -> int | None:
    """The ``seq`` of the best ``(priority, created_at_ms, seq)``: ``claimNext``'s order.

    Highest priority, then oldest, then first inserted (``_ORDER``); ``None`` for no keys.

    >>> _best_key([(1, 5, 9), (2, 7, 8), (2, 6, 10)])
    10
    """
    if not keys:
        return None
    return int(min(keys, key=lambda k: (-k[0], k[1], k[2]))[2])


_BY_SEQ = f"{_TASK_SELECT} WHERE seq = ?"
_FLOW_OF_T = ", ".join(  # the task's queueflow row beside it (task_id NULL: it has none)
    "(SELECT f."  # noqa: S608 - constant names
    + column
    + " FROM queueflow_task f WHERE f.workspace = t.workspace AND f.task_id = t.task_id)"
    for column in ("task_id", "unique_key", "concurrency_key", "has_parents", "gated")
)
_BY_SEQ_WITH_FLOW = (
    "SELECT "  # noqa: S608 - constant names
    + ", ".join(f"t.{c}" for c in TASKS.columns)
    + f", {_FLOW_OF_T} FROM queue_task t WHERE t.seq = ?"
)
"""A task by ``seq`` and its flow row (correlated sub-selects: a ``LEFT JOIN`` of the wide
task row measured several times slower on SQLite 3.54)."""
_TASK_WIDTH = len(TASKS.columns)


_QUEUED = "QUEUED"


def may_free(before: TaskRecord | None, after: TaskRecord) -> bool:
    """Whether writing ``after`` over ``before`` may make a task claimable (then signal).

    A task (re)entering ``QUEUED``: released, requeued, force-requeued, approved.
    """
    return after.status == _QUEUED and (before is None or before.status != _QUEUED)


class SqliteQueueStore(PausedVerbs):
    """The queue tables on one apsw connection (inside the caller's transaction)."""

    # -- tasks ------------------------------------------------------------------------------
    def insert_task(self, task: TaskRecord, *, with_seq: bool = True) -> TaskRecord:
        """Insert a new task; return it with its assigned ``seq`` (``with_seq``: see the API)."""
        try:
            self._conn.execute(*TASKS.insert(task))
        except apsw.ConstraintError as exc:
            if not is_unique(exc):
                raise  # a CHECK backstop tripped: a bug, never an input error
            raise TaskError(ErrorCode.ALREADY_EXISTS, "a task with this id exists") from None
        seq = int(self._conn.last_insert_rowid())  # a function call here: always read
        if task.status == _QUEUED:
            self._signal(queue_topic(task.workspace))
        return attrs.evolve(task, seq=seq)

    def read_ahead(self, workspace: str, task_id: str) -> None:
        """Nothing to send ahead: a read here is a function call (see the API)."""

    def get_task(
        self, workspace: str, task_id: str, *, for_update: bool = False
    ) -> TaskRecord | None:
        """Return the task of ``workspace`` with ``task_id``, or ``None`` (one writer: no lock)."""
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
            return self._written(None, task)
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
        return self._written(before, task)

    def _written(self, before: TaskRecord | None, task: TaskRecord) -> bool:
        """Whether the update wrote its row; signal the workspace if that may free a task."""
        if self._conn.changes() != 1:
            return False
        if may_free(before, task):
            self._signal(queue_topic(task.workspace))
        return True

    def _claim_key(
        self,
        workspace: str,
        max_autonomy: int,
        autonomy: int,
        verb: str | None,
        now_ms: int,
        paused: tuple[str, ...],
        gated: bool,
    ) -> int | None:
        """The ``seq`` of the task ``claimNext`` should take: the probes, the best in process."""
        ceilings = range(autonomy, max_autonomy + 1)
        gate: list[Any] = [now_ms] if gated else []
        args: list[Any] = []
        for ceiling in ceilings:
            args += [workspace, ceiling] if verb is None else [workspace, verb, ceiling]
            args += [now_ms, *paused, *gate]
        args += [workspace, now_ms, autonomy, max_autonomy, now_ms, *paused]
        if verb is not None:
            args.append(verb)
        args += gate
        sql = _claim_probes(len(ceilings), verb is not None, len(paused), gated)
        return _best_key(self._conn.execute(sql, args).fetchall())

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
        """Return the task ``claimNext`` should take (see the protocol), or ``None``."""
        # A probe per autonomy ceiling (each one index search) and one for expired leases,
        # in one statement; the best key picked in process and only the winner's row read.
        # Gated (queueflow), each probe also checks the flow gate.
        seq = self._claim_key(workspace, max_autonomy, autonomy, verb, now_ms, paused, gated)
        best = None if seq is None else self._one(_BY_SEQ, (seq,))
        return None if best is None else TASKS.from_row(best)

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
        """:meth:`best_claimable` and the found task's flow row, read with its row."""
        seq = self._claim_key(workspace, max_autonomy, autonomy, verb, now_ms, paused, gated)
        row = None if seq is None else self._one(_BY_SEQ_WITH_FLOW, (seq,))
        if row is None:
            return None, None
        task = TASKS.from_row(row)
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
        """The claim context, then (not gated, ``verb`` not paused) the claim, in process."""
        context = SqliteQueueFlowStore(self._conn).claim_context(workspace)
        if context.gated or (verb is not None and verb in context.paused):
            return context, None, None
        task, flow = self.claim_candidate(
            workspace,
            max_autonomy=max_autonomy,
            autonomy=autonomy,
            verb=verb,
            now_ms=now_ms,
            paused=() if verb is not None else context.paused,
        )
        return context, task, flow

    def next_due(self, workspace: str, now_ms: int) -> int | None:
        """The earliest time after ``now_ms`` a task may become claimable by time alone.

        A lease lapsing (a retrying task's back-off after it) or a scheduled task coming due.
        """
        times = [
            row[0]
            for sql in (NEXT_DUE_LEASE, NEXT_DUE_SCHEDULED)
            if (row := self._one(sql, (workspace, now_ms))) is not None and row[0] is not None
        ]
        return min((int(t) for t in times), default=None)

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
        clauses, args = _status_clause(clauses, args, status, now_ms)
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

    def depth(self, workspace: str | None, *, now_ms: int) -> tuple[QueueCount, ...]:
        """Count tasks by workspace and effective status (see the protocol)."""
        where, args = ("WHERE workspace = ?", [workspace]) if workspace is not None else ("", [])
        rows = self._conn.execute(
            "SELECT workspace, CASE WHEN status = 'LEASED' AND lease_expires_at_ms <= ? "  # noqa: S608 - constant names
            "THEN (CASE WHEN max_attempts > 1 AND attempt >= max_attempts THEN 'FAILED' "
            "ELSE 'QUEUED' END) ELSE status END AS effective, COUNT(*), "
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


def _status_clause(
    clauses: list[str], args: list[Any], status: str | None, now_ms: int
) -> tuple[list[str], list[Any]]:
    # The effective status (docs/queue.md "Retries": a retrying task's lease lapsed at its
    # last attempt reads FAILED; sqlite_queue_sched's fragments).
    if status == "QUEUED":
        clauses.append(EFFECTIVE_QUEUED)
        args.append(now_ms)
    elif status == "FAILED":
        clauses.append(EFFECTIVE_FAILED)
        args.append(now_ms)
    elif status == "LEASED":
        clauses.append("status = 'LEASED' AND lease_expires_at_ms > ?")
        args.append(now_ms)
    elif status is not None:
        clauses.append("status = ?")
        args.append(status)
    return clauses, args
