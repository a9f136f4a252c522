"""The operator surface's wire types: strict inputs, outputs that name their workspace."""

from __future__ import annotations

import pytest
from taskcore.codec import decode
from taskcore.errors import ErrorCode, TaskError
from taskcore.operator_types import (
    CollectorProfileView,
    RegisterRepositoryIn,
    RevokeIn,
    TokenCreateIn,
    TokenRow,
)
from taskcore.service import audit_workspace
from taskcore.store.collector_api import CollectorProfileRecord
from taskcore.store.tokens_api import TokenRecord


@pytest.mark.parametrize(
    ("raw", "code", "path"),
    [
        (b'{"workspace": "a", "repository_id": "r"}', ErrorCode.MISSING_FIELD, "$.work_tree"),
        (
            b'{"workspace": "a b", "repository_id": "r", "work_tree": "/x"}',
            ErrorCode.INVALID_VALUE,
            "$.workspace",
        ),
        (
            b'{"workspace": "a", "repository_id": "r", "work_tree": "/x\\u0000y"}',
            ErrorCode.INVALID_VALUE,
            "$.work_tree",
        ),
        (
            b'{"workspace": "a", "repository_id": "../r", "work_tree": "/x"}',
            ErrorCode.INVALID_VALUE,
            "$.repository_id",
        ),
    ],
)
def test_register_repository_input_is_strict(raw, code, path):
    with pytest.raises(TaskError) as info:
        decode(RegisterRepositoryIn, raw)
    assert info.value.code is code
    assert info.value.path == path


def test_bounds_of_revoke_and_token_inputs():
    assert decode(RevokeIn, b'{"registration_id": "r", "reason": "x"}').registration_epoch is None
    with pytest.raises(TaskError) as epoch:
        decode(RevokeIn, b'{"registration_id": "r", "reason": "x", "registration_epoch": 0}')
    assert epoch.value.path == "$.registration_epoch"
    with pytest.raises(TaskError) as tier:
        decode(TokenCreateIn, b'{"workspace": "w", "tier": "root"}')
    assert tier.value.path == "$.tier"
    with pytest.raises(TaskError) as autonomy:
        decode(TokenCreateIn, b'{"workspace": "w", "tier": "agent", "autonomy": 4}')
    assert autonomy.value.path == "$.autonomy"


def test_views_drop_the_secret_bytes_and_keep_the_profile_text():
    record = CollectorProfileRecord(
        profile_id="cp",
        digest="d" * 64,
        kind="command",
        repository_id="r",
        workflow_profile_id="p",
        step_id="s",
        registration_id="reg",
        registration_epoch=2,
        body=b'{"kind":"command"}',
        installed_at_ms=5,
    )
    view = CollectorProfileView.of(record)
    assert (view.profile, view.registration_epoch, view.superseded_at_ms) == (
        '{"kind":"command"}',
        2,
        None,
    )
    token = TokenRecord(
        token_id="t",
        name="n",
        workspace="w",
        tier="agent",
        autonomy=1,
        secret_hash="h" * 64,
        created_at_ms=1,
    )
    row = TokenRow.of(token)
    assert not hasattr(row, "secret_hash")
    assert audit_workspace(row) == "w"
