"""Per-phase resume checkpoints: write, clear, prune.

``agenttask.checkpoint.write`` appends ``{phaseKey, state, outputs}`` for a task whose live
lease the caller holds (with ``fence``, the current claim only). The phase index is the
task's highest index plus one, computed inside the call's ``BEGIN IMMEDIATE`` transaction, so
concurrent writers are serialized and each gets the next index; a ``UNIQUE(task_id,
phase_index)`` constraint backs this on any backend. The latest phase comes back in every
claim's ``resume``, so the next worker resumes from it.

``clear`` deletes every phase of a task (idempotent: 0 rows is success). ``prune`` deletes
rows older than N days in the *caller's* workspace (admin tier). The seed describes prune as a
platform-wide sweep; a workspace token never gets that power over other workspaces' rows: the
platform-wide sweep (``workspace=None`` at the storage layer) belongs to the operator's
retention job, never to a front-door call.
"""

from __future__ import annotations

from taskcore.limits import CHECKPOINT_OUTPUTS_MAX_BYTES, CHECKPOINT_STATE_MAX_BYTES
from taskcore.queue.common import QueueCall, json_text, load_task, require_holder, task_not_found
from taskcore.queue.requests import CheckpointWriteIn, PruneIn, TaskRef
from taskcore.queue.tasks import may_read
from taskcore.queue.transitions import TaskAction, next_status
from taskcore.queue.types import ClearResult, PhaseWritten, PruneResult
from taskcore.store.queue_api import PhaseRecord

__all__ = ["clear_phases", "prune_phases", "write_phase"]

_DAY_MS = 24 * 60 * 60 * 1000


def write_phase(call: QueueCall, request: CheckpointWriteIn) -> PhaseWritten:
    """Append a phase checkpoint for a task the caller holds the lease of."""
    state_json = json_text(request.state, max_bytes=CHECKPOINT_STATE_MAX_BYTES, path="$.state")
    outputs_json = json_text(
        list(request.outputs), max_bytes=CHECKPOINT_OUTPUTS_MAX_BYTES, path="$.outputs"
    )
    task = load_task(call, request.task_id)
    status = require_holder(task, call.actor, call.now_ms, request.fence, TaskAction.WRITE_PHASE)
    next_status(status, TaskAction.WRITE_PHASE)
    index = call.tx.queue.next_phase_index(call.workspace, task.task_id)
    call.tx.queue.insert_phase(
        PhaseRecord(
            workspace=call.workspace,
            task_id=task.task_id,
            phase_index=index,
            phase_key=request.phase_key,
            state_json=state_json,
            outputs_json=outputs_json,
            written_by=call.actor.token_id,
            created_at_ms=call.now_ms,
        )
    )
    return PhaseWritten(
        task_id=task.task_id,
        phase_index=index,
        phase_key=request.phase_key,
        created_at_ms=call.now_ms,
    )


def clear_phases(call: QueueCall, request: TaskRef) -> ClearResult:
    """Delete every phase checkpoint of a task (its creator, lease holder or an admin)."""
    task = load_task(call, request.task_id)
    if not may_read(call, task):
        raise task_not_found(request.task_id)
    cleared = call.tx.queue.clear_phases(call.workspace, task.task_id)
    return ClearResult(task_id=task.task_id, cleared=cleared)


def prune_phases(call: QueueCall, request: PruneIn) -> PruneResult:
    """Delete the caller's workspace's phase checkpoints older than ``olderThanDays``."""
    # A retention longer than the epoch is old reaches back to the epoch, not before it.
    cutoff = max(0, call.now_ms - request.older_than_days * _DAY_MS)
    pruned = call.tx.queue.prune_phases(cutoff, workspace=call.workspace)
    return PruneResult(pruned=pruned, cutoff_ms=cutoff)
