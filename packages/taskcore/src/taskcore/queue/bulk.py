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
from taskcore.queue.common import QueueCall, effective_status
from taskcore.queue.requests import BulkIn
from taskcore.queue.types import TaskStatus

__all__ = ["BulkAct", "Selection", "select"]


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
