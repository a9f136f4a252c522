from __future__ import annotations

import copy
import json

import pytest
from taskcore.collector.stop import (
    NEXT_ACTIONS,
    Category,
    LocalRead,
    decide,
    error_decision,
    validate_answer,
)
from taskcore.errors import ErrorCode, TaskError

REV = "b" * 64
GOOD = {
    "qualified": True,
    "subject_current": True,
    "receipt_digest": "a" * 64,
    "revision": REV,
    "tasks": [
        {
            "task_id": "t-1",
            "task_digest": "c" * 64,
            "step_id": "tests",
            "required": True,
            "state": "succeeded",
        }
    ],
    "failures": [],
    "next": {"operation": "none"},
}
SUBJECT = (1, 1, REV, "d" * 40, "e" * 64, "f" * 64)
CLEAN = LocalRead(subject=SUBJECT, head="d" * 40, clean=True, base_revision=REV)


def changed(**kw):
    out = copy.deepcopy(GOOD)
    out.update(kw)
    return out


def malformed(answer, local=REV):
    with pytest.raises(TaskError) as err:
        validate_answer(answer, local_revision=local)
    return err.value.code


def test_a_good_answer_validates():
    answer = validate_answer(GOOD, local_revision=REV)
    assert answer.qualified
    assert answer.next == {"operation": "none"}


@pytest.mark.parametrize(
    "answer",
    [
        changed(extra=1),
        {k: v for k, v in GOOD.items() if k != "failures"},
        changed(qualified="true"),
        changed(receipt_digest="A" * 64),
        changed(receipt_digest=None),
        changed(revision="b" * 63),
        changed(next={"operation": "run_tests"}),
        changed(next={"operation": "reconcile"}),
        changed(next={"operation": "none", "task_id": "t-1"}),
        changed(next={"operation": "collector_claim", "task_id": "bad id!"}),
        changed(failures=[{"task_id": "t-1", "code": "x"}] * 33),
        changed(failures=[{"task_id": "t-1", "code": "rm -rf /"}]),
        changed(failures=[{"task_id": "t-1", "code": "ok", "message": "text"}]),
        changed(tasks=[{"task_id": "t-1"}]),
        changed(qualified=False),  # receipt present but not qualified
        changed(subject_current=False),
        "not an object",
    ],
)
def test_malformed_answers_are_refused(answer):
    assert malformed(answer) is ErrorCode.MALFORMED_RESPONSE


def test_an_answer_for_another_revision_is_refused():
    assert malformed(GOOD, local="e" * 64) is ErrorCode.MALFORMED_RESPONSE


def test_thirty_two_failures_are_allowed():
    answer = changed(
        qualified=False,
        receipt_digest=None,
        failures=[{"task_id": "t-1", "code": "lease_expired"}] * 32,
    )
    assert len(validate_answer(answer, local_revision=REV).failures) == 32


def test_qualified_current_clean_and_at_the_revision_passes():
    assert decide(validate_answer(GOOD, local_revision=REV), CLEAN, CLEAN).passed


def test_a_dirty_workspace_blocks_with_next_checkpoint():
    dirty = LocalRead(subject=CLEAN.subject, head=CLEAN.head, clean=False, base_revision=REV)
    decision = decide(validate_answer(GOOD, local_revision=REV), dirty, dirty)
    assert not decision.passed
    assert decision.next == {"operation": "checkpoint"}


def test_a_different_base_blocks_with_next_checkpoint():
    moved = LocalRead(subject=CLEAN.subject, head="f" * 40, clean=True, base_revision="f" * 64)
    decision = decide(validate_answer(GOOD, local_revision=REV), moved, moved)
    assert decision.next == {"operation": "checkpoint"}


def test_a_change_during_the_run_blocks():
    after = LocalRead(
        subject=(2, 2, REV, "d" * 40, "e" * 64, "f" * 64),
        head="d" * 40,
        clean=True,
        base_revision=REV,
    )
    decision = decide(validate_answer(GOOD, local_revision=REV), CLEAN, after)
    assert decision.error is Category.CHANGED_DURING_RUN
    assert decision.next == {"operation": "checkpoint"}


def test_an_unqualified_answer_blocks_with_its_failures_and_next():
    answer = changed(
        qualified=False,
        receipt_digest=None,
        failures=[{"task_id": "t-1", "code": "collector_not_passed"}],
        next={"operation": "collector_claim", "task_id": "t-2"},
    )
    decision = decide(validate_answer(answer, local_revision=REV), CLEAN, CLEAN)
    assert not decision.passed
    feedback = decision.feedback()
    assert feedback["failures"] == [{"task_id": "t-1", "code": "collector_not_passed"}]
    assert feedback["next"] == {"operation": "collector_claim", "task_id": "t-2"}
    assert feedback["next_action"] == NEXT_ACTIONS["collector_claim"]


def test_every_next_operation_has_a_fixed_sentence():
    assert set(NEXT_ACTIONS) == {
        "collector_claim",
        "reconcile",
        "collector_finalize",
        "checkpoint",
        "none",
    }


def test_error_feedback_carries_only_the_category():
    decision = error_decision(Category.SERVICE_REQUEST_FAILED)
    text = decision.text()
    body = json.loads(text.rsplit("\n", 1)[1])
    assert body == {
        "status": "blocked",
        "failures": [],
        "next_action": NEXT_ACTIONS["none"],
        "next": {"operation": "none"},
        "error": "service_request_failed",
    }
