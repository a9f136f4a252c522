"""Waiting claims: ``agenttask.claimNext`` with ``waitMs``, in process, on both backends.

A claim with nothing to take waits for a commit that may free a task (a create, release,
requeue, approval) or for the time one becomes due (an expiring lease), holds no lock while it
waits, answers ``{claimed: false}`` at its deadline, and is audited once whatever happens.
Claimers of one verb and autonomy are woken one at a time; waiting calls are bounded per token
and per server. The doors (HTTP, MCP) are tested beside them in tests/taskhttp and tests/taskmcp.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from taskcore import Actor, ErrorCode, Service, Tier

from tests.taskcore.queue.support import ADMIN, MEMBER, WORKER, WORKER2

CLAIM = "agenttask.claimNext"


def _claims(service: Service) -> int:
    return service.audit_count(operation=CLAIM)


def _later(seconds: float, fn: Any, *args: Any, **kwargs: Any) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        fn(*args, **kwargs)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_without_wait_ms_an_empty_queue_answers_at_once(door, service):
    started = time.monotonic()
    assert door(WORKER, CLAIM, {}) == {"claimed": False}
    assert door(WORKER, CLAIM, {"waitMs": 0}) == {"claimed": False}
    assert time.monotonic() - started < 1.0
    assert _claims(service) == 2


def test_wait_ms_is_bounded_and_typed():
    # A decode check, before anything runs: no service needed.
    from taskcore.codec import decode
    from taskcore.errors import TaskError
    from taskcore.queue.requests import ClaimNextIn

    assert decode(ClaimNextIn, b'{"waitMs": 30000}').wait_ms == 30_000
    for bad, code in (
        (b'{"waitMs": 30001}', "OUT_OF_BOUNDS"),
        (b'{"waitMs": -1}', "OUT_OF_BOUNDS"),
    ):
        with pytest.raises(TaskError) as info:
            decode(ClaimNextIn, bad)
        assert info.value.code.value == code
        assert info.value.path == "$.waitMs"


def test_a_waiting_claim_times_out_with_claimed_false_audited_once(door, service):
    started = time.monotonic()
    assert door(WORKER, CLAIM, {"waitMs": 300}) == {"claimed": False}
    waited = time.monotonic() - started
    assert 0.28 <= waited < 3.0
    assert _claims(service) == 1
    assert service.waiters.held() == 0


def test_a_create_wakes_a_waiting_claimer_which_claims_it_audited_once(door, service):
    creator = _later(0.2, door.create)
    started = time.monotonic()
    answer = door(WORKER, CLAIM, {"waitMs": 10_000})
    took = time.monotonic() - started
    creator.join()
    assert answer["claimed"] is True
    assert answer["task"]["status"] == "LEASED"
    assert took < 5.0
    assert _claims(service) == 1


@pytest.mark.parametrize("freeing", ["release", "requeue", "approve"])
def test_every_commit_that_frees_a_task_wakes_a_waiting_claimer(door, service, freeing):
    claimed = door.claimed()
    task_id, fence = claimed["task"]["taskId"], claimed["lease"]["fence"]
    if freeing == "release":
        free = lambda: door(WORKER, "agenttask.release", {"taskId": task_id, "fence": fence})  # noqa: E731
    elif freeing == "requeue":
        door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "FAILED"})
        free = lambda: door(MEMBER, "agenttask.requeue", {"taskId": task_id})  # noqa: E731
    else:
        gate = door(WORKER, "agenttask.escalate", {"taskId": task_id, "fence": fence})["gate"]
        free = lambda: door(ADMIN, "agenttask.gate.approve", {"gateId": gate["gateId"]})  # noqa: E731
    freer = _later(0.2, free)
    answer = door(WORKER2, CLAIM, {"waitMs": 10_000})
    freer.join()
    assert answer["claimed"] is True
    assert answer["task"]["taskId"] == task_id


def test_one_create_wakes_one_claimer_of_a_group_and_the_next_create_the_next(door, service):
    workers = [
        Actor(token_id=f"w{i}", workspace="w", tier=Tier.AGENT, autonomy=1) for i in range(3)
    ]
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(door, w, CLAIM, {"waitMs": 4_000}) for w in workers]
        time.sleep(0.3)  # all three wait
        first = door.create()["taskId"]
        time.sleep(0.5)
        done = [f for f in futures if f.done()]
        assert len(done) == 1, "one create hands one task to one claimer"
        assert done[0].result()["task"]["taskId"] == first
        second = door.create()["taskId"]
        answers = [f.result() for f in futures]
    claimed = sorted(a["task"]["taskId"] for a in answers if a["claimed"])
    assert claimed == sorted([first, second])
    assert sum(not a["claimed"] for a in answers) == 1
    assert _claims(service) == 3  # one event per call, however many attempts each made


def test_claimers_of_another_verb_or_autonomy_are_not_handed_what_they_cannot_run(door, service):
    door(ADMIN, "agenttask.verb.register", {"verb": "repo.fix"})
    high = Actor(token_id="high", workspace="w", tier=Tier.AGENT, autonomy=3)
    with ThreadPoolExecutor(3) as pool:
        fixer = pool.submit(door, WORKER, CLAIM, {"verb": "repo.fix", "waitMs": 3_000})
        above = pool.submit(door, high, CLAIM, {"waitMs": 1_500})
        anyone = pool.submit(door, WORKER2, CLAIM, {"waitMs": 3_000})
        time.sleep(0.3)
        plain = door.create()["taskId"]  # agent.run, ceiling 2: not the fixer's, not `high`'s
        assert anyone.result()["task"]["taskId"] == plain
        fix = door.create(verb="repo.fix")["taskId"]
        assert fixer.result()["task"]["taskId"] == fix
        assert above.result() == {"claimed": False}


def test_waiting_claims_are_bounded_per_token_and_per_server(tmp_path, clock):
    service = Service.open(
        tmp_path / "bounded", clock=clock, claim_waiters_per_token=1, claim_waiters_max=2
    )
    try:
        other = Actor(token_id="other", workspace="w", tier=Tier.AGENT, autonomy=1)
        third = Actor(token_id="third", workspace="w", tier=Tier.AGENT, autonomy=1)
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(service.dispatch, WORKER, CLAIM, {"waitMs": 1_500})
            second = pool.submit(service.dispatch, other, CLAIM, {"waitMs": 1_500})
            time.sleep(0.3)
            assert service.waiters.held() == 2
            same_token = _refused(service, WORKER)
            assert same_token.code is ErrorCode.RATE_LIMITED
            full = _refused(service, third)
            assert full.code is ErrorCode.OVERLOADED
            assert full.retry_after
            first.result()
            second.result()
        assert service.waiters.held() == 0
        # Each call, refused or answered, is one audit event.
        assert service.audit_count(operation=CLAIM) == 4
        # The bound is on waiting: a claim that does not wait is never refused by it.
        assert service.dispatch(WORKER, CLAIM, {}).json() == {"claimed": False}
    finally:
        service.close()


def _refused(service: Service, actor: Actor):
    from taskcore import TaskError

    with pytest.raises(TaskError) as info:
        service.dispatch(actor, CLAIM, {"waitMs": 1_000})
    return info.value


def test_a_waiting_claimer_holds_no_writer_lock(door, service):
    # While a claim waits, other writes run at full speed (nothing is held).
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(door, WORKER, CLAIM, {"verb": "agent.run", "waitMs": 3_000})
        time.sleep(0.2)
        started = time.monotonic()
        for _ in range(5):
            door(ADMIN, "agenttask.verb.list", {})
        assert time.monotonic() - started < 2.0
        assert not waiting.done()
        door.create()
        assert waiting.result()["claimed"] is True


def test_a_lease_that_expires_wakes_a_waiting_claimer(tmp_path):
    # Time alone frees the task: no commit happens, the due time wakes the claimer. A real
    # clock, since the wake-up is scheduled in real time.
    service = Service.open(tmp_path / "real")
    try:
        task = service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"}).json()
        service.dispatch(WORKER, "agenttask.claim", {"taskId": task["taskId"], "leaseMs": 1_000})
        started = time.monotonic()
        answer = service.dispatch(WORKER2, CLAIM, {"waitMs": 10_000}).json()
        took = time.monotonic() - started
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] == task["taskId"]
        assert answer["lease"]["fence"] == 2
        assert 0.5 < took < 5.0
    finally:
        service.close()


def test_a_revoked_token_ends_the_wait_with_its_refusal(tmp_path):
    from taskcore import TaskError
    from taskcore.auth import issue_token, revoke_token
    from taskcore.clock import SystemClock

    service = Service.open(tmp_path / "revoke")
    try:
        issued = issue_token(
            service.storage, SystemClock(), workspace="w", tier=Tier.AGENT, autonomy=1
        )
        revoker = _later(0.3, revoke_token, service.storage, SystemClock(), issued.record.token_id)
        # A revocation is a commit; it does not signal the queue, so the claimer sees it at
        # its next attempt: the one a create made.
        creator = _later(0.6, service.dispatch, MEMBER, "agenttask.create", {"verb": "agent.run"})
        with pytest.raises(TaskError) as info:
            service.call(issued.token, CLAIM, {"waitMs": 5_000})
        revoker.join()
        creator.join()
        assert info.value.code is ErrorCode.TOKEN_REVOKED
        assert service.waiters.held() == 0
    finally:
        service.close()
