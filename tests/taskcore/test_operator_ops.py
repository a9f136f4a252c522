"""The operator surface: operator and admin acts are operations, audited once, refusals too."""

from __future__ import annotations

import pytest
from taskcore.actors import Actor, Tier
from taskcore.authority.operator import collector_test_requirement
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.events.operations import WEBHOOK_OPERATOR_OPERATIONS
from taskcore.operator_ops import OPERATOR_OPERATIONS, AuthorityAdmin, OperatorDesk
from taskcore.service import Door, Surface, default_registry
from taskcore.signing import public_key_hex

from tests.taskcore.workflow.support import SEED, init_repo


@pytest.fixture
def admin(tmp_path):
    with AuthorityAdmin(tmp_path / "data", create=True, clock=FakeClock()) as a:
        yield a


def _events(desk, workspace):
    desk.service.flush_refusals()
    with desk.service.storage.read() as tx:
        return [
            (e.actor, e.operation, e.outcome)
            for e in reversed(tx.audit.recent(workspace=workspace, limit=50))
        ]


def _all_events(desk):
    with desk.service.storage.read() as tx:
        return tx.audit.count()


def test_every_operator_act_is_audited_once_under_the_workspace_it_names(admin, tmp_path):
    repo = init_repo(tmp_path / "repo")
    admin.register_repository(workspace="acme", repository_id="widgets", work_tree=repo)
    installed = admin.install_requirement(
        repository_id="widgets", requirement=collector_test_requirement("tests", "ok")
    )
    admin.register_profile(
        repository_id="widgets",
        profile_id="default",
        target="main",
        requirement_digest=installed.requirement_digest,
    )
    admin.enroll(
        registration_id="reg",
        executor_id="ex",
        repository_id="widgets",
        step_id="tests",
        public_key=public_key_hex(SEED),
    )
    admin.revoke(registration_id="reg", reason="rotated")
    admin.overview("widgets", ("reg",))
    assert _events(admin, "acme") == [
        ("operator", "operator.register_repository", "OK"),
        ("operator", "operator.install_requirement", "OK"),
        ("operator", "operator.register_profile", "OK"),
        ("operator", "operator.enroll", "OK"),
        ("operator", "operator.revoke", "OK"),
        ("operator", "operator.show", "OK"),
    ]
    assert _all_events(admin) == 6


def test_a_refused_operator_act_is_audited_and_writes_nothing(admin, tmp_path):
    repo = init_repo(tmp_path / "repo")
    with pytest.raises(TaskError) as relative:
        admin.register_repository(workspace="acme", repository_id="widgets", work_tree="rel/x")
    assert relative.value.code is ErrorCode.INVALID_PATH
    with pytest.raises(TaskError) as unknown:
        admin.revoke(registration_id="nobody", reason="x")
    assert unknown.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(TaskError) as strict:
        admin.call(
            "operator.register_repository",
            {"workspace": "acme", "repository_id": "w", "work_tree": str(repo), "extra": 1},
        )
    assert strict.value.code is ErrorCode.UNKNOWN_FIELD
    # Refusals carry no workspace (the act never reached one): audited with an empty one.
    assert _events(admin, "") == [
        ("operator", "operator.register_repository", "INVALID_PATH"),
        ("operator", "operator.revoke", "NOT_FOUND"),
        ("operator", "operator.register_repository", "UNKNOWN_FIELD"),
    ]
    with admin.service.storage.read() as tx:
        assert tx.authority.get_repository("widgets") is None


def test_a_failing_act_rolls_back_with_its_audit_event(admin, tmp_path, monkeypatch):
    # The act and its audit event are one transaction: a failure after the act's rows were
    # written leaves neither (only the refusal, audited after the rollback).
    repo = init_repo(tmp_path / "repo")
    real = admin.service.audit.record

    def failing(tx, actor, workspace, name, digest, outcome, subject=None):
        if outcome == "OK":
            assert tx.authority.get_repository("widgets") is not None
            raise OSError("the disk went away")
        real(tx, actor, workspace, name, digest, outcome, subject)

    monkeypatch.setattr(admin.service.audit, "record", failing)
    with pytest.raises(TaskError) as info:
        admin.register_repository(workspace="acme", repository_id="widgets", work_tree=repo)
    assert info.value.code is ErrorCode.INTERNAL
    monkeypatch.undo()
    with admin.service.storage.read() as tx:
        assert tx.authority.get_repository("widgets") is None
    assert _events(admin, "acme") == []
    assert _events(admin, "") == [("operator", "operator.register_repository", "INTERNAL")]


def test_token_acts_are_operations_too(tmp_path):
    with OperatorDesk(tmp_path / "data", create=True) as desk:
        issued = desk.call(
            "operator.token_create", {"workspace": "acme", "tier": "agent", "autonomy": 1}
        )
        assert issued.token.startswith("atk_")
        listed = desk.call("operator.token_list", {"workspace": "acme"})
        assert [t.token_id for t in listed.tokens] == [issued.token_id]
        assert desk.call("operator.token_revoke", {"token_id": issued.token_id}).was_live
        with pytest.raises(TaskError) as info:
            desk.call("operator.token_revoke", {"token_id": "0" * 16})
        assert info.value.code is ErrorCode.NOT_FOUND
        assert _events(desk, "acme") == [
            ("operator", "operator.token_create", "OK"),
            ("operator", "operator.token_revoke", "OK"),
        ]
        assert ("operator", "operator.token_revoke", "NOT_FOUND") in _events(desk, "")


def test_no_network_door_reaches_the_operator_surface(tmp_path):
    registry = default_registry()
    names = registry.names(Surface.OPERATOR)
    # The operator's acts: operator_ops', and the webhook acts (taskcore.events.operations).
    assert set(names) == set(OPERATOR_OPERATIONS) | set(WEBHOOK_OPERATOR_OPERATIONS)
    for name in names:
        op = registry.get(name)
        assert op.doors == {Door.CLI, Door.IN_PROCESS}
        assert op.min_tier is Tier.ADMIN
        assert not op.mcp_tool
    with OperatorDesk(tmp_path / "data", create=True) as desk:
        service = desk.service
        admin_token = Actor(token_id="t", workspace="acme", tier=Tier.ADMIN, autonomy=3)
        for door in (Door.HTTP, Door.MCP, Door.BOARD):
            with pytest.raises(TaskError) as info:
                service.dispatch(admin_token, "operator.token_list", b"{}", door=door)
            assert info.value.code is ErrorCode.NOT_FOUND
        member = Actor(token_id="m", workspace="acme", tier=Tier.MEMBER, autonomy=3)
        with pytest.raises(TaskError) as info:
            service.dispatch(member, "operator.token_list", b"{}", door=Door.CLI)
        assert info.value.code is ErrorCode.FORBIDDEN
