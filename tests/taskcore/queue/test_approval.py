"""Approval gates: minted by escalate, decided once by an admin, consumed once by a claim."""

from __future__ import annotations

import pytest
from taskcore import Actor, ErrorCode, Tier

from tests.taskcore.queue.support import ADMIN, MEMBER, OUTSIDER, START_MS, WORKER, WORKER2

HASH = "b" * 64


def _escalated(door, **gate):
    task_id = door.claimed(WORKER)["task"]["taskId"]
    result = door(WORKER, "agenttask.escalate", {"taskId": task_id, **gate})
    return task_id, result["gate"]["gateId"]


def test_approval_requeues_the_task_and_the_next_claim_consumes_the_grant(door, clock):
    task_id, gate_id = _escalated(door, targetVerb="repo.push", inputHash=HASH)
    clock.advance(7)
    decided = door(ADMIN, "agenttask.gate.approve", {"gateId": gate_id, "note": "ok"})
    assert decided["gate"]["status"] == "APPROVED"
    assert decided["gate"]["decidedBy"] == "admin"
    assert decided["gate"]["decidedAtMs"] == START_MS + 7
    assert decided["gate"]["note"] == "ok"
    assert decided["task"]["status"] == "QUEUED"
    assert decided["task"]["finishedAtMs"] is None
    claim = door(WORKER2, "agenttask.claimNext")
    assert claim["task"]["taskId"] == task_id
    assert claim["lease"]["grant"] == {
        "gateId": gate_id,
        "targetVerb": "repo.push",
        "inputHash": HASH,
    }
    gate = door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})
    assert (gate["status"], gate["consumedBy"]) == ("CONSUMED", "worker2")


def test_a_grant_is_consumed_exactly_once(door):
    task_id, gate_id = _escalated(door)
    door(ADMIN, "agenttask.gate.approve", {"gateId": gate_id})
    first = door(WORKER, "agenttask.claim", {"taskId": task_id})
    assert first["lease"]["grant"]["gateId"] == gate_id
    door(WORKER, "agenttask.release", {"taskId": task_id})
    second = door(WORKER2, "agenttask.claim", {"taskId": task_id})
    assert second["lease"]["grant"] is None


def test_rejection_fails_the_task_with_the_reason_and_it_can_be_requeued(door, clock):
    task_id, gate_id = _escalated(door)
    clock.advance(4)
    decided = door(ADMIN, "agenttask.gate.reject", {"gateId": gate_id, "note": "too risky"})
    assert decided["gate"]["status"] == "REJECTED"
    assert decided["task"]["status"] == "FAILED"
    assert decided["task"]["finishedAtMs"] == START_MS + 4
    assert "too risky" in decided["task"]["lastError"]
    assert gate_id in decided["task"]["lastError"]
    assert door(MEMBER, "agenttask.requeue", {"taskId": task_id})["status"] == "QUEUED"
    assert door(WORKER, "agenttask.claim", {"taskId": task_id})["lease"]["grant"] is None


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("agenttask.gate.approve", "agenttask.gate.approve"),
        ("agenttask.gate.approve", "agenttask.gate.reject"),
        ("agenttask.gate.reject", "agenttask.gate.approve"),
        ("agenttask.gate.reject", "agenttask.gate.reject"),
    ],
)
def test_a_gate_is_decided_once(door, first, second):
    task_id, gate_id = _escalated(door)
    door(ADMIN, first, {"gateId": gate_id})
    before = door.row(task_id)
    err = door.refused(ADMIN, second, {"gateId": gate_id})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION
    assert door.row(task_id) == before


def test_cancelling_an_escalated_task_voids_its_gate(door):
    task_id, gate_id = _escalated(door)
    door(MEMBER, "agenttask.cancel", {"taskId": task_id})
    assert door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})["status"] == "VOIDED"
    err = door.refused(ADMIN, "agenttask.gate.approve", {"gateId": gate_id})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION
    assert door.row(task_id).status == "CANCELLED"


def test_escalating_again_voids_an_unconsumed_grant(door):
    task_id, gate_id = _escalated(door)
    door(ADMIN, "agenttask.gate.approve", {"gateId": gate_id})
    again = door(MEMBER, "agenttask.escalate", {"taskId": task_id})  # creator, task QUEUED
    assert again["gate"]["gateId"] != gate_id
    assert door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})["status"] == "VOIDED"


def test_gates_of_another_workspace_are_not_found(door):
    _, gate_id = _escalated(door)
    for verb in ("agenttask.gate.get", "agenttask.gate.approve", "agenttask.gate.reject"):
        foreign = door.refused(OUTSIDER, verb, {"gateId": gate_id})
        missing = door.refused(OUTSIDER, verb, {"gateId": "ag_missing"})
        assert foreign.code is missing.code is ErrorCode.NOT_FOUND
        assert foreign.path == missing.path == "$.gateId"
    assert door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})["status"] == "PENDING"


def test_only_admins_decide_and_approval_needs_sensitive_autonomy(door):
    _, gate_id = _escalated(door)
    assert door.refused(MEMBER, "agenttask.gate.approve", {"gateId": gate_id}).code is (
        ErrorCode.FORBIDDEN
    )
    timid_admin = Actor(token_id="timid", workspace="w", tier=Tier.ADMIN, autonomy=1)
    assert door.refused(timid_admin, "agenttask.gate.approve", {"gateId": gate_id}).code is (
        ErrorCode.AUTONOMY_EXCEEDED
    )
    assert door(timid_admin, "agenttask.gate.reject", {"gateId": gate_id})["gate"]["status"] == (
        "REJECTED"
    )
