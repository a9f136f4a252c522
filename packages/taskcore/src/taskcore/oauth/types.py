"""Inputs and answers of the OAuth consent and grant operations (:mod:`.operations`).

The board's and HTTP's (``oauth.*``) keys are camelCase like the queue's; the local
operator's (``operator.oauth_*``) are snake_case like the other ``operator.*`` acts.

>>> from taskcore.codec import decode
>>> decode(ApproveIn, b'{"requestId": "oar_' + b"0" * 32 + b'", "autonomy": 1}').autonomy
1
"""

from __future__ import annotations

from typing import Literal

import attrs

from taskcore.actors import MAX_AUTONOMY
from taskcore.codec import wire_field
from taskcore.store.oauth_api import OAuthGrantRecord, OAuthRequestRecord

__all__ = [
    "ApproveIn",
    "Decision",
    "GrantList",
    "GrantRef",
    "GrantView",
    "GrantsIn",
    "OperatorApproveIn",
    "OperatorDecided",
    "OperatorGrantRef",
    "OperatorListIn",
    "OperatorRequestRef",
    "OperatorRevoked",
    "PendingList",
    "PendingRow",
    "RequestRef",
    "RequestView",
]

REQUEST_ID_PATTERN = r"oar_[0-9a-f]{32}"
GRANT_ID_PATTERN = r"oag_[0-9a-f]{16}"
_WORKSPACE = r"[A-Za-z0-9._-]{1,128}"
Tier = Literal["agent", "member", "admin"]


@attrs.frozen(kw_only=True)
class RequestRef:
    """``oauth.request.show`` / ``oauth.request.deny``: one pending authorization request."""

    request_id: str = wire_field(wire="requestId", pattern=REQUEST_ID_PATTERN)


@attrs.frozen(kw_only=True)
class ApproveIn:
    """``oauth.request.approve``: grant the client a tier and autonomy in a workspace.

    Never above the approver's own; ``workspace`` defaults to (and must be) the approver's.
    """

    request_id: str = wire_field(wire="requestId", pattern=REQUEST_ID_PATTERN)
    workspace: str | None = wire_field(default=None, pattern=_WORKSPACE)
    tier: Tier = wire_field(default="agent", doc="the tier granted")
    autonomy: int = wire_field(default=1, lo=0, hi=MAX_AUTONOMY, doc="the autonomy granted")


@attrs.frozen(kw_only=True)
class RequestView:
    """A pending request as the consent page shows it, with the most the viewer may grant."""

    request_id: str = wire_field(wire="requestId")
    client_id: str = wire_field(wire="clientId")
    client_name: str = wire_field(wire="clientName")
    redirect_uri: str = wire_field(wire="redirectUri")
    scope: str = wire_field()
    resource: str = wire_field()
    status: str = wire_field()
    created_at_ms: int = wire_field(wire="createdAtMs")
    expires_at_ms: int = wire_field(wire="expiresAtMs")
    workspace: str = wire_field(doc="the workspace a grant would be in")
    max_tier: str = wire_field(wire="maxTier")
    max_autonomy: int = wire_field(wire="maxAutonomy")


@attrs.frozen(kw_only=True)
class Decision:
    """An approved or denied request and the URL to send the person to (``redirectTo``)."""

    request_id: str = wire_field(wire="requestId")
    status: str = wire_field()
    grant_id: str | None = wire_field(wire="grantId")
    workspace: str = wire_field()
    redirect_to: str = wire_field(wire="redirectTo")


@attrs.frozen(kw_only=True)
class GrantsIn:
    """``oauth.grants``: the workspace's grants, oldest first."""

    include_revoked: bool = wire_field(default=False, wire="includeRevoked")


@attrs.frozen(kw_only=True)
class GrantRef:
    """``oauth.grant.revoke``: one grant of the workspace."""

    grant_id: str = wire_field(wire="grantId", pattern=GRANT_ID_PATTERN)


@attrs.frozen(kw_only=True)
class GrantView:
    """One grant: which client acts in which workspace, at what tier and autonomy."""

    grant_id: str = wire_field(wire="grantId")
    client_id: str = wire_field(wire="clientId")
    client_name: str = wire_field(wire="clientName")
    workspace: str = wire_field()
    tier: str = wire_field()
    autonomy: int = wire_field()
    scope: str = wire_field()
    resource: str = wire_field()
    granted_by: str = wire_field(wire="grantedBy")
    created_at_ms: int = wire_field(wire="createdAtMs")
    revoked_at_ms: int | None = wire_field(wire="revokedAtMs")

    @classmethod
    def of(cls, record: OAuthGrantRecord) -> GrantView:
        """The view of a stored grant."""
        return cls(
            grant_id=record.grant_id,
            client_id=record.client_id,
            client_name=record.client_name,
            workspace=record.workspace,
            tier=record.tier,
            autonomy=record.autonomy,
            scope=record.scope,
            resource=record.resource,
            granted_by=record.granted_by,
            created_at_ms=record.created_at_ms,
            revoked_at_ms=record.revoked_at_ms,
        )


@attrs.frozen(kw_only=True)
class GrantList:
    """Grants, oldest first."""

    grants: tuple[GrantView, ...] = wire_field()


# -- the local operator's acts (snake_case, like operator.token_*) ----------------------------


@attrs.frozen(kw_only=True)
class OperatorRequestRef:
    """``operator.oauth_deny``: one pending request."""

    request_id: str = wire_field(pattern=REQUEST_ID_PATTERN, doc="from 'admin oauth pending'")


@attrs.frozen(kw_only=True)
class OperatorApproveIn:
    """``operator.oauth_approve``: grant the client a workspace, tier and autonomy."""

    request_id: str = wire_field(pattern=REQUEST_ID_PATTERN, doc="from 'admin oauth pending'")
    workspace: str = wire_field(pattern=_WORKSPACE, doc="workspace the client acts in")
    tier: Tier = wire_field(default="agent", doc="permission tier granted")
    autonomy: int = wire_field(
        default=1, lo=0, hi=MAX_AUTONOMY, doc="autonomy granted (0 read only .. 3 destructive)"
    )


@attrs.frozen(kw_only=True)
class OperatorListIn:
    """``operator.oauth_list``: grants (of one workspace)."""

    workspace: str | None = wire_field(default=None, pattern=_WORKSPACE, doc="only this one's")
    include_revoked: bool = wire_field(default=False, doc="revoked grants too")


@attrs.frozen(kw_only=True)
class OperatorGrantRef:
    """``operator.oauth_revoke``: one grant."""

    grant_id: str = wire_field(pattern=GRANT_ID_PATTERN, doc="from 'admin oauth list'")


@attrs.frozen(kw_only=True)
class PendingRow:
    """One request waiting for consent."""

    request_id: str
    client_id: str
    client_name: str
    redirect_uri: str
    scope: str
    resource: str
    created_at_ms: int
    expires_at_ms: int

    @classmethod
    def of(cls, record: OAuthRequestRecord) -> PendingRow:
        """The row of a stored request."""
        return cls(
            request_id=record.request_id,
            client_id=record.client_id,
            client_name=record.client_name,
            redirect_uri=record.redirect_uri,
            scope=record.scope,
            resource=record.resource,
            created_at_ms=record.created_at_ms,
            expires_at_ms=record.expires_at_ms,
        )


@attrs.frozen(kw_only=True)
class PendingList:
    """Requests waiting for consent, oldest first."""

    requests: tuple[PendingRow, ...]


@attrs.frozen(kw_only=True)
class OperatorDecided:
    """A decided request; ``redirect_to`` is the URL that completes the client's flow."""

    request_id: str
    status: str
    grant_id: str | None
    workspace: str
    redirect_to: str


@attrs.frozen(kw_only=True)
class OperatorRevoked:
    """A revoked grant; ``was_live`` is false when it was already revoked."""

    workspace: str
    grant_id: str
    was_live: bool
