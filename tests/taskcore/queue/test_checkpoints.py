"""checkpoint.write, checkpoint.clear, checkpoint.prune."""

from __future__ import annotations

import threading

from taskcore import Actor, ErrorCode, Tier
from taskcore.limits import CHECKPOINT_STATE_MAX_BYTES

from tests.taskcore.queue.support import ADMIN, MEMBER, MEMBER2, OUTSIDER, WORKER, WORKER2

DAY_MS = 24 * 60 * 60 * 1000


def _write(door, actor, task_id, key, **extra):
    body = {"taskId": task_id, "phaseKey": key, "state": {"k": key}, "outputs": [], **extra}
    return door(actor, "agenttask.checkpoint.write", body)


def _phases(door, task_id):
    with door.service.storage.read() as tx:
        latest = tx.queue.latest_phase("w", task_id)
        return None if latest is None else latest.phase_index


def test_phase_indexes_grow_by_one_per_task(door):
    a = door.claimed()["task"]["taskId"]
    b = door.claimed(WORKER2)["task"]["taskId"]
    assert [_write(door, WORKER, a, f"p{i}")["phaseIndex"] for i in range(3)] == [0, 1, 2]
    assert _write(door, WORKER2, b, "q")["phaseIndex"] == 0


def test_concurrent_writers_get_distinct_consecutive_indexes(door, service):
    task_id = door.claimed()["task"]["taskId"]
    got: list[int] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(10):
            body = {"taskId": task_id, "phaseKey": f"w{n}-{i}", "state": n, "outputs": []}
            index = service.dispatch(WORKER, "agenttask.checkpoint.write", body).json()
            with lock:
                got.append(index["phaseIndex"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(40))


def test_write_needs_the_live_lease(door):
    task_id = door.claimed(WORKER)["task"]["taskId"]
    err = door.refused(
        WORKER2,
        "agenttask.checkpoint.write",
        {"taskId": task_id, "phaseKey": "p", "state": {}, "outputs": []},
    )
    assert err.code is ErrorCode.LEASE_NOT_HELD
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    err = door.refused(
        WORKER,
        "agenttask.checkpoint.write",
        {"taskId": task_id, "phaseKey": "p", "state": {}, "outputs": []},
    )
    assert err.code is ErrorCode.ILLEGAL_TRANSITION
    assert _phases(door, task_id) is None


def test_write_refuses_state_over_one_mebibyte_and_accepts_it_at_the_limit(door):
    task_id = door.claimed()["task"]["taskId"]
    at_limit = "x" * (CHECKPOINT_STATE_MAX_BYTES - 2)  # plus the two quotes
    assert _write(door, WORKER, task_id, "big", state=at_limit)["phaseIndex"] == 0
    err = door.refused(
        WORKER,
        "agenttask.checkpoint.write",
        {"taskId": task_id, "phaseKey": "p", "state": at_limit + "y", "outputs": []},
    )
    assert (err.code, err.path) == (ErrorCode.PAYLOAD_TOO_LARGE, "$.state")
    assert _phases(door, task_id) == 0


def test_write_requires_every_seed_field(door):
    task_id = door.claimed()["task"]["taskId"]
    err = door.refused(
        WORKER, "agenttask.checkpoint.write", {"taskId": task_id, "phaseKey": "p", "state": {}}
    )
    assert (err.code, err.path) == (ErrorCode.MISSING_FIELD, "$.outputs")


def test_clear_deletes_every_phase_and_is_idempotent(door):
    task_id = door.claimed()["task"]["taskId"]
    for key in ("a", "b"):
        _write(door, WORKER, task_id, key)
    assert door(MEMBER, "agenttask.checkpoint.clear", {"taskId": task_id})["cleared"] == 2
    assert door(MEMBER, "agenttask.checkpoint.clear", {"taskId": task_id})["cleared"] == 0
    assert _phases(door, task_id) is None


def test_clear_is_for_the_creator_the_lease_holder_or_an_admin(door):
    task_id = door.claimed(WORKER)["task"]["taskId"]
    _write(door, WORKER, task_id, "a")
    for stranger in (MEMBER2, WORKER2, OUTSIDER):
        err = door.refused(stranger, "agenttask.checkpoint.clear", {"taskId": task_id})
        assert err.code is ErrorCode.NOT_FOUND
    assert _phases(door, task_id) == 0
    assert door(WORKER, "agenttask.checkpoint.clear", {"taskId": task_id})["cleared"] == 1
    assert door(ADMIN, "agenttask.checkpoint.clear", {"taskId": task_id})["cleared"] == 0


def test_prune_sweeps_old_rows_of_the_callers_workspace_only_and_keeps_new_ones(door, clock):
    other_worker = Actor(token_id="ow", workspace="other", tier=Tier.AGENT, autonomy=1)
    other_admin = Actor(token_id="oa", workspace="other", tier=Tier.ADMIN, autonomy=3)
    mine = door.claimed()["task"]["taskId"]
    theirs = door.create(OUTSIDER)["taskId"]
    door(other_worker, "agenttask.claim", {"taskId": theirs})
    _write(door, WORKER, mine, "old")
    _write(door, other_worker, theirs, "old")
    clock.advance(31 * DAY_MS)
    door(WORKER, "agenttask.claim", {"taskId": mine})  # old lease long expired
    _write(door, WORKER, mine, "new")
    result = door(ADMIN, "agenttask.checkpoint.prune")
    assert result["pruned"] == 1  # this workspace's old row; the other workspace's stays
    assert result["cutoffMs"] == clock.now_ms() - 30 * DAY_MS
    assert _phases(door, mine) == 1
    assert door(ADMIN, "agenttask.checkpoint.prune", {"olderThanDays": 1})["pruned"] == 0
    # The other workspace's admin prunes its own old row.
    assert door(other_admin, "agenttask.checkpoint.prune")["pruned"] == 1


def test_prune_is_admin_only_and_bounded(door):
    assert door.refused(MEMBER, "agenttask.checkpoint.prune").code is ErrorCode.FORBIDDEN
    err = door.refused(ADMIN, "agenttask.checkpoint.prune", {"olderThanDays": 0})
    assert (err.code, err.path) == (ErrorCode.OUT_OF_BOUNDS, "$.olderThanDays")


def test_prune_longer_than_the_epoch_is_old_cuts_off_at_the_epoch(door):
    # Found by schemathesis: a cutoff before 1970 was negative and broke the output schema.
    from taskcore.limits import CHECKPOINT_PRUNE_MAX_DAYS

    result = door(ADMIN, "agenttask.checkpoint.prune", {"olderThanDays": CHECKPOINT_PRUNE_MAX_DAYS})
    assert result["cutoffMs"] == 0
    assert result["pruned"] == 0
