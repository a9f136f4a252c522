"""What every queue verb shares: call context, ids, bounded JSON, not-found, lease reads.

How a task's lease reads (read-time expiry, the fence, the holder guard) is here because
every verb module needs it; the lease verbs and the runaway guard are
:mod:`taskcore.queue.leases`.

A task of another workspace, a task the caller may not read and a task that does not exist
all produce the *same* error (:func:`task_not_found`): same code, same message, same path.
Nothing in a refusal tells them apart.

>>> task_not_found("at_1").to_json()
{'error': 'no task at_1 in this workspace at $.taskId', 'code': 'NOT_FOUND', 'path': '$.taskId'}
>>> json_text({"a": [1, 2]}, max_bytes=64, path="$.payload")
'{"a":[1,2]}'
"""

from __future__ import annotations

import enum
import secrets
from typing import Any

import attrs

from taskcore import jsontext
from taskcore.actors import Actor, Tier
from taskcore.callnote import note_status
from taskcore.codec import dumps
from taskcore.errors import ErrorCode, TaskError
from taskcore.queue.retry import lapsed_exhausted
from taskcore.queue.transitions import TaskAction, next_status
from taskcore.queue.types import TaskStatus
from taskcore.store.queue_api import TaskRecord
from taskcore.store.queueflow_api import FlowRecord
from taskcore.store.storage import Transaction
from taskcore.store.wakeup import queue_topic
from taskcore.wirebuild import evolved

__all__ = [
    "UNREAD",
    "QueueCall",
    "Unread",
    "cleared_lease",
    "effective_status",
    "insert_task",
    "is_admin",
    "json_text",
    "lease_cleared",
    "lease_is_live",
    "load_task",
    "new_id",
    "parse_json_text",
    "require_fence",
    "require_holder",
    "task_not_found",
    "write_task",
]


class Unread(enum.Enum):
    """A flow row not read yet (:func:`write_task`'s ``known_flow``)."""

    UNREAD = enum.auto()


UNREAD = Unread.UNREAD


@attrs.frozen(kw_only=True)
class QueueCall:
    """One verb call: the open transaction, the caller, the time, the lease lengths.

    ``now_ms`` is read once per call so every timestamp the call writes agrees. ``lease_ms``
    is granted when a claim asks for no length; no claim gets more than ``lease_max_ms``.
    """

    tx: Transaction
    actor: Actor
    now_ms: int
    lease_ms: int
    lease_max_ms: int

    def lease_length(self, requested: int | None) -> int:
        """The lease a claim gets: what it asked for (or the default), capped."""
        return min(self.lease_ms if requested is None else requested, self.lease_max_ms)

    @property
    def workspace(self) -> str:
        """The caller's workspace: the explicit predicate of every query."""
        return self.actor.workspace


def is_admin(actor: Actor) -> bool:
    """Whether the caller has the admin tier (break-glass reads, matter access)."""
    return actor.tier >= Tier.ADMIN


def new_id(prefix: str) -> str:
    """Return a fresh random identifier such as ``at_<32 hex>``."""
    return f"{prefix}_{secrets.token_hex(16)}"


def task_not_found(task_id: str, *, path: str = "$.taskId") -> TaskError:
    """The one error for a missing, foreign or unreadable task."""
    return TaskError(ErrorCode.NOT_FOUND, f"no task {task_id} in this workspace", path=path)


def load_task(
    call: QueueCall, task_id: str, *, path: str = "$.taskId", for_update: bool = False
) -> TaskRecord:
    """Return the caller's workspace's task, or raise :func:`task_not_found`.

    ``for_update``: the call writes the task next (``QueueStore.get_task``).
    """
    task = call.tx.queue.get_task(call.workspace, task_id, for_update=for_update)
    if task is None:
        raise task_not_found(task_id, path=path)
    return task


def json_text(value: Any, *, max_bytes: int, path: str) -> str:
    """Encode a JSON value compactly, refusing it above ``max_bytes`` (``PAYLOAD_TOO_LARGE``)."""
    data = dumps(value)
    if len(data) > max_bytes:
        raise TaskError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"{len(data)} bytes of JSON; at most {max_bytes} are allowed",
            path=path,
        )
    return data.decode("utf-8")


def parse_json_text(text: str | None) -> Any:
    """Decode JSON text written by :func:`json_text` (``None`` stays ``None``).

    :func:`taskcore.jsontext.loads`: orjson where a service loaded it, ``json.loads`` for
    what it refuses.
    """
    return None if text is None else jsontext.loads(text)


def write_task(
    call: QueueCall,
    task: TaskRecord,
    known_flow: FlowRecord | Unread | None = UNREAD,
    /,
    **changes: Any,
) -> TaskRecord:
    """Store ``task`` with ``changes`` if its row is unchanged since it was read; return it.

    The stored record is made in one copy (its version one more than ``task``'s) and only
    the columns that differ from ``task`` are written. A lost compare-and-set (another writer
    changed the row) is a ``CONFLICT`` and the caller's transaction is rolled back, so
    nothing of the call is kept.

    Every queue transition writes its task here, so this is where the call's status move is
    noted for its audit event (:mod:`taskcore.callnote`): the status as observed before
    (an expired lease reads ``QUEUED``) and the status stored.

    ``known_flow`` is the task's ``queueflow`` row as this transaction already read it with
    the row-locked task (``None``: it has none), so settling the move need not read it again.
    """
    stored = _write_row(call, task, changes)
    if stored.status != task.status:
        _settle_flow(call, task, stored, known_flow)
    return stored


def _write_row(call: QueueCall, task: TaskRecord, changes: dict[str, Any]) -> TaskRecord:
    stored = evolved(task, version=task.version + 1, **changes)
    if not call.tx.queue.update_task(stored, before=task):
        raise TaskError(
            ErrorCode.CONFLICT, "the task changed while this call ran; read it and retry"
        )
    note_status(task.task_id, effective_status(task, call.now_ms).value, stored.status)
    return stored


# -- queueflow (issue 28): what a status move means for dependants and concurrency keys -----
_ENDED = frozenset({TaskStatus.FAILED.value, TaskStatus.CANCELLED.value})


def _settle_flow(
    call: QueueCall, before: TaskRecord, after: TaskRecord, known: FlowRecord | Unread | None
) -> None:
    """After a status move: keep the flow row's gate, wake claimers, fail orphaned children.

    A keyed task leaving ``LEASED`` frees a slot of its key and a parent reaching ``DONE``
    may free its children: both signal the workspace's waiting claimers. A parent ending
    ``FAILED`` or ``CANCELLED`` fails each open child (saying which parent), and so on down
    (a work list, not recursion: a chain may be long).
    """
    moves: list[tuple[TaskRecord, TaskRecord, FlowRecord | Unread | None]] = [
        (before, after, known)
    ]
    while moves:
        old, new, row = moves.pop()
        terminal = TaskStatus(new.status).terminal
        done = new.status == TaskStatus.DONE.value
        if row is UNREAD:
            flow, children = call.tx.queueflow.settle_row(
                call.workspace, new.task_id, terminal=terminal, children=done
            )
        else:  # the first move's row came with its task (a claim)
            flow = None if row is None else call.tx.queueflow.regate(row, terminal=terminal)
            children = done and call.tx.queueflow.has_children(call.workspace, new.task_id)
        keyed = flow is not None and flow.concurrency_key is not None
        if keyed and old.status == TaskStatus.LEASED.value:
            call.tx.signal(queue_topic(call.workspace))
        if done:
            if children:
                call.tx.signal(queue_topic(call.workspace))
        elif new.status in _ENDED:
            reason = f"parent {new.task_id} ended {new.status}"
            for child_id in call.tx.queueflow.open_children(call.workspace, new.task_id):
                moved = _fail_child(call, child_id, reason)
                if moved is not None:
                    moves.append((*moved, UNREAD))


def _fail_child(
    call: QueueCall, child_id: str, reason: str
) -> tuple[TaskRecord, TaskRecord] | None:
    """Fail an open child; ``None`` when a racing writer ended it first.

    On PostgreSQL the row-safe verbs run side by side: another parent's end may be failing
    the same child; its commit makes this compare-and-set miss, and the re-read sees it ended.
    """
    changes = {**lease_cleared(TaskStatus.FAILED, call.now_ms), "last_error": reason}
    for _ in range(2):
        child = load_task(call, child_id)
        if TaskStatus(child.status).terminal:
            return None
        stored = attrs.evolve(child, version=child.version + 1, **changes)
        if call.tx.queue.update_task(stored, before=child):
            note_status(child_id, effective_status(child, call.now_ms).value, stored.status)
            return child, stored
    raise TaskError(ErrorCode.CONFLICT, "the task changed while this call ran; read it and retry")


def insert_task(call: QueueCall, record: TaskRecord, *, with_seq: bool = True) -> TaskRecord:
    """Insert a new task row; return it as stored (its ``seq`` assigned, if ``with_seq``).

    Every queue task is created here, so its creation is noted for the call's audit event
    (no status before, its first status after), as :func:`write_task` notes every move.
    ``with_seq=False``: the caller reads nothing of the row back (``QueueStore.insert_task``).
    """
    stored = call.tx.queue.insert_task(record, with_seq=with_seq)
    note_status(stored.task_id, None, stored.status)
    return stored


def lease_is_live(task: TaskRecord, now_ms: int) -> bool:
    """Whether the task is ``LEASED`` and its lease has not expired at ``now_ms``."""
    return (
        task.status == TaskStatus.LEASED.value
        and task.lease_expires_at_ms is not None
        and now_ms < task.lease_expires_at_ms
    )


def effective_status(task: TaskRecord, now_ms: int) -> TaskStatus:
    """The status as observed at ``now_ms``: an expired lease reads as ``QUEUED``.

    Or ``FAILED``, for a retrying task at its last attempt (docs/queue.md "Retries").
    """
    status = TaskStatus(task.status)
    if status is TaskStatus.LEASED and not lease_is_live(task, now_ms):
        # A retrying task whose lease lapsed at its last attempt is dead-lettered (retry.py).
        return TaskStatus.FAILED if lapsed_exhausted(task, now_ms) else TaskStatus.QUEUED
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


def lease_cleared(status: TaskStatus, now_ms: int) -> dict[str, Any]:
    """The changes that put a task in ``status`` with no lease (see :func:`cleared_lease`).

    >>> sorted(lease_cleared(TaskStatus.DONE, 5).items())[:3]
    [('finished_at_ms', 5), ('first_leased_at_ms', None), ('heartbeat_at_ms', None)]
    """
    return {
        "status": status.value,
        "lease_owner": None,
        "lease_expires_at_ms": None,
        "heartbeat_at_ms": None,
        "lease_extensions": 0,
        "first_leased_at_ms": None,
        "finished_at_ms": now_ms if status.terminal else None,
        "updated_at_ms": now_ms,
    }


def cleared_lease(task: TaskRecord, status: TaskStatus, now_ms: int) -> TaskRecord:
    """The task in ``status`` with no lease (owner, expiry, heartbeat, first lease cleared).

    ``finished_at_ms`` is set exactly when ``status`` is terminal.
    """
    return attrs.evolve(task, **lease_cleared(status, now_ms))
