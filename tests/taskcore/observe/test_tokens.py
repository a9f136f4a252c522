"""Token operations: the secret once, only its hash kept, workspace-bound, revocation bites."""

from __future__ import annotations

import hashlib

import pytest
from taskcore import ErrorCode, TaskError
from taskcore.actors import Tier
from taskcore.auth import issue_token

from tests.taskcore.queue.support import ADMIN, MEMBER, OUTSIDER


def test_create_shows_the_secret_once_and_stores_only_its_hash(door, service):
    issued = door(ADMIN, "admin.token.create", {"tier": "agent", "name": "ci"})
    token = issued["token"]
    assert token.startswith("atk_")
    assert issued["workspace"] == "w"
    assert issued["record"]["tier"] == "agent"
    listed = door(ADMIN, "observe.tokens")["tokens"]
    assert [t["name"] for t in listed] == ["ci"]
    assert token not in str(listed)
    assert "secretHash" not in listed[0]
    with service.storage.read() as tx:
        record = tx.tokens.get(issued["record"]["tokenId"])
    assert record.secret_hash == hashlib.sha256(token.split("_")[2].encode()).hexdigest()
    assert service.call(token, "observe.whoami", {}).json()["tier"] == "agent"


def test_a_new_token_never_outranks_or_outruns_its_creator(door):
    assert door.refused(MEMBER, "admin.token.create", {"tier": "agent"}).code is ErrorCode.FORBIDDEN
    from taskcore import Actor

    low_admin = Actor(token_id="la", workspace="w", tier=Tier.ADMIN, autonomy=2)
    err = door.refused(low_admin, "admin.token.create", {"tier": "agent", "autonomy": 3})
    assert err.code is ErrorCode.AUTONOMY_EXCEEDED


def test_revoke_ends_the_tokens_next_call_and_stays_in_its_workspace(door, service, clock):
    token = issue_token(service.storage, clock, workspace="w", tier=Tier.MEMBER).token
    token_id = token.split("_")[1]
    err = door.refused(OUTSIDER, "admin.token.revoke", {"tokenId": token_id})
    assert err.code is ErrorCode.NOT_FOUND
    revoked = door(ADMIN, "admin.token.revoke", {"tokenId": token_id})
    assert revoked["revokedAtMs"] == clock.now_ms()
    with pytest.raises(TaskError) as info:
        service.call(token, "observe.whoami", {})
    assert info.value.code is ErrorCode.TOKEN_REVOKED
    assert door(ADMIN, "observe.tokens")["tokens"] == []
    shown = door(ADMIN, "observe.tokens", {"includeRevoked": True})["tokens"]
    assert [t["tokenId"] for t in shown] == [token_id]


def test_tokens_page_in_creation_order(door, service, clock):
    ids = []
    for _ in range(5):
        clock.advance(1)
        ids.append(issue_token(service.storage, clock, workspace="w", tier=Tier.AGENT).token[4:20])
    first = door(ADMIN, "observe.tokens", {"limit": 3})
    rest = door(ADMIN, "observe.tokens", {"cursor": first["nextCursor"]})
    assert [t["tokenId"] for t in first["tokens"] + rest["tokens"]] == ids
    assert rest["nextCursor"] is None


def test_a_token_cannot_revoke_itself(door, service, clock):
    issued = issue_token(service.storage, clock, workspace="w", tier=Tier.ADMIN, autonomy=3)
    with pytest.raises(TaskError) as info:
        service.call(issued.token, "admin.token.revoke", {"tokenId": issued.record.token_id})
    assert info.value.code is ErrorCode.CONFLICT
    assert service.call(issued.token, "observe.whoami", {}).json()["tier"] == "admin"
