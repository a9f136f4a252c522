"""Everything that decides a task's or an attempt's next state lives here, as tables.

A logical task moves ``pending -> claimed -> finished``; a cancellation parks it in
``cancelled`` and only an explicit reconciliation returns an unfinished task to ``pending``
(with a strictly greater fence reserved for the replacement). An attempt moves
``leased -> finished | cancelled``; reconciliation moves ``leased`` or ``cancelled`` to
``replaced``. ``finished`` and ``replaced`` attempts never change again.

A missing entry in a table is the error: :func:`task_transition` and
:func:`attempt_transition` raise ``ILLEGAL_TRANSITION`` and the caller writes nothing.

Lease expiry is not a state: it is observed at read time (:func:`observe_attempt`) and is
never proof that execution stopped, so no transition is triggered by time.

>>> task_transition(Event.CLAIM, TaskState.PENDING)
<TaskState.CLAIMED: 'claimed'>
>>> attempt_transition(Event.HEARTBEAT, AttemptState.REPLACED)
Traceback (most recent call last):
taskcore.errors.TaskError: an attempt that is replaced cannot take a heartbeat
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from taskcore.contract import ObservedState
from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "ATTEMPT_TRANSITIONS",
    "TASK_TRANSITIONS",
    "UNRESOLVED_TASK_STATES",
    "AttemptState",
    "Event",
    "TaskState",
    "attempt_transition",
    "observe_attempt",
    "task_transition",
]


class Event(enum.Enum):
    """What can happen to a task or an attempt."""

    CLAIM = "claim"
    HEARTBEAT = "heartbeat"
    RESULT = "result"
    CANCEL = "cancel"
    RECONCILE = "reconcile"


class TaskState(enum.Enum):
    """The journal state of a logical task."""

    PENDING = "pending"
    CLAIMED = "claimed"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class AttemptState(enum.Enum):
    """The journal state of an attempt (expiry is observed, not stored)."""

    LEASED = "leased"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    REPLACED = "replaced"


TASK_TRANSITIONS: Final[Mapping[Event, Mapping[TaskState, TaskState]]] = {
    Event.CLAIM: {TaskState.PENDING: TaskState.CLAIMED},
    Event.HEARTBEAT: {TaskState.CLAIMED: TaskState.CLAIMED},
    Event.RESULT: {TaskState.CLAIMED: TaskState.FINISHED},
    Event.CANCEL: {TaskState.CLAIMED: TaskState.CANCELLED},
    Event.RECONCILE: {TaskState.CLAIMED: TaskState.PENDING, TaskState.CANCELLED: TaskState.PENDING},
}
"""Allowed task transitions: ``TASK_TRANSITIONS[event][state] -> new state``."""

ATTEMPT_TRANSITIONS: Final[Mapping[Event, Mapping[AttemptState, AttemptState]]] = {
    Event.HEARTBEAT: {AttemptState.LEASED: AttemptState.LEASED},
    Event.RESULT: {AttemptState.LEASED: AttemptState.FINISHED},
    Event.CANCEL: {AttemptState.LEASED: AttemptState.CANCELLED},
    Event.RECONCILE: {
        AttemptState.LEASED: AttemptState.REPLACED,
        AttemptState.CANCELLED: AttemptState.REPLACED,
    },
}
"""Allowed attempt transitions: ``ATTEMPT_TRANSITIONS[event][state] -> new state``.

A claim creates an attempt in ``leased``; it is not a transition of an existing attempt.
"""

UNRESOLVED_TASK_STATES: Final = frozenset({TaskState.CLAIMED, TaskState.CANCELLED})
"""Tasks whose attempt is unresolved: it may still run and nobody reconciled it.

A fresh claim for the same repository, Change, profile and step is refused while an older
subject has a task in one of these states.
"""

_VERBS: Final = {
    Event.CLAIM: "be claimed",
    Event.HEARTBEAT: "take a heartbeat",
    Event.RESULT: "take a result",
    Event.CANCEL: "be cancelled",
    Event.RECONCILE: "be reconciled",
}


def task_transition(event: Event, state: TaskState) -> TaskState:
    """Return the task's next state, or raise ``ILLEGAL_TRANSITION``."""
    target = TASK_TRANSITIONS.get(event, {}).get(state)
    if target is None:
        raise TaskError(
            ErrorCode.ILLEGAL_TRANSITION, f"a task that is {state.value} cannot {_VERBS[event]}"
        )
    return target


def attempt_transition(event: Event, state: AttemptState) -> AttemptState:
    """Return the attempt's next state, or raise ``ILLEGAL_TRANSITION``."""
    target = ATTEMPT_TRANSITIONS.get(event, {}).get(state)
    if target is None:
        raise TaskError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"an attempt that is {state.value} cannot {_VERBS[event]}",
        )
    return target


def observe_attempt(state: AttemptState, lease_expires_at_ms: int, now_ms: int) -> ObservedState:
    """The state a read reports: ``leased`` becomes ``expired`` once the lease has run out.

    >>> observe_attempt(AttemptState.LEASED, 1_000, 1_000).value
    'expired'
    """
    if state is AttemptState.LEASED:
        return ObservedState.LEASED if now_ms < lease_expires_at_ms else ObservedState.EXPIRED
    return {
        AttemptState.FINISHED: ObservedState.FINISHED,
        AttemptState.CANCELLED: ObservedState.CANCELLED,
        AttemptState.REPLACED: ObservedState.REPLACED,
    }[state]
