import itertools

import attrs
import pytest
from hypothesis import given
from taskcore.contract import (
    ConfirmedEffect,
    Disposition,
    FenceSupersession,
    ObservedState,
    RecoveryAction,
    TaskRecoveryEnvelope,
    UnresolvedEffect,
    permitted_actions,
)
from taskcore.errors import ErrorCode, TaskError

from .strategies import recovery_envelopes, supersessions
from .wire import CODEC, check_round_trip, check_strictness, expect_error

D, S, U, E = Disposition, ObservedState, UnresolvedEffect, ConfirmedEffect
INSPECT_STOP = ("inspect", "stop")
MAY_RUN = (U.EXECUTION_MAY_STILL_RUN,)


def envelope(
    disposition: Disposition,
    state: ObservedState,
    *,
    confirmed: tuple[ConfirmedEffect, ...] = (),
    unresolved: tuple[UnresolvedEffect, ...] = (),
    supersede: bool | None = None,
) -> TaskRecoveryEnvelope:
    if supersede is None:
        supersede = state is S.REPLACED
    return TaskRecoveryEnvelope.build(
        request_id="req-1",
        execution_operation_id="exec-1",
        task_id="task-1",
        task_digest="a" * 64,
        attempt_id="attempt-1",
        attempt_digest="b" * 64,
        fence=3,
        disposition=disposition,
        observed_state=state,
        confirmed_effects=confirmed,
        unresolved_effects=unresolved,
        fence_supersession=FenceSupersession(old_fence=3, new_fence=4) if supersede else None,
    )


def actions(env: TaskRecoveryEnvelope) -> tuple[str, ...]:
    return tuple(a.value for a in env.permitted_actions)


@given(recovery_envelopes())
def test_envelopes_round_trip_and_decode_strictly(env):
    check_round_trip(env)
    assert check_strictness(env) > 0


@given(supersessions())
def test_supersessions_round_trip_and_decode_strictly(sup):
    check_round_trip(sup)
    assert check_strictness(sup) > 0


# -- the seed's table, row by row -------------------------------------------------------------

SEED_TABLE = [
    # (disposition, observed state, confirmed, unresolved, permitted actions)
    (D.CONFIRMED, S.LEASED, (E.LEASE_RENEWED,), (), INSPECT_STOP),
    (D.CONFIRMED, S.FINISHED, (E.ASSERTION_RETAINED,), (), INSPECT_STOP),
    (D.CONFIRMED, S.REPLACED, (E.FENCE_SUPERSEDED,), (), INSPECT_STOP),
    (D.CONFIRMED, S.CANCELLED, (E.ATTEMPT_CANCELLED,), (), INSPECT_STOP),
    (D.CONCLUSIVE_REJECTION, S.PENDING, (), (), (*INSPECT_STOP, "retry_identical")),
    (D.CONCLUSIVE_REJECTION, S.LEASED, (), (), INSPECT_STOP),
    (D.CONCLUSIVE_REJECTION, S.EXPIRED, (), (), INSPECT_STOP),
    (D.CONCLUSIVE_REJECTION, S.FINISHED, (), (), INSPECT_STOP),
    (D.CONCLUSIVE_REJECTION, S.REPLACED, (), (), INSPECT_STOP),
    (D.CONCLUSIVE_REJECTION, S.CANCELLED, (), (), INSPECT_STOP),
    (D.CONCLUSIVE_REJECTION, S.UNKNOWN, (), (), INSPECT_STOP),
    (D.UNCERTAIN_EFFECT, S.PENDING, (), MAY_RUN, (*INSPECT_STOP, "reconcile")),
    (D.UNCERTAIN_EFFECT, S.LEASED, (), MAY_RUN, (*INSPECT_STOP, "reconcile")),
    (D.UNCERTAIN_EFFECT, S.EXPIRED, (), MAY_RUN, (*INSPECT_STOP, "reconcile")),
    (D.UNCERTAIN_EFFECT, S.UNKNOWN, (), MAY_RUN, (*INSPECT_STOP, "reconcile")),
    (
        D.UNCERTAIN_EFFECT,
        S.REPLACED,
        (),
        MAY_RUN,
        (*INSPECT_STOP, "reconcile", "prepare_fresh_attempt"),
    ),
    (
        D.UNCERTAIN_EFFECT,
        S.REPLACED,
        (E.FENCE_SUPERSEDED,),
        MAY_RUN,
        (*INSPECT_STOP, "reconcile", "prepare_fresh_attempt"),
    ),
    (
        D.UNCERTAIN_EFFECT,
        S.REPLACED,
        (),
        (U.RESULT_ACCEPTANCE_UNKNOWN,),
        (*INSPECT_STOP, "reconcile"),
    ),
    (
        D.UNCERTAIN_EFFECT,
        S.REPLACED,
        (),
        (U.EXECUTION_MAY_STILL_RUN, U.RESOURCE_CUSTODY),
        (*INSPECT_STOP, "reconcile"),
    ),
    (
        D.UNCERTAIN_EFFECT,
        S.REPLACED,
        (),
        (U.EXTERNAL_EFFECT, U.EXECUTION_MAY_STILL_RUN),
        (*INSPECT_STOP, "reconcile"),
    ),
]


@pytest.mark.parametrize(
    ("disposition", "state", "confirmed", "unresolved", "expected"),
    SEED_TABLE,
    ids=[
        f"{r[0].value}-{r[1].value}-{len(r[2])}-{'+'.join(u.value for u in r[3])}"
        for r in SEED_TABLE
    ],
)
def test_permitted_actions_follow_the_seed_table(
    disposition, state, confirmed, unresolved, expected
):
    env = envelope(disposition, state, confirmed=confirmed, unresolved=unresolved)
    assert actions(env) == expected
    assert CODEC.decode(TaskRecoveryEnvelope, CODEC.dumps(env)) == env


ALL_UNRESOLVED_SETS = [
    tuple(c) for n in range(len(U) + 1) for c in itertools.combinations(list(U), n)
]


@pytest.mark.parametrize("disposition", list(D))
@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("superseded", [False, True])
def test_the_action_table_over_every_combination(disposition, state, superseded):
    for unresolved in ALL_UNRESOLVED_SETS:
        got = permitted_actions(disposition, state, unresolved, superseded)
        assert got[:2] == INSPECT_STOP
        # Identical retry: only a conclusive rejection of a pending attempt.
        assert ("retry_identical" in got) == (
            disposition is D.CONCLUSIVE_REJECTION and state is S.PENDING
        )
        # Fresh attempt: only replaced, confirmed supersession, only execution_may_still_run.
        assert ("prepare_fresh_attempt" in got) == (
            disposition is D.UNCERTAIN_EFFECT
            and state is S.REPLACED
            and superseded
            and unresolved == MAY_RUN
        )
        if disposition is D.CONFIRMED:
            assert got == INSPECT_STOP
        if disposition is D.UNCERTAIN_EFFECT:
            assert "reconcile" in got


def test_replaced_without_a_confirmed_supersession_cannot_prepare_a_fresh_attempt():
    assert "prepare_fresh_attempt" not in permitted_actions(
        D.UNCERTAIN_EFFECT, S.REPLACED, MAY_RUN, False
    )


# -- envelope validation ----------------------------------------------------------------------


def _tree(env: TaskRecoveryEnvelope) -> dict:
    return CODEC.unstructure(env)


def test_a_client_cannot_widen_the_permitted_actions():
    tree = _tree(envelope(D.CONCLUSIVE_REJECTION, S.LEASED))
    tree["permitted_actions"] = ["inspect", "stop", "retry_identical"]
    expect_error(TaskRecoveryEnvelope, tree, ErrorCode.INVALID_RECOVERY, "$.permitted_actions")


def test_an_uncertain_effect_never_permits_identical_retry_even_when_pending():
    tree = _tree(envelope(D.UNCERTAIN_EFFECT, S.PENDING, unresolved=MAY_RUN))
    tree["permitted_actions"] = ["inspect", "stop", "reconcile", "retry_identical"]
    expect_error(TaskRecoveryEnvelope, tree, ErrorCode.INVALID_RECOVERY, "$.permitted_actions")


def test_narrowed_permitted_actions_are_refused_too():
    tree = _tree(envelope(D.CONCLUSIVE_REJECTION, S.PENDING))
    tree["permitted_actions"] = ["inspect", "stop"]
    expect_error(TaskRecoveryEnvelope, tree, ErrorCode.INVALID_RECOVERY, "$.permitted_actions")


@pytest.mark.parametrize(
    ("disposition", "confirmed", "unresolved", "path"),
    [
        (D.CONFIRMED, (), (), "$.disposition"),
        (D.CONFIRMED, (E.LEASE_RENEWED,), MAY_RUN, "$.disposition"),
        (D.CONCLUSIVE_REJECTION, (E.LEASE_RENEWED,), (), "$.disposition"),
        (D.CONCLUSIVE_REJECTION, (), MAY_RUN, "$.disposition"),
        (D.UNCERTAIN_EFFECT, (E.LEASE_RENEWED,), (), "$.unresolved_effects"),
    ],
)
def test_each_disposition_has_its_effect_shape(disposition, confirmed, unresolved, path):
    with pytest.raises(TaskError) as info:
        envelope(disposition, S.LEASED, confirmed=confirmed, unresolved=unresolved)
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_RECOVERY, path)


def test_effects_are_listed_once():
    with pytest.raises(TaskError) as info:
        envelope(D.UNCERTAIN_EFFECT, S.LEASED, unresolved=MAY_RUN * 2)
    assert info.value.code is ErrorCode.INVALID_RECOVERY


@pytest.mark.parametrize("state", [s for s in S if s is not S.FINISHED])
def test_a_confirmed_retained_assertion_requires_a_finished_attempt(state):
    with pytest.raises(TaskError) as info:
        envelope(D.CONFIRMED, state, confirmed=(E.ASSERTION_RETAINED,))
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_RECOVERY, "$.observed_state")


@pytest.mark.parametrize("state", [s for s in S if s is not S.REPLACED])
def test_expiry_or_any_other_state_never_records_a_supersession(state):
    with pytest.raises(TaskError) as info:
        envelope(D.CONCLUSIVE_REJECTION, state, supersede=True)
    assert (info.value.code, info.value.path) == (
        ErrorCode.INVALID_RECOVERY,
        "$.fence_supersession",
    )


def test_a_replaced_attempt_records_its_supersession():
    with pytest.raises(TaskError) as info:
        envelope(D.CONCLUSIVE_REJECTION, S.REPLACED, supersede=False)
    assert info.value.path == "$.fence_supersession"


def test_a_confirmed_fence_supersession_effect_needs_the_recorded_fences():
    with pytest.raises(TaskError) as info:
        envelope(D.CONFIRMED, S.LEASED, confirmed=(E.FENCE_SUPERSEDED,))
    assert info.value.code is ErrorCode.INVALID_RECOVERY


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        (3, 3, ErrorCode.INVALID_RECOVERY),
        (3, 2, ErrorCode.INVALID_RECOVERY),
        (1, 1, ErrorCode.OUT_OF_BOUNDS),
    ],
)
def test_supersession_is_strictly_monotonic(old, new, code):
    expect_error(FenceSupersession, {"old_fence": old, "new_fence": new}, code, "$.new_fence")


def test_supersession_starts_at_the_envelopes_old_fence():
    tree = _tree(envelope(D.CONCLUSIVE_REJECTION, S.REPLACED))
    tree["fence_supersession"] = {"old_fence": 2, "new_fence": 4}
    expect_error(
        TaskRecoveryEnvelope,
        tree,
        ErrorCode.INVALID_RECOVERY,
        "$.fence_supersession.old_fence",
    )


def test_recovery_has_no_command_credential_or_path_field():
    names = [f.name for f in attrs.fields(TaskRecoveryEnvelope)]
    for word in ("command", "argv", "credential", "token", "secret", "path", "url"):
        assert not [n for n in names if word in n], word
    assert {a.value for a in RecoveryAction} == {
        "inspect",
        "stop",
        "reconcile",
        "retry_identical",
        "prepare_fresh_attempt",
    }


def test_observed_states_are_the_seeds():
    assert [s.value for s in S] == [
        "pending",
        "leased",
        "expired",
        "finished",
        "replaced",
        "cancelled",
        "unknown",
    ]
    assert [d.value for d in D] == ["confirmed", "conclusive_rejection", "uncertain_effect"]


@given(recovery_envelopes())
def test_every_valid_envelope_lists_exactly_the_table_actions(env):
    expected = permitted_actions(
        env.disposition,
        env.observed_state,
        env.unresolved_effects,
        env.fence_supersession is not None,
    )
    assert actions(env) == expected
    if "retry_identical" in expected:
        assert env.observed_state is S.PENDING
        assert env.disposition is D.CONCLUSIVE_REJECTION
