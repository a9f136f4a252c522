"""Registration of the operator reads (``observe.*``) and token operations (``admin.token.*``).

Like every operation they are tier-, autonomy- and workspace-checked by the front door and
audited once per call. Reads of the queue, approvals, audit and tokens need the admin tier
(what an operator sees); reads of repositories, Changes and subjects need the member tier
and are MCP tools too. ``docs/board.md`` has the table.

>>> from taskcore.service import Registry
>>> registry = Registry()
>>> register(registry)
>>> sorted(registry.names())[:3]
['admin.token.create', 'admin.token.revoke', 'observe.approvals']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskcore.actors import RiskClass, Tier
from taskcore.limits import LEASE_DEFAULT_MS, LEASE_MAX_MS
from taskcore.observe import reads, tokens
from taskcore.observe.requests import (
    ApprovalsIn,
    AuditIn,
    BacklogIn,
    ChangesIn,
    RepositoriesIn,
    SubjectIn,
    SubjectsIn,
    TokenCreateIn,
    TokenRevokeIn,
    TokensIn,
)
from taskcore.observe.types import (
    ApprovalsResult,
    AuditResult,
    BacklogResult,
    ChangesResult,
    IssuedTokenView,
    RepositoriesResult,
    StatsResult,
    SubjectDetail,
    SubjectsResult,
    TaskDetail,
    TokensResult,
    TokenView,
    WhoAmI,
)
from taskcore.queue.common import QueueCall
from taskcore.queue.requests import NoInput, TaskRef
from taskcore.service import CallContext, Operation, Registry, Surface, TxMode

__all__ = ["OBSERVE_OPERATIONS", "register"]


def _in_tx(fn: Callable[[QueueCall, Any], Any]) -> Callable[[CallContext, Any], Any]:
    def handler(ctx: CallContext, request: Any) -> Any:
        call = QueueCall(
            tx=ctx.transaction(),
            actor=ctx.actor,
            now_ms=ctx.now_ms,
            lease_ms=LEASE_DEFAULT_MS,
            lease_max_ms=LEASE_MAX_MS,
        )
        return fn(call, request)

    return handler


def _approvals(ctx: CallContext, request: ApprovalsIn) -> ApprovalsResult:
    # What a grant can run: the operations of this service (the words say when none can).
    registry = ctx.service.registry

    def read(call: QueueCall, req: ApprovalsIn) -> ApprovalsResult:
        return reads.approvals(call, req, lambda verb: registry.get(verb) is not None)

    result: ApprovalsResult = _in_tx(read)(ctx, request)
    return result


def _subject(ctx: CallContext, request: SubjectIn) -> SubjectDetail:
    # Failure excerpts read retained transfer bytes: do it in a read snapshot, not while
    # holding the writer.
    with ctx.service.storage.read() as tx:
        return reads.subject_detail(tx, ctx.actor.workspace, request)


def _op(
    name: str,
    summary: str,
    input_type: type[Any],
    output_type: type[Any],
    tier: Tier,
    handler: Callable[[CallContext, Any], Any],
    *,
    risk: RiskClass = RiskClass.READ,
    mcp: bool = False,
    tx: TxMode = TxMode.WRITE,
    description: str = "",
) -> Operation[Any, Any]:
    return Operation(
        name=name,
        summary=summary,
        input_type=input_type,
        output_type=output_type,
        min_tier=tier,
        risk=risk,
        idempotent=risk is RiskClass.READ,
        mcp=mcp,
        # Member reads are offered on the queue MCP endpoint; admin ones on HTTP and the CLI.
        surface=Surface.QUEUE if mcp else Surface.ADMIN,
        handler=handler,
        tx=tx,
        description=description,
    )


def _operations() -> tuple[Operation[Any, Any], ...]:
    A, M, ADM = Tier.AGENT, Tier.MEMBER, Tier.ADMIN  # noqa: N806 - table shorthand
    page = " Page with cursor/nextCursor; limit 1..200 (default 50)."
    return (
        _op(
            "observe.whoami",
            "Who this token is: token id, name, workspace, tier, autonomy.",
            NoInput,
            WhoAmI,
            A,
            _in_tx(reads.whoami),
            mcp=True,
        ),
        _op(
            "observe.audit",
            "The workspace's audit feed, newest first.",
            AuditIn,
            AuditResult,
            ADM,
            _in_tx(reads.audit_feed),
            description="Filter by actor (token id), operation, code (OK or an error code), "
            "taskId and time (sinceMs inclusive, untilMs exclusive)." + page,
        ),
        _op(
            "observe.backlog",
            "The queue in drain order: priority, then age.",
            BacklogIn,
            BacklogResult,
            ADM,
            _in_tx(reads.backlog),
            description="Filter by effective status, carrier verb and matterId." + page,
        ),
        _op(
            "observe.task",
            "One queue task with its phases, approval gate and audit trail.",
            TaskRef,
            TaskDetail,
            ADM,
            _in_tx(reads.task_detail),
            description="A task of another workspace is NOT_FOUND, like a missing one.",
        ),
        _op(
            "observe.approvals",
            "Approval gates (PENDING by default) with their tasks and what the grant allows.",
            ApprovalsIn,
            ApprovalsResult,
            ADM,
            _approvals,
            description="Oldest request first." + page,
        ),
        _op(
            "observe.tokens",
            "The workspace's tokens (never a secret or a hash).",
            TokensIn,
            TokensResult,
            ADM,
            _in_tx(tokens.list_tokens),
            description="Oldest first; includeRevoked shows revoked ones too." + page,
        ),
        _op(
            "observe.stats",
            "Counts for the workspace: queue by status, gates, transfers, receipts, retention.",
            NoInput,
            StatsResult,
            ADM,
            _in_tx(reads.stats),
        ),
        _op(
            "observe.repositories",
            "The workspace's registered repositories.",
            RepositoriesIn,
            RepositoriesResult,
            M,
            _in_tx(reads.repositories),
            mcp=True,
            description="By repository ID." + page,
        ),
        _op(
            "observe.changes",
            "A repository's Changes at their current subject, with task states and receipt.",
            ChangesIn,
            ChangesResult,
            M,
            _in_tx(reads.changes),
            mcp=True,
            description="Newest subject first; qualified means a receipt is recorded "
            "(workflow.qualification rechecks it against the current authority)." + page,
        ),
        _op(
            "observe.subjects",
            "Every recorded subject (version) of one Change, newest first.",
            SubjectsIn,
            SubjectsResult,
            M,
            _in_tx(reads.subjects),
            mcp=True,
            description=page.strip(),
        ),
        _op(
            "observe.subject",
            "One subject: tasks, attempts, transfers (with the failure excerpt), receipt.",
            SubjectIn,
            SubjectDetail,
            M,
            _subject,
            mcp=True,
            tx=TxMode.OWN,
            description="The failure excerpt is the end of a failed command's retained "
            "output, at most 4096 bytes.",
        ),
        _op(
            "admin.token.create",
            "Create a token in this workspace; the answer holds the secret, once.",
            TokenCreateIn,
            IssuedTokenView,
            ADM,
            _in_tx(tokens.create_token),
            risk=RiskClass.SENSITIVE,
            description="Only the SHA-256 of the secret is stored. The new token's autonomy "
            "is at most the creator's.",
        ),
        _op(
            "admin.token.revoke",
            "Revoke a token of this workspace; its next request is refused.",
            TokenRevokeIn,
            TokenView,
            ADM,
            _in_tx(tokens.revoke_token),
            risk=RiskClass.SENSITIVE,
        ),
    )


OBSERVE_OPERATIONS: tuple[str, ...] = tuple(op.name for op in _operations())
"""The names this module registers."""


def register(registry: Registry) -> None:
    """Register the operator reads and the token operations."""
    for op in _operations():
        registry.register(op)
