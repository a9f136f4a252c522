"""The queue-flow store interface: unique keys, concurrency keys and limits, dependencies.

Component ``queueflow`` (issue 28): side tables keyed by queue task id, beside the queue's own
(``queue_task`` is untouched). What each row means, and every decision over them, is
:mod:`taskcore.queue.flow`; this is rows only.

* ``queueflow_task``: a task's flow attributes (``unique_key``, ``concurrency_key``, whether
  it has parents) and ``gated``: whether it is non-terminal and has parents or a concurrency
  key, so ``claimNext`` may have to pass it over (:data:`CLAIM_GATE` in the SQLite store).
* ``queueflow_unique``: which task holds a unique key of a workspace, and how long past its
  end (``unique_for_ms``).
* ``queueflow_dep``: a child and each of its parents (``after``).
* ``queueflow_limit``: the most leased tasks a concurrency key may have.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["ClaimContext", "FlowRecord", "LimitRecord", "QueueFlowStore", "UniqueHolder"]


@attrs.frozen(kw_only=True)
class FlowRecord:
    """One ``queueflow_task`` row (a task created with a key or with parents)."""

    workspace: str
    task_id: str
    unique_key: str | None = None
    concurrency_key: str | None = None
    has_parents: bool = False
    gated: bool = False


@attrs.frozen(kw_only=True)
class ClaimContext:
    """What ``claimNext`` reads of a workspace before its claim (:meth:`QueueFlowStore.claim_context`)."""

    paused: tuple[str, ...] = ()
    """The paused verbs, sorted."""
    gated: bool = False
    """:meth:`QueueFlowStore.gates_claims`."""
    keyed: bool | None = None
    """Whether a gated task has a concurrency key (``None``: not read; see
    :meth:`QueueFlowStore.serialize_limited_claims`)."""


@attrs.frozen(kw_only=True)
class UniqueHolder:
    """The task holding a unique key, and how long past its end it keeps holding it."""

    task_id: str
    unique_for_ms: int


@attrs.frozen(kw_only=True)
class LimitRecord:
    """A concurrency key's limit, and how many of its tasks hold a live lease now."""

    workspace: str
    key: str
    max_leased: int
    set_by: str
    set_at_ms: int
    leased: int = 0


class QueueFlowStore(Protocol):
    """The ``queueflow`` tables, inside the caller's transaction.

    Every statement names the workspace in its predicate.
    """

    def insert_flow(self, record: FlowRecord) -> None:
        """Record a new task's flow attributes."""
        ...

    def flows(self, workspace: str, task_ids: tuple[str, ...]) -> dict[str, FlowRecord]:
        """The flow rows of ``task_ids`` that have one, by task id."""
        ...

    def set_gated(self, workspace: str, task_id: str, *, terminal: bool) -> FlowRecord | None:
        """Mark the task's row gated unless ``terminal``; return the row (``None``: no row)."""
        ...

    def regate(self, flow: FlowRecord, *, terminal: bool) -> FlowRecord:
        """:meth:`set_gated` of a row already read in this transaction (no read)."""
        ...

    def settle_row(
        self, workspace: str, task_id: str, *, terminal: bool, children: bool
    ) -> tuple[FlowRecord | None, bool]:
        """:meth:`set_gated`, and with ``children`` :meth:`has_children` (else ``False``).

        PostgreSQL reads both in one statement.
        """
        ...

    def claim_unique(self, workspace: str, key: str, task_id: str, unique_for_ms: int) -> bool:
        """Make ``task_id`` the key's holder if no task holds it; whether it did.

        Safe under concurrent writers: a racing holder commits first or this one does.
        """
        ...

    def unique_holder(self, workspace: str, key: str) -> UniqueHolder | None:
        """The task holding ``key`` (it may have ended), or ``None``."""
        ...

    def replace_unique(
        self, workspace: str, key: str, old_task_id: str, task_id: str, unique_for_ms: int
    ) -> bool:
        """Hand the key from ``old_task_id`` (whose hold ended) to ``task_id``; whether it did."""
        ...

    def parent_statuses(self, workspace: str, task_ids: tuple[str, ...]) -> dict[str, str]:
        """The stored status of each existing task of ``task_ids`` (parents, read to depend on).

        PostgreSQL reads them ``FOR SHARE``: a parent's concurrent end waits for this
        transaction, so it sees the child's dependency and fails it.
        """
        ...

    def insert_deps(self, workspace: str, child_id: str, parent_ids: tuple[str, ...]) -> None:
        """Record that ``child_id`` runs after each of ``parent_ids``."""
        ...

    def parents(self, workspace: str, child_ids: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """Each child's parents (in the order given at create), by child id."""
        ...

    def open_children(self, workspace: str, parent_id: str) -> tuple[str, ...]:
        """The non-terminal children of ``parent_id``."""
        ...

    def has_children(self, workspace: str, parent_id: str) -> bool:
        """Whether any task runs after ``parent_id``."""
        ...

    def waiting_on(self, workspace: str, child_id: str) -> tuple[str, ...]:
        """The parents of ``child_id`` that are not ``DONE`` (missing parents are not)."""
        ...

    def waiting(self, workspace: str, child_ids: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """:meth:`waiting_on` of each child in one read (children waiting on nothing left out)."""
        ...

    def key_leased(self, workspace: str, key: str, now_ms: int) -> int:
        """How many tasks of concurrency key ``key`` hold a live lease at ``now_ms``."""
        ...

    def set_limit(self, record: LimitRecord) -> None:
        """Set (or replace) a concurrency key's limit."""
        ...

    def get_limit(self, workspace: str, key: str) -> LimitRecord | None:
        """The key's limit, or ``None`` (the default, ``CONCURRENCY_LIMIT_DEFAULT``)."""
        ...

    def list_limits(self, workspace: str, now_ms: int) -> tuple[LimitRecord, ...]:
        """Every limit of the workspace, with its live lease count, by key."""
        ...

    def gates_claims(self, workspace: str) -> bool:
        """Whether any non-terminal task of the workspace has parents or a concurrency key."""
        ...

    def claim_context(self, workspace: str) -> ClaimContext:
        """The workspace's paused verbs and :meth:`gates_claims` (PostgreSQL: one read)."""
        ...

    def serialize_limited_claims(self, workspace: str, *, keyed: bool | None = None) -> None:
        """Make concurrent ``claimNext`` calls of a workspace with limits take turns.

        Nothing on SQLite (one writer); on PostgreSQL a transaction advisory lock, taken
        before the claim reads, when a live task of the workspace has a concurrency key
        (``keyed``: as :meth:`claim_context` read it; ``None``: read it now).
        """
        ...
