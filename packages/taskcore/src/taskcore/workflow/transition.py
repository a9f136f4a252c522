"""Applying a transition: one function from the state table to the rows it writes.

Claim, heartbeat, cancel, reconcile, result and the collector's upload each decide *whether*
a transition may happen (bindings, fences, authority, idempotency); *what it does to the
rows* is decided here, once, from the tables in :mod:`taskcore.workflow.states`:

=========  ====================  ======================  =====================================
event      task                  attempt                 also
=========  ====================  ======================  =====================================
claim      pending -> claimed    (new) leased            next_fence = fence + 1, current attempt
heartbeat  claimed -> claimed    leased -> leased        lease expiry moves
result     claimed -> finished   leased -> finished      completion recorded (or cleared)
cancel     claimed -> cancelled  leased -> cancelled
reconcile  claimed|cancelled     leased|cancelled        superseded_by_fence = task.next_fence
           -> pending            -> replaced             (the next claim's, strictly greater)
=========  ====================  ======================  =====================================

:func:`transition` returns :class:`Effects` (the new task and attempt versions beside the
ones read, and the transition-log row) without writing anything; :meth:`Effects.write`
writes them in the caller's transaction, updating only the columns that changed. An event
the tables do not allow raises ``ILLEGAL_TRANSITION`` before any row is built.

>>> from taskcore.store.journal_api import TaskRecord
>>> task = TaskRecord(task_id="t", task_digest="d", subject_seq=1, repository_id="r",
...     profile_id="p", change_id="c", step_id="s", plan_index=0, body=b"{}", state="pending",
...     next_fence=1, current_attempt_id=None, completion=None, created_at_ms=0,
...     updated_at_ms=0)
>>> transition(Event.CANCEL, task, attempt=None, agent=("o", "a"), now_ms=5)
Traceback (most recent call last):
taskcore.errors.TaskError: a task that is pending cannot be cancelled
"""

from __future__ import annotations

import attrs

from taskcore.callnote import note_status
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.journal_api import AttemptRecord, TaskRecord, TransitionRecord
from taskcore.store.storage import Transaction
from taskcore.workflow.states import (
    AttemptState,
    Event,
    TaskState,
    attempt_transition,
    task_transition,
)

__all__ = ["Effects", "check", "transition"]


@attrs.frozen(kw_only=True)
class Effects:
    """The rows one transition writes: new versions beside the versions read, and the log.

    ``attempt_before`` is ``None`` for a claim (the attempt is inserted).
    """

    event: Event
    task_before: TaskRecord
    task: TaskRecord
    attempt_before: AttemptRecord | None
    attempt: AttemptRecord
    log: TransitionRecord

    @property
    def task_state(self) -> TaskState:
        """The task's new state."""
        return TaskState(self.task.state)

    @property
    def attempt_state(self) -> AttemptState:
        """The attempt's new state."""
        return AttemptState(self.attempt.state)

    def write(self, tx: Transaction) -> None:
        """Write the effects in ``tx`` (changed columns only); return nothing.

        Every workflow transition is written here, so the task's state move is noted here
        for the call's audit event (:mod:`taskcore.callnote`).
        """
        if self.attempt_before is None:
            tx.journal.insert_attempt(self.attempt)
        else:
            tx.journal.update_attempt(self.attempt, before=self.attempt_before)
        tx.journal.update_task(self.task, before=self.task_before)
        tx.journal.append_transition(self.log)
        note_status(self.task.task_id, self.task_before.state, self.task.state)


def check(event: Event, task: TaskRecord, attempt: AttemptRecord | None = None) -> None:
    """Refuse (``ILLEGAL_TRANSITION``) an event the tables do not allow, writing nothing.

    For callers that must refuse an illegal transition before their other checks; the
    effects are built later by :func:`transition`, which checks again.
    """
    task_transition(event, TaskState(task.state))
    if attempt is not None and event is not Event.CLAIM:
        attempt_transition(event, AttemptState(attempt.state))


def transition(
    event: Event,
    task: TaskRecord,
    *,
    attempt: AttemptRecord | None,
    agent: tuple[str, str],
    now_ms: int,
    request_id: str | None = None,
    log_event: str | None = None,
    lease_expires_at_ms: int | None = None,
    completion: str | None = None,
) -> Effects:
    """The effects of ``event`` on ``task`` and its ``attempt``, from the state tables.

    ``attempt`` is the new attempt for a claim (state ``leased``, at the task's next fence)
    and the stored one otherwise. ``agent`` is the (owner, agent) the log row names;
    ``log_event`` the event the log records when it is not the event's own name (the
    collector's ``collector_claim``, ``collector_upload``). ``lease_expires_at_ms`` is the
    renewed expiry (heartbeat only); ``completion`` what a result completes (result only).
    """
    new_task_state = task_transition(event, TaskState(task.state))
    if attempt is None:
        raise TaskError(ErrorCode.INTERNAL, f"a {event.value} needs an attempt")
    task_changes: dict[str, object] = {"state": new_task_state.value, "updated_at_ms": now_ms}
    attempt_before: AttemptRecord | None = attempt
    if event is Event.CLAIM:
        if attempt.state != AttemptState.LEASED.value or attempt.fence != task.next_fence:
            raise TaskError(
                ErrorCode.INTERNAL, "a claim creates a leased attempt at the task's next fence"
            )
        attempt_before = None
        new_attempt = attempt
        task_changes.update(next_fence=attempt.fence + 1, current_attempt_id=attempt.attempt_id)
    else:
        new_attempt_state = attempt_transition(event, AttemptState(attempt.state))
        attempt_changes: dict[str, object] = {
            "state": new_attempt_state.value,
            "updated_at_ms": now_ms,
        }
        if event is Event.HEARTBEAT:
            if lease_expires_at_ms is None:
                raise TaskError(ErrorCode.INTERNAL, "a heartbeat needs the renewed expiry")
            attempt_changes["lease_expires_at_ms"] = lease_expires_at_ms
        elif event is Event.RECONCILE:
            # The replacement's fence is reserved now: the next claim gets task.next_fence,
            # strictly greater than every fence the task has issued.
            attempt_changes["superseded_by_fence"] = task.next_fence
        elif event is Event.RESULT:
            task_changes["completion"] = completion
        new_attempt = attrs.evolve(attempt, **attempt_changes)  # type: ignore[arg-type]
    owner_id, agent_id = agent
    return Effects(
        event=event,
        task_before=task,
        task=attrs.evolve(task, **task_changes),  # type: ignore[arg-type]
        attempt_before=attempt_before,
        attempt=new_attempt,
        log=TransitionRecord(
            at_ms=now_ms,
            task_id=task.task_id,
            attempt_id=attempt.attempt_id,
            event=log_event or event.value,
            from_state=task.state,
            to_state=new_task_state.value,
            fence=attempt.fence,
            owner_id=owner_id,
            agent_id=agent_id,
            request_id=request_id,
        ),
    )
