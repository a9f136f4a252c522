"""The operator reads through the front door: scoping, filters, paging, views."""

from __future__ import annotations

import pytest
from taskcore import ErrorCode

from tests.taskcore.collector.conftest import recipe
from tests.taskcore.evidence.flow import Flow
from tests.taskcore.queue.support import ADMIN, MEMBER, OUTSIDER, WORKER, WORKER2

# -- audit feed -------------------------------------------------------------------------------


def test_the_audit_feed_names_the_task_each_call_touched(door):
    task_id = door.create()["taskId"]
    door(WORKER, "agenttask.claim", {"taskId": task_id})
    door.refused(WORKER2, "agenttask.claim", {"taskId": task_id})  # decoded, then refused
    door.refused(WORKER, "agenttask.cancel", {"taskId": task_id})  # refused before decoding
    feed = door(ADMIN, "observe.audit", {"taskId": task_id})
    assert [(e["operation"], e["code"]) for e in feed["events"]] == [
        ("agenttask.claim", "CONFLICT"),
        ("agenttask.claim", "OK"),
        ("agenttask.create", "OK"),
    ]
    assert all(e["taskId"] == task_id for e in feed["events"])


def test_the_audit_feed_filters_by_actor_operation_code_and_time(door, clock):
    door.create()
    clock.advance(1000)
    middle = clock.now_ms()
    door.refused(WORKER, "agenttask.list")
    clock.advance(1000)
    door.create()
    by_actor = door(ADMIN, "observe.audit", {"actor": "worker"})["events"]
    assert [e["operation"] for e in by_actor] == ["agenttask.list"]
    by_code = door(ADMIN, "observe.audit", {"code": "FORBIDDEN"})["events"]
    assert [e["actor"] for e in by_code] == ["worker"]
    by_op = door(ADMIN, "observe.audit", {"operation": "agenttask.create"})["events"]
    assert len(by_op) == 2
    window = door(ADMIN, "observe.audit", {"sinceMs": middle, "untilMs": middle + 1})["events"]
    assert [e["operation"] for e in window] == ["agenttask.list"]


def test_the_audit_feed_pages_newest_first_without_gaps_or_repeats(door):
    for _ in range(7):
        door.create()
    seen, cursor = [], None
    while True:
        body = {"limit": 3, "operation": "agenttask.create"}
        if cursor:
            body["cursor"] = cursor
        page = door(ADMIN, "observe.audit", body)
        seen.extend(e["seq"] for e in page["events"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert len(seen) == 7 == len(set(seen))
    assert seen == sorted(seen, reverse=True)


def test_the_audit_feed_is_the_callers_workspace_only(door):
    door.create()
    door(OUTSIDER, "agenttask.list")
    outsider_view = door(OUTSIDER, "observe.audit")["events"]
    assert {e["actor"] for e in outsider_view} == {"outsider"}


def test_a_member_cannot_read_the_audit_feed(door):
    assert door.refused(MEMBER, "observe.audit").code is ErrorCode.FORBIDDEN


def test_the_page_size_is_bounded_before_anything_is_read(door):
    err = door.refused(ADMIN, "observe.audit", {"limit": 201})
    assert err.code is ErrorCode.OUT_OF_BOUNDS
    assert err.path == "$.limit"


# -- backlog, task detail, approvals ----------------------------------------------------------


def test_the_backlog_is_in_drain_order_and_filters_by_verb_and_status(door):
    door(ADMIN, "agenttask.verb.register", {"verb": "docs.write"})
    low = door.create()["taskId"]
    high = door.create()["taskId"]
    other = door.create(verb="docs.write")["taskId"]
    door(MEMBER, "agenttask.reorder", {"taskId": high, "priority": 5})
    ordered = [t["taskId"] for t in door(ADMIN, "observe.backlog")["tasks"]]
    assert ordered == [high, low, other]
    only = door(ADMIN, "observe.backlog", {"verb": "docs.write"})["tasks"]
    assert [t["taskId"] for t in only] == [other]
    door(WORKER, "agenttask.claim", {"taskId": high})
    queued = door(ADMIN, "observe.backlog", {"status": "QUEUED"})["tasks"]
    assert [t["taskId"] for t in queued] == [low, other]
    first = door(ADMIN, "observe.backlog", {"limit": 1})
    second = door(ADMIN, "observe.backlog", {"limit": 2, "cursor": first["nextCursor"]})
    assert [t["taskId"] for t in first["tasks"] + second["tasks"]] == [high, low, other]


def test_the_backlog_and_task_detail_show_keys_and_blockers(door):
    parent = door.create()["taskId"]
    child = door.create(MEMBER, after=[parent], concurrencyKey="repo")["taskId"]
    shown = {t["taskId"]: t for t in door(ADMIN, "observe.backlog")["tasks"]}
    assert (shown[child]["blockedBy"], shown[child]["concurrencyKey"]) == ([parent], "repo")
    assert "blockedBy" not in shown[parent]
    detail = door(ADMIN, "observe.task", {"taskId": child})["task"]
    assert (detail["after"], detail["blockedBy"]) == ([parent], [parent])


def test_task_detail_shows_phases_gate_and_audit_trail(door):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    fence = claim["lease"]["fence"]
    door(
        WORKER,
        "agenttask.checkpoint.write",
        {"taskId": task_id, "phaseKey": "plan", "state": {"n": 1}, "outputs": [], "fence": fence},
    )
    door(WORKER, "agenttask.escalate", {"taskId": task_id, "targetVerb": "deploy", "fence": fence})
    detail = door(ADMIN, "observe.task", {"taskId": task_id})
    assert detail["task"]["status"] == "ESCALATED"
    assert [p["phaseKey"] for p in detail["phases"]] == ["plan"]
    assert detail["gate"]["targetVerb"] == "deploy"
    assert [e["operation"] for e in detail["audit"]][:2] == [
        "agenttask.escalate",
        "agenttask.checkpoint.write",
    ]


def test_a_task_of_another_workspace_is_the_same_not_found_as_a_missing_one(door):
    task_id = door.create()["taskId"]
    foreign = door.refused(OUTSIDER, "observe.task", {"taskId": task_id})
    missing = door.refused(OUTSIDER, "observe.task", {"taskId": "at_missing"})
    assert foreign.code is missing.code is ErrorCode.NOT_FOUND
    assert foreign.message.replace(task_id, "X") == missing.message.replace("at_missing", "X")


def test_pending_approvals_say_what_the_grant_allows(door):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    door(
        WORKER,
        "agenttask.escalate",
        {
            "taskId": task_id,
            "targetVerb": "agenttask.release",
            "targetInput": {"taskId": task_id},
            "reason": "<b>prod</b>",
            "fence": 1,
        },
    )
    pending = door(ADMIN, "observe.approvals")["approvals"]
    assert len(pending) == 1
    entry = pending[0]
    assert entry["task"]["taskId"] == task_id
    assert entry["gate"]["reason"] == "<b>prod</b>"
    assert entry["grant"] == (
        f"Approving requeues task {task_id} with a one-shot grant: its lease holder may run "
        f"agenttask.release once, with exactly the input whose hash is "
        f"{entry['gate']['inputHash']}, "
        "through agenttask.gate.apply, which consumes the grant. Claiming the task consumes "
        "nothing."
    )
    door(ADMIN, "agenttask.gate.approve", {"gateId": entry["gate"]["gateId"]})
    assert door(ADMIN, "observe.approvals")["approvals"] == []
    approved = door(ADMIN, "observe.approvals", {"status": "APPROVED"})["approvals"]
    assert [a["gate"]["status"] for a in approved] == ["APPROVED"]
    assert door(OUTSIDER, "observe.approvals", {"status": "APPROVED"})["approvals"] == []


def test_stats_count_the_workspace_by_effective_status(door, clock):
    door.create()
    door.claimed()
    clock.advance(3_600_000)  # every lease lapsed
    stats = door(ADMIN, "observe.stats")
    counts = {c["key"]: c["count"] for c in stats["queue"]}
    assert counts == {"QUEUED": 2, "LEASE_EXPIRED": 1}
    assert stats["workspace"] == "w"
    assert door(OUTSIDER, "observe.stats")["queue"] == []


def test_whoami_names_the_caller(door):
    assert door(WORKER, "observe.whoami") == {
        "tokenId": "worker",
        "name": "",
        "workspace": "w",
        "tier": "agent",
        "autonomy": 1,
    }


# -- repositories, Changes, subjects ------------------------------------------------------------


@pytest.fixture
def failing(authority, state, tmp_path):
    f = Flow(
        authority, state, tmp_path, command=recipe("echo '<script>x</script> broke' >&2; exit 3")
    )
    yield f
    f.service.close()


def _member(flow):
    from taskcore.actors import Tier
    from taskcore.auth import issue_token

    return issue_token(flow.service.storage, flow.clock, workspace="w1", tier=Tier.MEMBER).token


def test_repositories_changes_and_a_failed_subject_with_its_excerpt(failing):
    failing.run_to_receipt()
    member = _member(failing)
    call = failing.service.call
    repos = call(member, "observe.repositories", {}).json()["repositories"]
    assert [r["repositoryId"] for r in repos] == ["acme"]
    assert "workTree" not in repos[0]
    changes = call(member, "observe.changes", {"repositoryId": "acme"}).json()["changes"]
    assert [(c["changeId"], c["qualified"]) for c in changes] == [("c1", False)]
    seq = changes[0]["subjectSeq"]
    detail = call(member, "observe.subject", {"repositoryId": "acme", "subjectSeq": seq}).json()
    (task,) = detail["tasks"]
    assert task["transfer"]["outcome"] == "failed"
    assert task["transfer"]["passing"] is False
    assert "<script>x</script> broke" in task["transfer"]["failureExcerpt"]
    assert task["attempts"][0]["fence"] == 1
    assert detail["receipt"] is None


def test_a_qualified_change_shows_its_receipt(flow_passing):
    flow = flow_passing
    flow.run_to_receipt()
    flow.finalize()
    member = _member(flow)
    changes = flow.service.call(member, "observe.changes", {"repositoryId": "acme"}).json()
    change = changes["changes"][0]
    assert change["qualified"] is True
    assert change["receiptDigest"]
    detail = flow.service.call(
        member, "observe.subject", {"repositoryId": "acme", "subjectSeq": change["subjectSeq"]}
    ).json()
    assert detail["receipt"]["receiptDigest"] == change["receiptDigest"]
    assert detail["tasks"][0]["transfer"]["failureExcerpt"] is None
    versions = flow.service.call(
        member,
        "observe.subjects",
        {"repositoryId": "acme", "profileId": "default", "changeId": "c1"},
    ).json()["subjects"]
    assert [v["changeVersion"] for v in versions] == [1]


@pytest.fixture
def flow_passing(authority, state, tmp_path):
    f = Flow(authority, state, tmp_path)
    yield f
    f.service.close()


def test_a_repository_of_another_workspace_is_not_found(flow_passing):
    from taskcore.actors import Tier
    from taskcore.auth import issue_token
    from taskcore.errors import TaskError

    flow = flow_passing
    stranger = issue_token(
        flow.service.storage, flow.clock, workspace="w2", tier=Tier.ADMIN, autonomy=3
    ).token
    assert flow.service.call(stranger, "observe.repositories", {}).json()["repositories"] == []
    with pytest.raises(TaskError) as info:
        flow.service.call(stranger, "observe.changes", {"repositoryId": "acme"})
    assert info.value.code is ErrorCode.NOT_FOUND


def test_a_grant_for_a_verb_that_is_no_operation_is_said_to_admit_no_call(door):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    door(WORKER, "agenttask.escalate", {"taskId": task_id, "targetVerb": "deploy", "fence": 1})
    [entry] = door(ADMIN, "observe.approvals")["approvals"]
    assert entry["grant"] == (
        f"Approving requeues task {task_id}. The gate names deploy, which is no operation of "
        "this service, so it admits no call (agenttask.gate.apply answers UNKNOWN_OPERATION): "
        "approve to let the task be claimed and continue; the action itself happens outside "
        "agent-task."
    )
