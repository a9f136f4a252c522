"""ext.create, ext.setWaiting, ext.update: the one-to-one runtime/UI row."""

from __future__ import annotations

import threading

import pytest
from taskcore import ErrorCode

from tests.taskcore.queue.support import MEMBER, OUTSIDER, START_MS, WORKER

MISSING = "at_" + "e" * 32


def _ext(door, task_id=None, **extra):
    if task_id is None:
        task_id = door.create()["taskId"]
    body = {"agentTaskId": task_id, "title": "Fix login", "prompt": "do it", "sourceType": "ui"}
    return door(WORKER, "agenttask.ext.create", {**body, **extra})


def test_ext_create_writes_the_row_after_its_task(door):
    task_id = door.create()["taskId"]
    view = _ext(door, task_id, childKey="c1", priority=3, requiresHumanReview=True)
    assert view["agentTaskId"] == task_id
    assert (view["priority"], view["requiresHumanReview"], view["childKey"]) == (3, True, "c1")
    assert view["waitingForChildren"] is False
    assert view["declaredChildKeys"] == []
    assert view["claimTokenHash"] is None
    assert view["createdAtMs"] == START_MS


def test_ext_create_without_its_task_is_not_found(door):
    foreign = door.create(OUTSIDER)["taskId"]
    for task_id in (foreign, MISSING):
        err = door.refused(
            WORKER,
            "agenttask.ext.create",
            {"agentTaskId": task_id, "title": "t", "prompt": "p", "sourceType": "ui"},
        )
        assert (err.code, err.path) == (ErrorCode.NOT_FOUND, "$.agentTaskId")


def test_a_second_ext_row_for_a_task_is_already_exists(door):
    task_id = door.create()["taskId"]
    _ext(door, task_id)
    err = door.refused(
        WORKER,
        "agenttask.ext.create",
        {"agentTaskId": task_id, "title": "t", "prompt": "p", "sourceType": "ui"},
    )
    assert err.code is ErrorCode.ALREADY_EXISTS


def test_set_waiting_flips_once_and_repeats_answer_unchanged(door):
    task_id = _ext(door)["agentTaskId"]
    park = {"agentTaskId": task_id, "waiting": True, "declaredChildKeys": ["a", "b"]}
    first = door(WORKER, "agenttask.ext.setWaiting", park)
    assert first["changed"] is True
    assert first["ext"]["waitingForChildren"] is True
    assert first["ext"]["declaredChildKeys"] == ["a", "b"]
    assert door(WORKER, "agenttask.ext.setWaiting", park)["changed"] is False
    wake = door(WORKER, "agenttask.ext.setWaiting", {"agentTaskId": task_id, "waiting": False})
    assert (wake["changed"], wake["ext"]["waitingForChildren"]) == (True, False)
    assert wake["ext"]["declaredChildKeys"] == ["a", "b"]


def test_concurrent_parks_land_exactly_once(door, service):
    task_id = _ext(door)["agentTaskId"]
    changed: list[bool] = []
    lock = threading.Lock()

    def park() -> None:
        body = {"agentTaskId": task_id, "waiting": True}
        result = service.dispatch(WORKER, "agenttask.ext.setWaiting", body).json()
        with lock:
            changed.append(result["changed"])

    threads = [threading.Thread(target=park) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(changed) == [False] * 5 + [True]


def test_set_waiting_of_a_missing_row_is_not_found(door):
    task_id = door.create()["taskId"]  # a task without an ext row
    err = door.refused(
        WORKER, "agenttask.ext.setWaiting", {"agentTaskId": task_id, "waiting": True}
    )
    assert err.code is ErrorCode.NOT_FOUND


def test_update_writes_only_the_supplied_keys_last_write_wins(door, clock):
    task_id = _ext(door)["agentTaskId"]
    door(
        WORKER,
        "agenttask.ext.update",
        {"agentTaskId": task_id, "costUsd": 0.5, "toolCallCount": 3, "progressText": "half"},
    )
    clock.advance(9)
    view = door(
        WORKER,
        "agenttask.ext.update",
        {"agentTaskId": task_id, "progressText": "done", "result": {"files": 2}},
    )
    assert (view["costUsd"], view["toolCallCount"]) == (0.5, 3)
    assert (view["progressText"], view["result"]) == ("done", {"files": 2})
    assert view["updatedAtMs"] == START_MS + 9
    assert view["title"] == "Fix login"


def test_update_stores_the_claim_token_hash_and_claimed_at(door):
    task_id = _ext(door)["agentTaskId"]
    digest = "0123456789abcdef" * 4
    view = door(
        WORKER,
        "agenttask.ext.update",
        {"agentTaskId": task_id, "claimTokenHash": digest, "claimedAt": START_MS},
    )
    assert (view["claimTokenHash"], view["claimedAt"]) == (digest, START_MS)


@pytest.mark.parametrize("token", ["atk_0123456789abcdef_secret", "A" * 64, "0" * 63, "g" * 64])
def test_update_refuses_anything_but_a_sha256_claim_token_hash(door, token):
    task_id = _ext(door)["agentTaskId"]
    err = door.refused(
        WORKER, "agenttask.ext.update", {"agentTaskId": task_id, "claimTokenHash": token}
    )
    assert (err.code, err.path) == (ErrorCode.INVALID_VALUE, "$.claimTokenHash")


def test_update_refuses_a_negative_cost_and_a_missing_row(door):
    task_id = _ext(door)["agentTaskId"]
    err = door.refused(WORKER, "agenttask.ext.update", {"agentTaskId": task_id, "costUsd": -1})
    assert (err.code, err.path) == (ErrorCode.OUT_OF_BOUNDS, "$.costUsd")
    bare = door.create(MEMBER)["taskId"]
    err = door.refused(WORKER, "agenttask.ext.update", {"agentTaskId": bare, "durationMs": 5})
    assert err.code is ErrorCode.NOT_FOUND


def test_an_integer_storage_cannot_hold_is_out_of_bounds_and_changes_nothing(door):
    # Found by schemathesis: toolCallCount 2^64-2 overflowed SQLite's signed 64-bit integer.
    task_id = _ext(door)["agentTaskId"]
    err = door.refused(
        WORKER, "agenttask.ext.update", {"agentTaskId": task_id, "toolCallCount": 2**64 - 2}
    )
    assert err.code is ErrorCode.OUT_OF_BOUNDS
    view = door(WORKER, "agenttask.ext.update", {"agentTaskId": task_id})
    assert view["toolCallCount"] is None
