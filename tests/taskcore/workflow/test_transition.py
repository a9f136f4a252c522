"""The one transition function, against cases written from the seed (seed 000), not its table.

Each case quotes the seed sentence it comes from; the expected rows are spelled out here, so
a change of the state table in ``workflow/states.py`` that breaks the seed fails a case.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.journal_api import AttemptRecord, TaskRecord
from taskcore.workflow.states import Event
from taskcore.workflow.transition import check, transition

AGENT = ("acme", "agent1")

TASK = TaskRecord(
    task_id="t1",
    task_digest="d" * 64,
    subject_seq=1,
    repository_id="r",
    profile_id="p",
    change_id="c",
    step_id="s",
    plan_index=0,
    body=b"{}",
    state="pending",
    next_fence=1,
    current_attempt_id=None,
    completion=None,
    created_at_ms=0,
    updated_at_ms=0,
)


def attempt(fence: int = 1, state: str = "leased", expires: int = 1_000) -> AttemptRecord:
    return AttemptRecord(
        attempt_id=f"a{fence}",
        task_id="t1",
        fence=fence,
        attempt_digest="e" * 64,
        body=b"{}",
        owner_id="acme",
        agent_id="agent1",
        state=state,
        lease_expires_at_ms=expires,
        superseded_by_fence=None,
        created_at_ms=0,
        updated_at_ms=0,
    )


def task(state: str, next_fence: int = 2, current: str | None = "a1") -> TaskRecord:
    return attrs.evolve(TASK, state=state, next_fence=next_fence, current_attempt_id=current)


def refused(event: Event, t: TaskRecord, a: AttemptRecord | None) -> None:
    with pytest.raises(TaskError) as info:
        transition(event, t, attempt=a, agent=AGENT, now_ms=10, lease_expires_at_ms=99)
    assert info.value.code is ErrorCode.ILLEGAL_TRANSITION


# "Direct claims check pending state ... inside the serialized journal transaction."
# "Fences increase monotonically."
def test_a_claim_takes_a_pending_task_and_reserves_the_next_fence():
    effects = transition(
        Event.CLAIM,
        TASK,
        attempt=attempt(1),
        agent=AGENT,
        now_ms=10,
        request_id="claim-1",
        log_event="claim",
    )
    assert (effects.task.state, effects.task.next_fence) == ("claimed", 2)
    assert effects.task.current_attempt_id == "a1"
    assert effects.task.updated_at_ms == 10
    assert effects.attempt_before is None  # a claim inserts its attempt
    assert (effects.attempt.state, effects.attempt.fence) == ("leased", 1)
    log = effects.log
    assert (log.event, log.from_state, log.to_state, log.fence) == (
        "claim",
        "pending",
        "claimed",
        1,
    )
    assert (log.owner_id, log.agent_id, log.request_id) == ("acme", "agent1", "claim-1")


@pytest.mark.parametrize("state", ["claimed", "finished", "cancelled"])
def test_only_a_pending_task_is_claimed(state):
    refused(Event.CLAIM, task(state), attempt(2))


def test_a_claim_is_at_the_tasks_next_fence_and_leased():
    with pytest.raises(TaskError) as info:
        transition(Event.CLAIM, TASK, attempt=attempt(3), agent=AGENT, now_ms=1)
    assert info.value.code is ErrorCode.INTERNAL


# "TaskMutationRequest covers heartbeat ..." A heartbeat renews the lease; no state moves.
def test_a_heartbeat_moves_only_the_lease():
    effects = transition(
        Event.HEARTBEAT,
        task("claimed"),
        attempt=attempt(1),
        agent=AGENT,
        now_ms=500,
        lease_expires_at_ms=60_500,
    )
    assert effects.task.state == "claimed"
    assert effects.attempt.state == "leased"
    assert effects.attempt.lease_expires_at_ms == 60_500
    assert effects.attempt.superseded_by_fence is None


# "A cancelled attempt may still be running" -- the task stays blocked until reconciled.
def test_a_cancel_fences_the_attempt_and_blocks_the_task():
    effects = transition(Event.CANCEL, task("claimed"), attempt=attempt(1), agent=AGENT, now_ms=5)
    assert (effects.task.state, effects.attempt.state) == ("cancelled", "cancelled")
    assert effects.task.next_fence == 2
    refused(Event.CLAIM, effects.task, attempt(2))
    refused(Event.HEARTBEAT, effects.task, effects.attempt)


# "only explicit reconciliation supersedes an unfinished generation";
# "Fence supersession explicitly records the old and strictly greater fence".
@pytest.mark.parametrize(
    ("task_state", "attempt_state"), [("claimed", "leased"), ("cancelled", "cancelled")]
)
def test_reconcile_supersedes_an_unfinished_attempt_with_a_greater_fence(task_state, attempt_state):
    effects = transition(
        Event.RECONCILE,
        task(task_state, next_fence=2),
        attempt=attempt(1, attempt_state),
        agent=AGENT,
        now_ms=7,
    )
    assert effects.attempt.state == "replaced"
    assert effects.attempt.superseded_by_fence == 2
    assert effects.attempt.superseded_by_fence > effects.attempt.fence
    assert effects.task.state == "pending"
    # The replacement is a fresh claim at exactly the recorded fence.
    again = transition(Event.CLAIM, effects.task, attempt=attempt(2), agent=AGENT, now_ms=8)
    assert (again.attempt.fence, again.task.next_fence) == (2, 3)


# "expiry is a read-time observation rather than proof of termination": the function never
# looks at time, so an attempt whose lease ran out is still only superseded by reconcile.
def test_expiry_alone_changes_nothing():
    expired = attempt(1, expires=1)
    refused(Event.CLAIM, task("claimed"), attempt(2))
    effects = transition(Event.RECONCILE, task("claimed"), attempt=expired, agent=AGENT, now_ms=9)
    assert effects.attempt.state == "replaced"


# "Confirmed retained assertion requires a finished attempt" -- a result finishes both.
def test_a_result_finishes_the_attempt_and_records_what_it_completes():
    effects = transition(
        Event.RESULT,
        task("claimed"),
        attempt=attempt(1),
        agent=AGENT,
        now_ms=11,
        request_id="r-1",
        log_event="collector_upload",
        completion="collector",
    )
    assert (effects.task.state, effects.attempt.state) == ("finished", "finished")
    assert effects.task.completion == "collector"
    assert (effects.log.event, effects.log.to_state) == ("collector_upload", "finished")
    failed = transition(Event.RESULT, task("claimed"), attempt=attempt(1), agent=AGENT, now_ms=1)
    assert failed.task.completion is None


# "a late result stays with the old attempt" (replaced attempts retain their uncertainty);
# finished and replaced attempts never change again.
@given(
    event=st.sampled_from([Event.HEARTBEAT, Event.RESULT, Event.CANCEL, Event.RECONCILE]),
    state=st.sampled_from(["finished", "replaced"]),
    task_state=st.sampled_from(["pending", "claimed", "finished", "cancelled"]),
)
def test_finished_and_replaced_attempts_never_change(event, state, task_state):
    refused(event, task(task_state), attempt(1, state))


@pytest.mark.parametrize("event", [Event.HEARTBEAT, Event.RESULT, Event.CANCEL, Event.RECONCILE])
def test_nothing_but_a_claim_moves_a_pending_task(event):
    refused(event, task("pending", next_fence=2, current=None), attempt(1, "replaced"))
    with pytest.raises(TaskError):
        check(event, task("pending"))


def test_a_finished_task_takes_no_event():
    for event in Event:
        refused(event, task("finished"), attempt(1, "leased"))


def test_write_applies_the_effects_with_only_changed_columns(tmp_path):
    storage = open_storage(tmp_path / "data", create=True)
    try:
        with storage.write() as tx:
            tx.journal.insert_task(TASK)
            transition(Event.CLAIM, TASK, attempt=attempt(1), agent=AGENT, now_ms=10).write(tx)
        with storage.write() as tx:
            stored = tx.journal.get_task("t1")
            held = tx.journal.get_attempt("a1")
            effects = transition(Event.RECONCILE, stored, attempt=held, agent=AGENT, now_ms=20)
            effects.write(tx)
        with storage.read() as tx:
            assert tx.journal.get_task("t1") == effects.task
            assert tx.journal.get_attempt("a1") == effects.attempt
            assert [(r.event, r.to_state) for r in tx.journal.transitions_of_task("t1")] == [
                ("claim", "claimed"),
                ("reconcile", "pending"),
            ]
    finally:
        storage.close()
