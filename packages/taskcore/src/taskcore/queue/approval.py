"""Approval gates: the one-shot grant an escalated task waits on, and the call it admits.

``agenttask.escalate`` mints a gate ``{targetVerb, inputHash}`` (both optional) and parks the
task in ``ESCALATED``. An admin decides it exactly once:

* ``agenttask.gate.approve``: the gate becomes ``APPROVED`` and the task returns to
  ``QUEUED``. Claims of the task show the open grant as ``lease.grant``; nothing is consumed
  by claiming.
* ``agenttask.gate.reject`` (a reason is required): the gate becomes ``REJECTED`` and the task
  ``FAILED`` (terminal, ``lastError`` names the gate and the reason; ``feed`` shows the gate and
  its decision to the creator); ``agenttask.requeue`` can re-drive it.

The grant unlocks one call: ``agenttask.gate.apply {taskId, gateId, verb, input, fence?}``
(:func:`apply_grant`). The front door admits ``verb`` for the caller beyond its autonomy when,
and only when, the caller holds the task's current lease, the gate is that task's and
``APPROVED``, ``verb`` equals ``targetVerb`` and :func:`input_hash` of ``input`` equals
``inputHash``; the gate becomes ``CONSUMED`` in the same transaction as the call. Each refusal
has its own code (``LEASE_NOT_HELD``/``STALE_FENCE``, ``GRANT_TASK_MISMATCH``,
``GRANT_PENDING``, ``GRANT_DENIED``, ``GRANT_CONSUMED``, ``GRANT_VOIDED``,
``GRANT_VERB_MISMATCH``, ``GRANT_INPUT_MISMATCH``) and changes nothing.

A task that is cancelled or escalated again voids its open gate (``VOIDED``). The gate life
is the table :data:`~taskcore.queue.transitions.GATE_TRANSITIONS`. This is the *approval*
gate of the queue seed; the done gate is :mod:`taskcore.donegate`, unrelated.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.queue.common import (
    QueueCall,
    effective_status,
    lease_cleared,
    load_task,
    new_id,
    require_holder,
    write_task,
)
from taskcore.queue.requests import GateApplyIn, GateDecisionIn, GateRef, GateRejectIn
from taskcore.queue.transitions import (
    GATE_TRANSITIONS,
    GateAction,
    TaskAction,
    next_gate_status,
    next_status,
)
from taskcore.queue.types import (
    ApprovalGateView,
    GateDecision,
    GateStatus,
    Grant,
    GrantApplied,
    TaskStatus,
)
from taskcore.queue.views import gate_view, task_view
from taskcore.store.queue_api import ApprovalGateRecord, TaskRecord

__all__ = [
    "GRANT_VERB",
    "GrantedCall",
    "apply_grant",
    "approve_gate",
    "get_gate",
    "input_hash",
    "mint_gate",
    "open_grant",
    "reject_gate",
    "void_open_gate",
]

GRANT_VERB = "agenttask.gate.apply"
"""The verb that presents a grant; a grant can never name it (no grant unlocks another)."""

GrantedCall = Callable[[str, Mapping[str, Any]], Any]
"""Runs ``(verb, input)`` in the current call's transaction with the autonomy bound lifted
(the front door's :meth:`taskcore.service.Service.run_granted`); returns the plain result."""


def input_hash(value: Any) -> str:
    """The ``inputHash`` of a call's input: SHA-256 (lowercase hex) of its canonical JSON.

    Canonical here means the input object with keys sorted, no insignificant whitespace,
    UTF-8 without escaping non-ASCII (RFC 8785 for inputs whose numbers are integers), so the
    hash does not depend on how a client spaced or ordered the JSON it sent.

    >>> input_hash({"taskId": "at_1"}) == input_hash(json.loads('{ "taskId" : "at_1" }'))
    True
    >>> input_hash({"b": 1, "a": "é"}) == hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()
    True
    """
    try:
        text = json.dumps(
            value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except ValueError:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "the input holds a number JSON cannot carry (infinite or NaN); send a finite one",
            path="$",
        ) from None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


def open_grant(call: QueueCall, task: TaskRecord) -> Grant | None:
    """The task's approved, unconsumed grant (shown on a claim as ``lease.grant``), if any."""
    gate = _current_gate(call, task)
    if gate is None or gate.status != GateStatus.APPROVED.value:
        return None
    return Grant(gate_id=gate.gate_id, target_verb=gate.target_verb, input_hash=gate.input_hash)


_GATE_REFUSALS = {
    GateStatus.PENDING: (ErrorCode.GRANT_PENDING, "is still PENDING; an admin has not decided it"),
    GateStatus.REJECTED: (ErrorCode.GRANT_DENIED, "was rejected"),
    GateStatus.CONSUMED: (ErrorCode.GRANT_CONSUMED, "was already used; a grant admits one call"),
    GateStatus.VOIDED: (
        ErrorCode.GRANT_VOIDED,
        "was voided (the task was cancelled or escalated again)",
    ),
}


def _require_approved(gate: ApprovalGateRecord) -> None:
    status = GateStatus(gate.status)
    if status is GateStatus.APPROVED:
        return
    code, why = _GATE_REFUSALS[status]
    note = f": {gate.decision_note}" if status is GateStatus.REJECTED and gate.decision_note else ""
    raise TaskError(
        code,
        f"approval gate {gate.gate_id} {why}{note}",
        path="$.gateId",
        details={"gateStatus": status.value},
    )


def apply_grant(call: QueueCall, request: GateApplyIn, run: GrantedCall) -> GrantApplied:
    """Make the one call an approved grant names, and consume the grant with it.

    Checked in this order, each refusal with its own code and no effect: the gate exists in
    the workspace (``NOT_FOUND``) and is ``APPROVED`` (``GRANT_PENDING``, ``GRANT_DENIED``,
    ``GRANT_CONSUMED``, ``GRANT_VOIDED``); the caller holds the current lease of ``taskId``
    (``STALE_FENCE``, ``LEASE_NOT_HELD`` - also for an expired lease -, ``ILLEGAL_TRANSITION``
    for a terminal task); the gate is that task's (``GRANT_TASK_MISMATCH``); ``verb`` is its
    ``targetVerb`` (``GRANT_VERB_MISMATCH``) and :func:`input_hash` of ``input`` its
    ``inputHash`` (``GRANT_INPUT_MISMATCH``). Then ``run`` makes the call in this transaction
    and the gate becomes ``CONSUMED``; if the call is refused, both roll back (its error's
    path is under ``$.input``).
    """
    gate = _load_gate(call, request.gate_id)
    _require_approved(gate)
    task = load_task(call, request.task_id)
    status = require_holder(task, call.actor, call.now_ms, request.fence, TaskAction.APPLY_GRANT)
    next_status(status, TaskAction.APPLY_GRANT)
    if gate.task_id != task.task_id:
        raise TaskError(
            ErrorCode.GRANT_TASK_MISMATCH,
            f"approval gate {gate.gate_id} was granted to another task, not {task.task_id}",
            path="$.gateId",
        )
    if gate.target_verb is None or gate.target_verb != request.verb:
        named = gate.target_verb or "no call"
        raise TaskError(
            ErrorCode.GRANT_VERB_MISMATCH,
            f"approval gate {gate.gate_id} admits {named}, not {request.verb}",
            path="$.verb",
        )
    try:
        presented = input_hash(request.input)
    except TaskError as err:
        raise err.at("$.input") from None
    if gate.input_hash is None or gate.input_hash != presented:
        raise TaskError(
            ErrorCode.GRANT_INPUT_MISMATCH,
            f"the input's hash {presented} is not the one approval gate {gate.gate_id} admits; "
            "send exactly the input that was escalated",
            path="$.input",
            details={"inputHash": presented},
        )
    if request.verb == GRANT_VERB:
        raise TaskError(
            ErrorCode.INVALID_VALUE, "a grant cannot admit another grant", path="$.verb"
        )
    consumed = attrs.evolve(
        gate,
        status=next_gate_status(GateStatus.APPROVED, GateAction.CONSUME).value,
        consumed_by=call.actor.token_id,
        consumed_at_ms=call.now_ms,
        consumed_fence=task.fence,
    )
    _write_gate(call, consumed)
    try:
        result = run(request.verb, request.input)
    except TaskError as err:
        raise (err.at("$.input") if err.path is not None else err) from None
    return GrantApplied(gate=gate_view(consumed), verb=request.verb, result=result)


def get_gate(call: QueueCall, request: GateRef) -> ApprovalGateView:
    """An approval gate of the caller's workspace (admin)."""
    return gate_view(_load_gate(call, request.gate_id))


def _decide(call: QueueCall, gate_id: str, note: str | None, action: GateAction) -> GateDecision:
    gate = _load_gate(call, gate_id)
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
        decision: dict[str, Any] = {
            "status": TaskStatus.QUEUED.value,
            "updated_at_ms": call.now_ms,
        }
    else:
        target = next_status(status, TaskAction.REJECT)
        decision = {
            **lease_cleared(target, call.now_ms),
            "last_error": f"approval gate {gate.gate_id} was rejected: {note}",
        }
    decided_gate = attrs.evolve(
        gate,
        status=gate_status.value,
        decided_by=call.actor.token_id,
        decided_at_ms=call.now_ms,
        decision_note=note,
    )
    _write_gate(call, decided_gate)
    stored = write_task(call, task, **decision)
    return GateDecision(gate=gate_view(decided_gate), task=task_view(stored, call.now_ms))


def approve_gate(call: QueueCall, request: GateDecisionIn) -> GateDecision:
    """Approve a pending gate: the task returns to ``QUEUED`` carrying a one-shot grant."""
    return _decide(call, request.gate_id, request.note, GateAction.APPROVE)


def reject_gate(call: QueueCall, request: GateRejectIn) -> GateDecision:
    """Reject a pending gate: the task ends ``FAILED`` with the reason in ``lastError``."""
    return _decide(call, request.gate_id, request.note, GateAction.REJECT)
