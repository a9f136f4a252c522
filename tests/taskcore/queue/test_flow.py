"""queue/flow.py: unique tasks, concurrency keys and limits, dependencies (both backends)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import attrs
import pytest
from taskcore import Actor, ErrorCode, FakeClock, Service, Tier
from taskcore.queue.flow import failed_parent

from tests.taskcore.queue.support import (
    ADMIN,
    MEMBER,
    MEMBER2,
    OUTSIDER,
    START_MS,
    WORKER,
    WORKER2,
)

CLAIM_NEXT = "agenttask.claimNext"
MISSING = "at_" + "f" * 32


def _done(door, task_id: str, actor=WORKER) -> None:
    lease = door(actor, "agenttask.claim", {"taskId": task_id})["lease"]
    door(
        actor,
        "agenttask.checkpoint",
        {"taskId": task_id, "status": "DONE", "fence": lease["fence"]},
    )


def _fail(door, task_id: str, actor=WORKER) -> None:
    lease = door(actor, "agenttask.claim", {"taskId": task_id})["lease"]
    door(
        actor,
        "agenttask.checkpoint",
        {"taskId": task_id, "status": "FAILED", "fence": lease["fence"], "lastError": "boom"},
    )


def _claim_next(door, actor=WORKER) -> str | None:
    answer = door(actor, CLAIM_NEXT, {})
    return answer["task"]["taskId"] if answer["claimed"] else None


# -- unique tasks -------------------------------------------------------------------------------


def test_a_create_with_a_live_tasks_unique_key_answers_that_task(door, service):
    first = door.create(MEMBER, uniqueKey="issue-12")
    assert first["uniqueKey"] == "issue-12"
    assert "deduplicated" not in first
    again = door.create(MEMBER2, uniqueKey="issue-12", payload={"other": True})
    assert again["taskId"] == first["taskId"]
    assert again["deduplicated"] is True
    assert len(door(ADMIN, "agenttask.list", {})["tasks"]) == 1
    assert service.audit_count(operation="agenttask.create") == 2  # the dedup is audited


def test_the_dedup_audit_event_names_the_task_it_answered(door, service):
    first = door.create(MEMBER, uniqueKey="k")
    door.create(MEMBER, uniqueKey="k")
    with service.storage.read() as tx:
        events = [
            e for e in tx.audit.after(0, up_to=10**9, limit=50) if e.operation == "agenttask.create"
        ]
    assert [e.subject for e in events] == [first["taskId"], first["taskId"]]
    assert (events[-1].status_before, events[-1].status_after) == ("QUEUED", "QUEUED")


def test_unique_keys_are_per_workspace(door):
    mine = door.create(MEMBER, uniqueKey="k")
    theirs = door.create(OUTSIDER, uniqueKey="k")
    assert mine["taskId"] != theirs["taskId"]
    assert "deduplicated" not in theirs


def test_a_leased_holder_still_holds_its_key(door):
    first = door.create(MEMBER, uniqueKey="k")
    door(WORKER, "agenttask.claim", {"taskId": first["taskId"]})
    assert door.create(MEMBER, uniqueKey="k")["taskId"] == first["taskId"]


def test_an_ended_task_frees_its_key_without_unique_for(door):
    first = door.create(MEMBER, uniqueKey="k")
    _done(door, first["taskId"])
    second = door.create(MEMBER, uniqueKey="k")
    assert second["taskId"] != first["taskId"]
    assert "deduplicated" not in second
    assert door.create(MEMBER, uniqueKey="k")["taskId"] == second["taskId"]


def test_unique_for_holds_the_key_past_the_tasks_end(door, clock):
    first = door.create(MEMBER, uniqueKey="k", uniqueFor=60_000)
    _done(door, first["taskId"])
    clock.advance(59_999)
    again = door.create(MEMBER, uniqueKey="k")
    assert (again["taskId"], again["deduplicated"], again["status"]) == (
        first["taskId"],
        True,
        "DONE",
    )
    clock.advance(1)
    assert door.create(MEMBER, uniqueKey="k")["taskId"] != first["taskId"]


def test_unique_for_without_unique_key_is_refused(door):
    err = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run", "uniqueFor": 5})
    assert (err.code, err.path) == (ErrorCode.BAD_INPUT, "$.uniqueFor")


def test_a_dedup_still_refuses_an_unregistered_verb(door):
    door.create(MEMBER, uniqueKey="k")
    err = door.refused(MEMBER, "agenttask.create", {"verb": "nope.verb", "uniqueKey": "k"})
    assert err.code is ErrorCode.INVALID_VALUE


# -- concurrency keys ---------------------------------------------------------------------------


def test_a_key_without_a_limit_admits_one_lease(door):
    a = door.create(MEMBER, concurrencyKey="repo-1")
    b = door.create(MEMBER, concurrencyKey="repo-1")
    other = door.create(MEMBER, concurrencyKey="repo-2")
    assert a["concurrencyKey"] == "repo-1"
    assert _claim_next(door, WORKER) == a["taskId"]
    assert _claim_next(door, WORKER2) == other["taskId"]
    assert _claim_next(door, WORKER2) is None
    door(WORKER, "agenttask.release", {"taskId": a["taskId"]})
    assert _claim_next(door, WORKER2) == a["taskId"]
    assert b["taskId"] not in {a["taskId"], other["taskId"]}


def test_limit_set_raises_a_keys_limit_and_list_shows_the_leases(door):
    for _ in range(3):
        door.create(MEMBER, concurrencyKey="gpu")
    set_ = door(ADMIN, "agenttask.limit.set", {"key": "gpu", "max": 2})
    assert (set_["key"], set_["max"], set_["leased"], set_["setBy"]) == ("gpu", 2, 0, "admin")
    assert _claim_next(door, WORKER) is not None
    assert _claim_next(door, WORKER2) is not None
    assert _claim_next(door, WORKER2) is None
    listed = door(ADMIN, "agenttask.limit.list", {})
    assert listed["defaultMax"] == 1
    assert [(x["key"], x["max"], x["leased"]) for x in listed["limits"]] == [("gpu", 2, 2)]


def test_a_limit_of_zero_holds_every_task_of_the_key(door):
    door.create(MEMBER, concurrencyKey="frozen")
    door(ADMIN, "agenttask.limit.set", {"key": "frozen", "max": 0})
    assert _claim_next(door) is None


def test_limit_set_is_admin_only(door):
    err = door.refused(MEMBER, "agenttask.limit.set", {"key": "k", "max": 3})
    assert err.code is ErrorCode.FORBIDDEN


def test_an_expired_lease_frees_its_keys_slot(door, clock):
    a = door.create(MEMBER, concurrencyKey="k")
    b = door.create(MEMBER, concurrencyKey="k")
    door(WORKER, "agenttask.claim", {"taskId": a["taskId"], "leaseMs": 60_000})
    assert _claim_next(door, WORKER2) is None
    clock.advance(60_000)
    assert _claim_next(door, WORKER2) in {a["taskId"], b["taskId"]}


def test_claim_by_id_of_a_task_whose_key_is_full_is_conflict(door):
    a = door.create(MEMBER, concurrencyKey="k")
    b = door.create(MEMBER, concurrencyKey="k")
    door(WORKER, "agenttask.claim", {"taskId": a["taskId"]})
    err = door.refused(WORKER2, "agenttask.claim", {"taskId": b["taskId"]})
    assert (err.code, err.details["concurrencyKey"]) == (ErrorCode.CONFLICT, "k")


def test_finishing_a_keyed_task_lets_the_next_one_run(door):
    a = door.create(MEMBER, concurrencyKey="k")
    b = door.create(MEMBER, concurrencyKey="k")
    _done(door, a["taskId"])
    assert _claim_next(door, WORKER2) == b["taskId"]


# -- dependencies -------------------------------------------------------------------------------


def test_a_child_waits_for_every_parent_to_be_done(door):
    p1 = door.create(MEMBER)
    p2 = door.create(MEMBER)
    child = door.create(MEMBER, after=[p1["taskId"], p2["taskId"]])
    assert child["after"] == [p1["taskId"], p2["taskId"]]
    assert child["blockedBy"] == [p1["taskId"], p2["taskId"]]
    _done(door, p1["taskId"])
    assert door(MEMBER, "agenttask.get", {"taskId": child["taskId"]})["blockedBy"] == [p2["taskId"]]
    assert _claim_next(door, WORKER) == p2["taskId"]  # the child is passed over
    assert _claim_next(door, WORKER2) is None
    door(WORKER, "agenttask.checkpoint", {"taskId": p2["taskId"], "status": "DONE"})
    assert _claim_next(door, WORKER2) == child["taskId"]


def test_claim_next_passes_over_a_blocked_child(door):
    parent = door.create(MEMBER)
    child = door.create(MEMBER, after=[parent["taskId"]])
    door(ADMIN, "agenttask.reorder", {"taskId": child["taskId"], "priority": 9})
    assert _claim_next(door, WORKER) == parent["taskId"]
    assert _claim_next(door, WORKER2) is None
    door(
        WORKER,
        "agenttask.checkpoint",
        {"taskId": parent["taskId"], "status": "DONE"},
    )
    shown = door(MEMBER, "agenttask.get", {"taskId": child["taskId"]})
    assert "blockedBy" not in shown
    assert _claim_next(door, WORKER2) == child["taskId"]


def test_claim_by_id_of_a_blocked_child_is_dependency_incomplete(door):
    parent = door.create(MEMBER)
    child = door.create(MEMBER, after=[parent["taskId"]])
    err = door.refused(WORKER, "agenttask.claim", {"taskId": child["taskId"]})
    assert err.code is ErrorCode.DEPENDENCY_INCOMPLETE
    assert err.details["blockedBy"] == [parent["taskId"]]


@pytest.mark.parametrize("end", ["FAILED", "CANCELLED"])
def test_a_parent_that_ends_badly_fails_its_children_and_theirs(door, end):
    parent = door.create(MEMBER)
    child = door.create(MEMBER, after=[parent["taskId"]])
    grandchild = door.create(MEMBER, after=[child["taskId"]])
    if end == "FAILED":
        _fail(door, parent["taskId"])
    else:
        door(MEMBER, "agenttask.cancel", {"taskId": parent["taskId"]})
    shown = door(MEMBER, "agenttask.get", {"taskId": child["taskId"]})
    assert shown["status"] == "FAILED"
    assert shown["lastError"] == f"parent {parent['taskId']} ended {end}"
    assert shown["blockedBy"] == [parent["taskId"]]
    deeper = door(MEMBER, "agenttask.get", {"taskId": grandchild["taskId"]})
    assert deeper["lastError"] == f"parent {child['taskId']} ended FAILED"


def test_a_child_of_an_already_failed_parent_is_created_failed(door):
    parent = door.create(MEMBER)
    door(MEMBER, "agenttask.cancel", {"taskId": parent["taskId"]})
    child = door.create(MEMBER, after=[parent["taskId"]])
    assert (child["status"], child["lastError"]) == (
        "FAILED",
        f"parent {parent['taskId']} ended CANCELLED",
    )


def test_after_must_name_existing_tasks_of_the_workspace_once(door):
    mine = door.create(MEMBER)
    theirs = door.create(OUTSIDER)
    err = door.refused(
        MEMBER, "agenttask.create", {"verb": "agent.run", "after": [mine["taskId"], MISSING]}
    )
    assert (err.code, err.path) == (ErrorCode.NOT_FOUND, "$.after[1]")
    err = door.refused(
        MEMBER, "agenttask.create", {"verb": "agent.run", "after": [theirs["taskId"]]}
    )
    assert (err.code, err.path) == (ErrorCode.NOT_FOUND, "$.after[0]")
    err = door.refused(
        MEMBER, "agenttask.create", {"verb": "agent.run", "after": [mine["taskId"]] * 2}
    )
    assert (err.code, err.path) == (ErrorCode.BAD_INPUT, "$.after[1]")


def test_after_takes_at_most_32_parents(door):
    err = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run", "after": ["at_1"] * 33})
    assert err.path == "$.after"


def test_failed_parent_names_the_first_parent_that_ended_badly():
    assert (
        failed_parent({"a": "FAILED", "b": "CANCELLED"}, ("b", "a")) == "parent b ended CANCELLED"
    )
    assert failed_parent({"a": "DONE"}, ("a",)) is None


# -- under concurrent callers (real threads, a real journal) -----------------------------------


def test_concurrent_creates_of_one_unique_key_make_exactly_one_task(door, service):
    creators = [
        Actor(token_id=f"creator{i}", workspace="w", tier=Tier.MEMBER, autonomy=2)
        for i in range(12)
    ]
    start = threading.Barrier(len(creators))

    def create(actor: Actor) -> dict:
        start.wait()
        return door.create(actor, uniqueKey="one-issue")

    with ThreadPoolExecutor(len(creators)) as pool:
        answers = list(pool.map(create, creators))
    assert len({a["taskId"] for a in answers}) == 1
    assert sum(1 for a in answers if not a.get("deduplicated")) == 1
    assert len(door(ADMIN, "agenttask.list", {})["tasks"]) == 1
    assert service.audit_count(operation="agenttask.create") == len(creators)


def test_concurrent_claimers_never_exceed_a_keys_limit(door, service):
    tasks = [door.create(MEMBER, concurrencyKey="repo")["taskId"] for _ in range(12)]
    door(ADMIN, "agenttask.limit.set", {"key": "repo", "max": 2})
    workers = [
        Actor(token_id=f"drainer{i}", workspace="w", tier=Tier.AGENT, autonomy=1) for i in range(8)
    ]
    lock = threading.Lock()
    holding = [0]
    most = [0]
    finished: list[str] = []

    def drain(worker: Actor) -> None:
        idle = 0
        while idle < 40:
            answer = door(worker, CLAIM_NEXT, {})
            if not answer["claimed"]:
                idle += 1
                time.sleep(0.005)
                continue
            with lock:  # counted after the claim commits, uncounted before the end commits
                holding[0] += 1
                most[0] = max(most[0], holding[0])
            time.sleep(0.01)
            task_id = answer["task"]["taskId"]
            with lock:
                holding[0] -= 1
                finished.append(task_id)
            fence = answer["lease"]["fence"]
            door(
                worker,
                "agenttask.checkpoint",
                {"taskId": task_id, "status": "DONE", "fence": fence},
            )

    with ThreadPoolExecutor(len(workers)) as pool:
        list(pool.map(drain, workers))
    assert sorted(finished) == sorted(tasks)  # each DONE once
    assert most[0] <= 2
    listed = door(ADMIN, "agenttask.limit.list", {})["limits"]
    assert listed == [
        {"key": "repo", "max": 2, "leased": 0, "setBy": "admin", "setAtMs": listed[0]["setAtMs"]}
    ]


def test_a_waiting_claimer_is_woken_when_a_keyed_task_ends(door):
    a = door.create(MEMBER, concurrencyKey="k")
    b = door.create(MEMBER, concurrencyKey="k")
    lease = door(WORKER, "agenttask.claim", {"taskId": a["taskId"]})["lease"]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(door, WORKER2, CLAIM_NEXT, {"waitMs": 10_000})
        time.sleep(0.2)
        assert not waiting.done()
        started = time.monotonic()
        door(
            WORKER,
            "agenttask.checkpoint",
            {"taskId": a["taskId"], "status": "DONE", "fence": lease["fence"]},
        )
        answer = waiting.result(timeout=10)
    assert answer["task"]["taskId"] == b["taskId"]
    assert time.monotonic() - started < 5


def test_a_waiting_claimer_is_woken_when_a_parent_is_done(door):
    parent = door.create(MEMBER)
    child = door.create(MEMBER, after=[parent["taskId"]])
    lease = door(WORKER, "agenttask.claim", {"taskId": parent["taskId"]})["lease"]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(door, WORKER2, CLAIM_NEXT, {"waitMs": 10_000})
        time.sleep(0.2)
        assert not waiting.done()
        door(
            WORKER,
            "agenttask.checkpoint",
            {"taskId": parent["taskId"], "status": "DONE", "fence": lease["fence"]},
        )
        answer = waiting.result(timeout=10)
    assert answer["task"]["taskId"] == child["taskId"]


def test_two_parents_failing_at_once_both_succeed_and_fail_the_child_once(door):
    for _ in range(5):
        p1, p2 = door.create(MEMBER), door.create(MEMBER)
        child = door.create(MEMBER, after=[p1["taskId"], p2["taskId"]])
        leases = [
            door(worker, "agenttask.claim", {"taskId": parent["taskId"]})["lease"]
            for worker, parent in ((WORKER, p1), (WORKER2, p2))
        ]
        start = threading.Barrier(2)

        def fail(worker: Actor, lease: dict, start: threading.Barrier = start) -> dict:
            start.wait()
            body = {"taskId": lease["taskId"], "status": "FAILED", "fence": lease["fence"]}
            return door(worker, "agenttask.checkpoint", body)

        with ThreadPoolExecutor(2) as pool:
            ended = list(pool.map(fail, (WORKER, WORKER2), leases))
        assert [e["status"] for e in ended] == ["FAILED", "FAILED"]
        shown = door(MEMBER, "agenttask.get", {"taskId": child["taskId"]})
        assert shown["status"] == "FAILED"
        assert shown["lastError"] in {
            f"parent {p1['taskId']} ended FAILED",
            f"parent {p2['taskId']} ended FAILED",
        }


def test_a_waiting_claimer_is_woken_when_a_limit_is_raised(door):
    a = door.create(MEMBER, concurrencyKey="k")
    b = door.create(MEMBER, concurrencyKey="k")
    door(WORKER, "agenttask.claim", {"taskId": a["taskId"]})
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(door, WORKER2, CLAIM_NEXT, {"waitMs": 10_000})
        time.sleep(0.2)
        assert not waiting.done()
        door(ADMIN, "agenttask.limit.set", {"key": "k", "max": 2})
        answer = waiting.result(timeout=10)
    assert answer["task"]["taskId"] == b["taskId"]


def test_a_claim_that_meets_a_gated_task_it_did_not_expect_goes_through_the_gate(door, service):
    """PostgreSQL's race, made by hand: the claim decided the workspace had no gated task, and
    then finds one (a create committed in between); it claims again through the gate."""
    a = door.create(MEMBER, concurrencyKey="k")
    b = door.create(MEMBER, concurrencyKey="k")
    door(WORKER, "agenttask.claim", {"taskId": a["taskId"]})
    with service.storage.read() as tx:
        queue = type(tx.queue)
    opening = queue.claim_opening
    candidate = queue.claim_candidate
    gates: list[bool] = []

    def seen(self, workspace, **kw):
        gates.append(kw.get("gated", False))
        return candidate(self, workspace, **kw)

    def unexpected(self, workspace, *, max_autonomy, autonomy, verb, now_ms):
        # The opening's context saw no gated task; its claim then met one.
        context, _, _ = opening(
            self, workspace, max_autonomy=max_autonomy, autonomy=autonomy, verb=verb, now_ms=now_ms
        )
        assert context.gated  # the real context does see the gate
        task, flow = self.claim_candidate(
            workspace,
            max_autonomy=max_autonomy,
            autonomy=autonomy,
            verb=verb,
            now_ms=now_ms,
            paused=context.paused,
            gated=False,
        )
        return attrs.evolve(context, gated=False, keyed=None), task, flow

    queue.claim_opening = unexpected
    queue.claim_candidate = seen
    try:
        assert _claim_next(door, WORKER2) is None
    finally:
        queue.claim_opening = opening
        queue.claim_candidate = candidate
    assert gates == [False, True]  # found the gated task, then claimed through the gate
    assert door(MEMBER, "agenttask.get", {"taskId": b["taskId"]})["status"] == "QUEUED"


def test_a_child_failed_by_its_parent_is_requeued_only_after_the_parent(door):
    parent = door.create(MEMBER)
    child = door.create(MEMBER, after=[parent["taskId"]])
    _fail(door, parent["taskId"])
    err = door.refused(MEMBER, "agenttask.requeue", {"taskId": child["taskId"]})
    assert err.code is ErrorCode.DEPENDENCY_INCOMPLETE
    assert err.details["blockedBy"] == [parent["taskId"]]
    door(MEMBER, "agenttask.requeue", {"taskId": parent["taskId"]})
    requeued = door(MEMBER, "agenttask.requeue", {"taskId": child["taskId"]})
    assert (requeued["status"], requeued["blockedBy"]) == ("QUEUED", [parent["taskId"]])
    _done(door, parent["taskId"])
    assert _claim_next(door, WORKER2) == child["taskId"]


# -- across processes (each its own Service on the one journal) ---------------------------------


def _create_keys(data_dir: str, name: str, keys: list[str]) -> list[tuple[str, str]]:
    service = Service.open(data_dir, clock=FakeClock(START_MS), busy_timeout_ms=120_000)
    me = Actor(token_id=name, workspace="w", tier=Tier.MEMBER, autonomy=2)
    try:
        return [
            (key, door_json(service, me, {"verb": "agent.run", "uniqueKey": key})["taskId"])
            for key in keys
        ]
    finally:
        service.close()


def _drain_keyed(data_dir: str, name: str) -> tuple[int, int]:
    """Claim and finish keyed tasks; return (tasks done, most live leases of the key seen)."""
    service = Service.open(data_dir, clock=FakeClock(START_MS), busy_timeout_ms=120_000)
    me = Actor(token_id=name, workspace="w", tier=Tier.AGENT, autonomy=1)
    done = most = 0
    try:
        while True:
            claim = door_json(service, me, {}, verb=CLAIM_NEXT)
            if not claim["claimed"]:
                return done, most
            with service.storage.read() as tx:  # after the claim's commit, before its end
                most = max(most, tx.queueflow.key_leased("w", "repo", START_MS))
            time.sleep(0.005)
            body = {"taskId": claim["task"]["taskId"], "status": "DONE"}
            door_json(
                service, me, {**body, "fence": claim["lease"]["fence"]}, "agenttask.checkpoint"
            )
            done += 1
    finally:
        service.close()


def door_json(service: Service, actor: Actor, body: dict, verb: str = "agenttask.create") -> dict:
    answer: dict = service.dispatch(actor, verb, body).json()
    return answer


@pytest.mark.slow
def test_processes_creating_the_same_unique_keys_make_one_task_per_key(tmp_path):
    data_dir = tmp_path / "data"
    Service.open(data_dir, clock=FakeClock(START_MS)).close()
    keys = [f"issue-{n}" for n in range(20)]
    orders = [keys[n:] + keys[:n] for n in range(0, 20, 4)]  # each process its own order
    with multiprocessing.get_context("spawn").Pool(len(orders)) as pool:
        results = pool.starmap(
            _create_keys, [(str(data_dir), f"creator-{n}", order) for n, order in enumerate(orders)]
        )
    by_key: dict[str, set[str]] = {}
    for key, task_id in (pair for result in results for pair in result):
        by_key.setdefault(key, set()).add(task_id)
    assert all(len(ids) == 1 for ids in by_key.values()), by_key
    service = Service.open(data_dir, clock=FakeClock(START_MS))
    try:
        assert len(service.dispatch(ADMIN, "agenttask.list", {}).json()["tasks"]) == len(keys)
    finally:
        service.close()


@pytest.mark.slow
def test_processes_draining_a_key_never_hold_more_than_its_limit(tmp_path):
    data_dir = tmp_path / "data"
    service = Service.open(data_dir, clock=FakeClock(START_MS))
    for _ in range(40):
        door_json(service, MEMBER, {"verb": "agent.run", "concurrencyKey": "repo"})
    service.dispatch(ADMIN, "agenttask.limit.set", {"key": "repo", "max": 2})
    service.close()
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        results = pool.starmap(_drain_keyed, [(str(data_dir), f"drainer-{n}") for n in range(6)])
    assert sum(done for done, _ in results) == 40
    assert max(most for _, most in results) <= 2


def test_a_keyed_lease_that_expires_wakes_a_claimer_waiting_on_the_key(tmp_path):
    # No commit frees the key's slot: the lease's expiry is the due time that wakes the
    # claimer. A real clock, since the wake-up is scheduled in real time.
    service = Service.open(tmp_path / "real")
    try:
        a = door_json(service, MEMBER, {"verb": "agent.run", "concurrencyKey": "k"})
        b = door_json(service, MEMBER, {"verb": "agent.run", "concurrencyKey": "k"})
        claim = {"taskId": a["taskId"], "leaseMs": 1_000}
        door_json(service, WORKER, claim, "agenttask.claim")
        started = time.monotonic()
        answer = door_json(service, WORKER2, {"waitMs": 10_000}, CLAIM_NEXT)
        took = time.monotonic() - started
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] in {a["taskId"], b["taskId"]}
        assert 0.5 < took < 5.0
    finally:
        service.close()


# -- with retries (docs/queue.md "Retries"): a dead-lettered parent ----------------------------


def _dead_letter(door, clock, task_id: str) -> None:
    """Lapse the lease at each of the task's two attempts: it reads FAILED, nothing written."""
    for worker in (WORKER, WORKER2):
        door(worker, "agenttask.claim", {"taskId": task_id, "leaseMs": 1_000})
        clock.advance(1_001)
    assert door(MEMBER, "agenttask.get", {"taskId": task_id})["status"] == "FAILED"


def test_a_child_of_a_parent_dead_lettered_by_lapses_is_created_failed(door, clock):
    parent = door.create(MEMBER, maxAttempts=2, backoff={"initialMs": 1, "maxMs": 1})
    _dead_letter(door, clock, parent["taskId"])
    child = door.create(MEMBER, after=[parent["taskId"]])
    assert (child["status"], child["lastError"]) == (
        "FAILED",
        f"parent {parent['taskId']} ended FAILED",
    )


def test_a_child_waits_on_a_parent_dead_lettered_by_lapses_until_it_is_retried(door, clock):
    parent = door.create(MEMBER, maxAttempts=2, backoff={"initialMs": 1, "maxMs": 1})
    child = door.create(MEMBER, after=[parent["taskId"]])
    _dead_letter(door, clock, parent["taskId"])
    # Read-time dead letter: nothing was written, so nothing failed the child; it waits.
    shown = door(MEMBER, "agenttask.get", {"taskId": child["taskId"]})
    assert (shown["status"], shown["blockedBy"]) == ("QUEUED", [parent["taskId"]])
    assert _claim_next(door, WORKER) is None
    door(MEMBER, "agenttask.requeue", {"taskId": parent["taskId"]})  # the dead letter's retry
    _done(door, parent["taskId"])
    assert _claim_next(door, WORKER2) == child["taskId"]


# -- with the bulk acts (agenttask.requeueMany / cancelMany) ----------------------------------


def test_cancel_many_over_a_parent_and_its_children_counts_the_cascaded_as_skipped(door):
    parent = door.create(MEMBER)["taskId"]
    children = [door.create(MEMBER, after=[parent])["taskId"] for _ in range(2)]
    answer = door(ADMIN, "agenttask.cancelMany", {})
    assert (answer["taskIds"], answer["skipped"]) == ([parent], 2)  # the cascade failed them
    for child in children:
        shown = door(MEMBER, "agenttask.get", {"taskId": child})
        assert (shown["status"], shown["lastError"]) == (
            "FAILED",
            f"parent {parent} ended CANCELLED",
        )


def test_requeue_many_requeues_parents_before_children_and_skips_orphans(door):
    door(ADMIN, "agenttask.verb.register", {"verb": "other.run"})
    parent = door.create(MEMBER)["taskId"]
    child = door.create(MEMBER, after=[parent])["taskId"]
    door(ADMIN, "agenttask.reorder", {"taskId": child, "priority": 5})  # first in drain order
    _fail(door, parent)
    lone = door.create(MEMBER, verb="other.run")["taskId"]
    orphan = door.create(MEMBER, after=[lone])["taskId"]
    door(MEMBER, "agenttask.cancel", {"taskId": lone})
    answer = door(ADMIN, "agenttask.requeueMany", {"verb": "agent.run"})
    assert sorted(answer["taskIds"]) == sorted([parent, child])
    assert answer["skipped"] == 1  # the orphan: its parent is CANCELLED and not requeued
    assert door(MEMBER, "agenttask.get", {"taskId": orphan})["status"] == "FAILED"
    assert door(MEMBER, "agenttask.get", {"taskId": child})["blockedBy"] == [parent]
