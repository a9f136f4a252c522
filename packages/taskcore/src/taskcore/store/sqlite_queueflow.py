"""SQLite implementation of :class:`~taskcore.store.queueflow_api.QueueFlowStore` (``queueflow``).

The statements are plain SQL both backends share; the PostgreSQL store
(:class:`~taskcore.store.postgres.stores.PgQueueFlowStore`) reads parents ``FOR SHARE`` and
serializes a workspace's limited claims. The DDL twin is ``QUEUEFLOW`` in
:mod:`taskcore.store.postgres.migrations_queueflow`.

:data:`CLAIM_GATE` is the one SQL fragment ``claimNext`` adds when a workspace has gated
tasks (:meth:`SqliteQueueFlowStore.gates_claims`): a candidate ``queue_task`` row passes
unless one of its parents is not ``DONE`` or its concurrency key already has ``max_leased``
live leases (:data:`~taskcore.limits.CONCURRENCY_LIMIT_DEFAULT` for a key without a limit). Its one parameter is the time (``now_ms``).
"""

from __future__ import annotations

from typing import Any

import apsw

from taskcore.limits import CONCURRENCY_LIMIT_DEFAULT
from taskcore.store.queueflow_api import ClaimContext, FlowRecord, LimitRecord, UniqueHolder
from taskcore.store.sqlite import Component, Migration

__all__ = ["CLAIM_GATE", "COMPONENT", "SqliteQueueFlowStore", "flow_record"]

COMPONENT = Component(
    "queueflow",
    (
        Migration(
            1,
            """
            CREATE TABLE queueflow_task (
                workspace TEXT NOT NULL,
                task_id TEXT NOT NULL,
                unique_key TEXT,
                concurrency_key TEXT,
                has_parents INTEGER NOT NULL CHECK (has_parents IN (0, 1)),
                gated INTEGER NOT NULL CHECK (gated IN (0, 1)),
                PRIMARY KEY (workspace, task_id)
            ) STRICT;
            CREATE INDEX queueflow_task_gated ON queueflow_task(workspace, concurrency_key)
                WHERE gated = 1;
            CREATE TABLE queueflow_unique (
                workspace TEXT NOT NULL,
                unique_key TEXT NOT NULL,
                task_id TEXT NOT NULL,
                unique_for_ms INTEGER NOT NULL CHECK (unique_for_ms >= 0),
                PRIMARY KEY (workspace, unique_key)
            ) STRICT;
            CREATE TABLE queueflow_dep (
                workspace TEXT NOT NULL,
                child_id TEXT NOT NULL,
                parent_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                PRIMARY KEY (workspace, child_id, parent_id)
            ) STRICT;
            CREATE INDEX queueflow_dep_parent ON queueflow_dep(workspace, parent_id);
            CREATE TABLE queueflow_limit (
                workspace TEXT NOT NULL,
                concurrency_key TEXT NOT NULL,
                max_leased INTEGER NOT NULL CHECK (max_leased >= 0),
                set_by TEXT NOT NULL,
                set_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, concurrency_key)
            ) STRICT;
            """,
        ),
    ),
)

_LEASED_OF_KEY = (
    "SELECT count(*) FROM queueflow_task g JOIN queue_task t "
    "ON t.workspace = g.workspace AND t.task_id = g.task_id "
    "WHERE g.workspace = {ws} AND g.concurrency_key = {key} AND g.gated = 1 "
    "AND t.status = 'LEASED' AND t.lease_expires_at_ms > ?"
)

CLAIM_GATE = (  # constant fragments and a constant bound: nothing of a request
    "AND NOT EXISTS (SELECT 1 FROM queueflow_task f "  # noqa: S608
    "WHERE f.workspace = queue_task.workspace AND f.task_id = queue_task.task_id "
    "AND f.gated = 1 AND ("
    "(f.has_parents = 1 AND EXISTS (SELECT 1 FROM queueflow_dep d JOIN queue_task p "
    "ON p.workspace = d.workspace AND p.task_id = d.parent_id "
    "WHERE d.workspace = f.workspace AND d.child_id = f.task_id AND p.status <> 'DONE')) "
    "OR (f.concurrency_key IS NOT NULL AND COALESCE((SELECT l.max_leased FROM queueflow_limit l "
    "WHERE l.workspace = f.workspace AND l.concurrency_key = f.concurrency_key), "
    f"{CONCURRENCY_LIMIT_DEFAULT}) <= "
    f"({_LEASED_OF_KEY.format(ws='f.workspace', key='f.concurrency_key')}))"
    "))"
)
"""``claimNext``'s flow condition on a candidate ``queue_task`` row (parameter: ``now_ms``)."""

_CLAIM_CONTEXT = (  # (1, NULL) if the workspace has a gated task; (0, verb) per paused verb
    "SELECT 1, NULL FROM (SELECT 1 FROM queueflow_task INDEXED BY queueflow_task_gated "
    "WHERE workspace = ? AND gated = 1 LIMIT 1) "
    "UNION ALL SELECT 0, verb FROM queue_paused_verb WHERE workspace = ?"
)
_SETTLE_ROW = (  # a task's flow row (all NULL: none) and whether any task runs after it
    "SELECT f.workspace, f.task_id, f.unique_key, f.concurrency_key, f.has_parents, f.gated, "
    "EXISTS (SELECT 1 FROM queueflow_dep d WHERE d.workspace = v.ws AND d.parent_id = v.id) "
    "FROM (SELECT ? AS ws, ? AS id) v "
    "LEFT JOIN queueflow_task f ON f.workspace = v.ws AND f.task_id = v.id"
)
_TERMINAL = "('DONE', 'FAILED', 'CANCELLED')"
_FLOW_COLUMNS = "workspace, task_id, unique_key, concurrency_key, has_parents, gated"


def flow_record(row: Any) -> FlowRecord:
    """A ``queueflow_task`` row (its columns in table order) as a :class:`FlowRecord`."""
    return FlowRecord(
        workspace=str(row[0]),
        task_id=str(row[1]),
        unique_key=None if row[2] is None else str(row[2]),
        concurrency_key=None if row[3] is None else str(row[3]),
        has_parents=bool(row[4]),
        gated=bool(row[5]),
    )


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class SqliteQueueFlowStore:
    """The ``queueflow`` tables on one apsw connection (inside the caller's transaction)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def _one(self, sql: str, args: tuple[Any, ...]) -> Any:
        return self._conn.execute(sql, args).fetchone()

    # -- flow rows --------------------------------------------------------------------------
    def insert_flow(self, record: FlowRecord) -> None:
        """Record a new task's flow attributes."""
        self._conn.execute(
            f"INSERT INTO queueflow_task ({_FLOW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",  # noqa: S608
            (
                record.workspace,
                record.task_id,
                record.unique_key,
                record.concurrency_key,
                int(record.has_parents),
                int(record.gated),
            ),
        )

    def flows(self, workspace: str, task_ids: tuple[str, ...]) -> dict[str, FlowRecord]:
        """The flow rows of ``task_ids`` that have one, by task id."""
        if not task_ids:
            return {}
        rows = self._conn.execute(
            f"SELECT {_FLOW_COLUMNS} FROM queueflow_task "  # noqa: S608 - constant names
            f"WHERE workspace = ? AND task_id IN ({_marks(len(task_ids))})",
            (workspace, *task_ids),
        )
        return {str(r[1]): flow_record(r) for r in rows}

    def set_gated(self, workspace: str, task_id: str, *, terminal: bool) -> FlowRecord | None:
        """Mark the task's row gated unless ``terminal``; return the row (``None``: no row)."""
        row = self._one(
            f"SELECT {_FLOW_COLUMNS} FROM queueflow_task "  # noqa: S608 - constant names
            "WHERE workspace = ? AND task_id = ?",
            (workspace, task_id),
        )
        return None if row is None else self.regate(flow_record(row), terminal=terminal)

    def regate(self, flow: FlowRecord, *, terminal: bool) -> FlowRecord:
        """:meth:`set_gated` of a row already read in this transaction (no read)."""
        gated = not terminal and (flow.has_parents or flow.concurrency_key is not None)
        if gated != flow.gated:
            self._conn.execute(
                "UPDATE queueflow_task SET gated = ? WHERE workspace = ? AND task_id = ?",
                (int(gated), flow.workspace, flow.task_id),
            )
        return FlowRecord(
            workspace=flow.workspace,
            task_id=flow.task_id,
            unique_key=flow.unique_key,
            concurrency_key=flow.concurrency_key,
            has_parents=flow.has_parents,
            gated=gated,
        )

    def settle_row(
        self, workspace: str, task_id: str, *, terminal: bool, children: bool
    ) -> tuple[FlowRecord | None, bool]:
        """:meth:`set_gated`, and with ``children`` :meth:`has_children` (else ``False``).

        With ``children``, both are read in one statement.
        """
        if not children:
            return self.set_gated(workspace, task_id, terminal=terminal), False
        row = self._one(_SETTLE_ROW, (workspace, task_id))
        kids = bool(row[-1])
        if row[0] is None:
            return None, kids
        return self.regate(flow_record(row), terminal=terminal), kids

    # -- unique keys ------------------------------------------------------------------------
    def claim_unique(self, workspace: str, key: str, task_id: str, unique_for_ms: int) -> bool:
        """Make ``task_id`` the key's holder if no task holds it; whether it did."""
        self._conn.execute(
            "INSERT INTO queueflow_unique (workspace, unique_key, task_id, unique_for_ms) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (workspace, unique_key) DO NOTHING",
            (workspace, key, task_id, unique_for_ms),
        )
        return int(self._conn.changes()) == 1

    def unique_holder(self, workspace: str, key: str) -> UniqueHolder | None:
        """The task holding ``key`` (it may have ended), or ``None``."""
        row = self._one(
            "SELECT task_id, unique_for_ms FROM queueflow_unique "
            "WHERE workspace = ? AND unique_key = ?",
            (workspace, key),
        )
        return None if row is None else UniqueHolder(task_id=str(row[0]), unique_for_ms=int(row[1]))

    def replace_unique(
        self, workspace: str, key: str, old_task_id: str, task_id: str, unique_for_ms: int
    ) -> bool:
        """Hand the key from ``old_task_id`` (whose hold ended) to ``task_id``; whether it did."""
        self._conn.execute(
            "UPDATE queueflow_unique SET task_id = ?, unique_for_ms = ? "
            "WHERE workspace = ? AND unique_key = ? AND task_id = ?",
            (task_id, unique_for_ms, workspace, key, old_task_id),
        )
        return int(self._conn.changes()) == 1

    # -- dependencies -----------------------------------------------------------------------
    def parent_statuses(self, workspace: str, task_ids: tuple[str, ...]) -> dict[str, str]:
        """The stored status of each existing task of ``task_ids``."""
        return self._statuses(workspace, task_ids, "")

    def _statuses(self, workspace: str, task_ids: tuple[str, ...], lock: str) -> dict[str, str]:
        if not task_ids:
            return {}
        rows = self._conn.execute(
            "SELECT task_id, status FROM queue_task "  # noqa: S608 - constant fragments
            f"WHERE workspace = ? AND task_id IN ({_marks(len(task_ids))}){lock}",
            (workspace, *task_ids),
        )
        return {str(r[0]): str(r[1]) for r in rows}

    def insert_deps(self, workspace: str, child_id: str, parent_ids: tuple[str, ...]) -> None:
        """Record that ``child_id`` runs after each of ``parent_ids``."""
        for position, parent in enumerate(parent_ids):
            self._conn.execute(
                "INSERT INTO queueflow_dep (workspace, child_id, parent_id, position) "
                "VALUES (?, ?, ?, ?)",
                (workspace, child_id, parent, position),
            )

    def parents(self, workspace: str, child_ids: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """Each child's parents (in the order given at create), by child id."""
        if not child_ids:
            return {}
        rows = self._conn.execute(
            "SELECT child_id, parent_id FROM queueflow_dep "  # noqa: S608 - constant names
            f"WHERE workspace = ? AND child_id IN ({_marks(len(child_ids))}) "
            "ORDER BY child_id, position",
            (workspace, *child_ids),
        )
        out: dict[str, list[str]] = {}
        for child, parent in rows:
            out.setdefault(str(child), []).append(str(parent))
        return {child: tuple(parents) for child, parents in out.items()}

    def open_children(self, workspace: str, parent_id: str) -> tuple[str, ...]:
        """The non-terminal children of ``parent_id``."""
        rows = self._conn.execute(
            "SELECT d.child_id FROM queueflow_dep d JOIN queue_task c "  # noqa: S608
            "ON c.workspace = d.workspace AND c.task_id = d.child_id "
            f"WHERE d.workspace = ? AND d.parent_id = ? AND c.status NOT IN {_TERMINAL} "
            "ORDER BY c.seq",
            (workspace, parent_id),
        )
        return tuple(str(r[0]) for r in rows)

    def has_children(self, workspace: str, parent_id: str) -> bool:
        """Whether any task runs after ``parent_id``."""
        row = self._one(
            "SELECT 1 FROM queueflow_dep WHERE workspace = ? AND parent_id = ? LIMIT 1",
            (workspace, parent_id),
        )
        return row is not None

    def waiting_on(self, workspace: str, child_id: str) -> tuple[str, ...]:
        """The parents of ``child_id`` that are not ``DONE`` (missing parents are not)."""
        rows = self._conn.execute(
            "SELECT d.parent_id FROM queueflow_dep d JOIN queue_task p "
            "ON p.workspace = d.workspace AND p.task_id = d.parent_id "
            "WHERE d.workspace = ? AND d.child_id = ? AND p.status <> 'DONE' ORDER BY d.position",
            (workspace, child_id),
        )
        return tuple(str(r[0]) for r in rows)

    def waiting(self, workspace: str, child_ids: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """:meth:`waiting_on` of each child in one read (children waiting on nothing left out)."""
        if not child_ids:
            return {}
        rows = self._conn.execute(
            "SELECT d.child_id, d.parent_id FROM queueflow_dep d JOIN queue_task p "  # noqa: S608
            "ON p.workspace = d.workspace AND p.task_id = d.parent_id "
            f"WHERE d.workspace = ? AND d.child_id IN ({_marks(len(child_ids))}) "
            "AND p.status <> 'DONE' ORDER BY d.child_id, d.position",
            (workspace, *child_ids),
        )
        out: dict[str, list[str]] = {}
        for child, parent in rows:
            out.setdefault(str(child), []).append(str(parent))
        return {child: tuple(parents) for child, parents in out.items()}

    # -- concurrency limits -----------------------------------------------------------------
    def key_leased(self, workspace: str, key: str, now_ms: int) -> int:
        """How many tasks of concurrency key ``key`` hold a live lease at ``now_ms``."""
        row = self._one(_LEASED_OF_KEY.format(ws="?", key="?"), (workspace, key, now_ms))
        return int(row[0])

    def set_limit(self, record: LimitRecord) -> None:
        """Set (or replace) a concurrency key's limit."""
        self._conn.execute(
            "INSERT INTO queueflow_limit (workspace, concurrency_key, max_leased, set_by, "
            "set_at_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace, concurrency_key) "
            "DO UPDATE SET max_leased = excluded.max_leased, set_by = excluded.set_by, "
            "set_at_ms = excluded.set_at_ms",
            (record.workspace, record.key, record.max_leased, record.set_by, record.set_at_ms),
        )

    def get_limit(self, workspace: str, key: str) -> LimitRecord | None:
        """The key's limit, or ``None`` (the default applies)."""
        row = self._one(
            "SELECT workspace, concurrency_key, max_leased, set_by, set_at_ms "
            "FROM queueflow_limit WHERE workspace = ? AND concurrency_key = ?",
            (workspace, key),
        )
        return None if row is None else _limit(row)

    def list_limits(self, workspace: str, now_ms: int) -> tuple[LimitRecord, ...]:
        """Every limit of the workspace, with its live lease count, by key."""
        leased = _LEASED_OF_KEY.format(ws="l.workspace", key="l.concurrency_key")
        rows = self._conn.execute(
            "SELECT l.workspace, l.concurrency_key, l.max_leased, l.set_by, l.set_at_ms, "  # noqa: S608
            f"({leased}) FROM queueflow_limit l WHERE l.workspace = ? "
            "ORDER BY l.concurrency_key",
            (now_ms, workspace),
        )
        return tuple(_limit(r) for r in rows)

    def gates_claims(self, workspace: str) -> bool:
        """Whether any non-terminal task of the workspace has parents or a concurrency key."""
        row = self._one(
            "SELECT 1 FROM queueflow_task INDEXED BY queueflow_task_gated "
            "WHERE workspace = ? AND gated = 1 LIMIT 1",
            (workspace,),
        )
        return row is not None

    def claim_context(self, workspace: str) -> ClaimContext:
        """The workspace's paused verbs and :meth:`gates_claims`, in one read."""
        rows = self._conn.execute(_CLAIM_CONTEXT, (workspace, workspace)).fetchall()
        return ClaimContext(
            paused=tuple(sorted(str(r[1]) for r in rows if not r[0])),
            gated=any(r[0] for r in rows),
        )

    def serialize_limited_claims(self, workspace: str, *, keyed: bool | None = None) -> None:
        """Nothing to do: SQLite has one writer at a time."""


def _limit(row: Any) -> LimitRecord:
    return LimitRecord(
        workspace=str(row[0]),
        key=str(row[1]),
        max_leased=int(row[2]),
        set_by=str(row[3]),
        set_at_ms=int(row[4]),
        leased=int(row[5]) if len(row) > 5 else 0,
    )
