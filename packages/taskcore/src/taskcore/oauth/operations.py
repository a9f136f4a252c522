"""Consent and grants as registry operations: the board, ``POST /v/oauth.*`` and the CLI.

=========================  =======  ===========  ================================================
operation                  tier     risk         what
=========================  =======  ===========  ================================================
``oauth.request.show``     agent    read         a pending request, with the most you may grant
``oauth.request.approve``  agent    write        grant it (your workspace, at most your tier and
                                                 autonomy, at most its scope); answers the
                                                 redirect that carries the code
``oauth.request.deny``     agent    write        refuse it; answers the redirect with the error
``oauth.grants``           admin    read         the workspace's grants
``oauth.grant.revoke``     admin    sensitive    revoke a grant and every token of it
``operator.oauth_*``       (local)               the same for the host's operator:
                                                 ``pending``, ``approve``, ``deny``, ``list``,
                                                 ``revoke`` (``agent-task admin oauth ...``)
=========================  =======  ===========  ================================================

Each is checked, run in the call's transaction and audited once, like every operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskcore.actors import RiskClass, Tier
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import OAUTH_PENDING_REQUESTS_MAX
from taskcore.oauth.server import decide_in
from taskcore.oauth.types import (
    ApproveIn,
    Decision,
    GrantList,
    GrantRef,
    GrantsIn,
    GrantView,
    OperatorApproveIn,
    OperatorDecided,
    OperatorGrantRef,
    OperatorListIn,
    OperatorRequestRef,
    OperatorRevoked,
    PendingList,
    PendingRow,
    RequestRef,
    RequestView,
)
from taskcore.operator_types import NoIn
from taskcore.scopes import cap, split_scope
from taskcore.service import CallContext, Door, Operation, Registry, Surface

__all__ = ["OAUTH_OPERATIONS", "OPERATOR_OAUTH_OPERATIONS", "register", "register_operator"]


def _show(ctx: CallContext, req: RequestRef) -> RequestView:
    record = ctx.transaction().oauth.get_request(req.request_id)
    if record is None:
        raise TaskError(
            ErrorCode.NOT_FOUND, f"no authorization request {req.request_id}", path="$.requestId"
        )
    allowed = cap(split_scope(record.scope)) or (Tier.AGENT, 0)
    status = record.status
    if status == "pending" and record.expires_at_ms <= ctx.now_ms:
        status = "expired"
    return RequestView(
        request_id=record.request_id,
        client_id=record.client_id,
        client_name=record.client_name,
        redirect_uri=record.redirect_uri,
        scope=record.scope,
        resource=record.resource,
        status=status,
        created_at_ms=record.created_at_ms,
        expires_at_ms=record.expires_at_ms,
        workspace=ctx.actor.workspace,
        max_tier=min(ctx.actor.tier, allowed[0]).wire,
        max_autonomy=min(ctx.actor.autonomy, allowed[1]),
    )


def _decision(ctx: CallContext, request_id: str, approve: bool, **how: Any) -> Decision:
    record, grant, target = decide_in(
        ctx.transaction(), ctx.now_ms, request_id, decider=ctx.actor, approve=approve, **how
    )
    return Decision(
        request_id=record.request_id,
        status=record.status,
        grant_id=grant.grant_id if grant is not None else None,
        workspace=grant.workspace if grant is not None else ctx.actor.workspace,
        redirect_to=target,
    )


def _approve(ctx: CallContext, req: ApproveIn) -> Decision:
    return _decision(
        ctx,
        req.request_id,
        True,
        workspace=req.workspace,
        tier=Tier.from_wire(req.tier),
        autonomy=req.autonomy,
    )


def _deny(ctx: CallContext, req: RequestRef) -> Decision:
    return _decision(ctx, req.request_id, False)


def _grants(ctx: CallContext, req: GrantsIn) -> GrantList:
    rows = ctx.transaction().oauth.list_grants(
        workspace=ctx.actor.workspace, include_revoked=req.include_revoked
    )
    return GrantList(grants=tuple(GrantView.of(r) for r in rows))


def _revoke_grant(ctx: CallContext, req: GrantRef) -> GrantView:
    tx = ctx.transaction()
    grant = tx.oauth.get_grant(req.grant_id)
    if grant is None or grant.workspace != ctx.actor.workspace:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"no OAuth grant {req.grant_id} in this workspace",
            path="$.grantId",
        )
    tx.oauth.revoke_grant(grant.grant_id, ctx.now_ms, f"revoked by {ctx.actor.token_id}")
    return GrantView.of(tx.oauth.get_grant(grant.grant_id) or grant)


# -- the local operator --------------------------------------------------------------------------


def _op_pending(ctx: CallContext, _: Any) -> PendingList:
    rows = ctx.transaction().oauth.pending_requests(ctx.now_ms, OAUTH_PENDING_REQUESTS_MAX)
    return PendingList(requests=tuple(PendingRow.of(r) for r in rows))


def _op_decided(decision: Decision) -> OperatorDecided:
    return OperatorDecided(
        request_id=decision.request_id,
        status=decision.status,
        grant_id=decision.grant_id,
        workspace=decision.workspace,
        redirect_to=decision.redirect_to,
    )


def _op_approve(ctx: CallContext, req: OperatorApproveIn) -> OperatorDecided:
    return _op_decided(
        _decision(
            ctx,
            req.request_id,
            True,
            workspace=req.workspace,
            tier=Tier.from_wire(req.tier),
            autonomy=req.autonomy,
        )
    )


def _op_deny(ctx: CallContext, req: OperatorRequestRef) -> OperatorDecided:
    return _op_decided(_decision(ctx, req.request_id, False))


def _op_list(ctx: CallContext, req: OperatorListIn) -> GrantList:
    rows = ctx.transaction().oauth.list_grants(
        workspace=req.workspace, include_revoked=req.include_revoked
    )
    return GrantList(grants=tuple(GrantView.of(r) for r in rows))


def _op_revoke(ctx: CallContext, req: OperatorGrantRef) -> OperatorRevoked:
    tx = ctx.transaction()
    grant = tx.oauth.get_grant(req.grant_id)
    if grant is None:
        raise TaskError(ErrorCode.NOT_FOUND, f"no OAuth grant {req.grant_id}", path="$.grant_id")
    live = tx.oauth.revoke_grant(grant.grant_id, ctx.now_ms, "revoked by the operator")
    return OperatorRevoked(workspace=grant.workspace, grant_id=grant.grant_id, was_live=live)


_R, _W, _S = RiskClass.READ, RiskClass.WRITE, RiskClass.SENSITIVE
_A, _ADM = Tier.AGENT, Tier.ADMIN

_Spec = tuple[str, str, type[Any], type[Any], Tier, RiskClass, Callable[..., Any]]

_BOARD: tuple[_Spec, ...] = (
    (
        "oauth.request.show",
        "A pending OAuth authorization request: client, redirect URI, scope, what you may grant.",
        RequestRef,
        RequestView,
        _A,
        _R,
        _show,
    ),
    (
        "oauth.request.approve",
        "Approve an OAuth authorization request: the client acts in your workspace.",
        ApproveIn,
        Decision,
        _A,
        _W,
        _approve,
    ),
    (
        "oauth.request.deny",
        "Deny an OAuth authorization request.",
        RequestRef,
        Decision,
        _A,
        _W,
        _deny,
    ),
    ("oauth.grants", "The workspace's OAuth grants.", GrantsIn, GrantList, _ADM, _R, _grants),
    (
        "oauth.grant.revoke",
        "Revoke an OAuth grant of this workspace and every token issued from it.",
        GrantRef,
        GrantView,
        _ADM,
        _S,
        _revoke_grant,
    ),
)

_OPERATOR: tuple[_Spec, ...] = (
    (
        "operator.oauth_pending",
        "OAuth authorization requests waiting for consent.",
        type(None),
        PendingList,
        _ADM,
        _R,
        _op_pending,
    ),
    (
        "operator.oauth_approve",
        "Approve an OAuth authorization request; the answer's redirect_to completes the client's "
        "flow (open it where the client waits).",
        OperatorApproveIn,
        OperatorDecided,
        _ADM,
        _S,
        _op_approve,
    ),
    (
        "operator.oauth_deny",
        "Deny an OAuth authorization request.",
        OperatorRequestRef,
        OperatorDecided,
        _ADM,
        _W,
        _op_deny,
    ),
    ("operator.oauth_list", "List OAuth grants.", OperatorListIn, GrantList, _ADM, _R, _op_list),
    (
        "operator.oauth_revoke",
        "Revoke an OAuth grant and every token issued from it.",
        OperatorGrantRef,
        OperatorRevoked,
        _ADM,
        _S,
        _op_revoke,
    ),
)

OAUTH_OPERATIONS: tuple[str, ...] = tuple(spec[0] for spec in _BOARD)
"""The consent and grant operations the network doors and the board offer."""
OPERATOR_OAUTH_OPERATIONS: tuple[str, ...] = tuple(spec[0] for spec in _OPERATOR)
"""The local operator's OAuth acts (``agent-task admin oauth ...``)."""


def register_operator(registry: Registry) -> None:
    """Register the ``operator.oauth_*`` acts (local doors only)."""
    for name, summary, input_type, output_type, tier, risk, handler in _OPERATOR:
        registry.register(
            Operation(
                name=name,
                summary=summary,
                input_type=NoIn if input_type is type(None) else input_type,
                output_type=output_type,
                min_tier=tier,
                risk=risk,
                idempotent=risk is RiskClass.READ,
                mcp=False,
                surface=Surface.OPERATOR,
                handler=handler,
                doors=frozenset({Door.CLI, Door.IN_PROCESS}),
                description="An operator act on the service host: 'agent-task admin oauth' "
                "and in process only, never over the network.",
            )
        )


def register(registry: Registry) -> None:
    """Register the consent and grant operations and the operator's OAuth acts."""
    for name, summary, input_type, output_type, tier, risk, handler in _BOARD:
        registry.register(
            Operation(
                name=name,
                summary=summary,
                input_type=input_type,
                output_type=output_type,
                min_tier=tier,
                risk=risk,
                idempotent=risk is RiskClass.READ,
                mcp=False,
                surface=Surface.ADMIN,
                handler=handler,
                description="OAuth consent and grants (docs/adapters.md, 'OAuth').",
            )
        )
    register_operator(registry)
