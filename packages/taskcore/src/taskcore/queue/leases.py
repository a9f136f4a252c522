"""Leases: the lease verbs (claim, claimNext, checkpoint, release, escalate) and the lease's life.

* A lease is owned by a token identity and lives until ``lease_expires_at_ms`` (exclusive).
  Expiry is observed when a task is read (:func:`taskcore.queue.common.effective_status`): a
  ``LEASED`` task whose lease ran out has the *effective* status ``QUEUED``, is claimable by
  anyone it admits, and its old holder can no longer checkpoint, release or escalate it.
* Every claim increments the task's ``fence`` and hands it to the worker. A call that presents
  a fence other than the current one is refused with ``STALE_FENCE`` before anything else is
  looked at (:func:`taskcore.queue.common.require_holder`), so a paused worker can never write
  over its successor, even when both run under the same token.
* The runaway guard (the seed's cooperative floor): a non-terminal renewal that would make
  ``lease_extensions`` exceed :data:`~taskcore.limits.MAX_LEASE_EXTENSIONS`, or that comes
  more than :data:`~taskcore.limits.LEASE_WALLCLOCK_CAP_SECONDS` after the first lease, is
  refused and the task is force-requeued (see :func:`runaway_reason`).

Each verb runs inside the caller's one write transaction and either returns its result or
raises a :class:`~taskcore.errors.TaskError` having written nothing. The one exception is
the runaway guard: a refused renewal force-requeues the task *and* refuses the call, so
:func:`checkpoint` returns :class:`Refused` (the effect to keep, the error to answer with); its
operation hands that to the front door as ``CommitThenRefuse``, which commits the requeue with
the call's audit event and then raises the error.

Claims are single-winner compare-and-set transitions (:func:`taskcore.queue.common.write_task`
on the row version, inside ``BEGIN IMMEDIATE``): two claimers never both win a task, and
concurrent ``claimNext`` callers each take a different one.

>>> from taskcore.store.queue_api import TaskRecord
>>> t = TaskRecord(task_id="at_1", workspace="w", verb="agent.run", payload_json=None,
...     status="LEASED", priority=0, autonomy_ceiling=1, depth=0, parent_task_id=None,
...     run_id=None, matter_id=None, matter_step_id=None, created_by="tok", created_at_ms=0,
...     updated_at_ms=0, lease_owner="tok", lease_expires_at_ms=1000, first_leased_at_ms=0,
...     heartbeat_at_ms=0, fence=1)
>>> from taskcore.actors import Tier
>>> holder = Actor(token_id="tok2", workspace="w", tier=Tier.AGENT, autonomy=1)
>>> lease_length(t, 30_000), granted_lease(t, holder, 5, 100).fence
(1000, 2)
"""

from __future__ import annotations

from typing import Any

import attrs

from taskcore.actors import MAX_AUTONOMY, Actor
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    LEASE_WALLCLOCK_CAP_SECONDS,
    MAX_LEASE_EXTENSIONS,
    QUEUE_PAYLOAD_MAX_BYTES,
)
from taskcore.queue import flow
from taskcore.queue.approval import GRANT_VERB, input_hash, mint_gate, open_grant, void_open_gate
from taskcore.queue.common import (
    UNREAD,
    QueueCall,
    Unread,
    effective_status,
    is_admin,
    json_text,
    lease_cleared,
    load_task,
    require_fence,
    require_holder,
    write_task,
)
from taskcore.queue.requests import CheckpointIn, ClaimIn, ClaimNextIn, EscalateIn, ReleaseIn
from taskcore.queue.retry import claim_changes, failure_changes, not_due_until, retries
from taskcore.queue.transitions import TaskAction, next_status
from taskcore.queue.types import ClaimResult, EscalateResult, LeaseHandle, TaskStatus, TaskView
from taskcore.queue.views import gate_view, phase_view, task_view
from taskcore.store.queue_api import TaskRecord
from taskcore.store.queueflow_api import FlowRecord
from taskcore.wirebuild import constructor

__all__ = [
    "Refused",
    "checkpoint",
    "claim",
    "claim_next",
    "escalate",
    "granted_lease",
    "lease_granted",
    "lease_length",
    "lease_renewed",
    "release",
    "renewed_lease",
    "runaway_reason",
]


def lease_granted(task: TaskRecord, actor: Actor, now_ms: int, lease_ms: int) -> dict[str, Any]:
    """The changes :func:`granted_lease` makes (for one copy with :func:`write_task`)."""
    return {
        "status": TaskStatus.LEASED.value,
        "lease_owner": actor.token_id,
        "lease_expires_at_ms": now_ms + lease_ms,
        "heartbeat_at_ms": now_ms,
        "lease_extensions": 0,
        "first_leased_at_ms": now_ms,
        "fence": task.fence + 1,
        "exercised_autonomy": actor.autonomy,
        "updated_at_ms": now_ms,
    }


def granted_lease(task: TaskRecord, actor: Actor, now_ms: int, lease_ms: int) -> TaskRecord:
    """The task after ``actor`` claims it: a fresh lease, a new fence, a new runaway budget."""
    return attrs.evolve(task, **lease_granted(task, actor, now_ms, lease_ms))


def lease_length(task: TaskRecord, default_ms: int) -> int:
    """The length of the task's current lease (granted at claim, kept by every renewal)."""
    if task.lease_expires_at_ms is None or task.heartbeat_at_ms is None:
        return default_ms
    return task.lease_expires_at_ms - task.heartbeat_at_ms


def lease_renewed(task: TaskRecord, now_ms: int, default_ms: int) -> dict[str, Any]:
    """The changes :func:`renewed_lease` makes (for one copy with :func:`write_task`)."""
    return {
        "lease_expires_at_ms": now_ms + lease_length(task, default_ms),
        "heartbeat_at_ms": now_ms,
        "lease_extensions": task.lease_extensions + 1,
        "updated_at_ms": now_ms,
    }


def renewed_lease(task: TaskRecord, now_ms: int, default_ms: int) -> TaskRecord:
    """The task after a non-terminal checkpoint: expiry and heartbeat move, one more extension.

    The renewed lease has the length the claim granted.
    """
    return attrs.evolve(task, **lease_renewed(task, now_ms, default_ms))


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


@attrs.frozen
class Refused:
    """The call changed state that must be kept, and must still be refused with ``error``."""

    error: TaskError


def _take(
    call: QueueCall,
    task: TaskRecord,
    lease_ms: int | None,
    flow_row: FlowRecord | Unread | None = UNREAD,
) -> ClaimResult:
    length = call.lease_length(lease_ms)
    granted = lease_granted(task, call.actor, call.now_ms, length)
    claimed = write_task(call, task, flow_row, **granted, **claim_changes(task, call.now_ms))
    grant = open_grant(call, claimed)
    # Phase checkpoints are written only under a live lease (checkpoints.write_phase), and
    # every claim raises the fence: a task never claimed before (fence 0) has none.
    phase = None if task.fence == 0 else call.tx.queue.latest_phase(call.workspace, claimed.task_id)
    assert claimed.lease_owner is not None
    assert claimed.lease_expires_at_ms is not None
    return constructor(ClaimResult)(
        claimed=True,
        task=task_view(claimed, call.now_ms),
        lease=constructor(LeaseHandle)(
            task_id=claimed.task_id,
            owner=claimed.lease_owner,
            fence=claimed.fence,
            expires_at_ms=claimed.lease_expires_at_ms,
            grant=grant,
        ),
        resume=None if phase is None else phase_view(phase),
    )


def claim(call: QueueCall, request: ClaimIn) -> ClaimResult:
    """Lease one named task.

    Refusals: ``NOT_FOUND`` (missing or another workspace's), ``CONFLICT`` (someone holds a
    live lease), ``ILLEGAL_TRANSITION`` (escalated or terminal), ``AUTONOMY_EXCEEDED`` (the
    caller's autonomy is above the task's ceiling).
    """
    task = load_task(call, request.task_id)
    status = effective_status(task, call.now_ms)
    if status is TaskStatus.LEASED:
        whose = "this caller" if task.lease_owner == call.actor.token_id else "another worker"
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the task is leased by {whose} until {task.lease_expires_at_ms}; claim another task",
            details={"leaseExpiresAtMs": task.lease_expires_at_ms},
        )
    next_status(status, TaskAction.CLAIM)
    _require_claimable_now(call, task)
    if call.actor.autonomy > task.autonomy_ceiling:
        raise TaskError(
            ErrorCode.AUTONOMY_EXCEEDED,
            f"the task admits autonomy up to {task.autonomy_ceiling}; this token has "
            f"{call.actor.autonomy}",
        )
    flow.check_claimable(call, task)
    return _take(call, task, request.lease_ms)


def _require_claimable_now(call: QueueCall, task: TaskRecord) -> None:
    """Scheduling (docs/queue.md "Scheduled tasks", "Pause"): not before runAt, not paused."""
    due = not_due_until(task, call.now_ms)
    if due is not None:
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the task is not claimable before {due} (runAtMs); claim it then, or another task",
            details={"runAtMs": due},
        )
    if call.tx.queue.is_paused(call.workspace, task.verb):
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the verb {task.verb} is paused in this workspace; an admin resumes it with "
            "agenttask.resume",
            details={"verb": task.verb},
        )


def claim_next(call: QueueCall, request: ClaimNextIn) -> ClaimResult:
    """Lease the best task the caller is allowed to run, or answer ``{"claimed": false}``.

    Best: highest priority, then oldest; among ``QUEUED`` tasks that are due and tasks whose
    lease expired (a retrying task's after its back-off), whose autonomy ceiling admits the
    caller, optionally of one carrier verb, and of no paused verb.
    """
    # The context and, unless gated, the claim: one statement on PostgreSQL.
    context, task, found = call.tx.queue.claim_opening(
        call.workspace,
        max_autonomy=MAX_AUTONOMY,
        autonomy=call.actor.autonomy,
        verb=request.verb,
        now_ms=call.now_ms,
    )
    paused = context.paused
    if request.verb is not None and request.verb in paused:
        return ClaimResult(claimed=False)
    if context.gated:
        # queueflow: a PostgreSQL workspace's keyed claims take turns first
        # (QueueFlowStore.serialize_limited_claims).
        call.tx.queueflow.serialize_limited_claims(call.workspace, keyed=context.keyed)
        task, found = _best(call, request, paused, gated=True)
    elif task is not None and found is not None and found.gated:
        # A gated task committed between the context read and the claim: claim through the
        # gate (as _best does).
        call.tx.queueflow.serialize_limited_claims(call.workspace)
        task, found = _best(call, request, paused, gated=True)
    if task is None:
        return ClaimResult(claimed=False)
    return _take(call, task, request.lease_ms, found)


def _best(
    call: QueueCall, request: ClaimNextIn, paused: tuple[str, ...], *, gated: bool
) -> tuple[TaskRecord | None, FlowRecord | None]:
    """The task to claim and its flow row (queueflow; read with it)."""
    task, found = call.tx.queue.claim_candidate(
        call.workspace,
        max_autonomy=MAX_AUTONOMY,
        autonomy=call.actor.autonomy,
        verb=request.verb,
        now_ms=call.now_ms,
        paused=() if request.verb is not None else paused,
        gated=gated,
    )
    if gated or task is None or found is None or not found.gated:
        return task, found
    # A gated task committed between the check and the claim (PostgreSQL: each statement
    # sees the latest commits): claim again, through the gate.
    call.tx.queueflow.serialize_limited_claims(call.workspace)
    return _best(call, request, paused, gated=True)


def checkpoint(call: QueueCall, request: CheckpointIn) -> TaskView | Refused:
    """Renew the lease (optionally persisting state), or end it with ``DONE`` or ``FAILED``.

    Only the holder of a live lease may checkpoint (and, with ``fence``, only the holder of
    the current claim). A non-terminal renewal that trips the runaway guard returns
    :class:`Refused` with ``LEASE_RUNAWAY`` after force-requeueing the task.
    """
    state = None
    if request.checkpoint is not None:
        state = json_text(
            request.checkpoint, max_bytes=QUEUE_PAYLOAD_MAX_BYTES, path="$.checkpoint"
        )
    action = {
        None: TaskAction.RENEW,
        "DONE": TaskAction.COMPLETE,
        "FAILED": TaskAction.FAIL,
    }[request.status]
    task = load_task(call, request.task_id, for_update=True)
    status = require_holder(task, call.actor, call.now_ms, request.fence, action)
    kept_state = task.checkpoint_json if state is None else state
    last_error = task.last_error if request.last_error is None else request.last_error
    retry = failure_changes(task, call.now_ms) if action is TaskAction.FAIL else None
    if retry is not None:  # a failed attempt below maxAttempts: QUEUED again, after back-off
        again = write_task(
            call,
            task,
            **lease_cleared(next_status(status, TaskAction.RETRY), call.now_ms),
            **retry,
            checkpoint_json=kept_state,
            last_error=last_error,
        )
        return task_view(again, call.now_ms)
    if action is not TaskAction.RENEW:
        target = next_status(status, action)
        done = write_task(
            call,
            task,
            **lease_cleared(target, call.now_ms),
            checkpoint_json=kept_state,
            last_error=last_error,
        )
        return task_view(done, call.now_ms)
    reason = runaway_reason(task, call.now_ms)
    if reason is not None:
        return _runaway(call, task, status, reason)
    next_status(status, TaskAction.RENEW)
    renewed = write_task(
        call,
        task,
        **lease_renewed(task, call.now_ms, call.lease_ms),
        checkpoint_json=kept_state,
        last_error=last_error,
    )
    return task_view(renewed, call.now_ms)


def _runaway(call: QueueCall, task: TaskRecord, status: TaskStatus, reason: str) -> Refused:
    """The runaway guard's requeue; for a retrying task it counts an attempt (retry.py)."""
    retry = failure_changes(task, call.now_ms)
    if retry is None and retries(task):  # the last attempt: the task fails (dead letter)
        write_task(
            call,
            task,
            **lease_cleared(next_status(status, TaskAction.FAIL), call.now_ms),
            last_error=reason,
        )
        outcome = "the task failed at its last attempt (maxAttempts)"
    else:
        write_task(
            call,
            task,
            **lease_cleared(next_status(status, TaskAction.RUNAWAY), call.now_ms),
            **(retry or {}),
        )
        outcome = "the task was requeued to resume from its last checkpoint"
    return Refused(
        TaskError(
            ErrorCode.LEASE_RUNAWAY,
            f"{reason}; the renewal was refused and {outcome}",
            details={"taskId": task.task_id},
        )
    )


def release(call: QueueCall, request: ReleaseIn) -> TaskView:
    """Give a live lease back: the task is ``QUEUED`` again, its checkpoint intact."""
    task = load_task(call, request.task_id, for_update=True)
    status = require_holder(task, call.actor, call.now_ms, request.fence, TaskAction.RELEASE)
    target = next_status(status, TaskAction.RELEASE)
    return task_view(write_task(call, task, **lease_cleared(target, call.now_ms)), call.now_ms)


def _escalated_hash(request: EscalateIn) -> str | None:
    if request.target_verb == GRANT_VERB:
        raise TaskError(
            ErrorCode.INVALID_VALUE, "a grant cannot admit another grant", path="$.targetVerb"
        )
    if request.target_input is None:
        return request.input_hash
    try:
        computed = input_hash(request.target_input)
    except TaskError as err:
        raise err.at("$.targetInput") from None
    if request.input_hash is not None and request.input_hash != computed:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"inputHash is not the hash of targetInput ({computed}); send one or the other",
            path="$.inputHash",
        )
    return computed


def escalate(call: QueueCall, request: EscalateIn) -> EscalateResult:
    """Park the task in ``ESCALATED`` behind a new one-shot approval gate.

    A ``LEASED`` task may be escalated by its lease holder (the lease ends); a ``QUEUED`` task
    by its creator or an admin. Escalated and terminal tasks refuse. ``targetInput`` (ours) is
    the input of the call to approve: the gate keeps only its
    :func:`~taskcore.queue.approval.input_hash`, so a caller need not compute the hash.
    """
    task = load_task(call, request.task_id)
    require_fence(task, request.fence)
    status = effective_status(task, call.now_ms)
    if status is TaskStatus.LEASED or task.lease_owner == call.actor.token_id:
        status = require_holder(task, call.actor, call.now_ms, request.fence, TaskAction.ESCALATE)
    elif status is TaskStatus.QUEUED and not (
        is_admin(call.actor) or task.created_by == call.actor.token_id
    ):
        raise TaskError(
            ErrorCode.LEASE_NOT_HELD,
            "only the lease holder, the task's creator or an admin may escalate it",
        )
    target = next_status(status, TaskAction.ESCALATE)
    void_open_gate(call, task)
    gate = mint_gate(
        call,
        task,
        target_verb=request.target_verb,
        input_hash=_escalated_hash(request),
        reason=request.reason,
    )
    stored = write_task(
        call, task, **lease_cleared(target, call.now_ms), escalation_gate_id=gate.gate_id
    )
    return EscalateResult(task=task_view(stored, call.now_ms), gate=gate_view(gate))
