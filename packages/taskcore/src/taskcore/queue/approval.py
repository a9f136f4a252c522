"""Approval gates: the one-shot grant an escalated task waits on.

``agenttask.escalate`` mints a gate ``{targetVerb, inputHash}`` (both optional) and parks the
task in ``ESCALATED``. An admin decides it exactly once:

* ``agenttask.gate.approve``: the gate becomes ``APPROVED`` and the task returns to
  ``QUEUED``. The next claim of the task takes the grant: the gate becomes ``CONSUMED`` in the
  same transaction and the claim's lease handle carries ``grant``. No later claim sees it, so
  the grant is used exactly once, by exactly one lease holder (fail-closed: a worker that
  loses that lease needs a new escalation).
* ``agenttask.gate.reject``: the gate becomes ``REJECTED`` and the task ``FAILED`` (terminal,
  ``lastError`` says why); ``agenttask.requeue`` can re-drive it.

A task that is cancelled or escalated again voids its open gate (``VOIDED``). The gate life
is the table :data:`~taskcore.queue.transitions.GATE_TRANSITIONS`. This is the *approval*
gate of the queue seed; the done gate is :mod:`taskcore.gate`, unrelated.
"""

from __future__ import annotations

import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.queue.common import QueueCall, load_task, new_id, write_task
from taskcore.queue.leases import cleared_lease, effective_status
from taskcore.queue.requests import GateDecisionIn, GateRef
from taskcore.queue.transitions import (
    GATE_TRANSITIONS,
    GateAction,
    TaskAction,
    next_gate_status,
    next_status,
)
from taskcore.queue.types import ApprovalGateView, GateDecision, GateStatus, Grant, TaskStatus
from taskcore.queue.views import gate_view, task_view
from taskcore.store.queue_api import ApprovalGateRecord, TaskRecord

__all__ = [
    "approve_gate",
    "get_gate",
    "mint_gate",
    "reject_gate",
    "take_grant",
    "void_open_gate",
]


def _gate_not_found(gate_id: str) -> TaskError:
    return TaskError(
        ErrorCode.NOT_FOUND, f"no approval gate {gate_id} in this workspace", path="$.gateId"
    )


def _load_gate(call: QueueCall, gate_id: str) -> ApprovalGateRecord:
    gate = call.tx.queue.get_gate(call.workspace, gate_id)
    if gate is None:
        raise _gate_not_found(gate_id)
    return gate


def _write_gate(call: QueueCall, gate: ApprovalGateRecord) -> None:
    if not call.tx.queue.update_gate(gate):
        raise TaskError(
            ErrorCode.CONFLICT, "the approval gate changed while this call ran; read it again"
        )


def _current_gate(call: QueueCall, task: TaskRecord) -> ApprovalGateRecord | None:
    if task.escalation_gate_id is None:
        return None
    return call.tx.queue.get_gate(call.workspace, task.escalation_gate_id)


def mint_gate(
    call: QueueCall,
    task: TaskRecord,
    *,
    target_verb: str | None,
    input_hash: str | None,
    reason: str | None,
) -> ApprovalGateRecord:
    """Create a ``PENDING`` gate for ``task`` (the caller moves the task to ``ESCALATED``)."""
    gate = ApprovalGateRecord(
        gate_id=new_id("ag"),
        workspace=call.workspace,
        task_id=task.task_id,
        target_verb=target_verb,
        input_hash=input_hash,
        reason=reason,
        status=GateStatus.PENDING.value,
        requested_by=call.actor.token_id,
        requested_at_ms=call.now_ms,
    )
    call.tx.queue.insert_gate(gate)
    return gate


def void_open_gate(call: QueueCall, task: TaskRecord) -> None:
    """Void the task's gate if it is still pending or holds an unconsumed grant."""
    gate = _current_gate(call, task)
    if gate is None or GateAction.VOID not in _open_actions(gate):
        return
    _write_gate(call, attrs.evolve(gate, status=GateStatus.VOIDED.value))


def _open_actions(gate: ApprovalGateRecord) -> frozenset[GateAction]:
    return frozenset(GATE_TRANSITIONS[GateStatus(gate.status)])


def take_grant(call: QueueCall, task: TaskRecord) -> Grant | None:
    """Consume the task's approved grant for the claim ``task`` just received, if there is one.

    ``task`` is the claimed record (its ``fence`` is the new lease's fence).
    """
    gate = _current_gate(call, task)
    if gate is None or gate.status != GateStatus.APPROVED.value:
        return None
    consumed = attrs.evolve(
        gate,
        status=next_gate_status(GateStatus.APPROVED, GateAction.CONSUME).value,
        consumed_by=call.actor.token_id,
        consumed_at_ms=call.now_ms,
        consumed_fence=task.fence,
    )
    _write_gate(call, consumed)
    return Grant(gate_id=gate.gate_id, target_verb=gate.target_verb, input_hash=gate.input_hash)


def get_gate(call: QueueCall, request: GateRef) -> ApprovalGateView:
    """An approval gate of the caller's workspace (admin)."""
    return gate_view(_load_gate(call, request.gate_id))


def _decide(call: QueueCall, request: GateDecisionIn, action: GateAction) -> GateDecision:
    gate = _load_gate(call, request.gate_id)
    gate_status = next_gate_status(GateStatus(gate.status), action)
    task = load_task(call, gate.task_id, path="$.gateId")
    if task.escalation_gate_id != gate.gate_id:
        raise TaskError(
            ErrorCode.CONFLICT,
            f"task {task.task_id} no longer waits on gate {gate.gate_id}",
            path="$.gateId",
        )
    status = effective_status(task, call.now_ms)
    if action is GateAction.APPROVE:
        next_status(status, TaskAction.APPROVE)
        decided_task = attrs.evolve(task, status=TaskStatus.QUEUED.value, updated_at_ms=call.now_ms)
    else:
        target = next_status(status, TaskAction.REJECT)
        note = f": {request.note}" if request.note else ""
        decided_task = attrs.evolve(
            cleared_lease(task, target, call.now_ms),
            last_error=f"approval gate {gate.gate_id} was rejected{note}",
        )
    decided_gate = attrs.evolve(
        gate,
        status=gate_status.value,
        decided_by=call.actor.token_id,
        decided_at_ms=call.now_ms,
        decision_note=request.note,
    )
    _write_gate(call, decided_gate)
    stored = write_task(call, decided_task)
    return GateDecision(gate=gate_view(decided_gate), task=task_view(stored, call.now_ms))


def approve_gate(call: QueueCall, request: GateDecisionIn) -> GateDecision:
    """Approve a pending gate: the task returns to ``QUEUED`` carrying a one-shot grant."""
    return _decide(call, request, GateAction.APPROVE)


def reject_gate(call: QueueCall, request: GateDecisionIn) -> GateDecision:
    """Reject a pending gate: the task ends ``FAILED`` with the reason in ``lastError``."""
    return _decide(call, request, GateAction.REJECT)
