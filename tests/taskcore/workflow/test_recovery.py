"""Recovery envelopes: the projection table, and recovery reads against a real journal."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.contract import MutationAction, TaskRecoveryEnvelope
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.journal_api import AttemptRecord, RequestRecord
from taskcore.workflow.recovery import CONFIRMED_EFFECT, project_recovery
from taskcore.workflow.types import RecoveryKind, TaskRecoveryRequest

from tests.taskcore.workflow.support import claim_request, mutation, parse, result_for

HEX = "a" * 64


def _attempt(state: str, expires: int = 10_000, superseded: int | None = None) -> AttemptRecord:
    return AttemptRecord(
        attempt_id="a-1",
        task_id="t-1",
        fence=3,
        attempt_digest=HEX,
        body=b"{}",
        owner_id="o",
        agent_id="g",
        state=state,
        lease_expires_at_ms=expires,
        superseded_by_fence=superseded,
        created_at_ms=0,
        updated_at_ms=0,
    )


def _row(kind: str) -> RequestRecord:
    return RequestRecord(
        owner_id="o",
        agent_id="g",
        request_id="r-1",
        kind=kind,
        request_digest=HEX,
        repository_id="widgets",
        profile_id="default",
        task_id="t-1",
        attempt_id="a-1",
        outcome=b"{}",
        recorded_at_ms=0,
    )


def _project(kind: str, retained: bool, attempt: AttemptRecord | None, now: int = 0):
    return project_recovery(
        kind=kind,
        request_id="r-1",
        execution_operation_id="op-1",
        task_id="t-1",
        task_digest=HEX,
        attempt_id="a-1",
        attempt_digest=HEX,
        fence=3,
        retained=_row(kind) if retained else None,
        attempt=attempt,
        now_ms=now,
    )


_STATES = st.sampled_from(
    [
        _attempt("leased"),
        _attempt("leased", expires=0),
        _attempt("finished"),
        _attempt("cancelled"),
        _attempt("replaced", superseded=4),
        None,
    ]
)


@given(kind=st.sampled_from(sorted(CONFIRMED_EFFECT)), retained=st.booleans(), attempt=_STATES)
def test_every_projection_is_a_valid_envelope_with_safe_actions(kind, retained, attempt):
    if kind == "result" and retained and (attempt is None or attempt.state != "finished"):
        return  # a retained result always finished its attempt; the journal cannot show this
    if kind == "reconcile" and retained and (attempt is None or attempt.state != "replaced"):
        return  # a retained reconciliation always replaced its attempt
    envelope = _project(kind, retained, attempt, now=5)
    actions = {a.value for a in envelope.permitted_actions}
    assert "retry_identical" not in actions  # only a pending attempt could allow it
    if "prepare_fresh_attempt" in actions:
        assert envelope.observed_state.value == "replaced"
        assert envelope.fence_supersession is not None
    if not retained:
        assert envelope.disposition.value == "conclusive_rejection"


def test_committed_claim_on_a_live_lease_is_confirmed():
    envelope = _project("claim", True, _attempt("leased"), now=1)
    assert envelope.disposition.value == "confirmed"
    assert [a.value for a in envelope.permitted_actions] == ["inspect", "stop"]


def test_expired_lease_leaves_execution_uncertain_not_superseded():
    envelope = _project("claim", True, _attempt("leased", expires=10), now=10)
    assert envelope.observed_state.value == "expired"
    assert envelope.disposition.value == "uncertain_effect"
    assert envelope.fence_supersession is None
    assert "prepare_fresh_attempt" not in [a.value for a in envelope.permitted_actions]


def test_reconciled_attempt_permits_a_prepared_fresh_attempt():
    envelope = _project("reconcile", True, _attempt("replaced", superseded=4))
    assert envelope.fence_supersession.old_fence == 3
    assert envelope.fence_supersession.new_fence == 4
    assert [a.value for a in envelope.permitted_actions] == [
        "inspect",
        "stop",
        "reconcile",
        "prepare_fresh_attempt",
    ]


# -- through the journal ------------------------------------------------------------------------


def _recovery(world, kind, request_id, claimed, task, *, attempt=True):
    a = claimed["attempt"]
    return world.journal.recovery(
        world.caller(),
        TaskRecoveryRequest(
            version=1,
            kind=kind,
            request_id=request_id,
            task_id=task.task_id,
            task_digest=task.digest,
            attempt_id=a["attempt_id"] if attempt else None,
            attempt_digest=claimed["attempt_digest"] if attempt else None,
            execution_operation_id=a["execution_operation_id"],
            fence=a["fence"] if attempt else None,
        ),
    )


def test_recovery_of_a_committed_result_is_confirmed_and_finished(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = parse(world.journal.claim(world.caller(), claim_request(task)))
    world.journal.result(world.caller(), result_for(claimed, task, "res-1"))
    envelope = _recovery(world, RecoveryKind.RESULT, "res-1", claimed, task)
    assert (envelope.disposition.value, envelope.observed_state.value) == ("confirmed", "finished")
    assert [e.value for e in envelope.confirmed_effects] == ["assertion_retained"]


def test_recovery_of_a_late_heartbeat_is_a_conclusive_rejection_that_forbids_retry(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = parse(world.journal.claim(world.caller(), claim_request(task)))
    world.journal.reconcile(
        world.caller(), mutation(claimed, MutationAction.RECONCILE, "rec", reason="x")
    )
    envelope = _recovery(world, RecoveryKind.HEARTBEAT, "never-sent", claimed, task)
    assert envelope.disposition.value == "conclusive_rejection"
    assert envelope.observed_state.value == "replaced"
    assert envelope.fence_supersession.new_fence == 2
    assert [a.value for a in envelope.permitted_actions] == ["inspect", "stop"]


def test_recovery_of_a_cancellation_keeps_execution_uncertain(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = parse(world.journal.claim(world.caller(), claim_request(task)))
    world.journal.cancel(
        world.caller(), mutation(claimed, MutationAction.CANCEL, "can", reason="x")
    )
    envelope = _recovery(world, RecoveryKind.CANCEL, "can", claimed, task)
    assert envelope.disposition.value == "uncertain_effect"
    assert [e.value for e in envelope.unresolved_effects] == ["execution_may_still_run"]
    assert "reconcile" in [a.value for a in envelope.permitted_actions]


def test_recovery_of_an_uncommitted_claim_on_an_untouched_task_says_retry_is_safe(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    fake = {"attempt": {"execution_operation_id": "op-1"}, "attempt_digest": None}
    with pytest.raises(TaskError) as info:
        _recovery(world, RecoveryKind.CLAIM, "lost-claim", fake, task, attempt=False)
    assert info.value.code is ErrorCode.NOT_FOUND
    assert "retry_identical" in info.value.details["permitted_actions"]


def test_recovery_of_a_committed_claim_finds_its_attempt(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = parse(world.journal.claim(world.caller(), claim_request(task, "claim-x")))
    envelope = _recovery(world, RecoveryKind.CLAIM, "claim-x", claimed, task, attempt=False)
    assert envelope.attempt_id == claimed["attempt"]["attempt_id"]
    assert [e.value for e in envelope.confirmed_effects] == ["attempt_claimed"]


def test_recovery_with_a_request_id_of_another_kind_conflicts(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = parse(world.journal.claim(world.caller(), claim_request(task, "claim-x")))
    with pytest.raises(TaskError) as info:
        _recovery(world, RecoveryKind.HEARTBEAT, "claim-x", claimed, task)
    assert info.value.code is ErrorCode.IDEMPOTENCY_CONFLICT


def test_recovery_reads_write_nothing(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = parse(world.journal.claim(world.caller(), claim_request(task)))
    with world.storage.read() as tx:
        before = tx.journal.transitions_of_task(task.task_id)
    for _ in range(3):
        envelope = _recovery(world, RecoveryKind.HEARTBEAT, "hb-x", claimed, task)
        assert isinstance(envelope, TaskRecoveryEnvelope)
    with world.storage.read() as tx:
        assert tx.journal.transitions_of_task(task.task_id) == before
        assert tx.journal.get_request("acme", "agent1", "hb-x") is None
