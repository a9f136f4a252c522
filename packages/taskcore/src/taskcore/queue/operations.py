"""The ``agenttask.*`` operations: the queue verbs (seed 003's nineteen and gate.apply), admin verbs.

:func:`register` adds them to a :class:`~taskcore.service.Registry`. The front door checks
the tier and the autonomy (from ``risk``), decodes the input strictly, runs the handler in
one ``BEGIN IMMEDIATE`` transaction and appends one audit event; the handlers here only call
the queue domain. ``docs/queue.md`` has the table of tiers, risks and MCP exposure.

``agenttask.checkpoint`` can refuse *and* keep an effect: the runaway guard force-requeues the
task and refuses the renewal with ``LEASE_RUNAWAY``. Its handler returns
:class:`~taskcore.service.CommitThenRefuse`, so the requeue and the audit event (with the
refusal's code) commit in the call's one transaction before the error reaches the caller.

>>> from taskcore.service import Registry, Surface
>>> registry = Registry()
>>> register(registry)
>>> len(registry.names(Surface.QUEUE))  # the nineteen and agenttask.gate.apply
20
>>> registry.get("agenttask.claimNext").mcp, registry.get("agenttask.list").mcp
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from taskcore.actors import Actor, RiskClass, Tier
from taskcore.admission import check_escalation_target
from taskcore.limits import CHECKPOINT_WRITE_BODY_MAX_BYTES, LEASE_DEFAULT_MS, LEASE_MAX_MS
from taskcore.queue import approval, checkpoints, ext, leases, matters, tasks, verb_registry
from taskcore.queue.common import QueueCall
from taskcore.queue.requests import (
    CheckpointIn,
    CheckpointWriteIn,
    ClaimIn,
    ClaimNextIn,
    CreateIn,
    EscalateIn,
    ExtCreateIn,
    ExtSetWaitingIn,
    ExtUpdateIn,
    FeedIn,
    GateApplyIn,
    GateDecisionIn,
    GateRef,
    GateRejectIn,
    ListIn,
    MatterCreateIn,
    MatterGrantIn,
    MatterRef,
    NoInput,
    PruneIn,
    ReleaseIn,
    ReorderIn,
    TaskRef,
    VerbRegisterIn,
)
from taskcore.queue.types import (
    ApprovalGateView,
    ClaimResult,
    ClearResult,
    EscalateResult,
    ExtView,
    FeedResult,
    GateDecision,
    GrantApplied,
    ListResult,
    MatterView,
    PhaseWritten,
    PruneResult,
    RankResult,
    SetWaitingResult,
    TaskView,
    VerbList,
    VerbRegistered,
)
from taskcore.service import (
    CallContext,
    CommitThenRefuse,
    Operation,
    Registry,
    Surface,
    TxMode,
    Wait,
)
from taskcore.store.storage import Transaction
from taskcore.store.wakeup import queue_topic

__all__ = ["QUEUE_VERBS", "ROW_SAFE_VERBS", "register"]

R = TypeVar("R")

QUEUE_VERBS: tuple[str, ...] = (
    "agenttask.create",
    "agenttask.get",
    "agenttask.list",
    "agenttask.claim",
    "agenttask.claimNext",
    "agenttask.checkpoint",
    "agenttask.release",
    "agenttask.requeue",
    "agenttask.cancel",
    "agenttask.escalate",
    "agenttask.reorder",
    "agenttask.rankByObjective",
    "agenttask.feed",
    "agenttask.checkpoint.write",
    "agenttask.checkpoint.clear",
    "agenttask.checkpoint.prune",
    "agenttask.ext.create",
    "agenttask.ext.setWaiting",
    "agenttask.ext.update",
)
"""The seed's nineteen verbs, in the seed's order."""

ROW_SAFE_VERBS: tuple[str, ...] = (
    "agenttask.create",
    "agenttask.claimNext",
    "agenttask.checkpoint",
    "agenttask.release",
)
"""The verbs registered ``row_safe`` (PostgreSQL runs them under the shared writer lock).

Why each is safe beside the others with no single writer (every other verb, and every write
of the verb registry, matters, gates, grants and tokens, stays exclusive, so what these
read from those tables cannot change under them):

* ``create`` inserts one task row under a fresh random id (unique key) after reading the
  verb registry, the parent's immutable depth and ceiling and the matter's grants;
* ``claimNext`` takes its row with ``FOR UPDATE SKIP LOCKED`` and writes it by version
  compare-and-set; the gate and phase it shows, and the paused verbs it reads, are written by
  exclusive verbs only (``agenttask.pause`` / ``resume`` are not row-safe);
* ``checkpoint`` and ``release`` read the task row-locked (``for_update``: a racing writer
  of the row waits, then reads what the first wrote) and write it by version
  compare-and-set, the fence, lease and runaway counters (``lease_extensions``,
  ``first_leased_at_ms``) all on that one row; any other racing writer makes the later one
  ``CONFLICT``, nothing lost;
* the front door's token check reads the token row after the shared writer lock is held (a
  revocation is an exclusive writer: it waits for the calls in flight, later calls see it)
  and the audit row is a plain insert (its ``seq`` from a sequence). No idempotency, rate or gate rows are written.
"""


def _lease_ms(ctx: CallContext) -> int:
    return min(LEASE_DEFAULT_MS, ctx.service.config.lease_max_ms)


def _call(ctx: CallContext, tx: Transaction) -> QueueCall:
    return QueueCall(
        tx=tx,
        actor=ctx.actor,
        now_ms=ctx.now_ms,
        lease_ms=_lease_ms(ctx),
        lease_max_ms=min(LEASE_MAX_MS, ctx.service.config.lease_max_ms),
    )


def _in_tx(fn: Callable[[QueueCall, Any], R]) -> Callable[[CallContext, Any], R]:
    def handler(ctx: CallContext, request: Any) -> R:
        return fn(_call(ctx, ctx.transaction()), request)

    return handler


def _checkpoint_handler(ctx: CallContext, request: CheckpointIn) -> TaskView | CommitThenRefuse:
    outcome = leases.checkpoint(_call(ctx, ctx.transaction()), request)
    if isinstance(outcome, leases.Refused):
        return CommitThenRefuse(outcome.error)
    return outcome


def _apply_grant_handler(ctx: CallContext, request: GateApplyIn) -> GrantApplied:
    def run(verb: str, payload: Any) -> Any:
        return ctx.service.run_granted(ctx, verb, payload)

    return approval.apply_grant(_call(ctx, ctx.transaction()), request, run)


def _escalate_handler(ctx: CallContext, request: EscalateIn) -> EscalateResult:
    # A gate for a call this token's tier can never make (or no grant can run) is a dead
    # end an operator would approve for nothing: refuse it now, naming the tier it needs.
    if request.target_verb is not None and request.target_verb != approval.GRANT_VERB:
        check_escalation_target(ctx.service.registry, request.target_verb, ctx.actor)
    return leases.escalate(_call(ctx, ctx.transaction()), request)


def _claim_next_handler(
    ctx: CallContext, request: ClaimNextIn
) -> ClaimResult | dict[str, bool] | Wait:
    call = _call(ctx, ctx.transaction())
    waiting = ctx.waiting
    if waiting is not None and waiting.abandoned:
        return {"claimed": False}  # the caller went away: hand nothing to nobody
    topic = queue_topic(call.workspace)
    generation = ctx.service.storage.wakeup.generation(topic)  # before looking: nothing lost
    result = leases.claim_next(call, request)
    if result.claimed:
        if waiting is not None:
            waiting.found = True  # there may be more: the next waiter looks too
        return result
    if waiting is not None and waiting.begin(ctx.actor.token_id, request.wait_ms):
        # Nothing yet: wait (this attempt rolls back unaudited) for a commit that may free a
        # task, or for the time one becomes due. Claimers of one verb and autonomy would all
        # find the same: they are one group, woken one at a time.
        due = call.tx.queue.next_due(call.workspace, call.now_ms)
        return Wait(
            topic=topic,
            group=(request.verb, ctx.actor.autonomy),
            generation=generation,
            due_in_ms=None if due is None else max(0, due - call.now_ms),
        )
    return {"claimed": False}


_FENCE_NOTE = (
    " Pass the claim's lease.fence as `fence`: a stale one is refused with STALE_FENCE, so a "
    "paused worker never overwrites its successor."
)


def _spec(
    name: str,
    summary: str,
    input_type: type[Any],
    output_type: type[Any] | None,
    tier: Tier,
    risk: RiskClass,
    *,
    idempotent: bool,
    mcp: bool,
    handler: Callable[[CallContext, Any], Any],
    description: str = "",
    surface: Surface = Surface.QUEUE,
    tx: TxMode = TxMode.WRITE,
    max_input_bytes: int | None = None,
    waits: bool = False,
) -> Operation[Any, Any]:
    extra: dict[str, Any] = {}
    if max_input_bytes is not None:
        extra["max_input_bytes"] = max_input_bytes
    return Operation(
        name=name,
        summary=summary,
        input_type=input_type,
        output_type=output_type,
        min_tier=tier,
        risk=risk,
        idempotent=idempotent,
        mcp=mcp,
        surface=surface,
        handler=handler,
        tx=tx,
        description=description,
        row_safe=name in ROW_SAFE_VERBS,
        waits=waits,
        read_ahead=_task_ahead if name in _READ_TASK_FIRST else None,
        **extra,
    )


_READ_TASK_FIRST = frozenset({"agenttask.checkpoint", "agenttask.release"})
"""Verbs whose handler's first read is their task, ``for_update`` (``Operation.read_ahead``)."""


def _task_ahead(tx: Transaction, actor: Actor, request: CheckpointIn | ReleaseIn) -> None:
    tx.queue.read_ahead(actor.workspace, request.task_id)


def _queue_operations() -> tuple[Operation[Any, Any], ...]:
    A, M, ADM = Tier.AGENT, Tier.MEMBER, Tier.ADMIN  # noqa: N806 - table shorthand
    READ, WRITE = RiskClass.READ, RiskClass.WRITE  # noqa: N806 - table shorthand
    return (
        _spec(
            "agenttask.create",
            "Queue a task for a registered carrier verb.",
            CreateIn,
            TaskView,
            M,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_in_tx(tasks.create),
            description="depth = parent depth + 1; deeper than 5 is DEPTH_EXCEEDED before any "
            "write. An unregistered verb is INVALID_VALUE. The task's autonomy ceiling is the "
            "creator's autonomy, lowered to the parent's ceiling.",
        ),
        _spec(
            "agenttask.get",
            "Read one task (its creator, lease holder or an admin).",
            TaskRef,
            TaskView,
            A,
            READ,
            idempotent=True,
            mcp=True,
            handler=_in_tx(tasks.get),
        ),
        _spec(
            "agenttask.list",
            "List the workspace's tasks with status and lastError (admin).",
            ListIn,
            ListResult,
            ADM,
            READ,
            idempotent=True,
            mcp=False,
            handler=_in_tx(tasks.list_tasks),
            description="Filter by effective status and matterId; page with cursor/nextCursor.",
        ),
        _spec(
            "agenttask.claim",
            "Lease one QUEUED task by id; returns payload, checkpoint, lease.",
            ClaimIn,
            ClaimResult,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_in_tx(leases.claim),
            description="Single winner: a live lease is CONFLICT, an escalated or terminal task "
            "ILLEGAL_TRANSITION, a ceiling below the caller's autonomy AUTONOMY_EXCEEDED. The "
            "lease handle carries a fence that grows with every claim.",
        ),
        _spec(
            "agenttask.claimNext",
            "Lease the best task this caller may run, or {claimed:false}.",
            ClaimNextIn,
            ClaimResult,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_claim_next_handler,
            waits=True,
            description="The highest priority first, then the oldest, among QUEUED tasks and "
            "expired leases "
            "whose autonomy ceiling admits the caller; optionally one carrier verb. Concurrent "
            "callers each win a different task. waitMs (up to 30000): when nothing is "
            "claimable, wait that long for a task before answering {claimed:false}; the "
            "call holds no lock while it waits and is audited once.",
        ),
        _spec(
            "agenttask.checkpoint",
            "Renew the lease (heartbeat), persist state, or finish.",
            CheckpointIn,
            TaskView,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_checkpoint_handler,
            description="Lease holder only (LEASE_NOT_HELD). status DONE|FAILED ends the lease "
            "and stamps finishedAtMs. A 5th renewal, or one past the wall-clock cap, is refused "
            "with LEASE_RUNAWAY and the task is requeued." + _FENCE_NOTE,
        ),
        _spec(
            "agenttask.release",
            "Give the lease back; the task is QUEUED with its checkpoint.",
            ReleaseIn,
            TaskView,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_in_tx(leases.release),
            description=_FENCE_NOTE.strip(),
        ),
        _spec(
            "agenttask.requeue",
            "Return a FAILED task to the queue, checkpoint intact.",
            TaskRef,
            TaskView,
            M,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_in_tx(tasks.requeue),
        ),
        _spec(
            "agenttask.cancel",
            "Cancel a QUEUED, LEASED or ESCALATED task.",
            TaskRef,
            TaskView,
            M,
            RiskClass.SENSITIVE,
            idempotent=False,
            mcp=True,
            handler=_in_tx(tasks.cancel),
            description="A terminal task (re-cancel included) is ILLEGAL_TRANSITION, never a "
            "silent no-op. The lease is cleared and an open approval gate voided.",
        ),
        _spec(
            "agenttask.escalate",
            "Park the task behind a one-shot approval gate.",
            EscalateIn,
            EscalateResult,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_escalate_handler,
            description="The lease holder (or, for a QUEUED task, its creator or an admin) asks "
            "an admin to approve {targetVerb, inputHash}; send targetInput (the call's input) "
            "instead of inputHash to have it hashed here. Once approved, agenttask.gate.apply "
            "makes that call. A grant lifts the autonomy bound, never the tier: a targetVerb "
            "whose tier this token lacks is FORBIDDEN here (details.requiredTier names it), "
            "and one no grant can run is INVALID_VALUE." + _FENCE_NOTE,
        ),
        _spec(
            approval.GRANT_VERB,
            "Make the one call an approved escalation grants, consuming the grant.",
            GateApplyIn,
            GrantApplied,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_apply_grant_handler,
            description="Lease holder only. {taskId, gateId, verb, input, fence?}: the front door "
            "runs verb(input) in this call's transaction beyond the caller's autonomy when the "
            "gate is the task's, APPROVED, its targetVerb is verb and its inputHash the SHA-256 "
            "of input's canonical JSON (sorted keys, compact); the gate becomes CONSUMED with "
            "it. Refusals: GRANT_PENDING, GRANT_DENIED, GRANT_CONSUMED, GRANT_VOIDED, "
            "GRANT_TASK_MISMATCH, GRANT_VERB_MISMATCH, GRANT_INPUT_MISMATCH, LEASE_NOT_HELD."
            + _FENCE_NOTE,
        ),
        _spec(
            "agenttask.reorder",
            "Set a non-terminal task's priority; higher drains first.",
            ReorderIn,
            TaskView,
            M,
            WRITE,
            idempotent=True,
            mcp=True,
            handler=_in_tx(tasks.reorder),
        ),
        _spec(
            "agenttask.rankByObjective",
            "Set priority to the overlap of the task with its matter's objective.",
            TaskRef,
            RankResult,
            M,
            WRITE,
            idempotent=True,
            mcp=True,
            handler=_in_tx(tasks.rank_by_objective),
            description="priority = number of distinct objective tokens found in the task's "
            "verb and payload summary/title/description; no matter or objective ranks 0.",
        ),
        _spec(
            "agenttask.feed",
            "Read a task's result, or a matter's reasoning chain.",
            FeedIn,
            FeedResult,
            M,
            READ,
            idempotent=True,
            mcp=True,
            handler=_in_tx(tasks.feed),
            description="taskId: creator or admin only. matterId: readers of the matter only. "
            "Neither: the workspace's non-matter tasks. Anything else is NOT_FOUND.",
        ),
        _spec(
            "agenttask.checkpoint.write",
            "Append a per-phase resume checkpoint.",
            CheckpointWriteIn,
            PhaseWritten,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_in_tx(checkpoints.write_phase),
            max_input_bytes=CHECKPOINT_WRITE_BODY_MAX_BYTES,
            description="Lease holder only; state at most 1 MiB; the phase index grows by one "
            "per task." + _FENCE_NOTE,
        ),
        _spec(
            "agenttask.checkpoint.clear",
            "Delete every phase checkpoint of a task.",
            TaskRef,
            ClearResult,
            A,
            WRITE,
            idempotent=True,
            mcp=True,
            handler=_in_tx(checkpoints.clear_phases),
        ),
        _spec(
            "agenttask.checkpoint.prune",
            "Delete phase checkpoints older than N days (this workspace).",
            PruneIn,
            PruneResult,
            ADM,
            RiskClass.DESTRUCTIVE,
            idempotent=True,
            mcp=False,
            handler=_in_tx(checkpoints.prune_phases),
        ),
        _spec(
            "agenttask.ext.create",
            "Create a task's runtime/UI row (one per task).",
            ExtCreateIn,
            ExtView,
            A,
            WRITE,
            idempotent=False,
            mcp=True,
            handler=_in_tx(ext.create_ext),
        ),
        _spec(
            "agenttask.ext.setWaiting",
            "Park or wake the ext row (compare-and-set).",
            ExtSetWaitingIn,
            SetWaitingResult,
            A,
            WRITE,
            idempotent=True,
            mcp=True,
            handler=_in_tx(ext.set_waiting),
        ),
        _spec(
            "agenttask.ext.update",
            "Patch the ext row's supplied keys (last write wins).",
            ExtUpdateIn,
            ExtView,
            A,
            WRITE,
            idempotent=True,
            mcp=True,
            handler=_in_tx(ext.update_ext),
        ),
    )


def _admin_operations() -> tuple[Operation[Any, Any], ...]:
    ADM = Tier.ADMIN  # noqa: N806 - table shorthand
    READ, WRITE = RiskClass.READ, RiskClass.WRITE  # noqa: N806 - table shorthand
    admin: dict[str, Any] = {"surface": Surface.ADMIN, "mcp": False}
    return (
        _spec(
            "agenttask.verb.register",
            "Allow tasks of a new carrier verb in this workspace.",
            VerbRegisterIn,
            VerbRegistered,
            ADM,
            WRITE,
            idempotent=True,
            handler=_in_tx(verb_registry.register_verb),
            **admin,
        ),
        _spec(
            "agenttask.verb.list",
            "List the carrier verbs tasks may be created with.",
            NoInput,
            VerbList,
            ADM,
            READ,
            idempotent=True,
            handler=_in_tx(lambda call, _: verb_registry.list_verbs(call)),
            **admin,
        ),
        _spec(
            "agenttask.gate.get",
            "Read an approval gate.",
            GateRef,
            ApprovalGateView,
            ADM,
            READ,
            idempotent=True,
            handler=_in_tx(approval.get_gate),
            **admin,
        ),
        _spec(
            "agenttask.gate.approve",
            "Approve an escalation: the task is requeued with a one-shot grant.",
            GateDecisionIn,
            GateDecision,
            ADM,
            RiskClass.SENSITIVE,
            idempotent=False,
            handler=_in_tx(approval.approve_gate),
            **admin,
        ),
        _spec(
            "agenttask.gate.reject",
            "Reject an escalation, saying why (note): the task ends FAILED.",
            GateRejectIn,
            GateDecision,
            ADM,
            WRITE,
            idempotent=False,
            handler=_in_tx(approval.reject_gate),
            **admin,
        ),
        _spec(
            "agenttask.matter.create",
            "Create a matter with an objective.",
            MatterCreateIn,
            MatterView,
            ADM,
            WRITE,
            idempotent=False,
            handler=_in_tx(matters.create_matter),
            **admin,
        ),
        _spec(
            "agenttask.matter.get",
            "Read a matter and its readers.",
            MatterRef,
            MatterView,
            ADM,
            READ,
            idempotent=True,
            handler=_in_tx(matters.get_matter),
            **admin,
        ),
        _spec(
            "agenttask.matter.grant",
            "Let a token id read a matter's feed.",
            MatterGrantIn,
            MatterView,
            ADM,
            WRITE,
            idempotent=True,
            handler=_in_tx(matters.grant_reader),
            **admin,
        ),
        _spec(
            "agenttask.matter.revoke",
            "Withdraw a token id's read grant on a matter.",
            MatterGrantIn,
            MatterView,
            ADM,
            WRITE,
            idempotent=True,
            handler=_in_tx(matters.revoke_reader),
            **admin,
        ),
    )


def register(registry: Registry) -> None:
    """Register the queue verbs (the nineteen and ``agenttask.gate.apply``) and admin verbs."""
    for op in (*_queue_operations(), *_admin_operations()):
        registry.register(op)
