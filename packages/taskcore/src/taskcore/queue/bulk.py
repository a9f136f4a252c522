"""Bulk requeue and cancel: the tasks a listing filter matches (docs/queue.md "Bulk").

:func:`select` reads up to ``limit`` tasks of the listing filter (status, verb, matter; the
board's backlog filter) in drain order and splits them into those the act applies to (``FAILED`` ones for a requeue,
the dead-letter set included; non-terminal ones for a cancel) and the rest. The operation
(:mod:`taskcore.queue.sched_ops`) then runs ``agenttask.requeue`` / ``agenttask.cancel`` on
each, inside the one transaction, each with its own audit event.
"""

from __future__ import annotations

import enum

import attrs

from taskcore.limits import QUEUE_BULK_MAX
from taskcore.queue import flow
from taskcore.queue.common import QueueCall, effective_status
from taskcore.queue.requests import BulkIn
from taskcore.queue.types import TaskStatus

__all__ = ["BulkAct", "Selection", "creation_order", "select", "still_applies"]


class BulkAct(enum.Enum):
    """A bulk act and the one-task verb it runs per task."""

    REQUEUE = "agenttask.requeue"
    CANCEL = "agenttask.cancel"

    def applies(self, status: TaskStatus) -> bool:
        """Whether the one-task verb accepts a task in ``status``.

        >>> BulkAct.REQUEUE.applies(TaskStatus.FAILED), BulkAct.CANCEL.applies(TaskStatus.DONE)
        (True, False)
        """
        if self is BulkAct.REQUEUE:
            return status is TaskStatus.FAILED
        return not status.terminal


@attrs.frozen(kw_only=True)
class Selection:
    """The tasks to act on, how many matched in another status, whether more match."""

    task_ids: tuple[str, ...]
    skipped: int
    more: bool


def select(call: QueueCall, act: BulkAct, request: BulkIn) -> Selection:
    """The tasks of the caller's workspace ``request``'s filter matches, split for ``act``."""
    limit = request.limit or QUEUE_BULK_MAX
    rows = call.tx.queue.backlog(
        call.workspace,
        status=None if request.status is None else request.status.value,
        verb=request.verb,
        matter_id=request.matter_id,
        after=None,
        limit=limit + 1,
        now_ms=call.now_ms,
    )
    page = rows[:limit]
    chosen = tuple(t.task_id for t in page if act.applies(effective_status(t, call.now_ms)))
    return Selection(task_ids=chosen, skipped=len(page) - len(chosen), more=len(rows) > limit)


# -- queueflow: a bulk act meets the cascades of the acts before it -----------------------------


def still_applies(call: QueueCall, act: BulkAct, task_id: str) -> bool:
    """Whether ``act`` still applies to ``task_id`` now, after the acts before it.

    A cancel (or the requeue of a parent) may have moved a task since :func:`select` chose it:
    cancelling a parent fails its open children (queue flow, docs/queue.md "Dependencies").
    And a child one of whose parents ended ``FAILED`` or ``CANCELLED`` is requeued only after
    that parent (``agenttask.requeue`` refuses it before): run the act in creation order,
    parents first, and such a child is counted as skipped.
    """
    task = call.tx.queue.get_task(call.workspace, task_id)
    if task is None or not act.applies(effective_status(task, call.now_ms)):
        return False
    if act is BulkAct.REQUEUE:
        return flow.orphaned_by(call, task)[0] is None
    return True


def creation_order(call: QueueCall, task_ids: tuple[str, ...]) -> tuple[str, ...]:
    """``task_ids`` oldest first: every parent before its children (they are created after)."""
    rows = [call.tx.queue.get_task(call.workspace, t) for t in task_ids]
    return tuple(r.task_id for r in sorted((r for r in rows if r is not None), key=lambda r: r.seq))
