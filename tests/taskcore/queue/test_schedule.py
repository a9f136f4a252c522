"""Scheduled tasks (runAt / delayMs on create) and paused verbs, on both backends.

docs/queue.md "Scheduled tasks" and "Pause": a task is QUEUED but not claimable before its
runAt (every read shows runAtMs); a paused verb's tasks are not claimable; resume and the due
time wake a waiting claimNext.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from taskcore import ErrorCode, Service
from taskcore.codec import decode
from taskcore.errors import TaskError
from taskcore.limits import QUEUE_DELAY_MAX_MS
from taskcore.queue.requests import CreateIn
from taskcore.queue.schedule import schedule_of

from tests.taskcore.queue.support import ADMIN, MEMBER, START_MS, WORKER, WORKER2

CLAIM = "agenttask.claimNext"


# -- runAt / delayMs -----------------------------------------------------------------------------


def test_delay_ms_sets_run_at_and_every_read_shows_it(door):
    task = door.create(delayMs=5_000)
    assert task["runAtMs"] == START_MS + 5_000
    assert task["status"] == "QUEUED"
    got = door(MEMBER, "agenttask.get", {"taskId": task["taskId"]})
    assert got["runAtMs"] == START_MS + 5_000
    listed = door(ADMIN, "agenttask.list", {"status": "QUEUED"})["tasks"]
    assert [t["runAtMs"] for t in listed] == [START_MS + 5_000]


def test_a_task_without_schedule_reads_run_at_null_and_one_attempt(door):
    task = door.create()
    assert (task["runAtMs"], task["attempt"], task["maxAttempts"], task["backoff"]) == (
        None,
        1,
        1,
        None,
    )


def test_a_scheduled_task_is_not_claimable_before_run_at(door, clock):
    later = door.create(runAt=START_MS + 10_000)["taskId"]
    assert door(WORKER, CLAIM, {}) == {"claimed": False}
    err = door.refused(WORKER, "agenttask.claim", {"taskId": later})
    assert err.code is ErrorCode.CONFLICT
    assert err.details == {"runAtMs": START_MS + 10_000}
    clock.advance(10_000)
    answer = door(WORKER, CLAIM, {})
    assert answer["claimed"] is True
    assert answer["task"]["taskId"] == later


def test_a_due_task_of_lower_priority_is_taken_before_a_scheduled_one(door, clock):
    ahead = door.create(delayMs=60_000)["taskId"]
    door(MEMBER, "agenttask.reorder", {"taskId": ahead, "priority": 9})
    now = door.create()["taskId"]
    assert door(WORKER, CLAIM, {})["task"]["taskId"] == now
    assert door(WORKER, CLAIM, {}) == {"claimed": False}
    clock.advance(60_000)
    assert door(WORKER, CLAIM, {})["task"]["taskId"] == ahead


def test_run_at_in_the_past_is_claimable_at_once(door):
    task = door.create(runAt=START_MS - 1)
    assert door(WORKER, CLAIM, {})["task"]["taskId"] == task["taskId"]


def test_run_at_and_delay_ms_together_is_a_typed_error(door):
    err = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run", "runAt": 1, "delayMs": 1})
    assert err.code is ErrorCode.BAD_INPUT
    assert err.path == "$.delayMs"
    assert "not both" in err.message


def test_schedule_bounds_are_typed():
    with pytest.raises(TaskError) as info:
        decode(CreateIn, b'{"verb": "agent.run", "delayMs": -1}')
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.delayMs")
    with pytest.raises(TaskError) as info:
        schedule_of(CreateIn(verb="agent.run", run_at=QUEUE_DELAY_MAX_MS + 2), 1)
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.runAt")
    assert schedule_of(CreateIn(verb="agent.run", run_at=7), 1)["run_at_ms"] == 7


def test_a_scheduled_task_wakes_a_waiting_claimer_when_it_comes_due(tmp_path):
    # Nothing commits when the time comes: the waiting claim's timer is the earliest runAt.
    service = Service.open(tmp_path / "real")
    try:
        task = service.dispatch(
            MEMBER, "agenttask.create", {"verb": "agent.run", "delayMs": 700}
        ).json()
        started = time.monotonic()
        answer = service.dispatch(WORKER, CLAIM, {"waitMs": 10_000}).json()
        took = time.monotonic() - started
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] == task["taskId"]
        assert 0.4 < took < 5.0
    finally:
        service.close()


def test_a_far_scheduled_task_does_not_hold_a_waiter_past_its_wait(tmp_path):
    service = Service.open(tmp_path / "real")
    try:
        service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run", "delayMs": 60_000})
        started = time.monotonic()
        assert service.dispatch(WORKER, CLAIM, {"waitMs": 400}).json() == {"claimed": False}
        assert time.monotonic() - started < 3.0
    finally:
        service.close()


# -- pause / resume ------------------------------------------------------------------------------


def test_a_paused_verb_is_not_claimable_and_reads_list_it(door, clock):
    task = door.create()["taskId"]
    paused = door(ADMIN, "agenttask.pause", {"verb": "agent.run"})
    assert paused == {"verb": "agent.run", "paused": True, "changed": True}
    assert door(ADMIN, "agenttask.pause", {"verb": "agent.run"})["changed"] is False
    listing = door(ADMIN, "agenttask.paused", {})["verbs"]
    assert listing == [{"verb": "agent.run", "pausedBy": "admin", "pausedAtMs": START_MS}]
    assert door(WORKER, CLAIM, {}) == {"claimed": False}
    assert door(WORKER, CLAIM, {"verb": "agent.run"}) == {"claimed": False}
    err = door.refused(WORKER, "agenttask.claim", {"taskId": task})
    assert err.code is ErrorCode.CONFLICT
    assert err.details == {"verb": "agent.run"}
    assert door(MEMBER, "agenttask.get", {"taskId": task})["status"] == "QUEUED"
    resumed = door(ADMIN, "agenttask.resume", {"verb": "agent.run"})
    assert resumed == {"verb": "agent.run", "paused": False, "changed": True}
    assert door(ADMIN, "agenttask.resume", {"verb": "agent.run"})["changed"] is False
    assert door(ADMIN, "agenttask.paused", {}) == {"verbs": []}
    assert door(WORKER, CLAIM, {})["task"]["taskId"] == task


def test_pausing_one_verb_leaves_the_others_claimable(door):
    door(ADMIN, "agenttask.verb.register", {"verb": "repo.fix"})
    door.create(verb="repo.fix")
    plain = door.create()["taskId"]
    door(ADMIN, "agenttask.pause", {"verb": "repo.fix"})
    assert door(WORKER, CLAIM, {})["task"]["taskId"] == plain
    assert door(WORKER, CLAIM, {}) == {"claimed": False}


def test_pause_is_admin_only_and_needs_a_registered_verb(door):
    assert door.refused(MEMBER, "agenttask.pause", {"verb": "agent.run"}).code is (
        ErrorCode.FORBIDDEN
    )
    assert door.refused(ADMIN, "agenttask.pause", {"verb": "no.such"}).code is (
        ErrorCode.INVALID_VALUE
    )


def test_pause_is_per_workspace(door):
    from tests.taskcore.queue.support import OUTSIDER

    door(OUTSIDER, "agenttask.pause", {"verb": "agent.run"})
    task = door.create()["taskId"]
    assert door(WORKER, CLAIM, {})["task"]["taskId"] == task


def test_resume_wakes_a_waiting_claimer(door):
    task = door.create()["taskId"]
    door(ADMIN, "agenttask.pause", {"verb": "agent.run"})
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(door, WORKER2, CLAIM, {"waitMs": 10_000})
        time.sleep(0.3)
        assert not waiting.done()
        started = time.monotonic()
        door(ADMIN, "agenttask.resume", {"verb": "agent.run"})
        answer = waiting.result()
        assert time.monotonic() - started < 3.0
    assert answer["task"]["taskId"] == task


def test_pause_and_resume_are_audited(door, service):
    door(ADMIN, "agenttask.pause", {"verb": "agent.run"})
    door(ADMIN, "agenttask.resume", {"verb": "agent.run"})
    assert service.audit_count(operation="agenttask.pause") == 1
    assert service.audit_count(operation="agenttask.resume") == 1
