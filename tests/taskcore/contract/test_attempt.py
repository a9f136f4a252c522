import attrs
import pytest
from hypothesis import given
from taskcore.canonical import canonical_json
from taskcore.contract import AgentIdentity, WorkflowTaskAttempt, attempt_digest
from taskcore.digest import ATTEMPT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import LEASE_MAX_MS

from . import samples
from .strategies import attempts
from .wire import CODEC, changed, check_round_trip, check_strictness, expect_error


@given(attempts)
def test_attempts_round_trip_and_decode_strictly(attempt):
    check_round_trip(attempt)
    assert check_strictness(attempt) > 0


def test_an_attempt_binds_the_seed_identities():
    assert [f.name for f in attrs.fields(WorkflowTaskAttempt)] == [
        "version",
        "task_id",
        "task_digest",
        "attempt_id",
        "claim_request_id",
        "execution_operation_id",
        "agent",
        "executor",
        "fence",
        "lease_ms",
        "issued_at_ms",
    ]


@pytest.mark.parametrize("lease", [0, LEASE_MAX_MS + 1])
def test_the_lease_is_positive_and_bounded(lease):
    tree = CODEC.unstructure(samples.attempt())
    tree["lease_ms"] = lease
    expect_error(WorkflowTaskAttempt, tree, ErrorCode.OUT_OF_BOUNDS, "$.lease_ms")


def test_the_fence_starts_at_one():
    tree = CODEC.unstructure(samples.attempt())
    tree["fence"] = 0
    expect_error(WorkflowTaskAttempt, tree, ErrorCode.OUT_OF_BOUNDS, "$.fence")


# -- validate_for_claim ---------------------------------------------------------------------


def test_an_attempt_made_for_a_claim_validates_against_it():
    samples.attempt().validate_for_claim(samples.claim(), samples.AGENT)


def test_a_lease_equal_to_the_requested_lease_is_accepted():
    claim = samples.claim(requested_lease_ms=30_000)
    samples.attempt(lease_ms=30_000).validate_for_claim(claim, samples.AGENT)


def test_a_lease_longer_than_requested_is_refused():
    claim = samples.claim(requested_lease_ms=30_000)
    with pytest.raises(TaskError) as info:
        samples.attempt(lease_ms=30_001).validate_for_claim(claim, samples.AGENT)
    assert (info.value.code, info.value.path) == (ErrorCode.BINDING_MISMATCH, "$.lease_ms")


CLAIM_BINDINGS = {
    "claim_request_id": ("request_id", "claim-2"),
    "task_id": ("task_id", "task-2"),
    "task_digest": ("task_digest", "f" * 64),
    "execution_operation_id": ("execution_operation_id", "exec-2"),
    "executor": ("executor", None),
}


@pytest.mark.parametrize("attempt_field", sorted(CLAIM_BINDINGS))
def test_an_attempt_for_another_claim_is_a_binding_mismatch(attempt_field):
    claim_field, other = CLAIM_BINDINGS[attempt_field]
    claim = samples.claim(**{claim_field: other})
    with pytest.raises(TaskError) as info:
        samples.attempt().validate_for_claim(claim, samples.AGENT)
    assert (info.value.code, info.value.path) == (
        ErrorCode.BINDING_MISMATCH,
        f"$.{attempt_field}",
    )


def test_an_attempt_claimed_by_another_agent_is_a_binding_mismatch():
    other = AgentIdentity(owner_id="acme", agent_id="agent-2")
    with pytest.raises(TaskError) as info:
        samples.attempt().validate_for_claim(samples.claim(), other)
    assert (info.value.code, info.value.path) == (ErrorCode.BINDING_MISMATCH, "$.agent")


# -- digest -----------------------------------------------------------------------------------


def test_attempt_digest_is_the_attempt_domain_over_canonical_bytes():
    attempt = samples.attempt()
    assert attempt.digest == attempt_digest(attempt)
    assert attempt.digest == domain_digest(ATTEMPT_DOMAIN, canonical_json(attempt))
    assert ATTEMPT_DOMAIN == "agentscm.agent-workflow-attempt.v1"


@pytest.mark.parametrize(
    "name", [f.name for f in attrs.fields(WorkflowTaskAttempt) if f.name != "version"]
)
def test_changing_any_bound_attempt_field_changes_the_attempt_digest(name):
    before = samples.attempt()
    value = getattr(before, name)
    if name == "agent":
        new = AgentIdentity(owner_id="acme", agent_id="agent-2")
    elif name == "executor":
        new = None
    else:
        new = changed(value)
    assert attrs.evolve(before, **{name: new}).digest != before.digest


def test_a_replacement_attempt_with_a_new_fence_has_another_digest():
    old = samples.attempt()
    replacement = attrs.evolve(old, attempt_id="attempt-2", fence=2, execution_operation_id="e2")
    assert replacement.digest != old.digest
