"""Claiming a collector step and reading its descriptor (evidence.claim)."""

from __future__ import annotations

import json

import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import Route, Service

from tests.taskcore.collector.conftest import head
from tests.taskcore.evidence.flow import refused


def test_only_the_agent_holding_the_attempt_may_read_its_descriptor(flow):
    flow.checkpoint()
    claimed, _ = flow.claim_next()
    other = issue_token(flow.service.storage, flow.clock, workspace="w1", tier=Tier.AGENT).token
    request = {
        "version": 1,
        "task_id": claimed["task_id"],
        "task_digest": claimed["task_digest"],
        "attempt_id": claimed["attempt"]["attempt_id"],
    }
    assert refused(flow.call, "collector_descriptor", request, other) is ErrorCode.FORBIDDEN


def test_an_ordinary_claim_cannot_take_a_collector_step(flow):
    flow.checkpoint()
    task = flow.qualification()["tasks"][0]
    request = {
        "version": 1,
        "request_id": "plain",
        "task_id": task["task_id"],
        "task_digest": task["task_digest"],
        "execution_operation_id": "op",
        "requested_lease_ms": 60_000,
        "executor": None,
    }
    assert refused(flow.call, "claim", request) is ErrorCode.ILLEGAL_TRANSITION


def test_without_a_collector_profile_nothing_can_be_claimed(authority, state, tmp_path):
    service = Service.open(tmp_path / "data", clock=authority.clock)
    token = issue_token(service.storage, authority.clock, workspace="w1", tier=Tier.AGENT).token
    route = Route(repository="acme", profile="default")

    def call(op, req):
        body = json.dumps({"operation": op, "request": req}).encode()
        return service.call_workflow(token, body, route=route).json()["result"]

    call(
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": head(authority.repo), "context": ""},
    )
    answer = call("qualification", {"version": 1, "change_id": "c1"})
    task = answer["tasks"][0]
    assert answer["next"] == {"operation": "none"}
    assert answer["failures"] == [{"task_id": task["task_id"], "code": "collector_profile_missing"}]
    with pytest.raises(TaskError) as err:
        call(
            "collector_claim",
            {
                "version": 1,
                "request_id": "r",
                "task_id": task["task_id"],
                "task_digest": task["task_digest"],
                "execution_operation_id": "op",
                "requested_lease_ms": 60_000,
            },
        )
    assert err.value.code is ErrorCode.NOT_FOUND
    service.close()
