"""Retries with back-off (maxAttempts, backoff) and the dead-letter set, on both backends.

docs/queue.md "Retries": a FAILED checkpoint, a lapsed lease and a runaway requeue each count
an attempt; below maxAttempts the task is QUEUED again with runAt = now + back-off and attempt
+ 1; at the last it stays FAILED (listed by status FAILED, retried by agenttask.requeue).
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from taskcore import ErrorCode, FakeClock, Service
from taskcore.limits import (
    BACKOFF_MAX_MS,
    BACKOFF_MULTIPLIER_MAX,
    MAX_LEASE_EXTENSIONS,
)
from taskcore.queue.retry import backoff_cap, backoff_delay, claim_changes, failure_changes
from taskcore.store.queue_api import TaskRecord

from tests.taskcore.queue.support import ADMIN, MEMBER, START_MS, WORKER, WORKER2

CLAIM = "agenttask.claimNext"
BACKOFF = {"initialMs": 1_000, "maxMs": 8_000, "multiplier": 2.0}


# -- the back-off schedule (property) ------------------------------------------------------------

_initial = st.integers(1, BACKOFF_MAX_MS)
_multiplier = st.floats(1.0, BACKOFF_MULTIPLIER_MAX, allow_nan=False)


@given(
    attempt=st.integers(1, 1000),
    initial=_initial,
    extra=st.integers(0, BACKOFF_MAX_MS),
    multiplier=_multiplier,
    seed=st.integers(0, 2**32),
)
def test_a_back_off_is_within_zero_and_its_cap_and_the_cap_within_max(
    attempt: int, initial: int, extra: int, multiplier: float, seed: int
) -> None:
    maximum = min(initial + extra, BACKOFF_MAX_MS)
    rules = {"initial_ms": initial, "max_ms": maximum, "multiplier": multiplier}
    cap = backoff_cap(attempt, **rules)
    assert min(initial, maximum) <= cap <= maximum
    rng = random.Random(seed)
    delay = backoff_delay(attempt, **rules, draw=rng.randrange)
    assert 0 <= delay <= cap


@given(initial=_initial, extra=st.integers(0, BACKOFF_MAX_MS), multiplier=_multiplier)
def test_the_caps_never_shrink_and_reach_max(initial: int, extra: int, multiplier: float) -> None:
    maximum = min(initial + extra, BACKOFF_MAX_MS)
    rules = {"initial_ms": initial, "max_ms": maximum, "multiplier": multiplier}
    caps = [backoff_cap(n, **rules) for n in range(1, 60)]
    assert caps == sorted(caps)
    assert caps[0] == initial
    if multiplier >= 1.5:
        assert caps[-1] == maximum


def test_full_jitter_draws_over_the_whole_range():
    rules = {"initial_ms": 100, "max_ms": 100, "multiplier": 2.0}
    assert backoff_delay(1, **rules, draw=lambda n: 0) == 0
    assert backoff_delay(1, **rules, draw=lambda n: n - 1) == 100


def _record(**changes: Any) -> TaskRecord:
    base = TaskRecord(
        task_id="at_1", workspace="w", verb="agent.run", payload_json=None, status="LEASED",
        priority=0, autonomy_ceiling=1, depth=0, parent_task_id=None, run_id=None,
        matter_id=None, matter_step_id=None, created_by="m", created_at_ms=0, updated_at_ms=0,
        lease_owner="w", lease_expires_at_ms=100, first_leased_at_ms=0, heartbeat_at_ms=0,
    )  # fmt: skip
    return attrs.evolve(base, **changes)


def test_a_task_that_never_retries_changes_nothing_on_claim_or_failure():
    task = _record()
    assert claim_changes(task, 50) == {}
    assert failure_changes(task, 50) is None


def test_a_failure_below_the_last_attempt_schedules_the_next():
    task = _record(max_attempts=3, attempt=2, backoff_initial_ms=10, backoff_max_ms=10)
    changes = failure_changes(task, 1_000)
    assert changes is not None
    assert changes["attempt"] == 3
    assert 1_000 <= changes["run_at_ms"] <= 1_010
    assert failure_changes(attrs.evolve(task, attempt=3), 1_000) is None


# -- FAILED checkpoints --------------------------------------------------------------------------


def _claim(door, actor=WORKER) -> dict[str, Any]:
    answer = door(actor, CLAIM, {})
    assert answer["claimed"] is True
    return answer


def _fail(door, claim: dict[str, Any], error: str = "boom") -> dict[str, Any]:
    return door(
        WORKER,
        "agenttask.checkpoint",
        {
            "taskId": claim["task"]["taskId"],
            "status": "FAILED",
            "lastError": error,
            "fence": claim["lease"]["fence"],
        },
    )


def test_a_failed_attempt_below_max_is_queued_again_after_its_back_off(door, clock):
    task = door.create(maxAttempts=3, backoff=BACKOFF)
    assert task["backoff"] == BACKOFF
    after = _fail(door, _claim(door))
    assert after["status"] == "QUEUED"
    assert after["attempt"] == 2
    assert after["maxAttempts"] == 3
    assert after["lastError"] == "boom"
    assert after["finishedAtMs"] is None
    assert START_MS <= after["runAtMs"] <= START_MS + 1_000
    clock.advance(after["runAtMs"] - START_MS)
    second = _claim(door)
    assert second["task"]["attempt"] == 2
    third = _fail(door, second)
    assert third["attempt"] == 3
    assert third["runAtMs"] <= clock.now_ms() + 2_000
    clock.advance(2_000)
    last = _fail(door, _claim(door))
    assert last["status"] == "FAILED"
    assert last["attempt"] == 3
    assert last["finishedAtMs"] == clock.now_ms()


def test_the_default_is_one_attempt_and_failed_is_final(door):
    door.create()
    after = _fail(door, _claim(door))
    assert (after["status"], after["attempt"], after["maxAttempts"]) == ("FAILED", 1, 1)


def test_the_dead_letter_set_is_listed_by_status_and_requeue_starts_again(door, clock):
    task = door.create(maxAttempts=2, backoff={"initialMs": 1, "maxMs": 1, "multiplier": 1.0})
    _fail(door, _claim(door))
    clock.advance(5)
    dead = _fail(door, _claim(door))
    assert dead["status"] == "FAILED"
    failed = door(ADMIN, "agenttask.list", {"status": "FAILED"})["tasks"]
    assert [t["taskId"] for t in failed] == [task["taskId"]]
    again = door(MEMBER, "agenttask.requeue", {"taskId": task["taskId"]})
    assert (again["status"], again["attempt"], again["runAtMs"]) == ("QUEUED", 1, None)
    assert _claim(door)["task"]["attempt"] == 1


def test_backoff_bounds_are_typed(door):
    bad = door.refused(
        MEMBER,
        "agenttask.create",
        {"verb": "agent.run", "backoff": {"initialMs": 10, "maxMs": 5}},
    )
    assert (bad.code, bad.path) == (ErrorCode.INVALID_VALUE, "$.backoff.maxMs")
    slow = door.refused(
        MEMBER, "agenttask.create", {"verb": "agent.run", "backoff": {"multiplier": 0.5}}
    )
    assert (slow.code, slow.path) == (ErrorCode.OUT_OF_BOUNDS, "$.backoff.multiplier")
    zero = door.refused(MEMBER, "agenttask.create", {"verb": "agent.run", "maxAttempts": 0})
    assert (zero.code, zero.path) == (ErrorCode.OUT_OF_BOUNDS, "$.maxAttempts")


# -- lapsed leases -------------------------------------------------------------------------------


def test_a_lapsed_lease_counts_an_attempt_and_waits_its_back_off(door, clock):
    task = door.create(maxAttempts=3, backoff={"initialMs": 5_000, "maxMs": 5_000})
    first = door(WORKER, "agenttask.claim", {"taskId": task["taskId"], "leaseMs": 1_000})
    delay = door.row(task["taskId"]).retry_delay_ms
    assert 0 <= delay <= 5_000
    clock.advance(1_000)
    seen = door(MEMBER, "agenttask.get", {"taskId": task["taskId"]})
    assert (seen["status"], seen["attempt"]) == ("QUEUED", 2)
    assert seen["runAtMs"] == first["lease"]["expiresAtMs"] + delay
    if delay > 0:
        assert door(WORKER2, CLAIM, {}) == {"claimed": False}
        clock.advance(delay)
    again = _claim(door, WORKER2)
    assert again["task"]["attempt"] == 2
    assert again["lease"]["fence"] == 2


def test_a_lapsed_lease_at_the_last_attempt_reads_failed(door, clock):
    task = door.create(maxAttempts=2, backoff={"initialMs": 1, "maxMs": 1})
    door(WORKER, "agenttask.claim", {"taskId": task["taskId"], "leaseMs": 1_000})
    clock.advance(1_001)
    door(WORKER2, "agenttask.claim", {"taskId": task["taskId"], "leaseMs": 1_000})
    clock.advance(1_000)
    seen = door(MEMBER, "agenttask.get", {"taskId": task["taskId"]})
    assert (seen["status"], seen["attempt"], seen["lease"]) == ("FAILED", 2, None)
    assert seen["finishedAtMs"] is not None
    assert door(WORKER, CLAIM, {}) == {"claimed": False}
    failed = door(ADMIN, "agenttask.list", {"status": "FAILED"})["tasks"]
    assert [t["taskId"] for t in failed] == [task["taskId"]]
    assert door(ADMIN, "agenttask.list", {"status": "QUEUED"})["tasks"] == []
    err = door.refused(MEMBER, "agenttask.cancel", {"taskId": task["taskId"]})
    assert err.code is ErrorCode.ILLEGAL_TRANSITION
    again = door(MEMBER, "agenttask.requeue", {"taskId": task["taskId"]})
    assert (again["status"], again["attempt"]) == ("QUEUED", 1)


def test_a_lapsed_lease_of_a_task_that_never_retries_is_claimable_at_once(door, clock):
    task = door.create()
    door(WORKER, "agenttask.claim", {"taskId": task["taskId"], "leaseMs": 1_000})
    clock.advance(1_000)
    again = _claim(door, WORKER2)
    assert (again["task"]["attempt"], again["lease"]["fence"]) == (1, 2)


# -- runaway requeues ----------------------------------------------------------------------------


def _run_away(door, claim: dict[str, Any]) -> Any:
    ref = {"taskId": claim["task"]["taskId"], "fence": claim["lease"]["fence"]}
    for _ in range(MAX_LEASE_EXTENSIONS):
        door(WORKER, "agenttask.checkpoint", ref)
    return door.refused(WORKER, "agenttask.checkpoint", ref)


def test_a_runaway_requeue_counts_an_attempt_and_at_the_last_fails(door, clock):
    task = door.create(maxAttempts=2, backoff={"initialMs": 1, "maxMs": 1})
    err = _run_away(door, _claim(door))
    assert err.code is ErrorCode.LEASE_RUNAWAY
    seen = door(MEMBER, "agenttask.get", {"taskId": task["taskId"]})
    assert (seen["status"], seen["attempt"]) == ("QUEUED", 2)
    clock.advance(2)
    last = _run_away(door, _claim(door))
    assert "last attempt" in last.message
    dead = door(MEMBER, "agenttask.get", {"taskId": task["taskId"]})
    assert dead["status"] == "FAILED"


# -- real threads: a retried task is never held twice -------------------------------------------


def test_retried_tasks_are_never_held_twice_by_racing_workers(tmp_path):
    service = Service.open(tmp_path / "threads")
    tasks, attempts = 12, 3
    holders: dict[str, str] = {}
    seen: dict[str, list[int]] = {}
    lock = threading.Lock()
    errors: list[str] = []
    try:
        for _ in range(tasks):
            service.dispatch(
                MEMBER,
                "agenttask.create",
                {
                    "verb": "agent.run",
                    "maxAttempts": attempts,
                    "backoff": {"initialMs": 1, "maxMs": 5, "multiplier": 2.0},
                },
            )

        def work(n: int) -> None:
            from taskcore import Actor, Tier

            me = Actor(token_id=f"t{n}", workspace="w", tier=Tier.AGENT, autonomy=1)
            idle = 0
            while idle < 20:
                got = service.dispatch(me, CLAIM, {"waitMs": 50}).json()
                if not got["claimed"]:
                    idle += 1
                    continue
                idle = 0
                task_id, fence = got["task"]["taskId"], got["lease"]["fence"]
                with lock:
                    if task_id in holders:
                        errors.append(f"{task_id} held by {holders[task_id]} and {me.token_id}")
                    holders[task_id] = me.token_id
                    seen.setdefault(task_id, []).append(got["task"]["attempt"])
                status = "FAILED" if got["task"]["attempt"] < attempts else "DONE"
                with lock:
                    del holders[task_id]
                service.dispatch(
                    me,
                    "agenttask.checkpoint",
                    {"taskId": task_id, "status": status, "fence": fence},
                )

        with ThreadPoolExecutor(6) as pool:
            list(pool.map(work, range(6)))
        assert errors == []
        assert len(seen) == tasks
        assert all(runs == [1, 2, 3] for runs in seen.values()), seen
        done = service.dispatch(ADMIN, "agenttask.list", {"status": "DONE"}).json()["tasks"]
        assert len(done) == tasks
    finally:
        service.close()


@pytest.mark.parametrize("attempts", [1, 2])
def test_depth_counts_a_dead_lettered_lapsed_lease_as_failed(door, clock, service, attempts):
    task = door.create(maxAttempts=attempts, backoff={"initialMs": 1, "maxMs": 1})
    for _ in range(attempts):
        door(WORKER, "agenttask.claim", {"taskId": task["taskId"], "leaseMs": 1_000})
        clock.advance(1_002)
    with service.storage.read() as tx:
        counts = {c.status: c.count for c in tx.queue.depth("w", now_ms=clock.now_ms())}
    assert counts.get("FAILED", 0) == (1 if attempts > 1 else 0)
    assert counts.get("QUEUED", 0) == (0 if attempts > 1 else 1)


# -- the retry state machine (hypothesis) --------------------------------------------------------


class RetryMachine(RuleBasedStateMachine):
    """One retrying task through random fails, lapses, waits, requeues and completions.

    Checked at every step: the attempt stays within 1..maxAttempts and only grows by one per
    failed attempt; a claim never comes before runAt; a failure below the last attempt is
    QUEUED again with runAt within its back-off cap, at the last one FAILED; a requeue starts
    at attempt 1.
    """

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.clock = FakeClock(START_MS)
        self.service = Service.open(self.dir, clock=self.clock)
        self.task = ""
        self.held: int | None = None  # the live claim's fence
        self.expires = 0
        self.attempt = 1
        self.max = 1
        self.rules: dict[str, Any] = {}

    def teardown(self) -> None:
        self.service.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def get(self) -> dict[str, Any]:
        return self.service.dispatch(MEMBER, "agenttask.get", {"taskId": self.task}).json()

    def cap(self, attempt: int) -> int:
        return backoff_cap(attempt, **self.rules)

    @initialize(
        attempts=st.integers(1, 4),
        initial=st.integers(1, 50),
        extra=st.integers(0, 50),
        multiplier=st.sampled_from([1.0, 1.5, 2.0, 3.0]),
    )
    def create(self, attempts: int, initial: int, extra: int, multiplier: float) -> None:
        self.max = attempts
        self.rules = {"initial_ms": initial, "max_ms": initial + extra, "multiplier": multiplier}
        backoff = {"initialMs": initial, "maxMs": initial + extra, "multiplier": multiplier}
        body = {"verb": "agent.run", "maxAttempts": attempts, "backoff": backoff}
        self.task = self.service.dispatch(MEMBER, "agenttask.create", body).json()["taskId"]

    @rule()
    def claim_next(self) -> None:
        before = self.get()
        got = self.service.dispatch(WORKER, CLAIM, {}).json()
        if not got["claimed"]:
            due = before["runAtMs"] is None or before["runAtMs"] <= self.clock.now_ms()
            assert not (before["status"] == "QUEUED" and due), "a due task was not handed out"
            return
        assert before["status"] == "QUEUED"
        assert before["runAtMs"] is None or before["runAtMs"] <= self.clock.now_ms()
        assert got["task"]["attempt"] == before["attempt"]
        self.attempt = got["task"]["attempt"]
        self.held = got["lease"]["fence"]
        self.expires = got["lease"]["expiresAtMs"]

    @rule()
    def fail(self) -> None:
        if self.held is None:
            return
        now = self.clock.now_ms()
        body = {"taskId": self.task, "status": "FAILED", "fence": self.held}
        after = self.service.dispatch(WORKER, "agenttask.checkpoint", body).json()
        self.held = None
        if self.attempt < self.max:
            assert (after["status"], after["attempt"]) == ("QUEUED", self.attempt + 1)
            assert now <= after["runAtMs"] <= now + self.cap(self.attempt)
            self.attempt += 1
        else:
            assert (after["status"], after["attempt"]) == ("FAILED", self.attempt)

    @rule()
    def lapse(self) -> None:
        if self.held is None:
            return
        expiry = self.expires
        self.clock.advance(max(0, expiry - self.clock.now_ms()))
        self.held = None
        seen = self.get()
        if self.max == 1:
            assert (seen["status"], seen["attempt"]) == ("QUEUED", 1)
        elif self.attempt < self.max:
            assert (seen["status"], seen["attempt"]) == ("QUEUED", self.attempt + 1)
            assert expiry <= seen["runAtMs"] <= expiry + self.cap(self.attempt)
            self.attempt += 1
        else:
            assert (seen["status"], seen["attempt"]) == ("FAILED", self.attempt)

    @rule(ms=st.integers(0, 200))
    def wait(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def requeue(self) -> None:
        if self.get()["status"] != "FAILED":
            return
        again = self.service.dispatch(MEMBER, "agenttask.requeue", {"taskId": self.task}).json()
        assert (again["status"], again["attempt"], again["runAtMs"]) == ("QUEUED", 1, None)
        self.attempt = 1

    @invariant()
    def attempt_in_bounds(self) -> None:
        if self.task:
            seen = self.get()
            assert 1 <= seen["attempt"] <= self.max
            assert seen["maxAttempts"] == self.max
            assert seen["status"] in {"QUEUED", "LEASED", "FAILED"}


@pytest.mark.backend_only(
    "sqlite",
    reason="each example opens a fresh journal in its own temp dir; the PostgreSQL test database "
    "is emptied once per test, not per example (the same verbs run on PostgreSQL above)",
)
def test_retry_state_machine() -> None:
    run_state_machine_as_test(
        RetryMachine,
        settings=settings(
            max_examples=30,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
