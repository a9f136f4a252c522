"""The lease verbs (claim, claimNext, checkpoint, release, escalate: every guard and every
outcome) and the lease's life (grant, renewal, the runaway guard)."""

from __future__ import annotations

import threading

import attrs
import pytest
from taskcore import Actor, ErrorCode, Service, TaskError, Tier
from taskcore.auth import actor_from_record, issue_token, revoke_token
from taskcore.limits import (
    LEASE_DEFAULT_MS,
    LEASE_WALLCLOCK_CAP_SECONDS,
    MAX_LEASE_EXTENSIONS,
    QUEUE_PAYLOAD_MAX_BYTES,
)
from taskcore.queue.common import cleared_lease
from taskcore.queue.leases import granted_lease, lease_length, renewed_lease, runaway_reason
from taskcore.queue.types import TaskStatus
from taskcore.store.queue_api import TaskRecord

from tests.taskcore.queue.support import (
    ADMIN,
    HIGH_WORKER,
    MEMBER,
    MEMBER2,
    OUTSIDER,
    START_MS,
    WORKER,
    WORKER2,
)

HOLDER = Actor(token_id="holder", workspace="w", tier=Tier.AGENT, autonomy=2)
OTHER = Actor(token_id="other", workspace="w", tier=Tier.AGENT, autonomy=1)


def _queued() -> TaskRecord:
    return TaskRecord(
        task_id="at_1",
        workspace="w",
        verb="agent.run",
        payload_json=None,
        status="QUEUED",
        priority=0,
        autonomy_ceiling=3,
        depth=0,
        parent_task_id=None,
        run_id=None,
        matter_id=None,
        matter_step_id=None,
        created_by="c",
        created_at_ms=0,
        updated_at_ms=0,
    )


def _leased(now: int = 1000, lease: int = 500) -> TaskRecord:
    return granted_lease(_queued(), HOLDER, now, lease)


def _code(fn, *args) -> ErrorCode | None:
    try:
        fn(*args)
    except TaskError as err:
        return err.code
    return None


def test_a_claim_grows_the_fence_and_starts_a_new_budget():
    task = attrs.evolve(_leased(), lease_extensions=3)
    again = granted_lease(cleared_lease(task, TaskStatus.QUEUED, 2000), OTHER, 2000, 100)
    assert again.fence == task.fence + 1
    assert (again.lease_extensions, again.first_leased_at_ms) == (0, 2000)
    assert again.exercised_autonomy == OTHER.autonomy


def test_a_renewal_keeps_the_length_the_claim_granted():
    task = _leased(now=1000, lease=700)
    assert lease_length(task, 5) == 700
    renewed = renewed_lease(task, 1300, 5)
    assert (renewed.lease_expires_at_ms, renewed.heartbeat_at_ms) == (2000, 1300)
    assert renewed.lease_extensions == 1
    assert lease_length(_queued(), 5) == 5


@pytest.mark.parametrize("extensions", range(MAX_LEASE_EXTENSIONS + 2))
def test_the_runaway_guard_allows_four_extensions(extensions):
    task = attrs.evolve(_leased(now=0), lease_extensions=extensions)
    tripped = runaway_reason(task, 1) is not None
    assert tripped is (extensions >= MAX_LEASE_EXTENSIONS)


def test_the_runaway_guard_trips_past_the_wallclock_cap():
    task = _leased(now=0)
    cap = LEASE_WALLCLOCK_CAP_SECONDS * 1000
    assert runaway_reason(task, cap) is None
    assert "cap" in runaway_reason(task, cap + 1)


# -- claim ------------------------------------------------------------------------------------


def test_claim_leases_a_queued_task_and_returns_payload_checkpoint_and_handle(door):
    task = door.create(payload={"title": "fix the login"})
    result = door(WORKER, "agenttask.claim", {"taskId": task["taskId"]})
    assert result["claimed"] is True
    assert result["task"]["status"] == "LEASED"
    assert result["task"]["payload"] == {"title": "fix the login"}
    assert result["task"]["checkpoint"] is None
    assert result["task"]["lease"] == {
        "owner": "worker",
        "expiresAtMs": START_MS + LEASE_DEFAULT_MS,
        "heartbeatAtMs": START_MS,
        "extensions": 0,
        "firstLeasedAtMs": START_MS,
    }
    assert result["lease"] == {
        "taskId": task["taskId"],
        "owner": "worker",
        "fence": 1,
        "expiresAtMs": START_MS + LEASE_DEFAULT_MS,
        "grant": None,
        # the runaway guard's bounds, said in the answer the worker holds
        "maxExtensions": MAX_LEASE_EXTENSIONS,
        "wallClockCapMs": LEASE_WALLCLOCK_CAP_SECONDS * 1000,
    }
    assert result["resume"] is None


@pytest.mark.parametrize("claimer", [WORKER, WORKER2])
def test_claim_of_a_live_lease_is_a_conflict_and_writes_nothing(door, claimer):
    first = door.claimed(WORKER)
    task_id = first["task"]["taskId"]
    before = door.row(task_id)
    err = door.refused(claimer, "agenttask.claim", {"taskId": task_id})
    assert err.code is ErrorCode.CONFLICT
    assert door.row(task_id) == before


def test_claim_of_an_escalated_task_is_an_illegal_transition(door):
    task = door.create()
    door(MEMBER, "agenttask.escalate", {"taskId": task["taskId"]})
    err = door.refused(WORKER, "agenttask.claim", {"taskId": task["taskId"]})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION


@pytest.mark.parametrize("ending", ["DONE", "FAILED", "CANCELLED"])
def test_claim_of_a_terminal_task_is_an_illegal_transition(door, ending):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    if ending == "CANCELLED":
        door(MEMBER, "agenttask.cancel", {"taskId": task_id})
    else:
        door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": ending})
    err = door.refused(WORKER2, "agenttask.claim", {"taskId": task_id})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION
    assert ending in err.message


def test_claim_above_the_autonomy_ceiling_is_refused(door):
    task = door.create(MEMBER)  # member autonomy 2 -> ceiling 2
    err = door.refused(HIGH_WORKER, "agenttask.claim", {"taskId": task["taskId"]})
    assert err.code is ErrorCode.AUTONOMY_EXCEEDED
    assert door.row(task["taskId"]).status == "QUEUED"


def test_claim_of_a_missing_and_of_a_foreign_task_are_the_same_not_found(door):
    foreign = door.create(OUTSIDER)["taskId"]
    missing = "at_" + "0" * 32
    err_foreign = door.refused(WORKER, "agenttask.claim", {"taskId": foreign})
    err_missing = door.refused(WORKER, "agenttask.claim", {"taskId": missing})
    assert err_foreign.code is err_missing.code is ErrorCode.NOT_FOUND
    assert err_foreign.to_json() == {
        **err_missing.to_json(),
        "error": err_missing.to_json()["error"].replace(missing, foreign),
    }
    assert door.row(foreign).status == "QUEUED"


def test_an_expired_lease_is_claimable_again_with_a_new_fence(door, clock):
    first = door.claimed(WORKER)
    task_id = first["task"]["taskId"]
    clock.advance(LEASE_DEFAULT_MS)
    assert door(ADMIN, "agenttask.get", {"taskId": task_id})["status"] == "QUEUED"
    second = door(WORKER2, "agenttask.claim", {"taskId": task_id})
    assert second["lease"]["fence"] == first["lease"]["fence"] + 1
    assert second["lease"]["owner"] == "worker2"
    assert second["task"]["lease"]["extensions"] == 0


def test_claim_hands_back_the_latest_phase_checkpoint_to_resume_from(door):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    for key in ("plan", "edit"):
        door(
            WORKER,
            "agenttask.checkpoint.write",
            {"taskId": task_id, "phaseKey": key, "state": {"k": key}, "outputs": [key]},
        )
    door(WORKER, "agenttask.release", {"taskId": task_id})
    again = door(WORKER2, "agenttask.claim", {"taskId": task_id})
    assert again["resume"]["phaseIndex"] == 1
    assert again["resume"]["phaseKey"] == "edit"
    assert again["resume"]["state"] == {"k": "edit"}
    assert again["resume"]["outputs"] == ["edit"]


# -- claimNext ----------------------------------------------------------------------------------


def test_claim_next_on_an_empty_queue_is_exactly_claimed_false(door, service):
    assert service.dispatch(WORKER, "agenttask.claimNext", b"{}").body == b'{"claimed":false}'


def test_claim_next_takes_the_highest_priority_then_the_oldest(door, clock):
    old = door.create()["taskId"]
    clock.advance(1)
    newer = door.create()["taskId"]
    clock.advance(1)
    urgent = door.create()["taskId"]
    door(MEMBER, "agenttask.reorder", {"taskId": urgent, "priority": 5})
    order = [door(WORKER, "agenttask.claimNext")["task"]["taskId"] for _ in range(3)]
    assert order == [urgent, old, newer]
    assert door(WORKER, "agenttask.claimNext") == {"claimed": False}


def test_claim_next_breaks_equal_times_by_creation_order(door):
    first = door.create()["taskId"]
    second = door.create()["taskId"]
    assert door(WORKER, "agenttask.claimNext")["task"]["taskId"] == first
    assert door(WORKER, "agenttask.claimNext")["task"]["taskId"] == second


def test_claim_next_only_takes_tasks_whose_ceiling_admits_the_caller(door):
    low = Actor(token_id="low-member", workspace="w", tier=Tier.MEMBER, autonomy=1)
    capped = door.create(low)["taskId"]  # ceiling 1
    assert door(HIGH_WORKER, "agenttask.claimNext") == {"claimed": False}
    roomy = door.create(ADMIN)["taskId"]  # ceiling 3
    assert door(HIGH_WORKER, "agenttask.claimNext")["task"]["taskId"] == roomy
    assert door(WORKER, "agenttask.claimNext")["task"]["taskId"] == capped


def test_claim_next_filters_by_carrier_verb(door):
    door(ADMIN, "agenttask.verb.register", {"verb": "repo.review"})
    run = door.create()["taskId"]
    review = door.create(verb="repo.review")["taskId"]
    assert door(WORKER, "agenttask.claimNext", {"verb": "repo.review"})["task"]["taskId"] == review
    assert door(WORKER, "agenttask.claimNext", {"verb": "repo.review"}) == {"claimed": False}
    assert door(WORKER, "agenttask.claimNext", {"verb": "agent.run"})["task"]["taskId"] == run


def test_claim_next_takes_an_expired_lease_in_priority_order(door, clock):
    stale = door.create()["taskId"]
    door(MEMBER, "agenttask.reorder", {"taskId": stale, "priority": 9})
    door(WORKER, "agenttask.claim", {"taskId": stale})
    door.create()
    clock.advance(LEASE_DEFAULT_MS + 1)
    again = door(WORKER2, "agenttask.claimNext")
    assert again["task"]["taskId"] == stale
    assert again["lease"]["fence"] == 2


def test_claim_next_never_takes_another_workspaces_task(door):
    door.create(OUTSIDER)
    assert door(WORKER, "agenttask.claimNext") == {"claimed": False}


def test_claim_next_skips_escalated_and_terminal_tasks(door):
    escalated = door.create()["taskId"]
    door(MEMBER, "agenttask.escalate", {"taskId": escalated})
    cancelled = door.create()["taskId"]
    door(MEMBER, "agenttask.cancel", {"taskId": cancelled})
    assert door(WORKER, "agenttask.claimNext") == {"claimed": False}


def test_concurrent_claim_next_threads_each_win_a_distinct_task(door, service):
    ids = {door.create()["taskId"] for _ in range(40)}
    won: list[str] = []
    lock = threading.Lock()

    def drain(n: int) -> None:
        me = Actor(token_id=f"t{n}", workspace="w", tier=Tier.AGENT, autonomy=1)
        while True:
            result = service.dispatch(me, "agenttask.claimNext", b"{}").json()
            if not result["claimed"]:
                return
            with lock:
                won.append(result["task"]["taskId"])

    threads = [threading.Thread(target=drain, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == sorted(ids)


# -- checkpoint ---------------------------------------------------------------------------------


def test_heartbeat_only_checkpoint_renews_the_lease_and_keeps_the_checkpoint(door, clock):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "checkpoint": {"step": 1}})
    clock.advance(1000)
    view = door(WORKER, "agenttask.checkpoint", {"taskId": task_id})
    assert view["checkpoint"] == {"step": 1}
    assert view["status"] == "LEASED"
    assert view["lease"]["extensions"] == 2
    assert view["lease"]["heartbeatAtMs"] == START_MS + 1000
    assert view["lease"]["expiresAtMs"] == START_MS + 1000 + LEASE_DEFAULT_MS
    assert view["lease"]["firstLeasedAtMs"] == START_MS
    assert view["finishedAtMs"] is None


def test_checkpoint_done_ends_the_lease_and_stamps_finished_at(door, clock):
    task_id = door.claimed()["task"]["taskId"]
    clock.advance(5)
    view = door(
        WORKER,
        "agenttask.checkpoint",
        {"taskId": task_id, "status": "DONE", "checkpoint": {"output": {"ok": True}}},
    )
    assert view["status"] == "DONE"
    assert view["finishedAtMs"] == START_MS + 5
    assert view["lease"] is None
    assert view["checkpoint"] == {"output": {"ok": True}}
    row = door.row(task_id)
    assert row.lease_owner is None
    assert row.first_leased_at_ms is None


def test_checkpoint_failed_records_last_error(door):
    task_id = door.claimed()["task"]["taskId"]
    view = door(
        WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "FAILED", "lastError": "boom"}
    )
    assert (view["status"], view["lastError"]) == ("FAILED", "boom")
    assert view["finishedAtMs"] == START_MS


def test_checkpoint_with_an_unknown_status_is_invalid(door):
    task_id = door.claimed()["task"]["taskId"]
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "QUEUED"})
    assert err.code is ErrorCode.INVALID_VALUE
    assert err.path == "$.status"


def test_checkpoint_by_a_worker_without_the_lease_is_refused(door):
    task_id = door.claimed(WORKER)["task"]["taskId"]
    before = door.row(task_id)
    err = door.refused(WORKER2, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    assert err.code is ErrorCode.LEASE_NOT_HELD
    assert door.row(task_id) == before


def test_checkpoint_of_a_never_claimed_task_is_lease_not_held(door):
    task_id = door.create()["taskId"]
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id})
    assert err.code is ErrorCode.LEASE_NOT_HELD


def test_checkpoint_after_the_lease_expired_is_lease_not_held(door, clock):
    task_id = door.claimed()["task"]["taskId"]
    clock.advance(LEASE_DEFAULT_MS)
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id})
    assert err.code is ErrorCode.LEASE_NOT_HELD
    assert "expired" in err.message


def test_checkpoint_of_an_escalated_task_is_lease_not_held(door):
    task_id = door.claimed()["task"]["taskId"]
    door(WORKER, "agenttask.escalate", {"taskId": task_id})
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id})
    assert err.code is ErrorCode.LEASE_NOT_HELD


@pytest.mark.parametrize("ending", ["DONE", "FAILED"])
def test_checkpoint_of_a_terminal_task_is_an_illegal_transition(door, ending):
    task_id = door.claimed()["task"]["taskId"]
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": ending})
    for body in ({}, {"status": "DONE"}, {"status": "FAILED"}):
        err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, **body})
        assert err.code is ErrorCode.ILLEGAL_TRANSITION


def test_checkpoint_with_a_stale_fence_is_refused(door):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": 7})
    assert err.code is ErrorCode.STALE_FENCE
    assert err.path == "$.fence"
    ok = door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": 1})
    assert ok["lease"]["extensions"] == 1


def test_the_fifth_renewal_is_lease_runaway_and_requeues_the_task(door, service):
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    # The claim's answer says how many renewals it has; exactly those are accepted.
    assert claim["lease"]["maxExtensions"] == MAX_LEASE_EXTENSIONS == 4
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "checkpoint": {"saved": 1}})
    for _ in range(claim["lease"]["maxExtensions"] - 1):
        door(WORKER, "agenttask.checkpoint", {"taskId": task_id})
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, "checkpoint": {"x": 2}})
    assert err.code is ErrorCode.LEASE_RUNAWAY
    assert err.code.kind.http_status == 409
    row = door.row(task_id)
    assert row.status == "QUEUED"
    assert row.lease_owner is None
    assert row.lease_extensions == 0
    assert row.checkpoint_json == '{"saved":1}'  # the refused renewal's state is not kept
    assert service.audit_count(operation="agenttask.checkpoint") == MAX_LEASE_EXTENSIONS + 1
    with service.storage.read() as tx:
        assert tx.audit.recent(workspace="w", limit=1)[0].outcome == "LEASE_RUNAWAY"
    again = door(WORKER2, "agenttask.claim", {"taskId": task_id})
    assert again["task"]["checkpoint"] == {"saved": 1}
    assert again["lease"]["fence"] == 2


def test_a_renewal_past_the_wallclock_cap_is_lease_runaway(door, clock):
    hour = 3_600_000
    task_id = door.create()["taskId"]
    claim = door(WORKER, "agenttask.claim", {"taskId": task_id, "leaseMs": hour})
    cap_ms = claim["lease"]["wallClockCapMs"]  # what the claim's answer says
    assert cap_ms == LEASE_WALLCLOCK_CAP_SECONDS * 1000
    step = hour - 60_000
    renewals = 0
    while clock.now_ms() + step - START_MS <= cap_ms:
        clock.advance(step)
        view = door(WORKER, "agenttask.checkpoint", {"taskId": task_id})
        assert view["lease"]["expiresAtMs"] == clock.now_ms() + hour  # renewals keep the length
        renewals += 1
    assert renewals < MAX_LEASE_EXTENSIONS  # the count alone would not have tripped
    clock.advance(step)  # past the cap, the lease itself still live
    assert clock.now_ms() < door.row(task_id).lease_expires_at_ms
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id})
    assert err.code is ErrorCode.LEASE_RUNAWAY
    assert door.row(task_id).status == "QUEUED"


def test_a_claim_asking_for_more_than_the_maximum_lease_is_out_of_bounds(door):
    task_id = door.create()["taskId"]
    err = door.refused(WORKER, "agenttask.claim", {"taskId": task_id, "leaseMs": 10**9})
    assert err.code is ErrorCode.OUT_OF_BOUNDS
    assert err.path == "$.leaseMs"


def test_the_service_lease_cap_bounds_every_claim(tmp_path, clock):
    service = Service.open(tmp_path / "d", clock=clock, lease_max_ms=60_000)
    task_id = service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"}).json()["taskId"]
    claim = service.dispatch(WORKER, "agenttask.claim", {"taskId": task_id}).json()
    assert claim["lease"]["expiresAtMs"] == START_MS + 60_000
    service.close()


def test_a_terminal_checkpoint_is_exempt_from_the_runaway_guard(door):
    task_id = door.claimed()["task"]["taskId"]
    for _ in range(MAX_LEASE_EXTENSIONS):
        door(WORKER, "agenttask.checkpoint", {"taskId": task_id})
    view = door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    assert view["status"] == "DONE"


def test_an_oversized_checkpoint_is_refused_before_anything_is_written(door):
    task_id = door.claimed()["task"]["taskId"]
    before = door.row(task_id)
    big = {"blob": "x" * QUEUE_PAYLOAD_MAX_BYTES}
    err = door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, "checkpoint": big})
    assert err.code in (ErrorCode.PAYLOAD_TOO_LARGE,)
    assert door.row(task_id) == before


def test_a_revoked_token_cannot_checkpoint(tmp_path, clock):
    service = Service.open(tmp_path / "d", clock=clock)
    issued = issue_token(service.storage, clock, workspace="w", tier=Tier.AGENT, autonomy=1)
    worker = actor_from_record(issued.record)
    task_id = service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"}).json()["taskId"]
    service.dispatch(worker, "agenttask.claim", {"taskId": task_id})
    revoke_token(service.storage, clock, issued.record.token_id)
    with pytest.raises(TaskError) as info:
        service.dispatch(worker, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    assert info.value.code is ErrorCode.TOKEN_REVOKED
    with service.storage.read() as tx:
        assert tx.queue.get_task("w", task_id).status == "LEASED"
    service.close()


# -- release ------------------------------------------------------------------------------------


def test_release_requeues_with_the_checkpoint_intact_and_no_lease(door):
    task_id = door.claimed()["task"]["taskId"]
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "checkpoint": {"at": "half"}})
    view = door(WORKER, "agenttask.release", {"taskId": task_id, "fence": 1})
    assert view["status"] == "QUEUED"
    assert view["lease"] is None
    assert view["checkpoint"] == {"at": "half"}
    row = door.row(task_id)
    assert (row.lease_owner, row.first_leased_at_ms, row.lease_extensions) == (None, None, 0)
    again = door(WORKER2, "agenttask.claimNext")
    assert again["task"]["checkpoint"] == {"at": "half"}
    assert again["lease"]["fence"] == 2


def test_release_by_a_foreign_worker_or_of_a_queued_task_is_lease_not_held(door):
    task_id = door.claimed(WORKER)["task"]["taskId"]
    assert door.refused(WORKER2, "agenttask.release", {"taskId": task_id}).code is (
        ErrorCode.LEASE_NOT_HELD
    )
    queued = door.create()["taskId"]
    assert door.refused(WORKER, "agenttask.release", {"taskId": queued}).code is (
        ErrorCode.LEASE_NOT_HELD
    )


def test_release_of_a_terminal_task_is_an_illegal_transition(door):
    task_id = door.claimed()["task"]["taskId"]
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    err = door.refused(WORKER, "agenttask.release", {"taskId": task_id})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION


def test_release_with_a_stale_fence_is_refused(door):
    task_id = door.claimed()["task"]["taskId"]
    err = door.refused(WORKER, "agenttask.release", {"taskId": task_id, "fence": 2})
    assert err.code is ErrorCode.STALE_FENCE
    assert door.row(task_id).status == "LEASED"


# -- escalate -----------------------------------------------------------------------------------


def test_escalate_by_the_lease_holder_parks_the_task_behind_a_pending_gate(door):
    task_id = door.claimed()["task"]["taskId"]
    result = door(
        WORKER,
        "agenttask.escalate",
        {"taskId": task_id, "targetVerb": "repo.push", "inputHash": "a" * 64, "reason": "push"},
    )
    assert result["task"]["status"] == "ESCALATED"
    assert result["task"]["lease"] is None
    assert result["task"]["escalationGateId"] == result["gate"]["gateId"]
    assert result["gate"]["status"] == "PENDING"
    assert result["gate"]["targetVerb"] == "repo.push"
    assert result["gate"]["inputHash"] == "a" * 64
    assert result["gate"]["requestedBy"] == "worker"
    assert door.row(task_id).finished_at_ms is None


def test_escalate_of_a_queued_task_by_its_creator_or_an_admin(door):
    mine = door.create(MEMBER)["taskId"]
    assert door(MEMBER, "agenttask.escalate", {"taskId": mine})["task"]["status"] == "ESCALATED"
    other = door.create(MEMBER)["taskId"]
    assert door(ADMIN, "agenttask.escalate", {"taskId": other})["task"]["status"] == "ESCALATED"


def test_escalate_of_a_queued_task_by_anyone_else_is_lease_not_held(door):
    task_id = door.create(MEMBER)["taskId"]
    for caller in (MEMBER2, WORKER):
        err = door.refused(caller, "agenttask.escalate", {"taskId": task_id})
        assert err.code is ErrorCode.LEASE_NOT_HELD
    assert door.row(task_id).status == "QUEUED"


def test_escalate_of_a_leased_task_by_a_non_holder_is_lease_not_held(door):
    task_id = door.claimed(WORKER)["task"]["taskId"]
    for caller in (WORKER2, MEMBER):  # not even its creator while someone holds the lease
        err = door.refused(caller, "agenttask.escalate", {"taskId": task_id})
        assert err.code is ErrorCode.LEASE_NOT_HELD


def test_escalate_of_an_escalated_or_terminal_task_is_an_illegal_transition(door):
    escalated = door.create()["taskId"]
    door(MEMBER, "agenttask.escalate", {"taskId": escalated})
    assert door.refused(MEMBER, "agenttask.escalate", {"taskId": escalated}).code is (
        ErrorCode.ILLEGAL_TRANSITION
    )
    done = door.claimed()["task"]["taskId"]
    door(WORKER, "agenttask.checkpoint", {"taskId": done, "status": "DONE"})
    assert door.refused(ADMIN, "agenttask.escalate", {"taskId": done}).code is (
        ErrorCode.ILLEGAL_TRANSITION
    )


def test_escalate_with_a_stale_fence_is_refused(door):
    task_id = door.claimed()["task"]["taskId"]
    err = door.refused(WORKER, "agenttask.escalate", {"taskId": task_id, "fence": 3})
    assert err.code is ErrorCode.STALE_FENCE


def test_escalate_with_a_malformed_input_hash_is_invalid(door):
    task_id = door.claimed()["task"]["taskId"]
    err = door.refused(WORKER, "agenttask.escalate", {"taskId": task_id, "inputHash": "ABC"})
    assert err.code is ErrorCode.INVALID_VALUE
    assert err.path == "$.inputHash"


# -- fencing: the paused worker ------------------------------------------------------------------


def _paused_and_reclaimed(door, clock, successor):
    first = door.claimed(WORKER)
    task_id = first["task"]["taskId"]
    clock.advance(LEASE_DEFAULT_MS + 1)  # the worker pauses; its lease expires
    second = door(successor, "agenttask.claim", {"taskId": task_id})
    assert second["lease"]["fence"] == first["lease"]["fence"] + 1
    return task_id, first["lease"]["fence"]


@pytest.mark.parametrize(
    ("verb", "extra"),
    [
        ("agenttask.checkpoint", {"checkpoint": {"stale": True}}),
        ("agenttask.checkpoint", {"status": "DONE"}),
        ("agenttask.checkpoint", {"status": "FAILED"}),
        ("agenttask.release", {}),
        ("agenttask.escalate", {}),
        ("agenttask.checkpoint.write", {"phaseKey": "p", "state": {}, "outputs": []}),
    ],
)
def test_a_paused_worker_cannot_touch_a_task_its_successor_claimed(door, clock, verb, extra):
    # Another identity took over: refused by the owner guard, with or without the fence.
    task_id, old_fence = _paused_and_reclaimed(door, clock, WORKER2)
    before = door.row(task_id)
    assert door.refused(WORKER, verb, {"taskId": task_id, **extra}).code is (
        ErrorCode.LEASE_NOT_HELD
    )
    assert door.refused(WORKER, verb, {"taskId": task_id, "fence": old_fence, **extra}).code is (
        ErrorCode.STALE_FENCE
    )
    assert door.row(task_id) == before


@pytest.mark.parametrize(
    ("verb", "extra"),
    [
        ("agenttask.checkpoint", {"checkpoint": {"stale": True}}),
        ("agenttask.checkpoint", {"status": "DONE"}),
        ("agenttask.release", {}),
        ("agenttask.escalate", {}),
        ("agenttask.checkpoint.write", {"phaseKey": "p", "state": {}, "outputs": []}),
    ],
)
def test_a_paused_process_sharing_the_token_is_stopped_by_its_fence(door, clock, verb, extra):
    # The same token re-claimed from another process: only the fence tells them apart.
    task_id, old_fence = _paused_and_reclaimed(door, clock, WORKER)
    before = door.row(task_id)
    err = door.refused(WORKER, verb, {"taskId": task_id, "fence": old_fence, **extra})
    assert err.code is ErrorCode.STALE_FENCE
    assert door.row(task_id) == before


def test_a_paused_worker_cannot_finish_after_its_successor_finished(door, clock):
    task_id, old_fence = _paused_and_reclaimed(door, clock, WORKER2)
    door(WORKER2, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE", "fence": 2})
    err = door.refused(
        WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "FAILED", "fence": old_fence}
    )
    assert err.code is ErrorCode.STALE_FENCE
    assert door.row(task_id).status == "DONE"
