"""The queue's state machines, as tables.

Everything that decides which status a task (or an approval gate) may move to lives here,
h11-style: :data:`TASK_TRANSITIONS` maps a status and an action to the next status, and a
missing entry *is* the refusal: :func:`next_status` raises ``ILLEGAL_TRANSITION`` (a
Conflict) and the caller has written nothing yet. Terminal statuses have no entries (but
``FAILED -> requeue``), so a terminal task refuses cancel, reorder and every lease operation;
never a silent no-op.

The verbs apply the table to the task's *effective* status (a ``LEASED`` task whose lease
expired reads as ``QUEUED``; see :func:`taskcore.queue.common.effective_status`).

>>> next_status(TaskStatus.QUEUED, TaskAction.CLAIM)
<TaskStatus.LEASED: 'LEASED'>
>>> next_status(TaskStatus.DONE, TaskAction.CANCEL)
Traceback (most recent call last):
taskcore.errors.TaskError: agenttask.cancel is not allowed on a DONE task; it is terminal
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from taskcore.errors import ErrorCode, TaskError
from taskcore.queue.types import GateStatus, TaskStatus

__all__ = [
    "GATE_TRANSITIONS",
    "TASK_TRANSITIONS",
    "GateAction",
    "TaskAction",
    "next_gate_status",
    "next_status",
]


class TaskAction(enum.Enum):
    """What happens to a task; the value names the verb that does it, for messages."""

    CLAIM = "agenttask.claim"
    RENEW = "agenttask.checkpoint"
    COMPLETE = "agenttask.checkpoint(DONE)"
    FAIL = "agenttask.checkpoint(FAILED)"
    RUNAWAY = "the lease runaway guard"
    RETRY = "a retry (a failed attempt below maxAttempts)"
    RELEASE = "agenttask.release"
    REQUEUE = "agenttask.requeue"
    CANCEL = "agenttask.cancel"
    ESCALATE = "agenttask.escalate"
    APPROVE = "agenttask.gate.approve"
    REJECT = "agenttask.gate.reject"
    REPRIORITIZE = "agenttask.reorder"
    WRITE_PHASE = "agenttask.checkpoint.write"
    APPLY_GRANT = "agenttask.gate.apply"


_Q, _L, _E = TaskStatus.QUEUED, TaskStatus.LEASED, TaskStatus.ESCALATED
_D, _F, _C = TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED
_A = TaskAction

TASK_TRANSITIONS: Mapping[TaskStatus, Mapping[TaskAction, TaskStatus]] = MappingProxyType(
    {
        _Q: {_A.CLAIM: _L, _A.ESCALATE: _E, _A.CANCEL: _C, _A.REPRIORITIZE: _Q},
        _L: {
            _A.RENEW: _L,
            _A.COMPLETE: _D,
            _A.FAIL: _F,
            _A.RUNAWAY: _Q,
            _A.RETRY: _Q,
            _A.RELEASE: _Q,
            _A.ESCALATE: _E,
            _A.CANCEL: _C,
            _A.REPRIORITIZE: _L,
            _A.WRITE_PHASE: _L,
            _A.APPLY_GRANT: _L,
        },
        _E: {_A.APPROVE: _Q, _A.REJECT: _F, _A.CANCEL: _C, _A.REPRIORITIZE: _E},
        _F: {_A.REQUEUE: _Q},
        _D: {},
        _C: {},
    }
)
"""status -> action -> next status. A missing entry is ``ILLEGAL_TRANSITION``."""


class GateAction(enum.Enum):
    """What happens to an approval gate."""

    APPROVE = "approve"
    REJECT = "reject"
    CONSUME = "consume"
    VOID = "void"


GATE_TRANSITIONS: Mapping[GateStatus, Mapping[GateAction, GateStatus]] = MappingProxyType(
    {
        GateStatus.PENDING: {
            GateAction.APPROVE: GateStatus.APPROVED,
            GateAction.REJECT: GateStatus.REJECTED,
            GateAction.VOID: GateStatus.VOIDED,
        },
        GateStatus.APPROVED: {
            GateAction.CONSUME: GateStatus.CONSUMED,
            GateAction.VOID: GateStatus.VOIDED,
        },
        GateStatus.REJECTED: {},
        GateStatus.CONSUMED: {},
        GateStatus.VOIDED: {},
    }
)
"""gate status -> action -> next status. An approval gate is decided once, consumed once."""


def next_status(status: TaskStatus, action: TaskAction) -> TaskStatus:
    """Return the status ``action`` leads to from ``status``, or raise ``ILLEGAL_TRANSITION``."""
    target = TASK_TRANSITIONS[status].get(action)
    if target is None:
        why = "it is terminal" if status.terminal else "see docs/queue.md for what it allows"
        raise TaskError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{action.value} is not allowed on a {status.value} task; {why}",
            details={"status": status.value},
        )
    return target


def next_gate_status(status: GateStatus, action: GateAction) -> GateStatus:
    """Return the gate status ``action`` leads to, or raise ``ILLEGAL_TRANSITION``.

    >>> next_gate_status(GateStatus.APPROVED, GateAction.APPROVE)
    Traceback (most recent call last):
    taskcore.errors.TaskError: the approval gate is APPROVED; it is decided once and used once
    """
    target = GATE_TRANSITIONS[status].get(action)
    if target is None:
        raise TaskError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"the approval gate is {status.value}; it is decided once and used once",
            details={"status": status.value},
        )
    return target
