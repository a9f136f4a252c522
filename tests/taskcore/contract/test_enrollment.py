import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.contract import ExecutorBinding, ExecutorEnrollment, ExecutorRevocation
from taskcore.errors import ErrorCode, TaskError

from . import samples
from .strategies import enrollments, revocations
from .wire import CODEC, changed, check_round_trip, check_strictness, expect_error


def enrollment(**changes: object) -> ExecutorEnrollment:
    base = ExecutorEnrollment(
        version=1,
        registration_id="reg-1",
        executor_id="laptop-1",
        repository_id="acme.widgets",
        step_id="tests",
        registration_epoch=1,
        verification_key_id="k1",
        public_key=samples.PUBLIC,
        enrolled_at_ms=1_700_000_000_000,
    )
    return attrs.evolve(base, **changes)


def revocation(**changes: object) -> ExecutorRevocation:
    base = ExecutorRevocation(
        version=1,
        registration_id="reg-1",
        executor_id="laptop-1",
        registration_epoch=1,
        verification_key_id="k1",
        revoked_at_ms=1_700_000_100_000,
        reason="laptop lost",
    )
    return attrs.evolve(base, **changes)


@given(st.one_of(enrollments, revocations))
def test_enrollments_and_revocations_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


def test_the_binding_of_an_enrollment_is_what_results_carry():
    assert enrollment().binding == samples.EXECUTOR


def test_scope_and_binding_check_passes_for_the_exact_scope():
    enrollment().validate_scope_and_binding(
        repository_id="acme.widgets", step_id="tests", binding=samples.EXECUTOR
    )


@pytest.mark.parametrize(
    ("repository_id", "step_id"), [("acme.other", "tests"), ("acme.widgets", "build")]
)
def test_enrollment_grants_nothing_outside_its_repository_and_step(repository_id, step_id):
    with pytest.raises(TaskError) as info:
        enrollment().validate_scope_and_binding(
            repository_id=repository_id, step_id=step_id, binding=samples.EXECUTOR
        )
    assert info.value.code is ErrorCode.EXECUTOR_NOT_ENROLLED


@pytest.mark.parametrize("name", [f.name for f in attrs.fields(ExecutorBinding)])
def test_any_other_binding_is_not_this_enrollment(name):
    other = attrs.evolve(samples.EXECUTOR, **{name: changed(getattr(samples.EXECUTOR, name))})
    with pytest.raises(TaskError) as info:
        enrollment().validate_scope_and_binding(
            repository_id="acme.widgets", step_id="tests", binding=other
        )
    assert info.value.code is ErrorCode.EXECUTOR_NOT_ENROLLED


def test_re_enrollment_is_a_new_epoch_that_old_evidence_does_not_match():
    renewed = enrollment(registration_epoch=2, verification_key_id="k2")
    with pytest.raises(TaskError):
        renewed.validate_scope_and_binding(
            repository_id="acme.widgets", step_id="tests", binding=samples.EXECUTOR
        )


def test_a_revocation_matches_exactly_its_binding():
    assert revocation().matches_binding(samples.EXECUTOR)


@pytest.mark.parametrize("name", [f.name for f in attrs.fields(ExecutorBinding)])
def test_a_revocation_does_not_match_any_other_binding(name):
    other = attrs.evolve(samples.EXECUTOR, **{name: changed(getattr(samples.EXECUTOR, name))})
    assert not revocation().matches_binding(other)


def test_a_revocation_needs_a_reason():
    tree = CODEC.unstructure(revocation())
    tree["reason"] = ""
    expect_error(ExecutorRevocation, tree, ErrorCode.OUT_OF_BOUNDS, "$.reason")


def test_the_public_key_is_64_lowercase_hex():
    tree = CODEC.unstructure(enrollment())
    tree["public_key"] = samples.PUBLIC.upper()
    expect_error(ExecutorEnrollment, tree, ErrorCode.INVALID_VALUE, "$.public_key")


def test_enrollment_carries_no_secret_or_permission_fields():
    names = {f.name for f in attrs.fields(ExecutorEnrollment)}
    assert not {n for n in names if any(w in n for w in ("secret", "seed", "token", "grant"))}
