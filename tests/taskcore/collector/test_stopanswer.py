"""The shared qualification-answer check: its hand-written character checks are the patterns."""

from __future__ import annotations

import re

import pytest
from taskcore.collector.stop import validate_answer
from taskcore.collector.stopanswer import AnswerError, _hex_or_none, _id, check_answer
from taskcore.errors import ErrorCode, TaskError

ANSWER = {
    "qualified": True,
    "subject_current": True,
    "receipt_digest": "a" * 64,
    "revision": "b" * 64,
    "tasks": [],
    "failures": [],
    "next": {"operation": "none"},
}

STRINGS = [
    "",
    "a",
    "A-z_0.9",
    "a" * 128,
    "a" * 129,
    "a b",
    "a\n",
    "é",
    "\u0663",  # ARABIC-INDIC DIGIT THREE: a digit, but not [0-9]
    "\uff41",  # FULLWIDTH LATIN SMALL LETTER A
    "0" * 64,
    "f" * 64,
    "F" * 64,
    "g" * 64,
    "0" * 63,
    "0" * 65,
    "0" * 63 + "\n",
]


@pytest.mark.parametrize("value", STRINGS)
def test_the_identifier_and_digest_checks_are_the_patterns(value):
    as_id = re.fullmatch(r"[A-Za-z0-9._-]{1,128}", value) is not None
    as_hex = re.fullmatch(r"[0-9a-f]{64}", value) is not None
    try:
        _id(value, "x")
        got_id = True
    except AnswerError:
        got_id = False
    try:
        _hex_or_none(value, "x")
        got_hex = True
    except AnswerError:
        got_hex = False
    assert (got_id, got_hex) == (as_id, as_hex)


def test_the_full_hook_turns_a_refusal_into_malformed_response_with_the_same_words():
    bad = dict(ANSWER, next={"operation": "reconcile"})
    with pytest.raises(AnswerError) as plain:
        check_answer(bad, local_revision="b" * 64)
    with pytest.raises(TaskError) as full:
        validate_answer(bad, local_revision="b" * 64)
    assert full.value.code is ErrorCode.MALFORMED_RESPONSE
    assert full.value.message == str(plain.value)


def test_a_checked_answer_has_the_fields_of_the_full_hooks_answer():
    checked = check_answer(ANSWER, local_revision="b" * 64)
    answer = validate_answer(ANSWER, local_revision="b" * 64)
    assert checked == {
        "qualified": answer.qualified,
        "subject_current": answer.subject_current,
        "receipt_digest": answer.receipt_digest,
        "revision": answer.revision,
        "failures": answer.failures,
        "next": answer.next,
        "run_failures": answer.run_failures,
    }
