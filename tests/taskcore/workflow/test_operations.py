"""``workflow.<op>`` through the front door: registration, envelope, byte-exact retries."""

import json

import pytest
from taskcore.contract import CAPABILITY
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import Door, Registry, Route, Service, ServiceConfig, Surface, TxMode
from taskcore.workflow.operations import register

from tests.taskcore.workflow.support import actor, commit

EXPECTED = {
    "cancel",
    "capabilities",
    "checkpoint",
    "claim",
    "heartbeat",
    "instructions",
    "next",
    "reconcile",
    "recovery",
    "reference",
    "requirements",
    "result",
    "status",
    "task",
}


@pytest.fixture
def service(world):
    registry = Registry()
    register(registry)
    svc = Service(
        world.storage,
        config=ServiceConfig(data_dir=world.data_dir),
        clock=world.clock,
        registry=registry,
    )
    return svc


ROUTE = Route(repository="widgets", profile="default")


def _call(service, operation, request, who=None):
    body = json.dumps({"operation": operation, "request": request})
    return service.call_workflow(who or actor(), body, route=ROUTE, door=Door.HTTP)


def test_every_workflow_operation_is_registered_for_every_door(service):
    ops = service.registry.select(surfaces=(Surface.WORKFLOW,))
    assert {op.local_name for op in ops} == EXPECTED
    for op in ops:
        assert op.route_required
        assert op.mcp
        assert op.tx is TxMode.OWN


def test_operator_acts_are_not_operations(service):
    names = " ".join(op.name for op in service.registry)
    for word in ("register", "enroll", "revoke", "install", "policy"):
        assert word not in names


def test_capabilities_lists_the_operations_sorted(service):
    answer = _call(service, "capabilities", {}).json()
    assert answer["capability"] == CAPABILITY
    assert answer["schema_version"] == 1
    assert answer["operation"] == "capabilities"
    assert answer["result"]["operations"] == sorted(EXPECTED)
    assert answer["result"]["supported_schema_versions"] == [1]


def test_checkpoint_then_claim_retry_is_byte_identical_through_the_service(world, service):
    cp = _call(
        service,
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": world.head, "context": ""},
    )
    task_id = cp.json()["result"]["tasks"][0]["task_id"]
    offered = _call(service, "next", {"version": 1, "change_id": "c1"}).json()["result"]
    assert offered["task"]["task_id"] == task_id
    claim = {
        "version": 1,
        "request_id": "claim-1",
        "task_id": task_id,
        "task_digest": offered["task_digest"],
        "execution_operation_id": "op-1",
        "requested_lease_ms": 60_000,
        "executor": None,
    }
    first = _call(service, "claim", claim)
    world.clock.advance(1_000)
    assert _call(service, "claim", claim).body == first.body
    claim["requested_lease_ms"] = 30_000
    with pytest.raises(TaskError) as info:
        _call(service, "claim", claim)
    assert info.value.code is ErrorCode.IDEMPOTENCY_CONFLICT


def test_checkpoint_of_a_commit_the_repository_lacks_is_not_found(service):
    with pytest.raises(TaskError) as info:
        _call(
            service,
            "checkpoint",
            {"version": 1, "change_id": "c1", "commit": "0" * 40, "context": ""},
        )
    assert info.value.code is ErrorCode.NOT_FOUND


def test_checkpoint_refuses_a_ref_name_instead_of_a_commit(service):
    with pytest.raises(TaskError) as info:
        _call(
            service,
            "checkpoint",
            {"version": 1, "change_id": "c1", "commit": "HEAD", "context": ""},
        )
    assert info.value.code is ErrorCode.INVALID_VALUE


def test_unknown_field_is_refused_strictly(service):
    with pytest.raises(TaskError) as info:
        _call(service, "next", {"version": 1, "change_id": "c1", "path": "/etc"})
    assert info.value.code is ErrorCode.UNKNOWN_FIELD


def test_every_call_is_audited_once_reads_included(world, service):
    before = service.audit_count()
    _call(service, "requirements", {"version": 1, "change_id": None})
    _call(service, "next", {"version": 1, "change_id": "c1"})
    assert service.audit_count() == before + 2


def test_checkpoint_of_a_new_commit_supersedes_through_the_service(world, service):
    first = _call(
        service,
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": world.head, "context": ""},
    )
    again = _call(
        service,
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": world.head, "context": ""},
    )
    assert again.json()["result"]["created"] is False
    new_head = commit(world.repo, {"src/app.py": "print('two')\n"})
    second = _call(
        service, "checkpoint", {"version": 1, "change_id": "c1", "commit": new_head, "context": ""}
    )
    result = second.json()["result"]
    assert result["created"] is True
    assert result["superseded_change_version"] == 1
    assert result["subject"]["change_version"] == 2
    assert first.json()["result"]["tasks"][0]["task_id"] != result["tasks"][0]["task_id"]
