import hashlib

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.contract import (
    InstructionsRequest,
    MutationAction,
    ReferenceFetchRequest,
    ReferenceFetchResponse,
    ReferenceStatus,
    TaskClaimRequest,
    TaskMutationRequest,
    TaskStatusRequest,
    request_digest,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import LEASE_MAX_MS, LEASE_MIN_MS, REFERENCE_BODY_MAX_BYTES

from . import samples
from .strategies import (
    claims,
    instructions_requests,
    mutations,
    reference_requests,
    reference_responses,
    status_requests,
)
from .wire import CODEC, check_round_trip, check_strictness, expect_error


def heartbeat(**changes: object) -> TaskMutationRequest:
    attempt = samples.attempt()
    base = TaskMutationRequest(
        version=1,
        request_id="hb-1",
        action=MutationAction.HEARTBEAT,
        task_id=attempt.task_id,
        task_digest=attempt.task_digest,
        attempt_id=attempt.attempt_id,
        attempt_digest=attempt.digest,
        execution_operation_id=attempt.execution_operation_id,
        executor=samples.EXECUTOR,
        fence=attempt.fence,
        reason=None,
    )
    return attrs.evolve(base, **changes)


def cancel(**changes: object) -> TaskMutationRequest:
    return attrs.evolve(
        heartbeat(request_id="cancel-1", action=MutationAction.CANCEL, reason="wrong branch"),
        **changes,
    )


# -- round trips and strict decoding ---------------------------------------------------------
@given(
    st.one_of(
        claims,
        mutations(),
        status_requests,
        instructions_requests,
        reference_requests,
        reference_responses(),
    )
)
def test_requests_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


# -- claims -----------------------------------------------------------------------------------


def test_a_claim_carries_a_fresh_execution_identity_and_a_bounded_lease():
    names = [f.name for f in attrs.fields(TaskClaimRequest)]
    assert "execution_operation_id" in names
    assert "requested_lease_ms" in names
    check_round_trip(samples.claim())


@pytest.mark.parametrize("lease", [0, LEASE_MIN_MS - 1, LEASE_MAX_MS + 1, 2**64 - 1])
def test_a_requested_lease_outside_the_bounds_is_refused(lease):
    tree = CODEC.unstructure(samples.claim())
    tree["requested_lease_ms"] = lease
    expect_error(TaskClaimRequest, tree, ErrorCode.OUT_OF_BOUNDS, "$.requested_lease_ms")


@pytest.mark.parametrize("lease", [LEASE_MIN_MS, LEASE_MAX_MS])
def test_the_lease_bounds_themselves_are_accepted(lease):
    tree = CODEC.unstructure(samples.claim())
    tree["requested_lease_ms"] = lease
    assert CODEC.structure(tree, TaskClaimRequest).requested_lease_ms == lease


# -- mutations --------------------------------------------------------------------------------


def test_a_heartbeat_carries_no_reason():
    with pytest.raises(TaskError) as info:
        heartbeat(reason="why")
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.reason")


@pytest.mark.parametrize("action", [MutationAction.CANCEL, MutationAction.RECONCILE])
@pytest.mark.parametrize("reason", [None, ""])
def test_cancel_and_reconcile_need_a_reason(action, reason):
    tree = CODEC.unstructure(heartbeat(action=MutationAction.HEARTBEAT))
    tree["action"] = action.value
    tree["reason"] = reason
    expect_error(TaskMutationRequest, tree, ErrorCode.MISSING_FIELD, "$.reason")


def test_a_mutation_binds_task_attempt_execution_executor_and_fence():
    names = {f.name for f in attrs.fields(TaskMutationRequest)}
    assert {
        "request_id",
        "action",
        "task_id",
        "task_digest",
        "attempt_id",
        "attempt_digest",
        "execution_operation_id",
        "executor",
        "fence",
    } <= names


def test_an_unknown_action_is_invalid():
    tree = CODEC.unstructure(heartbeat())
    tree["action"] = "finish"
    expect_error(TaskMutationRequest, tree, ErrorCode.INVALID_VALUE, "$.action")


# -- reads ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "obj"),
    [
        (
            TaskStatusRequest,
            TaskStatusRequest(version=1, task_id="t", task_digest="a" * 64, attempt_id="a1"),
        ),
        (
            InstructionsRequest,
            InstructionsRequest(
                version=1, task_id="t", task_digest="a" * 64, supported_schema_versions=(1,)
            ),
        ),
        (
            ReferenceFetchRequest,
            ReferenceFetchRequest(
                version=1,
                task_id="t",
                task_digest="a" * 64,
                name="guide",
                expected_sha256="b" * 64,
                expected_schema_version=1,
            ),
        ),
    ],
)
def test_reads_have_no_idempotency_key_and_no_request_digest(cls, obj):
    tree = CODEC.unstructure(obj)
    tree["request_id"] = "r1"
    expect_error(cls, tree, ErrorCode.UNKNOWN_FIELD, "$.request_id")
    with pytest.raises(TaskError) as info:
        request_digest("claim", obj, samples.AGENT)
    assert info.value.code is ErrorCode.INVALID_VALUE


def test_a_reference_request_cannot_name_a_path_or_repository():
    names = {f.name for f in attrs.fields(ReferenceFetchRequest)}
    assert names == {
        "version",
        "task_id",
        "task_digest",
        "name",
        "expected_sha256",
        "expected_schema_version",
    }


def test_an_unsupported_expected_schema_version_still_decodes_so_it_can_be_answered():
    # The service answers a schema_mismatch rather than an invalid-request error.
    tree = CODEC.unstructure(samples_reference_request())
    tree["expected_schema_version"] = 7
    assert CODEC.structure(tree, ReferenceFetchRequest).expected_schema_version == 7


def samples_reference_request() -> ReferenceFetchRequest:
    return ReferenceFetchRequest(
        version=1,
        task_id="task-1",
        task_digest="a" * 64,
        name="guide",
        expected_sha256="7" * 64,
        expected_schema_version=1,
    )


# -- reference responses ----------------------------------------------------------------------


def available(content: str, **changes: object) -> ReferenceFetchResponse:
    body = content.encode("utf-8")
    base = dict(
        status=ReferenceStatus.AVAILABLE,
        name="guide",
        sha256=hashlib.sha256(body).hexdigest(),
        content=content,
        byte_length=len(body),
        code=None,
    )
    base.update(changes)
    return ReferenceFetchResponse(**base)


def test_reference_outcomes_are_distinct():
    assert [s.value for s in ReferenceStatus] == [
        "available",
        "missing",
        "denied",
        "uncertain",
        "limit",
    ]


def test_available_content_is_utf8_whose_sha256_is_the_committed_digest():
    answer = available("# Testing\n\nRun `pytest`. ✓ 😀")
    check_round_trip(answer)
    with pytest.raises(TaskError) as info:
        available("# Testing", sha256="0" * 64)
    assert (info.value.code, info.value.path) == (ErrorCode.BINDING_MISMATCH, "$.sha256")


def test_byte_length_is_the_utf8_length_not_the_character_count():
    with pytest.raises(TaskError) as info:
        available("é", byte_length=1)
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.byte_length")


def test_available_content_above_128_kib_is_refused_even_when_few_characters():
    # 43,691 three-byte characters: fewer characters than the limit, more bytes than it.
    text = "€" * (REFERENCE_BODY_MAX_BYTES // 3 + 1)
    assert len(text) < REFERENCE_BODY_MAX_BYTES < len(text.encode())
    # Its true byte length is itself above the bound: refused at that field first, as
    # decoding the same answer refuses it.
    with pytest.raises(TaskError) as info:
        available(text)
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.byte_length")
    # With a byte length inside its bound, the content itself is measured in bytes.
    with pytest.raises(TaskError) as info:
        available(text, byte_length=REFERENCE_BODY_MAX_BYTES)
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.content")


def test_exactly_128_kib_of_content_is_available():
    answer = available("a" * REFERENCE_BODY_MAX_BYTES)
    assert answer.byte_length == REFERENCE_BODY_MAX_BYTES


@pytest.mark.parametrize(
    "status", [s for s in ReferenceStatus if s is not ReferenceStatus.AVAILABLE]
)
def test_no_partial_success_other_outcomes_carry_no_content(status):
    with pytest.raises(TaskError) as info:
        ReferenceFetchResponse(
            status=status, name="g", sha256="a" * 64, content="x", byte_length=1, code="too_large"
        )
    assert info.value.code is ErrorCode.INVALID_VALUE
    with pytest.raises(TaskError):
        ReferenceFetchResponse(
            status=status, name="g", sha256="a" * 64, content=None, byte_length=None, code=None
        )


def test_available_carries_no_reason_code():
    with pytest.raises(TaskError) as info:
        available("x", code="not_in_revision")
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.code")
