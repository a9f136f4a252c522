"""Strict decoding of the verbs' inputs."""

from __future__ import annotations

import re

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore import ErrorCode, TaskError
from taskcore.codec import decode, wire_name
from taskcore.limits import LEASE_MAX_MS, LEASE_MIN_MS
from taskcore.queue import requests
from taskcore.queue.requests import CheckpointIn, ClaimIn, ExtSetWaitingIn, TaskRef

REQUEST_TYPES = [getattr(requests, n) for n in requests.__all__ if attrs.has(getattr(requests, n))]


@pytest.mark.parametrize("cls", REQUEST_TYPES, ids=lambda c: c.__name__)
def test_every_request_refuses_unknown_keys(cls):
    with pytest.raises(TaskError) as info:
        decode(cls, {"surprise": 1})
    assert info.value.code in (ErrorCode.UNKNOWN_FIELD, ErrorCode.MISSING_FIELD)


@pytest.mark.parametrize("cls", REQUEST_TYPES, ids=lambda c: c.__name__)
def test_snake_case_spellings_are_unknown_fields(cls):
    for field in attrs.fields(cls):
        if wire_name(field) != field.name:
            with pytest.raises(TaskError):
                decode(cls, {field.name: None})


@given(st.from_regex(r"[A-Za-z0-9._-]{1,128}", fullmatch=True))
def test_any_identifier_is_a_task_id(task_id):
    assert decode(TaskRef, {"taskId": task_id}).task_id == task_id


@given(st.text().filter(lambda s: not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", s)))
def test_anything_else_is_refused_as_a_task_id(task_id):
    with pytest.raises(TaskError) as info:
        decode(TaskRef, {"taskId": task_id})
    assert info.value.path == "$.taskId"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"taskId": "t", "fence": 0}, ErrorCode.OUT_OF_BOUNDS),
        ({"taskId": "t", "fence": "1"}, ErrorCode.WRONG_TYPE),
        ({"taskId": "t", "status": "done"}, ErrorCode.INVALID_VALUE),
        ({"taskId": "t", "lastError": 5}, ErrorCode.WRONG_TYPE),
    ],
)
def test_checkpoint_inputs_are_typed_exactly(body, code):
    with pytest.raises(TaskError) as info:
        decode(CheckpointIn, body)
    assert info.value.code is code


def test_lease_lengths_are_bounded():
    assert decode(ClaimIn, {"taskId": "t", "leaseMs": LEASE_MIN_MS}).lease_ms == LEASE_MIN_MS
    for bad in (LEASE_MIN_MS - 1, LEASE_MAX_MS + 1):
        with pytest.raises(TaskError):
            decode(ClaimIn, {"taskId": "t", "leaseMs": bad})


def test_waiting_must_be_a_boolean():
    with pytest.raises(TaskError) as info:
        decode(ExtSetWaitingIn, {"agentTaskId": "t", "waiting": 1})
    assert info.value.code is ErrorCode.WRONG_TYPE
