"""The ext row: a task's one-to-one runtime/UI tail (``agenttask.ext.*``).

* ``create`` writes it after its task exists (a foreign-key backed invariant: an ext row
  never exists without its task); a second row for the same task is ``ALREADY_EXISTS``.
* ``setWaiting`` is a compare-and-set on ``waiting_for_children = NOT waiting``: a repeated
  or concurrent park/wake lands exactly once; the others answer ``changed: false``.
* ``update`` writes only the supplied keys, last write wins. ``claimTokenHash`` must be a
  SHA-256 (64 lowercase hex): the frontend hashes the lease handle, the plaintext never
  reaches the kernel.
"""

from __future__ import annotations

import json

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import QUEUE_PAYLOAD_MAX_BYTES
from taskcore.queue.common import QueueCall, json_text, load_task
from taskcore.queue.requests import ExtCreateIn, ExtSetWaitingIn, ExtUpdateIn
from taskcore.queue.types import ExtView, SetWaitingResult
from taskcore.queue.views import ext_view
from taskcore.store.queue_api import ExtPatch, ExtRecord

__all__ = ["create_ext", "set_waiting", "update_ext"]


def _ext_not_found(task_id: str) -> TaskError:
    return TaskError(
        ErrorCode.NOT_FOUND,
        f"no ext row for task {task_id} in this workspace",
        path="$.agentTaskId",
    )


def _load(call: QueueCall, task_id: str) -> ExtRecord:
    ext = call.tx.queue.get_ext(call.workspace, task_id)
    if ext is None:
        raise _ext_not_found(task_id)
    return ext


def create_ext(call: QueueCall, request: ExtCreateIn) -> ExtView:
    """Create the ext row of an existing task of the workspace."""
    task = load_task(call, request.agent_task_id, path="$.agentTaskId")
    if call.tx.queue.get_ext(call.workspace, task.task_id) is not None:
        raise TaskError(
            ErrorCode.ALREADY_EXISTS,
            f"task {task.task_id} already has its ext row; use agenttask.ext.update",
            path="$.agentTaskId",
        )
    record = ExtRecord(
        agent_task_id=task.task_id,
        workspace=call.workspace,
        title=request.title,
        prompt=request.prompt,
        source_type=request.source_type,
        source_id=request.source_id,
        source_matter_id=request.source_matter_id,
        source_step_id=request.source_step_id,
        child_key=request.child_key,
        priority=request.priority,
        requires_human_review=request.requires_human_review,
        created_at_ms=call.now_ms,
        updated_at_ms=call.now_ms,
    )
    call.tx.queue.insert_ext(record)
    return ext_view(record)


def set_waiting(call: QueueCall, request: ExtSetWaitingIn) -> SetWaitingResult:
    """Park or wake the row; ``changed`` says whether this call flipped it."""
    _load(call, request.agent_task_id)
    keys = None
    if request.declared_child_keys is not None:
        keys = json.dumps(list(request.declared_child_keys), separators=(",", ":"))
    changed = call.tx.queue.set_waiting(
        call.workspace,
        request.agent_task_id,
        waiting=request.waiting,
        declared_child_keys_json=keys,
        now_ms=call.now_ms,
    )
    return SetWaitingResult(changed=changed, ext=ext_view(_load(call, request.agent_task_id)))


def update_ext(call: QueueCall, request: ExtUpdateIn) -> ExtView:
    """Patch the supplied telemetry and claim-stamp fields."""
    if request.cost_usd is not None and request.cost_usd < 0:
        raise TaskError(ErrorCode.OUT_OF_BOUNDS, "costUsd must not be negative", path="$.costUsd")
    result_json = None
    if request.result is not None:
        result_json = json_text(request.result, max_bytes=QUEUE_PAYLOAD_MAX_BYTES, path="$.result")
    patch = ExtPatch(
        claim_token_hash=request.claim_token_hash,
        claimed_at_ms=request.claimed_at,
        cost_usd=request.cost_usd,
        duration_ms=request.duration_ms,
        tool_call_count=request.tool_call_count,
        result_json=result_json,
        progress_text=request.progress_text,
    )
    if not call.tx.queue.patch_ext(call.workspace, request.agent_task_id, patch, call.now_ms):
        raise _ext_not_found(request.agent_task_id)
    return ext_view(_load(call, request.agent_task_id))
