"""The scheduling operations: pause, resume, paused, requeueMany, cancelMany (docs/queue.md).

Admin verbs (surface ``admin``, tier admin, never MCP, as every admin-only verb: docs/queue.md
"Which verbs are MCP tools"), registered by :func:`register` beside
:mod:`taskcore.queue.operations`. The scheduling fields of ``agenttask.create`` (``runAt``,
``delayMs``, ``maxAttempts``, ``backoff``) are fields of its input, so every door that
creates a task carries them.

>>> from taskcore.service import Registry
>>> registry = Registry()
>>> register(registry)
>>> sorted(op.name for op in registry)[:3]
['agenttask.cancelMany', 'agenttask.pause', 'agenttask.paused']
"""

from __future__ import annotations

from typing import Any

from taskcore.actors import RiskClass, Tier
from taskcore.limits import LEASE_DEFAULT_MS, LEASE_MAX_MS
from taskcore.queue import schedule
from taskcore.queue.bulk import BulkAct, creation_order, select, still_applies
from taskcore.queue.common import QueueCall
from taskcore.queue.requests import BulkIn, NoInput, VerbRef
from taskcore.queue.types import BulkResult, PausedList, VerbPaused
from taskcore.service import CallContext, Operation, Registry, Surface

__all__ = ["SCHED_VERBS", "register"]

SCHED_VERBS: tuple[str, ...] = (
    "agenttask.pause",
    "agenttask.resume",
    "agenttask.paused",
    "agenttask.requeueMany",
    "agenttask.cancelMany",
)
"""The verbs this module registers."""


def _call(ctx: CallContext) -> QueueCall:
    lease_max = ctx.service.config.lease_max_ms
    return QueueCall(
        tx=ctx.transaction(),
        actor=ctx.actor,
        now_ms=ctx.now_ms,
        lease_ms=min(LEASE_DEFAULT_MS, lease_max),
        lease_max_ms=min(LEASE_MAX_MS, lease_max),
    )


def _pause(ctx: CallContext, request: VerbRef) -> VerbPaused:
    return schedule.pause(_call(ctx), request.verb)


def _resume(ctx: CallContext, request: VerbRef) -> VerbPaused:
    return schedule.resume(_call(ctx), request.verb)


def _paused(ctx: CallContext, _: NoInput) -> PausedList:
    return schedule.list_paused(_call(ctx))


def _bulk(act: BulkAct) -> Any:
    def handler(ctx: CallContext, request: BulkIn) -> BulkResult:
        call = _call(ctx)
        chosen = select(call, act, request)
        if request.dry_run:
            return BulkResult(
                task_ids=chosen.task_ids, skipped=chosen.skipped, more=chosen.more, dry_run=True
            )
        done: list[str] = []
        for task_id in creation_order(call, chosen.task_ids):  # parents before children
            if still_applies(call, act, task_id):  # queueflow: a cascade may have moved it
                ctx.service.run_nested(ctx, act.value, {"taskId": task_id})  # checks, audit
                done.append(task_id)
        changed = set(done)
        acted = tuple(t for t in chosen.task_ids if t in changed)  # in drain order
        return BulkResult(
            task_ids=acted,
            skipped=chosen.skipped + len(chosen.task_ids) - len(acted),
            more=chosen.more,
            dry_run=False,
        )

    return handler


_BULK_NOTE = (
    " The filter is the backlog's (status, verb, matterId), at most limit (1000) tasks in drain "
    "order; each task changed is its own audited call in this one transaction (all or "
    "nothing). dryRun: answer what would change, change nothing."
)


def _admin(
    name: str,
    summary: str,
    input_type: type[Any],
    output_type: type[Any],
    risk: RiskClass,
    handler: Any,
    *,
    idempotent: bool,
    description: str = "",
) -> Operation[Any, Any]:
    return Operation(
        name=name,
        summary=summary,
        input_type=input_type,
        output_type=output_type,
        min_tier=Tier.ADMIN,
        risk=risk,
        idempotent=idempotent,
        mcp=False,
        surface=Surface.ADMIN,
        handler=handler,
        description=description,
    )


def _operations() -> tuple[Operation[Any, Any], ...]:
    return (
        _admin(
            "agenttask.pause",
            "Pause a carrier verb: claimNext hands out none of its tasks until resumed.",
            VerbRef,
            VerbPaused,
            RiskClass.WRITE,
            _pause,
            idempotent=True,
            description="A registered verb only (INVALID_VALUE otherwise). Tasks stay QUEUED; "
            "claimNext finds nothing of the verb, claim by id is CONFLICT. changed: false when "
            "it already was paused.",
        ),
        _admin(
            "agenttask.resume",
            "Resume a paused carrier verb; waiting claimers are woken.",
            VerbRef,
            VerbPaused,
            RiskClass.WRITE,
            _resume,
            idempotent=True,
        ),
        _admin(
            "agenttask.paused",
            "List the workspace's paused carrier verbs.",
            NoInput,
            PausedList,
            RiskClass.READ,
            _paused,
            idempotent=True,
        ),
        _admin(
            "agenttask.requeueMany",
            "Requeue every FAILED task a list filter matches (the dead-letter set).",
            BulkIn,
            BulkResult,
            RiskClass.WRITE,
            _bulk(BulkAct.REQUEUE),
            idempotent=False,
            description="Each FAILED task goes back to QUEUED at attempt 1, its checkpoint "
            "intact; tasks in another status are counted in skipped." + _BULK_NOTE,
        ),
        _admin(
            "agenttask.cancelMany",
            "Cancel every non-terminal task a list filter matches.",
            BulkIn,
            BulkResult,
            RiskClass.SENSITIVE,
            _bulk(BulkAct.CANCEL),
            idempotent=False,
            description="Each QUEUED, LEASED or ESCALATED task ends CANCELLED (its lease cleared, "
            "an open approval gate voided); terminal tasks are counted in skipped." + _BULK_NOTE,
        ),
    )


def register(registry: Registry) -> None:
    """Register pause, resume, paused, requeueMany and cancelMany."""
    for op in _operations():
        registry.register(op)
