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


def test_approval_requeues_the_task_and_claims_show_the_open_grant(door, clock):
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
    # claiming consumes nothing: only agenttask.gate.apply does
    gate = door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})
    assert (gate["status"], gate["consumedBy"]) == ("APPROVED", None)


def test_rejection_fails_the_task_with_the_reason_and_it_can_be_requeued(door, clock):
    task_id, gate_id = _escalated(door)
    clock.advance(4)
    decided = door(ADMIN, "agenttask.gate.reject", {"gateId": gate_id, "note": "too risky"})
    assert decided["gate"]["status"] == "REJECTED"
    assert decided["task"]["status"] == "FAILED"
    assert decided["task"]["finishedAtMs"] == START_MS + 4
    assert "too risky" in decided["task"]["lastError"]
    assert gate_id in decided["task"]["lastError"]
    # the creator sees the decision and its reason through get and feed
    got = door(MEMBER, "agenttask.get", {"taskId": task_id})
    assert got["lastError"] == f"approval gate {gate_id} was rejected: too risky"
    entry = door(MEMBER, "agenttask.feed", {"taskId": task_id})["entries"][0]
    assert entry["status"] == "FAILED"
    assert entry["gate"]["status"] == "REJECTED"
    assert entry["gate"]["note"] == "too risky"
    assert entry["gate"]["decidedBy"] == "admin"
    assert door(MEMBER, "agenttask.requeue", {"taskId": task_id})["status"] == "QUEUED"
    assert door(WORKER, "agenttask.claim", {"taskId": task_id})["lease"]["grant"] is None


@pytest.mark.parametrize("body", [{}, {"note": ""}, {"note": None}])
def test_a_rejection_must_say_why(door, body):
    task_id, gate_id = _escalated(door)
    err = door.refused(ADMIN, "agenttask.gate.reject", {"gateId": gate_id, **body})
    assert err.code in (ErrorCode.MISSING_FIELD, ErrorCode.OUT_OF_BOUNDS, ErrorCode.WRONG_TYPE)
    assert err.path == "$.note"
    assert door.row(task_id).status == "ESCALATED"


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
    door(ADMIN, first, {"gateId": gate_id, "note": "first"})
    before = door.row(task_id)
    err = door.refused(ADMIN, second, {"gateId": gate_id, "note": "second"})
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
        extra = {"note": "no"} if verb.endswith("reject") else {}
        foreign = door.refused(OUTSIDER, verb, {"gateId": gate_id, **extra})
        missing = door.refused(OUTSIDER, verb, {"gateId": "ag_missing", **extra})
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
    rejected = door(timid_admin, "agenttask.gate.reject", {"gateId": gate_id, "note": "no"})
    assert rejected["gate"]["status"] == "REJECTED"


# -- agenttask.gate.apply: the call a grant admits ----------------------------------------------

# A member seat with autonomy 1: it may work tasks (write) but not cancel one (sensitive, 2).
SEAT = Actor(token_id="seat", workspace="w", tier=Tier.MEMBER, autonomy=1)
SEAT2 = Actor(token_id="seat2", workspace="w", tier=Tier.MEMBER, autonomy=1)


def _granted(door, *, approve=True, target=None, **escalate):
    """SEAT works task T and escalates to cancel task V; an admin decides; SEAT claims T again.

    Returns (task id, victim id, gate id, fence of SEAT's current lease or None).
    """
    victim = door.create()["taskId"]
    task_id = door.claimed(SEAT)["task"]["taskId"]
    cancel = {"taskId": victim} if target is None else target
    gate = door(
        SEAT,
        "agenttask.escalate",
        {"taskId": task_id, "targetVerb": "agenttask.cancel", "targetInput": cancel, **escalate},
    )["gate"]
    if approve is None:
        return task_id, victim, gate["gateId"], None
    verb = "agenttask.gate.approve" if approve else "agenttask.gate.reject"
    door(ADMIN, verb, {"gateId": gate["gateId"], "note": "decided"})
    if not approve:
        door(MEMBER, "agenttask.requeue", {"taskId": task_id})
    fence = door(SEAT, "agenttask.claim", {"taskId": task_id})["lease"]["fence"]
    return task_id, victim, gate["gateId"], fence


def _apply(task_id, gate_id, victim, fence=None, verb="agenttask.cancel"):
    body = {"taskId": task_id, "gateId": gate_id, "verb": verb, "input": {"taskId": victim}}
    return body if fence is None else {**body, "fence": fence}


def test_input_hash_is_the_sha256_of_the_sorted_compact_json():
    import hashlib

    from taskcore.queue.approval import input_hash

    assert input_hash({"taskId": "at_1"}) == hashlib.sha256(b'{"taskId":"at_1"}').hexdigest()
    assert input_hash({"b": [1, 2], "a": None}) == input_hash({"a": None, "b": [1, 2]})
    assert input_hash({"taskId": "at_1"}) != input_hash({"taskId": "at_2"})


def test_a_grant_admits_the_over_autonomy_call_once_in_the_same_transaction(door, service):
    victim = door.create()["taskId"]
    task_id = door.claimed(SEAT)["task"]["taskId"]
    # without a grant the seat may not cancel (sensitive needs autonomy 2)
    assert door.refused(SEAT, "agenttask.cancel", {"taskId": victim}).code is (
        ErrorCode.AUTONOMY_EXCEEDED
    )
    escalated = door(
        SEAT,
        "agenttask.escalate",
        {
            "taskId": task_id,
            "targetVerb": "agenttask.cancel",
            "targetInput": {"taskId": victim},
            "reason": "the duplicate must go",
        },
    )
    gate_id = escalated["gate"]["gateId"]
    from taskcore.queue.approval import input_hash

    assert escalated["gate"]["inputHash"] == input_hash({"taskId": victim})
    door(ADMIN, "agenttask.gate.approve", {"gateId": gate_id})
    claim = door(SEAT, "agenttask.claim", {"taskId": task_id})
    assert claim["lease"]["grant"]["gateId"] == gate_id
    audit_before = service.audit_count()
    applied = door(SEAT, "agenttask.gate.apply", _apply(task_id, gate_id, victim, 2))
    assert applied["verb"] == "agenttask.cancel"
    assert applied["result"]["taskId"] == victim
    assert applied["result"]["status"] == "CANCELLED"
    assert applied["gate"]["status"] == "CONSUMED"
    assert applied["gate"]["consumedBy"] == "seat"
    assert door.row(victim).status == "CANCELLED"
    assert door.row(task_id).status == "LEASED"  # the worker keeps its lease and goes on
    # audited as the call plus the grant consumed: two events in the one transaction
    assert service.audit_count() == audit_before + 2
    assert service.audit_count(operation="agenttask.cancel") == 2  # refused + granted
    assert service.audit_count(operation="agenttask.gate.apply") == 1
    # a second use is refused with its own code, and changes nothing
    other = door.create()["taskId"]
    again = door.refused(SEAT, "agenttask.gate.apply", _apply(task_id, gate_id, other))
    assert again.code is ErrorCode.GRANT_CONSUMED
    assert door.row(other).status == "QUEUED"


def test_refusals_each_have_their_own_code_and_change_nothing(door, clock):
    cases = []
    # pending: the gate is not decided yet (presented by the holder of another task's lease)
    pending_task, victim, pending_gate, _ = _granted(door, approve=None)
    other = door.claimed(SEAT2)["task"]["taskId"]
    cases.append((SEAT2, _apply(other, pending_gate, victim), ErrorCode.GRANT_PENDING))
    # denied: the gate was rejected (the task was requeued and claimed again)
    task_id, victim, gate_id, _ = _granted(door, approve=False)
    cases.append((SEAT, _apply(task_id, gate_id, victim), ErrorCode.GRANT_DENIED))
    # another task: an approved grant presented by the holder of a different task's lease
    task_id, victim, gate_id, _ = _granted(door)
    cases.append((SEAT2, _apply(other, gate_id, victim), ErrorCode.GRANT_TASK_MISMATCH))
    # another input
    cases.append((SEAT, _apply(task_id, gate_id, other), ErrorCode.GRANT_INPUT_MISMATCH))
    # another verb
    wrong_verb = _apply(task_id, gate_id, victim, verb="agenttask.requeue")
    cases.append((SEAT, wrong_verb, ErrorCode.GRANT_VERB_MISMATCH))
    # not the lease holder, a stale fence
    cases.append((SEAT2, _apply(task_id, gate_id, victim), ErrorCode.LEASE_NOT_HELD))
    cases.append((SEAT, _apply(task_id, gate_id, victim, fence=1), ErrorCode.STALE_FENCE))
    # a gate of another workspace is not found
    outsider = Actor(token_id="seat", workspace="other", tier=Tier.MEMBER, autonomy=1)
    cases.append((outsider, _apply(task_id, gate_id, victim), ErrorCode.NOT_FOUND))
    rows = {t: door.row(t) for t in (task_id, victim, other, pending_task)}
    gates = {g: door(ADMIN, "agenttask.gate.get", {"gateId": g}) for g in (gate_id, pending_gate)}
    for actor, body, want in cases:
        err = door.refused(actor, "agenttask.gate.apply", body)
        assert err.code is want, (body, err.code, want)
    assert {t: door.row(t) for t in rows} == rows
    assert {g: door(ADMIN, "agenttask.gate.get", {"gateId": g}) for g in gates} == gates
    # an expired lease: the grant is still APPROVED but the caller holds nothing
    clock.advance(60 * 60 * 1000)
    expired = door.refused(SEAT, "agenttask.gate.apply", _apply(task_id, gate_id, victim))
    assert expired.code is ErrorCode.LEASE_NOT_HELD
    assert door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})["status"] == "APPROVED"


def test_a_voided_grant_is_refused(door):
    task_id, victim, gate_id, fence = _granted(door)
    # escalating again voids the unconsumed grant; the new gate is approved and re-claimed
    again = door(SEAT, "agenttask.escalate", {"taskId": task_id, "fence": fence})["gate"]
    door(ADMIN, "agenttask.gate.approve", {"gateId": again["gateId"]})
    door(SEAT, "agenttask.claim", {"taskId": task_id})
    err = door.refused(SEAT, "agenttask.gate.apply", _apply(task_id, gate_id, victim))
    assert err.code is ErrorCode.GRANT_VOIDED


def test_a_gate_without_a_target_admits_no_call(door):
    task_id = door.claimed(SEAT)["task"]["taskId"]
    gate_id = door(SEAT, "agenttask.escalate", {"taskId": task_id})["gate"]["gateId"]
    door(ADMIN, "agenttask.gate.approve", {"gateId": gate_id})
    door(SEAT, "agenttask.claim", {"taskId": task_id})
    err = door.refused(SEAT, "agenttask.gate.apply", _apply(task_id, gate_id, "at_x"))
    assert err.code is ErrorCode.GRANT_VERB_MISMATCH


def test_the_granted_call_is_still_checked_and_rolls_back_with_the_grant(door):
    # the grant names a cancel of a task that does not exist: the call is refused inside the
    # transaction, so the grant is not consumed and can still be used... for that same input
    task_id, _, gate_id, _ = _granted(door, target={"taskId": "at_missing"})
    err = door.refused(SEAT, "agenttask.gate.apply", _apply(task_id, gate_id, "at_missing"))
    assert err.code is ErrorCode.NOT_FOUND
    assert err.path == "$.input.taskId"
    assert door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})["status"] == "APPROVED"


def test_escalating_for_a_verb_the_tier_can_never_run_is_refused_naming_the_tier(door):
    # A grant lifts autonomy, never the tier: an agent-tier worker's gate for a member-tier
    # verb could never be applied, so it is refused at escalation, before anyone approves it.
    victim = door.create()["taskId"]
    task_id = door.claimed(WORKER)["task"]["taskId"]
    body = {"taskId": task_id, "targetVerb": "agenttask.cancel", "targetInput": {"taskId": victim}}
    err = door.refused(WORKER, "agenttask.escalate", body)
    assert (err.code, err.path) == (ErrorCode.FORBIDDEN, "$.targetVerb")
    assert err.details == {"requiredTier": "member"}
    assert "needs the member tier and this token is agent" in err.message
    # nothing was written: the worker still holds its lease, no gate was minted
    assert door.row(task_id).status == "LEASED"
    assert door.row(task_id).escalation_gate_id is None
    # the same worker may still escalate for what its tier reaches (or for nothing named)
    assert door(WORKER, "agenttask.escalate", {"taskId": task_id})["gate"]["status"] == "PENDING"


@pytest.mark.parametrize(
    ("verb", "code"),
    [
        ("observe.subject", ErrorCode.INVALID_VALUE),  # its own transactions
        ("workflow.claim", ErrorCode.INVALID_VALUE),  # a workflow route
        ("agenttask.checkpoint.prune", ErrorCode.FORBIDDEN),  # admin tier
    ],
)
def test_escalating_for_a_verb_no_grant_can_run_is_refused(door, verb, code):
    task_id = door.claimed(SEAT)["task"]["taskId"]
    err = door.refused(SEAT, "agenttask.escalate", {"taskId": task_id, "targetVerb": verb})
    assert (err.code, err.path) == (code, "$.targetVerb")
    assert door.row(task_id).status == "LEASED"


def test_a_grant_lifts_autonomy_but_never_the_tier(door):
    # An admin escalates a QUEUED task for a member-tier verb (its own tier reaches it); an
    # agent-tier worker claims it later: the approved grant is still FORBIDDEN to it.
    victim = door.create()["taskId"]
    task_id = door.create()["taskId"]
    body = {"taskId": task_id, "targetVerb": "agenttask.cancel", "targetInput": {"taskId": victim}}
    gate_id = door(ADMIN, "agenttask.escalate", body)["gate"]["gateId"]
    door(ADMIN, "agenttask.gate.approve", {"gateId": gate_id})
    door(WORKER, "agenttask.claim", {"taskId": task_id})
    err = door.refused(WORKER, "agenttask.gate.apply", _apply(task_id, gate_id, victim))
    assert err.code is ErrorCode.FORBIDDEN
    assert door(ADMIN, "agenttask.gate.get", {"gateId": gate_id})["status"] == "APPROVED"
    assert door.row(victim).status == "QUEUED"


def test_escalate_checks_target_input_against_input_hash_and_refuses_a_grant_for_a_grant(door):
    task_id = door.claimed(SEAT)["task"]["taskId"]
    mismatch = {"taskId": task_id, "targetInput": {"taskId": "a"}, "inputHash": HASH}
    assert door.refused(SEAT, "agenttask.escalate", mismatch).code is ErrorCode.INVALID_VALUE
    recursive = {"taskId": task_id, "targetVerb": "agenttask.gate.apply"}
    assert door.refused(SEAT, "agenttask.escalate", recursive).code is ErrorCode.INVALID_VALUE
    assert door.row(task_id).status == "LEASED"


def test_an_input_json_cannot_carry_is_bad_input_not_a_server_error(door):
    # The one strict check of every decoded tree (issue 10) refuses it with its path.
    task_id = door.claimed(SEAT)["task"]["taskId"]
    raw = b'{"taskId": "%s", "targetVerb": "agenttask.cancel", "targetInput": {"n": 1e400}}'
    err = door.refused(SEAT, "agenttask.escalate", raw % task_id.encode())
    assert (err.code, err.path) == (ErrorCode.BAD_INPUT, "$.targetInput.n")
    apply = b'{"taskId": "%s", "gateId": "ag_x", "verb": "v", "input": {"n": -1e400}}'
    gate_id = door(
        SEAT, "agenttask.escalate", {"taskId": task_id, "targetVerb": "v", "inputHash": HASH}
    )
    door(ADMIN, "agenttask.gate.approve", {"gateId": gate_id["gate"]["gateId"]})
    door(SEAT, "agenttask.claim", {"taskId": task_id})
    body = apply.replace(b"ag_x", gate_id["gate"]["gateId"].encode()) % task_id.encode()
    err = door.refused(SEAT, "agenttask.gate.apply", body)
    assert (err.code, err.path) == (ErrorCode.BAD_INPUT, "$.input.n")
