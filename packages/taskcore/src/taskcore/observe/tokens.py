"""Token operations on the front door: list (no secrets), create (secret shown once), revoke.

All three act on the caller's own workspace only: a token of another workspace is answered
as missing. A new token never has more autonomy than the admin who creates it.
"""

from __future__ import annotations

from taskcore.actors import Tier
from taskcore.auth import issue_token_in
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import OBSERVE_PAGE_DEFAULT
from taskcore.observe.requests import TokenCreateIn, TokenRevokeIn, TokensIn
from taskcore.observe.types import IssuedTokenView, TokensResult, TokenView
from taskcore.queue.common import QueueCall
from taskcore.store.tokens_api import TokenRecord

__all__ = ["create_token", "list_tokens", "revoke_token", "token_view"]


def token_view(record: TokenRecord) -> TokenView:
    """A token without its hash."""
    return TokenView(
        token_id=record.token_id,
        name=record.name,
        tier=record.tier,
        autonomy=record.autonomy,
        created_at_ms=record.created_at_ms,
        revoked_at_ms=record.revoked_at_ms,
    )


def _not_found(token_id: str) -> TaskError:
    return TaskError(
        ErrorCode.NOT_FOUND, f"no token {token_id} in this workspace", path="$.tokenId"
    )


def list_tokens(call: QueueCall, request: TokensIn) -> TokensResult:
    """A page of the workspace's tokens, oldest first (revoked ones only when asked)."""
    limit = request.limit or OBSERVE_PAGE_DEFAULT
    after = None
    if request.cursor is not None:
        after = call.tx.tokens.get(request.cursor)
        if after is None or after.workspace != call.workspace:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "cursor is not a nextCursor of this listing; start again without it",
                path="$.cursor",
            )
    rows = call.tx.tokens.page(
        call.workspace, after=after, include_revoked=request.include_revoked, limit=limit + 1
    )
    page = rows[:limit]
    return TokensResult(
        tokens=tuple(token_view(r) for r in page),
        next_cursor=page[-1].token_id if len(rows) > limit else None,
    )


def create_token(call: QueueCall, request: TokenCreateIn) -> IssuedTokenView:
    """Issue a token in the caller's workspace; the bearer secret is in this answer only."""
    tier = Tier.from_wire(request.tier)
    if tier > call.actor.tier:
        raise TaskError(ErrorCode.FORBIDDEN, "a token cannot outrank its creator", path="$.tier")
    if request.autonomy > call.actor.autonomy:
        raise TaskError(
            ErrorCode.AUTONOMY_EXCEEDED,
            f"a new token's autonomy is at most the creator's ({call.actor.autonomy})",
            path="$.autonomy",
        )
    issued = issue_token_in(
        call.tx,
        call.now_ms,
        workspace=call.workspace,
        tier=tier,
        autonomy=request.autonomy,
        name=request.name,
    )
    return IssuedTokenView(
        token=issued.token, record=token_view(issued.record), workspace=call.workspace
    )


def revoke_token(call: QueueCall, request: TokenRevokeIn) -> TokenView:
    """Revoke a token of the caller's workspace (not the caller's own); its next call fails."""
    record = call.tx.tokens.get(request.token_id)
    if record is None or record.workspace != call.workspace:
        raise _not_found(request.token_id)
    if record.token_id == call.actor.token_id:
        # A caller cutting off its own credential mid-session is almost always a mistake
        # (and locks an operator out of the board); another admin or the host can do it.
        raise TaskError(
            ErrorCode.CONFLICT,
            "a token cannot revoke itself; revoke it with another admin token or with "
            "'agent-task admin token revoke' on the service host",
            path="$.tokenId",
        )
    if record.revoked_at_ms is None:
        call.tx.tokens.revoke(record.token_id, call.now_ms)
        record = call.tx.tokens.get(record.token_id) or record
    return token_view(record)
