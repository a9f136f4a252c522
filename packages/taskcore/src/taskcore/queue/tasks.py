"""The task verbs that are not about a lease.

create, get, list, cancel, requeue, reorder, rankByObjective and feed.

Every read and write names the caller's workspace in its predicate (the store's contract);
every guard that hides a task raises :func:`~taskcore.queue.common.task_not_found`, the same
error a missing task gets.
"""

from __future__ import annotations

import attrs

from taskcore import audit
from taskcore.codec import unstructure as codec_unstructure
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import MAX_AGENT_TASK_DEPTH, QUEUE_LIST_DEFAULT, QUEUE_PAYLOAD_MAX_BYTES
from taskcore.queue import flow
from taskcore.queue.approval import void_open_gate
from taskcore.queue.common import (
    QueueCall,
    effective_status,
    insert_task,
    is_admin,
    json_text,
    lease_cleared,
    lease_is_live,
    load_task,
    new_id,
    parse_json_text,
    task_not_found,
    write_task,
)
from taskcore.queue.matters import descriptor_tokens, require_readable_matter, tokens
from taskcore.queue.requests import CreateIn, CreateManyIn, FeedIn, ListIn, ReorderIn, TaskRef
from taskcore.queue.schedule import REQUEUED, schedule_of
from taskcore.queue.transitions import TaskAction, next_status
from taskcore.queue.types import (
    CreateManyResult,
    FeedResult,
    ListResult,
    RankResult,
    TaskStatus,
    TaskView,
)
from taskcore.queue.verb_registry import require_registered
from taskcore.queue.views import feed_entry, gate_view, task_view
from taskcore.store.queue_api import TaskRecord

__all__ = [
    "cancel",
    "create",
    "create_many",
    "feed",
    "get",
    "list_tasks",
    "may_read",
    "rank_by_objective",
    "reorder",
    "requeue",
]


def may_read(call: QueueCall, task: TaskRecord, *, lease_holder: bool = True) -> bool:
    """The owner guard: the task's creator, an admin, or (if allowed) its live lease holder."""
    actor = call.actor
    if is_admin(actor) or task.created_by == actor.token_id:
        return True
    return lease_holder and lease_is_live(task, call.now_ms) and task.lease_owner == actor.token_id


def create(call: QueueCall, request: CreateIn, *, alone: bool = True) -> TaskView:
    """Queue a task of a registered carrier verb (``alone``: the call's one task, see below).

    ``depth`` is the parent's depth plus one (a root is 0); deeper than
    :data:`~taskcore.limits.MAX_AGENT_TASK_DEPTH` is ``DEPTH_EXCEEDED`` before any write. The
    autonomy ceiling is the creator's autonomy, lowered to the parent's ceiling: a task can
    never be run with more autonomy than whoever queued it (or its parent) had.

    The call's one task with no flow row is not read back (nor its ``seq``): its row may go
    with the ``COMMIT`` (``QueueStore.insert_task``); ``createMany``'s tasks are each
    followed by their own audit insert, so theirs go at once (a refusal names its entry).
    """
    require_registered(call, request.verb)
    payload_json = None
    if request.payload is not None:
        payload_json = json_text(
            request.payload, max_bytes=QUEUE_PAYLOAD_MAX_BYTES, path="$.payload"
        )
    depth = 0
    ceiling = call.actor.autonomy
    if request.parent_task_id is not None:
        parent = load_task(call, request.parent_task_id, path="$.parentTaskId")
        depth = parent.depth + 1
        if depth > MAX_AGENT_TASK_DEPTH:
            raise TaskError(
                ErrorCode.DEPTH_EXCEEDED,
                f"a child of {parent.task_id} would have depth {depth}; the limit is "
                f"{MAX_AGENT_TASK_DEPTH}",
                path="$.parentTaskId",
            )
        ceiling = min(ceiling, parent.autonomy_ceiling)
    if request.matter_id is not None:
        require_readable_matter(call, request.matter_id)
    parents = flow.check_create(call, request)
    task_id = new_id("at")
    existing = flow.deduplicate(call, request, task_id)
    if existing is not None:
        return existing
    record = TaskRecord(
        task_id=task_id,
        workspace=call.workspace,
        verb=request.verb,
        payload_json=payload_json,
        status=TaskStatus.QUEUED.value,
        priority=0,
        autonomy_ceiling=ceiling,
        depth=depth,
        parent_task_id=request.parent_task_id,
        run_id=request.run_id,
        matter_id=request.matter_id,
        matter_step_id=request.matter_step_id,
        created_by=call.actor.token_id,
        created_at_ms=call.now_ms,
        updated_at_ms=call.now_ms,
        **schedule_of(request, call.now_ms),
    )
    stored = insert_task(call, record, with_seq=not alone or flow.has_flow(request))
    if not flow.record_flow(call, request, stored):
        return task_view(stored, call.now_ms)  # no flow row, no parents: nothing to read
    orphaned = flow.failed_parent(parents, request.after or ())
    if orphaned is not None:  # a parent already ended FAILED or CANCELLED: so does this task
        stored = write_task(
            call, stored, **lease_cleared(TaskStatus.FAILED, call.now_ms), last_error=orphaned
        )
    return flow.view(call, stored)


def create_many(call: QueueCall, request: CreateManyIn) -> CreateManyResult:
    """Create each task of ``request.tasks`` in order, in this one transaction: all or nothing.

    Each entry answers what ``agenttask.create`` would (a deduplicated one included), and
    each task created gets an audit event of its own (operation ``agenttask.create``, the
    task as subject, ``calls`` 0: the call itself is the ``createMany`` event). A refused
    entry refuses the whole call, its path naming the entry (``$.tasks[3].verb``).
    """
    out: list[TaskView] = []
    for index, entry in enumerate(request.tasks):
        try:
            shown = create(call, entry, alone=False)
        except TaskError as exc:
            raise exc.at(f"$.tasks[{index}]") from None
        out.append(shown)
        if not shown.deduplicated:
            audit.append(
                call.tx,
                at_ms=call.now_ms,
                actor=call.actor.token_id,
                workspace=call.workspace,
                operation="agenttask.create",
                input_digest=audit.input_digest(codec_unstructure(entry)),
                outcome="OK",
                subject=shown.task_id,
                calls=0,
                status_before=None,
                status_after=shown.status.value,
            )
    return CreateManyResult(tasks=tuple(out))


def get(call: QueueCall, request: TaskRef) -> TaskView:
    """One task, for its creator, its live lease holder or an admin (else ``NOT_FOUND``)."""
    task = load_task(call, request.task_id)
    if not may_read(call, task):
        raise task_not_found(request.task_id)
    return flow.view(call, task)


def _after_seq(
    call: QueueCall, cursor: str | None, matter_id: str | None, *, any_matter: bool
) -> int | None:
    if cursor is None:
        return None
    task = call.tx.queue.get_task(call.workspace, cursor)
    if task is None or (not any_matter and task.matter_id != matter_id):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "cursor is not a nextCursor of this listing; start again without it",
            path="$.cursor",
        )
    return task.seq


def list_tasks(call: QueueCall, request: ListIn) -> ListResult:
    """A page of the workspace's tasks in creation order (admin)."""
    limit = request.limit or QUEUE_LIST_DEFAULT
    rows = call.tx.queue.list_tasks(
        call.workspace,
        status=None if request.status is None else request.status.value,
        matter_id=request.matter_id,
        non_matter_only=False,
        after_seq=_after_seq(call, request.cursor, request.matter_id, any_matter=True),
        limit=limit + 1,
        now_ms=call.now_ms,
    )
    page = rows[:limit]
    next_cursor = page[-1].task_id if len(rows) > limit else None
    return ListResult(tasks=flow.views(call, page), next_cursor=next_cursor)


def cancel(call: QueueCall, request: TaskRef) -> TaskView:
    """End a non-terminal task as ``CANCELLED``: no lease, ``finishedAtMs`` stamped.

    An open approval gate of the task is voided. A terminal task refuses with
    ``ILLEGAL_TRANSITION`` (re-cancelling included).
    """
    task = load_task(call, request.task_id)
    target = next_status(effective_status(task, call.now_ms), TaskAction.CANCEL)
    void_open_gate(call, task)
    return task_view(write_task(call, task, **lease_cleared(target, call.now_ms)), call.now_ms)


def requeue(call: QueueCall, request: TaskRef) -> TaskView:
    """Return a ``FAILED`` task to ``QUEUED`` with its checkpoint (and lastError) intact.

    A dead-lettered retrying task starts again at attempt 1, claimable at once.
    """
    task = load_task(call, request.task_id)
    target = next_status(effective_status(task, call.now_ms), TaskAction.REQUEUE)
    flow.check_requeue(call, task)  # queueflow: not behind a parent that ended badly
    again = write_task(call, task, **lease_cleared(target, call.now_ms), **REQUEUED)
    return flow.view(call, again)


def _set_priority(call: QueueCall, task: TaskRecord, priority: int) -> TaskRecord:
    next_status(effective_status(task, call.now_ms), TaskAction.REPRIORITIZE)
    if task.priority == priority:
        return task
    return write_task(call, task, priority=priority, updated_at_ms=call.now_ms)


def reorder(call: QueueCall, request: ReorderIn) -> TaskView:
    """Set a non-terminal task's priority (idempotent); higher drains first."""
    task = load_task(call, request.task_id)
    return task_view(_set_priority(call, task, request.priority), call.now_ms)


def rank_by_objective(call: QueueCall, request: TaskRef) -> RankResult:
    """Set the priority to the number of matter-objective tokens the task's descriptor shares.

    No matter, or a matter without an objective, ranks 0. Deterministic and idempotent.
    """
    task = load_task(call, request.task_id)
    objective = None
    if task.matter_id is not None:
        matter = call.tx.queue.get_matter(call.workspace, task.matter_id)
        objective = None if matter is None else matter.objective
    matched: frozenset[str] = frozenset()
    if objective:
        payload = parse_json_text(task.payload_json)
        matched = tokens(objective) & descriptor_tokens(task.verb, payload)
    ranked = _set_priority(call, task, len(matched))
    return RankResult(task=task_view(ranked, call.now_ms), matched_tokens=tuple(sorted(matched)))


def feed(call: QueueCall, request: FeedIn) -> FeedResult:
    """The reasoning feed: one task, one matter, or the workspace's non-matter tasks.

    * ``taskId``: the task's status, checkpoint and ``checkpoint.output`` and its approval
      gate (with the decision and its reason), for its creator or an admin; anyone else gets
      the same ``NOT_FOUND`` as for a missing task.
    * ``matterId``: the matter's tasks (rationale, autonomy exercised, status), only if the
      caller may read the matter (same ``NOT_FOUND`` otherwise), proven before disclosure.
    * neither: the workspace's tasks without a matter.
    """
    if request.task_id is not None:
        if request.matter_id is not None or request.cursor is not None:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                "send taskId alone, or matterId (and cursor) without taskId",
                path="$.taskId",
            )
        task = load_task(call, request.task_id)
        if not may_read(call, task, lease_holder=False):
            raise task_not_found(request.task_id)
        entry = feed_entry(task, call.now_ms, with_state=True)
        if task.escalation_gate_id is not None:
            gate = call.tx.queue.get_gate(call.workspace, task.escalation_gate_id)
            entry = attrs.evolve(entry, gate=None if gate is None else gate_view(gate))
        return FeedResult(matter_id=task.matter_id, entries=(entry,), next_cursor=None)
    if request.matter_id is not None:
        require_readable_matter(call, request.matter_id)
    limit = request.limit or QUEUE_LIST_DEFAULT
    rows = call.tx.queue.list_tasks(
        call.workspace,
        status=None,
        matter_id=request.matter_id,
        non_matter_only=request.matter_id is None,
        after_seq=_after_seq(call, request.cursor, request.matter_id, any_matter=False),
        limit=limit + 1,
        now_ms=call.now_ms,
    )
    page = rows[:limit]
    return FeedResult(
        matter_id=request.matter_id,
        entries=tuple(feed_entry(t, call.now_ms, with_state=False) for t in page),
        next_cursor=page[-1].task_id if len(rows) > limit else None,
    )
