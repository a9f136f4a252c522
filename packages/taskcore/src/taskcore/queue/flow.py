"""Queue flow (issue 28): unique tasks, concurrency keys and limits, dependencies.

The rows are the ``queueflow`` store component's (:mod:`taskcore.store.queueflow_api`); this
module holds every decision over them except what a status move means for a task's
dependants, which :func:`taskcore.queue.common.write_task` settles (every move goes there).

* **Unique tasks.** A create with ``uniqueKey`` first takes the key for its new task
  (:meth:`~taskcore.store.queueflow_api.QueueFlowStore.claim_unique`, an insert that a racing
  create's commit makes a no-op). When another task holds the key and is not terminal, or
  ended less than its ``uniqueFor`` ms ago, the create answers that task with
  ``deduplicated: true`` and writes nothing; the call's audit event names it (its subject,
  status unchanged). A holder whose hold ended hands the key over by compare-and-set.
* **Concurrency keys.** ``claimNext`` passes over a task whose key already has its limit of
  live leases (:data:`~taskcore.store.sqlite_queueflow.CLAIM_GATE`); ``claim`` of such a task
  is ``CONFLICT``. A key without a limit admits
  :data:`~taskcore.limits.CONCURRENCY_LIMIT_DEFAULT`.
* **Dependencies.** ``after`` names up to 32 existing tasks of the workspace; the task is
  claimable once all are ``DONE`` (``claim`` before that is ``DEPENDENCY_INCOMPLETE``). A
  parent that ends ``FAILED`` or ``CANCELLED`` fails its open children, and theirs. Parents
  exist before the child, so there is no cycle.
"""

from __future__ import annotations

import attrs

from taskcore.callnote import note_status
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import CONCURRENCY_LIMIT_DEFAULT
from taskcore.queue.common import QueueCall, effective_status, task_not_found
from taskcore.queue.requests import CreateIn, LimitSetIn, NoInput
from taskcore.queue.types import LimitList, LimitView, TaskStatus, TaskView
from taskcore.queue.views import task_view
from taskcore.store.queue_api import TaskRecord
from taskcore.store.queueflow_api import FlowRecord, LimitRecord
from taskcore.store.wakeup import queue_topic

__all__ = [
    "check_claimable",
    "check_create",
    "check_requeue",
    "deduplicate",
    "failed_parent",
    "has_flow",
    "list_limits",
    "orphaned_by",
    "record_flow",
    "set_limit",
    "view",
    "views",
]

_ENDED = frozenset({TaskStatus.FAILED.value, TaskStatus.CANCELLED.value})


def check_create(call: QueueCall, request: CreateIn) -> dict[str, str]:
    """Refuse a create whose flow fields do not hold; return its parents' effective statuses.

    ``uniqueFor`` needs ``uniqueKey``; ``after`` names each task once, every one an existing
    task of the workspace (``NOT_FOUND`` at its index otherwise).
    """
    if request.unique_for is not None and request.unique_key is None:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "uniqueFor extends a uniqueKey's hold: send uniqueKey too, or leave uniqueFor out",
            path="$.uniqueFor",
        )
    after = request.after or ()
    if not after:
        return {}
    seen: set[str] = set()
    for index, task_id in enumerate(after):
        if task_id in seen:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                f"after names {task_id} twice; name each task once",
                path=f"$.after[{index}]",
            )
        seen.add(task_id)
    statuses = call.tx.queueflow.parent_statuses(call.workspace, tuple(after))
    for index, task_id in enumerate(after):
        if task_id not in statuses:
            raise task_not_found(task_id, path=f"$.after[{index}]")
        if statuses[task_id] == TaskStatus.LEASED.value:  # a lapsed lease reads otherwise
            parent = call.tx.queue.get_task(call.workspace, task_id)
            if parent is not None:
                statuses[task_id] = effective_status(parent, call.now_ms).value
    return statuses


def deduplicate(call: QueueCall, request: CreateIn, task_id: str) -> TaskView | None:
    """Take ``uniqueKey`` for the new ``task_id``, or answer the live task that holds it.

    ``None``: the key is the new task's now (or the create has no key); create it.
    """
    key = request.unique_key
    if key is None:
        return None
    unique_for = request.unique_for or 0
    for _ in range(3):  # each round either takes the key or sees a holder another commit made
        if call.tx.queueflow.claim_unique(call.workspace, key, task_id, unique_for):
            return None
        holder = call.tx.queueflow.unique_holder(call.workspace, key)
        if holder is None:
            continue  # the holder's transaction rolled back (PostgreSQL): try again
        held = call.tx.queue.get_task(call.workspace, holder.task_id)
        if held is not None and _holds(held, holder.unique_for_ms, call.now_ms):
            status = effective_status(held, call.now_ms).value
            note_status(held.task_id, status, status)  # the audit event names it
            return attrs.evolve(view(call, held), deduplicated=True)
        if call.tx.queueflow.replace_unique(
            call.workspace, key, holder.task_id, task_id, unique_for
        ):
            return None
    raise TaskError(
        ErrorCode.CONFLICT, f"uniqueKey {key!r} changed hands while this create ran; retry"
    )


def _holds(task: TaskRecord, unique_for_ms: int, now_ms: int) -> bool:
    """Whether ``task`` still holds its unique key: live, or ended within ``unique_for_ms``."""
    if task.finished_at_ms is None:
        return True
    return now_ms < task.finished_at_ms + unique_for_ms


def has_flow(request: CreateIn) -> bool:
    """Whether a created task has a flow row (a unique or concurrency key, or parents)."""
    return not (
        request.unique_key is None and request.concurrency_key is None and not request.after
    )


def record_flow(call: QueueCall, request: CreateIn, task: TaskRecord) -> bool:
    """Write the new task's flow row and dependencies; whether it has any."""
    after = request.after or ()
    if not has_flow(request):
        return False
    call.tx.queueflow.insert_flow(
        FlowRecord(
            workspace=call.workspace,
            task_id=task.task_id,
            unique_key=request.unique_key,
            concurrency_key=request.concurrency_key,
            has_parents=bool(after),
            gated=bool(after) or request.concurrency_key is not None,
        )
    )
    if after:
        call.tx.queueflow.insert_deps(call.workspace, task.task_id, tuple(after))
    return True


def failed_parent(statuses: dict[str, str], after: tuple[str, ...]) -> str | None:
    """Why a new child is failed at once: its first parent that ended FAILED or CANCELLED.

    >>> failed_parent({"a": "DONE", "b": "CANCELLED"}, ("a", "b"))
    'parent b ended CANCELLED'
    >>> failed_parent({"a": "QUEUED"}, ("a",)) is None
    True
    """
    for task_id in after:
        if statuses.get(task_id) in _ENDED:
            return f"parent {task_id} ended {statuses[task_id]}"
    return None


def check_claimable(call: QueueCall, task: TaskRecord) -> None:
    """Refuse ``claim`` of a task waiting on parents or whose key is at its limit."""
    flow = call.tx.queueflow.flows(call.workspace, (task.task_id,)).get(task.task_id)
    if flow is None:
        return
    if flow.has_parents:
        waiting = call.tx.queueflow.waiting_on(call.workspace, task.task_id)
        if waiting:
            raise TaskError(
                ErrorCode.DEPENDENCY_INCOMPLETE,
                f"the task runs after {', '.join(waiting)}, not all DONE yet; claim it later",
                details={"blockedBy": list(waiting)},
            )
    key = flow.concurrency_key
    if key is not None:
        limit = call.tx.queueflow.get_limit(call.workspace, key)
        most = CONCURRENCY_LIMIT_DEFAULT if limit is None else limit.max_leased
        if call.tx.queueflow.key_leased(call.workspace, key, call.now_ms) >= most:
            raise TaskError(
                ErrorCode.CONFLICT,
                f"concurrencyKey {key!r} already has {most} leased task(s), its limit; "
                "claim it when one ends",
                details={"concurrencyKey": key, "max": most},
            )


def orphaned_by(call: QueueCall, task: TaskRecord) -> tuple[str | None, tuple[str, ...]]:
    """Why requeueing ``task`` is refused, and its parents not yet ``DONE``.

    The reason names a parent that ended ``FAILED`` or ``CANCELLED``; ``None``: no such parent.
    """
    flow = call.tx.queueflow.flows(call.workspace, (task.task_id,)).get(task.task_id)
    if flow is None or not flow.has_parents:
        return None, ()
    waiting = call.tx.queueflow.waiting_on(call.workspace, task.task_id)
    statuses = call.tx.queueflow.parent_statuses(call.workspace, waiting)
    return failed_parent(statuses, waiting), waiting


def check_requeue(call: QueueCall, task: TaskRecord) -> None:
    """Refuse requeueing a child one of whose parents ended ``FAILED`` or ``CANCELLED``.

    It could never run (its parent will not be ``DONE``): requeue the parent first.
    """
    ended, waiting = orphaned_by(call, task)
    if ended is not None:
        raise TaskError(
            ErrorCode.DEPENDENCY_INCOMPLETE,
            f"{ended}, so this task could never run; requeue that parent first",
            details={"blockedBy": list(waiting)},
        )


def views(call: QueueCall, tasks: tuple[TaskRecord, ...]) -> tuple[TaskView, ...]:
    """The tasks as observed now, with their flow fields (three reads for the lot)."""
    plain = tuple(task_view(t, call.now_ms) for t in tasks)
    ids = tuple(t.task_id for t in tasks)
    flows = call.tx.queueflow.flows(call.workspace, ids)
    if not flows:
        return plain
    with_parents = tuple(i for i, f in flows.items() if f.has_parents)
    parents = call.tx.queueflow.parents(call.workspace, with_parents)
    waiting = call.tx.queueflow.waiting(call.workspace, with_parents)
    out = []
    for shown in plain:
        flow = flows.get(shown.task_id)
        if flow is None:
            out.append(shown)
            continue
        after = parents.get(shown.task_id)
        blocked = waiting.get(shown.task_id, ())
        out.append(
            attrs.evolve(
                shown,
                unique_key=flow.unique_key,
                concurrency_key=flow.concurrency_key,
                after=after,
                blocked_by=blocked or None,
            )
        )
    return tuple(out)


def view(call: QueueCall, task: TaskRecord) -> TaskView:
    """One task as observed now, with its flow fields."""
    return views(call, (task,))[0]


def set_limit(call: QueueCall, request: LimitSetIn) -> LimitView:
    """Set a concurrency key's limit (admin); a raised limit wakes waiting claimers."""
    call.tx.queueflow.set_limit(
        LimitRecord(
            workspace=call.workspace,
            key=request.key,
            max_leased=request.max,
            set_by=call.actor.token_id,
            set_at_ms=call.now_ms,
        )
    )
    call.tx.signal(queue_topic(call.workspace))
    leased = call.tx.queueflow.key_leased(call.workspace, request.key, call.now_ms)
    return LimitView(
        key=request.key,
        max=request.max,
        leased=leased,
        set_by=call.actor.token_id,
        set_at_ms=call.now_ms,
    )


def list_limits(call: QueueCall, _: NoInput) -> LimitList:
    """Every concurrency limit of the workspace, with its live leases now."""
    rows = call.tx.queueflow.list_limits(call.workspace, call.now_ms)
    return LimitList(
        limits=tuple(
            LimitView(
                key=r.key, max=r.max_leased, leased=r.leased, set_by=r.set_by, set_at_ms=r.set_at_ms
            )
            for r in rows
        ),
        default_max=CONCURRENCY_LIMIT_DEFAULT,
    )
