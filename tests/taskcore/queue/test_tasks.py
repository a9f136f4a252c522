"""create, get, list, cancel, requeue, reorder, rankByObjective, feed."""

from __future__ import annotations

import pytest
from taskcore import Actor, ErrorCode, Tier
from taskcore.limits import (
    LEASE_DEFAULT_MS,
    MAX_AGENT_TASK_DEPTH,
    QUEUE_PAYLOAD_MAX_BYTES,
    QUEUE_PRIORITY_MAX,
)

from tests.taskcore.queue.support import (
    ADMIN,
    MEMBER,
    MEMBER2,
    OUTSIDER,
    START_MS,
    WORKER,
    WORKER2,
)

MISSING = "at_" + "f" * 32


def _count(door) -> int:
    return len(door(ADMIN, "agenttask.list", {"limit": 1000})["tasks"])


def _same_not_found(err_a, err_b, id_a: str, id_b: str) -> None:
    """Two refusals that must be indistinguishable apart from the id the caller sent."""
    assert err_a.code is err_b.code is ErrorCode.NOT_FOUND
    assert err_a.path == err_b.path
    assert err_a.message.replace(id_a, "<id>") == err_b.message.replace(id_b, "<id>")
    assert err_a.details == err_b.details


# -- create -------------------------------------------------------------------------------------


def test_create_queues_a_root_task_at_depth_zero_with_the_creators_ceiling(door):
    task = door.create(MEMBER, payload={"title": "t"}, runId="run-1", matterStepId="s1")
    assert task["status"] == "QUEUED"
    assert task["depth"] == 0
    assert task["autonomyCeiling"] == MEMBER.autonomy
    assert task["createdBy"] == "member"
    assert task["payload"] == {"title": "t"}
    assert (task["runId"], task["matterStepId"]) == ("run-1", "s1")
    assert task["finishedAtMs"] is None
    assert task["fence"] == 0
    assert task["createdAtMs"] == START_MS


def test_create_threads_depth_through_the_parent_and_lowers_the_ceiling(door):
    low = Actor(token_id="low", workspace="w", tier=Tier.MEMBER, autonomy=1)
    root = door.create(low)
    child = door.create(ADMIN, parentTaskId=root["taskId"])
    assert child["depth"] == 1
    assert child["parentTaskId"] == root["taskId"]
    assert child["autonomyCeiling"] == 1  # not the admin's 3


def test_create_refuses_a_depth_over_the_limit_before_any_write(door):
    parent = door.create()
    for _ in range(MAX_AGENT_TASK_DEPTH):
        parent = door.create(parentTaskId=parent["taskId"])
    assert parent["depth"] == MAX_AGENT_TASK_DEPTH
    before = _count(door)
    err = door.refused(
        MEMBER, "agenttask.create", {"verb": "agent.run", "parentTaskId": parent["taskId"]}
    )
    assert err.code is ErrorCode.DEPTH_EXCEEDED
    assert err.path == "$.parentTaskId"
    assert _count(door) == before


def test_a_task_id_drawn_twice_is_already_exists_and_writes_nothing(door, monkeypatch):
    """A single create's row goes with its COMMIT on PostgreSQL (nothing is read back): a
    duplicate id still refuses the call as ALREADY_EXISTS, audited, with nothing written;
    createMany's refusal still names its entry."""
    from taskcore.queue import tasks

    monkeypatch.setattr(tasks, "new_id", lambda prefix: MISSING)
    door.create()
    before = _count(door)
    err = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run"})
    assert err.code is ErrorCode.ALREADY_EXISTS
    assert err.message == "a task with this id exists"
    err = door.refused(MEMBER, "agenttask.createMany", {"tasks": [{"verb": "agent.run"}]})
    assert err.code is ErrorCode.ALREADY_EXISTS
    assert err.path == "$.tasks[0]"
    assert _count(door) == before
    with door.service.storage.read() as tx:
        outcomes = [e.outcome for e in tx.audit.recent(workspace="w", limit=10)]
    assert outcomes.count("ALREADY_EXISTS") == 2  # each refusal audited


def test_create_refuses_an_unregistered_verb(door):
    err = door.refused(MEMBER, "agenttask.create", {"verb": "repo.review"})
    assert err.code is ErrorCode.INVALID_VALUE
    assert err.path == "$.verb"
    door(ADMIN, "agenttask.verb.register", {"verb": "repo.review"})
    assert door.create(verb="repo.review")["verb"] == "repo.review"


def test_a_verb_registered_in_another_workspace_does_not_count(door):
    door(OUTSIDER, "agenttask.verb.register", {"verb": "repo.review"})
    err = door.refused(MEMBER, "agenttask.create", {"verb": "repo.review"})
    assert err.code is ErrorCode.INVALID_VALUE


def test_create_with_a_foreign_or_missing_parent_is_the_same_not_found(door):
    foreign = door.create(OUTSIDER)["taskId"]
    err_f = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run", "parentTaskId": foreign})
    err_m = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run", "parentTaskId": MISSING})
    _same_not_found(err_f, err_m, foreign, MISSING)
    assert err_f.path == "$.parentTaskId"


def test_create_with_a_matter_needs_a_matter_the_creator_may_read(door):
    matter = door(ADMIN, "agenttask.matter.create", {"objective": "ship it"})["matterId"]
    err_unread = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run", "matterId": matter})
    err_missing = door.refused(
        MEMBER, "agenttask.create", {"verb": "agent.run", "matterId": "nope"}
    )
    assert err_unread.code is err_missing.code is ErrorCode.NOT_FOUND
    assert err_unread.message.replace(matter, "<id>") == err_missing.message.replace("nope", "<id>")
    door(ADMIN, "agenttask.matter.grant", {"matterId": matter, "reader": "member"})
    assert door.create(matterId=matter)["matterId"] == matter


def test_create_refuses_an_oversized_payload(door):
    err = door.refused(
        MEMBER, "agenttask.create", {"verb": "agent.run", "payload": "x" * QUEUE_PAYLOAD_MAX_BYTES}
    )
    assert err.code is ErrorCode.PAYLOAD_TOO_LARGE
    assert err.path == "$.payload"


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        ({"verb": "agent.run", "parent_task_id": "x"}, ErrorCode.UNKNOWN_FIELD, "$.parent_task_id"),
        ({}, ErrorCode.MISSING_FIELD, "$.verb"),
        ({"verb": 7}, ErrorCode.WRONG_TYPE, "$.verb"),
        ({"verb": "agent.run", "parentTaskId": "a b"}, ErrorCode.INVALID_VALUE, "$.parentTaskId"),
    ],
)
def test_create_decodes_strictly_with_camel_case_keys(door, body, code, path):
    err = door.refused(MEMBER, "agenttask.create", body)
    assert (err.code, err.path) == (code, path)


def test_an_agent_token_cannot_create_tasks(door):
    assert (
        door.refused(WORKER, "agenttask.create", {"verb": "agent.run"}).code is ErrorCode.FORBIDDEN
    )


# -- get ----------------------------------------------------------------------------------------


def test_get_is_for_the_creator_the_lease_holder_and_admins(door):
    task_id = door.create(MEMBER)["taskId"]
    assert door(MEMBER, "agenttask.get", {"taskId": task_id})["taskId"] == task_id
    assert door(ADMIN, "agenttask.get", {"taskId": task_id})["taskId"] == task_id
    holder = Actor(token_id="holder", workspace="w", tier=Tier.MEMBER, autonomy=1)
    door(holder, "agenttask.claim", {"taskId": task_id})
    assert door(holder, "agenttask.get", {"taskId": task_id})["status"] == "LEASED"


def test_get_by_a_stranger_a_foreign_workspace_or_of_a_missing_task_look_the_same(door):
    task_id = door.create(MEMBER)["taskId"]
    err_stranger = door.refused(MEMBER2, "agenttask.get", {"taskId": task_id})
    err_foreign = door.refused(OUTSIDER, "agenttask.get", {"taskId": task_id})
    err_missing = door.refused(MEMBER2, "agenttask.get", {"taskId": MISSING})
    _same_not_found(err_stranger, err_missing, task_id, MISSING)
    _same_not_found(err_foreign, err_missing, task_id, MISSING)


def test_get_shows_an_expired_lease_as_queued_without_a_lease(door, clock):
    task_id = door.claimed()["task"]["taskId"]
    clock.advance(LEASE_DEFAULT_MS)
    view = door(ADMIN, "agenttask.get", {"taskId": task_id})
    assert (view["status"], view["lease"], view["fence"]) == ("QUEUED", None, 1)


# -- list ---------------------------------------------------------------------------------------


def test_list_is_admin_only(door):
    assert door.refused(MEMBER, "agenttask.list").code is ErrorCode.FORBIDDEN


def test_list_filters_by_effective_status_and_never_shows_another_workspace(door, clock):
    queued = door.create()["taskId"]
    leased = door.claimed()["task"]["taskId"]
    door.create(OUTSIDER)
    statuses = {
        s: [t["taskId"] for t in door(ADMIN, "agenttask.list", {"status": s})["tasks"]]
        for s in ("QUEUED", "LEASED", "DONE")
    }
    assert statuses == {"QUEUED": [queued], "LEASED": [leased], "DONE": []}
    clock.advance(LEASE_DEFAULT_MS)
    expired = door(ADMIN, "agenttask.list", {"status": "QUEUED"})["tasks"]
    assert [t["taskId"] for t in expired] == [queued, leased]
    assert door(ADMIN, "agenttask.list", {"status": "LEASED"})["tasks"] == []


def test_list_shows_last_error_and_filters_by_matter(door):
    matter = door(ADMIN, "agenttask.matter.create", {"matterId": "m1"})["matterId"]
    in_matter = door.create(ADMIN, matterId=matter)["taskId"]
    door.create(ADMIN)
    failed = door.claimed()["task"]["taskId"]
    door(WORKER, "agenttask.checkpoint", {"taskId": failed, "status": "FAILED", "lastError": "x"})
    listed = door(ADMIN, "agenttask.list", {"matterId": "m1"})["tasks"]
    assert [t["taskId"] for t in listed] == [in_matter]
    failed_view = door(ADMIN, "agenttask.list", {"status": "FAILED"})["tasks"]
    assert [(t["taskId"], t["lastError"]) for t in failed_view] == [(failed, "x")]


def test_list_pages_with_a_cursor(door):
    ids = [door.create()["taskId"] for _ in range(5)]
    first = door(ADMIN, "agenttask.list", {"limit": 2})
    second = door(ADMIN, "agenttask.list", {"limit": 2, "cursor": first["nextCursor"]})
    third = door(ADMIN, "agenttask.list", {"limit": 2, "cursor": second["nextCursor"]})
    seen = [t["taskId"] for page in (first, second, third) for t in page["tasks"]]
    assert seen == ids
    assert third["nextCursor"] is None


def test_list_refuses_a_cursor_that_is_not_a_task_of_the_workspace(door):
    foreign = door.create(OUTSIDER)["taskId"]
    err = door.refused(ADMIN, "agenttask.list", {"cursor": foreign})
    assert (err.code, err.path) == (ErrorCode.INVALID_VALUE, "$.cursor")


# -- cancel -------------------------------------------------------------------------------------


def _in_status(door, status: str) -> str:
    if status == "QUEUED":
        return door.create()["taskId"]
    task_id = door.claimed()["task"]["taskId"]
    if status == "ESCALATED":
        door(WORKER, "agenttask.escalate", {"taskId": task_id})
    elif status in ("DONE", "FAILED"):
        door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": status})
    elif status == "CANCELLED":
        door(MEMBER, "agenttask.cancel", {"taskId": task_id})
    return task_id


@pytest.mark.parametrize("status", ["QUEUED", "LEASED", "ESCALATED"])
def test_cancel_ends_a_non_terminal_task_without_a_lease(door, clock, status):
    task_id = _in_status(door, status)
    clock.advance(3)
    view = door(MEMBER, "agenttask.cancel", {"taskId": task_id})
    assert view["status"] == "CANCELLED"
    assert view["finishedAtMs"] == START_MS + 3
    assert view["lease"] is None
    assert door.row(task_id).lease_owner is None


@pytest.mark.parametrize("status", ["DONE", "FAILED", "CANCELLED"])
def test_cancel_of_a_terminal_task_is_a_conflict_never_a_no_op(door, status):
    task_id = _in_status(door, status)
    before = door.row(task_id)
    err = door.refused(MEMBER, "agenttask.cancel", {"taskId": task_id})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION
    assert err.code.kind.http_status == 409
    assert door.row(task_id) == before


def test_cancel_of_a_foreign_task_is_not_found(door):
    foreign = door.create(OUTSIDER)["taskId"]
    _same_not_found(
        door.refused(MEMBER, "agenttask.cancel", {"taskId": foreign}),
        door.refused(MEMBER, "agenttask.cancel", {"taskId": MISSING}),
        foreign,
        MISSING,
    )
    assert door.row(foreign).status == "QUEUED"


def test_cancel_needs_sensitive_autonomy(door):
    task_id = door.create()["taskId"]
    low = Actor(token_id="low", workspace="w", tier=Tier.MEMBER, autonomy=1)
    assert door.refused(low, "agenttask.cancel", {"taskId": task_id}).code is (
        ErrorCode.AUTONOMY_EXCEEDED
    )


# -- requeue ------------------------------------------------------------------------------------


def test_requeue_returns_a_failed_task_with_its_checkpoint_intact(door):
    task_id = door.claimed()["task"]["taskId"]
    door(
        WORKER,
        "agenttask.checkpoint",
        {"taskId": task_id, "status": "FAILED", "checkpoint": {"at": 3}, "lastError": "oops"},
    )
    view = door(MEMBER, "agenttask.requeue", {"taskId": task_id})
    assert (view["status"], view["finishedAtMs"], view["checkpoint"]) == ("QUEUED", None, {"at": 3})
    assert view["lastError"] == "oops"
    again = door(WORKER2, "agenttask.claimNext")
    assert again["task"]["checkpoint"] == {"at": 3}


@pytest.mark.parametrize("status", ["QUEUED", "LEASED", "ESCALATED", "DONE", "CANCELLED"])
def test_requeue_of_anything_but_a_failed_task_is_refused(door, status):
    task_id = _in_status(door, status)
    before = door.row(task_id)
    err = door.refused(MEMBER, "agenttask.requeue", {"taskId": task_id})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION
    assert door.row(task_id) == before


# -- reorder ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["QUEUED", "LEASED", "ESCALATED"])
def test_reorder_sets_the_priority_of_a_non_terminal_task(door, status):
    task_id = _in_status(door, status)
    assert door(MEMBER, "agenttask.reorder", {"taskId": task_id, "priority": -4})["priority"] == -4
    assert door(MEMBER, "agenttask.reorder", {"taskId": task_id, "priority": 7})["priority"] == 7


def test_reorder_is_idempotent(door, clock):
    task_id = door.create()["taskId"]
    first = door(MEMBER, "agenttask.reorder", {"taskId": task_id, "priority": 3})
    clock.advance(10)
    second = door(MEMBER, "agenttask.reorder", {"taskId": task_id, "priority": 3})
    assert first == second


@pytest.mark.parametrize("status", ["DONE", "FAILED", "CANCELLED"])
def test_reorder_of_a_terminal_task_is_refused(door, status):
    task_id = _in_status(door, status)
    err = door.refused(MEMBER, "agenttask.reorder", {"taskId": task_id, "priority": 1})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION


def test_reorder_bounds_the_priority_and_hides_foreign_tasks(door):
    task_id = door.create()["taskId"]
    err = door.refused(
        MEMBER, "agenttask.reorder", {"taskId": task_id, "priority": QUEUE_PRIORITY_MAX + 1}
    )
    assert (err.code, err.path) == (ErrorCode.OUT_OF_BOUNDS, "$.priority")
    foreign = door.create(OUTSIDER)["taskId"]
    _same_not_found(
        door.refused(MEMBER, "agenttask.reorder", {"taskId": foreign, "priority": 1}),
        door.refused(MEMBER, "agenttask.reorder", {"taskId": MISSING, "priority": 1}),
        foreign,
        MISSING,
    )


# -- rankByObjective ------------------------------------------------------------------------------


def test_rank_by_objective_counts_objective_tokens_in_the_descriptor(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m", "objective": "Ship the login fix"})
    task_id = door.create(
        ADMIN,
        matterId="m",
        payload={"title": "Fix LOGIN", "description": "then ship", "other": "the"},
    )["taskId"]
    result = door(MEMBER, "agenttask.rankByObjective", {"taskId": task_id})
    assert result["matchedTokens"] == ["fix", "login", "ship"]
    assert result["task"]["priority"] == 3
    assert door(MEMBER, "agenttask.rankByObjective", {"taskId": task_id}) == result


def test_rank_by_objective_without_matter_or_objective_is_zero(door):
    plain = door.create(payload={"title": "anything"})["taskId"]
    door(MEMBER, "agenttask.reorder", {"taskId": plain, "priority": 9})
    assert door(MEMBER, "agenttask.rankByObjective", {"taskId": plain})["task"]["priority"] == 0
    door(ADMIN, "agenttask.matter.create", {"matterId": "empty"})
    in_matter = door.create(ADMIN, matterId="empty", payload={"title": "x"})["taskId"]
    assert door(MEMBER, "agenttask.rankByObjective", {"taskId": in_matter})["matchedTokens"] == []


def test_rank_by_objective_of_a_terminal_task_is_refused(door):
    task_id = _in_status(door, "DONE")
    err = door.refused(MEMBER, "agenttask.rankByObjective", {"taskId": task_id})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION


def test_rank_by_objective_drives_claim_next_order(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m", "objective": "billing export"})
    off = door.create(ADMIN, matterId="m", payload={"title": "tidy readme"})["taskId"]
    on = door.create(ADMIN, matterId="m", payload={"summary": "billing export csv"})["taskId"]
    for task_id in (off, on):
        door(MEMBER, "agenttask.rankByObjective", {"taskId": task_id})
    assert door(WORKER, "agenttask.claimNext")["task"]["taskId"] == on


# -- feed ---------------------------------------------------------------------------------------


def test_feed_of_a_task_returns_status_checkpoint_and_output_to_its_creator(door):
    task_id = door.create(MEMBER)["taskId"]
    door(WORKER, "agenttask.claim", {"taskId": task_id})
    door(
        WORKER,
        "agenttask.checkpoint",
        {
            "taskId": task_id,
            "status": "DONE",
            "checkpoint": {"output": {"pr": 12}, "rationale": "small fix"},
        },
    )
    feed = door(MEMBER, "agenttask.feed", {"taskId": task_id})
    (entry,) = feed["entries"]
    assert entry["status"] == "DONE"
    assert entry["output"] == {"pr": 12}
    assert entry["checkpoint"] == {"output": {"pr": 12}, "rationale": "small fix"}
    assert entry["rationale"] == "small fix"
    assert entry["autonomyExercised"] == WORKER.autonomy
    assert door(ADMIN, "agenttask.feed", {"taskId": task_id})["entries"] == feed["entries"]


def test_feed_of_a_task_for_a_non_owner_is_the_same_not_found_as_a_missing_task(door):
    task_id = door.create(MEMBER)["taskId"]
    door(WORKER, "agenttask.claim", {"taskId": task_id})  # even the lease holder is not the owner
    for stranger in (MEMBER2, OUTSIDER):
        _same_not_found(
            door.refused(stranger, "agenttask.feed", {"taskId": task_id}),
            door.refused(stranger, "agenttask.feed", {"taskId": MISSING}),
            task_id,
            MISSING,
        )


def test_matter_feed_needs_the_read_fence_and_hides_state(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m", "objective": "o"})
    task_id = door.create(ADMIN, matterId="m")["taskId"]
    door(WORKER, "agenttask.claim", {"taskId": task_id})
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "checkpoint": {"rationale": "why"}})
    denied = door.refused(MEMBER, "agenttask.feed", {"matterId": "m"})
    missing = door.refused(MEMBER, "agenttask.feed", {"matterId": "zz"})
    assert denied.code is missing.code is ErrorCode.NOT_FOUND
    assert denied.message.replace("m ", "<id> ") == missing.message.replace("zz ", "<id> ")
    door(ADMIN, "agenttask.matter.grant", {"matterId": "m", "reader": "member"})
    (entry,) = door(MEMBER, "agenttask.feed", {"matterId": "m"})["entries"]
    assert entry["rationale"] == "why"
    assert entry["autonomyExercised"] == 1
    assert entry["checkpoint"] is None
    assert entry["output"] is None
    door(ADMIN, "agenttask.matter.revoke", {"matterId": "m", "reader": "member"})
    assert door.refused(MEMBER, "agenttask.feed", {"matterId": "m"}).code is ErrorCode.NOT_FOUND


def test_feed_without_a_matter_is_the_workspaces_non_matter_reasoning(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m"})
    door.create(ADMIN, matterId="m")
    plain = door.create(MEMBER2)["taskId"]
    door.create(OUTSIDER)
    feed = door(MEMBER, "agenttask.feed")
    assert feed["matterId"] is None
    assert [e["taskId"] for e in feed["entries"]] == [plain]


def test_feed_refuses_task_and_matter_together(door):
    task_id = door.create()["taskId"]
    err = door.refused(MEMBER, "agenttask.feed", {"taskId": task_id, "matterId": "m"})
    assert err.code is ErrorCode.BAD_INPUT


def test_feed_pages_and_refuses_a_cursor_from_another_feed(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m"})
    in_matter = door.create(ADMIN, matterId="m")["taskId"]
    ids = [door.create()["taskId"] for _ in range(3)]
    first = door(MEMBER, "agenttask.feed", {"limit": 2})
    rest = door(MEMBER, "agenttask.feed", {"limit": 2, "cursor": first["nextCursor"]})
    assert [e["taskId"] for e in first["entries"] + rest["entries"]] == ids
    err = door.refused(MEMBER, "agenttask.feed", {"cursor": in_matter})
    assert (err.code, err.path) == (ErrorCode.INVALID_VALUE, "$.cursor")
