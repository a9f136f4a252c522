"""Build the JSON views of :mod:`taskcore.queue.types` from stored records.

A view is computed at a point in time: a task whose lease has expired is shown ``QUEUED``
without a lease, exactly as a claim would see it.
"""

from __future__ import annotations

import json
from typing import Any

from taskcore.queue.common import effective_status, lease_is_live, parse_json_text
from taskcore.queue.retry import lapsed_exhausted, lapsed_retry_at, retries
from taskcore.queue.types import (
    ApprovalGateView,
    BackoffView,
    ExtView,
    FeedEntry,
    GateStatus,
    LeaseView,
    PhaseView,
    TaskView,
)
from taskcore.store.queue_api import ApprovalGateRecord, ExtRecord, PhaseRecord, TaskRecord
from taskcore.wirebuild import constructor

__all__ = ["ext_view", "feed_entry", "gate_view", "phase_view", "task_view"]


def _lease(task: TaskRecord, now_ms: int) -> LeaseView | None:
    if not lease_is_live(task, now_ms):
        return None
    assert task.lease_owner is not None
    assert task.lease_expires_at_ms is not None
    assert task.first_leased_at_ms is not None
    return constructor(LeaseView)(
        owner=task.lease_owner,
        expires_at_ms=task.lease_expires_at_ms,
        heartbeat_at_ms=task.heartbeat_at_ms or task.first_leased_at_ms,
        extensions=task.lease_extensions,
        first_leased_at_ms=task.first_leased_at_ms,
    )


def task_view(task: TaskRecord, now_ms: int) -> TaskView:
    """The task as observed at ``now_ms``.

    Built through :func:`~taskcore.wirebuild.constructor` (one check of every field, the
    same as ``TaskView(...)``'s validators): every call of a queue verb builds one.
    """
    # runAtMs and attempt as observed (a lapsed lease counts an attempt)
    run_at, attempt = task.run_at_ms, task.attempt
    again = lapsed_retry_at(task, now_ms)
    if again is not None:
        run_at, attempt = again, attempt + 1
    backoff = None
    if retries(task):
        backoff = constructor(BackoffView)(
            initial_ms=task.backoff_initial_ms,
            max_ms=task.backoff_max_ms,
            multiplier=task.backoff_multiplier,
        )
    return constructor(TaskView)(
        task_id=task.task_id,
        verb=task.verb,
        status=effective_status(task, now_ms),
        priority=task.priority,
        depth=task.depth,
        autonomy_ceiling=task.autonomy_ceiling,
        parent_task_id=task.parent_task_id,
        run_id=task.run_id,
        matter_id=task.matter_id,
        matter_step_id=task.matter_step_id,
        payload=parse_json_text(task.payload_json),
        checkpoint=parse_json_text(task.checkpoint_json),
        last_error=task.last_error,
        created_by=task.created_by,
        created_at_ms=task.created_at_ms,
        updated_at_ms=task.updated_at_ms,
        finished_at_ms=(
            task.lease_expires_at_ms if lapsed_exhausted(task, now_ms) else task.finished_at_ms
        ),
        fence=task.fence,
        lease=_lease(task, now_ms),
        escalation_gate_id=task.escalation_gate_id,
        run_at_ms=run_at,
        attempt=attempt,
        max_attempts=task.max_attempts,
        backoff=backoff,
    )


def gate_view(gate: ApprovalGateRecord) -> ApprovalGateView:
    """An approval gate."""
    return ApprovalGateView(
        gate_id=gate.gate_id,
        task_id=gate.task_id,
        status=GateStatus(gate.status),
        target_verb=gate.target_verb,
        input_hash=gate.input_hash,
        reason=gate.reason,
        requested_by=gate.requested_by,
        requested_at_ms=gate.requested_at_ms,
        decided_by=gate.decided_by,
        decided_at_ms=gate.decided_at_ms,
        note=gate.decision_note,
        consumed_by=gate.consumed_by,
        consumed_at_ms=gate.consumed_at_ms,
    )


def phase_view(phase: PhaseRecord) -> PhaseView:
    """A per-phase resume checkpoint."""
    return PhaseView(
        phase_index=phase.phase_index,
        phase_key=phase.phase_key,
        state=parse_json_text(phase.state_json),
        outputs=tuple(parse_json_text(phase.outputs_json)),
        written_by=phase.written_by,
        created_at_ms=phase.created_at_ms,
    )


def ext_view(ext: ExtRecord) -> ExtView:
    """An ext row."""
    return ExtView(
        agent_task_id=ext.agent_task_id,
        title=ext.title,
        prompt=ext.prompt,
        source_type=ext.source_type,
        source_id=ext.source_id,
        source_matter_id=ext.source_matter_id,
        source_step_id=ext.source_step_id,
        child_key=ext.child_key,
        priority=ext.priority,
        requires_human_review=ext.requires_human_review,
        waiting_for_children=ext.waiting_for_children,
        declared_child_keys=tuple(json.loads(ext.declared_child_keys_json)),
        claim_token_hash=ext.claim_token_hash,
        claimed_at=ext.claimed_at_ms,
        cost_usd=ext.cost_usd,
        duration_ms=ext.duration_ms,
        tool_call_count=ext.tool_call_count,
        result=parse_json_text(ext.result_json),
        progress_text=ext.progress_text,
        created_at_ms=ext.created_at_ms,
        updated_at_ms=ext.updated_at_ms,
    )


def _field(document: Any, key: str) -> Any:
    return document.get(key) if isinstance(document, dict) else None


def feed_entry(task: TaskRecord, now_ms: int, *, with_state: bool) -> FeedEntry:
    """A feed entry; ``with_state`` adds the checkpoint and ``checkpoint.output``.

    The rationale is ``checkpoint.rationale`` when it is a string: the agent writes its
    reasoning there, as it writes its structured result to ``checkpoint.output``.
    """
    checkpoint = parse_json_text(task.checkpoint_json)
    rationale = _field(checkpoint, "rationale")
    return FeedEntry(
        task_id=task.task_id,
        verb=task.verb,
        status=effective_status(task, now_ms),
        created_by=task.created_by,
        created_at_ms=task.created_at_ms,
        finished_at_ms=task.finished_at_ms,
        autonomy_exercised=task.exercised_autonomy,
        rationale=rationale if isinstance(rationale, str) else None,
        last_error=task.last_error,
        checkpoint=checkpoint if with_state else None,
        output=_field(checkpoint, "output") if with_state else None,
    )
