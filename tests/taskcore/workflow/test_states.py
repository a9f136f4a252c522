"""The transition tables: every pair not in a table is a typed refusal."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.errors import ErrorCode, TaskError
from taskcore.workflow.states import (
    ATTEMPT_TRANSITIONS,
    TASK_TRANSITIONS,
    UNRESOLVED_TASK_STATES,
    AttemptState,
    Event,
    TaskState,
    attempt_transition,
    observe_attempt,
    task_transition,
)


@given(st.sampled_from(list(Event)), st.sampled_from(list(TaskState)))
def test_task_transition_follows_the_table_exactly(event, state):
    expected = TASK_TRANSITIONS.get(event, {}).get(state)
    if expected is None:
        with pytest.raises(TaskError) as info:
            task_transition(event, state)
        assert info.value.code is ErrorCode.ILLEGAL_TRANSITION
    else:
        assert task_transition(event, state) is expected


@given(st.sampled_from(list(Event)), st.sampled_from(list(AttemptState)))
def test_attempt_transition_follows_the_table_exactly(event, state):
    expected = ATTEMPT_TRANSITIONS.get(event, {}).get(state)
    if expected is None:
        with pytest.raises(TaskError) as info:
            attempt_transition(event, state)
        assert info.value.code is ErrorCode.ILLEGAL_TRANSITION
    else:
        assert attempt_transition(event, state) is expected


def test_finished_and_replaced_attempts_are_terminal():
    for table in ATTEMPT_TRANSITIONS.values():
        assert AttemptState.FINISHED not in table
        assert AttemptState.REPLACED not in table


def test_only_reconciliation_returns_an_unfinished_task_to_pending():
    back = {e for e, table in TASK_TRANSITIONS.items() if TaskState.PENDING in table.values()}
    assert back == {Event.RECONCILE}


def test_unresolved_states_are_those_only_reconciliation_leaves():
    assert {s for s in UNRESOLVED_TASK_STATES} == set(TASK_TRANSITIONS[Event.RECONCILE])


@given(st.integers(0, 10**12), st.integers(0, 10**12))
def test_expiry_is_observed_at_read_time_only_for_leased(expires, now):
    observed = observe_attempt(AttemptState.LEASED, expires, now)
    assert observed.value == ("leased" if now < expires else "expired")
    assert observe_attempt(AttemptState.CANCELLED, expires, now).value == "cancelled"
