"""Syrupy snapshots pinning the encoder output of every contract type.

Each case is a fixed, hand-written value; the snapshot holds both its plain wire JSON (what
adapters send) and its canonical bytes (what digests cover). A changed snapshot means the wire
changed: that is a contract change, not a test update.
"""

import hashlib

import attrs
import pytest
import taskcore.contract as contract
from taskcore.canonical import canonical_json
from taskcore.codec import Codec
from taskcore.contract import (
    CommandCollectorProfile,
    CommandRecipe,
    ConfirmedEffect,
    CriterionOutcome,
    CriterionResult,
    Disposition,
    ExecutorEnrollment,
    ExecutorProvenance,
    ExecutorRevocation,
    FenceSupersession,
    FiniteReviewCollectorProfile,
    InstructionEntrypointResponse,
    InstructionsRequest,
    IsolationPolicy,
    MutationAction,
    NetworkAccess,
    ObservedState,
    ReferenceFetchRequest,
    ReferenceFetchResponse,
    ReferenceStatus,
    SandboxMode,
    TaskMutationRequest,
    TaskRecoveryEnvelope,
    TaskStatusRequest,
    TransportBasis,
    UnresolvedEffect,
    schema_mismatch,
    sign_observation,
)

from tests.taskcore.contract import samples

CODEC = Codec()


def _mutation(action: MutationAction, reason: str | None) -> TaskMutationRequest:
    attempt = samples.attempt()
    return TaskMutationRequest(
        version=1,
        request_id=f"{action.value}-1",
        action=action,
        task_id=attempt.task_id,
        task_digest=attempt.task_digest,
        attempt_id=attempt.attempt_id,
        attempt_digest=attempt.digest,
        execution_operation_id=attempt.execution_operation_id,
        executor=samples.EXECUTOR,
        fence=attempt.fence,
        reason=reason,
    )


def _envelope(disposition, state, confirmed=(), unresolved=(), supersede=False):
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


RECIPE = CommandRecipe(
    argv=("python", "-m", "pytest", "-q"),
    working_directory=".",
    environment_allowlist=("PATH", "LANG"),
    timeout_ms=600_000,
    output_limit_bytes=1_048_576,
)
ISOLATION = IsolationPolicy(
    minimum_sandbox=SandboxMode.BWRAP,
    network=NetworkAccess.NONE,
    memory_limit_bytes=2_147_483_648,
    process_limit=512,
    output_cap_bytes=67_108_864,
    tmp_size_bytes=268_435_456,
    read_only_paths=("/opt/python3.11", "/srv/venvs/widgets"),
)

CASES = {
    "agent_identity": samples.AGENT,
    "executor_binding": samples.EXECUTOR,
    "schema_mismatch": schema_mismatch((2, 3)),
    "task_criterion": samples.criteria()[0],
    "named_reference": samples.entrypoint().references[0],
    "instruction_entrypoint": samples.entrypoint(),
    "workflow_task_subject": samples.subject(),
    "workflow_task": samples.task(),
    "entrypoint_response_entrypoint": InstructionEntrypointResponse(
        status="entrypoint",
        task_id="task-1",
        task_digest=samples.task().digest,
        entrypoint=samples.entrypoint(),
        mismatch=None,
    ),
    "entrypoint_response_schema_mismatch": InstructionEntrypointResponse(
        status="schema_mismatch",
        task_id="task-1",
        task_digest=samples.task().digest,
        entrypoint=None,
        mismatch=schema_mismatch((2,)),
    ),
    "task_claim_request": samples.claim(),
    "mutation_heartbeat": _mutation(MutationAction.HEARTBEAT, None),
    "mutation_cancel": _mutation(MutationAction.CANCEL, "wrong branch"),
    "mutation_reconcile": _mutation(MutationAction.RECONCILE, "executor host lost power"),
    "task_status_request": TaskStatusRequest(
        version=1, task_id="task-1", task_digest=samples.task().digest, attempt_id="attempt-1"
    ),
    "instructions_request": InstructionsRequest(
        version=1,
        task_id="task-1",
        task_digest=samples.task().digest,
        supported_schema_versions=(1, 2),
    ),
    "reference_fetch_request": ReferenceFetchRequest(
        version=1,
        task_id="task-1",
        task_digest=samples.task().digest,
        name="guide",
        expected_sha256="7" * 64,
        expected_schema_version=1,
    ),
    "reference_fetch_response_available": ReferenceFetchResponse(
        status=ReferenceStatus.AVAILABLE,
        name="guide",
        sha256=hashlib.sha256(b"# Testing\n").hexdigest(),
        content="# Testing\n",
        byte_length=10,
        code=None,
    ),
    "reference_fetch_response_limit": ReferenceFetchResponse(
        status=ReferenceStatus.LIMIT,
        name="guide",
        sha256="7" * 64,
        content=None,
        byte_length=None,
        code="too_large",
    ),
    "workflow_task_attempt": samples.attempt(),
    "criterion_result": CriterionResult(
        criterion="unit-tests",
        outcome=CriterionOutcome.FAILED,
        findings=("1 failed", "tab\there"),
        evidence_digests=("c" * 64,),
    ),
    "executor_provenance": ExecutorProvenance(observation_digest="d" * 64, signature="e" * 128),
    "task_result_assertion_signed": sign_observation(samples.assertion(), samples.SEED),
    "executor_enrollment": ExecutorEnrollment(
        version=1,
        registration_id="reg-1",
        executor_id="laptop-1",
        repository_id="acme.widgets",
        step_id="tests",
        registration_epoch=1,
        verification_key_id="k1",
        public_key=samples.PUBLIC,
        enrolled_at_ms=1_700_000_000_000,
    ),
    "executor_revocation": ExecutorRevocation(
        version=1,
        registration_id="reg-1",
        executor_id="laptop-1",
        registration_epoch=1,
        verification_key_id="k1",
        revoked_at_ms=1_700_000_100_000,
        reason="laptop lost",
    ),
    "command_recipe": RECIPE,
    "command_collector_profile": CommandCollectorProfile(
        version=1,
        kind="command",
        profile_id="tests-cmd",
        repository_id="acme.widgets",
        workflow_profile_id="default",
        step_id="tests",
        registration_id="reg-1",
        registration_epoch=1,
        recipe=RECIPE,
        runtime_identity_sha256="c" * 64,
    ),
    "isolation_policy": ISOLATION,
    "command_collector_profile_isolated": CommandCollectorProfile(
        version=1,
        kind="command",
        profile_id="tests-cmd-2",
        repository_id="acme.widgets",
        workflow_profile_id="default",
        step_id="tests",
        registration_id="reg-1",
        registration_epoch=1,
        recipe=RECIPE,
        runtime_identity_sha256="c" * 64,
        isolation=ISOLATION,
    ),
    "finite_review_collector_profile": FiniteReviewCollectorProfile(
        version=1,
        kind="finite_review",
        profile_id="review-1",
        repository_id="acme.widgets",
        workflow_profile_id="default",
        step_id="review",
        registration_id="reg-1",
        registration_epoch=1,
        executable_sha256="d" * 64,
        provider_scope="anthropic",
        transport_basis=TransportBasis.CLAUDE_CODE,
        model="claude-model",
        policy_digest="e" * 64,
        required_paths=("src",),
        max_calls=8,
        max_input_tokens=200_000,
        max_output_tokens=20_000,
        timeout_ms=900_000,
    ),
    "fence_supersession": FenceSupersession(old_fence=3, new_fence=4),
    "recovery_confirmed": _envelope(
        Disposition.CONFIRMED,
        ObservedState.FINISHED,
        confirmed=(ConfirmedEffect.ASSERTION_RETAINED,),
    ),
    "recovery_conclusive_rejection_pending": _envelope(
        Disposition.CONCLUSIVE_REJECTION, ObservedState.PENDING
    ),
    "recovery_uncertain_replaced": _envelope(
        Disposition.UNCERTAIN_EFFECT,
        ObservedState.REPLACED,
        unresolved=(UnresolvedEffect.EXECUTION_MAY_STILL_RUN,),
        supersede=True,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_encoder_output_is_pinned(name, snapshot):
    value = CASES[name]
    wire = CODEC.dumps(value).decode("utf-8")
    canonical = canonical_json(value).decode("utf-8")
    assert {"wire": wire, "canonical": canonical} == snapshot
    assert CODEC.decode(type(value), wire) == value


def test_every_contract_type_has_a_snapshot():
    covered = {type(v) for v in CASES.values()}
    types = {obj for n in contract.__all__ if attrs.has(obj := getattr(contract, n))}
    assert types - covered == set()
