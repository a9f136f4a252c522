"""The task and attempt state machines, checked against cases written from the seed.

Every expectation below is written out by hand from ``../shared/seeds`` (seed 000, "Phase-two
local state machine" and the attempt/mutation paragraphs); none is read from the tables in
:mod:`taskcore.workflow.states`, so a changed table entry fails here instead of agreeing with
itself. Each (event, state) pair that is not listed as allowed must be refused with
``ILLEGAL_TRANSITION``.
"""

from __future__ import annotations

import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.workflow.states import (
    UNRESOLVED_TASK_STATES,
    AttemptState,
    Event,
    TaskState,
    attempt_transition,
    observe_attempt,
    task_transition,
)

T, A, E = TaskState, AttemptState, Event

TASK_ALLOWED = {
    # "Direct claims check pending state ... inside the serialized journal transaction."
    (E.CLAIM, T.PENDING): T.CLAIMED,
    # A heartbeat keeps a claimed task claimed; it cannot revive any other state.
    (E.HEARTBEAT, T.CLAIMED): T.CLAIMED,
    # "Confirmed retained assertion requires a finished attempt": a result finishes the task.
    (E.RESULT, T.CLAIMED): T.FINISHED,
    # Cancellation "may fence the original stale attempt"; the task waits for reconciliation.
    (E.CANCEL, T.CLAIMED): T.CANCELLED,
    # "only explicit reconciliation supersedes an unfinished generation": claimed or
    # cancelled go back to pending (for a fresh execution with a new fence).
    (E.RECONCILE, T.CLAIMED): T.PENDING,
    (E.RECONCILE, T.CANCELLED): T.PENDING,
}

ATTEMPT_ALLOWED = {
    # A heartbeat renews a live lease only.
    (E.HEARTBEAT, A.LEASED): A.LEASED,
    # A result finishes the attempt it was issued for.
    (E.RESULT, A.LEASED): A.FINISHED,
    # Cancellation of a leased attempt; it "does not prove that external execution stopped".
    (E.CANCEL, A.LEASED): A.CANCELLED,
    # "Fence supersession explicitly records the old and strictly greater fence": reconciling
    # a leased or cancelled attempt replaces it.
    (E.RECONCILE, A.LEASED): A.REPLACED,
    (E.RECONCILE, A.CANCELLED): A.REPLACED,
}

TASK_CASES = [(e, s) for e in Event for s in TaskState]
ATTEMPT_CASES = [(e, s) for e in Event for s in AttemptState]


def _name(case: tuple[Event, object]) -> str:
    event, state = case
    return f"{event.value}-{state.value}"


@pytest.mark.parametrize("case", TASK_CASES, ids=_name)
def test_a_task_moves_exactly_as_the_seed_says(case):
    event, state = case
    if case in TASK_ALLOWED:
        assert task_transition(event, state) is TASK_ALLOWED[case]
    else:
        with pytest.raises(TaskError) as info:
            task_transition(event, state)
        assert info.value.code is ErrorCode.ILLEGAL_TRANSITION
        assert state.value in info.value.message


@pytest.mark.parametrize("case", ATTEMPT_CASES, ids=_name)
def test_an_attempt_moves_exactly_as_the_seed_says(case):
    event, state = case
    if case in ATTEMPT_ALLOWED:
        assert attempt_transition(event, state) is ATTEMPT_ALLOWED[case]
    else:
        with pytest.raises(TaskError) as info:
            attempt_transition(event, state)
        assert info.value.code is ErrorCode.ILLEGAL_TRANSITION


@pytest.mark.parametrize("event", list(Event), ids=lambda e: e.value)
def test_finished_and_replaced_attempts_never_change_again(event):
    # "A replacement gets a new fence; old-fence mutations cannot finish it." A finished
    # attempt has its retained assertion; neither is reopened by anything.
    for state in (A.FINISHED, A.REPLACED):
        with pytest.raises(TaskError):
            attempt_transition(event, state)


def test_a_finished_task_is_final_and_a_claim_needs_a_pending_task():
    for event in Event:
        with pytest.raises(TaskError):
            task_transition(event, T.FINISHED)
    for state in (T.CLAIMED, T.CANCELLED, T.FINISHED):
        with pytest.raises(TaskError):
            task_transition(E.CLAIM, state)


def test_a_claim_creates_an_attempt_and_is_no_transition_of_an_existing_one():
    for state in AttemptState:
        with pytest.raises(TaskError):
            attempt_transition(E.CLAIM, state)


def test_the_unresolved_states_are_claimed_and_cancelled():
    # "a bounded scan ... refuses unresolved older subjects until explicit reconciliation":
    # an attempt may still run while its task is claimed or cancelled-but-not-reconciled.
    assert frozenset({T.CLAIMED, T.CANCELLED}) == UNRESOLVED_TASK_STATES


@pytest.mark.parametrize(
    ("expires", "now", "observed"),
    [
        (1_000, 999, "leased"),
        (1_000, 1_000, "expired"),
        (1_000, 5_000, "expired"),
        (0, 0, "expired"),
    ],
)
def test_expiry_is_observed_at_read_time_only_for_a_leased_attempt(expires, now, observed):
    # "expiry is a read-time observation rather than proof of termination"
    assert observe_attempt(A.LEASED, expires, now).value == observed


@pytest.mark.parametrize(
    ("state", "observed"),
    [(A.FINISHED, "finished"), (A.CANCELLED, "cancelled"), (A.REPLACED, "replaced")],
)
def test_a_settled_attempt_reads_as_its_state_whatever_the_time(state, observed):
    assert observe_attempt(state, 1_000, 0).value == observed
    assert observe_attempt(state, 1_000, 10**12).value == observed
