"""The workflow operations on the front door: ``workflow.<op>`` for every door.

Every operation is ``Surface.WORKFLOW`` with ``route_required=True`` (repository and profile
come from the URL, never the body) and is listed on the workspace MCP endpoint. Handlers
return the ``result`` object only; the service wraps it as ``{"capability",
"schema_version", "operation", "result"}``. Mutations return the retained outcome bytes
(:class:`~taskcore.service.RawJson`), so an identical retry answers byte for byte.

Every operation runs in the transaction the service opens for the call, so its rows and its
audit event commit together (:func:`journal_for` binds the journal to that transaction).
Mutations take the actor/workspace guard before it opens (``Operation.hold``: the seed's
lock order, guard then transaction). The two that read git are two-phase
(``Operation.prepare``): ``checkpoint`` compiles the commit (a read transaction, then git)
before the call's transaction, which records it; ``reference`` reads the blob before it,
and the call's transaction only audits the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from taskcore.actors import RiskClass, Tier
from taskcore.authority.subjects import CompiledCheckpoint
from taskcore.contract import (
    InstructionEntrypointResponse,
    InstructionsRequest,
    ReferenceFetchRequest,
    ReferenceFetchResponse,
    SchemaMismatch,
    TaskClaimRequest,
    TaskMutationRequest,
    TaskRecoveryEnvelope,
    TaskResultAssertion,
    TaskStatusRequest,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import ASSERTION_MAX_BYTES
from taskcore.service import (
    WORKFLOW_PREFIX,
    CallContext,
    Operation,
    RawJson,
    Registry,
    Surface,
    TxMode,
)
from taskcore.workflow.guard import ActorGuard, GuardAction
from taskcore.workflow.journal import Caller, WorkflowJournal
from taskcore.workflow.types import (
    AttemptView,
    CapabilitiesRequest,
    CapabilitiesResponse,
    CheckpointRequest,
    CheckpointResponse,
    ClaimOutcome,
    MutationOutcome,
    NextRequest,
    NextResponse,
    RequirementsRequest,
    RequirementsResponse,
    ResultOutcome,
    TaskReadRequest,
    TaskRecoveryRequest,
    TaskView,
)

__all__ = ["guard_hold", "journal_for", "register"]


def journal_for(ctx: CallContext) -> tuple[WorkflowJournal, Caller]:
    """The journal and the caller for this call's actor and route.

    Inside the call's transaction the journal is bound to it (``ctx.storage``), so its
    ``write()``/``read()`` blocks join the call instead of opening their own.
    """
    if ctx.route is None:
        raise TaskError(ErrorCode.BAD_INPUT, "workflow operations need a repository and profile")
    journal = WorkflowJournal(
        ctx.storage, clock=ctx.service.clock, lease_max_ms=ctx.service.config.lease_max_ms
    )
    caller = Caller(
        actor=ctx.actor,
        repository_id=ctx.route.repository,
        profile_id=ctx.route.profile,
        guard=ActorGuard(ctx.actor, wait_ms=ctx.service.config.busy_timeout_ms),
    )
    return journal, caller


def guard_hold(action: GuardAction) -> Callable[[CallContext], AbstractContextManager[None]]:
    """``Operation.hold`` for a workflow action: the actor/workspace guard, before the tx.

    The journal's own ``guard.hold`` inside the call re-enters it (the lock is re-entrant per
    thread), so the order stays guard, then transaction, whoever opens it.
    """

    def hold(ctx: CallContext) -> AbstractContextManager[None]:
        guard = ActorGuard(ctx.actor, wait_ms=ctx.service.config.busy_timeout_ms)
        return guard.hold(action)

    return hold


def _capabilities(ctx: CallContext, _: CapabilitiesRequest) -> CapabilitiesResponse:
    names = tuple(op.local_name for op in ctx.service.registry.select(surfaces=(Surface.WORKFLOW,)))
    return WorkflowJournal.capabilities(names)


def _requirements(ctx: CallContext, req: RequirementsRequest) -> RequirementsResponse:
    journal, caller = journal_for(ctx)
    return journal.requirements(caller, req)


def _next(ctx: CallContext, req: NextRequest) -> NextResponse:
    journal, caller = journal_for(ctx)
    return journal.next(caller, req)


def _instructions(ctx: CallContext, req: InstructionsRequest) -> InstructionEntrypointResponse:
    journal, caller = journal_for(ctx)
    return journal.instructions(caller, req)


def _reference_read(ctx: CallContext, req: ReferenceFetchRequest) -> Any:
    # Phase one, before the call's transaction: the route in a read snapshot, then git.
    journal, caller = journal_for(ctx)
    return journal.reference(caller, req)


def _reference(_: CallContext, answer: Any) -> Any:
    return answer


def _status(ctx: CallContext, req: TaskStatusRequest) -> AttemptView:
    journal, caller = journal_for(ctx)
    return journal.status(caller, req)


def _task(ctx: CallContext, req: TaskReadRequest) -> TaskView:
    journal, caller = journal_for(ctx)
    return journal.task(caller, req)


def _recovery(ctx: CallContext, req: TaskRecoveryRequest) -> TaskRecoveryEnvelope:
    journal, caller = journal_for(ctx)
    return journal.recovery(caller, req)


def _checkpoint_compile(
    ctx: CallContext, req: CheckpointRequest
) -> tuple[CheckpointRequest, CompiledCheckpoint]:
    # Phase one, before the call's transaction: the route in a read snapshot, then git.
    journal, caller = journal_for(ctx)
    return req, journal.compile_checkpoint(caller, req)


def _checkpoint(
    ctx: CallContext, prepared: tuple[CheckpointRequest, CompiledCheckpoint]
) -> CheckpointResponse:
    # Phase two, in the call's transaction (which rechecks that the authority did not move).
    req, compiled = prepared
    journal, caller = journal_for(ctx)
    return journal.record_checkpoint(caller, compiled, retry=req.retry)


def _claim(ctx: CallContext, req: TaskClaimRequest) -> RawJson:
    journal, caller = journal_for(ctx)
    return RawJson(journal.claim(caller, req))


def _heartbeat(ctx: CallContext, req: TaskMutationRequest) -> RawJson:
    journal, caller = journal_for(ctx)
    return RawJson(journal.heartbeat(caller, req))


def _cancel(ctx: CallContext, req: TaskMutationRequest) -> RawJson:
    journal, caller = journal_for(ctx)
    return RawJson(journal.cancel(caller, req))


def _reconcile(ctx: CallContext, req: TaskMutationRequest) -> RawJson:
    journal, caller = journal_for(ctx)
    return RawJson(journal.reconcile(caller, req))


def _result(ctx: CallContext, req: TaskResultAssertion) -> RawJson:
    journal, caller = journal_for(ctx)
    return RawJson(journal.result(caller, req))


_READ = (RiskClass.READ, True)
_WRITE = (RiskClass.WRITE, True)

_PREPARE: dict[str, Callable[[CallContext, Any], Any]] = {
    "checkpoint": _checkpoint_compile,
    "reference": _reference_read,
}
"""The two-phase operations: what runs before the call's transaction opens."""

_HOLD: dict[str, GuardAction] = {
    "checkpoint": GuardAction.CHECKPOINT,
    "claim": GuardAction.CLAIM,
    "heartbeat": GuardAction.HEARTBEAT,
    "cancel": GuardAction.CANCEL,
    "reconcile": GuardAction.RECONCILE,
    "result": GuardAction.RESULT,
}
"""The mutations, and the guard action each holds across its transaction."""

_OPERATIONS: tuple[tuple[str, str, type[Any], Any, Any, tuple[RiskClass, bool], str], ...] = (
    (
        "capabilities",
        "Schema discovery: the capability, supported schema versions and operation names.",
        CapabilitiesRequest,
        CapabilitiesResponse,
        _capabilities,
        _READ,
        "Task-independent and read-only; send {}.",
    ),
    (
        "requirements",
        "The profile's installed requirement and plan; with change_id, that Change's tasks.",
        RequirementsRequest,
        RequirementsResponse,
        _requirements,
        _READ,
        "Read-only; never creates a journal or a row.",
    ),
    (
        "next",
        "Select the next claimable task of a Change's current subject, or say why there is none.",
        NextRequest,
        NextResponse,
        _next,
        _READ,
        "Read-only. Tasks are offered in plan order; reasons are stable codes, never commands.",
    ),
    (
        "instructions",
        "A task's instruction entrypoint (every criterion inline), or an explicit schema mismatch.",
        InstructionsRequest,
        InstructionEntrypointResponse,
        _instructions,
        _READ,
        "Read-only.",
    ),
    (
        "reference",
        "Fetch one named reference of a stored task (available, missing, denied, uncertain, limit).",
        ReferenceFetchRequest,
        ReferenceFetchResponse | SchemaMismatch,
        _reference,
        _READ,
        "Read-only. Repository, revision and path come from the stored task; bodies above "
        "128 KiB are refused before they are read; the SHA-256 must match the stored "
        "reference and the request. An unsupported expected_schema_version answers a "
        "schema_mismatch object.",
    ),
    (
        "claim",
        "Claim one task: an attempt bound to this exact request, a fresh fence and a lease.",
        TaskClaimRequest,
        ClaimOutcome,
        _claim,
        _WRITE,
        "Idempotent by request_id (scoped to the token): an identical retry returns the same "
        "bytes; a changed request under the same ID is IDEMPOTENCY_CONFLICT.",
    ),
    (
        "heartbeat",
        "Renew the lease of one exact attempt at its fence.",
        TaskMutationRequest,
        MutationOutcome,
        _heartbeat,
        _WRITE,
        "Old-fence heartbeats are refused with STALE_FENCE.",
    ),
    (
        "status",
        "Read one exact attempt: its retained state, observed expiry and current applicability.",
        TaskStatusRequest,
        AttemptView,
        _status,
        _READ,
        "Side-effect free; consumes no request ID.",
    ),
    (
        "task",
        "Read one task by ID: its Change, state and newest attempt (what a reconcile names).",
        TaskReadRequest,
        TaskView,
        _task,
        _READ,
        "Side-effect free; consumes no request ID. The task may belong to an older subject "
        "of its Change (qualification names one for prior_subject_unresolved).",
    ),
    (
        "cancel",
        "Cancel (fence) one unfinished attempt; the task stays blocked until reconciled.",
        TaskMutationRequest,
        MutationOutcome,
        _cancel,
        _WRITE,
        "A cancelled attempt may still be running; reconcile it before a fresh claim.",
    ),
    (
        "reconcile",
        "Supersede one unfinished attempt with a strictly greater fence; the task is claimable again.",
        TaskMutationRequest,
        MutationOutcome,
        _reconcile,
        _WRITE,
        "The only way an unfinished attempt is superseded; expiry alone never is.",
    ),
    (
        "result",
        "Return an agent assertion or a signed registered observation for one exact attempt.",
        TaskResultAssertion,
        ResultOutcome,
        _result,
        _WRITE,
        "Retained as nonpassing material: it never qualifies, never satisfies a "
        "controller-only criterion and never creates a receipt.",
    ),
    (
        "recovery",
        "What is known about one mutation request: a recovery envelope with permitted actions.",
        TaskRecoveryRequest,
        TaskRecoveryEnvelope,
        _recovery,
        _READ,
        "Side-effect free; contains no command, credential or path.",
    ),
    (
        "checkpoint",
        "Record the subject of a named Change at a commit of the registered repository.",
        CheckpointRequest,
        CheckpointResponse,
        _checkpoint,
        _WRITE,
        "The server reads the commit from the operator-registered repository (never a path "
        "from the request), derives the revision and the tasks; a commit the repository does "
        "not have is NOT_FOUND. Recording the same inputs again changes nothing.",
    ),
)


def register(registry: Registry) -> None:
    """Register every workflow operation as ``workflow.<op>``."""
    for name, summary, input_type, output_type, handler, (
        risk,
        idempotent,
    ), description in _OPERATIONS:
        registry.register(
            Operation(
                name=WORKFLOW_PREFIX + name,
                summary=summary,
                input_type=input_type,
                output_type=output_type,
                min_tier=Tier.AGENT,
                risk=risk,
                idempotent=idempotent,
                mcp=True,
                surface=Surface.WORKFLOW,
                handler=handler,
                tx=TxMode.WRITE,
                prepare=_PREPARE.get(name),
                hold=guard_hold(_HOLD[name]) if name in _HOLD else None,
                route_required=True,
                max_input_bytes=ASSERTION_MAX_BYTES,
                description=description,
            )
        )
