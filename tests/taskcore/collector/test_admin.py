from __future__ import annotations

import pytest
from taskcore.authority import enroll_executor, revoke_executor
from taskcore.collector.admin import install_collector_profile
from taskcore.contract import FiniteReviewCollectorProfile, TransportBasis
from taskcore.errors import ErrorCode, TaskError


def test_enrollment_alone_installs_no_collector_profile(authority):
    with authority.storage.read() as tx:
        assert tx.collector.current_profile("acme", "default", "tests") is None


def test_installing_a_profile_for_the_current_epoch_makes_it_current(authority):
    record = install_collector_profile(
        authority.storage, authority.clock, profile=authority.profile()
    )
    with authority.storage.read() as tx:
        assert tx.collector.current_profile("acme", "default", "tests") == record


def test_a_newer_profile_supersedes_the_older_one(authority):
    install_collector_profile(authority.storage, authority.clock, profile=authority.profile())
    install_collector_profile(
        authority.storage, authority.clock, profile=authority.profile(profile_id="cp-2")
    )
    with authority.storage.read() as tx:
        assert tx.collector.current_profile("acme", "default", "tests").profile_id == "cp-2"
        assert tx.collector.get_profile("cp-1").superseded_at_ms is not None


def test_a_profile_id_cannot_be_reinstalled_with_other_bytes(authority):
    from .conftest import recipe

    install_collector_profile(authority.storage, authority.clock, profile=authority.profile())
    with pytest.raises(TaskError) as err:
        install_collector_profile(
            authority.storage, authority.clock, profile=authority.profile(recipe("exit 0"))
        )
    assert err.value.code is ErrorCode.ALREADY_EXISTS


def test_an_unknown_step_is_refused(authority):
    with pytest.raises(TaskError) as err:
        install_collector_profile(
            authority.storage, authority.clock, profile=authority.profile(step="lint")
        )
    assert err.value.code is ErrorCode.NOT_FOUND


def test_a_revoked_epoch_cannot_get_a_profile(authority):
    revoke_executor(authority.storage, authority.clock, registration_id="reg-1", reason="lost")
    with pytest.raises(TaskError) as err:
        install_collector_profile(authority.storage, authority.clock, profile=authority.profile())
    assert err.value.code is ErrorCode.EXECUTOR_REVOKED


def test_a_superseded_epoch_cannot_get_a_profile(authority):
    enroll_executor(
        authority.storage,
        authority.clock,
        registration_id="reg-1",
        executor_id="collector-1",
        repository_id="acme",
        step_id="tests",
        verification_key_id=authority.enrollment.verification_key_id,
        public_key=authority.enrollment.public_key,
    )
    with pytest.raises(TaskError) as err:
        install_collector_profile(authority.storage, authority.clock, profile=authority.profile())
    assert err.value.code is ErrorCode.EXECUTOR_NOT_ENROLLED
    install_collector_profile(
        authority.storage, authority.clock, profile=authority.profile(epoch=2)
    )


def test_an_unknown_epoch_is_refused(authority):
    with pytest.raises(TaskError) as err:
        install_collector_profile(
            authority.storage, authority.clock, profile=authority.profile(epoch=7)
        )
    assert err.value.code is ErrorCode.EXECUTOR_NOT_ENROLLED


def test_a_fixture_review_basis_is_refused_at_installation(authority):
    profile = FiniteReviewCollectorProfile(
        version=1,
        kind="finite_review",
        profile_id="rp",
        repository_id="acme",
        workflow_profile_id="default",
        step_id="tests",
        registration_id="reg-1",
        registration_epoch=1,
        executable_sha256="e" * 64,
        provider_scope="anthropic",
        transport_basis=TransportBasis.FIXTURE,
        model="m",
        policy_digest="f" * 64,
        required_paths=("README.md",),
        max_calls=1,
        max_input_tokens=1,
        max_output_tokens=1,
        timeout_ms=1,
    )
    with pytest.raises(TaskError) as err:
        install_collector_profile(authority.storage, authority.clock, profile=profile)
    assert err.value.code is ErrorCode.INVALID_VALUE


def test_a_review_profile_cannot_serve_a_test_step(authority):
    profile = FiniteReviewCollectorProfile(
        version=1,
        kind="finite_review",
        profile_id="rp",
        repository_id="acme",
        workflow_profile_id="default",
        step_id="tests",
        registration_id="reg-1",
        registration_epoch=1,
        executable_sha256="e" * 64,
        provider_scope="anthropic",
        transport_basis=TransportBasis.CLAUDE_CODE,
        model="m",
        policy_digest="f" * 64,
        required_paths=("README.md",),
        max_calls=1,
        max_input_tokens=1,
        max_output_tokens=1,
        timeout_ms=1,
    )
    with pytest.raises(TaskError) as err:
        install_collector_profile(authority.storage, authority.clock, profile=profile)
    assert err.value.code is ErrorCode.INVALID_VALUE


def test_installing_writes_no_audit_event_of_its_own(authority):
    # The operator surface (operator.install_collector_profile) audits the call once;
    # tests/taskcore/test_operator_ops.py checks that path.
    with authority.storage.read() as tx:
        before = tx.audit.count()
    install_collector_profile(authority.storage, authority.clock, profile=authority.profile())
    with authority.storage.read() as tx:
        assert tx.audit.count() == before


def test_a_review_profile_for_a_review_step_is_refused_at_install_not_after_a_claim(authority):
    from taskcore.authority import install_requirement, register_profile
    from taskcore.authority.requirement import RequirementStep, WorkflowRequirement
    from taskcore.contract import (
        ActionClass,
        CriterionMode,
        GraphStatus,
        TaskCriterion,
        WorkflowProgression,
    )

    review = WorkflowRequirement(
        version=1,
        requirement_id="reviewed",
        summary="a review",
        steps=(
            RequirementStep(
                step_id="review",
                summary="an independent review",
                action_class=ActionClass.REVIEW,
                graph_status=GraphStatus.REQUIRED,
                progression=WorkflowProgression.COLLECTOR,
                depends_on=(),
                criteria=(
                    TaskCriterion(
                        criterion="reviewed",
                        description="reviewed",
                        mode=CriterionMode.CONTROLLER_ONLY,
                        required=True,
                    ),
                ),
                references=(),
            ),
        ),
    )
    installed = install_requirement(
        authority.storage, authority.clock, repository_id="acme", requirement=review
    )
    register_profile(
        authority.storage,
        authority.clock,
        repository_id="acme",
        profile_id="reviewed",
        target="main",
        requirement_digest=installed.requirement_digest,
    )
    profile = FiniteReviewCollectorProfile(
        version=1,
        kind="finite_review",
        profile_id="rp",
        repository_id="acme",
        workflow_profile_id="reviewed",
        step_id="review",
        registration_id="reg-1",
        registration_epoch=1,
        executable_sha256="e" * 64,
        provider_scope="anthropic",
        transport_basis=TransportBasis.CLAUDE_CODE,
        model="m",
        policy_digest="f" * 64,
        required_paths=("README.md",),
        max_calls=1,
        max_input_tokens=1,
        max_output_tokens=1,
        timeout_ms=1,
    )
    with pytest.raises(TaskError) as err:
        install_collector_profile(authority.storage, authority.clock, profile=profile)
    assert err.value.code is ErrorCode.INVALID_VALUE
    assert "could only be reconciled" in err.value.message
    with authority.storage.read() as tx:
        assert tx.collector.current_profile("acme", "reviewed", "review") is None
