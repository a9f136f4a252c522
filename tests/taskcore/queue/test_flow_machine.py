"""A property test of queue flow (issue 28): random interleavings never break its promises.

Creates (with concurrency keys, unique keys and ``after``), limits, claims, finishes, fails,
releases, cancels, requeues and time passing, in any order. After every step, and at every claim:

* no task holds a live lease before every one of its parents is ``DONE``;
* a claim never makes a key hold more live leases than its limit (default 1);
* a task with a ``FAILED`` or ``CANCELLED`` parent has ended itself;
* a unique key never has two live tasks.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from taskcore import Actor, FakeClock, Service, TaskError, Tier

from tests.taskcore.queue.support import ADMIN, MEMBER

WORKERS = tuple(
    Actor(token_id=f"worker{i}", workspace="w", tier=Tier.AGENT, autonomy=1) for i in range(3)
)
KEYS = (None, "a", "b")
ENDED = {"FAILED", "CANCELLED"}


class FlowMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.clock = FakeClock(1_700_000_000_000)
        self.service = Service.open(self.dir, clock=self.clock)
        self.ids: list[str] = []
        self.parents: dict[str, tuple[str, ...]] = {}
        self.key_of: dict[str, str | None] = {}
        self.unique_of: dict[str, str | None] = {}
        self.limits: dict[str, int] = {}

    def teardown(self) -> None:
        self.service.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def call(self, actor: Actor, verb: str, body: dict[str, Any]) -> Any:
        try:
            return self.service.dispatch(actor, verb, body).json()
        except TaskError:
            return None

    def rows(self) -> dict[str, Any]:
        with self.service.storage.read() as tx:
            return {i: tx.queue.get_task("w", i) for i in self.ids}

    def live(self, row: Any) -> bool:
        now = self.clock.now_ms()
        return row.status == "LEASED" and row.lease_expires_at_ms > now

    def leased_of(self, key: str, rows: dict[str, Any]) -> int:
        return sum(1 for i, r in rows.items() if self.key_of[i] == key and self.live(r))

    # -- rules ------------------------------------------------------------------------------
    @rule(
        key=st.sampled_from(KEYS),
        unique=st.sampled_from((None, None, "u1", "u2")),
        picks=st.lists(st.integers(0, 50), max_size=3, unique=True),
    )
    def create(self, key: str | None, unique: str | None, picks: list[int]) -> None:
        after = sorted({self.ids[p % len(self.ids)] for p in picks}) if self.ids else []
        body: dict[str, Any] = {"verb": "agent.run"}
        if key is not None:
            body["concurrencyKey"] = key
        if unique is not None:
            body["uniqueKey"] = unique
        if after:
            body["after"] = after
        shown = self.call(MEMBER, "agenttask.create", body)
        assert shown is not None
        if shown.get("deduplicated"):
            assert shown["taskId"] in self.ids
            assert self.unique_of[shown["taskId"]] == unique
            return
        self.ids.append(shown["taskId"])
        self.parents[shown["taskId"]] = tuple(after)
        self.key_of[shown["taskId"]] = key
        self.unique_of[shown["taskId"]] = unique

    @rule(key=st.sampled_from(("a", "b")), most=st.integers(0, 2))
    def set_limit(self, key: str, most: int) -> None:
        assert self.call(ADMIN, "agenttask.limit.set", {"key": key, "max": most}) is not None
        self.limits[key] = most

    @rule(worker=st.sampled_from(WORKERS))
    def claim_next(self, worker: Actor) -> None:
        answer = self.call(worker, "agenttask.claimNext", {"leaseMs": 60_000})
        if answer is None or not answer["claimed"]:
            return
        task_id = answer["task"]["taskId"]
        rows = self.rows()
        for parent in self.parents[task_id]:
            assert rows[parent].status == "DONE", "a child ran before its parent"
        key = self.key_of[task_id]
        if key is not None:
            assert self.leased_of(key, rows) <= self.limits.get(key, 1), "a key's limit exceeded"

    @rule(pick=st.integers(0, 50), outcome=st.sampled_from(("DONE", "FAILED", "RELEASE")))
    def finish(self, pick: int, outcome: str) -> None:
        if not self.ids:
            return
        task_id = self.ids[pick % len(self.ids)]
        row = self.rows()[task_id]
        if not self.live(row):
            return
        holder = next(w for w in WORKERS if w.token_id == row.lease_owner)
        if outcome == "RELEASE":
            self.call(holder, "agenttask.release", {"taskId": task_id})
        else:
            self.call(holder, "agenttask.checkpoint", {"taskId": task_id, "status": outcome})

    @rule(pick=st.integers(0, 50))
    def cancel(self, pick: int) -> None:
        if self.ids:
            self.call(MEMBER, "agenttask.cancel", {"taskId": self.ids[pick % len(self.ids)]})

    @rule(pick=st.integers(0, 50))
    def requeue(self, pick: int) -> None:
        if self.ids:
            self.call(MEMBER, "agenttask.requeue", {"taskId": self.ids[pick % len(self.ids)]})

    @rule(ms=st.sampled_from((1_000, 60_000)))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def promises_hold(self) -> None:
        rows = self.rows()
        for task_id, row in rows.items():
            parents = [rows[p] for p in self.parents[task_id]]
            if self.live(row):
                assert all(p.status == "DONE" for p in parents), "leased before its parents"
            if any(p.status in ENDED for p in parents):
                assert row.status in ENDED, "a failed parent's child did not end"
        live_unique: dict[str, int] = {}
        for task_id, row in rows.items():
            unique = self.unique_of[task_id]
            if unique is not None and row.finished_at_ms is None:
                live_unique[unique] = live_unique.get(unique, 0) + 1
        assert all(n == 1 for n in live_unique.values()), live_unique


@pytest.mark.backend_only(
    "sqlite",
    reason="each example opens a fresh journal in its own temp dir; the PostgreSQL test database "
    "is emptied once per test, not per example (the same rules run on PostgreSQL in test_flow.py "
    "and its thread tests)",
)
def test_flow_state_machine() -> None:
    run_state_machine_as_test(
        FlowMachine,
        settings=settings(
            max_examples=40,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
