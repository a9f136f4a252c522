"""Durable task handles: a queue task seen as the MCP Tasks extension's task.

The MCP Tasks extension (``io.modelcontextprotocol/tasks``) lets a server answer a tool call
with a task handle the requester polls (``tasks/get``) and cancels (``tasks/cancel``). Ours are
queue tasks: the handle id is the task id, its state is the journal's, so handles survive a
restart of the server. This module decides everything about them; ``taskmcp`` only renders a
:class:`TaskHandle` on the wire.

Every read and write goes through the front door as the caller, on the caller's door, so the
tier, autonomy, owner guard, workspace scoping and one audit event per call apply unchanged:

* :func:`create_handle` is ``agenttask.create``;
* :func:`read_handle` is ``agenttask.get`` (its creator, its lease holder or an admin; another
  workspace's id is ``NOT_FOUND``), plus ``agenttask.feed`` for an escalated task's gate;
* :func:`cancel_handle` is ``agenttask.cancel`` (member tier, autonomy 2).

Status mapping (:func:`handle_status`)::

    QUEUED, LEASED -> working      ESCALATED -> input_required (with the gate)
    DONE -> completed (the checkpoint's output is the result)
    FAILED -> failed (lastError)   CANCELLED -> cancelled

>>> handle_status(TaskStatus.LEASED), handle_status(TaskStatus.ESCALATED)
(<HandleStatus.WORKING: 'working'>, <HandleStatus.INPUT_REQUIRED: 'input_required'>)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from taskcore.actors import Actor
from taskcore.limits import MCP_TASK_POLL_INTERVAL_MS
from taskcore.queue.types import ApprovalGateView, FeedResult, TaskStatus, TaskView
from taskcore.service import Door, Service

__all__ = [
    "HANDLE_POLL_INTERVAL_MS",
    "HANDLE_TOOLS",
    "HandleStatus",
    "TaskHandle",
    "cancel_handle",
    "create_handle",
    "handle_status",
    "read_handle",
]

HANDLE_POLL_INTERVAL_MS = MCP_TASK_POLL_INTERVAL_MS
"""How often a requester should poll a handle (queue work takes minutes, not milliseconds)."""

HANDLE_TOOLS: frozenset[str] = frozenset({"agenttask.create"})
"""Operations whose call may be answered with a task handle (the call queues work)."""


class HandleStatus(enum.Enum):
    """The MCP Tasks status vocabulary."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether the handle will never change again."""
        return self in (HandleStatus.COMPLETED, HandleStatus.FAILED, HandleStatus.CANCELLED)


_STATUS = {
    TaskStatus.QUEUED: HandleStatus.WORKING,
    TaskStatus.LEASED: HandleStatus.WORKING,
    TaskStatus.ESCALATED: HandleStatus.INPUT_REQUIRED,
    TaskStatus.DONE: HandleStatus.COMPLETED,
    TaskStatus.FAILED: HandleStatus.FAILED,
    TaskStatus.CANCELLED: HandleStatus.CANCELLED,
}


def handle_status(status: TaskStatus) -> HandleStatus:
    """The handle status a queue status shows as."""
    return _STATUS[status]


@attrs.frozen(kw_only=True)
class TaskHandle:
    """A queue task as a handle: its view, its handle status, and why it is in it."""

    task: TaskView
    gate: ApprovalGateView | None = None

    @property
    def task_id(self) -> str:
        """The handle id: the queue task id."""
        return self.task.task_id

    @property
    def status(self) -> HandleStatus:
        """The handle status (see the module table)."""
        return handle_status(self.task.status)

    @property
    def output(self) -> Any:
        """What a ``DONE`` task's worker wrote to ``checkpoint.output`` (else ``None``)."""
        checkpoint = self.task.checkpoint
        return checkpoint.get("output") if isinstance(checkpoint, Mapping) else None

    @property
    def message(self) -> str:
        """A one-line status message for people and models.

        >>> from taskcore.queue.types import TaskStatus
        >>> view = TaskView(task_id="at_1", verb="agent.run", status=TaskStatus.QUEUED,
        ...     priority=0, depth=0, autonomy_ceiling=1, parent_task_id=None, run_id=None,
        ...     matter_id=None, matter_step_id=None, payload=None, checkpoint=None,
        ...     last_error=None, created_by="t", created_at_ms=0, updated_at_ms=0,
        ...     finished_at_ms=None, fence=0, lease=None, escalation_gate_id=None)
        >>> TaskHandle(task=view).message
        'queued; waiting for a worker to claim it'
        """
        task = self.task
        if task.status is TaskStatus.QUEUED:
            return "queued; waiting for a worker to claim it"
        if task.status is TaskStatus.LEASED:
            return "a worker holds the task's lease and is working on it"
        if task.status is TaskStatus.ESCALATED:
            gate = self.gate
            why = f": {gate.reason}" if gate is not None and gate.reason else ""
            return f"waiting for an operator to decide approval gate {task.escalation_gate_id}{why}"
        if task.status is TaskStatus.DONE:
            return "done"
        if task.status is TaskStatus.FAILED:
            return task.last_error or "the task failed"
        return "cancelled"


def _view(service: Service, body: bytes) -> TaskView:
    return service.codec.decode(TaskView, body)


def create_handle(
    service: Service,
    actor: Actor,
    arguments: Mapping[str, Any],
    *,
    door: Door,
    traceparent: str | None = None,
) -> TaskHandle:
    """Queue a task (``agenttask.create`` as ``actor``) and return its handle."""
    response = service.dispatch(
        actor, "agenttask.create", arguments, door=door, traceparent=traceparent
    )
    return TaskHandle(task=_view(service, response.body))


def read_handle(service: Service, actor: Actor, task_id: str, *, door: Door) -> TaskHandle:
    """Read the handle ``task_id`` as ``actor`` (``agenttask.get``; ``feed`` for the gate)."""
    view = _view(
        service, service.dispatch(actor, "agenttask.get", {"taskId": task_id}, door=door).body
    )
    gate = None
    if view.status is TaskStatus.ESCALATED:
        feed = service.dispatch(actor, "agenttask.feed", {"taskId": task_id}, door=door)
        entries = service.codec.decode(FeedResult, feed.body).entries
        gate = entries[0].gate if entries else None
    return TaskHandle(task=view, gate=gate)


def cancel_handle(service: Service, actor: Actor, task_id: str, *, door: Door) -> TaskHandle:
    """Cancel the task behind a handle (``agenttask.cancel`` as ``actor``, same rules)."""
    response = service.dispatch(actor, "agenttask.cancel", {"taskId": task_id}, door=door)
    return TaskHandle(task=_view(service, response.body))
