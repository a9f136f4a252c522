"""Bulk requeue and cancel (agenttask.requeueMany / cancelMany), on both backends.

The list filter picks the tasks (bounded), each task changed is its own audited call in the
one transaction, dryRun changes nothing, admins only.
"""

from __future__ import annotations

import pytest
from taskcore import ErrorCode
from taskcore.codec import decode
from taskcore.errors import TaskError
from taskcore.limits import QUEUE_BULK_MAX
from taskcore.queue.requests import BulkIn

from tests.taskcore.queue.support import ADMIN, MEMBER, WORKER


def _failed(door, n: int) -> list[str]:
    ids = []
    for _ in range(n):
        task = door.create()["taskId"]
        claim = door(WORKER, "agenttask.claim", {"taskId": task})
        door(
            WORKER,
            "agenttask.checkpoint",
            {"taskId": task, "status": "FAILED", "fence": claim["lease"]["fence"]},
        )
        ids.append(task)
    return ids


def test_requeue_many_requeues_every_failed_task_each_audited(door, service):
    failed = _failed(door, 3)
    queued = door.create()["taskId"]
    answer = door(ADMIN, "agenttask.requeueMany", {})
    assert answer == {"taskIds": failed, "skipped": 1, "more": False, "dryRun": False}
    for task in failed:
        seen = door(MEMBER, "agenttask.get", {"taskId": task})
        assert (seen["status"], seen["attempt"]) == ("QUEUED", 1)
    assert door(MEMBER, "agenttask.get", {"taskId": queued})["status"] == "QUEUED"
    assert service.audit_count(operation="agenttask.requeue") == 3
    assert service.audit_count(operation="agenttask.requeueMany") == 1


def test_cancel_many_with_a_status_filter_and_a_limit(door, service):
    tasks = [door.create()["taskId"] for _ in range(3)]
    answer = door(ADMIN, "agenttask.cancelMany", {"status": "QUEUED", "limit": 2})
    assert answer == {"taskIds": tasks[:2], "skipped": 0, "more": True, "dryRun": False}
    statuses = [door(MEMBER, "agenttask.get", {"taskId": t})["status"] for t in tasks]
    assert statuses == ["CANCELLED", "CANCELLED", "QUEUED"]
    assert service.audit_count(operation="agenttask.cancel") == 2
    again = door(ADMIN, "agenttask.cancelMany", {"status": "QUEUED"})
    assert again["taskIds"] == tasks[2:]


def test_cancel_many_skips_terminal_tasks_and_filters_by_matter(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m1"})
    inside = door.create(ADMIN, matterId="m1")["taskId"]
    door.create()
    _failed(door, 1)
    answer = door(ADMIN, "agenttask.cancelMany", {"matterId": "m1"})
    assert answer["taskIds"] == [inside]
    everything = door(ADMIN, "agenttask.cancelMany", {})
    assert everything["skipped"] == 2  # the FAILED one and the one cancelled above
    assert len(everything["taskIds"]) == 1


def test_a_dry_run_changes_nothing_and_is_one_audit_event(door, service):
    failed = _failed(door, 2)
    answer = door(ADMIN, "agenttask.requeueMany", {"dryRun": True, "status": "FAILED"})
    assert answer == {"taskIds": failed, "skipped": 0, "more": False, "dryRun": True}
    assert all(door(MEMBER, "agenttask.get", {"taskId": t})["status"] == "FAILED" for t in failed)
    assert service.audit_count(operation="agenttask.requeue") == 0


def test_bulk_acts_are_admin_only_and_bounded(door):
    assert door.refused(MEMBER, "agenttask.cancelMany", {}).code is ErrorCode.FORBIDDEN
    assert door.refused(WORKER, "agenttask.requeueMany", {}).code is ErrorCode.FORBIDDEN
    with pytest.raises(TaskError) as info:
        decode(BulkIn, f'{{"limit": {QUEUE_BULK_MAX + 1}}}'.encode())
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.limit")


def test_a_bulk_act_never_reaches_another_workspace(door):
    from tests.taskcore.queue.support import OUTSIDER

    mine = door.create()["taskId"]
    assert door(OUTSIDER, "agenttask.cancelMany", {}) == {
        "taskIds": [],
        "skipped": 0,
        "more": False,
        "dryRun": False,
    }
    assert door(MEMBER, "agenttask.get", {"taskId": mine})["status"] == "QUEUED"


def test_the_verb_filter_keeps_one_carrier_verb(door):
    door(ADMIN, "agenttask.verb.register", {"verb": "repo.fix"})
    fix = door.create(verb="repo.fix")["taskId"]
    door.create()
    answer = door(ADMIN, "agenttask.cancelMany", {"verb": "repo.fix"})
    assert answer["taskIds"] == [fix]
