"""Leases: read-time expiry, the fence, the holder guard, and the runaway guard.

* A lease is owned by a token identity and lives until ``lease_expires_at_ms`` (exclusive).
  Expiry is observed when a task is read: a ``LEASED`` task whose lease ran out has the
  *effective* status ``QUEUED``, is claimable by anyone it admits, and its old holder can no
  longer checkpoint, release or escalate it.
* Every claim increments the task's ``fence`` and hands it to the worker. A call that presents
  a fence other than the current one is refused with ``STALE_FENCE`` before anything else is
  looked at, so a paused worker can never write over its successor, even when both run under
  the same token.
* The runaway guard (the seed's cooperative floor): a non-terminal renewal that would make
  ``lease_extensions`` exceed :data:`~taskcore.limits.MAX_LEASE_EXTENSIONS`, or that comes
  more than :data:`~taskcore.limits.LEASE_WALLCLOCK_CAP_SECONDS` after the first lease, is
  refused and the task is force-requeued (see :func:`runaway_reason`).

>>> from taskcore.store.queue_api import TaskRecord
>>> t = TaskRecord(task_id="at_1", workspace="w", verb="agent.run", payload_json=None,
...     status="LEASED", priority=0, autonomy_ceiling=1, depth=0, parent_task_id=None,
...     run_id=None, matter_id=None, matter_step_id=None, created_by="tok", created_at_ms=0,
...     updated_at_ms=0, lease_owner="tok", lease_expires_at_ms=1000, first_leased_at_ms=0,
...     heartbeat_at_ms=0, fence=1)
>>> effective_status(t, 999), effective_status(t, 1000)
(<TaskStatus.LEASED: 'LEASED'>, <TaskStatus.QUEUED: 'QUEUED'>)
"""

from __future__ import annotations

import attrs

from taskcore.actors import Actor
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import LEASE_WALLCLOCK_CAP_SECONDS, MAX_LEASE_EXTENSIONS
from taskcore.queue.transitions import TaskAction, next_status
from taskcore.queue.types import TaskStatus
from taskcore.store.queue_api import TaskRecord

__all__ = [
    "cleared_lease",
    "effective_status",
    "granted_lease",
    "lease_is_live",
    "lease_length",
    "renewed_lease",
    "require_fence",
    "require_holder",
    "runaway_reason",
]


def lease_is_live(task: TaskRecord, now_ms: int) -> bool:
    """Whether the task is ``LEASED`` and its lease has not expired at ``now_ms``."""
    return (
        task.status == TaskStatus.LEASED.value
        and task.lease_expires_at_ms is not None
        and now_ms < task.lease_expires_at_ms
    )


def effective_status(task: TaskRecord, now_ms: int) -> TaskStatus:
    """The status as observed at ``now_ms``: an expired lease reads as ``QUEUED``."""
    status = TaskStatus(task.status)
    if status is TaskStatus.LEASED and not lease_is_live(task, now_ms):
        return TaskStatus.QUEUED
    return status


def require_fence(task: TaskRecord, fence: int | None) -> None:
    """Refuse a presented fence that is not the task's current one (``STALE_FENCE``)."""
    if fence is not None and fence != task.fence:
        raise TaskError(
            ErrorCode.STALE_FENCE,
            f"fence {fence} is stale; the task was claimed again (fence {task.fence}). "
            "Stop working on it",
            path="$.fence",
            details={"currentFence": task.fence},
        )


def require_holder(
    task: TaskRecord, actor: Actor, now_ms: int, fence: int | None, action: TaskAction
) -> TaskStatus:
    """Check the fence, the status and that ``actor`` holds a live lease; return the status.

    Order: ``STALE_FENCE``, then ``ILLEGAL_TRANSITION`` for a task whose status does not allow
    ``action`` at all (terminal), then ``LEASE_NOT_HELD`` (no live lease, or another owner's).
    """
    require_fence(task, fence)
    status = effective_status(task, now_ms)
    if status.terminal:
        next_status(status, action)
    if status is TaskStatus.ESCALATED:
        raise TaskError(
            ErrorCode.LEASE_NOT_HELD,
            f"the task is ESCALATED and holds no lease; it waits on approval gate "
            f"{task.escalation_gate_id}",
        )
    if task.lease_owner != actor.token_id:
        raise TaskError(
            ErrorCode.LEASE_NOT_HELD,
            "this caller does not hold the task's lease; claim a task first",
        )
    if status is not TaskStatus.LEASED:
        raise TaskError(
            ErrorCode.LEASE_NOT_HELD,
            f"the lease expired at {task.lease_expires_at_ms}; claim the task again",
            details={"expiredAtMs": task.lease_expires_at_ms},
        )
    return status


def granted_lease(task: TaskRecord, actor: Actor, now_ms: int, lease_ms: int) -> TaskRecord:
    """The task after ``actor`` claims it: a fresh lease, a new fence, a new runaway budget."""
    return attrs.evolve(
        task,
        status=TaskStatus.LEASED.value,
        lease_owner=actor.token_id,
        lease_expires_at_ms=now_ms + lease_ms,
        heartbeat_at_ms=now_ms,
        lease_extensions=0,
        first_leased_at_ms=now_ms,
        fence=task.fence + 1,
        exercised_autonomy=actor.autonomy,
        updated_at_ms=now_ms,
    )


def lease_length(task: TaskRecord, default_ms: int) -> int:
    """The length of the task's current lease (granted at claim, kept by every renewal)."""
    if task.lease_expires_at_ms is None or task.heartbeat_at_ms is None:
        return default_ms
    return task.lease_expires_at_ms - task.heartbeat_at_ms


def renewed_lease(task: TaskRecord, now_ms: int, default_ms: int) -> TaskRecord:
    """The task after a non-terminal checkpoint: expiry and heartbeat move, one more extension.

    The renewed lease has the length the claim granted.
    """
    return attrs.evolve(
        task,
        lease_expires_at_ms=now_ms + lease_length(task, default_ms),
        heartbeat_at_ms=now_ms,
        lease_extensions=task.lease_extensions + 1,
        updated_at_ms=now_ms,
    )


def cleared_lease(task: TaskRecord, status: TaskStatus, now_ms: int) -> TaskRecord:
    """The task in ``status`` with no lease (owner, expiry, heartbeat, first lease cleared).

    ``finished_at_ms`` is set exactly when ``status`` is terminal.
    """
    return attrs.evolve(
        task,
        status=status.value,
        lease_owner=None,
        lease_expires_at_ms=None,
        heartbeat_at_ms=None,
        lease_extensions=0,
        first_leased_at_ms=None,
        finished_at_ms=now_ms if status.terminal else None,
        updated_at_ms=now_ms,
    )


def runaway_reason(task: TaskRecord, now_ms: int) -> str | None:
    """Why a non-terminal renewal of ``task`` at ``now_ms`` trips the runaway guard, or ``None``.

    >>> from taskcore.store.queue_api import TaskRecord
    >>> t = TaskRecord(task_id="at_1", workspace="w", verb="agent.run", payload_json=None,
    ...     status="LEASED", priority=0, autonomy_ceiling=1, depth=0, parent_task_id=None,
    ...     run_id=None, matter_id=None, matter_step_id=None, created_by="tok",
    ...     created_at_ms=0, updated_at_ms=0, lease_owner="tok", lease_expires_at_ms=10,
    ...     first_leased_at_ms=0, lease_extensions=4)
    >>> runaway_reason(t, 5)
    'the lease was already extended 4 times (the limit is 4)'
    """
    if task.lease_extensions + 1 > MAX_LEASE_EXTENSIONS:
        return (
            f"the lease was already extended {task.lease_extensions} times "
            f"(the limit is {MAX_LEASE_EXTENSIONS})"
        )
    first = task.first_leased_at_ms if task.first_leased_at_ms is not None else now_ms
    if now_ms - first > LEASE_WALLCLOCK_CAP_SECONDS * 1000:
        return (
            f"the task has been leased for {(now_ms - first) // 1000} s "
            f"(the cap is {LEASE_WALLCLOCK_CAP_SECONDS} s)"
        )
    return None
